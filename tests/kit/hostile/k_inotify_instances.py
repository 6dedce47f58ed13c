"""Takes every inotify instance of its uid (fs.inotify.max_user_instances, 128 by default, per user: shared
with the instructor's editors and file watchers when the sandbox runs under the instructor's uid).

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import time as _time

_libc = _ctypes.CDLL(None, use_errno=True)


def _grab_inotify():
    read_end, write_end = _os.pipe()
    for _ in range(4):  # descriptors are capped per process: spread over children
        if _os.fork() == 0:
            got = 0
            for _ in range(120):
                if _libc.inotify_init1(0) < 0:
                    break
                got += 1
            _os.write(write_end, f"{got}\n".encode())
            _time.sleep(1.0)
            _os._exit(0)
    _os.close(write_end)
    text = b""
    while chunk := _os.read(read_end, 4096):
        text += chunk
    return sum(int(line) for line in text.split() if line.isdigit())


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE inotify {_grab_inotify()} instances")
