"""Start a command with a setting applied in its own process first (pinned to CPUs, signals as a terminal's
fresh job has them, a seccomp filter), without subprocess's `preexec_fn`.

`preexec_fn` runs Python in the forked child of this pytest process, which has threads (the sandbox pools
of session fixtures: reapers, spare sealers): such a child can deadlock before it execs (the subprocess
docs say so). Here the setting is applied by a fresh interpreter, which then execs the command: nothing
runs between fork and exec.
"""

import base64
import json
import sys

_PRELUDE = """
import json, os, signal, sys
settings = json.loads(sys.argv[1])
if settings["cpus"] is not None:
    os.sched_setaffinity(0, settings["cpus"])
for number in settings["default_signals"]:
    signal.signal(number, signal.SIG_DFL)
for number in settings["ignored_signals"]:
    signal.signal(number, signal.SIG_IGN)
if settings["bpf"]:
    import base64
    from grader.sandbox import seal, seccomp
    seccomp.load(base64.b64decode(settings["bpf"]), seal._libc)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def launched(command, *, cpus=None, default_signals=(), ignored_signals=(), bpf=None):
    """`command` (a list) preceded by the interpreter that applies the settings to itself and execs it:
    `cpus` (a set of CPU numbers) for its affinity, `default_signals` set to SIG_DFL and `ignored_signals`
    to SIG_IGN (an ignored signal stays ignored across exec), `bpf` a seccomp program loaded before it runs
    (grader.sandbox.seccomp)."""
    settings = {"cpus": sorted(cpus) if cpus is not None else None,
                "default_signals": [int(number) for number in default_signals],
                "ignored_signals": [int(number) for number in ignored_signals],
                "bpf": base64.b64encode(bpf).decode() if bpf else None}
    return [sys.executable, "-c", _PRELUDE, json.dumps(settings), *map(str, command)]
