"""Bad input: every broken file gets a clear message naming it and its problem, zero for what
cannot run, and the rest of the class is graded as if it were not there.

Most checks read the outputs of two real command-line runs: one over a folder of
bad submissions, one over a zip of hazards, each with good submissions beside them.
"""

import json
import os
import stat
import struct
import subprocess
import sys
import time
import tracemalloc
import uuid
import zipfile
from pathlib import Path

import pytest
import torch

from grader.cohort import submissions
from grader.check import wire
from grader.check.loader import SubmissionError, read_chunks
from grader.check.session import Session
from grader.check.student import StudentError, in_process
from grader.cohort.submissions import collect
from grader.feedback import report
from grader.paths import ROOT
from grader.check.testing import expect_tensor
from grader.chapter import TOTAL_POINTS

TEN_MB = 10 * 1024 * 1024


def at_start_of(source, function, code):
    start = source.index(f"def {function}(")
    indent = " " * (start - source.rfind("\n", 0, start) - 1 + 4)
    body = source.index(":\n", start) + 2
    return source[:body] + "".join(f"{indent}{line}\n" for line in code.splitlines()) + source[body:]


def notebook_text(kernel_language, cells=()):
    return json.dumps({"cells": [{"cell_type": "code", "source": cell, "metadata": {}, "outputs": []}
                                 for cell in cells],
                       "metadata": {"kernelspec": {"name": kernel_language, "language": kernel_language}},
                       "nbformat": 4, "nbformat_minor": 5})


def run_cli(path, out, cwd):
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(path), "--out", str(out)],
                          cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return done, time.monotonic() - started


class ClassRun:
    def __init__(self, out, done, seconds):
        self.out, self.done, self.seconds = out, done, seconds
        self.grades = {row.split(",")[0]: row.split(",")[1:]
                       for row in (out / "grades.csv").read_text().splitlines()[1:]} if done.returncode == 0 else {}

    def results(self, name):
        return json.loads((self.out / "results" / f"{name}.json").read_text())

    def outputs(self, name, step=None):
        return [t["output"] for t in self.results(name)["tests"] if step is None or t["name"].startswith(step + ":")]

    def step_scores(self, name):
        return self.results(name)["extra_data"]["steps"]


# --------------------------------------------------------------------------- a folder of bad files

def folder_of_bad_submissions(folder, clean, solution_notebook):
    nan = at_start_of(clean, "causal_attention_weights", "return torch.full_like(scores, float('nan'))")
    nan = at_start_of(nan, "dot_product_variance", "return float('nan'), float('nan')")
    wrong_type = at_start_of(clean, "attention_scores", "return (queries @ keys.transpose(-2, -1)).tolist()")
    wrong_type = at_start_of(wrong_type, "causal_mask",
                             "return torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), "
                             "diagonal=1).numpy()")
    meta = at_start_of(clean, "attention_scores", "return (queries @ keys.transpose(-2, -1)).to('meta')")
    files = {
        "good.py": clean,
        "empty.py": b"",
        "junk.py": bytes(range(256)) * 8,
        "latin1.py": ("# caf\u00e9\n" + clean).encode("latin-1"),
        "utf16.py": clean.encode("utf-16"),  # with a BOM: Windows Notepad's "Unicode", PowerShell 5's `>`
        "utf16le.py": ("# caf\u00e9\n" + clean).encode("utf-16-le"),
        "nbpy.py": solution_notebook,  # a notebook saved (or renamed) as .py
        "pyipynb.ipynb": clean,  # a .py saved (or renamed) as .ipynb
        "syntax.py": clean.replace("def causal_mask(context_length):", "def causal_mask(context_length)"),
        "broken.ipynb": "{not json",
        "julia.ipynb": notebook_text("julia", ["println(1)"]),
        "deep.ipynb": "[" * 100_000 + "]" * 100_000,
        "odd_metadata.ipynb": json.dumps({"cells": [], "metadata": {"kernelspec": "python3"}}),
        "huge.py": clean + "\n# " + "x" * TEN_MB + "\n",
        "nan.py": nan,
        "wrong_type.py": wrong_type,
        "meta.py": meta,
        "alice.py": clean,
        "alice.ipynb": solution_notebook,
        "alice smith/attention.py": clean,
        "alice_smith/attention.py": clean.replace("return torch.softmax(scores / d_k**0.5, dim=-1)",
                                                  "return torch.softmax(scores, dim=-1)"),
    }
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder


@pytest.fixture(scope="module")
def folder_run(tmp_path_factory, clean, solution_notebook):
    root = tmp_path_factory.mktemp("bad_folder")
    folder = folder_of_bad_submissions(root / "class", clean, solution_notebook)
    done, seconds = run_cli(folder, root / "out", root)
    assert done.returncode == 0, done.stderr[-3000:]
    return ClassRun(root / "out", done, seconds)


def test_the_good_submission_keeps_full_marks(folder_run):
    assert folder_run.results("good")["score"] == TOTAL_POINTS
    assert float(folder_run.grades["good"][-1]) == TOTAL_POINTS


def test_every_submission_has_a_results_file_and_a_row(folder_run):
    names = {"good", "empty", "junk", "latin1", "utf16", "utf16le", "nbpy", "pyipynb", "syntax", "broken", "julia", "deep",
             "odd_metadata", "huge", "nan", "wrong_type", "meta", "alice", "alice_smith",
             "alice_smith-2"}
    assert set(folder_run.grades) == names
    assert {path.stem for path in (folder_run.out / "results").glob("*.json")} >= names


@pytest.mark.parametrize("name, file, words", [
    ("empty", "empty.py", "is empty"),
    ("junk", "junk.py", "binary data"),
    ("latin1", "latin1.py", "not UTF-8"),
    ("utf16", "utf16.py", "is UTF-16 text, which neither Python nor Jupyter reads; save it with UTF-8 encoding"),
    ("utf16le", "utf16le.py", "is UTF-16 text"),
    ("broken", "broken.ipynb", "not a valid notebook"),
    ("julia", "julia.ipynb", "'julia' kernel"),
    ("deep", "deep.ipynb", "not a valid notebook"),
    ("huge", "huge.py", "10.5 MB"),
], ids=["empty file", "binary junk", "not utf-8", "utf-16", "utf-16 without bom", "notebook not json", "unknown kernel",
        "notebook nested too deeply", "10 MB source"])
def test_a_file_that_cannot_run_gets_zero_and_says_why(folder_run, name, file, words):
    data = folder_run.results(name)
    assert data["score"] == 0
    assert file in data["output"] and words in data["output"], data["output"]
    assert all(file in test["output"] and words in test["output"] for test in data["tests"])


def test_a_notebook_saved_as_py_is_graded_as_the_notebook_it_is(folder_run):
    """Before: its JSON was read as Python: every check said `init_qkv_weights is not defined`, and the report
    did not list it among the files not graded at all. Now: graded cell by cell as the notebook it is, with a
    note that says so and costs nothing (issue 25)."""
    data = folder_run.results("nbpy")
    assert data["score"] == TOTAL_POINTS, data["output"][:2000]
    assert "nbpy.py: this .py holds a Jupyter notebook (its JSON), so it was read as the notebook it is" \
        in data["output"]
    submission = next(each for each in report.load(folder_run.out)[0] if each.name == "nbpy")
    assert not report.load_errors(submission)  # the note costs nothing: the report counts no code that did not load


def test_a_py_saved_as_ipynb_is_graded_as_the_python_it_is(folder_run):
    """Before: "pyipynb.ipynb is not a valid notebook (JSON error at line 1 ...)": 0 for a correct solution
    saved under a notebook's name. Now: graded as the .py it is, with a note that says so and costs nothing."""
    data = folder_run.results("pyipynb")
    assert data["score"] == TOTAL_POINTS, data["output"][:2000]
    assert "pyipynb.ipynb: this .ipynb holds Python source, not a notebook, so it was read as the .py file it is" \
        in data["output"]
    submission = next(each for each in report.load(folder_run.out)[0] if each.name == "pyipynb")
    assert not report.load_errors(submission)


@pytest.mark.parametrize("content", [b"\xff\xfe" + "x = 1\n".encode("utf-16-le"),
                                     b"\xfe\xff" + "x = 1\n".encode("utf-16-be"),
                                     "# caf\u00e9\nx = 1\n".encode("utf-16-le"),
                                     "x = 1\ny = '\u65e5\u672c'\n".encode("utf-16-be"),
                                     "x = 1\n".encode("utf-32")],
                         ids=["utf-16-le bom", "utf-16-be bom", "utf-16-le", "utf-16-be", "utf-32"])
def test_utf16_text_is_named_not_called_binary(tmp_path, content):
    """Before: `not a text file (it contains binary data)` for what Notepad or PowerShell saved as UTF-16.
    Now: the encoding is named, with what to do, as for Latin-1 text (Python refuses UTF-16 source; issue 25)."""
    path = tmp_path / "attention.py"
    path.write_bytes(content)
    with pytest.raises(SubmissionError, match=r"attention\.py is UTF-(16|32) text, .*save it with UTF-8 encoding"):
        read_chunks(path)


@pytest.mark.parametrize("content", [bytes(range(256)) * 8, b"x\x00\x01\x00y\x00\n\x00" * 8, b"x = 1\n\x00\x00"],
                         ids=["bytes", "nul every other byte over control characters", "odd nuls"])
def test_binary_data_is_still_called_binary(tmp_path, content):
    path = tmp_path / "attention.py"
    path.write_bytes(content)
    with pytest.raises(SubmissionError, match="binary data"):
        read_chunks(path)


def test_python_that_looks_like_json_is_read_as_python(tmp_path):
    path = tmp_path / "attention.py"
    path.write_text('{"cells": 1}\nx = 1\n')  # not one JSON value: Python
    assert [chunk.source for chunk in read_chunks(path)] == ['{"cells": 1}\nx = 1\n']


def test_notebook_metadata_of_the_wrong_shape_is_read_as_python(folder_run):
    # kernelspec written as a string: no crash, and the notebook (with no code) is graded as empty.
    data = folder_run.results("odd_metadata")
    assert "kernel" not in data["output"] and "not a valid notebook" not in data["output"]
    assert all("is not defined" in test["output"] for test in data["tests"] if test["score"] == 0)


def test_a_syntax_error_costs_only_the_block_around_it(folder_run, maxima):
    data = folder_run.results("syntax")
    assert "syntax.py, line" in data["output"] and "SyntaxError" in data["output"]
    steps = folder_run.step_scores("syntax")
    assert steps["masking"] < maxima["masking"] and steps["multihead_attention"] == maxima["multihead_attention"]


def test_a_ten_megabyte_file_costs_neither_time_nor_memory(tmp_path):
    path = tmp_path / "huge.py"
    path.write_text("# " + "x" * TEN_MB + "\n")
    tracemalloc.start()
    try:
        with pytest.raises(SubmissionError, match="huge.py is 10.5 MB"):
            read_chunks(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"reading a file that is too large allocated {peak / 1e6:.1f} MB"
    sparse = tmp_path / "sparse.py"  # 64 GB that take no disk: must be refused without reading
    with open(sparse, "wb") as stream:
        stream.truncate(64 << 30)
    started = time.monotonic()
    with pytest.raises(SubmissionError, match="sparse.py is"):
        read_chunks(sparse)
    assert time.monotonic() - started < 1


def notebook_of(*cells):
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                       "cells": [{"cell_type": "code", "source": cell, "metadata": {}, "outputs": [],
                                  "execution_count": None} for cell in cells]})


def test_crafted_cells_cost_the_judge_little(tmp_path):
    """The judge reads notebooks itself (before any worker, and for the integrity report): thousands of
    stacked cell magics or of continued `!` lines must be read in linear work, without recursion."""
    stacked = tmp_path / "stacked.ipynb"
    stacked.write_text(notebook_of("%%time\n" * 3000 + "x = 1\n", "%%time\n%%capture\ny = 2\n"))
    cells = read_chunks(stacked)
    assert cells[0].source.strip() == "" and "more than 4 cell magics" in " ".join(cells[0].notes)
    assert cells[1].source.strip() == "y = 2"  # two stacked magics are real notebooks: loaded
    continued = tmp_path / "continued.ipynb"
    continued.write_text(notebook_of("!echo \\\n" + "a \\\n" * 40000 + "b\n", "z = 3\n"))
    cells = read_chunks(continued)  # (quadratic before: about 15 s for these 40,000 lines)
    assert "get_ipython().system(" in cells[0].source and cells[0].source.count("\n") == 40002
    assert cells[1].source.strip() == "z = 3"


def test_nan_outputs_fail_their_checks_with_a_message(folder_run, maxima):
    masking = folder_run.outputs("nan", "masking")
    assert any("NaN" in output for output in masking), masking
    assert any("nan" in output for output in folder_run.outputs("nan", "scaling"))
    steps = folder_run.step_scores("nan")
    assert steps["masking"] < maxima["masking"] and steps["scaling"] < maxima["scaling"]
    assert all(steps[key] == maxima[key] for key in ("projection", "dropout", "causal_attention"))


def test_outputs_of_the_wrong_type_are_named(folder_run, maxima):
    assert any("list" in output and "torch.Tensor" in output for output in folder_run.outputs("wrong_type", "scaling"))
    assert any("numpy" in output and "torch.from_numpy" in output
               for output in folder_run.outputs("wrong_type", "masking"))
    steps = folder_run.step_scores("wrong_type")
    assert all(steps[key] == maxima[key] for key in ("projection", "dropout", "causal_attention",
                                                     "multihead_attention"))


def test_a_tensor_on_the_meta_device_gets_a_clear_message(folder_run, maxima):
    outputs = folder_run.outputs("meta", "scaling")
    assert any("returned a tensor on the 'meta' device" in output for output in outputs), outputs
    assert not any("not implemented" in output for output in outputs)
    steps = folder_run.step_scores("meta")
    assert steps["scaling"] < maxima["scaling"]
    assert all(steps[key] == maxima[key] for key in ("projection", "masking", "dropout", "multihead_attention"))


def test_two_submissions_with_the_same_name_keep_their_own_results(folder_run):
    # alice.py beside alice.ipynb in a folder of one file per student: one student's, graded as their own folder
    # would be (a .py before a notebook) and said (blind gradebook review, round 7: both were graded, as two
    # students, and the LMS files took the better)
    assert folder_run.results("alice")["score"] == TOTAL_POINTS
    assert "alice: several code files; graded alice.py (a .py before a notebook), not alice.ipynb" in \
        folder_run.done.stderr
    # "alice smith/" (clean) and "alice_smith/" (a scaling bug) normalise to one safe name: the folder spelt so
    # keeps it, whichever sorts first.
    assert folder_run.results("alice_smith")["score"] < TOTAL_POINTS
    assert folder_run.results("alice_smith-2")["score"] == TOTAL_POINTS
    assert "graded as 'alice_smith-2'" in folder_run.done.stderr


def test_the_bad_folder_is_graded_promptly(folder_run):
    assert folder_run.seconds < 120, f"{folder_run.seconds:.0f} s for 20 submissions"


# --------------------------------------------------------------------------- outputs on the wrong device

def test_the_wire_keeps_the_device_a_tensor_came_from():
    for device in ("cuda:0", "meta"):
        data = {"$tensor": {"dtype": "float32", "shape": [2], "data": "AAAAAAAAgD8=", "device": device}}
        tensor = wire.decode(data)
        assert tensor.device.type == "cpu" and tensor.tolist() == [0.0, 1.0]
        assert tensor.wire_device == device
        with pytest.raises(AssertionError, match=f"is on {device}, but the input was on cpu"):
            expect_tensor(tensor, "the output", device="cpu")
    forged = wire.decode({"$tensor": {"dtype": "float32", "shape": [2], "data": "AAAAAAAAgD8=", "device": "\U0001f4a3"}})
    assert forged.wire_device == "unknown"


def test_a_meta_tensor_is_an_answer_not_a_crash(tmp_path):
    path = tmp_path / "attention.py"
    path.write_text("import torch\n\n\ndef causal_mask(n):\n    return torch.ones(n, n, device='meta')\n")
    student, _ = in_process(path)
    with pytest.raises(StudentError, match="causal_mask.*returned a tensor on the 'meta' device"):
        student.call("causal_mask", 3)
    answer = Session(student.transport.session.module).handle({"op": "call", "name": "causal_mask", "args": [3]})
    assert answer["ok"] is False and answer["error"]["returned"] is True and not answer["error"]["not_implemented"]


# --------------------------------------------------------------------------- a zip of hazards

def lie_about_size(archive, member, claimed):
    """Rewrite `member`'s uncompressed size in both zip headers: the data unpacks larger than claimed."""
    raw = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zipped:
        offset = zipped.getinfo(member).header_offset
    struct.pack_into("<I", raw, offset + 22, claimed)
    central = raw.find(b"PK\x01\x02")
    while central != -1:
        length = struct.unpack_from("<H", raw, central + 28)[0]
        if bytes(raw[central + 46:central + 46 + length]) == member.encode():
            struct.pack_into("<I", raw, central + 24, claimed)
        central = raw.find(b"PK\x01\x02", central + 4)
    archive.write_bytes(bytes(raw))


def zip_of_hazards(archive, clean, escape_name):
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("good.py", clean)
        zipped.writestr("bob/attention.py", clean)
        zipped.writestr(f"../{escape_name}", clean)
        zipped.writestr(f"/tmp/{escape_name}", clean)
        link = zipfile.ZipInfo("link.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zipped.writestr(link, "/etc/passwd")
        zipped.writestr("bomb.py", b"#" * (50 << 20))  # 50 MB of one byte: a ratio of about 1000
        zipped.writestr("liar.py", b"#" * (3 << 20))
        zipped.writestr("carol.zip", b"PK\x05\x06" + b"\0" * 18)
        zipped.writestr("dave", "a file")
        zipped.writestr("dave/attention.py", clean)  # cannot be a folder too
    lie_about_size(archive, "liar.py", 1000)
    return archive


@pytest.fixture(scope="module")
def zip_run(tmp_path_factory, clean):
    root = tmp_path_factory.mktemp("bad_zip")
    escape_name = f"escape_{uuid.uuid4().hex}.py"
    archive = zip_of_hazards(root / "class.zip", clean, escape_name)
    done, seconds = run_cli(archive, root / "out", root)
    assert done.returncode == 0, done.stderr[-3000:]
    run = ClassRun(root / "out", done, seconds)
    run.escape_name = escape_name
    run.archive = archive
    return run


def test_the_good_submissions_in_a_hazardous_zip_keep_full_marks(zip_run):
    assert set(zip_run.grades) >= {"good", "bob"}
    assert zip_run.results("good")["score"] == TOTAL_POINTS and zip_run.results("bob")["score"] == TOTAL_POINTS


def test_zip_paths_outside_the_folder_are_skipped(zip_run):
    for place in (zip_run.archive.parent, zip_run.archive.parent.parent, Path("/tmp"), ROOT):
        assert not (place / zip_run.escape_name).exists(), place
    assert f"skipped '../{zip_run.escape_name}' (unsafe path or link)" in zip_run.done.stderr
    assert f"skipped '/tmp/{zip_run.escape_name}' (unsafe path or link)" in zip_run.done.stderr
    assert "skipped 'link.py' (unsafe path or link)" in zip_run.done.stderr


def test_a_zip_bomb_is_not_unpacked(zip_run):
    assert "class.zip: skipped 'bomb.py' (too large once unpacked)" in zip_run.done.stderr
    # Headers can lie: a member is measured as it unpacks, and a corrupt one costs only itself.
    assert "class.zip: skipped 'liar.py'" in zip_run.done.stderr


def test_a_nested_zip_is_named(zip_run):
    assert "class.zip: skipped nested archive 'carol.zip'" in zip_run.done.stderr


def test_a_member_that_cannot_be_written_costs_only_itself(zip_run):
    assert "class.zip: skipped 'dave/attention.py' (cannot be written" in zip_run.done.stderr


def test_students_whose_only_file_cannot_be_unpacked_are_listed(tmp_path, clean):
    archive = zip_of_hazards(tmp_path / "class.zip", clean, f"escape_{uuid.uuid4().hex}.py")
    collected = collect(archive)
    try:
        rejected = dict(collected.rejected)
        assert sorted(rejected) == ["bomb", "carol", "dave", "liar"]
        assert "bomb.py unpacks to 52.4 MB" in rejected["bomb"]
        assert "zip inside the zip" in rejected["carol"]
        assert sorted(name for name, _ in collected.submissions) == ["bob", "good"]
    finally:
        collected.cleanup()


def test_students_whose_only_file_cannot_be_unpacked_get_a_zero_row(zip_run):
    for name in ("bomb", "carol", "dave", "liar"):
        assert zip_run.grades[name][-1] == "0"
        assert zip_run.results(name)["score"] == 0


def test_a_zip_is_bounded_in_total_size(tmp_path, monkeypatch):
    monkeypatch.setattr(submissions, "MAX_ZIP_TOTAL", 1 << 20)
    archive = tmp_path / "big.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zipped:
        for name in ("a.py", "b.py", "c.py"):
            zipped.writestr(name, os.urandom(600_000))  # incompressible: no ratio alarm
    collected = collect(archive)
    try:
        assert [name for name, _ in collected.submissions] == ["a"]
        assert any("b.py" in problem for problem in collected.problems), collected.problems
        assert any("c.py" in problem for problem in collected.problems), collected.problems
        unpacked = sum(path.stat().st_size for _, path in collected.submissions)
        assert unpacked <= 1 << 20
    finally:
        collected.cleanup()


def test_the_answer_a_forged_worker_sends_cannot_crash_the_judge():
    """A worker whose json module the student patched can send anything; the judge gets a
    ValueError (a verdict), never a crash, and no string it cannot write to a UTF-8 file."""
    def frame(header, blobs=b""):
        return struct.pack(">I", len(header)) + header + blobs

    for raw in (frame(b"[" * 100_000 + b"]" * 100_000), frame(b'{"x": ' + b"1" * 5000 + b"}"), frame(b"\xff\xfe"),
                frame(b"NaN"), b"", b"\x00\x00", b"\xff\xff\xff\xff{}", frame(b'{"$blob": [0, 9]}', b"1234"),
                frame(b'{"$blob": [-1, 1]}', b"1234"), frame(b'{"$blob": "0"}'), frame(b'{"$blob": [0, 1], "x": 1}', b"1")):
        try:
            wire.loads(raw)
        except ValueError:
            pass
    assert wire.loads(frame(b'{"v": {"$blob": [1, 2]}}', b"1234")) == {"v": b"23"}
    message = wire.loads(frame(b'{"ok": false, "error": {"type": "E", "message": "bad \\ud800 text"}}'))
    json.dumps(message, ensure_ascii=False).encode("utf-8")
    with pytest.raises(ValueError):
        wire.decode({"$tensor": {"dtype": "float32", "shape": [10 ** 12], "data": ""}})
    with pytest.raises(ValueError):
        wire.decode({"$dict": 5})
    assert isinstance(wire.decode({"$tensor": {"dtype": "float32", "shape": [1], "data": "AAAAAA=="}}), torch.Tensor)


# -- the instructor's own test files ------------------------------------------------------------------------
@pytest.mark.parametrize("folder, text, words", [
    ("hidden", "def check_it(:\n", "SyntaxError"),
    ("hidden", "import math\n\nraise RuntimeError('a fixture it could not build')\n", "line 3"),
    ("public", "from .oracle import nothing_there\n", "No module named 'public.oracle'"),
])
def test_a_test_file_that_cannot_be_imported_is_named_with_its_line(tmp_path, folder, text, words):
    """Grading and publishing stop on one line naming the instructor's broken test file, not a traceback."""
    from grader.check.suite import discover
    from grader.errors import UsageError
    (tmp_path / folder).mkdir()
    broken = tmp_path / folder / "test_broken.py"
    broken.write_text(text)
    with pytest.raises(UsageError) as raised:
        discover(tmp_path)
    assert str(broken) in str(raised.value) and words in str(raised.value), raised.value
    assert "mend it" in str(raised.value) and "kit_tests" not in str(raised.value)
