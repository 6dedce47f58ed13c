"""The cluster scripts pass what the instructor gave sbatch to make on its command line (make ignores knobs from
the environment on purpose, so an exported ROSTER would be dropped in silence: a merge without its LMS files
and without the overrides, exit 0)."""

import os
import subprocess

from grader.paths import ROOT


def test_merge_sbatch_passes_the_roster_and_the_overrides_to_make(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "make").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$SLURM_SUBMIT_DIR/make-args"\n')
    (fake / "make").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "SLURM_SUBMIT_DIR": str(tmp_path),
           "SHARD_COUNT": "2", "ROSTER": "class roster.csv", "OVERRIDES": "overrides.csv"}
    done = subprocess.run(["bash", str(ROOT / "cluster" / "merge.sbatch")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "make-args").read_text().splitlines()
    assert args == ["merge", "SHARDS=out-1 out-2", "OUT=out", "ROSTER=class roster.csv", "OVERRIDES=overrides.csv"]
    del env["ROSTER"], env["OVERRIDES"]
    subprocess.run(["bash", str(ROOT / "cluster" / "merge.sbatch")], env=env, check=True, timeout=60)
    assert (tmp_path / "make-args").read_text().splitlines() == ["merge", "SHARDS=out-1 out-2", "OUT=out"]
