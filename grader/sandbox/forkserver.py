"""Imported once, by the fork server only (see `worker.context`): warm torch up and adopt orphans.

As a subreaper, the fork server inherits whatever a killed worker left behind,
where `WorkerTransport.close` finds and kills it."""

import gc
import warnings

from grader.sandbox import processes
from grader.sandbox import worker

worker.warm_up()
processes.become_subreaper()
# Objects that exist now are never collected in a worker: a collection would touch (and so copy)
# every page of the server's heap in every worker.
gc.freeze()
# Reaping an adopted orphan is expected here, not worth a warning on the judge's terminal.
warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid")
