"""The worker's own side: what runs in the child the fork server forked, from its seal to its end.

The worker seals itself first (`seal`: its own PID, mount, IPC, UTS, network and cgroup
namespaces, a read-only view of the interpreter only, a private /tmp, a private uid as root,
cgroup limits where the kernel offers them, no capabilities, no_new_privs, seccomp, no
descriptor but its connection, an emptied environment), says so, then receives the
submission's source over its connection (it never reads the submission's folder), loads
the definitions and answers requests until told to stop or killed. Nothing here judges:
the judge only reads plain data back. CUDA is first touched here, never in the fork
server, so GPU grading works with forked workers.
"""

import os
import signal
import sys
import traceback
from multiprocessing.connection import Connection

import torch

from grader.check import wire
from grader.check.loader import Chunk, SubmissionError, load_definitions
from grader.check.session import Session
from grader.sandbox import cgroups, processes, seal

PROCESS_LIMIT = 64  # processes and threads of one submission (cgroup pids, RLIMIT_NPROC)
# Where no memory cgroup counts the kernel memory of a process's memory areas (up to vm.max_map_count of them,
# about 12 MiB, copied by each fork), fewer processes bound it: 16 hold at most about 200 MiB. An honest worker
# is one process with torch's one thread.
PROCESS_LIMIT_WITHOUT_MEMORY_CGROUP = 16


# The worker loop's own operations (wire.OPERATIONS, session=False): the first request, and the last.
LOAD, STOP = wire.OPERATIONS["load"], wire.OPERATIONS["stop"]


def _is_stop(request):
    try:
        return wire.operation_of(request) is STOP
    except wire.ProtocolError:
        return False


def run(connection_fd, spec):
    """The forked worker's life on `connection_fd`: its exit code (as a process's main would end)."""
    code = 0
    try:
        worker_main(Connection(connection_fd), spec)
    except SystemExit as stop:  # student code called sys.exit: the judge reports the code it exited with
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            sys.stderr.write(f"{stop.code}\n")
            code = 1
    except BaseException:  # noqa: BLE001 - the process ends here whatever happened
        code = 1
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
    return code


def worker_main(conn, spec):
    """Seal, say so, load, answer."""
    send, receive, dumps, loads = conn.send_bytes, conn.recv_bytes, wire.dumps, wire.loads
    try:
        report = seal.seal(_policy(conn.fileno(), spec))
    except BaseException as error:  # noqa: BLE001 - the judge decides what a failed seal means
        try:
            send(dumps({"sealed": False, "error": f"{type(error).__name__}: {error}"[:500]}))
        except OSError:
            pass
        return
    torch.set_num_threads(1)
    # The worker inherits every orphan of its namespace (or, without one, of its tree: it is a subreaper):
    # reaped at once, they never count against the submission's process limit as zombies.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    send(dumps({"sealed": True, "report": report}))
    worker = os.getpid()
    try:
        request = loads(receive())
        if wire.operation_of(request) is not LOAD:
            return
        request = LOAD.parse(request)
    except (EOFError, OSError, ValueError):  # wire.ProtocolError is a ValueError
        return
    # Said before any student code runs: a worker that dies before the judge reads this was lost by the
    # grader (a stopped run, the machine), never by the student, and its submission gets another worker.
    send(dumps({"received": True}))
    chunks = [Chunk(**{key: bytes(value).decode("utf-8") if isinstance(value, memoryview) else value
                       for key, value in fields.items()}) for fields in request["chunks"]]
    try:
        if spec["device"].startswith("cuda"):
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            _cap_gpu_allocator(spec["device"], spec["memory_limit"])
        loaded = load_definitions(request["name"], chunks=chunks)
    except SubmissionError as error:
        _only_the_worker(worker)
        send(dumps({"ok": False, "fatal": str(error)}))
        return
    _only_the_worker(worker)
    session = Session(loaded.module, spec["device"])
    send(dumps({"ok": True, "problems": loaded.problems}))
    while True:
        try:
            request = loads(receive())
        except (EOFError, OSError):
            return
        if _is_stop(request):
            return
        answer = session.handle(request)  # any other request, a malformed one too: the Session answers it
        _only_the_worker(worker)
        send(dumps(answer))


def _only_the_worker(worker):
    """A process the student's code forked that comes back into the grader's code (the loader runs definitions
    only, so `if os.fork() == 0: ...` at the top of a file leaves the child's branch out) ends here: a second
    reader of the judge's connection took every other request, and the answers went to the wrong checks."""
    if os.getpid() != worker:
        os._exit(0)


def _cap_gpu_allocator(device, memory_limit):
    """PyTorch's allocator may hold the submission's memory limit on the GPU, no more, before any student code
    runs: a tensor far too large fails in its own step (torch.OutOfMemoryError, a memory limit), not in a
    classmate's. The student's code can lift the cap; the judge's watchdog reads what the driver says the
    worker holds (gpu_memory). Without a usable GPU nothing is capped: the step fails on its own."""
    try:
        index = torch.device(device).index
        index = torch.cuda.current_device() if index is None else index
        total = torch.cuda.get_device_properties(index).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, memory_limit / total), index)
    except (RuntimeError, AssertionError, ValueError):
        pass


def _process_limit(cgroup):
    return PROCESS_LIMIT if cgroups.counts(cgroup, "memory") else PROCESS_LIMIT_WITHOUT_MEMORY_CGROUP


def _policy(keep_fd, spec):
    address_space = None
    if not spec["device"].startswith("cuda"):
        # The cap counts memory beyond what the warm process already maps (torch's libraries).
        # CUDA reserves huge address ranges, so on GPUs the judge watches resident memory instead.
        address_space = processes.memory_bytes("self", "VmSize") + spec["memory_limit"]
    env = seal.Policy(keep_fd).env
    if spec["device"].startswith("cuda"):  # which GPUs "cuda:N" counts among, read when CUDA starts
        env.update({key: os.environ[key] for key in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER") if key in os.environ})
    return seal.Policy(keep_fd=keep_fd, mode=spec["mode"], view=spec["view"], devices=spec["devices"], env=env,
                       uid=spec["uid"], cgroup=spec["cgroup"], bpf=spec["bpf"], address_space=address_space,
                       cpu_seconds=spec["cpu_seconds"], processes=_process_limit(spec["cgroup"]), why=spec["why"],
                       timings=spec["timings"])
