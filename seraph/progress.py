"""Progress bars and verbosity shared by the CLI, the partitioner and the engine.

Bars go to stderr and are shown only on a TTY, so logs and CI stay clean; ``-q`` turns
them off everywhere and ``-v`` adds informational messages.

The engine reports the end of each round to :func:`round_done`; it does nothing unless a
front end installed a listener with :func:`watch_rounds` (the CLI's live line and ``-v``
round log)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from tqdm import tqdm

_verbosity = 1  # 0 quiet, 1 normal, 2 verbose


def set_verbosity(level: int) -> None:
    global _verbosity
    _verbosity = level


def verbosity() -> int:
    return _verbosity


def bar(total: float | None = None, desc: str = "", unit: str = "it", **kw: Any) -> tqdm:
    """A tqdm bar on stderr, disabled when quiet or when stderr is not a terminal."""
    disable = _verbosity == 0 or not sys.stderr.isatty()
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr,
                disable=disable, leave=False, dynamic_ncols=True, **kw)


def info(message: str) -> None:
    """A message for -v runs."""
    if _verbosity >= 2:
        print(message, file=sys.stderr)


def note(message: str) -> None:
    """A message for normal runs (suppressed by -q)."""
    if _verbosity >= 1:
        print(message, file=sys.stderr)


# -- rounds ---------------------------------------------------------------------------------
#: Called by the engine at the end of each round: (phase, stats, frontier size or None).
RoundListener = Callable[[str, Any, "int | None"], None]
_listener: RoundListener | None = None

#: A run shows its live line once it has taken this long ...
LIVE_AFTER_S = 2.0
#: ... and redraws it at most this often, so that it costs nothing measurable.
LIVE_EVERY_S = 0.2


def round_done(phase: str, stats: Any, frontier: int | None = None) -> None:
    """The engine's per-round report (``phase`` is dense, push or bottom-up; push reports
    once per batch of push rounds). A no-op unless someone is watching."""
    if _listener is not None:
        _listener(phase, stats, frontier)


def round_line(phase: str, stats: Any, frontier: int | None, elapsed: float) -> str:
    """One round's status: phase, round, frontier size (when known), pages moved, time."""
    front = "" if frontier is None else f"  frontier {frontier:,}"
    return (f"round {stats.rounds} {phase}{front}  pages moved {stats.pages_transferred:,}"
            f"  {elapsed:.1f} s")


class _LiveLine:
    """A status line redrawn in place on the terminal, shown only once a run is slow."""

    def __init__(self, label: str):
        self.label, self.start, self.last, self.shown = label, time.perf_counter(), 0.0, False

    def __call__(self, phase: str, stats: Any, frontier: int | None) -> None:
        now = time.perf_counter()
        if now - self.start < LIVE_AFTER_S or now - self.last < LIVE_EVERY_S:
            return
        self.last, self.shown = now, True
        line = round_line(phase, stats, frontier, now - self.start)
        sys.stderr.write(f"\r\033[K{self.label}{line}")
        sys.stderr.flush()

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


class _RoundLog:
    """``-v``: one line per round, on a terminal or not."""

    def __init__(self, label: str):
        self.label, self.start = label, time.perf_counter()

    def __call__(self, phase: str, stats: Any, frontier: int | None) -> None:
        print(self.label + round_line(phase, stats, frontier, time.perf_counter() - self.start),
              file=sys.stderr)


@contextlib.contextmanager
def watch_rounds(label: str = "") -> Iterator[None]:
    """Reports the engine's rounds for the duration of the block: a line per round when
    verbose, else a live line on a terminal for runs over :data:`LIVE_AFTER_S`; nothing
    when quiet or when stderr is not a terminal."""
    global _listener
    if _verbosity >= 2:
        listener: _LiveLine | _RoundLog | None = _RoundLog(label)
    elif _verbosity == 1 and sys.stderr.isatty():
        listener = _LiveLine(label)
    else:
        listener = None
    previous, _listener = _listener, listener
    try:
        yield
    finally:
        _listener = previous
        if isinstance(listener, _LiveLine):
            listener.clear()
