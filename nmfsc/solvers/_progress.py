"""Progress of a run on stderr: a tqdm bar on a terminal, plain periodic lines
otherwise (a log file, a pipe), where a bar's redraws would pile up."""

from __future__ import annotations

import sys
import time

__all__ = ["PlainProgress", "is_terminal", "progress_bar", "show_progress"]


def progress_bar(progress, name, total, initial=0):
    """A tqdm bar on stderr counting iterations (its ETA comes from their rate),
    or None when ``progress`` is false; a clear ImportError without tqdm.

    When stderr is not a terminal (a log file, a pipe) a bar's redraws would
    pile up as thousands of lines: a :class:`PlainProgress` writes one plain
    line every :attr:`PlainProgress.interval` seconds and one at the end instead.
    """
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ImportError(
            "progress=True needs tqdm (pip install tqdm); or pass progress=False"
        ) from None
    if not is_terminal(sys.stderr):
        return PlainProgress(name, total, initial)
    return tqdm(total=total, initial=initial, desc=name, unit="it", dynamic_ncols=True)


def is_terminal(stream):
    """True when ``stream`` is an interactive terminal."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


class PlainProgress:
    """Progress as plain lines on stderr, for output that is not a terminal.

    ``name: done/total it (percent), seconds s, ETA seconds s[, postfix]`` every
    ``interval`` seconds and once at :meth:`close`; the methods a solver uses
    of a tqdm bar (``update``, ``set_postfix``, ``close``).
    """

    #: Seconds between two lines.
    interval = 30.0

    def __init__(self, name, total, initial=0):
        self.name, self.total, self.n, self.initial = name, total, initial, initial
        self.postfix = ""
        self.start = self.last = time.perf_counter()
        self.closed = False

    def update(self, n=1):
        self.n += n
        now = time.perf_counter()
        if now - self.last >= self.interval:
            self.last = now
            self.write(now)

    def set_postfix(self, refresh=False, **values):
        self.postfix = ", ".join(f"{key}={value}" for key, value in values.items())

    def write(self, now):
        elapsed = now - self.start
        done = self.n - self.initial
        line = f"{self.name}: {self.n}/{self.total} it"
        if self.total:
            line += f" ({100 * self.n / self.total:.0f} %)"
        line += f", {elapsed:.0f} s"
        if done > 0 and self.total and self.n < self.total and not self.closed:
            line += f", ETA {elapsed / done * (self.total - self.n):.0f} s"
        if self.postfix:
            line += f", {self.postfix}"
        print(line, file=sys.stderr, flush=True)

    def close(self):
        if not self.closed:
            self.closed = True
            self.write(time.perf_counter())


def show_progress(bar, history):
    """Advance ``bar`` by one iteration, showing the objective and its relative change."""
    prev = history[-2]
    change = (prev - history[-1]) / abs(prev) if prev != 0 else 0.0
    bar.set_postfix(objective=f"{history[-1]:.6g}", rel_change=f"{change:.2e}", refresh=False)
    bar.update(1)
