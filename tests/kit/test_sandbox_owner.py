"""The sandbox's state has one owner per process, and workers come from the kit's own fork server.

Before: grader/sandbox/worker.py kept the workers, spares, reaper, uids and locks in module-level
names repaired after a fork by at-fork hooks, the CLI wrote `WorkerTransport.REQUIRE_SANDBOX`, and
each judge started multiprocessing's fork server of its own (a torch import per judge, a socket in
a /tmp/pymp-* folder, private internals of multiprocessing patched and cleared). Now a
`pool.WorkerPool` per process holds all of it (a forked judge makes its own from its parent's
settings), and one fork server of the kit's own, started with a short environment in a session
of its own, forks the workers of the run and of every judge over a socketpair.
"""

import os
import signal
import time
from types import SimpleNamespace

import pytest

from grader.cohort import judges
from grader.paths import ROOT
from grader.sandbox import pool, servers
from grader.sandbox.transport import WorkerTransport

SOURCE = ROOT / "solutions" / "attention.py"


def _in_child(work):
    """Run `work()` (returning a short str) in a forked child; what it returned."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, str(work()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 4096):
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return b"".join(chunks).decode()


def _parent_of(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("PPid:")).split()[1])


def test_a_forked_process_makes_its_own_pool_with_its_parents_settings():
    """Before: the settings were module and class attributes, the state repaired by at-fork hooks.
    Now the child's first `current()` is a new pool: the parent's settings, none of its spares."""
    parent = pool.current()
    kept = parent.require_sandbox
    parent.require_sandbox = True
    try:
        seen = _in_child(lambda: (pool.current() is not parent, pool.current().pid == os.getpid(),
                                  pool.current().require_sandbox, pool.current()._spares == {}))
    finally:
        parent.require_sandbox = kept
    assert seen == "(True, True, True, True)"
    assert pool.current() is parent


def test_every_judge_forks_its_workers_from_the_one_fork_server_of_the_run():
    """Before: each forked judge started a fork server of its own (a torch import per judge). Now the
    judges' workers are all children of the run's one fork server."""
    server = pool.current().server()

    def grade(item):
        transport = WorkerTransport(item[1])
        try:
            assert transport.fatal is None, transport.fatal
            parent = _parent_of(transport.process.pid)
        finally:
            transport.close()
        return SimpleNamespace(to_dict=lambda: {"server": parent, "judge": os.getpid()})

    items = [(f"s{index}", SOURCE) for index in range(4)]
    found = dict(judges.graded_in_judges(items, grade, judges=2, threads=1))
    assert len(found) == 4
    assert len({result["judge"] for result in found.values()}) == 2, found  # both judges graded
    assert {result["server"] for result in found.values()} == {server.pid}, found


@pytest.mark.slow(reason="starts a fork server of its own (a torch import)")
def test_the_fork_server_holds_no_token_and_no_terminal():
    """Its environment is the short one (every worker is a fork of it), and it leads a session of its
    own: a Ctrl-C or hang-up sent to the terminal's group never reaches it or its workers."""
    os.environ["SANDBOX_OWNER_TOKEN"] = "secret-sandbox-owner-token"
    try:
        server = servers.ForkServer()
    finally:
        del os.environ["SANDBOX_OWNER_TOKEN"]
    try:
        with open(f"/proc/{server.pid}/environ", "rb") as environ:
            names = {entry.split(b"=", 1)[0].decode() for entry in environ.read().split(b"\0") if entry}
        assert "SANDBOX_OWNER_TOKEN" not in names
        assert names <= set(servers.SERVER_ENVIRONMENT) | {"PATH", "PYTHONPATH"} | {
            name for name in names if name.startswith(servers.SERVER_PREFIXES)}, names
        assert os.getsid(server.pid) == server.pid != os.getsid(0)
    finally:
        server.requests.close()  # its last request socket: the server ends
        server.process.wait(timeout=120)


def test_a_judge_that_ends_takes_its_workers_with_it():
    """A judge killed midway (its descriptors closed by the kernel) leaves no worker running: the fork
    server kills each worker whose judge closed its status channel."""
    pool.current().server()

    def start_and_die():
        transport = WorkerTransport(SOURCE)
        assert transport.fatal is None, transport.fatal
        return transport.process.pid  # os._exit follows: nothing is closed by the judge itself

    server = pool.current().server()
    worker = int(_in_child(start_and_die))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(worker):
        time.sleep(0.1)
    assert not _alive(worker)
    time.sleep(0.5)  # the server reaps the worker it killed: it must go on serving (before: a KeyError ended it)
    assert _alive(server.pid) and server.process.poll() is None


def _alive(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            return "State:\tZ" not in status.read()
    except OSError:
        return False


def test_the_fork_server_listens_on_no_path():
    """Before: each fork server listened on a socket in a /tmp/pymp-* folder, which a judge's end or
    another run of the same user could remove. Now its sockets are socketpairs: no path, no folder."""
    server = pool.current().server()
    inodes = {os.readlink(f"/proc/{server.pid}/fd/{fd}")[len("socket:["):-1]
              for fd in os.listdir(f"/proc/{server.pid}/fd")
              if os.readlink(f"/proc/{server.pid}/fd/{fd}").startswith("socket:[")}
    assert inodes, "the fork server holds no socket: this test checks nothing"
    with open("/proc/net/unix") as table:
        bound = [line.split() for line in table.readlines()[1:]]
    assert not [fields[7] for fields in bound if fields[6] in inodes and len(fields) > 7]


@pytest.mark.slow(reason="kills the run's fork server: the next worker waits for a new one (a torch import)")
def test_a_fork_server_that_ended_is_replaced():
    """As with multiprocessing's: a fork server killed midway (out of memory, by hand) costs no submission;
    the next worker is forked from a new one."""
    gone = pool.current().server()
    os.kill(gone.pid, signal.SIGKILL)
    gone.process.wait(timeout=30)
    transport = WorkerTransport(SOURCE)
    try:
        assert transport.fatal is None, transport.fatal
        assert _parent_of(transport.process.pid) == pool.current().server().pid != gone.pid
    finally:
        transport.close()


# The module-level state left in grader/sandbox/, each with the reason it is per process rather than per pool.
MODULE_STATE = {
    "pool._CURRENT": "the owner itself: this process's WorkerPool (a forked judge finds its parent's and makes its own)",
    "pool._CREATING": "the lock that makes `current()` create one pool per process",
    "servers._SERVER": "the run's one fork server, shared by every judge forked from the run",
    "seal._STAGES": "the stage timings of the sealing child, in that child only (the probe's report)",
}


MUTATORS = ("append", "extend", "insert", "pop", "popitem", "clear", "update", "setdefault", "add", "discard",
            "remove")


def _module_state():
    """Module-level names of grader/sandbox/ that hold state: a lock (or event, condition...), a name a
    `global` rebinds, or a list, dict or set the module changes (an item stored, or a mutating method called);
    constant tables are not state."""
    import ast

    found = set()
    for path in sorted((ROOT / "grader" / "sandbox").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        changed = {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del))
                    or isinstance(node, ast.Attribute) and node.attr in MUTATORS):
                inner = node.value
                while isinstance(inner, ast.Subscript):  # _STAGES["marks"][name] = ... changes _STAGES
                    inner = inner.value
                if isinstance(inner, ast.Name):
                    changed.add(inner.id)
        for node in tree.body:
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    continue
                lock = isinstance(node.value, ast.Call) and ast.unparse(node.value.func).endswith(
                    ("Lock", "RLock", "Event", "Condition", "Semaphore"))
                if lock or target.id in changed:
                    found.add(f"{path.stem}.{target.id}")
    return found


def test_the_sandbox_keeps_no_state_at_module_level_but_the_owners_pointer_and_the_run_s_fork_server():
    """Before: cgroups.py kept its name counter, sweep flag and lock at module level (a `global` rebound after
    every fork by a hook the pool called). Now a cgroups.Groups is the pool's, made in each process with it; what
    module state remains is listed here with its reason, and a new one fails this test until it is."""
    assert _module_state() == set(MODULE_STATE)


def test_a_forked_judge_names_its_cgroups_with_a_lock_of_its_own():
    parent = pool.current()
    with parent.cgroups._lock:  # held by a thread of the parent at the fork: the child must not wait on it
        seen = _in_child(lambda: (pool.current().cgroups is not parent.cgroups,
                                  not pool.current().cgroups._lock.locked()))
    assert seen == "(True, True)"
