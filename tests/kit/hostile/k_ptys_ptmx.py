"""Opens /dev/ptmx (and /dev/pts/ptmx) again and again in 8 children: every open takes one of the machine's
kernel.pty.max pseudo-terminals, which no other program (ssh, tmux, a terminal) can get meanwhile.

base: buggy
class: k
run: pressure
"""

import os as _os
import time as _time


def _grab_ptys(children=8):
    read_end, write_end = _os.pipe()
    for _ in range(children):
        if _os.fork() == 0:
            got = 0
            for path in ("/dev/ptmx", "/dev/pts/ptmx"):
                for _ in range(120):
                    try:
                        _os.open(path, _os.O_RDWR | _os.O_NOCTTY)
                    except OSError:
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
    raise RuntimeError(f"ALLOWANCE ptys {_grab_ptys()} terminals")
