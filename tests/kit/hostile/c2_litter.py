"""Leaves as much behind as it can without writing a byte of file content: thousands of long
symlinks, a folder tree, a FIFO and a bound unix socket, in every world-writable place.

base: clean
class: 2
run: main
"""

import os as _os
import socket as _socket

_PLACES = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"]


def _litter():
    for place in _PLACES:
        folder = f"{place}/.hostile-litter-@TOKEN@"
        try:
            _os.makedirs(f"{folder}/deep/er/still", exist_ok=True)
            _os.mkfifo(f"{folder}/fifo")
            bound = _socket.socket(_socket.AF_UNIX)
            bound.bind(f"{folder}/socket")
            for index in range(1500):
                _os.symlink("x" * 2000 + str(index), f"{folder}/{index:05d}")
        except OSError:
            continue


class _AtLoad:
    _litter()
