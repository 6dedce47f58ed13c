"""Takes the uid's epoll watches (fs.epoll.max_user_watches, per user): several epoll instances each watch
every eventfd this process can hold.

base: buggy
class: k
run: pressure
"""

import os as _os
import select as _select


def _grab_watches():
    got = 0
    try:
        events = [_os.eventfd(0) for _ in range(60)]
    except OSError:
        return 0
    for _ in range(60):
        try:
            instance = _select.epoll()
        except OSError:
            break
        for fd in events:
            try:
                instance.register(fd, _select.EPOLLIN)
            except OSError:
                break
            got += 1
    return got


def attention_dropout(*args, **kwargs):
    raise RuntimeError(f"ALLOWANCE epoll {_grab_watches()} watches")
