"""Forks until the kernel refuses (each child leaves the session and sleeps), then starts threads
until the kernel refuses, and reports how many it got; all of them must be gone when grading ends.

base: buggy
class: 5
run: pressure
"""

import os as _os
import threading as _threading
import time as _time


def _bomb():
    count, deadline = 0, _time.monotonic() + 2.0  # bounded, so that a grader without a limit survives the test
    while count < 300 and _time.monotonic() < deadline:
        try:
            pid = _os.fork()
        except OSError:
            break
        if pid == 0:
            _os.setsid()
            _time.sleep(120)
            _os._exit(0)
        count += 1
    return count


def _threads():
    _threading.stack_size(64 << 10)  # small stacks: the count is limited by the process limit, not memory
    stop, count = _threading.Event(), 0
    while count < 3000:
        try:
            _threading.Thread(target=stop.wait, daemon=True).start()
        except RuntimeError:
            break
        count += 1
    return count


def causal_mask(*args, **kwargs):
    raise RuntimeError(f"FORKED {_bomb()} processes and THREADS {_threads()}")
