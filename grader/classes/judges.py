"""Several judge processes for one class, so that judging uses every core.

The checks run in the judge, in Python: threads share one interpreter lock, so
one judge process never gets more than one core however many workers compute
beside it. A class is therefore split between judge processes forked from this
one (torch already imported, no thread, no fork server, no CUDA: forking is
safe), each with its own threads, fork server and workers. A judge sends back
each finished results.json text over its own pipe, so the parent keeps exactly
what its judges wrote, whatever a student's process did to the files on disk.
Whatever a judge could not deliver (it crashed) is left to the caller.
"""

import ctypes
import json
import os
import selectors
import signal
import struct
from concurrent.futures import ThreadPoolExecutor, as_completed
from multiprocessing import forkserver

PR_SET_PDEATHSIG = 1
MIN_SUBMISSIONS_PER_JUDGE = 8  # below this a second judge's start-up (its own fork server) does not pay
_HEADER = struct.Struct(">I")


def judge_count(jobs, submissions, cores=None):
    """How many judge processes for `submissions` graded `jobs` at a time: one per core, two jobs each."""
    cores = cores or len(os.sched_getaffinity(0))
    return max(1, min(cores, jobs // 2, submissions // MIN_SUBMISSIONS_PER_JUDGE))


def graded_in_judges(items, grade, judges, threads):
    """Yield (name, results text) for each (name, path) item graded by `grade(item)` (which returns a
    SubmissionResult with `.text`) in `judges` forked processes of `threads` threads each, as they finish."""
    channels = {}
    for index in range(judges):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the judge: never returns into the caller's code
            os.close(read_end)
            for other in channels:
                os.close(other)
            code = 1
            try:
                _judge(items[index::judges], grade, threads, write_end)
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        channels[read_end] = pid
    yield from _collect(channels)


def _judge(items, grade, threads, channel):
    _die_with_parent()
    _forget_fork_server()
    with os.fdopen(channel, "wb") as stream, ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        futures = {pool.submit(grade, item): item[0] for item in items}
        for future in as_completed(futures):
            if future.exception() is not None:
                continue  # the parent grades it again itself, where the error surfaces
            payload = json.dumps({"name": futures[future], "text": future.result().text}).encode()
            stream.write(_HEADER.pack(len(payload)) + payload)
            stream.flush()


def _collect(channels):
    """Read length-prefixed frames from every judge's pipe until all are closed; reap the judges."""
    selector = selectors.DefaultSelector()
    buffers = {}
    for fd in channels:
        selector.register(fd, selectors.EVENT_READ)
        buffers[fd] = b""
    try:
        while buffers:
            for key, _ in selector.select():
                fd = key.fd
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    selector.unregister(fd)
                    os.close(fd)
                    del buffers[fd]
                    continue
                buffers[fd] += chunk
                while len(buffers[fd]) >= _HEADER.size:
                    size = _HEADER.unpack_from(buffers[fd])[0]
                    if len(buffers[fd]) < _HEADER.size + size:
                        break
                    frame = json.loads(buffers[fd][_HEADER.size:_HEADER.size + size])
                    buffers[fd] = buffers[fd][_HEADER.size + size:]
                    yield frame["name"], frame["text"]
    finally:
        for fd in buffers:  # the caller stopped early (an error): stop the judges too
            os.close(fd)
            os.kill(channels[fd], signal.SIGKILL)
        selector.close()
        for pid in channels.values():
            os.waitpid(pid, 0)


def _die_with_parent():
    """A judge whose parent is killed (even with SIGKILL) stops too, instead of grading on unseen."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:
        os._exit(1)


def _forget_fork_server():
    """Each judge starts its own fork server: workers of two judges must never share one, because a
    judge sweeps its fork server's children that are not its own live workers as leftovers."""
    server = forkserver._forkserver
    if server._forkserver_alive_fd is not None:
        os.close(server._forkserver_alive_fd)
    server._forkserver_address = server._forkserver_alive_fd = server._forkserver_pid = None
    server._inherited_fds = None
