"""Grade a whole class: resumable, shardable, with progress.

Each submission's results.json is written atomically the moment it is graded,
with a fingerprint of what was graded and with what (the file's bytes, the
grader and tests' sources, the options). A rerun after a crash or a SIGKILL
reuses every result whose fingerprint still matches and grades the rest, so
the class files (grades.csv...) come out the same as from an uninterrupted run.
"""

import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader.judging import results_json as results_io
from grader.outfiles import write_atomic
from grader.classes.judges import graded_in_judges, judge_count
from grader.classes.progress import Progress
from grader.paths import ROOT

FINGERPRINTED = ("grader/*.py", "tests/public/*.py", "tests/hidden/*.py")


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
    with open(path or os.devnull, "rb") as stream:  # in blocks: a submission may be huge (it is refused later, not here)
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:32]


def parse_shard(text):
    """'2/4' -> (2, 4): the second of four slices, counted from 1."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise ValueError(f"SHARD must look like i/N with 1 <= i <= N (e.g. 2/4), not {text!r}")
    return int(match[1]), int(match[2])


def shard(submissions, index, count):
    """The index-th of `count` slices, by name order, dealt round-robin so slices are balanced."""
    ordered = sorted(submissions, key=lambda item: item[0])
    return ordered[index - 1::count]


def result_path(out, name):
    return Path(out) / "results" / f"{name}.json"


def reusable(out, name, expected):
    """The earlier result for `name` when it was graded from the same bytes with the same settings."""
    path = result_path(out, name)
    try:
        earlier = results_io.read_results_json(path)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing, or from an older format: grade again
    return earlier if earlier.fingerprint == expected else None


def grade_class(submissions, tests, options, out, maxima, grade, settings, jobs=2, stream=None, judges=None):
    """Grade (name, path) pairs into out/results/, reusing unchanged results; return all results.

    `jobs` submissions are graded at a time, by `judges` judge processes (default: see judges.judge_count)."""
    prints = {name: fingerprint(path, settings) for name, path in submissions}
    done = {}
    for name, _ in submissions:
        earlier = reusable(out, name, prints[name])
        if earlier is not None:
            done[name] = earlier
    todo = [(name, path) for name, path in submissions if name not in done]
    progress = Progress(len(submissions), skipped=len(done), stream=stream)
    total = sum(maxima.values())

    def one(item):
        name, path = item
        result = grade(path, name, tests, options)
        result.fingerprint = prints[name]
        result.text = results_io.results_text(result, maxima)
        write_atomic(result_path(out, name), result.text)
        return result

    def record(result):
        done[result.name] = result
        limits = sum(test.limit is not None for test in result.tests)
        progress.advance(result.name, result.score, total, result.seconds,
                         note=f"{limits} test(s) hit a limit or crash" if limits else "")

    count = judge_count(jobs, len(todo)) if judges is None else judges
    if count > 1:
        threads = -(-jobs // count)
        for name, text in graded_in_judges(todo, one, count, threads):
            record(results_io.parse_results_text(text, name))
        todo = [item for item in todo if item[0] not in done]  # what a judge could not deliver
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for result in pool.map(one, todo):
            record(result)
    progress.finish()
    graded = [done[name] for name, _ in submissions]
    # Without root, student code ran as this user and might have tampered with earlier results
    # (workers cannot write files, but can truncate them): put back what the judge wrote or read.
    for result in graded:
        path = result_path(out, result.name)
        if not path.is_file() or path.read_text(encoding="utf-8", errors="replace") != result.text:
            write_atomic(path, result.text)
    return graded


def write_manifest(out, index, count, names):
    """out/shard.json: which slice this folder holds, so that `merge` can tell when one is missing."""
    write_atomic(Path(out) / "shard.json",
                            json.dumps({"shard": index, "of": count, "submissions": sorted(names)}, indent=1) + "\n")


def read_shards(folders):
    """All results of the shard folders, checked complete: every slice present, every listed result there."""
    results, seen, problems, count = {}, set(), [], None
    for folder in map(Path, folders):
        manifest = folder / "shard.json"
        if not manifest.is_file():
            raise ValueError(f"{folder} has no shard.json: is it the OUT folder of a `make grade SHARD=i/N` run?")
        info = json.loads(manifest.read_text())
        if count not in (None, info["of"]):
            raise ValueError(f"{folder} is a slice of {info['of']}, the others of {count}: mixed runs?")
        count = info["of"]
        if info["shard"] in seen:
            raise ValueError(f"slice {info['shard']}/{count} is given twice ({folder})")
        seen.add(info["shard"])
        for name in info["submissions"]:
            path = result_path(folder, name)
            if not path.is_file():
                problems.append(f"{name}: no results in {folder} (was that shard interrupted? rerun it)")
                continue
            if name in results:
                raise ValueError(f"{name} was graded in two shards; shards must come from one class")
            results[name] = (path, results_io.read_results_json(path))
    missing = sorted(set(range(1, (count or 0) + 1)) - seen)
    if missing:
        problems.append("missing slice(s) " + ", ".join(f"{i}/{count}" for i in missing))
    return results, problems
