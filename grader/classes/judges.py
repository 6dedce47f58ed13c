"""Several judge processes for one class, so that judging uses every core.

The checks run in the judge, in Python: threads share one interpreter lock, so
one judge process never gets more than one core however many workers compute
beside it. A class is therefore split between judge processes forked from this
one (torch already imported, no thread, no fork server, no CUDA: forking is
safe), each with its own threads, fork server and workers. A judge sends back
each finished results.json text over its own one-way `multiprocessing.connection`
pipe (framed messages, closed on exec: no fork server or worker ever holds one),
so the parent keeps exactly what its judges wrote, whatever a student's process
did to the files on disk. Whatever a judge could not deliver (it crashed) is left
to the caller.
"""

import ctypes
import json
import os
import shutil
import signal
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from multiprocessing import connection, forkserver, process

PR_SET_PDEATHSIG = 1
MIN_SUBMISSIONS_PER_JUDGE = 8  # below this a second judge's start-up (its own fork server) does not pay


def judge_count(jobs, submissions, cores=None):
    """How many judge processes for `submissions` graded `jobs` at a time: one per core, two jobs each."""
    cores = cores or len(os.sched_getaffinity(0))
    return max(1, min(cores, jobs // 2, submissions // MIN_SUBMISSIONS_PER_JUDGE))


def graded_in_judges(items, grade, judges, threads):
    """Yield (name, results text) for each (name, path) item graded by `grade(item)` (which returns a
    SubmissionResult with `.text`) in `judges` forked processes of `threads` threads each, as they finish."""
    channels = {}
    for index in range(judges):
        reader, writer = connection.Pipe(duplex=False)
        pid = os.fork()
        if pid == 0:  # the judge: never returns into the caller's code
            code = 1
            try:
                reader.close()
                for other in channels:  # the other judges' ends stay theirs
                    other.close()
                _judge(items[index::judges], grade, threads, writer)
                code = 0
            finally:
                os._exit(code)
        writer.close()
        channels[reader] = pid
    yield from _collect(channels)


def _judge(items, grade, threads, channel):
    _die_with_parent()
    _forget_fork_server()
    try:
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            futures = {pool.submit(grade, item): item[0] for item in items}
            for future in as_completed(futures):
                if future.exception() is not None:
                    continue  # the parent grades it again itself, where the error surfaces
                channel.send_bytes(json.dumps({"name": futures[future], "text": future.result().text}).encode())
        channel.close()
    finally:
        sandbox = sys.modules.get("grader.sandbox.worker")  # loaded when this judge graded with the kit's
        if sandbox is not None:
            sandbox.shutdown()  # os._exit skips the exit handlers that would finish its closes
        _remove_own_temp_dir()


def _remove_own_temp_dir():
    """A judge ends with os._exit, so multiprocessing's exit handlers never remove the folder its fork
    server's socket lives in (/tmp/pymp-*): remove it here (the fork server has nothing left to serve)."""
    folder = process.current_process()._config.get("tempdir")
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def _collect(channels):
    """Read every judge's messages until its end is closed; reap the judges."""
    open_ends = dict(channels)
    try:
        while open_ends:
            for reader in connection.wait(list(open_ends)):
                try:
                    frame = json.loads(reader.recv_bytes())
                except EOFError:  # the judge is done (or died): what it did not send is the caller's
                    reader.close()
                    del open_ends[reader]
                    continue
                yield frame["name"], frame["text"]
    finally:
        for reader, pid in open_ends.items():  # the caller stopped early (an error): stop the judges too
            reader.close()
            os.kill(pid, signal.SIGKILL)
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
    process.current_process()._config.pop("tempdir", None)  # a folder of its own, never the parent's
