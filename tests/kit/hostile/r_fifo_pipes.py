"""Makes pipes no keeper counts (a red team of issue 26): FIFOs in the sandbox's own /tmp (mkfifo; mknod for a
device node too), each opened read-write in children, so that every one holds a pipe charged to the uid's pipe
allowance (fs.pipe-user-pages-soft): 1015 of them left the grading user's other programs with 8 KiB pipes.
Reports how many FIFOs and nodes were made: any is too many.

base: buggy
class: k
run: pressure
"""

import os as _os
import stat as _stat
import tempfile as _tempfile


def _make_fifos(count=200):
    made, tried, held = 0, [], []
    folder = _tempfile.gettempdir()
    for index in range(count):
        path = _os.path.join(folder, f"hostile-fifo-{_os.getpid()}-{index}")
        try:
            _os.mkfifo(path)
        except OSError as error:
            tried.append(f"mkfifo errno {error.errno}")
            break
        made += 1
        try:
            held.append(_os.open(path, _os.O_RDWR | _os.O_NONBLOCK))
        except OSError as error:
            tried.append(f"open errno {error.errno}")
        finally:
            _os.unlink(path)
    try:
        _os.mknod(_os.path.join(folder, "hostile-node"), _stat.S_IFIFO | 0o600)
        made += 1
        _os.unlink(_os.path.join(folder, "hostile-node"))
    except OSError as error:
        tried.append(f"mknod errno {error.errno}")
    for descriptor in held:
        _os.close(descriptor)
    return made, tried


def attention_dropout(*args, **kwargs):
    made, tried = _make_fifos()
    raise RuntimeError(f"ALLOWANCE kernel {made} FIFOs or nodes made ({'; '.join(tried[:3])})")
