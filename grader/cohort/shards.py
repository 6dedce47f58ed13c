"""A class graded in slices (SHARD=i/N, a Slurm array, a Kubernetes Indexed Job) and merged back into one.

Every slice records in OUT/shard.json the whole class it was cut from: each submission's name with its
fingerprint (its bytes and the grading settings: bulk.fingerprint), so that `merge` joins slices of one
and the same class only, and otherwise says which slices are missing or stale and the exact command that
grades each again. A slice also keeps the code of its submissions as the integrity page reads it
(OUT/code.json), so that the merged class's integrity page compares the same code as an unsharded run's.
"""

import hashlib
import json
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from grader.cohort.bulk import fingerprint
from grader.judging import results_json as results_io
from grader.outfiles import write_atomic
from grader.results import SubmissionResult

MANIFEST = "shard.json"
CODE = "code.json"
Submission = TypeVar("Submission", bound=tuple)  # (name, path...) of one student


def parse_shard(text: str | None) -> tuple[int, int]:
    """'2/4' -> (2, 4): the second of four slices, counted from 1."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise ValueError(f"SHARD must look like i/N with 1 <= i <= N (e.g. 2/4), not {text!r}")
    return int(match[1]), int(match[2])


def shard_from_environment(env: Mapping[str, str]) -> tuple[tuple[int, int], str] | None:
    """((i, N), where) from a scheduler's environment when SHARD is not given, else None.

    The number of slices is always given explicitly, as SHARD_COUNT: a scheduler's own counts cannot be
    trusted for it, since a rerun of one failed Slurm task (`sbatch --array=2`) is an array of one task.
    Slurm array jobs: task ID i is slice i of SHARD_COUNT (--array=1-N; --array=2,5 reruns two slices).
    Kubernetes Indexed Jobs: JOB_COMPLETION_INDEX (0-based) + 1 of SHARD_COUNT (the Job's `completions`).
    ValueError when the variables are there but do not make a slice; for Slurm the check reads only what
    every task of the array shares (its MIN and MAX), so a bad array is refused by all its tasks alike,
    before any grades."""
    if env.get("SLURM_ARRAY_TASK_ID", "").strip():
        task = _integer(env, "SLURM_ARRAY_TASK_ID")
        if not env.get("SHARD_COUNT", "").strip():
            raise ValueError("SLURM_ARRAY_TASK_ID is set but SHARD_COUNT is not: Slurm does not tell a task how many "
                             "slices the class has (a rerun with --array=2 is an array of one task), so export "
                             "SHARD_COUNT=N, as cluster/grade.sbatch does, or give SHARD=i/N")
        count = _integer(env, "SHARD_COUNT")
        low = _integer(env, "SLURM_ARRAY_TASK_MIN") if env.get("SLURM_ARRAY_TASK_MIN", "").strip() else task
        high = _integer(env, "SLURM_ARRAY_TASK_MAX") if env.get("SLURM_ARRAY_TASK_MAX", "").strip() else task
        if count < 1 or low < 1 or high > count:
            raise ValueError(f"the Slurm array's task IDs {low}-{high} are not slice numbers of SHARD_COUNT={count}: "
                             f"task i grades slice i, so use --array=1-{max(count, 1)} (or a subset, e.g. --array=2 "
                             "to grade slice 2 again) with the same SHARD_COUNT")
        return (task, count), f"Slurm array task {task}, SHARD_COUNT={count}"
    if env.get("JOB_COMPLETION_INDEX", "").strip():
        if not env.get("SHARD_COUNT", "").strip():
            raise ValueError("JOB_COMPLETION_INDEX is set but SHARD_COUNT is not: set it to the Job's "
                             "`completions` in the manifest (cluster/grade-job.yaml)")
        index, count = _integer(env, "JOB_COMPLETION_INDEX"), _integer(env, "SHARD_COUNT")
        if not 0 <= index < count:
            raise ValueError(f"JOB_COMPLETION_INDEX={index} is outside 0..{count - 1} (SHARD_COUNT={count})")
        return (index + 1, count), f"Kubernetes completion index {index} of {count}"
    return None


def _integer(env, key):
    try:
        return int(env[key].strip())
    except ValueError:
        raise ValueError(f"{key}={env[key]!r} is not a whole number") from None


def shard(submissions: Sequence[Submission], index: int, count: int) -> list[Submission]:
    """The index-th of `count` slices, by name order, dealt round-robin so slices are balanced."""
    ordered = sorted(submissions, key=lambda item: item[0])
    return ordered[index - 1::count]


def _digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def write_slice(out: str | Path, index: int, count: int, submissions: Sequence[tuple[str, Path | None]],
                settings: dict[str, Any], source: object, code: Mapping[str, str]) -> None:
    """OUT/code.json and OUT/shard.json of slice index/count, before it grades. `submissions` are the
    (name, path) of the WHOLE class, `code` {name: code} of this slice's (integrity.class_code), `source`
    what the class was graded from (for the rerun commands). The class's digest covers every name, each
    file's content and the grading settings; `prints` are what each result's fingerprint must be."""
    names = [name for name, _ in shard(submissions, index, count)]
    files = {name: fingerprint(path, None) for name, path in submissions}  # the content alone
    prints = {name: fingerprint(path, settings) for name, path in submissions}
    cut = {"digest": _digest([files, prints]), "settings": _digest(settings), "files": files, "prints": prints,
           "source": str(source), "cut": time.strftime("%Y-%m-%d %H:%M:%S"), "cut_ns": time.time_ns()}
    # ASCII JSON: code read from a notebook may hold lone surrogates, which UTF-8 cannot write but \u escapes keep
    write_atomic(Path(out) / CODE, json.dumps({"class": cut["digest"], "code": code}) + "\n")
    write_atomic(Path(out) / MANIFEST, json.dumps({"shard": index, "of": count, "submissions": names,
                                                   "class": cut}, indent=1) + "\n")


def _result_name(name):
    return isinstance(name, str) and name and Path(name).name == name and not name.startswith(".") and "\0" not in name


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """{"shard": i, "of": N, "submissions": [names], "class": {...}} of a slice's OUT folder; ValueError saying
    what is wrong."""
    manifest = Path(folder) / MANIFEST
    if not manifest.is_file():
        raise ValueError(f"{folder} has no {MANIFEST}: is it the OUT folder of a `make grade SHARD=i/N` run?")
    try:
        info = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{manifest} cannot be read ({error}): grade that slice again") from None
    names = info.get("submissions") if isinstance(info, dict) else None
    if not (isinstance(info, dict) and all(type(info.get(key)) is int for key in ("shard", "of"))
            and 1 <= info["shard"] <= info["of"] and isinstance(names, list)
            and all(map(_result_name, names))):  # a results file's name, never a path
        raise ValueError(f"{manifest} is not a shard manifest of this grader (it needs \"shard\": i, \"of\": N and "
                         "the submissions' names): grade that slice again")
    cut = info.get("class")
    if not (isinstance(cut, dict) and all(isinstance(cut.get(key), str)
                                          for key in ("digest", "settings", "source", "cut"))
            and type(cut.get("cut_ns")) is int
            and all(isinstance(cut.get(key), dict) and all(_result_name(name) and isinstance(value, str)
                                                           for name, value in cut[key].items())
                    for key in ("files", "prints")) and set(cut["files"]) == set(cut["prints"])):
        raise ValueError(f"{manifest} does not say which class slice {info['shard']}/{info['of']} was cut from "
                         f"(an older kit wrote it): grade it again, make grade SUBMISSION=<the class> "
                         f"SHARD={info['shard']}/{info['of']} OUT={folder}")
    return info


def read_shards(folders: Sequence[str | Path]) -> tuple[dict[str, tuple[Path, SubmissionResult]], dict[str, str],
                                                        list[str], list[str]]:
    """Read the slices' OUT folders as one class: (results {name: (path, result)}, code {name: code},
    problems, reruns). Slices are joined only when they were all cut from the same class, with the same
    settings, into the same N, and every one of their results is of that class's file. Otherwise `problems`
    says what is wrong, one line each, and `reruns` the commands that grade the missing or stale slices
    again (the newest slice's class is taken as the class; a rerun resumes, regrading only changed files).
    ValueError for folders that are not slices at all."""
    slices, problems = [], []
    for folder in map(Path, folders):
        if not folder.exists():
            problems.append(f"{folder} does not exist (a slice that never ran?)")
            continue
        slices.append((folder, read_manifest(folder)))
    if not slices:
        raise ValueError(f"none of {', '.join(map(str, folders))} is the OUT folder of a `make grade SHARD=i/N` run")
    newest_folder, newest = max(slices, key=lambda item: item[1]["class"]["cut_ns"])
    count, cut = newest["of"], newest["class"]
    ours: dict[int, Any] = {}  # slice index -> folder
    stale: dict[int, Any] = {}
    for folder, info in slices:
        other = info["class"]
        if info["of"] == count and other["digest"] == cut["digest"]:
            if info["shard"] in ours:
                raise ValueError(f"slice {info['shard']}/{count} is given twice ({ours[info['shard']]} and {folder})")
            ours[info["shard"]] = folder
            continue
        if info["of"] == count:
            stale.setdefault(info["shard"], folder)
        problems.append(f"slice {info['shard']}/{info['of']} ({folder}, cut {other['cut']}) is not of the class the "
                        f"newest slice was cut from ({newest['shard']}/{count}, cut {cut['cut']}): "
                        + _difference(info, newest))
    results, code = {}, {}
    names = sorted(cut["files"])
    for index, folder in sorted(ours.items()):
        info = dict(slices)[folder]
        if info["submissions"] != names[index - 1::count]:
            problems.append(f"{folder / MANIFEST} does not list the submissions of slice {index}/{count}")
            stale[index] = folder
            continue
        kept = _read_code(folder, cut["digest"])
        if kept is None:
            problems.append(f"{folder / CODE} is missing or not of this slice (was it interrupted?)")
            stale[index] = folder
            continue
        absent, other = [], []
        for name in info["submissions"]:
            path = results_io_path(folder, name)
            if not path.is_file():
                absent.append(name)
                continue
            try:
                result = results_io.read_results_json(path)
            except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
                raise ValueError(f"{path} is not a results file of this grader ({type(error).__name__}: "
                                 f"{str(error)[:120]}): remove it and grade slice {index}/{count} again") from None
            if result.fingerprint != cut["prints"][name]:
                other.append(name)
                continue
            results[name] = (path, result)
            if name in kept:
                code[name] = kept[name]
        if absent:
            problems.append(f"slice {index}/{count} ({folder}) has no results for {_some(absent)} "
                            "(was it interrupted?)")
        if other:
            problems.append(f"slice {index}/{count} ({folder}): the results of {_some(other)} are not of this version "
                            "of their file or settings (an interrupted slice, or a grader failure to grade again)")
        if absent or other:
            stale[index] = folder
    missing = [index for index in range(1, count + 1) if index not in ours and index not in stale]
    if missing:
        problems.append("missing slice(s) " + ", ".join(f"{index}/{count}" for index in missing))
    rerun = sorted(set(missing) | set(stale))
    return results, code, problems, _reruns(rerun, count, cut["source"], ours, stale, _knobs_of(newest_folder))


def _knobs_of(folder):
    """The make knobs the newest slice was graded with (its class.json `graded_with`): a rerun without them grades
    with the defaults, and the slices would differ again (a blind review followed such advice back and forth)."""
    from grader.cohort.class_record import read_record

    done = read_record(folder).get("graded_with") or {}
    knobs = [f"{knob}={done[key]:g}" for key, knob in (("time_limit", "TIME_LIMIT"),
                                                       ("submission_time_limit", "SUBMISSION_TIME_LIMIT"))
             if isinstance(done.get(key), (int, float))]
    memory = done.get("memory_limit")
    if isinstance(memory, (int, float)):
        memory = int(memory)
        knobs.append(f"MEMORY_LIMIT={memory >> 30}GiB" if memory % (1 << 30) == 0 else
                     f"MEMORY_LIMIT={memory >> 20}MiB" if memory % (1 << 20) == 0 else f"MEMORY_LIMIT={memory}")
    knobs += [f"{knob}={done[key]}" for key, knob, default in (("engine", "ENGINE", "kit"), ("device", "DEVICE", "cpu"))
              if done.get(key) not in (None, default) and re.fullmatch(r"[\w:.-]+", str(done[key]))]
    return " ".join(knobs)


def results_io_path(folder: str | Path, name: str) -> Path:
    return Path(folder) / "results" / f"{name}.json"


def _read_code(folder, digest):
    try:
        kept = json.loads((Path(folder) / CODE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not (isinstance(kept, dict) and kept.get("class") == digest and isinstance(kept.get("code"), dict)
            and all(isinstance(text, str) for text in kept["code"].values())):
        return None
    return kept["code"]


def _some(names, shown=5):
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _difference(info, newest):
    """What tells a slice's class from the newest slice's, in words."""
    if info["of"] != newest["of"]:
        return f"it is one of {info['of']} slices, the newest of {newest['of']}"
    old, new = info["class"]["files"], newest["class"]["files"]
    changes = (("changed", [name for name in sorted(set(old) & set(new)) if old[name] != new[name]]),
               ("only in the newest", sorted(set(new) - set(old))),
               ("gone from the newest", sorted(set(old) - set(new))))
    said = [f"submissions {what}: {_some(names)}" for what, names in changes if names]
    if info["class"]["settings"] != newest["class"]["settings"]:
        said.append("graded with other settings (another version of the kit or its tests, ENGINE, limits "
                    "or PUBLIC_ONLY)")
    return "; ".join(said) or "another version of the class"


def _reruns(indexes, count, source, ours, stale, knobs=""):
    """The commands that grade exactly the slices `indexes` again, into their folders (with `knobs`, the
    settings the class was graded with)."""
    if not indexes:
        return []
    lines = [f"make grade SUBMISSION={_quoted(source)} SHARD={index}/{count} "
             f"OUT={_quoted(_folder_for(index, ours, stale))}" + (f" {knobs}" if knobs else "") for index in indexes]
    lines.append(f"(on Slurm: SHARD_COUNT={count} sbatch --export=ALL,CLASS={_quoted(source)} --array="
                 f"{','.join(map(str, indexes))} cluster/grade.sbatch; with ENGINE, limits and PUBLIC_ONLY as for the "
                 "other slices; then merge again)")
    return lines


def _folder_for(index, ours, stale):
    """The folder slice `index` goes to: the stale one given, else one named like the others (out-1 -> out-3)."""
    if index in stale:
        return str(stale[index])
    for known, folder in sorted(ours.items()):
        if folder.name.endswith(str(known)):
            return str(folder.with_name(folder.name[:-len(str(known))] + str(index)))
    return f"<a folder for slice {index}>"


def _quoted(text):
    return text if re.fullmatch(r"[\w./:=+,-]+", text) else "'" + text.replace("'", "'\\''") + "'"
