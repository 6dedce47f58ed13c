"""dist/gradescope/autograder.zip: a Gradescope autograder that runs the kit's own grader.

This is the kit's one Gradescope path (docs/publishing.md); dist/otter's zip is for courses that
already use Otter, and its per-step results are uploaded `hidden` from students.

Unlike a stock Otter autograder, student code never runs in the process that
judges it: `run_autograder` calls `python -m grader grade`, which loads the
submission in sandboxed workers (own process group, memory and CPU caps,
per-step time limit, no pickles from the student) and judges in its own
process. The zip holds setup.sh, run_autograder, requirements.txt (Python 3.11,
the CPU torch wheel pinned), grader/, tests/public/ and tests/hidden/ (the hidden
oracle is tests/hidden/oracle.py: no solution file is shipped).

`AUTOGRADER_ROOT` (default /autograder) moves the whole layout (source/,
submission/, results/), so a test can run it end to end in a temporary folder;
`AUTOGRADER_PYTHON` overrides the interpreter setup.sh installs, `AUTOGRADER_TIME_LIMIT` the
seconds per step.
"""

import re
import stat
import zipfile
from pathlib import Path

from grader.build import shipping
from grader.build.shipping import ENGINE, INSTRUCTOR_ONLY, shipped_files
from grader.paths import ROOT

MINIFORGE_VERSION = "25.3.1-0"  # the Miniforge release Otter 7.0.0 installs on Gradescope too
PYTHON_VERSION = "3.11"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TIME_LIMIT = 10  # seconds per step
MEMORY_LIMIT = "512MiB"  # per step; Gradescope's default container has 768 MB in all

SETUP = f"""\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
# Python {PYTHON_VERSION} from Miniforge (the base image's Python varies), then the kit's pinned
# requirements with the CPU build of torch (the default wheel would pull CUDA: GBs, no GPU here).
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends wget ca-certificates
wget -nv "https://github.com/conda-forge/miniforge/releases/download/{MINIFORGE_VERSION}/Miniforge3-Linux-$(uname -m).sh" \\
    -O /tmp/miniforge.sh
bash /tmp/miniforge.sh -b -p /opt/miniforge
/opt/miniforge/bin/conda create -y -p /opt/kit-python python={PYTHON_VERSION}
/opt/kit-python/bin/python -m pip install --no-cache-dir -r "$ROOT/source/requirements.txt"
# Only the judge (root) may read the tests: the sandboxed workers run as other users.
chmod -R go-rwx "$ROOT/source/tests"
"""

RUN = f"""\
#!/usr/bin/env bash
# Gradescope runs this for every submission. It grades the student's file with the kit's own
# grader: sandboxed workers, {TIME_LIMIT} s and {MEMORY_LIMIT} per step, results.json in Gradescope's format.
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PYTHON="${{AUTOGRADER_PYTHON:-/opt/kit-python/bin/python}}"
TIME_LIMIT="${{AUTOGRADER_TIME_LIMIT:-{TIME_LIMIT}}}"  # seconds per step
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
rm -f "$RESULTS"  # an earlier run's results are never this submission's
# Student code runs as other users. Where the container allows no namespaces (the basic mode) it sees this
# machine's files: only root may read the kit, the submission, the metadata (earlier submissions' results)
# or the results (the grader gives other users back traverse-only access to the way to Python).
chmod go-rwx "$ROOT/source" "$ROOT/submission" "$ROOT/results" "$ROOT/submission_metadata.json" 2>/dev/null || true
chmod -R go-rwx "$ROOT/source/tests" 2>/dev/null || true

# The student's file: anywhere under submission/ (Gradescope keeps uploaded folders), chosen as `make grade`
# chooses among one student's files (grader.cohort.submissions.graded_first: never a file as handed out while
# another is there, then the exercise's name, a .py before a notebook, the shallowest). None: a zero with a reason.
# Several: the others are named to the student (NOTE), as `make grade` names them to the instructor.
NOTE=$(mktemp)
SUBMISSION=$("$PYTHON" - "$ROOT/submission" "$RESULTS" "$ROOT/source" "$NOTE" <<'PICK'
import json, sys
from pathlib import Path

folder, results = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from grader.cohort.submissions import graded_first, graded_first_note

files = [p for p in folder.rglob("*") if p.is_file() and p.suffix in (".py", ".ipynb") and not p.is_symlink()
         and not any(part.startswith((".", "__")) for part in p.relative_to(folder).parts)]
if files:
    print(graded_first(files, folder)[0])
    Path(sys.argv[4]).write_text(graded_first_note(files, folder) or "", encoding="utf-8")
else:
    found = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    message = ("No .py or .ipynb file was found in your submission"
               + (f" (found: {{', '.join(found[:10])}})" if found else "")
               + ". Upload attention.py or attention.ipynb.")
    results.write_text(json.dumps({{"score": 0, "output": message, "tests": []}}))
PICK
)
if [ -z "$SUBMISSION" ]; then  # no code (a zero with a reason, written above), or the picker itself failed
    rm -f "$NOTE"
    [ -s "$RESULTS" ] && exit 0
    echo '{{"score": 0, "output": "The autograder failed before grading; please tell your instructor.", "tests": []}}' \
        > "$RESULTS"
    exit 1
fi

cd "$ROOT/source"
WORK=$(mktemp -d)
"$PYTHON" -m grader grade "$SUBMISSION" --results "$RESULTS" --out "$WORK" \\
    --time-limit "$TIME_LIMIT" --memory-limit {MEMORY_LIMIT} --jobs 1 --device cpu
STATUS=$?
rm -rf "$WORK"
if [ ! -s "$RESULTS" ]; then
    echo '{{"score": 0, "output": "The autograder failed before grading; please tell your instructor.", "tests": []}}' \\
        > "$RESULTS"
elif [ -s "$NOTE" ]; then
    "$PYTHON" - "$RESULTS" "$NOTE" "$ROOT/source" <<'TOLD' || STATUS=1
import json, sys
from pathlib import Path

results, note = Path(sys.argv[1]), Path(sys.argv[2]).read_text(encoding="utf-8")
sys.path.insert(0, sys.argv[3])
from grader.feedback.page import md

data = json.loads(results.read_text(encoding="utf-8"))
data["output"] = f"**Note:** {{md(note)}}.\\n\\n" + (data.get("output") or "")
results.write_text(json.dumps(data), encoding="utf-8")
TOLD
fi
rm -f "$NOTE"
exit $STATUS
"""


def gradescope_requirements(text: str | None = None) -> str:
    """requirements.txt with torch pinned to its CPU wheel from the PyTorch index."""
    text = (ROOT / "requirements.txt").read_text() if text is None else text
    lines = ["# The kit's requirements.txt (exactly what grading imports), with torch's CPU wheel from the PyTorch "
             "index (no CUDA).",
             f"--extra-index-url {CPU_INDEX}"]
    for line in text.splitlines():
        match = re.fullmatch(r"torch==([\w.]+?)(\+cpu)?", line.strip())
        if match:
            lines.append(f"torch=={match.group(1)}+cpu")
        elif line.strip() and not line.lstrip().startswith("#"):
            lines.append(line.strip())
    if not any(line.startswith("torch==") for line in lines):
        raise ValueError("requirements.txt must pin torch")
    return "\n".join(lines) + "\n"


def zip_members() -> dict[str, tuple[str, bool]]:
    """{name in the zip: (text, executable)} for everything the autograder needs."""
    members = {"setup.sh": (SETUP, True), "run_autograder": (RUN, True),
               "requirements.txt": (gradescope_requirements(), False)}
    # what students are handed, for the picker to pass over an untouched copy (paths.STARTERS: starters/)
    release = ROOT / "student_template"
    members.update((f"starters/{path.name}", (path.read_text(encoding="utf-8"), False)) for path in
                   (release / "exercises" / "attention.py", release / "exercises" / "attention.ipynb",
                    release / "check.py"))
    tests = shipping.test_files()
    files = {**shipped_files(ENGINE, tests, leave_out=INSTRUCTOR_ONLY), **tests}
    members.update((name, (text, False)) for name, text in files.items())
    return members


def build(dist: str | Path) -> list[Path]:
    target = Path(dist) / "gradescope" / "autograder.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (text, executable) in zip_members().items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))  # same bytes on every build
            info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    return [target]
