"""Command line: `python -m grader grade PATH`, `merge`, `generate` and `publish`.

Exit status 0 whenever grading completed, whatever the scores; 2 for bad usage
(one line saying which argument and why); 1 when the run stopped early because
OUT filled up, could not be written or is in use by another run, or when the
grader itself failed on a file (its zero is no verdict): every result written so
far is kept, and the same command resumes where it stopped. Stopped by SIGINT
(Ctrl-C), SIGTERM or SIGHUP, a run records nothing that was under way, says in one
line how far it got, and exits 128 + the signal's number (`grader.stopping`).
"""

import argparse
import contextlib
import dataclasses
import gc
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from grader import stopping
from grader.cohort import class_record, lms_names, tables
from grader.cohort.bulk import grade_class, suite_digest
from grader.cohort.overrides import OverrideError, closest, read_overrides, resolve, source_digest
from grader.cohort.shards import MANIFEST, parse_shard, read_shards, shard, shard_from_environment, write_slice
from grader.cohort.submissions import collect
from grader.errors import UsageError
from grader.feedback import page as feedback
from grader.feedback import report
from grader.judging import results_json as results_io
from grader.check.suite import discover, max_points
from grader.cohort.bulk import (FORMER, OutBusy, foreign_out, holding, internal_error_result,
                                set_aside, set_aside_former)
from grader.outfiles import OutputError, write_atomic
from grader.paths import SAMPLE_CLASS
from grader.sandbox import servers
from grader.sandbox.limits import DEFAULTS, Limits, parse_size
from grader.sandbox.seal import SandboxError
from grader.text import clean, terminal

log = logging.getLogger(__name__)  # diagnostics; what a command is asked for is printed
DEFAULT_JOBS = 2 * (os.cpu_count() or 1)
# On a GPU each worker holds a CUDA context of its own, in the GPU's memory, which no limit caps per submission.
# The H200 run graded 100 submissions as fast with 8 at once as with 32 (docs/sandbox.md, "On a GPU"); more only
# brings a smaller GPU nearer to running out of memory.
CUDA_JOBS = 8


def default_jobs(device):
    """Submissions graded at once when --jobs is not given."""
    return min(DEFAULT_JOBS, CUDA_JOBS) if device.startswith("cuda") else DEFAULT_JOBS


def grading_engine(name):
    """The function that grades one file: the kit's sandboxed judge, or stock Otter for comparison."""
    if name == "otter":
        from grader.integrations.otter_engine import grade_with_otter

        return grade_with_otter
    from grader.judging.judge import grade_submission

    return grade_submission


def grade_command(args):
    try:
        # a scheduler's slice is read here, before anything is graded: every task of a bad array refuses alike
        slice_of_class = parse_shard(args.shard) if args.shard else scheduler_shard()
    except ValueError as error:
        raise UsageError(str(error)) from None
    collected = collect(args.path, args.zip_encoding)
    try:
        earlier = class_record.read_record(args.out)
        args.taken_over, args.collected = taken_over(earlier, collected), collected
        if not slice_of_class and (Path(args.path).is_dir() or len(collected.submissions) != 1 or collected.rejected):
            refuse_replacing_the_class(args.out, earlier, [name for name, _ in collected.submissions]
                                       + [name for name, _ in collected.rejected], args.path)
        check_class_run(args, collected)  # a roster or overrides that cannot apply cost seconds, not a graded class
        if args.engine == "kit" and collected.submissions:
            servers.start_early()  # the workers' fork server imports torch while this process does
        from grader.judging.judge import Options, zero_result  # imports torch: only the commands that grade pay for it

        tests = discover(kinds=("public",) if args.public_only else ("public", "hidden"))
        stopping.check()  # a stop that came during the imports above was kept for now (grader.stopping)
        maxima = max_points(tests)
        options = Options(args.device, Limits(args.time_limit, args.memory_limit, args.submission_time_limit))
        grade = grading_engine(args.engine)
        device_check(args.device)
        sandbox = sandbox_check(args)
        # What is loaded now (torch, the grader, the tests) lives as long as the run: kept out of the garbage
        # collector's full passes, which otherwise walk its 170,000 objects (5 % of the judges' time, measured),
        # and out of the pages those passes would touch in every forked judge.
        gc.freeze()
        if args.results:
            writable_folder(Path(args.results).parent, "--results")
            refuse_results_in_a_class(Path(args.results))
        for problem in collected.problems:
            log.info(terminal(problem))
        if not collected.submissions and not collected.rejected:
            raise UsageError(f"no .py or .ipynb submissions found in {args.path}")
        out = Path(args.out)
        started = time.monotonic()
        single = (len(collected.submissions) == 1 and not collected.rejected and not Path(args.path).is_dir()
                  and not args.shard)
        if not (single and args.results):  # this run writes into OUT: no other run may at the same time
            args.held.enter_context(hold_out(out))
        if single and not args.results and class_record.is_class_out(out):  # never mix a lone file into a class
            raise UsageError(f"{out} holds a graded class; grade this file into another OUT, or regrade a student "
                             f"of that class: make regrade STUDENT=<name> SUBMISSION={args.path} OUT={out}")
        if not single:
            refuse_mixed_slices(out, slice_of_class)
            finished_note(out, finish_pending(out, maxima, grading_follows=True))  # a regrade stopped midway
            set_aside_taken_over(out, args.taken_over)
        record = class_record.read_record(out) if not single else {}
        if not single:
            record = class_run_record(record, collected, args)
            collected.submissions = regraded_files(collected.submissions, record, args.keep_regrades)
        failed_here = False
        if single:
            name, path = collected.submissions[0]
            try:
                graded = [grade(path, name, tests, options)]
            except Exception as error:  # noqa: BLE001 - the grader's own failure: a zero that says so, and exit 1
                graded, failed_here = [internal_error_result(name, path, tests, error)], True
            where = Path(args.results) if args.results else out / "results.json"
            results_io.write_results_json(graded[0], maxima, where)
            feedback.write_page_beside(where)
        else:
            # Students whose only file could not be unpacked get a zero row with the reason, not silence.
            rejected = dict(collected.rejected)
            submissions = collected.submissions + [(name, None) for name in rejected]

            def grade_or_reject(path, name, tests, options):
                if path is None:
                    return zero_result(name, None, tests, rejected[name])
                return grade(path, name, tests, options)

            settings = grading_settings(args, options)
            if slice_of_class:  # the slice records the whole class it was cut from, and its code (cohort.shards)
                from grader.feedback.integrity import class_code

                index, count = slice_of_class
                whole, submissions = submissions, shard(submissions, index, count)
                write_slice(out, index, count, whole, settings, record["source"], class_code(submissions))
            jobs = args.jobs or default_jobs(args.device)
            if not slice_of_class:  # until its class files are written, no report or regrade reads OUT as a class
                class_record.mark_unfinished(out)
            own = own_limits(args, options, record, [name for name, _ in submissions])
            graded = grade_class(submissions, tests, options, out, maxima, grade_or_reject, settings, jobs=jobs,
                                 own=own)
            if slice_of_class:  # a shard's class files come from `merge`; its record carries the origins
                class_record.write_record(out, record)
            else:
                record = recorded_class(out, graded, maxima, record, sources=submissions)
            where = out
        print(tables.score_table(graded, maxima, record.get("final")))
        print(f"\n{len(graded)} submission(s) graded in {time.monotonic() - started:.1f}s; results in {where}")
        if sandbox is not None:
            print(sandbox.summary())
        return int(failed_here) if single else grader_failures(graded)
    finally:
        collected.cleanup()


def refuse_results_in_a_class(where):
    """RESULTS=... inside a graded class's results/ would replace a student's result with another file's."""
    folder = where.resolve().parent
    if folder.name == "results" and any((folder.parent / name).is_file() for name in (class_record.RECORD,
                                                                                    "grades.csv")):
        raise UsageError(f"{where} is in the results folder of the graded class {folder.parent}: it would replace a "
                         f"result of that class. Give RESULTS a path outside it, or regrade a student of the class: "
                         f"make regrade STUDENT=<name> SUBMISSION=<file> OUT={folder.parent}")


def grader_failures(graded):
    """0, or 1 with a line naming the submissions the grader itself failed on (a zero that is no verdict, and
    that the next run into the same OUT grades again: it carries no fingerprint)."""
    failed = [result.name for result in graded if not result.fingerprint]
    if not failed:
        return 0
    print(f"error: the grader failed on {len(failed)} submission(s), not their code: {terminal(', '.join(failed[:10]))}"
          f"{' ...' if len(failed) > 10 else ''}; they show 0 for now: run the same command again to grade them "
          "(the other results are kept)", file=sys.stderr)
    return 1


def stopped_message(stop, args):
    """One line for a run stopped by a signal: how far it got, and that the same command resumes."""
    done = (f"{stop.graded} of {stop.total} submission(s) are graded and saved in {terminal(args.out)}; "
            if stop.graded is not None else "")
    if args.command == "merge":  # its results may be copied in already: OUT is marked unfinished until rerun
        return (f"stopped by {stop}: the merge into {terminal(args.out)} did not finish; no report or regrade reads "
                "it until the same merge command has run again")
    again = "the same command grades the rest" if args.command == "grade" else "run the same command again"
    return (f"stopped by {stop}: {done}nothing under way was recorded; {again} "
            "(every result already saved is reused)")


def merge_command(args):
    """Combine the OUT folders of `grade --shard i/N` runs into one class: results, grades.csv, LMS files."""
    try:
        found, code, problems, reruns = read_shards(args.shards)
    except (ValueError, OSError) as error:
        raise UsageError(str(error)) from None
    for problem in problems:
        print(f"error: {terminal(problem)}", file=sys.stderr)
    if problems:  # nothing is written: a class of mixed versions or with a slice missing would be wrong
        if reruns:
            lines = "\n".join(f"    {terminal(line)}" for line in reruns)
            print(f"grade these slices again, then merge again:\n{lines}", file=sys.stderr)
        return 1
    out = Path(args.out)
    if (out / MANIFEST).is_file():  # one of the slices (make's OUT=out beside SHARDS="out out-2"), or another's
        raise UsageError(f"{out} is the OUT of a slice (its {MANIFEST}): merge into an OUT of its own, e.g. "
                         f"make merge SHARDS=\"{' '.join(map(str, args.shards))}\" OUT=<class>; nothing was written")
    args.held.enter_context(hold_out(out))
    finished_note(out, finish_pending(out))  # a regrade stopped in this OUT: its class is complete first
    regrades = {name: path for name, path in (class_record.read_record(out).get("regrades") or {}).items()
                if name in found}
    if regrades:  # the slices hold the verdicts of the class's own files: merged, they would undo the regrades
        listed = ", ".join(f"{name} (from {path})" for name, path in list(regrades.items())[:5])
        raise UsageError(f"{out} holds {len(regrades)} regrade(s) from another file than the class's: {listed}. "
                         "Merging the slices again would put back the slices' verdicts in silence. Merge into a new "
                         "OUT, then regrade those students there (make regrade STUDENT=<name> SUBMISSION=<file> "
                         "OUT=<new>); nothing was written")
    limits = {name: own for name, own in (class_record.read_record(out).get("regrade_limits") or {}).items()
              if name in found}
    if limits:  # graded with their own limits by a regrade: the slices' verdicts are the class's limits'
        listed = ", ".join(f"{name} ({limits_said(own)})" for name, own in list(limits.items())[:5])
        raise UsageError(f"{out} holds {len(limits)} student(s) a regrade gave limits of their own: {listed}. Merging "
                         "the slices again would put back verdicts graded with the class's limits. Merge into a new "
                         "OUT, then regrade those students there with their limits (make regrade STUDENT=<name> "
                         "TIME_LIMIT=... OUT=<new>); nothing was written")
    others = sorted(path.stem for path in (out / "results").glob("*.json") if path.stem not in found)
    if others:  # the report, the feedback pages and the integrity page read OUT/results: they would show them
        raise UsageError(f"{out / 'results'} holds results of submissions that are not in this class "
                         f"({', '.join(others[:5])}{' ...' if len(others) > 5 else ''}), left by an earlier run: "
                         "merge into a new OUT, or remove that folder first")
    class_record.mark_unfinished(out, "merge")  # until the class files are written: results are part old, part new
    for name, (path, _) in found.items():
        target = out / "results" / f"{name}.json"
        if path.resolve() != target.resolve():
            write_atomic(target, path.read_text(encoding="utf-8"))
    graded = [result for _, result in found.values()]
    maxima = max_points(discover())
    stopping.check()  # a stop that came during the imports above was kept for now (grader.stopping)
    record = class_record.read_record(out)
    slices = [class_record.read_record(folder) for folder in args.shards]  # one class: its source and LMS origins
    record["source"] = next((kept["source"] for kept in slices if kept.get("source")), record.get("source"))
    record["graded_with"] = next((kept["graded_with"] for kept in slices if kept.get("graded_with")),
                                 record.get("graded_with"))
    record["origins"] = {name: origin for kept in slices for name, origin in (kept.get("origins") or {}).items()}
    record["override_files"] = {name: digest for kept in slices
                                for name, digest in (kept.get("override_files") or {}).items()}
    for key in ("class_files", "labels"):  # each slice recorded the whole class it was cut from (one class: merge
        record[key] = {name: value for kept in slices for name, value in (kept.get(key) or {}).items()}  # checked)
    record = with_roster_and_overrides(record, args)
    record = with_the_slices_inputs(record, dict(zip(args.shards, slices)), args)
    check_class_inputs(record, [result.name for result in graded])
    record = recorded_class(out, graded, maxima, record, sources=code)  # the slices' code: the integrity page's
    print(tables.score_table(graded, maxima, record.get("final")))
    print(f"\nmerged {len(args.shards)} shard(s), {len(graded)} submission(s), into {out}")
    return 0


MERGE_INPUTS = {"roster": ("rosters", "--roster", "ROSTER"), "overrides": ("overrides", "--overrides", "OVERRIDES")}


def with_the_slices_inputs(record, slices, args):
    """The roster and overrides of a merged class: those the slices were graded with (each slice's class.json
    records them) unless the merge is given others. Given ones that differ from the slices' are used, and
    said; without any, what every slice recorded is applied, with a note; slices that recorded different
    ones are refused (UsageError naming the slices), since either choice could be the wrong gradebook."""
    for key, (plural, option, knob) in MERGE_INPUTS.items():
        given = getattr(args, key, None)
        kinds = {}  # the slices' recorded value (as JSON) -> the slices that recorded it
        for folder, kept in slices.items():
            kinds.setdefault(_recorded(kept, key), []).append(str(folder))
        if given is not None:
            others = [text for text in kinds if text != _recorded(record, key)]
            if others:
                log.info(f"merge: {option} is applied instead of the {key} the slices were graded with "
                         f"({'; '.join(_described(key, text) for text in others)})")
            continue
        if len(kinds) > 1:
            listing = "; ".join(f"{', '.join(map(terminal, folders))}: {_described(key, text)}"
                                for text, folders in kinds.items())
            raise UsageError(f"the slices were graded with different {plural} ({listing}): give the {key} the "
                             f"merged class is to have, make merge ... {knob}=<file> ({option} <file>), or grade "
                             f"the slices again with the same {knob}")
        text = next(iter(kinds), "null")
        if text != "null":
            record[key] = json.loads(text)
            log.info(f"merge: applying the {key} every slice was graded with ({_described(key, text)}, recorded "
                     f"in each slice's class.json); {knob}=<file> ({option}) gives another")
    return record


def _recorded(record, key):
    """A slice's roster or overrides as JSON text ("null" for none), to compare slices by."""
    value = record.get(key) or None
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _described(key, text):
    value = json.loads(text)
    if not value:
        return f"no {key}"
    if key == "roster":
        return f"roster {value.get('file')} ({len(value.get('text', '').splitlines())} lines)"
    files = sorted({str(item.get("where", "")).split(", line")[0] for item in value} - {""})
    return f"{len(value)} override(s)" + (f" from {', '.join(files)}" if files else "")


def write_class_files(out, graded, maxima, record, sources=None):
    """Everything written once per class, after all its submissions are graded: grades.csv, the LMS files
    and class.json (final scores: overrides applied), the feedback pages, the integrity page (code evidence
    only when `sources`, the class's (name, path) list or its slices' {name: code}, is given), the report.
    Returns the record."""
    out = Path(out)
    notes, roster, refused = [], None, None
    former = set_aside_former(out, [result.name for result in graded])
    if former:  # every class file below describes exactly the class graded now
        notes.append(f"{len(former)} submission(s) no longer in this class: {', '.join(former[:10])}"
                     f"{' ...' if len(former) > 10 else ''}; their results and feedback pages are moved to "
                     f"{out / 'results' / 'former'} and {out / 'feedback' / 'former'}, out of grades.csv, the "
                     "report, the integrity page and the cohort figures")
    record.pop("students", None)
    record.pop("unmatched", None)
    if record.get("roster"):  # Canvas and Moodle import files, one row per roster student
        from grader.integrations import lms

        try:
            roster = lms.read_roster_text(record["roster"]["text"], record["roster"]["file"])
            record["students"] = lms.roster_record(roster, graded, record.get("origins"))
            record["unmatched"] = lms.unmatched(roster, [result.name for result in graded], record.get("origins"))
        except lms.RosterError as error:
            refused = error
    try:  # (check_class_inputs found these before grading: a safety net, before anything is written)
        record["final"], override_notes = class_record.finals(graded, record)
    except OverrideError as error:
        raise UsageError(str(error)) from None
    notes += override_notes
    write_atomic(out / "grades.csv", tables.grades_csv(graded, record["final"]))
    if roster is not None:
        scores = {name: entry["total"] for name, entry in record["final"].items()}
        try:
            notes += lms.write_lms_files(out, graded, maxima, roster=roster, origins=record.get("origins"),
                                         scores=scores, no_verdict=[r.name for r in graded if not r.fingerprint])
        except lms.RosterError as error:
            refused = error
    if refused is not None:  # grades.csv and the rest are written; the LMS files of an earlier run are stale
        stale = [name for name in LMS_FILES if (out / name).is_file()]
        for name in stale:
            (out / name).unlink()
        refused = UsageError(f"{refused}. No LMS file was written" + (f" (the earlier {', '.join(stale)} removed: "
                             "they no longer agree with grades.csv)" if stale else "")
                             + f"; grades.csv, results/ and the report in {out} are written")
    record["notes"] = notes
    class_record.write_record(out, record)
    for note in notes:
        log.info(terminal(note))
    # OUT/feedback/<name>.html, from OUT/results (so merges get them too)
    feedback.write_pages(out)
    from grader.feedback import integrity  # instructor-only (copydetect): never shipped with the Gradescope engine

    print(integrity.write_integrity(out, sources))
    print(report.write_report(out))
    if refused is not None:
        raise refused
    return record


LMS_FILES = ("canvas_grades.csv", "moodle_grades.csv", "moodle_worksheet.csv")


def check_class_run(args, collected):
    """check_class_inputs for `grade` of a class, before torch is imported or anything is graded: the
    class's submissions with the roster and overrides given now, or else those OUT recorded."""
    single = (len(collected.submissions) == 1 and not collected.rejected and not Path(args.path).is_dir()
              and not args.shard)
    if single or not (collected.submissions or collected.rejected):
        return
    before = current_record(args.out)
    record = class_run_record(dict(before), collected, args)
    names = [name for name, _ in collected.submissions] + [name for name, _ in collected.rejected]
    found = check_class_inputs(record, names)
    regrades = record.get("regrades") or {}
    paths = {name: Path(regrades[name]) if regrades.get(name) and Path(regrades[name]).is_file() else path
             for name, path in collected.submissions}
    basis = before.get("override_files") or {}
    args.override_files, refused = {}, regrade_conflicts(record, collected.submissions, args.keep_regrades,
                                                         args.out, collected.where)
    for name in sorted(found):
        if paths.get(name):
            try:
                args.override_files[name] = kept_overrides(name, found[name], paths[name], basis, args, "grade")[1]
            except UsageError as error:
                refused.append(str(error))
    if refused:
        raise UsageError(" | ".join(refused))


def check_class_inputs(record, names):
    """Before any grading: the roster (new or recorded) must find the class's submissions (`names`) and
    every override a submission of the class (UsageError naming the rows and lines)."""
    from types import SimpleNamespace as Named  # what matching reads of a result, before there are results

    students = None
    if record.get("roster"):
        from grader.integrations import lms

        given = record["roster"]["file"]
        try:
            roster = lms.read_roster_text(record["roster"]["text"], given)
            lms.check_match(roster, names, record.get("origins"),
                            when=" (a roster given once is recorded in OUT/class.json for the later runs on that "
                                 "OUT: ROSTER=<file> replaces it, a new OUT starts without one)")
        except lms.RosterError as error:
            raise UsageError(str(error)) from None
        students = lms.roster_record(roster, [Named(name=name, score=0.0) for name in names], record.get("origins"))
    known = {"students": students or []}
    try:
        return resolve(class_record.overrides_of(record), names, class_record.aliases_of(known),
                       class_record.absent_of(known), class_record.members_of(known))[0]
    except OverrideError as error:
        raise UsageError(str(error)) from None


def grading_settings(args, options):
    """What a result's fingerprint depends on besides the file (see bulk.fingerprint); a result graded
    under weaker protections than this run's is graded again."""
    settings = {"suite": suite_digest(), "engine": args.engine, "options": vars(options),
                "public_only": args.public_only}
    if args.engine == "kit":
        from grader.sandbox import pool

        settings["sandbox"] = pool.current().protections().mode
    return settings


def device_check(name):
    """UsageError, before anything is graded, where DEVICE cannot hold a tensor here: a torch without CUDA (the
    kit's .venv holds the CPU build), a GPU index beyond those visible. Graded anyway, every correct submission
    scored 13.5 ("Torch not compiled with CUDA enabled", said as the student's own error), exit 0."""
    import torch

    try:
        device = torch.device(name)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("this torch sees no CUDA GPU" + (" (it is a CPU build)" if torch.version.cuda is None
                                                                else ""))
        if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
            raise RuntimeError(f"{torch.cuda.device_count()} CUDA GPU(s) are visible")
        # (no tensor is made on the GPU here: CUDA started in this process would not survive the judges' fork)
    except (RuntimeError, AssertionError) as error:
        raise UsageError(f"DEVICE={name} cannot be used here: {error}. Grade on the CPU (leave DEVICE out), or run "
                         "with a CUDA build of torch on a machine with that GPU (docs/sandbox.md, On a GPU)") from None


def sandbox_check(args):
    """Probe what the sandbox can have here and say so; with --require-sandbox, refuse to grade without
    all of it (exit 2). Workers are then sealed ahead of time in each judge (see sandbox.pool)."""
    if args.engine != "kit":
        return None
    from grader.sandbox import pool

    workers = pool.current()
    found = workers.protections()
    print(terminal(found.summary()), file=sys.stderr)
    if args.require_sandbox and not found.complete:
        raise UsageError(f"--require-sandbox: refusing to grade without {', '.join(found.missing())} "
                         f"({'; '.join(found.off) or 'unavailable here'}); see docs/sandbox.md for what each needs")
    workers.require_sandbox = args.require_sandbox
    workers.preseal(True)
    return found


def taken_over(record, collected):
    """{name: (what it was made from before, now)} for names another student's file holds now: two students whose
    names clean alike (`sean o brien/`, `sean o'brien/`) take one name in turn as one leaves or arrives. Names stay
    a function of the class as it is (slices, merges and regrades agree on them); the earlier student's record is
    what must not be graded over (class.json `labels`)."""
    before = record.get("labels") or {}
    now = collected.labels()
    return {name: (before[name], now[name]) for name in now if name in before and before[name] != now[name]}


def named_now(collected, label):
    """The name the submission made from `label` has in this run ("" when there is none)."""
    return next((name for name, made_from in collected.labels().items() if made_from == label), "")


def set_aside_taken_over(out, taken):
    """The records of the students whose names others hold now go to results/former (a blind review: the departed
    `sean o brien`'s result was overwritten by `sean o'brien`'s, lost, exit 0)."""
    if not taken:
        return
    set_aside(out, sorted(taken))
    for name, (then, now) in sorted(taken.items()):
        log.info(terminal(f"{name} is made from {now!r} now, another student's than {then!r}, graded under that "
                          f"name before: the earlier record is kept in {Path(out) / 'results' / FORMER}"))


def refuse_replacing_the_class(out, record, names, path):
    """A run that would move most of a graded class out of it (results/former) is refused before grading: a small
    folder of late files, or a forgotten SUBMISSION (the bundled samples), graded into the class's OUT emptied its
    LMS cells (an empty Moodle cell clears the grade on import), exit 0. Students who left are set aside as before
    while most of the class is still there."""
    graded = list(record.get("final") or {})
    leaving = sorted(set(graded) - set(names))
    if len(leaving) * 2 <= len(graded):
        return
    forgotten = Path(path).resolve() == SAMPLE_CLASS.resolve() and record.get("source") != str(SAMPLE_CLASS.resolve())
    raise UsageError(
        f"{out} holds a class of {len(graded)} graded from {record.get('source', 'elsewhere')}; {path} holds "
        f"{len(set(names) & set(graded))} of them, so {len(leaving)} ({', '.join(leaving[:5])}"
        f"{', ...' if len(leaving) > 5 else ''}) would leave the class and its LMS files"
        + (" (no SUBMISSION was given: make grade grades the bundled sample class)" if forgotten else "")
        + f". To grade that folder as a class of its own: another OUT. To add files to this class: put them beside "
        f"the class's own and grade it again. To regrade one student: make regrade STUDENT=<name> SUBMISSION=<file> "
        f"OUT={out}. To replace the class: make clean OUT={out} first")


def refuse_mixed_slices(out, slice_of_class):
    """A class OUT and a slice's OUT are never graded into as the other: a whole class graded over a slice kept its
    shard.json (merge took it for a slice again, then called it stale round and round), and two slices in one OUT
    would be merged as one."""
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8")) if (out / MANIFEST).is_file() else None
    except (OSError, ValueError):
        manifest = {}
    held = f"{manifest.get('shard', '?')}/{manifest.get('of', '?')}" if isinstance(manifest, dict) else "?"
    if manifest is not None and not slice_of_class:
        raise UsageError(f"{out} holds slice {held} of a class graded in parts (its {MANIFEST}): grade the whole "
                         f"class into another OUT, or this slice again with SHARD={held}, then make merge "
                         "(docs/cluster.md)")
    if manifest and held != "{}/{}".format(*slice_of_class):
        raise UsageError(f"{out} holds slice {held} of the class: grade slice {slice_of_class[0]}/{slice_of_class[1]} "
                         f"into an OUT of its own, then make merge (docs/cluster.md)")
    if manifest is None and slice_of_class and class_record.read_record(out).get("final"):
        raise UsageError(f"{out} holds a graded class: grade slice {slice_of_class[0]}/{slice_of_class[1]} into an OUT "
                         f"of its own, then make merge (docs/cluster.md)")


def scheduler_shard():
    """The slice of the class a Slurm array task or a Kubernetes Indexed Job pod grades, when SHARD is not given."""
    try:
        found = shard_from_environment(os.environ)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if found:
        (index, count), where = found
        log.info(f"grading slice {index}/{count} of the class ({where})")
        return index, count
    return None


def class_run_record(record, collected, args):
    """OUT/class.json for a class run: where the class came from, its LMS origins, what it was graded with,
    roster and overrides (a new --roster or --overrides replaces the recorded one; otherwise the recorded one
    still applies)."""
    record = dict(record)
    record.update(source=str(Path(args.path).resolve()), zip_encoding=args.zip_encoding,
                  origins={name: origin.as_dict() for name, origin in collected.origins.items()},
                  graded_with={key: getattr(args, key) for key in GRADED_WITH},
                  # each student's file in the class's source as graded now: a regrade from the source tells a
                  # file that changed since (a newer download saved over the class's) from the one graded
                  class_files={name: source_digest(path) for name, path in collected.submissions},
                  labels=collected.labels())
    return with_roster_and_overrides(record, args)


# What a class is graded with, recorded in class.json: a regrade grades the same way unless told otherwise.
GRADED_WITH = ("engine", "time_limit", "memory_limit", "submission_time_limit", "device", "public_only")
# Their defaults: `grade`'s options (add_grading_options), and a regrade's in an OUT of an older kit.
GRADING_DEFAULTS = {"engine": "kit", "time_limit": DEFAULTS.step_seconds, "memory_limit": DEFAULTS.memory_bytes,
                    "submission_time_limit": DEFAULTS.submission_seconds, "device": "cpu", "public_only": False}


def graded_as_the_class(args, record, name):
    """Give the options `regrade` was not given (None) the values `name` was graded with (class.json: the class's,
    or the limits an earlier regrade gave them; an OUT of an older kit: the defaults), and say where a given one
    differs from the class's: one student graded otherwise than the class, in silence, was a blind tester's finding
    (ENGINE=otter TIME_LIMIT=3, regraded with the kit at 10 s: 97 became 100). Limits of their own are recorded
    (class.json `regrade_limits`), so that grading the class again keeps them (a slow machine's accommodation,
    undone in silence by the next grade, was another's)."""
    recorded = record.get("graded_with") or {}
    mine = {**recorded, **(record.get("regrade_limits") or {}).get(name, {})}
    for key in GRADED_WITH:
        given = getattr(args, key)
        if given is None:
            setattr(args, key, mine.get(key, GRADING_DEFAULTS[key]))
        if key in recorded and getattr(args, key) != recorded[key]:
            kept = " and keeps it when the class is graded again" if key in OWN_LIMITS else ""
            log.info(f"this regrade uses {key.replace('_', '-')} {getattr(args, key)!r}; the class was graded with "
                     f"{recorded[key]!r} (class.json): only this student is graded so{kept}")
    own = {key: getattr(args, key) for key in OWN_LIMITS
           if getattr(args, key) != recorded.get(key, GRADING_DEFAULTS[key])}
    limits = record.setdefault("regrade_limits", {})
    if own:
        limits[name] = own
    else:
        limits.pop(name, None)


# The options a regrade may give one student for good (class.json `regrade_limits`), as the Limits they set.
OWN_LIMITS = {"time_limit": "step_seconds", "memory_limit": "memory_bytes",
              "submission_time_limit": "submission_seconds"}


def limits_said(limits):
    """`time-limit 30.0, memory-limit ...` of a student's own limits (class.json regrade_limits)."""
    return ", ".join(f"{key.replace('_', '-')} {value!r}" for key, value in limits.items())


def own_limits(args, options, record, names):
    """{name: (options, settings)} for the students of `names` an earlier regrade gave limits of their own
    (graded_as_the_class): they are graded, and their results reused, with those."""
    found = {}
    for name in names:
        limits = (record.get("regrade_limits") or {}).get(name)
        if not limits:
            continue
        theirs = dataclasses.replace(options, limits=dataclasses.replace(
            options.limits, **{OWN_LIMITS[key]: value for key, value in limits.items()}))
        found[name] = theirs, grading_settings(args, theirs)
        log.info(terminal(f"{name}: graded with {limits_said(limits)} (given by a regrade, class.json "
                          "regrade_limits), not the class's: regrade them with the class's limits to drop it"))
    return found


def with_roster_and_overrides(record, args):
    if getattr(args, "roster", None):
        from grader.integrations import lms

        record["roster"] = {"file": Path(args.roster).name, "text": lms.roster_text(args.roster)}
    if getattr(args, "overrides", None) is not None:
        record["overrides"] = [override.as_dict() for override in args.overrides]
    elif record.get("overrides") and not getattr(args, "overrides_said", False):  # an edited file is not read again
        args.overrides_said = True  # once a command (the record is made twice: checked first, then graded)
        files = sorted({str(item.get("where", "")).split(", line")[0] for item in record["overrides"]} - {""})
        log.info(f"{len(record['overrides'])} override(s) recorded in OUT/class.json apply"
                 + (f" (given as {', '.join(files)})" if files else "")
                 + "; to change them, give the edited file again: OVERRIDES=<file> replaces them all")
    if getattr(args, "override_files", None) is not None:  # set by check_class_run
        record["override_files"] = args.override_files
    return record


def class_file_digest(record, name):
    """The digest of the file the class's own source holds for `name` now (None: none, or the source is gone)."""
    try:
        collected = collect(record["source"], record.get("zip_encoding"))
    except (UsageError, KeyError, OSError):
        return None
    try:
        path = dict(collected.submissions).get(name)
        return source_digest(path) if path else None
    finally:
        collected.cleanup()


def changed_since_regrade(record, submissions):
    """[(name, the class's file, the other file)] of students regraded from another file whose class file is
    neither the one the class held then (class.json `regrade_basis`) nor the other file itself: a resubmission in
    a new download, which only the instructor can weigh against the file they regraded from."""
    regrades, basis = record.get("regrades") or {}, record.get("regrade_basis") or {}
    changed = []
    for name, path in submissions:
        other = regrades.get(name)
        if other and Path(other).is_file() and basis.get(name) and source_digest(path) not in (
                basis[name], source_digest(other)):
            changed.append((name, path, other))
    return changed


def regrade_conflicts(record, submissions, keep=False, out="<this OUT>", where=str):
    """Messages for changed_since_regrade, unless kept (--keep-regrades), and for regrade_files_moved (never kept:
    the bytes that were regraded are no longer there to keep). `where` shows a class file as the instructor knows
    it (a zip's member, never the temporary folder it was unpacked to: a blind review followed such a path)."""
    changed = [] if keep else [
        f"{name} was regraded from {other}, and the class now holds another file for them than then ({where(path)}). "
        f"To grade that file: make regrade STUDENT={name} OUT={out} (from the class's own file), then grade again; "
        f"to keep {Path(other).name}: grade again with KEEP_REGRADES=1 (--keep-regrades)"
        for name, path, other in changed_since_regrade(record, submissions)]
    return changed + [
        f"{name} was regraded from {other}, which {how} since: their grade would come from other bytes than the ones "
        f"regraded. To grade {'the file as it is now' if how == 'has changed' else 'a file of theirs'}: make regrade "
        f"STUDENT={name} SUBMISSION={other if how == 'has changed' else '<their file>'} OUT={out}; to grade the "
        f"class's own file for them again: make regrade STUDENT={name} OUT={out}; then grade again"
        for name, other, how in regrade_files_moved(record, [name for name, _ in submissions])]


def regrade_files_moved(record, names):
    """[(name, file, "has changed" or "is gone")] for the students of `names` regraded from another file whose
    bytes are not those regraded (class.json `regrade_files`; an OUT of an older kit recorded no digest, and only
    a file gone is seen). A download folder reused for the next student's fix is the usual way there."""
    regrades, digests = record.get("regrades") or {}, record.get("regrade_files") or {}
    moved = []
    for name in names:
        other = regrades.get(name)
        if not other:
            continue
        if not Path(other).is_file():
            moved.append((name, other, "is gone"))
        elif digests.get(name) and source_digest(other) != digests[name]:
            moved.append((name, other, "has changed"))
    return moved


def regraded_files(submissions, record, keep=False):
    """A student regraded from another file (`regrade STUDENT=... SUBMISSION=file`) stays graded from it; kept
    over a file the class holds now for them (`keep`), that file is recorded as the one the regrade stands over."""
    for name, path, _ in changed_since_regrade(record, submissions) if keep else ():
        record.setdefault("regrade_basis", {})[name] = source_digest(path)
    regrades = record.get("regrades") or {}
    kept = []
    for name, path in submissions:
        other = regrades.get(name)
        if other and Path(other).is_file():
            log.info(f"{terminal(name)}: graded from {terminal(other)} (a regrade, see class.json)")
            path = Path(other)
            try:  # the late mark is that upload's, not the class's file's (read from the download again above)
                upload = canvas_file_of(name, path, record)
            except UsageError:  # checked when regraded; a file renamed since says nothing of its upload
                upload = None
            if upload is not None:
                record["origins"][name].update(late=upload.late, original=upload.original)
        kept.append((name, path))
    return kept


DROP_OVERRIDES = ("to drop them, delete their line(s) from your overrides file and give it again "
                  "(OVERRIDES=overrides.csv: it replaces the overrides recorded in OUT/class.json)")


def kept_overrides(name, applying, path, basis, args, command="regrade"):
    """(line, digest): the line saying which overrides still apply to `name` ("" when none do) and the digest
    of `path`, the file now graded for them. An override was given for the work graded then (`basis`:
    {name: digest} from OUT/class.json): over other bytes (a file sent later, a new download) it may no
    longer be right, so that run is refused (exit 2, before grading) unless the instructor keeps them
    (--keep-overrides) or gives an overrides file without them. With no digest recorded (an OUT of an
    older kit), a regrade from SUBMISSION=... counts as other bytes."""
    if not applying:
        return "", None
    digest = source_digest(path)
    listing = "; ".join(override.describe() + (f" [{override.where}]" if override.where else "")
                        for override in applying)
    other = basis[name] != digest if basis.get(name) else command == "regrade" and bool(args.submission)
    then, now = (getattr(args, "taken_over", None) or {}).get(name, (None, None))
    if then is not None:  # not the student's new file: another student's, under the name theirs had
        moved = named_now(args.collected, then) if getattr(args, "collected", None) else ""
        raise UsageError(f"{name} has {len(applying)} override(s) given for {then!r}, and {name} is made from "
                         f"{now!r} now, another student's file (their names clean alike): {listing}. Give them for "
                         + (f"{then!r} under its name now, {moved}," if moved else f"{then!r} under its name now")
                         + " in your overrides file, and give it again (OVERRIDES=overrides.csv)")
    if other and not args.keep_overrides:
        raise UsageError(f"{name} has {len(applying)} override(s) that would also apply to another file than the "
                         f"one they were given for ({path}): {listing}. {DROP_OVERRIDES[0].upper()}"
                         f"{DROP_OVERRIDES[1:]}; to keep them, {command} with KEEP_OVERRIDES=1 (--keep-overrides)")
    return f"still overridden: {name}: {listing} ({DROP_OVERRIDES})", digest


def regrade_command(args):
    """Regrade one student of a graded class into its OUT: their results, feedback page and every class file.
    Overrides of that student still apply; over a file sent later only when kept (see kept_overrides)."""
    out = Path(args.out)
    if out.is_dir():  # a run grading into OUT now is "in use", not a run that was stopped
        args.held.enter_context(hold_out(out))
    refuse_unfinished(out, "the regrade")
    record = current_record(out)
    if not record.get("final") and (out / MANIFEST).is_file():  # one slice of a class graded in parts
        raise UsageError(f"{out} holds one slice of a class graded in parts (its shard.json): regrade in the OUT the "
                         f"slices were merged into (make merge SHARDS=\"...\" OUT=<class>, then make regrade "
                         f"STUDENT={args.student} OUT=<class>), docs/cluster.md")
    if not record.get("final"):
        raise UsageError(f"{out} holds no graded class (no class.json): grade the class first (make grade OUT={out})")
    names = list(record["final"])
    args.student = clean(args.student)  # NFC, as names are kept: macOS pastes `ü` as u and a combining mark
    wanted = args.student.casefold()
    aliases = {key.casefold(): value for key, value in class_record.aliases_of(record).items()}
    name = args.student if args.student in names else next(
        (known for known in names if known.casefold() == wanted), aliases.get(wanted))
    if name is None:
        shared = wanted in aliases  # a name or id of several roster students
        if not shared and wanted in {key.casefold() for key in class_record.absent_of(record)}:  # no file
            raise UsageError(f"{args.student!r} is on the roster but has no submission in {out}, so there is no grade "
                             f"to redo: add their file to the class ({record.get('source', 'its folder or download')}: "
                             f"a zip is a new download, or unpacked to a folder) and grade the class again "
                             f"({regrade_hint(out)}): only the new file is graded")
        former = out / "results" / FORMER
        if former.is_dir() and wanted in {path.stem.casefold() for path in former.glob("*.json")}:
            raise UsageError(f"{args.student!r} left the class: their file was not in its latest grade, and their last "
                             f"result is in {former}. Put their file back in the class and grade the class again "
                             f"({regrade_hint(out)})")
        raise UsageError(f"{args.student!r} " + ("names more than one student of the roster: give the submission's "
                         "name as in" if shared else "is not a submission of") + f" {out} (see its grades.csv"
                         + ("" if shared else f"; {closest(args.student, names, aliases)}") + ")")
    group = class_record.members_of(record).get(name, [])
    if group and args.student.casefold() != name.casefold():  # a member named: the regrade would change them all
        raise UsageError(f"{args.student!r} is one of the {len(group)} students graded from the group submission "
                         f"{name} ({', '.join(group[:6])}): a regrade grades the submission again, so it changes "
                         f"every member's grade. To regrade the group's, give STUDENT={name}; one member's own work "
                         "is theirs to submit apart (it then counts for them alone)")
    graded_as_the_class(args, record, name)
    with_roster_and_overrides(record, args)  # a new ROSTER or OVERRIDES is checked before grading
    overridden = check_class_inputs(record, names)
    basis = record.get("override_files") or {}
    if args.submission:  # a file sent later: asked about before torch is imported
        submitted = Path(args.submission)
        if not submitted.exists():
            raise UsageError(f"{submitted} does not exist: give the student's .py or .ipynb file")
        if not submitted.is_file() or submitted.suffix not in (".py", ".ipynb"):
            raise UsageError(f"{submitted} is not a .py or .ipynb file")
        canvas_upload = canvas_file_of(name, submitted, record)
        kept_overrides(name, overridden.get(name, []), submitted, basis, args)
    from grader.judging.judge import Options  # imports torch: after the checks above, which cost nothing

    device_check(args.device)
    sandbox_check(args)  # (OUT is held since the start: an OUT that is no folder holds no class, refused above)
    collected = None
    try:
        if args.submission:
            path = Path(args.submission)
            shown = str(path)
            if not path.is_file() or path.suffix not in (".py", ".ipynb"):
                raise UsageError(f"{path} is not a .py or .ipynb file")
            if canvas_upload is not None:  # its name says whether that upload was late, as the class's download did
                origin = record["origins"][name]
                origin.update(late=canvas_upload.late, original=canvas_upload.original)
            record.setdefault("regrades", {})[name] = str(path.resolve())
            record.setdefault("regrade_files", {})[name] = source_digest(path)  # a later grade checks it is the same
            own = class_file_digest(record, name)  # a later grade asks first if the class holds another file then
            record.setdefault("regrade_basis", {})[name] = own
        else:  # from the class's own file, as the docs say: an earlier regrade from another file ends here
            if not Path(record["source"]).exists():
                raise UsageError(f"the class was graded from {record['source']} (OUT/class.json), which is no longer "
                                 f"there: put it back, or give the student's file (make regrade STUDENT={name} "
                                 f"SUBMISSION=<file> OUT={out})")
            collected = collect(record["source"], record.get("zip_encoding"))
            found = dict(collected.submissions)
            if name not in found:
                raise UsageError(f"{name} is no longer in {record['source']}: give the file, SUBMISSION=...")
            path = found[name]
            shown = collected.where(path)
            digest, files = source_digest(path), record.setdefault("class_files", {})
            if files.get(name) and files[name] != digest:
                log.info(terminal(f"{name}'s file in {record['source']} has changed since the class was graded: this "
                                  "regrade grades the new one, while every other student is still graded from the "
                                  f"files of then (to grade every change: {regrade_hint(out)})"))
            files[name] = digest
            origins = record.setdefault("origins", {})  # the upload graded now says whether it was late, not the last
            if name in collected.origins:
                origins[name] = collected.origins[name].as_dict()
            else:
                origins.pop(name, None)
            other = (record.get("regrades") or {}).pop(name, None)
            (record.get("regrade_basis") or {}).pop(name, None)
            (record.get("regrade_files") or {}).pop(name, None)
            if other:
                log.info(terminal(f"{name}: graded from the class's file {shown}, no longer from {other} (an "
                                  "earlier regrade)"))
        kept, digest = kept_overrides(name, overridden.get(name, []), path, basis, args)
        record["override_files"] = {known: value for known, value in basis.items() if known in overridden}
        if digest:  # the file the kept overrides now stand for
            record["override_files"][name] = digest
        tests = discover(kinds=("public",) if args.public_only else ("public", "hidden"))
        stopping.check()  # a stop that came during the imports above was kept for now (grader.stopping)
        maxima = max_points(tests)
        options = Options(args.device, Limits(args.time_limit, args.memory_limit, args.submission_time_limit))
        started = time.monotonic()
        finished_note(out, finish_pending(out, maxima))  # a regrade stopped before all its records were written
        record, graded = regraded(out, name, path, record, (tests, options, maxima), args)
        print(tables.score_table([r for r in graded if r.name == name], maxima, record.get("final")))
        print(f"\nregraded {name} from {terminal(shown)} in {time.monotonic() - started:.1f}s; class files in {out}")
        if kept:
            print(terminal(kept))
        return grader_failures([result for result in graded if result.name == name])
    finally:
        if collected is not None:
            collected.cleanup()


def canvas_file_of(name, path, record):
    """The Canvas upload `path` names, when `name` came from a Canvas download and the file keeps Canvas's name
    (None otherwise). Refused when that name is another user's: a regrade graded Ada from Barbara's download
    (`liskovbarbara_LATE_5002_...`), exit 0, and took no late mark from the file's name. The user is the download's
    (origins), or the roster's Canvas ID for the student; a Moodle file's participant number is checked alike."""
    origin = (record.get("origins") or {}).get(name) or {}
    rows = [row for row in record.get("students") or [] if row.get("submission") == name]
    ids = {"canvas": {origin["key"]} if origin.get("lms") == "canvas" else {row.get("canvas_id") for row in rows},
           "moodle": {origin["key"]} if origin.get("lms") == "moodle" else {row.get("participant_id") for row in rows}}
    ids = {lms: known - {None, ""} for lms, known in ids.items()}
    moodle = lms_names.parse_moodle_file(path.name)
    if moodle and ids["moodle"] and moodle.participant_id not in ids["moodle"]:
        raise UsageError(f"{path.name} is a Moodle download's file of participant {moodle.participant_id} "
                         f"({moodle.student}), but {name} is participant {', '.join(sorted(ids['moodle']))}: give "
                         f"{name}'s own file; if this one is theirs, rename it first")
    readings = lms_names.canvas_readings(path.name)
    if not readings or not ids["canvas"]:
        return None
    mine = [reading for reading in readings if reading.user_id in ids["canvas"]]
    if not mine:
        raise UsageError(f"{path.name} is a Canvas download's file of user {readings[0].user_id} "
                         f"({readings[0].student}), but {name} is user {', '.join(sorted(ids['canvas']))}: "
                         f"give {name}'s own file; if this one is theirs, rename it first")
    return mine[0] if origin.get("lms") == "canvas" else None  # a late mark only where the class's came from Canvas


def regraded(out, name, path, record, suite, args):
    """Regrade `name` from `path` and record it: (record, the class's results). The new verdict is graded
    aside (OUT/.regrade), so that the old results file and every class file stay as they were until it is
    ready; then a journal, then the verdict moved in and the class files written (finish_pending). A stop
    while grading records nothing; a stop once the journal is written lets this run finish recording (a
    second signal ends it at once, and the next command on OUT finishes instead)."""
    tests, options, maxima = suite
    staging = Path(out) / class_record.STAGING
    shutil.rmtree(staging, ignore_errors=True)  # what a stop before the journal left: never recorded
    try:  # graded again even if nothing changed: nothing is reused from the staging folder
        grade_class([(name, path)], tests, options, staging, maxima, grading_engine(args.engine),
                    grading_settings(args, options), jobs=1)
    except stopping.Stopped as stop:
        stop.graded = None  # the old verdict and the class files stand: the message must not count the staged one
        raise
    others = [known for known in record.get("final") or {} if known != name]
    unreadable = class_results(out, others)[1]
    if unreadable:  # before the journal: nothing recorded, and no journal that cannot be finished
        shutil.rmtree(staging, ignore_errors=True)
        raise UsageError(f"{_listed(unreadable)}: cannot be read, so the class files cannot be written with {name}'s "
                         f"new verdict; nothing was recorded. Grade the class again ({regrade_hint(out)}): it grades "
                         "those files anew; then regrade")
    try:
        class_record.write_pending(out, list(record.get("final") or {}), record, regrade=name)
        return finish_pending(out, maxima)
    except stopping.Stopped as stop:
        if not (Path(out) / class_record.PENDING).is_file():
            stop.graded = None
            raise
        return finish_pending(out, maxima)  # ends as stopped after (grader.stopping.late_exit): nothing lost


def recorded_class(out, graded, maxima, record, sources):
    """write_class_files under a journal (class_record.PENDING), for a class whose verdicts are all written: a
    stop while the class files are written lets this run finish them (a second signal ends it at once, and the
    next command on OUT finishes instead), so grades.csv, class.json, the LMS files and the report never
    describe two different runs."""
    class_record.write_pending(out, [result.name for result in graded], record)
    try:
        record = write_class_files(out, graded, maxima, record, sources=sources)
    except stopping.Stopped:
        record = write_class_files(out, graded, maxima, class_record.read_pending(out)["record"], sources=sources)
    except UsageError:  # the LMS files refused, everything else written: recorded as far as it can be
        done_pending(out)
        raise
    done_pending(out)  # a stop that came above ends the run after it returns (grader.stopping.late_exit)
    return record


def current_record(out):
    """OUT's class record, or the one a regrade left unfinished is writing (class_record.PENDING)."""
    try:
        pending = class_record.read_pending(out)
    except ValueError as error:
        raise UsageError(f"{error}: remove it, then regrade that student again") from None
    return pending["record"] if pending else class_record.read_record(out)


def class_results(out, names):
    """([the results of `names` in OUT/results], [(name, why) for those missing or unreadable])."""
    graded, unreadable = [], []
    for name in names:
        path = Path(out) / "results" / f"{name}.json"
        try:
            graded.append(results_io.read_results_json(path))
        except FileNotFoundError:
            unreadable.append((name, "missing"))
        except (OSError, ValueError) as error:
            unreadable.append((name, f"{type(error).__name__}: {error}"[:120]))
    return graded, unreadable


def _listed(unreadable):
    return "; ".join(f"results/{name}.json ({why})" for name, why in unreadable[:5]) + (
        f"; and {len(unreadable) - 5} more" if len(unreadable) > 5 else "")


def regrade_hint(out):
    """The command that grades OUT's class again (its recorded source), for messages."""
    source = class_record.read_record(out).get("source") or current_record(out).get("source")
    return f"make grade SUBMISSION={source} OUT={out}" if source else f"make grade SUBMISSION=<the class> OUT={out}"


def finish_pending(out, maxima=None, grading_follows=False):
    """Finish the class files a stopped run journalled (class_record.PENDING): move a regrade's staged verdict
    in, write the class files, remove the journal. Returns (record, the class's results), or None when there
    was none. Every command on OUT calls it first, holding OUT. A result that cannot be read refuses (UsageError)
    and keeps the journal, unless a grade of the class follows (`grading_follows`), which grades it again."""
    out = Path(out)
    try:
        pending = class_record.read_pending(out)
    except ValueError as error:
        raise UsageError(f"{error}: remove it, then regrade that student again") from None
    if pending is None:
        return None
    name, record = pending.get("regrade"), pending["record"]
    staged = class_record.staged_result(out, name) if name else None
    if staged is not None and staged.is_file():
        try:
            os.replace(staged, out / "results" / f"{name}.json")
        except OSError as error:
            raise OutputError(f"cannot move {staged} into {out / 'results'}: {error.strerror or error}") from None
    if name is None:  # a grade stopped midway through its class files: the integrity page may be the last run's
        for stale in ("integrity.html", "integrity.csv"):
            (out / stale).unlink(missing_ok=True)
    if maxima is None:
        maxima = max_points(discover())
    graded, unreadable = class_results(out, pending["names"])
    if unreadable and grading_follows:  # this grade grades them again and writes every class file
        class_record.write_record(out, record)  # what the stopped run had to record (a regrade's file, overrides)
        done_pending(out)
        class_record.mark_unfinished(out)  # its class files are the grade's to write: none reads OUT till then
        log.info(terminal(f"{_listed(unreadable)}: cannot be read; graded again by this run"))
        return None
    if unreadable:  # class files without them would describe another class: the journal stays for the grade
        raise UsageError(f"{out}: a run stopped before writing its class files, and {_listed(unreadable)} cannot "
                         f"be read now, so they cannot be written. Grade the class again into it ({regrade_hint(out)}"
                         "): it grades those files anew and writes every class file")
    try:
        record = write_class_files(out, graded, maxima, record)
    except UsageError:  # the LMS files refused, everything else written: recorded as far as it can be
        done_pending(out)
        raise
    done_pending(out)
    return record, graded


def done_pending(out):
    class_record.clear_pending(out)
    shutil.rmtree(Path(out) / class_record.STAGING, ignore_errors=True)


def finished_note(out, finished):
    """Say that this command first finished the class files of a run stopped earlier."""
    if finished:
        log.info(f"finished recording the run stopped earlier in {terminal(out)} (its verdicts were ready): "
                 "results, grades.csv, the LMS files, class.json and the report are now written")


def generate_command(args):
    from grader.build.exercises import check_fresh, generate_all

    if args.check:
        stale = check_fresh()
        for path in stale:
            print(f"stale: {path} (run `make student`)")
        return 1 if stale else 0
    for path in generate_all():
        print(f"wrote {path}")
    return 0


def report_command(args):
    """The cohort report (and the feedback pages) of an OUT folder, from its results/*.json."""
    out = Path(args.out)
    # Held as a grade holds it: a report written while a run still grades into OUT (or writes its class files)
    # would describe a class that is half one run and half another, and say nothing of it.
    if out.is_dir():
        args.held.enter_context(hold_out(out))
    if not (out / "results").is_dir():
        # A grade stopped before its first result leaves only its mark: say so, not "grade a class first"
        refuse_unfinished(out, "the report")
        raise UsageError(f"{out} has no results/ folder: grade a class into it first (make grade OUT={out})")
    if (out / class_record.PENDING).is_file():  # a run stopped while writing its class files: record them all
        finished_note(out, finish_pending(out))
    refuse_unfinished(out, "the report")
    if not class_record.read_record(out).get("final") and (out / MANIFEST).is_file():
        raise UsageError(f"{out} holds one slice of a class graded in parts (its shard.json): a report of it would "
                         "describe a part of the class as a cohort. Merge the slices (make merge SHARDS=\"...\" "
                         "OUT=<class>), then report the merged OUT (it writes its report), docs/cluster.md")
    refuse_disagreeing_results(out)
    if args.pages:
        feedback.write_pages(out, force=True)
    print(report.write_report(out))
    return 0


def refuse_disagreeing_results(out):
    """UsageError when OUT/results/ no longer holds the class grades.csv was written from (a results file removed,
    or one added by hand): a report of it would leave a student out, or count one grades.csv does not have."""
    final = class_record.read_record(out).get("final")
    if final is None:  # an OUT of an older kit, or a slice: results/ is all there is
        return
    present = {path.stem for path in (Path(out) / "results").glob("*.json")}
    missing, extra = sorted(set(final) - present), sorted(present - set(final))
    replaced = [name for name in sorted(set(final) & present) if "fingerprint" in final[name]
                and recorded_fingerprint(Path(out) / "results" / f"{name}.json") not in (final[name]["fingerprint"],
                                                                                       UNREADABLE)]
    if missing or extra or replaced:
        said = "; ".join(part for part in (
            f"{len(missing)} result(s) of the class missing ({', '.join(missing[:5])})" if missing else "",
            f"{len(extra)} result(s) of no student of the class ({', '.join(extra[:5])})" if extra else "",
            f"{len(replaced)} result(s) replaced since (by another run's, e.g. RESULTS=...: {', '.join(replaced[:5])})"
            if replaced else "") if part)
        raise UsageError(f"{out}/results/ does not hold the class its grades.csv was written from: {said}. Grade the "
                         f"class again into it ({regrade_hint(out)}): it grades what is missing and rewrites every "
                         "class file; nothing was written")


UNREADABLE = object()


def recorded_fingerprint(path):
    """The fingerprint a results file records (None: none), or UNREADABLE (the report's own refusal names it)."""
    try:
        return results_io.read_results_json(path).fingerprint
    except (OSError, ValueError):
        return UNREADABLE


def refuse_unfinished(out, what):
    """UsageError when a grade into OUT stopped before its class files: its results are part that run's and part
    an earlier one's (a file changed since may still show its old result), so `what` would mix two classes."""
    if class_record.unfinished(out):
        held = ("its results are part that run's and part an earlier one's" if (Path(out) / "results").is_dir()
                else "it had recorded no result yet")
        command = class_record.unfinished_command(out)
        again = "(it grades only what is missing)" if command == "grade" else "(the slices are read again)"
        raise UsageError(f"the last {command} into {out} was stopped before it finished: {held}. Run the same "
                         f"{command} command again {again}, then {what}; nothing was written")


def publish_command(args):
    from grader.integrations.publish import PARTS, PublishRefused, publish

    unknown = [part for part in args.parts if part not in PARTS]
    if unknown:
        raise UsageError(f"unknown part(s) {', '.join(map(repr, unknown))}: the parts are {', '.join(PARTS)}")
    writable_folder(args.dist, "--dist")
    try:
        written = publish(args.dist, args.parts or PARTS, course_id=args.course_id)
    except PublishRefused as refused:
        for line in refused.lines:
            print(f"refused: {line}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    return 0


class Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported in one line (argparse prints the whole usage first)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {terminal(message)} (see {self.prog} --help)\n")


def hold_out(out):
    """bulk.holding(out), with an OUT that cannot be created or written, or that is not this user's
    alone, reported as a bad --out. Runs before any student code: OUT is created by the grader."""
    writable_folder(out, "--out")
    problem = foreign_out(out)
    if problem:
        raise UsageError(f"--out {out}: {problem}; remove it, or give another --out")
    return holding(out)


def writable_folder(folder, option):
    """Create `folder` if needed and check that files can be made in it, before any grading."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):  # as root, os.access says yes to anything
            pass
    except OSError as error:
        raise UsageError(f"{option} {folder}: cannot write there ({error.strerror or error}); "
                         "give a folder you can write") from None


MAX_SECONDS = 24 * 3600
# A correct step loads the file and runs its checks in a few tenths of a second on a busy machine: a shorter
# limit would time every student out and write those zeros as their grades. A whole submission (seven steps) needs
# several seconds there (a blind review: 3 s cost a correct file 15 points, 1 s 95).
MIN_SECONDS = 1.0
MIN_SUBMISSION_SECONDS = 10.0
MIN_MEMORY, MAX_MEMORY = 64 << 20, 1 << 50  # PyTorch itself needs tens of MiB; past a PiB is a typo


def seconds_argument(text, least=MIN_SECONDS, what="a correct step needs up to a second", example="10 or 2.5"):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not least <= value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds between {least:g} and "
                                         f"{MAX_SECONDS} (e.g. {example}): {what}")
    return value


def submission_seconds_argument(text):
    return seconds_argument(text, MIN_SUBMISSION_SECONDS, "a correct submission's seven steps need several seconds",
                            "120 or 60")


def size_argument(text):
    try:
        size = parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if not MIN_MEMORY <= size <= MAX_MEMORY:
        why = 'too small to run PyTorch' if size < MIN_MEMORY else 'too large'
        raise argparse.ArgumentTypeError(f"{text!r} is {why}"
                                         ": give a size between 64MiB and 1PiB, e.g. 512MiB or 2GiB")
    return size


def jobs_argument(text):
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if not 1 <= jobs <= 1024:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of submissions to grade at once (1 to 1024)")
    return jobs


def device_argument(text):
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a device: cpu, cuda or cuda:N")
    return text


def roster_argument(text):
    """--roster: checked before any grading, so a bad roster costs seconds, not a graded class."""
    from grader.integrations import lms

    try:
        lms.read_roster(text)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise argparse.ArgumentTypeError(f"cannot use {text} as a roster: {error}") from None
    return text


OVERRIDES_HELP = ("CSV of student,step,points,reason (step: a step key or total): applied to grades.csv, the LMS "
                  "files and the report, each with its reason; replaces the OUT's earlier overrides")


def add_grading_options(parser):
    """The options of `grade` that `regrade` shares (a regrade should grade as the class was graded)."""
    parser.add_argument("--jobs", type=jobs_argument, default=None,
                        help=f"submissions graded at once (default {DEFAULT_JOBS}: two per core, so that one's "
                             f"worker computes while the other's judge thread checks; on a GPU at most {CUDA_JOBS})")
    parser.add_argument("--time-limit", type=seconds_argument, default=GRADING_DEFAULTS["time_limit"],
                        help=f"seconds per step (default {DEFAULTS.step_seconds:g})")
    parser.add_argument("--memory-limit", type=size_argument, default=GRADING_DEFAULTS["memory_limit"],
                        help=f"memory cap per step, e.g. 512MiB (default {DEFAULTS.memory_bytes >> 30}GiB)")
    parser.add_argument("--device", type=device_argument, default=GRADING_DEFAULTS["device"],
                        help="cpu, cuda or cuda:N")
    parser.add_argument("--public-only", action="store_true", help="grade with the public tests only")
    parser.add_argument("--roster", type=roster_argument, default=None,
                        help="class list CSV (a Canvas gradebook export or groups export, a Moodle grading worksheet "
                             "or participants export, a plain roster): also write OUT/canvas_grades.csv and "
                             "OUT/moodle_grades.csv (and moodle_worksheet.csv), empty for students who did not submit")
    parser.add_argument("--overrides", type=overrides_argument, default=None, help=OVERRIDES_HELP)
    parser.add_argument("--keep-overrides", action="store_true",
                        help="apply a student's overrides to another file than the one they were given for (a "
                             "regrade from --submission, a changed download); without it such a run is refused")
    parser.add_argument("--keep-regrades", action="store_true",
                        help="keep grading a student regraded from another file (regrade --submission) from it "
                             "when the class now holds a new file for them; without it such a run is refused")
    parser.add_argument("--submission-time-limit", type=submission_seconds_argument,
                        default=GRADING_DEFAULTS["submission_time_limit"],
                        help=f"seconds for all steps of one submission (default {DEFAULTS.submission_seconds:g})")
    parser.add_argument("--engine", choices=("kit", "otter"), default=GRADING_DEFAULTS["engine"],
                        help="kit: the sandboxed grader (default); otter: `otter run` with dist/otter's zip")
    parser.add_argument("--require-sandbox", action="store_true",
                        help="refuse to grade (exit 2) unless every protection of the OS sandbox is on here "
                             "(namespaces, seccomp...); without it a degraded sandbox is reported, not refused")


def overrides_argument(text):
    """--overrides: read and checked before any grading (an empty file clears the OUT's overrides)."""
    try:
        return read_overrides(text)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise argparse.ArgumentTypeError(f"cannot use {text} as overrides: {error}") from None


LABELS = {logging.DEBUG: "debug", logging.INFO: "note", logging.WARNING: "warning", logging.ERROR: "error",
          logging.CRITICAL: "error"}


class Labelled(logging.Formatter):
    """A diagnostic as the grader has always said it: "note: ..." (info), "warning: ...", "error: ..."."""

    def format(self, record):
        return f"{LABELS.get(record.levelno, record.levelname.lower())}: {super().format(record)}"


class StderrHandler(logging.StreamHandler):
    """Writes to sys.stderr as it is at each message: a caller (a test, an embedding tool) may have replaced it."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _):
        pass


def configure_logging():
    """The one logging configuration: the `grader` loggers' diagnostics on stderr, one labelled line each.
    GRADER_LOG=debug|info|warning|error sets the least level shown (default info: notes too). Idempotent,
    since tests call main() many times in one process."""
    logger = logging.getLogger("grader")
    for old in [handler for handler in logger.handlers if isinstance(handler, StderrHandler)]:
        logger.removeHandler(old)
    handler = StderrHandler()
    handler.setFormatter(Labelled("%(message)s"))
    logger.addHandler(handler)
    level = os.environ.get("GRADER_LOG", "info").upper()
    logger.setLevel(level if level in ("DEBUG", "INFO", "WARNING", "ERROR") else logging.INFO)


def main(argv=None):
    configure_logging()
    parser = Parser(prog="python -m grader", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    grade = commands.add_parser("grade", help="grade a .py, .ipynb, folder or .zip of submissions")
    grade.add_argument("path", nargs="?", default=str(SAMPLE_CLASS), help="default: the bundled sample class")
    grade.add_argument("--out", default="out", help="folder for results (default: out)")
    grade.add_argument("--results", default=None, help="results.json path for a single submission")
    add_grading_options(grade)
    grade.add_argument("--shard", default=None, help="i/N: grade only the i-th of N slices of the class "
                       "(default: from a Slurm array task or a Kubernetes Indexed Job, if run in one)")
    grade.add_argument("--zip-encoding", default=None,
                       help="code page of zip file names that are not UTF-8 (default cp437, the ZIP standard's)")
    regrade = commands.add_parser("regrade", help="regrade one student of a graded class into its OUT")
    regrade.add_argument("student", help="the submission's name in OUT/grades.csv (or a roster identifier)")
    regrade.add_argument("--out", default="out", help="the graded class folder (default: out)")
    regrade.add_argument("--submission", default=None,
                         help="grade this file as the student's (default: the student's file in the graded class)")
    add_grading_options(regrade)
    regrade.set_defaults(**dict.fromkeys(GRADED_WITH))  # None: not given, the class's own (graded_with)
    merge = commands.add_parser("merge", help="combine the OUT folders of sharded runs into one class")
    merge.add_argument("shards", nargs="+", help="the OUT folders of the `grade --shard i/N` runs")
    merge.add_argument("--out", default="out", help="folder for the merged results (default: out)")
    merge.add_argument("--roster", type=roster_argument, default=None,
                       help="class list CSV: also write the Canvas and Moodle import files for the whole class")
    merge.add_argument("--overrides", type=overrides_argument, default=None, help=OVERRIDES_HELP)
    cohort = commands.add_parser("report", help="write OUT/report.html (the cohort report) from OUT/results")
    cohort.add_argument("--out", default="out", help="the graded class folder (default: out)")
    cohort.add_argument("--pages", action="store_true", help="also rewrite the feedback pages OUT/feedback/*.html")
    generate = commands.add_parser("generate", help="regenerate the student files from solutions/")
    generate.add_argument("--check", action="store_true", help="only report stale generated files")
    publish = commands.add_parser("publish", help="build the student release and the LMS autograders into dist/")
    publish.add_argument("--dist", default="dist", help="output folder (default: dist)")
    publish.add_argument("parts", nargs="*", help="only these parts (student, otter, gradescope, nbgrader)")
    publish.add_argument("--course-id", default=None,
                         help="the nbgrader course id (default: the existing course's, else attention)")
    args = parser.parse_args(argv)
    args.held = contextlib.ExitStack()  # what a command holds until it ends (OUT's lock)
    if args.command in ("grade", "regrade", "merge"):
        stopping.install()  # Ctrl-C, SIGTERM, SIGHUP: a clean stop that records nothing unsure
    try:
        commands_by_name = {"grade": grade_command, "merge": merge_command, "generate": generate_command,
                            "publish": publish_command, "report": report_command, "regrade": regrade_command}
        return commands_by_name[args.command](args)
    except (UsageError, report.ResultsError, SandboxError) as error:
        print(f"error: {terminal(error)}", file=sys.stderr)
        return 2
    except OutBusy as error:
        print(f"error: {terminal(error)}", file=sys.stderr)
        return 1
    except stopping.Stopped as stop:
        print(stopped_message(stop, args), file=sys.stderr, flush=True)
        return stop.exit_code
    except OutputError as error:  # a full disk, a read-only OUT: the results written so far are kept
        again = "it grades only what is missing" if args.command in ("grade", "regrade") else "nothing is graded again"
        print(f"error: {terminal(error)}; every result written so far is kept: free space (or make the folder "
              f"writable) and run the same command again ({again})", file=sys.stderr)
        return 1
    finally:
        stopping.hold()  # the command's records are written (or it stopped): a later signal is kept, not raised
        args.held.close()
