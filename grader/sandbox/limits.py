"""What a submission may use, and which limit it hit: typed values from the CLI to results.json.

`Limits` is set once (the CLI's flags, the make variables) and travels to the
judge and the worker as it is; `Limit` names the limit a step hit. A verdict
carries its `Limit`, and results.json stores `Limit.value` beside the message,
so the report and the class summary read the kind, never the message's words.
"""

import enum
import re
from dataclasses import dataclass


class Limit(enum.Enum):
    TIME = "time"  # the step's wall-clock budget, or the whole submission's
    CPU = "cpu"  # the worker's CPU-time budget
    MEMORY = "memory"
    PROCESSES = "processes"
    CRASH = "crash"  # killed by a signal
    EXIT = "exit"  # sys.exit, os._exit, quit
    CHANNEL = "channel"  # garbage on the grader's channel

    @property
    def words(self):
        """How the report names it."""
        return {"time": "time limit", "cpu": "CPU-time limit", "memory": "memory limit",
                "processes": "process limit", "crash": "crash", "exit": "exit",
                "channel": "garbled answer"}[self.value]

    @classmethod
    def parse(cls, value):
        """The Limit stored as `value` in a results.json, or None (unknown kinds are not limits)."""
        try:
            return cls(value)
        except ValueError:
            return None


@dataclass(frozen=True)
class Limits:
    """The budgets of one submission; the defaults are the CLI's and the Makefile's."""

    step_seconds: float = 10.0  # wall-clock seconds per step, loading included
    memory_bytes: int = 2 << 30  # bytes a step may add on top of the warm worker
    submission_seconds: float = 120.0  # wall-clock seconds for all steps of one submission

    @property
    def cpu_seconds(self):
        """The worker's CPU-time cap: the whole submission's budget and a little slack."""
        return int(self.submission_seconds) + 2


DEFAULTS = Limits()


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text):
    """'2GiB', '512M', '1.5g', '1000000' -> bytes (units are powers of 1024); ValueError otherwise."""
    match = _SIZE.fullmatch(str(text))
    if not match or float(match[1]) <= 0:
        raise ValueError(f"{text!r} is not a memory size: write a number with an optional unit, e.g. 512MiB or 2GiB")
    return int(float(match[1]) * _UNITS[match[2].lower()])


# A step's time limit counts the time its code ran or slept, not the time it waited for a CPU that other
# programs held: on a saturated machine a correct file must not lose a step it would pass on a quiet one (a
# blind tester saw `import matplotlib.pyplot` take 10 s at load 12 on 2 cores, a 0 "infinite loop?"). The
# deadline moves by that wait, up to this many times the limit, so a hang still ends (the judge's worker:
# sandbox.transport; Otter's and nbgrader's in-kernel checks: integrations.incell).
MAX_CPU_WAIT_CREDIT = 4.0


def wait_credit(waited: float, credited: float, limit: float) -> float:
    """Seconds a step's deadline moves now: the CPU wait since the step began (`waited`) not yet credited
    (`credited`), within MAX_CPU_WAIT_CREDIT × its `limit` in all; 0 for less than 10 ms."""
    credit = min(waited, MAX_CPU_WAIT_CREDIT * limit) - credited
    return credit if credit >= 0.01 else 0.0
