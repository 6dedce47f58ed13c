"""The fork server that workers are forked from, without importing torch here.

A worker is a fork of a fork server: a fresh interpreter that imported torch
and the grader (`grader.sandbox.forkserver`) but never touched the judge's
memory or student code. Starting one costs a torch import (about 1.5 s), so the
command line starts its own fork server before it imports torch itself
(`start_early`): the two imports then share the machine's cores instead of
running one after the other. Nothing here imports torch.
"""

import multiprocessing
import multiprocessing.spawn
import multiprocessing.util
import os

from grader.paths import ROOT

_CONTEXT = None


def context():
    """The fork-server context; the server imports torch once, before any fork."""
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        _CONTEXT.set_forkserver_preload(["grader.sandbox.forkserver"])
        multiprocessing.util.spawnv_passfds = _spawn_with_short_environment
        multiprocessing.spawn.get_preparation_data = _neutral_preparation_data
    return _CONTEXT


def _neutral_preparation_data(name):
    """What multiprocessing tells a new worker of the judge: by default the judge's command line (the class
    folder, OUT, the roster), its folder, sys.path and key, all readable by student code in its own memory.
    A worker needs none of it: the fork server it is forked from already imported the grader, and its target
    is found by name. Only the judge's workers are started through multiprocessing (judges are plain forks)."""
    return {"name": name, "authkey": os.urandom(32)}


# What the fork server (and the resource tracker) are started with. Every worker is a fork of the fork
# server, so the environment it was started with lies in each worker's memory (/proc/self/environ
# reads it, whatever os.environ says later): only what starting Python and CUDA needs, never a token.
SERVER_ENVIRONMENT = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "PYTHONHASHSEED",
                      "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES")
SERVER_PREFIXES = ("OMP_", "MKL_", "KMP_")
_SPAWNED = []  # the Popen objects of the helpers: kept, so that they never reap what multiprocessing reaps


def _spawn_with_short_environment(path, args, passfds):
    """multiprocessing.util.spawnv_passfds with a short environment (see SERVER_ENVIRONMENT)."""
    import subprocess

    environment = {key: value for key, value in os.environ.items()
                   if key in SERVER_ENVIRONMENT or key.startswith(SERVER_PREFIXES)}
    environment["PATH"] = "/usr/bin:/bin"
    # The server imports its preload (this package) by its own sys.path, whatever the current folder: from
    # where the judge's copy of the grader is (multiprocessing passes sys.path but 3.11 does not apply it,
    # and a failed preload only shows as every worker importing torch again).
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    # A session of its own (start_new_session): Ctrl-C or a hang-up, sent to the terminal's process group, stops
    # the judges, which stop their workers themselves; reaching the server and its workers, it would end them
    # mid-step, as if the student's code had crashed. The server still ends with its judge (its pipe's end).
    child = subprocess.Popen(args, executable=path, pass_fds=sorted(map(int, passfds)), env=environment,
                             close_fds=True, restore_signals=False, start_new_session=True)
    _SPAWNED.append(child)
    return child.pid


def _fork_server_pid():
    from multiprocessing import forkserver

    return getattr(forkserver._forkserver, "_forkserver_pid", None)


def start_early():
    """Start this process's fork server now (and the resource tracker it needs), before the caller's own
    heavy imports. Call it from the main thread, before any thread starts; the first worker then finds
    the server ready or nearly so."""
    from multiprocessing import forkserver

    context()
    forkserver.ensure_running()
