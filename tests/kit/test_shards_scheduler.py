"""Shards from the scheduler: the kit's cluster/ files (the Slurm array script, the Kubernetes Indexed Job, the
script that runs that Job and its merge) run as the schedulers would run them (each task's environment set,
nothing else); the slices merge to one run's grades.csv, and one failed slice is graded again as that slice."""

import os
import re
import stat
import subprocess
import sys

import pytest
import yaml

from grader.cohort.shards import shard_from_environment
from grader.faults.samples import synthetic_class
from grader.paths import ROOT
from tests.kit.project import kit_project

COUNT = 5
DOC = ROOT / "docs" / "cluster.md"
CLUSTER = ROOT / "cluster"
FILES = ("grade.sbatch", "merge.sbatch", "grade-job.yaml", "merge-job.yaml", "k8s-grade.sh")


def test_the_docs_point_to_the_cluster_files_and_give_right_kubectl_advice():
    text = DOC.read_text(encoding="utf-8")
    for name in FILES:
        assert (CLUSTER / name).is_file() and f"cluster/{name}" in text, name
    assert "in vain" not in text  # `kubectl wait --for=condition=complete` does wait out its timeout on a failure
    assert "condition=failed" in text and "kubernetes/kubectl#1629" in text


def test_slurm_tasks_are_the_slices_of_an_explicit_count():
    slurm = {"SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4", "SHARD_COUNT": "4"}
    assert [shard_from_environment({**slurm, "SLURM_ARRAY_TASK_ID": str(task)})[0] for task in (1, 2, 3, 4)] == \
        [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert shard_from_environment({"SLURM_ARRAY_TASK_ID": "3", "SHARD_COUNT": "4"})[0] == (3, 4)
    rerun = {"SLURM_ARRAY_TASK_MIN": "2", "SLURM_ARRAY_TASK_MAX": "5", "SLURM_ARRAY_TASK_COUNT": "2",
             "SHARD_COUNT": "5"}  # --array=2,5
    assert [shard_from_environment({**rerun, "SLURM_ARRAY_TASK_ID": task})[0] for task in ("2", "5")] == \
        [(2, 5), (5, 5)]
    for wrong in ({"SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3", "SHARD_COUNT": "4"},  # --array=0-3
                  {"SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "8", "SHARD_COUNT": "4"},  # more than N
                  {"SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4"},  # no count: a rerun would be 1/1
                  {"SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4", "SHARD_COUNT": "four"}):
        with pytest.raises(ValueError):
            shard_from_environment({**wrong, "SLURM_ARRAY_TASK_ID": wrong["SLURM_ARRAY_TASK_MIN"]})


def test_kubernetes_index_needs_the_shard_count():
    assert shard_from_environment({"JOB_COMPLETION_INDEX": "0", "SHARD_COUNT": "3"})[0] == (1, 3)
    assert shard_from_environment({"JOB_COMPLETION_INDEX": "2", "SHARD_COUNT": "3"})[0] == (3, 3)
    with pytest.raises(ValueError, match="SHARD_COUNT"):
        shard_from_environment({"JOB_COMPLETION_INDEX": "0"})
    with pytest.raises(ValueError, match="outside"):
        shard_from_environment({"JOB_COMPLETION_INDEX": "3", "SHARD_COUNT": "3"})
    assert shard_from_environment({"PATH": "/usr/bin"}) is None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, clean):
    """The kit copy, the class, and one plain run's grades.csv to compare against."""
    project = kit_project(tmp_path_factory.mktemp("kit") / "kit")
    data = tmp_path_factory.mktemp("data")
    (data / "class").mkdir()
    for name, text in synthetic_class(clean, COUNT).items():
        (data / "class" / name).write_text(text)
    env = scheduler_free_env()
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(data / "class"), "--out", str(data / "whole"),
                           "--time-limit", env["TIME_LIMIT"]],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return project, data, env


def scheduler_free_env():
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("SLURM_") and key not in ("JOB_COMPLETION_INDEX", "SHARD_COUNT", "MAKEFLAGS")}
    env["TIME_LIMIT"] = "60"  # make's knobs come from the environment too; a busy test machine is slow
    return env


def test_a_slurm_array_grades_slices_that_merge_to_one_run_and_one_failed_task_is_rerun_as_its_slice(cluster):
    project, data, env = cluster
    script = (CLUSTER / "grade.sbatch").read_text()
    low, high = map(int, re.search(r"#SBATCH --array=(\d+)-(\d+)\n", script).groups())
    count = int(re.search(r'SHARD_COUNT="\$\{SHARD_COUNT:-(\d+)\}"', script).group(1))
    assert (low, high) == (1, count)  # task i is slice i
    slurm = {**env, "SLURM_SUBMIT_DIR": str(project), "SLURM_ARRAY_JOB_ID": "77", "SLURM_CPUS_PER_TASK": "2",
             "CLASS": str(data / "class")}

    def task(number, first, last):  # what Slurm runs for one task of --array=first-last
        return subprocess.run(["bash", "cluster/grade.sbatch"], cwd=project, capture_output=True, text=True,
                              timeout=600, env={**slurm, "SLURM_ARRAY_TASK_ID": str(number),
                                                "SLURM_ARRAY_TASK_MIN": str(first), "SLURM_ARRAY_TASK_MAX": str(last),
                                                "SLURM_ARRAY_TASK_COUNT": str(last - first + 1)})

    def merge():
        return subprocess.run(["bash", "cluster/merge.sbatch"], cwd=project, capture_output=True, text=True,
                              timeout=600, env={**env, "SLURM_SUBMIT_DIR": str(project)})

    for number in range(low, high + 1):
        if number == 2:
            continue  # task 2 failed before it wrote anything (its node went down)
        done = task(number, low, high)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"grading slice {number}/{count} of the class (Slurm array task {number}, SHARD_COUNT={count})" \
            in done.stderr
    done = merge()
    assert done.returncode != 0 and f"missing slice(s) 2/{count}" in done.stderr, done.stderr[-3000:]  # make: 2
    assert "--array=2 cluster/grade.sbatch" in done.stderr and not (project / "out" / "grades.csv").exists()
    done = task(2, 2, 2)  # sbatch --array=2 cluster/grade.sbatch: an array of one task, which is still slice 2
    assert done.returncode == 0 and f"grading slice 2/{count} of the class" in done.stderr, done.stderr[-3000:]
    slices = [project / f"out-{number}" for number in range(low, high + 1)]
    graded = [len(list((folder / "results").glob("*.json"))) for folder in slices]
    assert sum(graded) == COUNT and max(graded) - min(graded) <= 1
    done = merge()
    assert done.returncode == 0, done.stderr[-3000:]
    assert (project / "out" / "grades.csv").read_text() == (data / "whole" / "grades.csv").read_text()


def test_grade_sbatch_passes_the_count_and_the_knobs_given_to_sbatch(tmp_path):
    """make ignores exported knobs: the script passes those given to sbatch on make's command line, so every
    slice, and a slice graded again, is graded with the same settings (a merge refuses slices of others)."""
    fake = tmp_path / "bin" / "make"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "SHARD_COUNT=$SHARD_COUNT" "$@" > "$SLURM_SUBMIT_DIR/make-args"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "SLURM_SUBMIT_DIR": str(tmp_path),
           "SLURM_ARRAY_TASK_ID": "3", "CLASS": "my class.zip", "TIME_LIMIT": "20", "ENGINE": "otter"}
    env.pop("SHARD_COUNT", None)
    for unset in ("DEVICE", "MEMORY_LIMIT", "SUBMISSION_TIME_LIMIT", "ZIP_ENCODING", "SLURM_CPUS_PER_TASK"):
        env.pop(unset, None)
    done = subprocess.run(["bash", str(CLUSTER / "grade.sbatch")], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "make-args").read_text().splitlines() == [
        "SHARD_COUNT=4", "grade", "SUBMISSION=my class.zip", "OUT=out-3", "JOBS=2", "ENGINE=otter", "TIME_LIMIT=20"]


def manifest(name):
    return yaml.safe_load((CLUSTER / name).read_text())


def test_a_kubernetes_indexed_job_grades_slices_that_merge_to_one_run(cluster):
    project, data, env = cluster
    job, merge_job = manifest("grade-job.yaml"), manifest("merge-job.yaml")
    assert job["spec"]["completionMode"] == "Indexed"
    container = job["spec"]["template"]["spec"]["containers"][0]
    merge = merge_job["spec"]["template"]["spec"]["containers"][0]
    variables = {item["name"]: item["value"] for item in container["env"]}
    completions = job["spec"]["completions"]
    assert int(variables["SHARD_COUNT"]) == completions  # the manifest tells each pod how many slices there are
    assert {item["name"]: item["value"] for item in merge["env"]} == {"SHARD_COUNT": variables["SHARD_COUNT"]}
    volume = data / "k8s"
    volume.mkdir()
    (volume / "class").symlink_to(data / "class")

    def in_pod(command):  # the pod's paths, here: /kit is the kit copy, /data the shared volume
        return [re.sub(r"/data(/submissions\.zip)?", lambda found: str(volume / "class" if found[1] else volume), part)
                for part in command]

    assert container["workingDir"] == merge["workingDir"] == "/kit"
    for index in range(completions):  # what the Job controller does: one pod per index, its env set
        done = subprocess.run(in_pod(container["command"]), cwd=project, capture_output=True, text=True, timeout=600,
                              env={**env, **variables, "JOB_COMPLETION_INDEX": str(index)})
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"grading slice {index + 1}/{completions} of the class (Kubernetes completion index {index}" \
            in done.stderr
        assert (volume / f"out-{index + 1}" / "shard.json").is_file()
    done = subprocess.run(in_pod(merge["command"]), cwd=project, capture_output=True, text=True, timeout=600,
                          env={**env, **variables})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (volume / "out" / "grades.csv").read_text() == (data / "whole" / "grades.csv").read_text()


@pytest.mark.parametrize("conditions, merged", [("SuccessCriteriaMet Complete", True), ("FailureTarget Failed", False),
                                                ("", False)], ids=["complete", "failed", "still running"])
def test_the_kubernetes_script_stops_waiting_when_the_job_fails(tmp_path, conditions, merged):
    """cluster/k8s-grade.sh against a stand-in kubectl that reports the Job's conditions: it merges after a
    complete Job only, and returns at once when the Job has failed (not after its timeout)."""
    calls = tmp_path / "calls"
    kubectl = tmp_path / "bin" / "kubectl"
    kubectl.parent.mkdir()
    kubectl.write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\n'
                       f'case "$1" in get) echo "{conditions}" ;; logs) echo "merged 4 shard(s)" ;; esac\n')
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IXUSR)
    done = subprocess.run(["sh", str(CLUSTER / "k8s-grade.sh")], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{kubectl.parent}:{os.environ['PATH']}", "POLL": "1",
                               "TIMEOUT": "3" if not conditions else "3600"})
    said = calls.read_text()
    assert "apply -f grade-job.yaml" in said
    assert ("apply -f merge-job.yaml" in said) is merged and (done.returncode == 0) is merged, done.stderr
    if not merged:
        assert ("the Job failed" if conditions else "still running after 3s") in done.stderr


def test_an_explicit_shard_wins_over_the_scheduler(cluster, tmp_path):
    project, data, env = cluster
    done = subprocess.run(["make", "grade", f"SUBMISSION={data / 'class'}", f"OUT={tmp_path / 'out'}", "SHARD=1/5"],
                          cwd=project, capture_output=True, text=True, timeout=600,
                          env={**env, "JOB_COMPLETION_INDEX": "0", "SHARD_COUNT": "2"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "grading slice" not in done.stderr
    assert len(list((tmp_path / "out" / "results").glob("*.json"))) == 1
