"""Grading moves the public checks' inputs for each submission (grader.check.public_inputs), so that a table of
the shipped public answers earns nothing (red team 2, attack 02: 38 points of 100 with no implementation).

The attack is played at the protocol level, where every table must work: the clean solution's answers to every
request of the public checks, recorded on the shipped inputs, are replayed to the checks; a request not in the
table is answered as a submission without that code would answer it. On the shipped inputs the table passes every
public check (the attack is real); with a grading shift it passes only the chapter's printouts (`book=True`), whose
values are printed in the chapter anyway.
"""

import pytest

from grader.check import public_inputs, wire
from grader.check.runner import MOVED_NOTE, run_test
from grader.check.student import InProcessTransport, Student, in_process
from grader.check.suite import discover, hidden_secret
from grader.feedback import page
from grader.judging.judge import Options, grade_submission

PUBLIC = [test for test in discover(kinds=("public",))]
SHIFTS = (1, 977, 65_537, public_inputs.SHIFT_RANGE - 1)


class Recording(InProcessTransport):
    """The solution's own answers, each kept with the request that asked it (as sent, bytes and all)."""

    def __init__(self, transport, table):
        super().__init__(transport.session)
        self.table = table

    def send(self, request):
        answer = super().send(request)
        self.table.setdefault(wire.dumps(request), []).append(answer)
        return answer


class Replaying:
    """A submission that answers from the table, a request's answers in the order they were recorded (a second
    dropout call gets the second mask); any other request finds no code behind it."""

    def __init__(self, table):
        self.table = {key: list(answers) for key, answers in table.items()}

    def send(self, request):
        known = self.table.get(wire.dumps(request))
        if known:
            return known.pop(0) if len(known) > 1 else known[0]
        return {"ok": False, "error": {"type": "NotImplementedError", "message": "not in the table",
                                       "not_implemented": True}}


@pytest.fixture(scope="module")
def solution_file(tmp_path_factory, clean):
    path = tmp_path_factory.mktemp("solution") / "attention.py"
    path.write_text(clean)
    return path


@pytest.fixture(scope="module")
def table(solution_file):
    tables = {}
    for test in PUBLIC:  # each check on a fresh process, as it is replayed
        student, _ = in_process(solution_file)
        tables[test.name] = {}
        assert run_test(test, Student(Recording(student.transport, tables[test.name]))) == (True, ""), test.name
    return tables


def replayed(table, shift):
    return {test.name: run_test(test, Student(Replaying(table[test.name]), public_shift=shift))[0] for test in PUBLIC}


def test_a_table_of_the_shipped_answers_passes_every_public_check_on_the_shipped_inputs(table):
    assert all(replayed(table, 0).values())


@pytest.mark.parametrize("shift", SHIFTS)
def test_with_a_grading_shift_the_table_passes_only_the_chapters_printouts(table, shift):
    passed = replayed(table, shift)
    assert {name for name, ok in passed.items() if ok} == {test.name for test in PUBLIC if test.book}
    assert sum(test.moved for test in PUBLIC) >= 20  # most public checks are moved


@pytest.mark.parametrize("shift", SHIFTS)
def test_the_solution_passes_every_public_check_whatever_the_shift(solution_file, shift):
    student, _ = in_process(solution_file)
    student.public_shift = shift
    failed = [(test.name, message) for test in PUBLIC for ok, message in [run_test(test, student)] if not ok]
    assert failed == []


def test_the_shift_is_the_files_own_and_unknowable_without_the_hidden_tests():
    suite = discover()
    secret = hidden_secret(suite)
    assert secret and hidden_secret(discover(kinds=("public",))) == b""
    one = b"def project(x):\n    return x\n"
    assert public_inputs.shift_for(one, secret) == public_inputs.shift_for(one, secret) != 0
    assert public_inputs.shift_for(one, b"") == 0  # the student's own run: the shipped inputs
    resubmitted = [one + b"# %d\n" % i for i in range(640)]
    shifts = [public_inputs.shift_for(file, secret) for file in resubmitted]
    assert len(set(shifts)) == public_inputs.SHIFTS  # one of SHIFTS numbers, each about as likely
    assert max(map(shifts.count, set(shifts))) < 4 * len(shifts) / public_inputs.SHIFTS
    assert sum(a == b for a, b in zip(shifts, shifts[1:])) < 3 * len(shifts) / public_inputs.SHIFTS
    other_secret = {public_inputs.shift_for(file, secret + b"#") for file in resubmitted}
    assert not other_secret & set(shifts)  # the numbers themselves come from the hidden tests' bytes


def test_grading_the_same_file_twice_gives_the_same_verdicts(solution_file):
    """A bug that shows only on some inputs is judged on the same inputs each time its file is graded."""
    buggy = solution_file.parent / "buggy.py"
    source = solution_file.read_text()
    assert "torch.softmax(scores / d_k**0.5, dim=-1)" in source
    buggy.write_text(source.replace("torch.softmax(scores / d_k**0.5, dim=-1)", "torch.softmax(scores / d_k, dim=-1)"))
    suite = discover()
    first, second = (grade_submission(buggy, "buggy", suite, Options()) for _ in range(2))
    assert [(t.name, t.score, t.output) for t in first.tests] == [(t.name, t.score, t.output) for t in second.tests]
    # A failed public check says it ran on other inputs; a printout's check and a hidden check do not.
    moved = {test.name: test.moved for test in suite}
    failed = [t for t in first.tests if t.score < t.max_score]
    assert {moved[t.name] for t in failed if t.visibility == "visible"} == {True, False}
    for t in failed:
        assert (MOVED_NOTE in t.output) == moved[t.name], t.name
        # results.json says so: the integrity step does not compare numbers drawn from one submission's own inputs
        assert (page.test_extra_data(t).get("inputs") == "moved") == moved[t.name], t.name
