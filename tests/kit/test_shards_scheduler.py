"""Shards from the scheduler: docs/cluster.md's Slurm array script and Kubernetes Indexed Job, run as the
schedulers would run them (each task's environment set, nothing else), merge to one run's grades.csv."""

import os
import re
import subprocess
import sys

import pytest
import yaml

from grader.classes.bulk import shard_from_environment
from grader.faults.samples import synthetic_class
from grader.paths import ROOT
from tests.kit.project import kit_project

COUNT = 5
DOC = ROOT / "docs" / "cluster.md"


def doc_block(language, after):
    """The first ```language block after the text `after` in docs/cluster.md."""
    text = DOC.read_text(encoding="utf-8")
    return re.search(rf"```{language}\n(.*?)```", text[text.index(after):], re.S).group(1)


def test_slurm_array_variables_give_the_slice():
    slurm = {"SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4"}
    assert [shard_from_environment({**slurm, "SLURM_ARRAY_TASK_ID": str(task)})[0] for task in (1, 2, 3, 4)] == \
        [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert shard_from_environment({"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "3"})[0] == (1, 3)
    stepped = {"SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "30", "SLURM_ARRAY_TASK_COUNT": "4"}
    assert [shard_from_environment({**stepped, "SLURM_ARRAY_TASK_ID": str(task)})[0][0] for task in (0, 10, 20, 30)] \
        == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="evenly spaced"):  # --array=1,4,9
        shard_from_environment({"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1",
                                "SLURM_ARRAY_TASK_MAX": "9", "SLURM_ARRAY_TASK_COUNT": "3"})


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


def test_a_slurm_array_grades_slices_that_merge_to_one_run(cluster):
    project, data, env = cluster
    script, merge = doc_block("bash", "`grade.sbatch`"), doc_block("bash", "`merge.sbatch`")
    low, high = map(int, re.search(r"#SBATCH --array=(\d+)-(\d+)\n", script).groups())
    (project / "grade.sbatch").write_text(script)
    (project / "merge.sbatch").write_text(merge)
    slurm = {**env, "SLURM_SUBMIT_DIR": str(project), "SLURM_ARRAY_JOB_ID": "77", "SLURM_CPUS_PER_TASK": "2",
             "SLURM_ARRAY_TASK_MIN": str(low), "SLURM_ARRAY_TASK_MAX": str(high),
             "SLURM_ARRAY_TASK_COUNT": str(high - low + 1), "CLASS": str(data / "class")}
    for task in range(low, high + 1):
        done = subprocess.run(["bash", "grade.sbatch"], cwd=project, env={**slurm, "SLURM_ARRAY_TASK_ID": str(task)},
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"grading slice {task - low + 1}/{high - low + 1} of the class (Slurm array task {task}" in done.stderr
    slices = [project / f"out-{task}" for task in range(low, high + 1)]
    graded = [len(list((folder / "results").glob("*.json"))) for folder in slices]
    assert sum(graded) == COUNT and max(graded) - min(graded) <= 1
    done = subprocess.run(["bash", "merge.sbatch"], cwd=project, env={**env, "SLURM_SUBMIT_DIR": str(project)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (project / "out" / "grades.csv").read_text() == (data / "whole" / "grades.csv").read_text()


def test_a_kubernetes_indexed_job_grades_slices_that_merge_to_one_run(cluster):
    project, data, env = cluster
    job = yaml.safe_load(doc_block("yaml", "`grade-job.yaml`"))
    merge_job = yaml.safe_load(doc_block("yaml", "`merge-job.yaml`"))
    assert job["spec"]["completionMode"] == "Indexed"
    container = job["spec"]["template"]["spec"]["containers"][0]
    variables = {item["name"]: item["value"] for item in container["env"]}
    completions = job["spec"]["completions"]
    assert int(variables["SHARD_COUNT"]) == completions  # the manifest tells each pod how many slices there are
    volume = data / "k8s"
    volume.mkdir()
    (volume / "class").symlink_to(data / "class")

    def in_pod(command):  # the pod's paths, here: /kit is the kit copy, /data the shared volume
        return [re.sub(r"/data(/submissions\.zip)?", lambda found: str(volume / "class" if found[1] else volume), part)
                for part in command]

    assert container["workingDir"] == "/kit"
    for index in range(completions):  # what the Job controller does: one pod per index, its env set
        done = subprocess.run(in_pod(container["command"]), cwd=project, capture_output=True, text=True, timeout=600,
                              env={**env, **variables, "JOB_COMPLETION_INDEX": str(index)})
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"grading slice {index + 1}/{completions} of the class (Kubernetes completion index {index}" in done.stderr
    merge = merge_job["spec"]["template"]["spec"]["containers"][0]
    done = subprocess.run(in_pod(merge["command"]), cwd=project, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (volume / "out" / "grades.csv").read_text() == (data / "whole" / "grades.csv").read_text()


def test_an_explicit_shard_wins_over_the_scheduler(cluster, tmp_path):
    project, data, env = cluster
    done = subprocess.run(["make", "grade", f"SUBMISSION={data / 'class'}", f"OUT={tmp_path / 'out'}", "SHARD=1/5"],
                          cwd=project, capture_output=True, text=True, timeout=600,
                          env={**env, "JOB_COMPLETION_INDEX": "0", "SHARD_COUNT": "2"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "grading slice" not in done.stderr
    assert len(list((tmp_path / "out" / "results").glob("*.json"))) == 1
