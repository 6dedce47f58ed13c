"""Shards are one class: the merged class is the unsharded run's (its integrity page included); slices cut
from another version of the class are refused, with the commands that grade exactly them again; a Slurm
rerun of one task grades that slice; a bad array is refused by every task alike, before anything grades.

The class is four files: an identical pair split across the two slices (a_copy, b_copy: one independently
written solution of the integrity cohort) and two others; d_other is resubmitted between runs."""

import csv
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.markers import clean_solution
from grader.cohort.shards import shard_from_environment
from grader.faults.bugs import BUGS
from grader.paths import ROOT
from grader.sandbox.limits import DEFAULTS
from tests.kit.project import kit_project, shell_env

COHORT = Path(__file__).parent / "integrity_cohort"
TIME_LIMIT = "60"  # a busy test machine is slow


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "grader", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, **kwargs)


def grade(folder, out, *more):
    done = cli("grade", folder, "--out", out, "--time-limit", TIME_LIMIT, *more, env=scheduler_free_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def scheduler_free_env(**extra):
    env = {key: value for key, value in shell_env().items()
           if not key.startswith("SLURM_") and key not in ("JOB_COMPLETION_INDEX", "SHARD_COUNT")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The class graded in two slices; then d_other resubmitted (fixed) and only slice 1 graded again, as
    an instructor who forgot which slice held it would; the merge of those; the slice the merge names graded
    again by the command it prints; the merge then; and one unsharded run of the new class."""
    root = tmp_path_factory.mktemp("one_class")
    folder = root / "class"
    folder.mkdir()
    shutil.copy(COHORT / "aiko_tanaka.py", folder / "a_copy.py")
    shutil.copy(COHORT / "aiko_tanaka.py", folder / "b_copy.py")
    shutil.copy(COHORT / "bao_tran.py", folder / "c_other.py")
    clean = clean_solution()
    (folder / "d_other.py").write_text(BUGS[0].apply(clean))
    slices = [root / "out-1", root / "out-2"]
    for index, out in enumerate(slices, start=1):
        grade(folder, out, "--shard", f"{index}/2")
    (folder / "d_other.py").write_text(clean)  # the resubmission: in slice 2
    grade(folder, slices[0], "--shard", "1/2")
    stale = cli("merge", *slices, "--out", root / "stale_merge")
    advised = [line.strip() for line in stale.stderr.splitlines() if line.strip().startswith("make grade ")]
    project = kit_project(root / "kit")
    for line in advised or [f"make grade SUBMISSION={folder} SHARD=2/2 OUT={slices[1]}"]:  # old code: no advice
        done = subprocess.run([*shlex.split(line), f"TIME_LIMIT={TIME_LIMIT}"], cwd=project, capture_output=True,
                              text=True, timeout=600, env=scheduler_free_env())
        assert done.returncode == 0, done.stderr[-3000:]
    merged = cli("merge", *slices, "--out", root / "merged")
    whole = grade(folder, root / "whole")
    return {"root": root, "folder": folder, "slices": slices, "stale": stale, "advised": advised, "merged": merged,
            "whole": whole}


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_a_slice_of_an_older_version_of_the_class_is_refused_with_the_command_that_grades_it_again(runs):
    stale, root = runs["stale"], runs["root"]
    assert stale.returncode == 1, "the merge kept d_other's grade from before its resubmission"
    assert not (root / "stale_merge" / "grades.csv").exists()
    assert re.search(r"error: slice 2/2 \(\S*out-2, cut [^)]+\) is not of the class the newest slice was cut from "
                     r"\(1/2, .*submissions changed: d_other", stale.stderr), stale.stderr
    # (with the limits the class was graded with: advice without them made the other slice stale in turn)
    assert runs["advised"] == [f"make grade SUBMISSION={runs['folder']} SHARD=2/2 OUT={runs['slices'][1]} "
                               f"TIME_LIMIT={TIME_LIMIT} SUBMISSION_TIME_LIMIT={DEFAULTS.submission_seconds:g} "
                               f"MEMORY_LIMIT={DEFAULTS.memory_bytes >> 30}GiB"]
    assert "--array=2 cluster/grade.sbatch" in stale.stderr


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_the_merged_class_after_the_advised_rerun_is_the_unsharded_run(runs):
    root = runs["root"]
    assert runs["merged"].returncode == 0, runs["merged"].stderr[-3000:]
    assert (root / "merged" / "grades.csv").read_text() == (root / "whole" / "grades.csv").read_text()
    rows = {row["submission"]: row for row in csv.DictReader((root / "merged" / "grades.csv").open())}
    assert float(rows["d_other"]["total"]) == 100.0, "d_other's resubmission is graded"


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_the_merged_integrity_report_is_the_unsharded_one(runs):
    root = runs["root"]
    whole, merged = (root / "whole" / "integrity.csv").read_text(), (root / "merged" / "integrity.csv").read_text()
    pairs = {(row["student_a"], row["student_b"]): row for row in csv.DictReader(whole.splitlines())}
    assert pairs[("a_copy", "b_copy")]["flagged"] == "yes", "the identical pair is flagged in the unsharded run"
    assert merged == whole
    page = (root / "merged" / "integrity.html").read_text()
    assert "4 submissions (4 with code read)" in page and "not available" not in page


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_a_merge_refuses_a_result_that_is_not_of_the_class_s_file(runs, tmp_path, grader_cli):
    """A slice interrupted after the class changed keeps the older results of files it had not regraded yet:
    the merge checks every result against its slice's class, not only that a results file is there."""
    slices = [tmp_path / "out-1", tmp_path / "out-2"]
    for source, target in zip(runs["slices"], slices):
        shutil.copytree(source, target)
    older = slices[1] / "results" / "d_other.json"
    older.write_text(older.read_text().replace('"fingerprint": "', '"fingerprint": "0', 1))
    done = grader_cli("merge", *slices, "--out", tmp_path / "merged", cwd=ROOT)
    assert done.returncode == 1 and f"slice 2/2 ({slices[1]}): the results of d_other are not" in done.stderr, \
        done.stderr
    assert f"make grade SUBMISSION={runs['folder']} SHARD=2/2 OUT={slices[1]}" in done.stderr
    assert not (tmp_path / "merged" / "grades.csv").exists()
    # A slice is no class: a regrade there says where to regrade (a blind tester was told "grade the class first").
    regrade = grader_cli("regrade", "a_copy", "--out", slices[0], cwd=ROOT)
    assert regrade.returncode == 2 and "holds one slice of a class graded in parts" in regrade.stderr, regrade.stderr
    assert "make regrade STUDENT=a_copy OUT=<class>" in regrade.stderr


SLURM_RERUN = {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "2", "SLURM_ARRAY_TASK_MAX": "2",
               "SLURM_ARRAY_TASK_COUNT": "1"}  # what `sbatch --array=2 grade.sbatch` gives its one task


def test_a_slurm_rerun_of_one_task_is_that_slice_or_refused():
    assert shard_from_environment({**SLURM_RERUN, "SHARD_COUNT": "4"})[0] == (2, 4)
    with pytest.raises(ValueError, match="SHARD_COUNT is not"):  # never the whole class as slice 1/1
        shard_from_environment(SLURM_RERUN)


SPARSE = {"SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "9", "SLURM_ARRAY_TASK_COUNT": "3"}  # --array=1,4,9


@pytest.mark.parametrize("count", [None, "3"])
def test_a_sparse_array_is_refused_by_every_task_alike(count):
    said = set()
    for task in ("1", "4", "9"):
        env = {**SPARSE, "SLURM_ARRAY_TASK_ID": task, **({"SHARD_COUNT": count} if count else {})}
        with pytest.raises(ValueError) as refused:
            shard_from_environment(env)
        said.add(str(refused.value))
    assert len(said) == 1, said


def test_a_bad_array_is_refused_before_anything_is_graded(tmp_path, grader_cli):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.py").write_text(clean_solution())
    done = grader_cli("grade", folder, "--out", tmp_path / "out", cwd=ROOT,
                      env=scheduler_free_env(**SPARSE, SLURM_ARRAY_TASK_ID="1", SHARD_COUNT="3"))
    assert done.returncode == 2 and "task IDs 1-9 are not slice numbers of SHARD_COUNT=3" in done.stderr, done.stderr
    assert not (tmp_path / "out" / "results").exists()


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_a_merge_into_an_out_holding_results_of_others_is_refused(runs, tmp_path, grader_cli):
    """A merge into the OUT of an earlier run would show that run's other students on the report and the
    integrity page (they read OUT/results): refused, naming them."""
    out = tmp_path / "out"
    (out / "results").mkdir(parents=True)
    shutil.copy(runs["root"] / "whole" / "results" / "a_copy.json", out / "results" / "zed.json")
    done = grader_cli("merge", *runs["slices"], "--out", out, cwd=ROOT)
    assert done.returncode == 2 and "not in this class (zed)" in done.stderr, done.stderr
    assert not (out / "grades.csv").exists()


def slices_with(runs, tmp_path, roster=None, overrides=None):
    """Copies of the slices, each recording in its class.json the roster and overrides {folder index: file} it
    was graded with (as `make grade SHARD=i/N ROSTER=... OVERRIDES=...` records them)."""
    from grader.cohort import class_record
    from grader.cohort.overrides import read_overrides

    slices = []
    for index, source in enumerate(runs["slices"], start=1):
        target = tmp_path / f"out-{index}"
        shutil.copytree(source, target)
        record = class_record.read_record(target)
        if (roster or {}).get(index):
            record["roster"] = {"file": roster[index].name, "text": roster[index].read_text(encoding="utf-8-sig")}
        if (overrides or {}).get(index):
            record["overrides"] = [override.as_dict() for override in read_overrides(overrides[index])]
        class_record.write_record(target, record)
        slices.append(target)
    return slices


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_a_merge_applies_the_roster_and_overrides_the_slices_were_graded_with(runs, tmp_path, grader_cli):
    """Before: slices graded with ROSTER and OVERRIDES, merged without them, gave un-overridden grades and no
    LMS files, with no note, exit 0. Now: what every slice recorded is applied, with a note; slices that
    recorded different ones are refused, naming them and how to pass them; ones given to the merge replace
    the slices' and that is said."""
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,SIS Login ID\n" + "".join(f"{name},{name}\n" for name in
                                                          ("a_copy", "b_copy", "c_other", "d_other")))
    overrides, other = tmp_path / "overrides.csv", tmp_path / "other.csv"
    overrides.write_text('student,step,points,reason\nc_other,total,42,"graded by hand"\n')
    other.write_text('student,step,points,reason\nc_other,total,17,"graded by hand again"\n')
    agreed = slices_with(runs, tmp_path / "agreed", roster={1: roster, 2: roster}, overrides={1: overrides,
                                                                                             2: overrides})
    done = grader_cli("merge", *agreed, "--out", tmp_path / "merged", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = {row["submission"]: row for row in csv.DictReader((tmp_path / "merged" / "grades.csv").open())}
    assert float(rows["c_other"]["total"]) == 42 and "graded by hand" in rows["c_other"]["override"]
    assert (tmp_path / "merged" / "canvas_grades.csv").is_file(), "the slices' roster gives the LMS files"
    assert "applying the roster every slice was graded with (roster roster.csv" in done.stderr
    assert "applying the overrides every slice was graded with (1 override(s) from overrides.csv" in done.stderr

    split = slices_with(runs, tmp_path / "split", overrides={1: overrides})  # slice 2 graded without them
    done = grader_cli("merge", *split, "--out", tmp_path / "refused", cwd=ROOT)
    assert done.returncode == 2 and "the slices were graded with different overrides (" in done.stderr
    assert f"{split[0]}: 1 override(s) from overrides.csv" in done.stderr
    assert f"{split[1]}: no overrides" in done.stderr and "OVERRIDES=<file> (--overrides <file>)" in done.stderr
    assert not (tmp_path / "refused" / "grades.csv").exists()

    done = grader_cli("merge", *split, "--out", tmp_path / "given", "--overrides", other, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = {row["submission"]: row for row in csv.DictReader((tmp_path / "given" / "grades.csv").open())}
    assert float(rows["c_other"]["total"]) == 17
    assert "--overrides is applied instead of the overrides the slices were graded with (1 override(s) from " \
        "overrides.csv; no overrides)" in done.stderr, done.stderr


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_merging_again_into_a_class_with_a_regrade_from_another_file_is_refused(runs, tmp_path, grader_cli):
    """Blind gradebook review: after `regrade STUDENT=x SUBMISSION=other.py` in the merged OUT, merging the same
    slices into it again put back the slice's verdict for x, exit 0, though the docs say x stays graded from
    the other file."""
    from grader.cohort import class_record

    out = tmp_path / "merged"
    shutil.copytree(runs["root"] / "merged", out)
    record = class_record.read_record(out)
    record["regrades"] = {"d_other": str(runs["folder"] / "a_copy.py")}
    class_record.write_record(out, record)
    def files():  # (the lock file says which process held OUT last)
        return {path.name: path.read_bytes() for path in out.rglob("*") if path.is_file() and path.name[0] != "."}

    before = files()
    refused = grader_cli("merge", *runs["slices"], "--out", out)
    assert refused.returncode == 2, refused.stderr
    assert "holds 1 regrade(s) from another file than the class's: d_other (from " in refused.stderr
    assert "Merge into a new OUT" in refused.stderr
    assert files() == before
    # Blind gradebook review (round 5): a regrade's own limits were undone by merging again, exit 0
    record["regrades"] = {}
    record["regrade_limits"] = {"d_other": {"time_limit": 30.0}}
    class_record.write_record(out, record)
    before = files()
    refused = grader_cli("merge", *runs["slices"], "--out", out)
    assert refused.returncode == 2 and "a regrade gave limits of their own: d_other (time-limit 30.0)" in \
        refused.stderr, refused.stderr
    assert files() == before


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_a_merge_stopped_after_copying_results_leaves_an_out_no_report_reads(runs, tmp_path, grader_cli,
                                                                              monkeypatch):
    """Blind gradebook review (round 2): a merge stopped between copying the slices' results and writing the class
    files said "nothing under way was recorded", left results/ newer than grades.csv, and `report` exited 0 over
    that mix (a later regrade changed another student's grade in silence). Now OUT is marked unfinished first."""
    from grader import cli, stopping
    from grader.cohort import class_record

    out = tmp_path / "merged"
    shutil.copytree(runs["root"] / "merged", out)

    def stopped(*args, **kwargs):
        raise stopping.Stopped(2)

    monkeypatch.setattr(cli, "recorded_class", stopped)
    done = grader_cli("merge", *runs["slices"], "--out", out)
    assert done.returncode == 130 and "the merge into" in done.stderr and "did not finish" in done.stderr, done.stderr
    assert "nothing under way was recorded" not in done.stderr and class_record.unfinished(out)
    for command in (("report",), ("regrade", "a_copy")):
        refused = grader_cli(*command, "--out", out)
        assert refused.returncode == 2 and "the last merge into" in refused.stderr, refused.stderr
        assert "Run the same merge command again" in refused.stderr
    monkeypatch.undo()
    assert grader_cli("merge", *runs["slices"], "--out", out).returncode == 0
    assert not class_record.unfinished(out) and grader_cli("report", "--out", out).returncode == 0


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_a_report_of_one_slice_is_refused(runs, grader_cli):
    """Blind gradebook review (round 2): `make report OUT=<a slice>` wrote a "Cohort report" of that slice's
    students (and leftovers of an earlier cut), exit 0, where regrade refused the same OUT."""
    refused = grader_cli("report", "--out", runs["slices"][0])
    assert refused.returncode == 2 and "holds one slice of a class graded in parts" in refused.stderr, refused.stderr
    assert "make merge" in refused.stderr


@pytest.mark.slow(reason='uses runs: a class graded whole, in slices and again through `python -m grader` and make')
def test_a_slice_s_out_and_a_class_s_out_are_never_graded_into_as_the_other(runs, grader_cli):
    """Blind gradebook review (round 5): the whole class graded into a slice's OUT kept its shard.json; merge took
    it for a slice again, and after a regrade called one slice or the other stale, round and round."""
    folder, slices, whole = runs["folder"], runs["slices"], runs["root"] / "whole"
    before = {path: path.read_bytes() for out in (*slices, whole) for path in out.rglob("*")
              if path.is_file() and path.name != ".grading.lock"}
    as_class = grader_cli("grade", folder, "--out", slices[0])
    assert as_class.returncode == 2 and "holds slice 1/2 of a class graded in parts" in as_class.stderr, \
        as_class.stderr
    other_slice = grader_cli("grade", folder, "--out", slices[0], "--shard", "2/2")
    assert other_slice.returncode == 2 and "holds slice 1/2 of the class" in other_slice.stderr, other_slice.stderr
    into_class = grader_cli("grade", folder, "--out", whole, "--shard", "1/2")
    assert into_class.returncode == 2 and "holds a graded class" in into_class.stderr, into_class.stderr
    # blind review (round 8): make's default OUT=out beside SHARDS="out out-2" merged the class into slice 1's OUT
    into_slice = grader_cli("merge", *slices, "--out", slices[0])
    assert into_slice.returncode == 2 and "is the OUT of a slice" in into_slice.stderr, into_slice.stderr
    assert {path: path.read_bytes() for path in before} == before, "a refused run changed an OUT"
