"""One sealed worker from its fork to its end, seen from the judge: its uid, its cgroup, its keeper and PID 1.

The worker is forked by the run's fork server (`servers`) and seals itself (`entry`);
`close` stops it and every process it started, wherever they went. The uids, the spares
and the reaper it draws on belong to the judge's `pool.WorkerPool`.
"""

import os
import select
import signal
import time
from dataclasses import dataclass
from multiprocessing import connection

from grader.check import wire
from grader.sandbox import cgroups, processes, seal, seccomp, servers
from grader.sandbox.entry import PROCESS_LIMIT

SETUP_SECONDS = 30.0  # a worker that is not sealed by then is broken (not the student's time)
CGROUP_HEADROOM = {"cpu": 64 << 20, "cuda": 1 << 30}  # what the worker itself may add beyond the step's cap
STAGE_TIMINGS = False  # workers report how long each stage of their seal took (bench/bench.py)


@dataclass(frozen=True)
class WorkerConfig:
    """What a worker is sealed for: workers of equal configs are interchangeable (spares)."""

    device: str
    memory_limit: int
    cpu_seconds: int
    private_uid: bool


class SetupFailed(Exception):
    pass


class SealedWorker:
    """One worker process from start to end: its uid, its cgroup, its keeper and its PID 1."""

    def __init__(self, pool, config, mode=None):
        found = pool.protections()
        self.pool, self.config = pool, config
        self.mode = mode or found.mode
        if not config.private_uid and self.mode == "root":
            self.mode = "userns"  # root asked to keep its uid (tests): only inside a user namespace
        self.uid = pool.uids.take() if config.private_uid else None
        if self.uid is not None and self.mode in ("userns", "basic"):
            pool.prepare_isolation()
        self.cgroup = None
        if found.cgroups:
            headroom = CGROUP_HEADROOM["cuda" if config.device.startswith("cuda") else "cpu"]
            self.cgroup = pool.cgroups.create(config.memory_limit + headroom, PROCESS_LIMIT)
        self.report, self.pid1, self.pidfd, self.baseline, self.closed = None, None, None, 0, False
        self.process = self.conn = None
        try:
            self._fork(found)
        except (servers.ServerGone, servers.ForkFailed) as error:
            self.close()
            raise SetupFailed(str(error)) from None

    def _fork(self, found):
        config = self.config
        nodes, folders = seal.cuda_devices() if config.device.startswith("cuda") else ((), ())
        try:
            bpf = seccomp.program(unix_sockets=config.device.startswith("cuda"), basic=self.mode == "basic")
        except seccomp.SeccompUnavailable:
            bpf = b""
        spec = {"mode": self.mode, "uid": self.uid, "cgroup": self.cgroup, "bpf": bpf, "device": config.device,
                "memory_limit": config.memory_limit, "cpu_seconds": config.cpu_seconds,
                "view": seal.view_paths(folders + (("/sys",) if nodes else ())),
                "devices": seal.Policy.devices + nodes,
                "why": "; ".join(found.off) if self.mode == "basic" else "", "timings": STAGE_TIMINGS}
        self.conn, theirs = connection.Pipe(duplex=True)
        self.started = time.monotonic()
        server = self.pool.server()
        try:
            # The first fork waits for the fork server's warm-up: not the student's time.
            self.process = server.fork(spec, theirs.fileno())
        except servers.ServerGone:
            self.pool.server_gone(server)  # the next try starts another
            raise
        finally:
            theirs.close()

    def wait_sealed(self, timeout=SETUP_SECONDS):
        """Block until the worker says it is sealed; its report. SetupFailed if it cannot be."""
        if self.report is not None:
            return self.report
        try:
            if not self.conn.poll(timeout):
                raise SetupFailed(f"not sealed after {timeout:g} s")
            message = wire.loads(self.conn.recv_bytes(1 << 20))
        except (EOFError, OSError, ValueError) as error:
            raise SetupFailed(f"the worker died while sealing itself ({type(error).__name__})") from None
        if not isinstance(message, dict) or message.get("sealed") is not True:
            raise SetupFailed(str((message or {}).get("error", "no report"))[:500])
        keeper = self.process.pid
        self.pid1 = keeper if self.mode == "basic" else next(iter(processes.children(keeper)), keeper)
        if self.pid1 != keeper:
            try:
                self.pidfd = os.pidfd_open(self.pid1)
            except OSError:
                self.pidfd = None
        self.baseline = processes.memory_bytes(self.pid1, "VmRSS")
        self.report = message["report"]
        return self.report

    def alive(self):
        return not self.closed and self.process.exitcode is None

    def usage(self):
        """(memory the submission added, CPU seconds its live processes used, how many processes it runs,
        GPU memory its processes hold) for the watchdog; each None where the kernel counts it itself (cgroup)
        or, for the GPU's, where the step runs on the CPU or the driver cannot say (gpu_memory). The processes
        are counted where no memory cgroup holds the kernel memory each one's memory areas take (entry.py)."""
        cuda = self.config.device.startswith("cuda")
        kernel_memory_counted = cgroups.counts(self.cgroup, "memory")
        memory_counted = kernel_memory_counted and not cuda
        cpu_counted = cgroups.counts(self.cgroup, "cpu")
        if memory_counted and cpu_counted:
            return None, None, None, None
        pids = processes.subtree(self.pid1)
        return (None if memory_counted else processes.resident_growth(pids, self.baseline),
                None if cpu_counted else processes.cpu_seconds(pids),
                None if kernel_memory_counted else len(pids),
                self.pool.gpu.held_by(pids) if cuda else None)

    def cpu_wait_and_use(self):
        """(seconds the submission's processes have waited for a CPU others held (processes.cpu_wait_seconds),
        CPU seconds they have used, those that ended included), from one walk of its processes."""
        pids = processes.subtree(self.pid1)
        return processes.cpu_wait_seconds(pids), processes.cpu_seconds(pids, reaped=True)

    def cpu_used(self):
        """CPU seconds its processes have used since the fork (those they reaped too), without the CPU waits."""
        return processes.cpu_seconds(processes.subtree(self.pid1), reaped=True)

    def out_of_memory(self):
        return cgroups.counts(self.cgroup, "memory") and self.cgroup.oom_kills() > 0

    def close(self):
        """Stop the worker and every process it started, wherever they went; idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.process is None:  # never forked
            self._release()
            return
        pid = self.process.pid

        def leftovers(table):
            """The worker's tree (it is a subreaper) and its uid's processes; the fork server's orphans
            are swept by the server itself (see servers.ForkServer.sweep)."""
            found = set(processes.descendants(pid, table))
            if pid in table:
                found.add(pid)
            if self.uid is not None:
                found.update(other for other, (_, uid) in table.items() if uid == self.uid)
            return sorted(found)

        if self.pidfd is not None and self._end_namespace():
            self.pool.reap(self)  # the keeper's end, the cgroups' removal and the uid's return: off the judge's path
            return
        self._sweep(leftovers)
        self._release()

    def _end_namespace(self):
        """SIGKILL to PID 1 (through its pidfd: never a recycled pid) and to the keeper. PID 1 exits only
        once the kernel has killed and reaped every other process of its namespace: True when it has."""
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        processes.kill([self.process.pid])
        try:
            waiting = select.poll()
            waiting.register(self.pidfd, select.POLLIN)
            return bool(waiting.poll(5000))  # readable once PID 1 has exited
        finally:
            os.close(self.pidfd)
            self.pidfd = None

    def _sweep(self, leftovers):
        pid = self.process.pid
        if self.mode == "basic":
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        processes.kill([pid])
        if self.cgroup is not None:
            self.cgroup.kill()
        processes.kill_until_gone(leftovers)
        self.pool.server().sweep()  # what the worker's tree left to the fork server when the worker died

    def finish(self):
        """In the reaper thread, once PID 1 and its namespace are gone: the rest of `close`."""
        if self.cgroup is not None:
            self.cgroup.kill()  # the keeper, if it is still exiting
        self._release()

    def _release(self):
        if self.process is not None:
            self.process.join(2.0)
            self.process.close()
        if self.conn is not None:
            self.conn.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.uid is not None:
            if self.mode == "basic":  # without a private /tmp and IPC namespace it may have left things
                processes.sweep_uid(self.uid)
            self.pool.uids.give_back(self.uid)

    def forget(self):
        """In a forked judge: this worker is its parent's; only the child's copies of its descriptors go."""
        for channel in (self.conn, self.process and self.process.status):
            if channel is not None:
                try:
                    channel.close()
                except OSError:
                    pass
        if self.pidfd is not None:
            os.close(self.pidfd)
