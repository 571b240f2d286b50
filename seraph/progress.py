"""Progress bars and verbosity shared by the CLI, the partitioner and the engine.

Bars go to stderr and are shown only on a TTY, so logs and CI stay clean; ``-q`` turns
them off everywhere and ``-v`` adds informational messages."""

from __future__ import annotations

import sys
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
