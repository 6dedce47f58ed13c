"""`make grade ENGINE=otter`: grade a submission through the real `otter run` and the stock Otter zip.

Same inputs and outputs as `judge.grade_submission` (the CLI only swaps the
function): a SubmissionResult with one TestResult per kit test, scored from the
pass/fail verdict Otter gives that test's case and the kit's own points.

Stock Otter runs the student's code and the tests in one kernel, with no time
limit of its own. The zip's checks (grader.integrations.incell) grade the submitted
file as the judge does: definitions loaded by the kit's loader, each step with the
judge's time budget, which this engine passes on (KIT_STEP_SECONDS). Around the run
this engine adds what it can:

* a private temporary folder per submission, removed afterwards, holding only
  a copy of the one submitted file (no `.OTTER_LOG`, which Otter would unpickle,
  no stray support files), with a notebook's kernelspec set to `python3`;
* a per-submission time limit (Otter first runs the whole file, top-level demo code
  included, with no limit): on expiry the whole process group of
  `otter run` is killed, and every process that inherited this run's marker
  (the kernel starts its own session) is killed too, as are leftovers after
  a normal end;
* only `results.json` is read back (JSON; never Otter's pickle);
* `otter run` dies with the grader (kill -9 included), and the next run removes the scratch folders
  of graders that were killed.
"""

import atexit
import json
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from grader.check.loader import submitted_form
from grader.check.suite import GradedTest
from grader.judging.judge import Options, check_readable
from grader.judging.model import SubmissionResult, TestResult
from grader.chapter import STEP_KEYS
from grader.sandbox.limits import Limit

MARKER = "KIT_OTTER_RUN"  # environment variable naming this run; inherited by everything it starts
STARTUP_SECONDS = 30  # otter run's own start (imports, kernel launch) on top of the per-step time limit
OUTPUT_TAIL = 1500
SCRATCH_PREFIX = "kit-otter-"  # then run-<pid>- or autograder-<pid>-: the process that made the folder

_built: dict[str, Path] = {}
_build_lock = threading.Lock()


def autograder_zip() -> Path:
    """The Otter zip of the current sources (as `make publish` builds it), built once per process."""
    with _build_lock:
        if "zip" not in _built:
            from grader.integrations.otter import build  # noqa: PLC0415 - only the Otter engine needs it

            sweep_left_behind()
            folder = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}autograder-{os.getpid()}-")
            atexit.register(shutil.rmtree, folder, True)
            _built["zip"] = build(folder)[0]
        return _built["zip"]


def sweep_left_behind() -> None:
    """Remove the scratch folders of graders that ended without removing them (killed midway, kill -9
    included): each folder names the process that made it, and only this user's folders of processes that
    no longer run are removed."""
    scratch = Path(tempfile.gettempdir())
    for folder in scratch.glob(f"{SCRATCH_PREFIX}*"):
        match = re.fullmatch(rf"{SCRATCH_PREFIX}(?:run|autograder)-(\d+)-\w+", folder.name)
        try:
            info = folder.lstat()
            if not match or info.st_uid != os.getuid() or not stat.S_ISDIR(info.st_mode):
                continue
            os.kill(int(match.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, OverflowError):  # alive as another user's process, or gone already: not ours to touch
            continue


def submission_timeout(options: Options) -> float:
    """Seconds one `otter run` may take: the submission's limit, or its start plus every step's limit."""
    return (options.limits.submission_seconds
            or STARTUP_SECONDS + len(STEP_KEYS) * options.limits.step_seconds)


def grade_with_otter(path: str | Path, name: str, tests: Sequence[GradedTest], options: Options,
                     autograder: str | Path | None = None) -> SubmissionResult:
    """Grade one .py or .ipynb with `otter run`; the same result type as judge.grade_submission."""
    started = time.monotonic()
    result = SubmissionResult(name, str(path))
    unreadable = check_readable(path)
    if unreadable:
        result.problems.append(unreadable)
        result.tests = [TestResult(t.name, t.step, 0.0, t.points, unreadable, t.visibility) for t in tests]
        return result
    autograder = Path(autograder or autograder_zip()).resolve()
    workdir = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}run-{os.getpid()}-"))
    try:
        submission = private_copy(Path(path), workdir / "submission")
        output, log = run_otter(autograder, submission, workdir, submission_timeout(options),
                                options.limits.step_seconds)
        verdicts, problem = read_verdicts(output, log, tests)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if problem:
        result.problems.append(problem)
    for test in tests:
        passed, message = verdicts.get(test.name, (False, problem or "Otter reported no result for this test"))
        # The zip's checks stop a step with the judge's words (grader.integrations.incell): the same Limit.
        limit = Limit.TIME if not passed and message.startswith("time limit:") else None
        result.tests.append(TestResult(test.name, test.step, test.points if passed else 0.0, test.points,
                                       message, test.visibility, {}, limit))
    result.seconds = time.monotonic() - started
    return result


def private_copy(path: Path, folder: Path) -> Path:
    """Copy only the submitted file into `folder`, as what it is (loader.submitted_form: Python saved as .ipynb is
    given as a .py, a notebook saved as .py as a notebook), in UTF-8; a notebook gets the `python3` kernelspec.
    Before, Otter failed on a Python .ipynb and on a Latin-1 .py with its coding line, every time, and the run
    said "grader failed ... run the same command again" where the kit's engine gave 100."""
    folder.mkdir(parents=True)
    kind, text = submitted_form(path)  # check_readable read it already: it can be read
    target = folder / f"attention.{kind}"
    if kind == "ipynb":
        notebook = json.loads(text)
        if not isinstance(notebook.get("metadata"), dict):
            notebook["metadata"] = {}
        # otter run starts the kernel the notebook names; a student's "conda-env-foo" does not exist here.
        notebook["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        target.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    else:  # the text is decoded now: a coding line naming another encoding would misread its UTF-8
        lines = text.split("\n")
        lines[:2] = [CODING_LINE.sub("# (the coding line: read as UTF-8)", line) for line in lines[:2]]
        target.write_text("\n".join(lines), encoding="utf-8")
    return target


CODING_LINE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+.*$")  # PEP 263


def run_otter(autograder: Path, submission: Path, workdir: Path, timeout: float, step_seconds: float | None = None
              ) -> tuple[Path | None, str]:
    """Run `otter run` on `submission` in `workdir`, each step's checks within `step_seconds` (None: the
    zip's own); return (results.json path or None, output tail)."""
    output_dir, scratch = workdir / "output", workdir / "tmp"
    output_dir.mkdir()
    scratch.mkdir()
    token = secrets.token_hex(8)
    env = {key: value for key, value in os.environ.items()
           if key not in ("KIT_HIDDEN_TESTS", "PYTHONPATH", "KIT_STEP_SECONDS")}
    if step_seconds:
        env["KIT_STEP_SECONDS"] = f"{step_seconds:g}"  # the zip's checks read it (grader.integrations.incell)
    env.update({
        MARKER: token,
        # Everything otter, Jupyter and IPython write goes into the private folder.
        "TMPDIR": str(scratch), "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"), "IPYTHONDIR": str(scratch / "ipython"),
        # The kernel named python3 is this interpreter (jupyter maps "python" to it, PATH does the rest).
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    })
    command = [sys.executable, "-m", "otter", "run", "--autograder", str(autograder), "--output-dir",
               str(output_dir), "--no-logo", submission.name]
    log_path = workdir / "otter.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(dying_with_this_process(command), cwd=submission.parent, env=env,
                                   stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            kill_run(process, token)
    tail = log_path.read_bytes()[-OUTPUT_TAIL:].decode("utf-8", "replace")
    if timed_out:
        return None, (f"otter run did not finish within {timeout:g} s and was stopped: Otter runs the whole "
                      "file before its checks, with no time limit, so code at the top level that never ends "
                      "(a demo call, a training loop) costs the whole submission")
    results = output_dir / "results.json"
    # otter run exits 0 whatever the scores: anything else means it was stopped midway (a results.json
    # then may be the student's own, written from the kernel), so nothing of it is believed.
    return (results if process.returncode == 0 and results.is_file() else None), tail


# Run first in the started interpreter, which then execs the command (no preexec_fn: this process has threads).
_DIE_WITH_PARENT = """
import ctypes, os, signal, sys
try:
    PR_SET_PDEATHSIG = 1  # <linux/prctl.h>; the setting is kept across exec
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
except AttributeError:
    pass  # not Linux: a killed grader's run ends at its own pace
if os.getppid() != int(sys.argv[1]):
    os._exit(1)  # the grader ended before the signal was armed
os.execvp(sys.argv[2], sys.argv[2:])
"""


def dying_with_this_process(command: list[str]) -> list[str]:
    """`command`, killed by the kernel if this grader ends first (kill -9 included): a grader killed midway
    would otherwise leave `otter run` grading on for a minute. Its kernel ends with it (ipykernel exits once
    the process that started it is gone)."""
    return [sys.executable, "-I", "-c", _DIE_WITH_PARENT, str(os.getpid()), *command]  # -I: nothing of the cwd


def kill_run(process: subprocess.Popen, token: str) -> None:
    """Kill `otter run`'s process group and every process that carries this run's marker."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
    for _ in range(5):  # the kernel has its own session; what it started may fork while we look
        marked = [pid for pid in _pids() if pid != os.getpid() and _marker(pid) == token]
        if not marked:
            return
        for pid in marked:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)


def _pids():
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _marker(pid):
    """The value of MARKER in the environment a process started with, or None."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = f"{MARKER}=".encode()
    for entry in raw.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix):].decode("ascii", "replace")
    return None


class OtterGradedNothing(RuntimeError):
    """`otter run` produced no verdict for a reason that is not the student's (no results.json, an unreadable
    one, no test's result: e.g. a top-level `os.chdir`, after which Otter cannot find its own results file). Not
    a zero to record as the student's grade: the class run counts it as the grader's failure (a zero with no
    fingerprint, graded again by the next run, and exit 1 naming the file); `ENGINE=kit` grades such a file."""

    def __str__(self):
        return f"{super().__str__()[:300]} (grade this file with the kit's engine: ENGINE=kit)"


OTTER_FAILED = "Otter could not grade this submission"


def read_verdicts(results_path: Path | None, log_tail: str, tests: Iterable[GradedTest]
                  ) -> tuple[dict[str, tuple[bool, str]], str | None]:
    """({kit test name: (passed, message)}, problem or None) from Otter's results.json; OtterGradedNothing
    where Otter gave no verdict for a reason that is not the student's code (no verdict on it at all)."""
    if results_path is None:
        if log_tail.startswith("otter run did not finish"):
            return {}, log_tail
        if "DeadKernelError" in log_tail:
            return {}, ("the Python kernel running your code died (os._exit, a crash or running out of memory), "
                        "so Otter graded nothing")
        raise OtterGradedNothing(f"{OTTER_FAILED} (no results.json); the end of its output:\n" + log_tail)
    try:
        results = json.loads(results_path.read_text(encoding="utf-8"))
        entries = [entry for entry in results["tests"] if isinstance(entry, dict)]
    except (OSError, ValueError, KeyError, TypeError):
        raise OtterGradedNothing(f"{OTTER_FAILED}: its results.json cannot be read") from None
    verdicts = {}
    for entry in entries:
        if entry.get("name") in STEP_KEYS and isinstance(entry.get("output"), str):
            names = [test.name for test in tests if test.step == entry["name"]]
            verdicts.update(case_verdicts(entry["output"], names))
    if not verdicts:
        failure = next((str(entry.get("output", "")) for entry in entries if entry.get("name") != "Public Tests"), "")
        raise OtterGradedNothing(f"{OTTER_FAILED}:\n" + failure[-OUTPUT_TAIL:])
    return verdicts, None


def case_verdicts(summary: str, names: Sequence[str]) -> dict[str, tuple[bool, str]]:
    """{case name: (passed, message)} from one question's summary in Otter's results.json.

    Otter writes "<question> results: All test cases passed!" (then one line per
    case only if it has a success message), or "<question> results:" followed by
    one block per case: a header "    <case> result:" (exactly four spaces: every
    line of a message is indented by eight or more), then "        ✅ ..." or
    "        ❌ ..." and the failure's text. `names`: the question's cases.
    """
    lines = summary.splitlines()
    if lines and lines[0].endswith(" results: All test cases passed!"):
        return {name: (True, "") for name in names}
    verdicts: dict[str, tuple[bool, str]] = {}
    current: str | None = None
    block: list[str] = []
    for line in [*lines[1:], "    (end) result:"]:
        if line.startswith("    ") and not line.startswith("     ") and line.endswith(" result:"):
            if current is not None:
                verdicts[current] = _verdict(current, block)
            current, block = line[4:-len(" result:")], []
        elif current is not None:
            block.append(line[8:] if line.startswith("        ") else line.strip())
    return verdicts


def _verdict(name, block):
    text = [line for line in block if line.strip()]
    if text and text[0].startswith("✅"):
        return True, ""
    # The kit's check raises "CheckFailed: <test name>" followed by its teaching message.
    for index, line in enumerate(text):
        if line.endswith(f"Failed: {name}"):
            return False, "\n".join(text[index + 1:]).strip() or "failed"
    return False, "\n".join(text[1:]).strip() or "failed"
