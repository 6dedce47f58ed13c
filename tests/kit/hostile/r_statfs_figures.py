"""Red team 2 (host information, machine figures): statfs is not in the filter and asks nothing of
Landlock or of the view. The devices bound into the view (/dev/null, /dev/zero) report the host's devtmpfs,
whose default size is half the machine's memory and whose inode count is derived from it; /usr and the
interpreter's folders report the host's disk (size and free bytes); in the basic mode /dev/shm reports the
machine's tmpfs (all of its memory here). Puts the figures into what a student reads (an error message, a
returned string). Marker: RTEAM2-STATFS.

base: clean
class: 5
run: main
"""

import os as _os
import sys as _sys


def _figures():
    found = []
    for path in ("/dev/null", "/dev/zero", "/dev/shm", "/dev", "/", "/usr", "/tmp", _sys.prefix, _sys.base_prefix):
        try:
            stat = _os.statvfs(path)
        except OSError as error:
            found.append(f"{path}: {error.strerror}")
            continue
        total, free = stat.f_blocks * stat.f_frsize >> 20, stat.f_bavail * stat.f_frsize >> 20
        found.append(f"{path}: {total} MiB total, {free} MiB free, {stat.f_files} inodes")
    return "RTEAM2-STATFS " + "; ".join(found)


def causal_attention_weights(scores, d_k):
    raise ValueError(_figures())


def dot_product_variance(dim, num_trials=1000, seed=0):
    return _figures(), _figures()
