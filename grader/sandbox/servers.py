"""The judges' side of the fork server that workers are forked from; nothing here imports torch.

A worker is a fork of the kit's own fork server (`grader.sandbox.forkserver`): a warm
interpreter that imported torch and the grader once but never touched the judge's memory
or student code. Starting one costs a torch import (about 1.5 s), so the command line
starts it (`start_early`) before it imports torch itself: the two imports then share the
machine's cores instead of running one after the other.

One server serves the process that started it and every judge forked from that process:
they all hold the same end of one unix socketpair (SOCK_SEQPACKET: each request is one
message, whoever sends it), so a judge costs no torch import of its own. No socket lives
in the file system, so no temp folder either: two runs of one user never share a server
nor remove each other's files.

A request carries two descriptors: the worker's end of its connection to the judge, and
the server's end of a status channel on which the server answers the worker's pid (or
minus the errno of a failed fork), then its exit status once it has reaped it. The judge
closing its status end (done with the worker, or ended) makes the server kill the worker.
"""

import base64
import json
import os
import select
import socket
import struct
import subprocess
import sys

from grader.paths import ROOT

# What the fork server is started with. Every worker is a fork of the server, so the environment it was
# started with lies in each worker's memory (/proc/self/environ reads it, whatever os.environ says later):
# only what starting Python and CUDA needs, never a token.
SERVER_ENVIRONMENT = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "PYTHONHASHSEED",
                      "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES")
SERVER_PREFIXES = ("OMP_", "MKL_", "KMP_")
NUMBER = struct.Struct("q")  # a pid or an exit status on a status channel
MAX_REQUEST_BYTES = 1 << 20
FORK, SWEEP = "fork", "sweep"


class ServerGone(OSError):
    """The fork server ended (or never started): no worker can be forked."""


class ForkFailed(OSError):
    """The fork server could not fork (no memory or no pids left for now)."""


def short_environment():
    """The fork server's environment: see SERVER_ENVIRONMENT."""
    environment = {key: value for key, value in os.environ.items()
                   if key in SERVER_ENVIRONMENT or key.startswith(SERVER_PREFIXES)}
    environment["PATH"] = "/usr/bin:/bin"
    # The server imports the grader by this path, whatever the current folder (-P keeps that folder, the
    # class folder perhaps, off sys.path): the judge's copy of the grader.
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return environment


class ForkServer:
    """A started fork server: its pid and the judges' end of its request socket."""

    def __init__(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            # A session of its own (start_new_session): Ctrl-C or a hang-up, sent to the terminal's process group,
            # stops the judges, which stop their workers themselves; reaching the server and its workers, it would
            # end them mid-step, as if the student's code had crashed. The server still ends with the last process
            # that holds `ours` (the run and its judges): its request socket then reads as closed.
            self.process = subprocess.Popen(
                [sys.executable, "-P", "-m", "grader.sandbox.forkserver", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], env=short_environment(), stdin=subprocess.DEVNULL, close_fds=True,
                restore_signals=False, start_new_session=True)
        finally:
            theirs.close()
        self.requests = ours
        self.pid = self.process.pid

    def fork(self, spec, connection_fd):
        """Fork a worker that runs `spec` on `connection_fd` (which the server receives a copy of): its
        ServedProcess. The first request waits for the server's warm-up (not the student's time)."""
        status, theirs = socket.socketpair()
        try:
            self._send(FORK, encode_spec(spec), [connection_fd, theirs.fileno()])
        except BaseException:
            status.close()
            raise
        finally:
            theirs.close()
        pid = _read_number(status)
        if pid is None or pid < 0:
            status.close()
            if pid is None:
                raise ServerGone("the fork server ended before forking the worker")
            raise ForkFailed(-pid, f"the fork server could not fork: {os.strerror(-pid)}")
        return ServedProcess(pid, status)

    def sweep(self):
        """Have the server kill, until none is left, every child of its own that it did not fork: what
        killed workers left behind (the server is a subreaper). Done by the server, which forks nothing
        meanwhile, so a worker being started is never taken for a leftover; returns once done."""
        done, theirs = socket.socketpair()
        try:
            self._send(SWEEP, None, [theirs.fileno()])
            theirs.close()
            os.read(done.fileno(), 1)
        except OSError:
            pass  # the server is gone, and its children with it
        finally:
            theirs.close()
            done.close()

    def _send(self, kind, spec, fds):
        try:
            socket.send_fds(self.requests, [json.dumps({"kind": kind, "spec": spec}).encode()], fds)
        except OSError as error:
            raise ServerGone(f"the fork server is gone ({error})") from None


class ServedProcess:
    """The judge's view of one worker the fork server forked (what multiprocessing.Process offered)."""

    def __init__(self, pid, status):
        self.pid = pid
        self.status = status
        self.code = None

    @property
    def exitcode(self):
        """The worker's exit code (negative: the signal that ended it), None while it runs."""
        self.join(0)
        return self.code

    def join(self, timeout=None):
        """Wait up to `timeout` seconds for the worker's end."""
        if self.code is not None or self.status is None:
            return
        if select.select([self.status], [], [], timeout)[0]:
            code = _read_number(self.status)
            self.code = 255 if code is None else code  # the server ended first: no status to tell
            self.close()

    def close(self):
        """The judge is done with it: the server kills a worker whose status channel is closed."""
        if self.status is not None:
            self.status.close()
            self.status = None


def _read_number(channel):
    data = b""
    try:
        while len(data) < NUMBER.size:
            chunk = os.read(channel.fileno(), NUMBER.size - len(data))
            if not chunk:
                return None
            data += chunk
    except OSError:
        return None
    return NUMBER.unpack(data)[0]


def encode_spec(spec):
    """A worker's spec as JSON (plain data only: nothing is unpickled, on either side)."""
    cgroup = spec["cgroup"]
    return {**spec, "bpf": base64.b64encode(spec["bpf"]).decode(),
            "cgroup": None if cgroup is None else {"dirs": {key: str(folder) for key, folder in cgroup.dirs.items()},
                                                   "limits": dict(cgroup.limits)}}


def decode_spec(data):
    """The spec `encode_spec` wrote, as the worker reads it (in the fork server)."""
    from grader.sandbox.cgroups import Cgroup
    from pathlib import Path

    cgroup = data["cgroup"]
    return {**data, "bpf": base64.b64decode(data["bpf"]), "view": tuple(data["view"]),
            "devices": tuple(data["devices"]),
            "cgroup": None if cgroup is None else Cgroup({key: Path(folder) for key, folder in cgroup["dirs"].items()},
                                                         cgroup["limits"])}


_SERVER = []  # the fork server this process and the judges forked from it use: [ForkServer] once started


def shared():
    """The fork server of this run (started if it is not yet). Inherited by forked judges, which use it too.
    Called by one thread at a time (the command's main thread, or under the worker pool's lock)."""
    if not _SERVER:
        _SERVER.append(ForkServer())
    return _SERVER[0]


def forget(gone):
    """`gone` ended (killed, out of memory): the next `shared()` in this process starts another."""
    if _SERVER and _SERVER[0] is gone:
        _SERVER.clear()


def start_early():
    """Start this run's fork server now, before the caller's own heavy imports; the first worker then
    finds the server ready or nearly so."""
    shared()
