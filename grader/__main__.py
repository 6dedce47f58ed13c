import atexit
import os
import sys

# One OpenMP and MKL thread, set before torch loads them: judges are forked from this process, and a fork after a
# parallel region leaves the child's OpenMP team waiting for threads that are not there (a judge spun at 100 % in
# a matmul for 30 minutes in a loaded CI run). Every judge and worker runs torch on one thread anyway.
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from grader import stopping  # noqa: E402 - after the threads are set
from grader.cli import main  # noqa: E402


def exit_quickly(code):
    """End the process once the exit handlers have run (workers, fork servers, temporary folders), without
    tearing torch's objects down one by one: that teardown alone took 0.3 s of every run (measured with
    `python -c "import torch"`), and nothing after the handlers needs it."""
    run_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's; elsewhere exit the usual way
    if run_handlers is None:
        sys.exit(stopping.late_exit(code))
    run_handlers()
    code = stopping.late_exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more can be said
            pass
    os._exit(code if isinstance(code, int) else 1)


if __name__ == "__main__":
    exit_quickly(main())
