"""Takes whole-file locks (flock) and leases on as many descriptors as it can open, in 8 children: one
lock each, bounded only by descriptors.

base: buggy
class: k
run: pressure
"""

import fcntl as _fcntl
import os as _os
import tempfile as _tempfile
import time as _time


def _take_flocks(children=8):
    read_end, write_end = _os.pipe()
    for _ in range(children):
        if _os.fork() == 0:
            got = 0
            try:
                fd, path = _tempfile.mkstemp(prefix="hostile-flock-")
                _os.unlink(path)
                for _ in range(120):
                    other = _os.open(f"/proc/self/fd/{fd}", _os.O_RDONLY)
                    _fcntl.flock(other, _fcntl.LOCK_SH | _fcntl.LOCK_NB)
                    got += 1
            except OSError:
                pass
            _os.write(write_end, f"{got}\n".encode())
            _time.sleep(1.0)
            _os._exit(0)
    _os.close(write_end)
    text = b""
    while chunk := _os.read(read_end, 4096):
        text += chunk
    return sum(int(line) for line in text.split() if line.isdigit())


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE flocks {_take_flocks()} locks")
