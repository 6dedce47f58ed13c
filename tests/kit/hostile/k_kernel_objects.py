"""Asks for the kernel objects no solution needs and each of which holds a per-user or machine-wide share:
perf events, eBPF maps, userfaultfd, io_uring rings, fanotify groups and memfd secrets.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes

_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long


def _kernel_objects():
    got = []
    attr = (_ctypes.c_uint32 * 32)()
    attr[0], attr[1] = 1, 128  # PERF_TYPE_SOFTWARE, size
    params = (_ctypes.c_uint32 * 30)()
    bpf_attr = (_ctypes.c_uint32 * 30)()
    bpf_attr[0], bpf_attr[1], bpf_attr[2], bpf_attr[3] = 2, 4, 4, 1  # BPF_MAP_TYPE_ARRAY
    for name, args in (("perf", (298, _ctypes.byref(attr), 0, -1, -1, 0)), ("bpf", (321, 0, _ctypes.byref(bpf_attr), 48)),
                       ("userfaultfd", (323, 0)), ("io_uring", (425, 4, _ctypes.byref(params))),
                       ("fanotify", (300, 0, 0)), ("memfd_secret", (447, 0))):
        if _libc.syscall(*args) >= 0:
            got.append(name)
    return got


def attention_dropout(*args, **kwargs):
    found = _kernel_objects()
    raise RuntimeError(f"ALLOWANCE kernel {len(found)} objects {found}")
