"""The course's nbgrader collector (grader/integrations/nbgrader_plugins.py, copied into the course as
kit_nbgrader.py): which file of an LMS download is whose, and which copy is collected. The real nbgrader
plugin class, called as `nbgrader zip_collect` calls it (one file at a time)."""

import pytest

from grader.integrations.nbgrader_plugins import KitCollector


def collected(folder):
    """{file name: what the collector returns for it} over every file of `folder` (nested one level)."""
    collector = KitCollector()
    return {str(path.relative_to(folder)): collector.collect(str(path)) for path in sorted(folder.rglob("*"))
            if path.is_file()}


@pytest.mark.parametrize("files, kept", [
    (["alice_123_901_attention.ipynb", "alice_123_903_attention-1.ipynb"], "alice_123_903_attention-1.ipynb"),
    (["alice_123_905_attention.ipynb", "alice_123_903_attention-1.ipynb"], "alice_123_905_attention.ipynb"),
    (["alicelate_123_901_attention-2.ipynb", "alicelate_123_901_attention-1.ipynb"],
     "alicelate_123_901_attention-2.ipynb"),
    # A blind tester: after -7 Canvas appends a uuid; the older -7 was graded (85 for a correct 100), and a lone
    # uuid copy was collected under another notebook name (nbgrader found none: 0 in every step).
    (["bob_124_1300_attention-7.ipynb", "bob_124_1400_attention-3fa85f64-5717-4562-b3fc-2c963f66afa6.ipynb"],
     "bob_124_1400_attention-3fa85f64-5717-4562-b3fc-2c963f66afa6.ipynb"),
    (["bob_124_1400_attention-3fa85f64-5717-4562-b3fc-2c963f66afa6.ipynb"],
     "bob_124_1400_attention-3fa85f64-5717-4562-b3fc-2c963f66afa6.ipynb"),
], ids=["canvas copy uploaded later", "canvas file id decides over the copy mark", "same upload, higher copy",
        "canvas uuid copy after -7", "a lone canvas uuid copy"])
def test_a_canvas_download_with_two_copies_collects_the_latest_only(tmp_path, files, kept):
    """Before: both copies were collected as attention.ipynb of student 123, and nbgrader stopped with
    "Duplicate submission file. No timestamps for comparison" (or, in the other order, nothing said which
    was graded). Now the latest upload (highest Canvas file id, then copy number) is collected, the other skipped."""
    for name in files:
        (tmp_path / name).write_text("{}")
    found = collected(tmp_path)
    assert found.pop(kept) == {"student_id": kept.split("_")[1], "file_id": "attention.ipynb"}
    assert set(found.values()) <= {None}


def test_a_student_folder_with_a_renamed_copy_collects_the_copy_and_other_students_are_untouched(tmp_path):
    extracted = tmp_path / "extracted"  # where nbgrader zip_collect unpacks the download
    for name in ("s1/attention.ipynb", "s1/attention-1.ipynb", "s2/attention.ipynb", "s3/attention-1.ipynb",
                 "s3/notes.ipynb", "loose.ipynb", "s4/attention-7.ipynb",
                 "s4/attention-3fa85f64-5717-4562-b3fc-2c963f66afa6.ipynb"):
        (extracted / name).parent.mkdir(parents=True, exist_ok=True)
        (extracted / name).write_text("{}")
    assert collected(extracted) == {
        "loose.ipynb": None,  # in no student's folder: whose it is, nothing says
        "s1/attention-1.ipynb": {"student_id": "s1", "file_id": "attention.ipynb"},
        "s1/attention.ipynb": None,
        "s2/attention.ipynb": {"student_id": "s2", "file_id": "attention.ipynb"},
        "s3/attention-1.ipynb": {"student_id": "s3", "file_id": "attention.ipynb"},
        "s3/notes.ipynb": {"student_id": "s3", "file_id": "notes.ipynb"},
        "s4/attention-7.ipynb": None,
        "s4/attention-3fa85f64-5717-4562-b3fc-2c963f66afa6.ipynb": {"student_id": "s4", "file_id": "attention.ipynb"},
    }


def test_a_notebook_under_another_name_is_collected_as_the_assignments(tmp_path, caplog):
    """Blind gradebook review (round 4): `attention (1).ipynb`, `Attention.ipynb`, `Attention_Lee.ipynb` were
    collected under their own names, and autograde said "No notebooks found" for those students (their export row:
    submitted, no score); a .py upload was skipped with nbgrader's "no match information provided". The course's
    config names the assignment's notebook (KitCollector.notebook): every student's latest notebook is collected
    under it, and a .py is skipped with a line saying how to grade it."""
    for name in ("doejane_5000_811_attention (1).ipynb", "mullerjurgen_5002_813_Attention.ipynb",
                 "leeana_5003_830_Attention_Lee.ipynb", "leeana_5003_820_notes.ipynb", "smithjohn_5001_812_attention.py",
                 "s9/attention.ipynb", "s9/scratch.ipynb"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    collector = KitCollector(notebook="attention.ipynb")
    with caplog.at_level("WARNING"):
        found = {str(path.relative_to(tmp_path)): collector.collect(str(path)) for path in sorted(tmp_path.rglob("*"))
                 if path.is_file()}
    assert found == {
        "doejane_5000_811_attention (1).ipynb": {"student_id": "5000", "file_id": "attention.ipynb"},
        "mullerjurgen_5002_813_Attention.ipynb": {"student_id": "5002", "file_id": "attention.ipynb"},
        "leeana_5003_830_Attention_Lee.ipynb": {"student_id": "5003", "file_id": "attention.ipynb"},
        "leeana_5003_820_notes.ipynb": None,  # an earlier upload of the same student
        "smithjohn_5001_812_attention.py": None,
        "s9/attention.ipynb": {"student_id": "s9", "file_id": "attention.ipynb"},
        "s9/scratch.ipynb": None,  # the assignment's own name first, in one student's folder
    }
    assert any("a .py file, and nbgrader grades the notebook" in message for message in caplog.messages)
