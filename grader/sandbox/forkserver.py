"""The fork server's own program (`python -P -m grader.sandbox.forkserver FD`, started by `servers`).

It imports torch and the grader once, warms them up, and then forks one worker per
request read from its socket FD (see `servers` for the protocol). It was started with a
short environment (`servers.SERVER_ENVIRONMENT`) in a session of its own: every worker is
a fork of it, so nothing of the instructor's environment is in a worker's memory, and a
Ctrl-C to the terminal's group never reaches a worker. As a subreaper it inherits whatever
a killed worker left behind (the keeper's PID 1 once the keeper is gone, leftovers of the
basic mode), reaps it, and kills such leftovers when a judge asks (`SWEEP`). It ends when no
judge is left (its socket reads as closed); its workers end with it (see seal._die_with).
"""

import contextlib
import gc
import json
import os
import select
import signal
import socket
import sys

# Modules a solution may import that torch does not load itself: imported here, they are in every worker
# whatever the sandbox's view shows (a virtual environment reached through a link is seen only where the
# link points, and the modules' own paths would not resolve inside the view).
import numpy.random  # noqa: F401
import numpy.linalg  # noqa: F401

from grader import stopping  # noqa: F401 - see below
from grader.check import student  # noqa: F401 - see below
from grader.sandbox import cgroups, limits  # noqa: F401 - see below
from grader.sandbox import entry, processes, servers, warmup

# A worker cannot import what its sealed view hides (the grader's own code): every module it may run is
# imported here, before any fork (cgroups also rebuilds each request's Cgroup).

MAX_FDS = 2


class Server:
    """The server's state: its request socket, and the status channel of each worker it forked."""

    def __init__(self, requests):
        self.requests = requests
        self.workers = {}  # pid -> the status channel of a worker this server forked and has not reaped
        self.wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        os.set_blocking(wake_write, False)
        self.wake_write = wake_write
        self.poller = select.poll()
        self.poller.register(self.requests.fileno(), select.POLLIN)
        self.poller.register(self.wake_read, select.POLLIN)
        self.handlers = {signal.SIGCHLD: signal.signal(signal.SIGCHLD, lambda *_: None),
                         signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN)}
        signal.set_wakeup_fd(wake_write)

    def serve(self):
        """Answer requests until every judge has closed its end.

        A poll's events are handled in an order that keeps them true: the status channels first (a
        reap closes channels, and a fork may reuse a closed channel's number for a new worker's),
        then the ends of workers, then the requests."""
        while True:
            ready = {fd for fd, _ in self.poller.poll()}
            for fd in ready - {self.wake_read, self.requests.fileno()}:
                self.judge_gone(fd)
            if self.wake_read in ready:
                self.drain_wakeups()
                self.reap()
            if self.requests.fileno() in ready and not self.answer():
                return

    def answer(self):
        """One request; False when no judge is left."""
        try:
            message, fds, _, _ = socket.recv_fds(self.requests, servers.MAX_REQUEST_BYTES, MAX_FDS)
        except InterruptedError:
            return True
        if not message and not fds:
            return False
        try:
            request = json.loads(message)
            kind = request["kind"]
            spec = servers.decode_spec(request["spec"]) if kind == servers.FORK else None
        except Exception:  # noqa: BLE001 - a broken request: nothing to answer it on
            kind, spec = None, None
        if kind == servers.FORK and len(fds) == 2:
            self.fork(spec, *fds)
        elif kind == servers.SWEEP and len(fds) == 1:
            self.sweep(fds[0])
        else:
            for fd in fds:
                os.close(fd)
        return True

    def fork(self, spec, connection_fd, status_fd):
        status = socket.socket(fileno=status_fd)
        try:
            pid = os.fork()
        except OSError as error:  # no memory or pids left for now: the judge may try again
            os.close(connection_fd)
            with status:
                try:
                    status.sendall(servers.NUMBER.pack(-(error.errno or 1)))
                except OSError:
                    pass
            return
        if pid == 0:
            self.become_worker(spec, connection_fd, status)
        os.close(connection_fd)
        self.workers[pid] = status
        self.poller.register(status.fileno(), select.POLLIN)
        try:
            status.sendall(servers.NUMBER.pack(pid))
        except OSError:  # the judge is gone already
            self.judge_gone(status.fileno())

    def become_worker(self, spec, connection_fd, status):
        """In the forked child: drop the server's descriptors and handlers, then run the worker (never returns)."""
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            for number, handler in self.handlers.items():
                signal.signal(number, handler)
            for channel in [self.requests, status, *self.workers.values()]:
                channel.close()
            os.close(self.wake_read)
            os.close(self.wake_write)
            code = entry.run(connection_fd, spec)
        finally:
            os._exit(code)

    def drain_wakeups(self):
        try:
            while os.read(self.wake_read, 512):
                pass
        except BlockingIOError:
            pass

    def reap(self):
        """Collect every child that ended: a worker's exit status goes to its judge; an adopted orphan is dropped."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            channel = self.workers.pop(pid, None)
            if channel is not None:
                with contextlib.suppress(KeyError):  # already, if its judge closed the channel first
                    self.poller.unregister(channel.fileno())
                try:
                    channel.sendall(servers.NUMBER.pack(os.waitstatus_to_exitcode(status)))
                except OSError:
                    pass
                channel.close()

    def judge_gone(self, fd):
        """A worker's status channel was closed by its judge (done with it, or ended): the worker ends too."""
        for pid, channel in list(self.workers.items()):
            if channel.fileno() == fd:
                try:
                    if channel.recvmsg(1, 0, socket.MSG_PEEK | socket.MSG_DONTWAIT)[0]:
                        return  # a judge never writes here: not an end
                except BlockingIOError:
                    return  # nothing to read: not an end
                except OSError:
                    pass
                self.poller.unregister(fd)
                processes.kill([pid])
                return

    def sweep(self, reply_fd):
        """Kill every child of this server that is not a worker it forked (see servers.ForkServer.sweep)."""
        me = os.getpid()
        with socket.socket(fileno=reply_fd) as reply:
            processes.kill_until_gone(lambda table: [pid for pid, (parent, _) in table.items()
                                                     if parent == me and pid not in self.workers])
            try:
                reply.sendall(b".")
            except OSError:
                pass


def main(fd):
    warmup.warm_up()
    processes.become_subreaper()
    # Objects that exist now are never collected in a worker: a collection would touch (and so copy)
    # every page of the server's heap in every worker.
    gc.freeze()
    processes.collapse_to_huge_pages()  # after everything is loaded: cheaper forks for every worker
    Server(socket.socket(fileno=fd)).serve()


if __name__ == "__main__":
    main(int(sys.argv[1]))
