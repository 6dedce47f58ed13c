"""Holds memory in pipe buffers: 8 children each grow as many pipes as descriptors allow to 1 MiB
(F_SETPIPE_SZ) and fill them; nothing is mapped, so no per-process limit sees it, and the pipe pages come
out of the uid's pipe allowance (fs.pipe-user-pages-soft), shared with the instructor under one uid.

base: buggy
class: k
run: pressure
"""

import fcntl as _fcntl
import os as _os
import time as _time


def _hold_pipes(children=8):
    read_end, write_end = _os.pipe()
    for _ in range(children):
        if _os.fork() == 0:
            held = 0
            try:
                for _ in range(60):
                    inner_read, inner_write = _os.pipe()
                    try:
                        _fcntl.fcntl(inner_write, 1031, 1 << 20)  # F_SETPIPE_SZ
                    except OSError:
                        pass
                    _os.set_blocking(inner_write, False)
                    while True:
                        try:
                            held += _os.write(inner_write, b"\1" * 65536)
                        except OSError:
                            break
            except OSError:
                pass
            finally:
                _os.write(write_end, f"{held}\n".encode())
            _time.sleep(2.0)
            _os._exit(0)
    _os.close(write_end)
    text = b""
    while chunk := _os.read(read_end, 4096):
        text += chunk
    return sum(int(line) for line in text.split() if line.isdigit()) >> 20


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE memory {_hold_pipes()} MiB held by descriptors")
