"""What delta-stepping's two drivers share: push.py's bins, drained between parallel
regions, and region.py's, drained within one. A vertex's ``pend`` holds the bin of its live
entry, so that each waiting vertex has one; a value's bin is ``floor(value / delta)``."""

from __future__ import annotations

import numpy as np
from numba import njit

from seraph.backends.cpu.atomics import atomic_store
from seraph.prefetch import prefetch

UNTOUCHED = np.iinfo(np.int32).max  #: `pend` of a vertex this run has not queued yet
IDLE = UNTOUCHED - 1  #: `pend` of a vertex that waits in no bin
MAX_BIN = IDLE - 1  #: larger bins are clamped to this one (still exact)

#: How far ahead a single-thread push asks for a frontier vertex's row bounds, and for
#: its row (the bounds asked for earlier have landed by then; see prefetch.py). The last
#: vertices ask for the last one's again, which costs a hint and saves a branch.
BOUNDS_AHEAD = 16
ROW_AHEAD = 8
#: Delta-stepping also asks for the heads of the row this many vertices on (its first
#: HEADS_ROW): their values, and, pushing alone, what a lowering's claim reads (their
#: ``pend`` and row bounds); a parallel round, for a longer row's, this many edges on.
HEADS_AHEAD = 4
HEADS_ROW = 16


@njit(inline="always", cache=True)
def bin_of(value, inv_delta):
    return np.int64(min(np.float64(value) * inv_delta, np.float64(MAX_BIN)))


@njit(inline="always", cache=True)
def ask_ahead(indptr, indices, weights, values, pend, frontier, i, last):
    """Before pushing ``frontier[i]`` alone (of ``frontier[:last + 1]``): ask for the row
    bounds, the row and the heads' state of the vertices the push reaches next."""
    prefetch(indptr, frontier[min(i + BOUNDS_AHEAD, last)])
    ahead = indptr[frontier[min(i + ROW_AHEAD, last)]]
    prefetch(indices, ahead)
    prefetch(weights, ahead)
    w = frontier[min(i + HEADS_AHEAD, last)]  # its row, asked for at ROW_AHEAD, has landed
    for e in range(indptr[w], min(indptr[w + 1], indptr[w] + HEADS_ROW)):
        prefetch(values, indices[e])
        prefetch(pend, indices[e])
        prefetch(indptr, indices[e])


@njit(inline="always", cache=True)
def publish(live, rounds, frontier, edges):
    """A push phase's progress so far, for the thread that shows it (atomic stores, so
    that the compiler keeps each one in its round)."""
    atomic_store(live, 0, rounds)
    atomic_store(live, 1, frontier)
    atomic_store(live, 2, edges)
