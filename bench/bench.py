"""`make bench`: how fast and how lean grading is, against the targets of the kit.

Prints, for this machine:
  * the floor: seconds of `python -c "import torch"`, the cost of any fresh process: the median of 3 runs
    before the bulk run and 3 after it (this machine's speed drifts by 10-20 % over minutes, and the ratio
    below should compare the bulk run with the machine it ran on, not with the one before it);
  * bulk grading of N submissions (1 in 4 correct, the rest catalogue bugs) through the real CLI:
    total wall time, median seconds per submission, ratio of the total to the floor (target <= 20; and <= 8,
    the target of grading near the machine's limit);
    of it, the class's integrity step (every pair compared; target <= 10 % of the rest); the machine's load
    and, as root with a cgroup v1 cpuacct hierarchy, the CPU seconds of the run and all it started (per
    submission: the figure to compare across runs on a shared machine, where wall time follows the load), and
    per submission each side's own: the judge's grading thread and the worker's processes (results.json);
  * a student's `python check.py masking` in student_template/ (target <= 1.5 x the floor);
  * one file through the command line, `python -m grader grade FILE`, a fresh process each (target <= 1.5 x);
  * the sandbox: median wait for a sealed worker per submission (target <= 15 ms) and seal time;
  * peak memory of grading one submission, judge + fork server + worker (target <= 700 MB);
  * judge <-> worker round trips per submission: a correct file (target <= 20, once the judge has learned its
    plans from a first one) and four catalogue bugs;
  * stock `otter run` on three of the same submissions, and the ratio to the kit's grader;
  * kill -9 midway through the bulk run, rerun: grades.csv must equal the uninterrupted run's.

Usage: python bench/bench.py [--count 200] [--device cpu] [--jobs 2] [--no-otter] [--no-resume]
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # run as a script (make bench): the kit's package sits beside bench/

from grader.build.exercises import clean_solution  # noqa: E402
from grader.faults.samples import synthetic_class  # noqa: E402
from grader.sandbox import processes  # noqa: E402

PYTHON = sys.executable
TARGETS = {"bulk_ratio": 20.0, "bulk_ratio_near_limit": 8.0, "check_ratio": 1.5, "cli_ratio": 1.5, "peak_mb": 700.0,
           "sandbox_ms": 15.0, "round_trips": 20}


def timed(command, **kwargs):
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, **kwargs)
    return time.monotonic() - started, done


def import_floor(runs=3):
    """Seconds of each of `runs` fresh `python -c "import torch"`."""
    return [timed([PYTHON, "-c", "import torch"])[0] for _ in range(runs)]


def tree(root):
    """Pids of `root` and everything below it."""
    return [root, *processes.descendants(root, processes.live_processes())]


def memory_of(pids):
    """(sum of resident set sizes, sum of proportional set sizes) in bytes."""
    rss = pss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                for line in rollup:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
        except OSError:
            pass
    return rss, pss


def peak_memory(command):
    """Run `command`, sampling its whole process tree's memory every 20 ms; return the peaks."""
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peaks = [0, 0]
    while process.poll() is None:
        rss, pss = memory_of(tree(process.pid))
        peaks = [max(peaks[0], rss), max(peaks[1], pss)]
        time.sleep(0.02)
    return peaks


def grade_command(folder, out, args):
    return [PYTHON, "-m", "grader", "grade", str(folder), "--out", str(out), "--jobs", str(args.jobs),
            "--device", args.device]


def bulk(folder, out, args):
    """(wall seconds, median seconds per submission, the integrity step's seconds, CPU seconds of the run and of
    every process it started or None, {"judge", "worker": mean CPU seconds per submission on that side (its
    results.json)}, the 1-minute load average before and after)."""
    load_before = os.getloadavg()[0]
    with CpuAccount() as account:
        seconds, done = timed(grade_command(folder, out, args), preexec_fn=account.join)
    if done.returncode:
        sys.exit(f"bulk grading failed:\n{done.stderr[-2000:]}")
    extras = [json.loads(p.read_text())["extra_data"] for p in (out / "results").glob("*.json")]
    sides = {side: statistics.mean(extra["cpu"][side] for extra in extras) for side in ("judge", "worker")}
    return (seconds, statistics.median(extra["seconds"] for extra in extras), integrity_seconds(done.stdout),
            account.seconds, sides, (load_before, os.getloadavg()[0]))


class CpuAccount:
    """CPU seconds of a command and of everything it starts, wherever they are reaped (the fork server and its
    workers are not the command's waited children: RUSAGE_CHILDREN misses them), from a cgroup v1 cpuacct group
    of its own. Wall time on a shared machine moves with its load; CPU seconds much less. `seconds` stays None
    where no such group can be made (not root, cgroup v2 only): the sandbox's own groups are never touched."""

    ROOT = Path("/sys/fs/cgroup/cpuacct")

    def __init__(self):
        self.group, self.seconds = None, None

    def __enter__(self):
        try:
            self.group = self.ROOT / f"attention-bench-{os.getpid()}"
            self.group.mkdir()
        except OSError:
            self.group = None
        return self

    def join(self):
        """In the command's process, before it runs (preexec_fn)."""
        if self.group is not None:
            try:
                (self.group / "cgroup.procs").write_text(str(os.getpid()))
            except OSError:
                pass

    def __exit__(self, *exc):
        if self.group is None:
            return
        try:
            self.seconds = int((self.group / "cpuacct.usage").read_text()) / 1e9 or None  # 0: the command never joined
        except (OSError, ValueError):
            pass
        for _ in range(50):  # the last workers may still be exiting
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def sandbox_figures(out):
    """(median ms a submission waited for its sealed worker, median ms a worker spent sealing itself,
    the sandbox's mode) from the results' extra_data. Workers are sealed ahead of time, while earlier
    submissions are graded (see grader/sandbox/worker.py): the wait is what is left of the seal."""
    reports = [json.loads(p.read_text())["extra_data"].get("sandbox") or {} for p in (out / "results").glob("*.json")]
    setup = [r["setup_ms"] for r in reports if "setup_ms" in r]
    seal = [r["seal_ms"] for r in reports if "seal_ms" in r]
    modes = sorted({r.get("mode", "?") for r in reports})
    return statistics.median(setup or [float("nan")]), statistics.median(seal or [float("nan")]), "/".join(modes)


def integrity_seconds(stdout):
    """Seconds of the class run's integrity step, from its `integrity: ... in X s` line (None without one)."""
    match = re.search(r"^integrity: .* in ([\d.]+) s", stdout, flags=re.M)
    return float(match[1]) if match else None


def round_trips(scratch, args):
    """Judge <-> worker round trips of single submissions graded by the real judge in this process, in order: a
    correct file first (no plans yet: the judge learns each group's plan from it), a correct file again, then
    four catalogue bugs, each one step's checks failing (grader.check.student.Plans). {label: round trips}."""
    from grader.check.student import PLANS
    from grader.check.suite import discover
    from grader.faults.bugs import BUGS
    from grader.judging.judge import Options, grade_submission

    clean = clean_solution()
    files = [("correct, the judge's first (learns the plans)", clean), ("correct", clean)]
    files += [(f"bug {bug.id}", bug.apply(clean)) for bug in BUGS[::len(BUGS) // 4][:4]]
    folder = scratch / "round-trips"
    folder.mkdir()
    tests, counts = discover(), {}
    for index, (label, source) in enumerate(files):
        path = folder / f"student_{index}.py"
        path.write_text(source)
        before = PLANS.round_trips
        grade_submission(path, path.stem, tests, Options.of(device=args.device))
        counts[label] = PLANS.round_trips - before
    return counts


def killed_and_resumed(folder, out, reference, args):
    """SIGKILL a run once half the results exist, rerun it; compare grades.csv with `reference`."""
    process = subprocess.Popen(grade_command(folder, out, args), cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    half = args.count // 2
    while process.poll() is None and len(list((out / "results").glob("*.json"))) < half:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    before = len(list((out / "results").glob("*.json")))
    seconds, done = timed(grade_command(folder, out, args))
    resumed = next((line for line in done.stderr.splitlines() if line.startswith("resuming")), "no resume line")
    same = (out / "grades.csv").read_text() == reference.read_text()
    return before, resumed, seconds, same


def otter_runs(files, args):
    """Seconds of stock `otter run` per submission with dist/otter's zip, or why it could not run."""
    otter = Path(PYTHON).with_name("otter")
    if not otter.exists():
        return None, "otter is not installed (make test installs it)"
    with tempfile.TemporaryDirectory() as dist:
        built = subprocess.run([PYTHON, "-m", "grader", "publish", "--dist", dist, "otter"], cwd=ROOT,
                               capture_output=True, text=True)
        zips = sorted(Path(dist).glob("otter/*.zip"))
        if built.returncode or not zips:
            return None, f"could not build the Otter autograder: {built.stderr.strip()[-300:]}"
        times = []
        for file in files:
            with tempfile.TemporaryDirectory() as out:
                times.append(timed([str(otter), "run", "-a", str(zips[0]), "-o", out, str(file)], timeout=600)[0])
        return times, ""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--jobs", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--no-otter", action="store_true")
    parser.add_argument("--no-resume", action="store_true")
    args = parser.parse_args()
    rows = []

    def report(label, value, target=None, good=None):
        verdict = "" if good is None else ("  ok" if good else "  MISSED")
        rows.append(f"{label:<52} {value:>16}{f'   target {target}' if target else ''}{verdict}")
        print(rows[-1], flush=True)

    print(f"make bench: {args.count} submissions, device {args.device}, {args.jobs} jobs, {os.cpu_count()} cores")
    floor_before = import_floor()
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        scratch = Path(scratch)
        folder = scratch / "class"
        folder.mkdir()
        for name, text in synthetic_class(clean_solution(), args.count).items():
            (folder / name).write_text(text)
        total, median, integrity, cpu, sides, load = bulk(folder, scratch / "out", args)
        floor_after = import_floor()
        floor = statistics.median(floor_before + floor_after)
        report("floor: python -c 'import torch', 3 runs before the bulk run",
               f"{statistics.median(floor_before):.2f} s")
        report("floor: 3 runs after it", f"{statistics.median(floor_after):.2f} s")
        report("floor: median of the 6", f"{floor:.2f} s")
        report(f"bulk: {args.count} submissions, wall time", f"{total:.1f} s")
        if integrity is not None:  # part of the wall time: the class step that compares every pair
            report("bulk: of which the integrity step (OUT/integrity.html)", f"{integrity:.2f} s", "<= 10 %",
                   integrity <= 0.1 * (total - integrity))
        report("bulk: seconds per submission (median of grading)", f"{median:.3f} s")
        report("bulk: wall time per submission", f"{total / args.count:.3f} s")
        report("bulk: wall time / floor", f"{total / floor:.1f} x", "<= 20 x", total / floor <= TARGETS["bulk_ratio"])
        report("bulk: wall time / floor, near the machine's limit", f"{total / floor:.1f} x", "<= 8 x",
               total / floor <= TARGETS["bulk_ratio_near_limit"])
        report("bulk: machine load (1-minute average) before / after", f"{load[0]:.1f} / {load[1]:.1f}")
        if cpu is not None:  # what the run cost the machine, whatever else ran beside it
            report("bulk: CPU seconds, the run and every process it started", f"{cpu:.1f} s")
            report("bulk: CPU seconds per submission", f"{cpu / args.count:.3f} s")
        # Each side's own count (results.json's extra_data.cpu): the judge's grading thread, the worker's processes
        # (its seal and loading included); the rest is the fork server, the sandbox's keepers and reaper, the
        # command line's class steps (feedback, integrity, LMS files) and the run's torch imports.
        report("bulk: CPU per submission, judge (its grading thread)", f"{1000 * sides['judge']:.0f} ms")
        report("bulk: CPU per submission, worker (seal, load, checks)", f"{1000 * sides['worker']:.0f} ms")
        if cpu is not None:
            rest = cpu / args.count - sum(sides.values())
            report("bulk: CPU per submission, everything else", f"{1000 * rest:.0f} ms")
        setup, seal, mode = sandbox_figures(scratch / "out")
        report(f"sandbox setup per submission (median), {mode} mode", f"{setup:.1f} ms", "<= 15 ms",
               setup <= TARGETS["sandbox_ms"])
        report("sandbox: sealing in the worker (median; ahead of time)", f"{seal:.1f} ms")

        # The student's own check, as the release runs it, on a solved file (every check runs to the end).
        student_check = [PYTHON, str(ROOT / "student_template" / "check.py"), "masking", "solutions/attention.py"]
        check = statistics.median(timed(student_check)[0] for _ in range(3))
        report("student check: python check.py masking (student_template)", f"{check:.2f} s")
        report("student check / floor", f"{check / floor:.2f} x", "<= 1.5 x", check / floor <= TARGETS["check_ratio"])

        # One file through the command line, a fresh `python -m grader grade FILE` each time (the sandbox's probe,
        # the fork server's start and the judge's first plans included): what grading a single student costs.
        one_file = statistics.median(timed(grade_command(ROOT / "solutions" / "attention.py", scratch / f"cli{run}",
                                                         args))[0] for run in range(3))
        report("one file: python -m grader grade FILE (median of 3)", f"{one_file:.2f} s")
        report("one file / floor", f"{one_file / floor:.2f} x", "<= 1.5 x", one_file / floor <= TARGETS["cli_ratio"])

        rss, pss = peak_memory([PYTHON, "-m", "grader", "grade", "solutions/attention.py", "--out",
                                str(scratch / "one"), "--device", args.device])
        report("one submission: peak memory, sum of PSS", f"{pss / 2**20:.0f} MB", "<= 700 MB",
               pss / 2**20 <= TARGETS["peak_mb"])
        report("one submission: peak memory, sum of RSS (shared pages counted per process)",
               f"{rss / 2**20:.0f} MB")

        for label, count in round_trips(scratch, args).items():
            report(f"round trips judge <-> worker: {label}", f"{count}", "<= 20" if label == "correct" else None,
                   count <= TARGETS["round_trips"] if label == "correct" else None)

        if not args.no_otter:
            sample = [folder / name for name in sorted(os.listdir(folder))[:3]]
            times, why = otter_runs(sample, args)
            if times:
                kit_one = statistics.median(timed(grade_command(path, scratch / "k1", args))[0] for path in sample)
                otter_one = statistics.median(times)
                report("otter run: seconds per submission (median of 3)", f"{otter_one:.1f} s")
                report("kit grader, same 3 files one by one (fresh CLI each)", f"{kit_one:.1f} s")
                report("otter run / kit grader, one file from the command line", f"{otter_one / kit_one:.1f} x")
                report("otter run / kit grader, per submission in bulk", f"{otter_one / (total / args.count):.0f} x")
            else:
                report("otter run", "n/a", why)

        if not args.no_resume:
            before, resumed, seconds, same = killed_and_resumed(folder, scratch / "killed",
                                                                scratch / "out" / "grades.csv", args)
            report("kill -9 midway: results on disk when killed", f"{before}/{args.count}")
            report("rerun after the kill: wall time", f"{seconds:.1f} s")
            report(f"rerun: {resumed}", "")
            report("grades.csv after kill + rerun == uninterrupted", "identical" if same else "DIFFERENT",
                   "identical", same)
    print("\nsummary")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
