"""Starves everyone graded beside it: forty children leave its session and spin on the CPU, and its
masking step takes almost its whole time budget, so that they spin for as long as the grader lets it live.

base: buggy
class: 5
run: pressure
"""

import os as _os
import signal as _signal
import time as _time


def _spin_forever():
    for _ in range(40):
        try:
            pid = _os.fork()
        except OSError:
            break
        if pid == 0:
            _os.setsid()
            for signal in (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT):
                _signal.signal(signal, _signal.SIG_IGN)
            while True:
                pass


class _AtLoad:
    _spin_forever()


def _slow(*args, **kwargs):
    _time.sleep(@STEP_SLEEP@)
    raise RuntimeError("slow on purpose")


causal_mask = _slow
