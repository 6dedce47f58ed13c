"""Grade a whole class: resumable, with progress (slices of a class: cohort.shards).

Each submission's results.json is written atomically the moment it is graded,
with a fingerprint of what was graded and with what (the file's bytes, the
grader and tests' sources, the options). A rerun after a crash or a SIGKILL
reuses every result whose fingerprint still matches and grades the rest, so
the class files (grades.csv...) come out the same as from an uninterrupted run.
"""

import contextlib
import errno
import fcntl
import hashlib
import itertools
import json
import logging
import os
import pwd
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader import stopping
from grader.text import terminal
from grader.judging import results_json as results_io
from grader.judging.model import SubmissionResult, zero_result
from grader.outfiles import OutputError, write_atomic
from grader.cohort.judges import graded_in_judges, judge_count
from grader.cohort.progress import Progress
from grader.paths import ROOT

log = logging.getLogger(__name__)

FINGERPRINTED = ("grader/**/*.py", "tests/public/*.py", "tests/hidden/*.py")
LOCK_NAME = ".grading.lock"  # in OUT: locked (flock) by the run writing there
_HELD = set()  # the lock files this process holds open (see `holding`)


def _forget_held_locks():
    """In a forked child (a judge): close the inherited lock files, so only the run itself holds OUT."""
    for handle in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(handle)
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_held_locks)


class OutBusy(Exception):
    """Another run holds OUT: the message says which and what to do."""


@contextlib.contextmanager
def holding(out):
    """Hold OUT for one run: a second run into the same OUT stops at once with a message, instead of
    grading the whole class again beside the first. The kernel drops the lock when the run ends,
    however it ends (even SIGKILL), so no stale lock is ever left to clear by hand. The processes it
    forks (judges) close their copy at once, so none holds OUT on after the run has died (flock belongs
    to the open file, which a fork shares). OutputError when OUT cannot be created or written."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        handle = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as error:
        raise OutputError(f"cannot write into {out}: {error.strerror or error}") from None
    try:
        _HELD.add(handle)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EACCES, errno.EAGAIN, errno.EWOULDBLOCK):
                raise OutputError(f"cannot lock {out / LOCK_NAME}: {error.strerror or error}") from None
            holder = os.pread(handle, 200, 0).decode(errors="replace").strip() or "another process"
            raise OutBusy(f"{out} is in use by another grading run ({holder}): wait for it to finish, "
                          "or give another --out") from None
        with contextlib.suppress(OSError):  # who holds it, for the message above; a full disk may refuse it
            os.ftruncate(handle, 0)
            os.pwrite(handle, f"process {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
        yield
    finally:
        _HELD.discard(handle)
        os.close(handle)  # releases the lock; the file stays (deleting it would race with a run opening it)


def foreign_out(out):
    """Why OUT cannot be this run's, or None. OUT (and its results/ and feedback/) must belong to the
    user who grades and be writable by no one else: a folder someone else made first, in a place
    anyone may write (a student's code can read the judge's command line), would give them every
    result written into it."""
    me = os.geteuid()
    for path in (Path(out), Path(out) / "results", Path(out) / "feedback"):
        try:
            link = os.lstat(path)
            info = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as error:
            return f"{path} cannot be checked ({error.strerror or error})"
        owner = info.st_uid if not stat.S_ISLNK(link.st_mode) or link.st_uid in (me, 0) else link.st_uid
        if owner != me:
            return (f"{path} belongs to {_user_name(owner)}, not to {_user_name(me)} who grades (someone else "
                    "created it, perhaps before this run)")
        if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
            return f"{path} can be written by every user"
    return None


def _user_name(uid):
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"uid {uid}"


def suite_digest(root=ROOT):
    """A hash of the grader's and the tests' sources: results from another version are regraded."""
    digest = hashlib.sha256()
    for pattern in FINGERPRINTED:
        for path in sorted(root.glob(pattern)):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def fingerprint(path, settings):
    """What a result depends on: the submission's bytes (none for a rejected one) and the grading settings."""
    digest = hashlib.sha256()
    # In blocks: a submission may be huge (it is refused later, not here).
    with open(path or os.devnull, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:32]


def result_path(out, name):
    return Path(out) / "results" / f"{name}.json"


FORMER = "former"  # OUT/results/former/, OUT/feedback/former/: what submissions that left the class left behind


def set_aside_former(out, names):
    """Move the results and feedback pages of submissions that are no longer in the class (`names`: the
    class now) into OUT/results/former/ and OUT/feedback/former/; return their names. The report, the
    integrity page and the cohort figures read OUT/results/*.json: a file left there by a student who
    left the class (removed, or renamed by a new LMS display name) would be counted as one of its
    students. Moved, not deleted: they are the instructor's records of a grade once given; a student who left
    twice keeps both (the earlier moved again as <name>.1.json, .2.json...)."""
    out, names = Path(out), set(names)
    gone = sorted(path.stem for path in (out / "results").glob("*.json") if path.stem not in names)
    set_aside(out, gone)
    return gone


def set_aside(out, names):
    """Move the results and feedback pages of `names` into OUT/results/former/ and OUT/feedback/former/."""
    out = Path(out)
    for name in names:
        for folder, suffix in (("results", ".json"), ("feedback", ".html")):
            path = out / folder / f"{name}{suffix}"
            if path.is_file():
                try:
                    (out / folder / FORMER).mkdir(exist_ok=True)
                    target = out / folder / FORMER / path.name
                    if target.exists():  # an earlier departure's record: kept under the next free number
                        number = next(n for n in itertools.count(1)
                                      if not (out / folder / FORMER / f"{name}.{n}{suffix}").exists())
                        os.replace(target, out / folder / FORMER / f"{name}.{number}{suffix}")
                    os.replace(path, target)
                except OSError as error:
                    raise OutputError(f"cannot move {path} into {out / folder / FORMER}: "
                                      f"{error.strerror or error}") from None


def reusable(out, name, expected):
    """The earlier result for `name` when it was graded from the same bytes with the same settings."""
    path = result_path(out, name)
    try:
        earlier = results_io.read_results_json(path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing, damaged, or from an older format: grade again
    return earlier if earlier.fingerprint == expected else None


def internal_error_result(name, path, tests, error):
    """A zero that says the grader, not the student's code, failed; the run goes on and says so. It carries
    no fingerprint, so the next `make grade` into the same OUT grades the file again."""
    why = (f"the grader failed on this file ({type(error).__name__}), which is not a verdict on your code; "
           "your instructor has been told and will grade it again")
    log.error(f"grading {terminal(name)} failed inside the grader: {type(error).__name__}: "
              f"{terminal(str(error))[:300]}; it scored 0 for now, and the next `make grade` into this OUT grades it "
              "again")
    return zero_result(name, path, tests, why)


def grade_class(submissions, tests, options, out, maxima, grade, settings, jobs=2, stream=None, judges=None, own=None):
    """Grade (name, path) pairs into out/results/, reusing unchanged results; return all results.

    `jobs` submissions are graded at a time, by `judges` judge processes (default: see judges.judge_count).
    `own`: {name: (options, settings)} for students graded otherwise than the class (limits a regrade gave them)."""
    own = own or {}
    prints = {name: fingerprint(path, own[name][1] if name in own else settings) for name, path in submissions}
    done = {}
    for name, _ in submissions:
        earlier = reusable(out, name, prints[name])
        if earlier is not None:
            done[name] = earlier
    todo = [(name, path) for name, path in submissions if name not in done]
    progress = Progress(len(submissions), skipped=len(done), stream=stream)
    total = sum(maxima.values())
    failed = []  # the first result OUT could not take: grading more would only lose more work

    def one(item):
        if failed:
            raise failed[0]
        stopping.check()
        name, path = item
        try:
            result = grade(path, name, tests, own[name][0] if name in own else options)
            result.fingerprint = prints[name]
            result = results_io.finished(result, maxima)  # as written: what a resumed run reads back
        except OutputError:
            raise
        except Exception as error:  # noqa: BLE001 - a grader bug on one file must not cost the class its grades.csv
            result = internal_error_result(name, path, tests, error)  # no fingerprint: the next run grades it again
            result = results_io.finished(result, maxima)
        stopping.check()  # a run being stopped records nothing more: what was under way is graded next run
        try:
            write_atomic(result_path(out, name), result.to_json())
        except OutputError as error:
            failed.append(error)
            raise
        return result

    def record(result):
        done[result.name] = result
        limits = sum(test.limit is not None for test in result.tests)
        progress.advance(result.name, result.score, total, result.seconds,
                         note=f"{limits} test(s) hit a limit or crash" if limits else "")

    count = judge_count(jobs, len(todo)) if judges is None else judges
    try:
        if count > 1:
            threads = -(-jobs // count)
            for name, data in graded_in_judges(todo, one, count, threads):
                record(SubmissionResult.from_dict(data, name))
            todo = [item for item in todo if item[0] not in done]  # what a judge could not deliver
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            try:
                for result in pool.map(one, todo):
                    record(result)
            except (OutputError, stopping.Stopped):
                pool.shutdown(wait=True, cancel_futures=True)  # those under way end; none starts
                raise
    except stopping.Stopped as stop:  # what is on disk now, however far the progress lines had got
        stop.graded = sum(reusable(out, name, prints[name]) is not None for name, _ in submissions)
        stop.total = len(submissions)
        raise
    finally:
        progress.finish()
    graded = [done[name] for name, _ in submissions]
    # Without root, student code ran as this user and might have tampered with earlier results
    # (workers cannot write files, but can truncate them): put back what the judge wrote or read.
    for result in graded:  # a result written or read back writes the same bytes again (grader.results)
        path, text = result_path(out, result.name), result.to_json()
        if not path.is_file() or path.read_text(encoding="utf-8", errors="replace") != text:
            write_atomic(path, text)
    return graded
