"""The sealed process that runs one student's code, and the limits it runs under.

`transport.WorkerTransport` is the judge's handle on a worker forked from the kit's warm
fork server (`forkserver`, started by `servers`, which imports no torch so that
the command line can start it first), drawn from the process's `pool.WorkerPool`;
the worker seals itself first (`seal`: namespaces, a read-only view, a private /tmp,
no capabilities, the `seccomp` filter, the
submission's `cgroups`; see docs/sandbox.md); `processes` finds and kills
whatever a worker started and sweeps what it left; `limits` holds the typed
budgets and the kinds of limit a step can hit.

May import: grader.chapter, grader.paths, grader.check (the loader and the session
run inside the worker). Importing this package itself imports neither torch nor the worker.
"""
