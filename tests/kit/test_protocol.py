"""The judge-worker protocol: declared once (grader.check.wire.OPERATIONS), built and read through it.

In process (no sandbox): the protocol is the same whichever transport carries it.
"""

import inspect
import struct

import pytest
import torch

from grader.build.exercises import clean_solution
from grader.chapter import STEPS
from grader.check import wire
from grader.check.runner import run_test
from grader.check.session import Session
from grader.check.student import Plans, Student, in_process
from grader.check.suite import discover
from grader.faults.bugs import BUGS


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    path = tmp_path_factory.mktemp("protocol") / "attention.py"
    path.write_text(clean_solution())
    return path


def test_every_operation_a_session_carries_out_is_declared_and_every_declared_one_is_carried_out():
    """Before: Session dispatched getattr(self, "op_" + name), the operations declared nowhere. Now: the table and
    the methods are the same set."""
    methods = {name[3:] for name, _ in inspect.getmembers(Session) if name.startswith("op_")}
    declared = {name for name, operation in wire.OPERATIONS.items() if operation.session and name != "batch"}
    assert methods == declared


@pytest.mark.parametrize("request_, words", [
    ({"op": "forwad", "handle": 1, "args": []}, "unknown operation 'forwad'"),
    ({"op": "call", "name": "softmax"}, "request 'call': missing ['args']"),
    ({"op": "state", "handle": 1, "train": True}, "request 'state': unknown field(s) ['train']"),
    ({"op": "load", "name": "a.py", "chunks": []}, "for the worker's loop"),
    ("call", "a request is a dict"),
])
def test_an_unsound_request_is_an_error_at_one_place_that_names_it(solved, request_, words):
    """Before: an unknown operation answered AttributeError ('Session' object has no attribute 'op_forwad'), a
    missing field a KeyError deep in the operation, an extra one was ignored. Now: ProtocolError, said once."""
    student, _ = in_process(solved)
    answer = Session(student.transport.session.module).handle(request_)
    assert answer["ok"] is False and answer["error"]["type"] == "ProtocolError"
    assert words in answer["error"]["message"]


def test_the_judge_cannot_build_an_unsound_request():
    with pytest.raises(wire.ProtocolError, match="missing \\['handle'\\]"):
        wire.request("forward", args=[])
    with pytest.raises(wire.ProtocolError, match="unknown field"):
        wire.request("call", name="f", args=[], sede=1)
    assert wire.request("call", name="f", args=[]) == {"op": "call", "name": "f", "args": []}


def test_every_request_of_every_check_is_declared(solved):
    """Every request the graded checks send (a solved file: every check runs to its end) is as declared."""
    student, _ = in_process(solved)
    seen = []

    class Checking:
        def send(self, request):
            for item in [request, *request.get("requests", [])]:
                seen.append(wire.parse_request(item)["op"])
            return student.transport.send(request)

    checked = Student(Checking())
    for test in discover():
        assert run_test(test, checked) == (True, "")
    assert {"call", "build", "forward", "load_weights", "fill_buffer", "state", "describe", "batch"} <= set(seen)


def test_the_wire_uses_json_through_its_public_api_only():
    """Before: json.encoder.c_make_encoder (positional arguments of one Python's C function) and the decoder's
    scan_once. Now: JSONEncoder.encode and JSONDecoder.decode."""
    source = inspect.getsource(wire)
    assert "json.encoder.c_make_encoder(" not in source and ".scan_once(" not in source
    message = {"ok": True, "value": wire.encode([1.5, "x", None])}
    assert wire.decode(wire.loads(wire.dumps(message))["value"]) == [1.5, "x", None]
    with pytest.raises(ValueError, match="not a message"):
        wire.loads(struct.pack(">I", 4) + b"{}{}")  # data after the one JSON value


# --------------------------------------------------------------------------- plans: a group's requests at once

def grade_in_groups(path, suite, plans):
    """Every check over `path` in this interpreter, grouped as the judge groups them (each step's public part, then
    each step's hidden part, one Student each): ([(name, passed, message)], round trips)."""
    student, _ = in_process(path)
    verdicts, trips = [], 0
    for public in (True, False):
        for step in STEPS:
            group = [test for test in suite if test.step == step.key and (test.kind == "public") == public]
            checked = Student(student.transport, plans=plans)
            verdicts += [(test.name, *run_test(test, checked)) for test in group]
            trips += checked.round_trips
    return verdicts, trips


@pytest.fixture(scope="module")
def suite():
    return discover()


def test_a_correct_file_takes_at_most_20_round_trips_once_the_plans_are_learned(solved, suite):
    """Before: 221 round trips per correct submission (one per request or small batch). Now: one per group of
    checks (14) once the judge has learned the plans, from the first submission that passes a group."""
    plans = Plans()
    learned, first = grade_in_groups(solved, suite, plans)
    planned, trips = grade_in_groups(solved, suite, plans)
    assert planned == learned and all(passed for _, passed, _ in planned)
    assert first > 200 and trips <= 20, (first, trips)


@pytest.mark.slow(reason="grades five buggy files three times each in this interpreter (about 30 s)")
@pytest.mark.parametrize("bug_id", ["mha_sdpa_dropout_in_eval", "mha_masked_fill_not_in_place",
                                    "causal_mask_not_sliced", "masking_keeps_future", "wrapper_first_head_only"])
def test_a_buggy_file_gets_the_same_verdicts_and_messages_with_plans(solved, suite, bug_id, tmp_path):
    """The checks that fail leave the plan (their probes run live, after the random generators are put back):
    every verdict and message is what it is without plans, the random diagnosis of dropout in eval mode too."""
    plans = Plans()
    grade_in_groups(solved, suite, plans)  # learns the plans
    path = tmp_path / "attention.py"
    path.write_text(next(bug for bug in BUGS if bug.id == bug_id).apply(clean_solution()))
    without, trips_without = grade_in_groups(path, suite, None)
    with_plans, trips = grade_in_groups(path, suite, plans)
    assert with_plans == without
    assert trips < trips_without


def test_a_plan_runs_while_each_request_fails_or_succeeds_as_expected(solved):
    session = Session(in_process(solved)[0].transport.session.module)
    build = wire.request("build", name="CausalAttention", args=wire.encode([3, 4, 6, 0.0]), seed=1)
    forward = wire.request("forward", handle={"$built": 0}, args=wire.encode([torch.ones(2, 6, 3)]))
    broken = wire.request("call", name="no_such_function", args=[])
    plan = wire.request("batch", requests=[build, broken, forward, broken, forward], plan=True,
                        expect=[True, False, True, True, True])
    answers = session.handle(plan)["answers"]
    assert [answer["ok"] for answer in answers] == [True, False, True, False]  # stopped at the unexpected failure
    assert wire.decode(answers[2]["value"]).shape == (2, 6, 4)


def test_rewind_puts_the_random_generators_back_where_they_were_before_a_request_of_the_plan(solved):
    session = Session(in_process(solved)[0].transport.session.module)
    draw = wire.request("call", name="attention_dropout", args=wire.encode([torch.ones(4, 4), 0.5]),
                        kwargs=wire.encode({"training": True}))
    answers = session.handle(wire.request("batch", requests=[draw, draw], plan=True, expect=[True, True]))["answers"]
    assert session.handle(wire.request("rewind", to=1))["ok"]
    again = session.handle(draw)
    assert torch.equal(wire.decode(again["value"]), wire.decode(answers[1]["value"]))
    assert not torch.equal(wire.decode(answers[0]["value"]), wire.decode(answers[1]["value"]))


EXITS_ON_A_BATCH = """

import os

_reference_scores = attention_scores


def attention_scores(queries, keys):
    if queries.dim() == 3:  # a crash on batched inputs only: the step's checks of one sequence pass
        os._exit(0)
    return _reference_scores(queries, keys)
"""


@pytest.mark.slow(reason="grades three files through the sandboxed judge")
def test_a_worker_that_ends_inside_a_plan_costs_what_it_costs_without_one(solved, suite, monkeypatch):
    """Before: a worker that crashed (or hung) inside the plan sent ahead failed every check of its group, those
    whose requests came before the crash too. Now the group is graded again live, on a fresh worker."""
    from grader.check import student as student_module
    from grader.judging.judge import Options, grade_submission

    path = solved.parent / "exits_midway.py"
    path.write_text(clean_solution() + EXITS_ON_A_BATCH)
    monkeypatch.setattr(student_module, "PLANS", Plans())
    live = grade_submission(path, "exits", suite, Options())  # no plan learned for its failing group: all live
    grade_submission(solved, "solved", suite, Options())  # teaches every group's plan
    planned = grade_submission(path, "exits", suite, Options())
    verdicts = [(test.name, test.score, test.output) for test in live.tests]
    assert [(test.name, test.score, test.output) for test in planned.tests] == verdicts
    scaling = [score > 0 for name, score, _ in verdicts if name.startswith("scaling")]
    assert any(scaling) and not all(scaling), "the crash must come midway through the step's checks"


def test_rewind_puts_numpys_generator_back_with_its_cached_gaussian():
    """numpy's global state is read again only where its raw MT19937 bytes moved (session.numpy_state). A legacy
    normal draw keeps a second gaussian without moving them: the state before a request that uses it up must still
    be the one with the gaussian, and a rewind there must draw it again."""
    import types

    import numpy as np

    module = types.SimpleNamespace(normal=lambda: torch.tensor(np.random.standard_normal()))
    session = Session(module)
    np.random.seed(7)
    draw = wire.request("call", name="normal", args=[])
    answers = session.handle(wire.request("batch", requests=[draw, draw, draw], plan=True,
                                          expect=[True, True, True]))["answers"]
    values = [float(wire.decode(answer["value"])) for answer in answers]
    assert len(set(values)) == 3
    for to in (1, 2, 1, 0):  # the second draw is the cached gaussian of the first; a rewind to it draws it again
        assert session.handle(wire.request("rewind", to=to))["ok"]
        assert float(wire.decode(session.handle(draw)["value"])) == values[to], to
