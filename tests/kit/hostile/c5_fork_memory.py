"""Uses several times the memory cap: the cap is per process, so six children each take a little
less than the cap, hold it together for a moment, and the step reports how much was held.

base: buggy
class: 5
run: pressure
"""

import os as _os
import time as _time

_CHILDREN, _EACH = 6, 180 << 20


def _hold_together():
    read_end, write_end = _os.pipe()
    children = []
    for _ in range(_CHILDREN):
        pid = _os.fork()
        if pid == 0:
            try:
                block = bytearray(_EACH)
                for index in range(0, _EACH, 4096):
                    block[index] = 1  # touch every page: resident, not just reserved
                _os.write(write_end, b"1")
                _time.sleep(3)
            finally:
                _os._exit(0)
        children.append(pid)
    _os.close(write_end)
    deadline, held = _time.monotonic() + 10, 0
    while _time.monotonic() < deadline and held < _CHILDREN:
        chunk = _os.read(read_end, 64)
        if not chunk:
            break
        held += len(chunk)
    for pid in children:
        try:
            _os.waitpid(pid, 0)
        except OSError:
            pass
    return held


def attention_dropout(*args, **kwargs):
    held = _hold_together()
    raise RuntimeError(f"HELD {held} x {_EACH >> 20} MiB at once")
