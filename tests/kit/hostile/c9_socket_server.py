"""Hands its (correct) source to classmates graded at the same time, over an abstract unix socket
(no file, no path): a thread serves it for as long as the worker lives.

base: clean
class: 9
run: main
"""

import linecache as _linecache
import socket as _socket
import threading as _threading

_ADDRESS = "\0hostile-handover-@TOKEN@"


def _own_source():
    for entry in list(_linecache.cache.values()):
        text = "".join(entry[2]) if len(entry) > 2 else ""
        if "class MultiHeadAttention(" in text and "_own_source" in text:
            return text
    return ""


def _serve():
    data = _own_source().encode()
    try:
        server = _socket.socket(_socket.AF_UNIX)
        server.bind(_ADDRESS)
        server.listen(8)
    except OSError:
        return
    while True:
        try:
            client, _ = server.accept()
            with client:
                client.sendall(data)
        except OSError:
            return


class _AtLoad:
    _threading.Thread(target=_serve, daemon=True).start()


_kept_causal_mask = causal_mask
_slept = []


def causal_mask(*args, **kwargs):  # stay alive a while, once, so that classmates have time to ask
    if not _slept:
        _slept.append(1)
        import time

        time.sleep(3.0)
    return _kept_causal_mask(*args, **kwargs)
