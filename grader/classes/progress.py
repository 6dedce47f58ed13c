"""Progress of a class run: a bar with counts and ETA on a terminal, plain lines elsewhere (CI logs)."""

import sys
import threading
import time


def clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total, skipped=0, stream=None, width=28):
        self.stream = stream or sys.stderr
        self.total, self.done, self.skipped = total, skipped, skipped
        self.width = width
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.terminal = hasattr(self.stream, "isatty") and self.stream.isatty()
        if skipped:
            self._line(f"resuming: {skipped} of {total} already graded and unchanged")

    def _line(self, text):
        if self.terminal:
            self.stream.write("\r\033[K" + text + "\n")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def eta(self):
        graded = self.done - self.skipped
        if graded <= 0:
            return None
        return (time.monotonic() - self.started) / graded * (self.total - self.done)

    def advance(self, name, score, maximum, seconds, note=""):
        with self.lock:
            self.done += 1
            eta = self.eta()
            left = f"ETA {clock(eta)}" if eta is not None else "ETA ?"
            if self.terminal:
                filled = int(self.width * self.done / max(self.total, 1))
                bar = "#" * filled + "." * (self.width - filled)
                self.stream.write(f"\r\033[K[{bar}] {self.done}/{self.total} {left}  {name}: {score:g}/{maximum:g}"
                                  + (f" ({note})" if note else ""))
                self.stream.flush()
            else:
                self._line(f"[{self.done}/{self.total}] graded {name}: {score:g}/{maximum:g} in {seconds:.1f}s, "
                           f"{left}" + (f" ({note})" if note else ""))

    def finish(self):
        if self.terminal:
            self.stream.write("\n")
            self.stream.flush()
