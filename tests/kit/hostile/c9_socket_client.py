"""A stub graded beside a classmate who serves a solution over an abstract unix socket: it asks
for a few seconds while loading, then becomes what it got.

base: stub
class: 9
run: main
"""

import socket as _socket
import time as _time

_ADDRESS = "\0hostile-handover-@TOKEN@"


def _ask():
    deadline = _time.monotonic() + 6
    while _time.monotonic() < deadline:
        try:
            with _socket.socket(_socket.AF_UNIX) as client:
                client.settimeout(2)
                client.connect(_ADDRESS)
                chunks = []
                while True:
                    chunk = client.recv(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
                return b"".join(chunks).decode()
        except OSError:
            _time.sleep(0.2)
    return None


class _AtLoad:
    _found = _ask()
    if _found:
        exec(compile(_found, "handover", "exec"), globals())
