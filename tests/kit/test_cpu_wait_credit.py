"""A step's deadline moves for the time its submission waited for CPUs that others held, and only for that.

Before: every wait of every process of the submission was credited, so a hang whose 14 busy children queued
behind each other on the submission's one CPU kept its step alive 5 times its budget (red team 2, attack 10:
15.8 s for a 3 s limit; a plain hang took 4.5 s). Now the credit is at most the step's time that the
submission's own processes did not spend running: waits behind its own processes earn nothing.
The whole path (a busy machine, a real worker): test_busy_machine.py.
"""

import time

import pytest

from grader.sandbox.limits import MAX_CPU_WAIT_CREDIT
from grader.sandbox.transport import WorkerTransport


class FakeWorker:
    """What the transport reads of a worker: the seconds its processes waited and used (both cumulative)."""

    def __init__(self):
        self.waited = self.used = 0.0

    def cpu_wait_and_use(self):
        return self.waited, self.used


@pytest.fixture
def clock(monkeypatch):
    """clock(limit) -> (transport, worker, deadline): the step clock's logic alone, no process behind it; the
    judge thread itself never waits here."""
    monkeypatch.setattr("grader.sandbox.processes.own_cpu_wait_seconds", lambda: 0.0)

    def start(limit):
        worker = FakeWorker()
        transport = WorkerTransport.__new__(WorkerTransport)
        transport.worker, transport.time_limit = worker, limit
        transport._start_clock(limit)
        return transport, worker, transport.deadline

    return start


def test_a_wait_behind_other_programs_moves_the_deadline(clock):
    transport, worker, deadline = clock(2.0)
    time.sleep(0.3)
    worker.waited, worker.used = 0.25, 0.02  # it hardly ran: others held the CPU
    assert transport._credit_cpu_wait()
    assert abs(transport.deadline - deadline - 0.25) < 1e-9


def test_a_wait_behind_the_submissions_own_processes_moves_nothing(clock):
    transport, worker, deadline = clock(2.0)
    time.sleep(0.3)
    worker.waited, worker.used = 14 * 0.3, 0.3  # 15 busy processes on one CPU: all of the step's time was theirs
    assert not transport._credit_cpu_wait()
    assert transport.deadline == deadline


def test_the_credit_stays_within_its_bound(clock):
    transport, worker, deadline = clock(0.05)
    time.sleep(0.4)
    worker.waited = 10.0
    assert transport._credit_cpu_wait()
    assert abs(transport.deadline - deadline - MAX_CPU_WAIT_CREDIT * 0.05) < 1e-9
