"""The sandbox's state and its one owner: a `WorkerPool` per process that grades (the run, each judge).

The pool holds what workers draw on: the uids (`processes.UidPool`), what the machine allows
(probed once per run, see `host`), the spares sealed ahead of time, the reaper that finishes
closes off the grading path, the run's settings (`--require-sandbox`, presealing) and the
fork server (`servers`, one for the run and all its judges). A judge is a plain fork of the
run: the first `current()` in it makes a pool of its own from its parent's settings and shared
fork server, with none of its parent's workers, spares, closes or locks (a lock held by one of
the parent's threads at the fork would stay held forever in the child, where that thread does
not exist). Nothing is repaired by at-fork hooks.
"""

import atexit
import os
import threading
import time

from grader.sandbox import cgroups, gpu_memory, host, processes, seal, servers
from grader.sandbox.sealed import SealedWorker, SetupFailed

SEAL_ATTEMPTS = 3
SPARES = 2  # sealed workers waiting per configuration: one per grading thread of a judge (two jobs per judge)


class WorkerPool:
    """The workers of one grading process, and everything they share."""

    def __init__(self, parent=None):
        self.pid = os.getpid()
        self.uids = processes.UidPool()
        self.cgroups = cgroups.Groups()  # this process's: a forked judge's pool makes its own
        self.gpu = gpu_memory.GpuMemory()  # the driver's figures (NVML starts in the process that reads them)
        self.require_sandbox = False  # the CLI's --require-sandbox: no worker without every protection
        self.presealing = False  # seal the next workers while the current ones are graded (the CLI turns it on)
        self._found = None  # host.Protections, once probed
        self._prepared = False  # host.prepare_isolation done
        self._server = None
        self._host_lock, self._prepare_lock, self._server_lock = threading.Lock(), threading.Lock(), threading.Lock()
        self._spares = {}  # WorkerConfig -> [SealedWorker]
        self._filling = set()  # configs a helper thread is sealing spares for
        self._spare_lock = threading.Lock()
        self._dying = []  # closed workers whose namespace is still being torn down, in order
        self._reaping = threading.Condition()
        self._reaper = None
        if parent is not None:
            self._inherit(parent)

    def _inherit(self, parent):
        """In a forked judge: the parent's settings, findings and fork server; none of its workers."""
        self.require_sandbox, self.presealing = parent.require_sandbox, parent.presealing
        self._found, self._prepared, self._server = parent._found, parent._prepared, parent._server
        parent._forget()

    def _forget(self):
        """This pool was the parent's: close the child's copies of its descriptors (no lock is taken: a
        parent's thread may have held one at the fork). The parent's workers are not touched."""
        workers = [spare for waiting in self._spares.values() for spare in waiting] + list(self._dying)
        for worker in workers:
            worker.forget()
        self._spares, self._dying = {}, []
        self.uids.forget_after_fork()  # a uid the parent gives back is free at once, not when the child ends

    # ------------------------------------------------------------------------------------ the host

    def protections(self):
        """What this machine allows, probed once per run (a throwaway sealed child per mode tried)."""
        with self._host_lock:
            if self._found is None:
                self._found = host.probe(self.uids, self.cgroups, self.prepare_isolation)
            return self._found

    def prepare_isolation(self):
        """Once per run, before the first worker runs under its own uid without a root-built view."""
        with self._prepare_lock:
            if not self._prepared:
                host.prepare_isolation()
                self._prepared = True

    def server(self):
        """The run's fork server (started on first use where the command line did not start it early)."""
        with self._server_lock:
            if self._server is None:
                self._server = servers.shared()
            return self._server

    def server_gone(self, server):
        """`server` ended: the next worker is forked from a new one (started in this process)."""
        with self._server_lock:
            if self._server is server:
                self._server = None
                servers.forget(server)

    def check_required(self):
        """With --require-sandbox: no worker without every protection."""
        if self.require_sandbox and not self.protections().complete:
            raise seal.SandboxError(self.protections().summary())

    # ---------------------------------------------------------------------------------- the spares

    def preseal(self, enabled=True):
        """Seal the next workers ahead of time (the CLI turns this on; tests grade without spares)."""
        self.presealing = enabled
        if not enabled:
            self.discard_spares()

    def discard_spares(self):
        with self._spare_lock:
            spares = [spare for waiting in self._spares.values() for spare in waiting]
            self._spares.clear()
        for spare in spares:
            spare.close()

    def _refill(self, config):
        """Seal spares for `config` until there are SPARES of them (in a helper thread: off the grading path)."""
        try:
            while self.presealing:
                with self._spare_lock:
                    if len(self._spares.get(config, ())) >= SPARES:
                        return
                spare = SealedWorker(self, config)
                with self._spare_lock:
                    if self.presealing:
                        self._spares.setdefault(config, []).append(spare)
                        spare = None
                if spare is not None:
                    spare.close()
        except Exception:  # noqa: BLE001 - a spare is an optimisation: the grading path starts its own
            pass
        finally:
            with self._spare_lock:
                self._filling.discard(config)

    def acquire(self, config):
        """A sealed worker for `config` (a spare if one is ready) and the seconds the caller waited."""
        started = time.monotonic()
        with self._spare_lock:
            waiting = self._spares.get(config) or []
            worker = waiting.pop(0) if waiting else None
            refill = self.presealing and config not in self._filling
            if refill:
                self._filling.add(config)
        if refill:
            threading.Thread(target=self._refill, args=(config,), daemon=True, name="sandbox-spares").start()
        if worker is not None and not worker.alive():
            worker.close()
            worker = None
        mode = None
        # Tries again in the same mode (a passing shortage: memory, pids, a slow machine), never in a weaker
        # one: what the run probed and reported holds for every submission, and no submission can make a later
        # one run with fewer protections. A worker that cannot be sealed costs its submission a regradable
        # zero (grader.cohort.bulk), never a grade taken without its sandbox.
        for attempt in range(SEAL_ATTEMPTS):
            try:
                worker = worker or SealedWorker(self, config, mode=mode)
                worker.wait_sealed()
                return worker, time.monotonic() - started
            except SetupFailed as error:
                mode = worker.mode if worker is not None else mode
                if worker is not None:
                    worker.close()
                if attempt == SEAL_ATTEMPTS - 1:
                    self.discard_spares()
                    raise seal.SandboxError(f"a worker could not seal itself ({mode or self.protections().mode} "
                                            f"mode, {SEAL_ATTEMPTS} tries): {error}") from None
                time.sleep(0.5 * (attempt + 1))
                worker = None
        raise AssertionError("unreachable")

    # ---------------------------------------------------------------------------------- the reaper

    def reap(self, worker):
        """Finish `worker`'s close in the reaper thread (one per pool, started on first use)."""
        with self._reaping:
            self._dying.append(worker)
            if self._reaper is None or not self._reaper.is_alive():
                self._reaper = threading.Thread(target=self._reap_in_order, daemon=True, name="sandbox-reaper")
                self._reaper.start()
            self._reaping.notify_all()

    def _reap_in_order(self):
        while True:
            with self._reaping:
                self._reaping.wait_for(lambda: self._dying)
                worker = self._dying[0]
            try:
                worker.finish()
            except Exception:  # noqa: BLE001 - one worker's cleanup must not stop the others'
                pass
            finally:
                with self._reaping:
                    self._dying.pop(0)
                    self._reaping.notify_all()

    def shutdown(self):
        """Close the spares and finish every close under way (their cgroups removed, uids given back);
        at exit, and by a judge process before it ends (it skips the exit handlers)."""
        self.preseal(False)
        with self._reaping:
            self._reaping.wait_for(lambda: not self._dying, timeout=30)
        cgroups.sweep_stale()


_CURRENT = [None]  # this process's WorkerPool (a forked judge finds its parent's here and makes its own)
_CREATING = threading.Lock()


def current():
    """This process's pool: made on first use in each process (the run, a forked judge)."""
    pool = _CURRENT[0]
    if pool is None or pool.pid != os.getpid():
        with _CREATING:
            pool = _CURRENT[0]
            if pool is None or pool.pid != os.getpid():
                pool = _CURRENT[0] = WorkerPool(parent=pool)
    return pool


def shutdown():
    """Shut this process's pool down, if it made one (see WorkerPool.shutdown)."""
    pool = _CURRENT[0]
    if pool is not None and pool.pid == os.getpid():
        pool.shutdown()


atexit.register(shutdown)
