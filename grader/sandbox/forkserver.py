"""Imported once, by the fork server only (see `servers.context`): warm torch up and adopt orphans.

The server was started with a short environment (`servers.SERVER_ENVIRONMENT`): every
worker is a fork of it, so nothing of the instructor's environment is in a worker's
memory. Warming up also compiles the sandbox's seccomp filter once for all workers.
As a subreaper, the fork server inherits whatever a killed worker left behind (the
keeper's PID 1 once the keeper is gone, leftovers of the basic mode), and reaps it."""

import gc
import warnings

# Modules a solution may import that torch does not load itself: imported here, they are in every worker
# whatever the sandbox's view shows (a virtual environment reached through a link is seen only where the
# link points, and the modules' own paths would not resolve inside the view).
import numpy.random  # noqa: F401
import numpy.linalg  # noqa: F401

from grader.sandbox import processes
from grader.sandbox import worker
worker.warm_up()
processes.become_subreaper()
# Objects that exist now are never collected in a worker: a collection would touch (and so copy)
# every page of the server's heap in every worker.
gc.freeze()
processes.collapse_to_huge_pages()  # after everything is loaded: cheaper forks for every worker
# Reaping an adopted orphan is expected here, not worth a warning on the judge's terminal.
warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid")
