"""What this machine allows a worker (`probe`, `Protections`), and what the judge does to it once
before workers run under a uid of their own (`prepare_isolation`).

What the machine allows is probed once per run; where namespaces or cgroups cannot be had,
workers fall back to rlimits, a private uid (as root) and the judge's watchdog, and the run
says which protections were on. The results are kept by the run's `pool.WorkerPool`.
"""

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from grader.paths import ROOT
from grader.sandbox import cgroups, processes, seal, seccomp

# What the basic mode cannot close (docs/sandbox.md, "What holds where"): said in the run's summary.
BASIC_OPEN = ("open without namespaces: files of this machine that other users may read (outside the kit's "
              "checkout), other processes' command lines, the machine's figures, its pseudo-terminals; as an "
              "ordinary user also the grading user's own files and processes")
# What the basic mode's Landlock view leaves (the worker opens only the view's files, and signals are refused).
BASIC_VIEW_OPEN = "open without namespaces: as an ordinary user, the grading user's pipe allowance"


@dataclass(frozen=True)
class Protections:
    """What a worker runs under on this machine: the sandbox's mode, the protections on, and
    what is off and why (see seal.MODES, seal.REQUIRED)."""

    mode: str
    on: tuple
    off: tuple
    cgroups: tuple = ()  # controllers the kernel counts per submission

    @property
    def complete(self):
        """Everything `--require-sandbox` asks for."""
        return all(name in self.on for name in seal.REQUIRED)

    def missing(self):
        return [name for name in seal.REQUIRED if name not in self.on]

    def summary(self):
        limits = (f"kernel limits per submission: cgroup {'+'.join(self.cgroups)}" if self.cgroups else
                  "no writable cgroup: per-process rlimits and the judge's watchdog")
        if self.complete:
            return f"sandbox: {self.mode} mode, all protections on; {limits}"
        return (f"sandbox: DEGRADED ({self.mode} mode): off: {', '.join(self.missing())}"
                f" ({'; '.join(self.off)}); {limits}" + self._basic_open())

    def _basic_open(self):
        """What the basic mode leaves in reach: less with its Landlock view (kernel 5.13+) than without."""
        if self.mode != "basic":
            return ""
        return f"; {BASIC_VIEW_OPEN if 'landlock view' in self.on else BASIC_OPEN}"


def probe(uids, groups, prepare_isolation):
    """What this machine allows: a throwaway sealed child per mode tried. `uids` lends the probe a private
    uid (as root), `groups` (cgroups.Groups) a throwaway cgroup; `prepare_isolation()` is called before a
    mode whose private uid must reach Python."""
    off = []
    try:
        bpf = seccomp.program()
    except seccomp.SeccompUnavailable as error:
        bpf = b""
        off.append(f"seccomp: {error}")
    root = processes.running_as_root()
    if root:
        uids.sweep_unused()  # what workers of earlier runs left in /tmp, /dev/shm... and SysV IPC
    uid = uids.take() if root else None
    mode, report = "basic", None
    try:
        for candidate in ("root", "userns") if root else ("userns",):
            if candidate == "userns" and root:
                prepare_isolation()  # the private uid builds this view itself: it must reach Python
            report, why = seal.probe(candidate, uid, bpf)
            if report is not None:
                mode = candidate
                break
            off.append(f"{candidate} namespaces: {why}")
        if report is None:
            report, why = seal.probe("basic", uid, bpf)
            if report is None:
                raise seal.SandboxError(f"even the basic sandbox fails here: {why}")
    finally:
        if uid is not None:
            uids.give_back(uid)
    group = groups.create(64 << 20, 8)
    controllers = tuple(sorted(group.limits)) if group is not None else ()
    if group is not None:
        group.remove()
    else:
        off.append("cgroups: none writable here (no root, no delegated cgroup)")
    on = [name for name in report["on"] if name not in {f"cgroup {key}" for key in cgroups.CONTROLLERS}]
    on += [f"cgroup {name}" for name in controllers]
    return Protections(mode, tuple(on), tuple(off + [o for o in report["off"] if o not in off]), controllers)


def prepare_isolation():
    """Before the first worker runs under its own uid without a root-built view (idempotent: the pool
    calls it once per run).

    Secrets become private to root. The interpreter must stay reachable: when
    Python lives in a folder other users cannot enter (/root/.pyenv), a worker
    could not import the standard library modules it had not loaded yet, so the
    folders on the way get traverse-only permission (o+x: enter, not list), and
    the judge says so. The root sandbox needs none of this: root builds the view."""
    _hide_checkout()
    opened = []
    for place in {sys.base_prefix, sys.prefix, os.path.dirname(torch.__file__), str(ROOT)}:
        for folder in [Path(place), *Path(place).parents]:
            mode = folder.stat().st_mode
            if not mode & stat.S_IXOTH:
                folder.chmod(mode | stat.S_IXOTH)
                opened.append(str(folder))
    if opened:
        print(f"note: student code runs under its own uid and must reach Python; gave other users "
              f"traverse-only access (o+x) to {', '.join(sorted(opened))}", file=sys.stderr)


def _hide_checkout():
    """Without a root-built view, everything of the checkout (.git, dist/, tests/, solutions/, samples/, OUT
    folders, the grader's own code: the fork server imported all a worker runs) becomes private to its
    owner, but the folders on the way to Python (a virtual environment inside the checkout); the checkout
    itself can be entered, not listed."""
    keep = set()
    for place in (sys.prefix, sys.base_prefix, os.path.dirname(torch.__file__)):
        inside = os.path.relpath(os.path.realpath(place), ROOT)
        if not inside.startswith(".."):
            keep.add(inside.split(os.sep)[0])
    for entry in ROOT.iterdir():
        info = entry.lstat()
        if entry.name not in keep and not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o077:
            entry.chmod(stat.S_IMODE(info.st_mode) & 0o700)
    mode = stat.S_IMODE(ROOT.stat().st_mode)
    if mode & 0o044:
        ROOT.chmod(mode & ~0o044)
