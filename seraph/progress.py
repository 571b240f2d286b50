"""Progress bars and verbosity shared by the CLI, the partitioner and the engine.

Bars go to stderr and are shown only on a TTY, so logs and CI stay clean; ``-q`` turns
them off everywhere and ``-v`` adds informational messages.

The engine reports the start of each phase to :func:`working` and the end of each round to
:func:`round_done`; they do nothing unless a front end installed a listener with
:func:`watch_rounds` (the CLI's live line and ``-v`` round log), whose thread also keeps
the lines current while a long round or a push phase runs in compiled code."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
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
_listener: _Rounds | None = None

#: A run shows its live line once it has taken this long ...
LIVE_AFTER_S = 2.0
#: ... and redraws it this often, also while a round or a push phase is under way.
LIVE_EVERY_S = 0.2
#: ``-v`` prints at most one line this often: rounds that end faster share a line.
LOG_EVERY_S = 0.05
#: A push phase's progress while compiled code (or a GPU kernel) runs it: rounds so far,
#: the frontier, edges pushed; read by the thread that draws the lines (see :func:`working`).
LIVE = np.zeros(3, dtype=np.int64)
#: Phases that are no rounds: the line names them alone.
WHOLE_PHASES = ("union-find",)


def working(phase: str, stats: Any) -> None:
    """The engine starts ``phase`` (dense, push, bottom-up, union-find): the lines say so
    until it is done. A push phase publishes its rounds in :data:`LIVE` as they go."""
    if _listener is not None:
        LIVE[:] = 0
        _listener.working(phase, stats)


def round_done(phase: str, stats: Any, frontier: int | None = None) -> None:
    """The engine's per-round report (``phase`` is dense, push or bottom-up; push reports
    once per phase, its rounds having shown in :data:`LIVE`). A no-op unless someone is
    watching."""
    if _listener is not None:
        _listener.done(phase, stats, frontier)


def round_line(phase: str, rounds: tuple[int, int], frontier: int | None, pages: int,
               elapsed: float) -> str:
    """Rounds ``rounds`` (first, last; a whole phase: (0, 0)): phase, rounds, frontier size
    (when known), pages moved, time."""
    first, last = rounds
    which = f"{phase}" if phase in WHOLE_PHASES else \
        f"round {last} {phase}" if first >= last else f"rounds {first}-{last} {phase}"
    front = "" if frontier is None else f"  frontier {frontier:,}"
    return f"{which}{front}  pages moved {pages:,}  {elapsed:.1f} s"


class _Rounds:
    """What a listener knows of the run: the phase under way and its rounds so far. The
    engine's reports come from the main thread, :meth:`tick` from a thread of its own that
    keeps the lines current within a long round or push phase; a lock keeps them apart."""

    def __init__(self, label: str):
        self.label, self.start = label, time.perf_counter()
        self.lock = threading.Lock()
        self.phase, self.stats, self.frontier = "", None, None
        self.live = False  # the phase under way counts its rounds in LIVE

    def working(self, phase: str, stats: Any) -> None:
        with self.lock:
            self.phase, self.stats, self.frontier = phase, stats, None
            self.live = phase == "push"

    def done(self, phase: str, stats: Any, frontier: int | None) -> None:
        with self.lock:
            self.phase, self.stats, self.frontier, self.live = phase, stats, frontier, False
            self.report(True)

    def tick(self) -> None:
        with self.lock:
            if self.stats is not None:
                self.report(False)

    def now(self) -> tuple[int, int | None]:
        """The rounds so far and the frontier, a push phase's live ones included."""
        if self.live:
            return self.stats.rounds + int(LIVE[0]), int(LIVE[1])
        return self.stats.rounds, self.frontier

    def report(self, ended: bool) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _LiveLine(_Rounds):
    """A status line redrawn in place on the terminal, shown only once a run is slow."""

    interval = LIVE_EVERY_S
    shown = False
    last = 0.0

    def report(self, ended: bool) -> None:
        now = time.perf_counter()
        if now - self.start < LIVE_AFTER_S or now - self.last < LIVE_EVERY_S:
            return
        self.last, self.shown = now, True
        rounds, frontier = self.now()
        line = round_line(self.phase, (rounds, rounds), frontier,
                          self.stats.pages_transferred, now - self.start)
        sys.stderr.write(f"\r\033[K{self.label}{line}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


class _RoundLog(_Rounds):
    """``-v``: every round on a line of its own, on a terminal or not, a push phase's as
    they go; rounds that end within :data:`LOG_EVERY_S` of the last line share the next."""

    interval = LOG_EVERY_S
    printed = 0  # the rounds the lines have covered
    last = 0.0

    def __init__(self, label: str):
        super().__init__(label)
        self.phases: dict[str, None] = {}  # the phases of the rounds no line covers yet

    def working(self, phase: str, stats: Any) -> None:
        super().working(phase, stats)
        if phase in WHOLE_PHASES:  # it has no rounds to show: its start is shown
            with self.lock:
                self.phases[phase] = None
                self.print(*self.now(), time.perf_counter())

    def report(self, ended: bool) -> None:
        rounds, frontier = self.now()
        if ended or rounds > self.printed:
            self.phases[self.phase] = None
        now = time.perf_counter()
        if self.phases and now - self.last >= LOG_EVERY_S:
            self.print(rounds, frontier, now)

    def print(self, rounds: int, frontier: int | None, now: float) -> None:
        line = round_line("+".join(self.phases), (min(self.printed + 1, rounds), rounds),
                          frontier, self.stats.pages_transferred, now - self.start)
        print(self.label + line, file=sys.stderr, flush=True)
        self.printed, self.last = rounds, now
        self.phases.clear()

    def close(self) -> None:
        with self.lock:
            if self.phases:
                self.print(*self.now(), time.perf_counter())


@contextlib.contextmanager
def watch_rounds(label: str = "") -> Iterator[None]:
    """Reports the engine's rounds for the duration of the block: a line per round when
    verbose, else a live line on a terminal for runs over :data:`LIVE_AFTER_S`; nothing
    when quiet or when stderr is not a terminal."""
    global _listener
    if _verbosity >= 2:
        listener: _Rounds | None = _RoundLog(label)
    elif _verbosity == 1 and sys.stderr.isatty():
        listener = _LiveLine(label)
    else:
        listener = None
    previous, _listener = _listener, listener
    stop = threading.Event()
    ticker = None
    if listener is not None:
        ticker = threading.Thread(target=_tick, args=(listener, stop), daemon=True,
                                  name="seraph-progress")
        ticker.start()
    try:
        yield
    finally:
        _listener = previous
        stop.set()
        if ticker is not None:
            ticker.join()
            listener.close()


def _tick(listener: _Rounds, stop: threading.Event) -> None:
    while not stop.wait(listener.interval):
        listener.tick()
