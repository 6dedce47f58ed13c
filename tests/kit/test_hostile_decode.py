"""The judge decodes what a worker sends within a budget: forged frames cost it no more than honest ones.

A worker runs the student's code, which can patch the grader's own encoder inside it and send any
frame. The judge decodes outside every limit of the worker, so `wire.loads` and `wire.decode` bound
what one answer may hold (header bytes, values, tensors, tensor bytes) and refuse a blob referenced
twice or overlapping another; and the time the judge spends reading an answer is the step's.
Measured here: allocations (tracemalloc), and that a forged frame is refused before anything is built.
"""

import json
import struct
import tracemalloc

import pytest
import torch

from grader.check import wire
from grader.check.student import Student, StudentError, StudentUnavailable

MiB = 1 << 20


def frame(header, blobs=b""):
    header = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack(">I", len(header)) + header + blobs


def tensor_at(start, length, dtype="uint8"):
    return {"$tensor": {"dtype": dtype, "shape": [length], "data": {"$blob": [start, length]}, "device": "cpu"}}


def peak_allocation(action):
    """Bytes allocated at the peak of `action()` (which may raise ValueError)."""
    tracemalloc.start()
    try:
        action()
    except ValueError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def read(raw):
    return wire.decode(wire.loads(raw)["value"])


def test_a_blob_named_many_times_is_refused_before_anything_is_copied():
    raw = frame({"ok": True, "value": [tensor_at(0, MiB)] * 2000}, b"\1" * MiB)
    with pytest.raises(ValueError, match="not a message"):
        read(raw)
    assert peak_allocation(lambda: read(raw)) < 32 * MiB  # a copy per reference would be 2 GiB


def test_overlapping_blobs_are_refused():
    raw = frame({"ok": True, "value": [tensor_at(start, MiB // 2) for start in range(0, 2000)]}, b"\1" * MiB)
    with pytest.raises(ValueError):
        read(raw)
    touching = frame({"ok": True, "value": [tensor_at(0, 4), tensor_at(4, 4), tensor_at(8, 0), tensor_at(8, 0)]},
                     b"\1" * 8)
    assert [len(value) for value in read(touching)] == [4, 4, 0, 0]  # adjacent and empty blobs are fine


@pytest.mark.parametrize("value, why", [
    ([[0] * 1000 for _ in range(1000)], "a million values"),
    ([{"$tensor": {"dtype": "float32", "shape": [0], "data": {"$blob": [0, 0]}}}] * 10000, "ten thousand tensors"),
    (["\ud800" * 1000] * 3000, "18 MB of escaped surrogates"),
    ({"$tuple": [[[]] * 1000] * 1000}, "a million empty lists"),
])
def test_forged_answers_are_refused_before_anything_is_built(value, why):
    """Refused by `loads`, from the header's text, before a value or a tensor is built (the cost is then a few
    passes over at most MAX_HEADER_BYTES: no timing here, which would measure the machine, not the decoder)."""
    header = json.dumps({"ok": True, "value": value}).encode()
    raw = frame(header)
    with pytest.raises(ValueError, match="not a message"):
        wire.loads(raw)
    assert peak_allocation(lambda: read(raw)) < 8 * len(header) + 32 * MiB, why


def test_the_largest_honest_answers_still_cross():
    values = [torch.rand(4, 64, 64), {f"heads.{h}.W_query.weight": torch.rand(8, 6) for h in range(64)},
              [float(i) for i in range(50_000)], tuple(torch.rand(3) for _ in range(1000)), "x" * 5000,
              [torch.zeros(1) for _ in range(wire.MAX_TENSORS)]]
    for value in values:
        back = wire.decode(wire.loads(wire.dumps({"value": wire.encode(value)}))["value"])
        assert type(back) is type(value)


def test_an_honest_answer_over_the_budget_is_refused_with_a_message_for_the_student():
    with pytest.raises(wire.Unsendable, match="more than any answer here needs"):
        wire.encode([torch.zeros(1) for _ in range(wire.MAX_TENSORS + 1)])
    with pytest.raises(wire.Unsendable, match="more than any answer here needs"):
        wire.encode(list(range(wire.MAX_ITEMS + 1)))


class _SlowTransport:
    """A transport whose deadline has passed by the time the answer is decoded."""

    def __init__(self, answer):
        self.answer = answer
        self.charged = []

    def send(self, request):
        return self.answer

    def charge(self, doing):
        self.charged.append(doing)
        raise StudentUnavailable(f"time limit: ran past its budget while {doing}")


def test_the_time_the_judge_spends_decoding_is_the_steps():
    answer = wire.loads(wire.dumps({"ok": True, "value": wire.encode(torch.ones(3))}))
    transport = _SlowTransport(answer)
    with pytest.raises(StudentUnavailable, match="time limit"):
        Student(transport).call("anything")
    assert transport.charged and "the grader read the answer of anything(...)" in transport.charged[0]
    broken = _SlowTransport({"ok": True, "value": {"$tensor": {"dtype": "float32", "shape": [2], "data": "AA=="}}})
    with pytest.raises(StudentUnavailable):  # an answer that fails to decode is still the step's time
        Student(broken).call("anything")


def test_an_unreadable_answer_within_the_deadline_is_the_students_error():
    class OnTime(_SlowTransport):
        def charge(self, doing):
            self.charged.append(doing)

    transport = OnTime({"ok": True, "value": {"$tensor": {"dtype": "float32", "shape": [2], "data": "AA=="}}})
    with pytest.raises(StudentError, match="cannot read"):
        Student(transport).call("anything")


def test_a_workers_text_is_capped_in_count_length_and_total():
    """Load problems come from the student's process and are shown at once: a forged report is cut to a
    few short lines, whatever it holds."""
    from grader.sandbox.transport import MAX_PROBLEMS, MAX_PROBLEMS_CHARS, capped_texts

    kept = capped_texts([f"problem {index}: " + "x" * 5000 for index in range(1000)])
    assert len(kept) <= MAX_PROBLEMS and all(len(text) <= 700 for text in kept)
    assert sum(len(text) for text in kept) <= MAX_PROBLEMS_CHARS + 100
    assert capped_texts(["a \ud800 b", 12, {"x": 1}]) == ["a ? b", "12", "{'x': 1}"]


def test_a_huge_string_is_cut_before_any_search_of_it(monkeypatch):
    """A red team (issue 26): answers of 4 MB strings each cost the judge 170 ms of CPU in the host-name search
    before they were cut to 10 kB (100 times their worker's CPU; three such students made a class run 33 times as
    long). The search now sees at most the kept length and the longest host name beyond it."""
    from grader.check import wire
    from grader.paths import ROOT

    searched = []
    pattern = wire._HOST_PATTERN

    class Counting:
        def search(self, text):
            searched.append(len(text))
            return pattern.search(text)

        def sub(self, replace, text):
            searched.append(len(text))
            return pattern.sub(replace, text)

    monkeypatch.setattr(wire, "_HOST_PATTERN", Counting())
    kept = wire.clean_text("x" * 4_000_000 + str(ROOT), limit=10_000)
    assert kept.endswith("... (cut)") and len(kept) < 10_100
    assert searched and max(searched) <= 10_000 + wire._LONGEST_HOST
    straddling = "y" * (10_000 - 5) + str(ROOT) + "/tests/hidden"  # a path across the cut is still replaced
    assert str(ROOT) not in wire.clean_text(straddling, limit=10_000)


def test_many_strings_just_under_the_cut_are_refused_as_one_answer():
    """A red team (round 3): 440 strings of 9,000 characters per answer, each under the cut, still cost the judge
    86 times its worker's CPU. An answer's strings together are bounded (MAX_ANSWER_TEXT characters)."""
    from grader.check import wire

    assert wire.decode(["ab/c" * 2000] * 5) == ["ab/c" * 2000] * 5  # an honest answer with text passes
    with pytest.raises((ValueError, wire.Unsendable), match="more text than an answer holds"):
        wire.decode(["ab/c" * 2250] * 440)
