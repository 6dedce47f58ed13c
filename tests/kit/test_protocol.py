"""The judge-worker protocol: declared once (grader.check.wire.OPERATIONS), built and read through it.

In process (no sandbox): the protocol is the same whichever transport carries it.
"""

import inspect
import struct

import pytest

from grader.build.exercises import clean_solution
from grader.check import wire
from grader.check.runner import run_test
from grader.check.session import Session
from grader.check.student import Student, in_process
from grader.check.suite import discover


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
