"""Worker uids are shared by every grader on the machine: a run that finds them all held waits for one.

Before: a blind tester's `make grade JOBS=1`, started while a test suite's hostile battery held the 512 uids,
ended at once with a traceback ("all 512 worker uids are in use; grade with fewer jobs", advice it could not
follow at one job). Now it waits while other runs give uids back, and only past WAIT_SECONDS says who holds them.
"""

import os
import threading
import time

import pytest

from grader.sandbox import processes

pytestmark = pytest.mark.skipif(not processes.running_as_root(), reason="worker uids are root's (root mode)")
LAST = processes.UID_BASE + len(processes.UidPool().uids) - 1  # free unless 512 workers run at once


def test_a_run_waits_for_the_uid_another_run_gives_back():
    other, this = processes.UidPool(base=LAST, size=1), processes.UidPool(base=LAST, size=1)
    uid = other.take()
    threading.Timer(1.0, other.give_back, [uid]).start()
    began = time.monotonic()
    try:
        assert this.take() == uid
        assert time.monotonic() - began >= 0.9
    finally:
        this.give_back(uid)


def test_a_uid_held_past_the_wait_is_a_message_that_says_who_holds_it(monkeypatch):
    other, this = processes.UidPool(base=LAST, size=1), processes.UidPool(base=LAST, size=1)
    monkeypatch.setattr(processes.UidPool, "WAIT_SECONDS", 0.6)
    uid = other.take()
    try:
        with pytest.raises(RuntimeError, match="other grading runs on this machine"):
            this.take()
    finally:
        other.give_back(uid)
    assert os.path.isdir(processes.UidPool.LOCKS)
