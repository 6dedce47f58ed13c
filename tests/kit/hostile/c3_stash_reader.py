"""A later submission (the same student's resubmission, or a friend's) that shows what an earlier
one logged of the hidden checks, in its load errors.

base: stub
class: 3
run: later
"""

import os as _os

_LOGS = ["/tmp/.hostile-requests-@TOKEN@", "/dev/shm/.hostile-requests-@TOKEN@", "/var/tmp/.hostile-requests-@TOKEN@"]


def _logged_requests():
    found = []
    for folder in _LOGS:
        try:
            found += [name.split("-", 1)[1] for name in sorted(_os.listdir(folder))]
        except (OSError, IndexError):
            continue
    return list(dict.fromkeys(found))


def _part(index):
    return RuntimeError(f"log {index}: " + " ".join(_logged_requests()[18 * index:18 * (index + 1)]))


class _Report0:
    raise _part(0)


class _Report1:
    raise _part(1)


class _Report2:
    raise _part(2)


class _Report3:
    raise _part(3)


class _Report4:
    raise _part(4)


class _Report5:
    raise _part(5)
