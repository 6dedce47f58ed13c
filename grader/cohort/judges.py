"""Several judge processes for one class, so that judging uses every core.

The checks run in the judge, in Python: threads share one interpreter lock, so
one judge process never gets more than one core however many workers compute
beside it. A class is therefore split between this process, which grades the first
share itself, and judge processes forked from it (torch already imported, no
thread, no CUDA: forking is safe), each with its own threads, workers and worker
pool (`sandbox.pool`, made anew in the judge). Every judge forks its workers from
the run's one fork server (the command line starts it early, see `sandbox.servers`):
a judge costs no torch import of its own. A judge
sends back each finished result (its results.json dict, one JSON message) over its own one-way
`multiprocessing.connection` pipe (framed messages, closed on exec: no fork
server or worker ever holds one), so the parent keeps exactly what its judges
wrote, whatever a student's process did to the files on disk. Whatever a judge
could not deliver (it crashed) is left to the caller.
"""

import ctypes
import fcntl
import json
import collections
import os
import signal
import sys
import threading
from multiprocessing import connection

from grader import stopping

PR_SET_PDEATHSIG = 1
MIN_SUBMISSIONS_PER_JUDGE = 8  # below this a second judge does not pay (measured with a fork server per judge)


def judge_count(jobs, submissions, cores=None):
    """How many judge processes for `submissions` graded `jobs` at a time: one per core, two jobs each."""
    cores = cores or len(os.sched_getaffinity(0))
    return max(1, min(cores, jobs // 2, submissions // MIN_SUBMISSIONS_PER_JUDGE))


def graded_in_judges(items, grade, judges, threads):
    """Yield (name, results.json dict) for each (name, path) item graded by `grade(item)` (which returns a
    SubmissionResult as results.json has it) by `judges` judges of `threads` threads each, as they finish: this process
    is the first judge, the others are forked. Each thread takes the next item when it is free (see
    `ItemQueue`), so a judge that started later or grades slower simply takes fewer. An item whose grading
    raised is not yielded."""
    queue_of_items = ItemQueue(items)
    channels = {}
    for _ in range(1, judges):  # every fork before this process starts a thread
        reader, writer = connection.Pipe(duplex=False)
        with stopping.signals_held():  # a stop comes after the fork, with its judge known (see stopping)
            pid = os.fork()
            if pid:
                channels[reader] = pid
        if pid == 0:  # the judge: never returns into the caller's code
            code = 1
            try:
                reader.close()
                for other in channels:  # the other judges' ends stay theirs
                    other.close()
                _judge(queue_of_items, grade, threads, writer)
                code = 0
            finally:
                os._exit(code)
        writer.close()
    finished = _Inbox()  # (name, results.json dict), or None when a source is done
    stop = threading.Event()

    def forked():
        try:
            for frame in _collect(channels, stop):
                finished.put(frame)
        finally:
            finished.put(None)

    def own_threads():
        try:
            _grade_taken(queue_of_items, grade, threads, lambda name, data: finished.put((name, data)), stop)
        finally:
            finished.put(None)

    sources = [threading.Thread(target=forked, name="judges"), threading.Thread(target=own_threads, name="own")]
    for source in sources:
        source.start()
    try:
        done = 0
        while done < len(sources):
            frame = finished.get()
            if frame is None:
                done += 1
            else:
                yield frame
    finally:
        stop.set()  # the caller stopped early (an error): stop the judges and this process's share too
        for source in sources:
            source.join()
        queue_of_items.close()


class _Inbox:
    """A first-in first-out list between this process's threads (plain objects: nothing is serialised)."""

    def __init__(self):
        self.items = collections.deque()
        self.ready = threading.Condition()

    def put(self, item):
        with self.ready:
            self.items.append(item)
            self.ready.notify()

    def get(self):
        with self.ready:
            self.ready.wait_for(lambda: self.items)
            return self.items.popleft()


class ItemQueue:
    """The class's items, taken one at a time by the threads of every judge process.

    The indexes wait in a pipe, four bytes each, written before the judges are forked and with its
    write end closed: a read of four bytes takes exactly one index (the kernel serialises readers of
    a pipe), and an empty pipe reads as its end. No lock, nothing to share but a descriptor, which
    the workers (forked from fork servers, never from a judge) never hold."""

    RECORD = 4

    def __init__(self, items):
        self.items = list(items)
        self.read_end, write_end = os.pipe()
        size = self.RECORD * len(self.items)
        if size > 65536:  # a pipe holds 64 KiB by default: make room for a large class (Linux)
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, size)
        try:
            data = b"".join(index.to_bytes(self.RECORD, "big") for index in range(len(self.items)))
            written = 0
            while written < len(data):
                written += os.write(write_end, data[written:])
        finally:
            os.close(write_end)

    def take(self):
        """The next item, or None when every item has been taken."""
        record = os.read(self.read_end, self.RECORD) if self.read_end is not None else b""
        return self.items[int.from_bytes(record, "big")] if len(record) == self.RECORD else None

    def close(self):
        if self.read_end is not None:
            os.close(self.read_end)
            self.read_end = None


def _judge(items, grade, threads, channel):
    _die_with_parent()
    sandbox = sys.modules.get("grader.sandbox.pool")  # loaded when this run grades with the kit's engine
    if sandbox is not None:
        sandbox.current()  # the judge's own pool, made here before any thread starts (see sandbox.pool)
    sending = threading.Lock()  # one channel, several threads

    def send(name, data):
        with sending:
            channel.send_bytes(json.dumps({"name": name, "result": data}).encode())

    try:
        _grade_taken(items, grade, threads, send)
        channel.close()
    finally:
        if sandbox is not None:
            sandbox.shutdown()  # os._exit skips the exit handlers that would finish its closes


def _grade_taken(items, grade, threads, deliver, stop=None):
    """`threads` threads that each take the next item of `items` (an ItemQueue) until none is left (or `stop`
    is set), grade it and `deliver(name, results.json dict)`; returns once all are done. An item whose grading
    raised is not delivered: the parent grades it again itself, where the error surfaces."""
    def work():
        while not (stop is not None and stop.is_set()) and (item := items.take()) is not None:
            try:
                data = grade(item).to_dict()
            except stopping.Stopped:  # the run is being stopped: nothing more is graded or delivered
                return
            except Exception:  # noqa: BLE001 - see above
                continue
            deliver(item[0], data)

    workers = [threading.Thread(target=work, name=f"grading-{i}") for i in range(max(1, threads))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def _collect(channels, stop):
    """Read every judge's messages until its end is closed, or until `stop` is set; reap the judges."""
    open_ends = dict(channels)
    try:
        while open_ends and not stop.is_set():
            for reader in connection.wait(list(open_ends), timeout=0.2):
                try:
                    frame = json.loads(reader.recv_bytes())
                except EOFError:  # the judge is done (or died): what it did not send is the caller's
                    reader.close()
                    del open_ends[reader]
                    continue
                yield frame["name"], frame["result"]
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
