"""Takes the uid's inotify watches (fs.inotify.max_user_watches, per user) by watching every folder it can
reach from one instance, then the same folders again from more instances.

base: buggy
class: k
run: pressure
"""

import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)


def _grab_watches():
    folders = []
    for top in ("/usr/lib", "/usr/share"):
        for root, dirs, _ in _os.walk(top):
            folders.append(root)
            if len(folders) > 4000:
                break
    got = 0
    for _ in range(8):
        instance = _libc.inotify_init1(0)
        if instance < 0:
            break
        for folder in folders:
            if _libc.inotify_add_watch(instance, folder.encode(), 0x00000100) >= 0:  # IN_CREATE
                got += 1
    return got


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE inotify {_grab_watches()} watches")
