"""Imported once, by the fork server only (see `worker.context`): warm torch up and adopt orphans.

As a subreaper, the fork server inherits whatever a killed worker left behind,
where `WorkerTransport.close` finds and kills it."""

import warnings

from . import processes, worker

worker.warm_up()
processes.become_subreaper()
# Reaping an adopted orphan is expected here, not worth a warning on the judge's terminal.
warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid")
