"""Leaves its own (correct) source for a later submission, in symlink targets: a zero file-size
limit stops file contents, not links, and a link's target is text.

base: clean
class: 2
run: main
"""

import base64 as _base64
import linecache as _linecache
import os as _os
import zlib as _zlib

_STASHES = ["/tmp/.hostile-links-@TOKEN@", "/var/tmp/.hostile-links-@TOKEN@", "/dev/shm/.hostile-links-@TOKEN@"]


def _own_source():
    for entry in list(_linecache.cache.values()):
        text = "".join(entry[2]) if len(entry) > 2 else ""
        if "class MultiHeadAttention(" in text and "_own_source" in text:
            return text
    return ""


def _stash():
    packed = _base64.b32encode(_zlib.compress(_own_source().encode(), 9)).decode()
    for folder in _STASHES:
        try:
            _os.makedirs(folder, exist_ok=True)
            _os.chmod(folder, 0o777)
            for index in range(0, len(packed), 3000):
                _os.symlink(packed[index:index + 3000], f"{folder}/{index // 3000:04d}")
        except OSError:
            continue


class _AtLoad:
    _stash()
