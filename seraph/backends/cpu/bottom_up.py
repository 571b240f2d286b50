"""Bottom-up host rounds: pull, on the host, only the vertices that can still change.

After a dense round of BFS or CC on a power-law graph, the strong rule proves nearly every
vertex final (its value is at or below the threshold), yet the few that are not are spread
over almost every page. The changed vertices are many, so the push engine does not take
over, and the next dense round would move almost the whole graph again to attempt a few
thousand vertices. Their in-edges are few, though, and the host holds the whole CSC, so
the scheduler pulls them there instead: this is GAP's bottom-up BFS step, taken over the
vertices not yet proven final rather than the unvisited ones, for every algorithm.

A bottom-up round attempts every vertex that a dense round with the strong predictor
would attempt (all in-edges of every vertex above the threshold; the others are final),
so the strong rules' arguments hold across it as across a dense round. It finds those
vertices and pulls them in one pass over the vertices, block by block, as GAP's step does;
where their in-edges reach the round's limit it stops and is no round, but what it pulled
stands (:func:`pull_unsettled`).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from seraph.backends.cpu.atomics import atomic_add, atomic_load
from seraph.backends.cpu.pull import BLOCK, ROW_AHEAD, pull_floor, relax
from seraph.backends.cpu.push import copy
from seraph.interrupts import STOP
from seraph.kernels import kernel, zeros
from seraph.lightest import NO_BOUND, LightestIn, proven
from seraph.predictors import STRONG
from seraph.prefetch import prefetch

# The columns of _pull_blocks's figures per block (LOWERED is -1 where it was not pulled).
LOWERED, ATTEMPTED, EDGES = range(3)
#: Vertices, evenly spaced, whose unsettled in-edges estimate all of them before a round,
#: which does not start where they reach the limit: a round stopped partway costs up to
#: the limit's edges, and the BFS sweep after it cannot read the frontier's bits alone.
SAMPLES = 1 << 12


class Pulled(NamedTuple):
    """What :func:`pull_unsettled` did."""

    lowered: np.ndarray  # the vertices it lowered, ascending
    minimum: object  # the smallest value written, or the algorithm's infinity
    attempted: int  # the vertices it pulled
    edges: int  # their in-edges
    complete: bool  # whether it pulled every unsettled vertex: a round


def pull_unsettled(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray | None,
                   values: np.ndarray, threshold, limit: float, op: int, inf,
                   lightest: LightestIn = NO_BOUND, by_weight: bool = False,
                   levels: bool = False, listed: np.ndarray | None = None) -> Pulled | None:
    """Pulls into ``values`` the in-edges of every vertex with in-edges that the strong rule
    does not prove final at ``threshold`` (:func:`seraph.lightest.proven`), each vertex's
    until it has the lowest value it can get (with ``levels``:
    :func:`~seraph.backends.cpu.pull.pull_floor`) or, with ``by_weight`` (rows lightest
    first), until the next in-edge's weight alone reaches its value.

    Blocks of :data:`~seraph.backends.cpu.pull.BLOCK` vertices go to the threads one at a
    time; each lists its unsettled vertices, then pulls them, unless the in-edges listed so
    far in all blocks reach ``limit``: then no later block is pulled. None where no block
    was, or where :data:`SAMPLES` vertices estimate the limit met; otherwise the blocks
    pulled stand, each vertex's value a real path's, and with ``complete`` False a dense
    round must attempt the rest. ``listed``: room for an int32 per vertex, written before
    it is read (None: a new array)."""
    n, m = len(values), int(indptr[-1])
    threshold = values.dtype.type(threshold)
    if _sampled_edges(values, indptr, threshold, *lightest, SAMPLES) >= limit:
        return None
    weights = np.zeros(0, dtype=np.float32) if weights is None else weights
    blocks = np.empty((-(-n // BLOCK), 3), dtype=np.int64)
    blocks[:, LOWERED] = -1
    # Block b lists its vertices from its first vertex's place on.
    listed = np.empty(n, dtype=np.int32) if listed is None else listed
    workers = max(1, min(numba.get_num_threads(), len(blocks)))
    minimum = _pull_blocks.over(n, m)(
        indptr, indices, weights, values, threshold, *lightest, limit, op, by_weight, inf,
        pull_floor(STRONG, levels, threshold), workers, listed, blocks, STOP)
    lowered = blocks[:, LOWERED]
    pulled = lowered >= 0
    if not pulled.any():
        return None
    count = int(lowered[pulled].sum())
    # numpy allocates the list the caller keeps: it backs a large one with huge pages.
    out = np.empty(count, dtype=np.int64)
    return Pulled(_gathered.over(count)(listed, lowered, out), minimum,
                  int(blocks[pulled, ATTEMPTED].sum()), int(blocks[pulled, EDGES].sum()),
                  bool(pulled.all()))


@kernel(cache=True, parallel=True, nogil=True)
def _pull_blocks(indptr, indices, weights, values, threshold, light_codes, light_unit, limit,
                 op, by_weight, inf, floor, workers, listed, blocks, halt):
    """:func:`pull_unsettled`'s pass on ``workers`` workers, each taking the next block
    from a shared ticket (a descheduled thread leaves its blocks to the others), until none
    is left, the limit is met or ``halt[0]`` is set (:mod:`seraph.interrupts`). Block b's
    unsettled vertices are listed at ``listed[b * BLOCK:]``, then replaced there by the
    ones it lowered; ``blocks[b]`` gets their counts and in-edges. Returns the smallest
    value written.

    Each vertex is written only by the worker that pulls its block; reading a value another
    is lowering is safe (module docstring of seraph.backends.cpu.pull)."""
    n = len(values)
    shared = zeros(2, np.int64)  # the next block, and the in-edges listed so far
    minima = np.empty(workers, dtype=values.dtype)
    for w in prange(workers):
        best_written = inf
        while not atomic_load(halt, 0):
            b = atomic_add(shared, 0, 1)
            if b >= len(blocks):
                break
            lo = b * BLOCK
            count, edge_count = _list_unsettled(values, indptr, threshold, light_codes,
                                                light_unit, lo, min(lo + BLOCK, n), listed)
            if atomic_add(shared, 1, edge_count) + edge_count >= limit:
                break
            lowered = 0
            last = lo + count - 1
            for i in range(lo, lo + count):
                # The rows of the listed vertices ahead, and the first in-neighbour's value
                # of a nearer one, whose row has landed by then: a BFS row stops there.
                prefetch(indices, indptr[listed[min(i + ROW_AHEAD, last)]])
                prefetch(values, indices[indptr[listed[min(i + ROW_AHEAD // 2, last)]]])
                v = listed[i]
                old = values[v]
                best = relax(values, indices, weights, indptr[v], indptr[v + 1], old, op,
                             by_weight, inf, floor)
                if best < old:
                    values[v] = best
                    listed[lo + lowered] = v  # at or before i: the list is read ahead
                    lowered += 1
                    best_written = min(best_written, best)
            blocks[b, LOWERED], blocks[b, ATTEMPTED], blocks[b, EDGES] = \
                lowered, count, edge_count
        minima[w] = best_written
    best = inf
    for w in range(workers):
        best = min(best, minima[w])
    return best


@njit(inline="always", cache=True)
def _list_unsettled(values, indptr, threshold, light_codes, light_unit, lo, hi, listed):
    """List at ``listed[lo:]`` the vertices among [lo, hi) that the strong rule does not
    prove final and that have in-edges; returns how many, and their in-edges.

    Two passes, neither with a branch on a vertex: the unproven vertices, then those of
    them with in-edges. Settled, unsettled and isolated vertices lie in no pattern (many
    of a power-law graph's vertices are isolated, and stay unreached), where a branch
    would guess wrong at each; and a settled vertex's row bounds stay unread."""
    unproven = lo
    for v in range(lo, hi):
        listed[unproven] = v
        unproven += not proven(values[v], threshold, light_codes, light_unit, v)
    count = edge_count = 0
    for i in range(lo, unproven):
        v = listed[i]
        degree = indptr[v + 1] - indptr[v]
        listed[lo + count] = v
        count += degree > 0
        edge_count += degree
    return count, edge_count


@njit(cache=True)
def _sampled_edges(values, indptr, threshold, light_codes, light_unit, samples):
    """The in-edges of the unsettled vertices among ``samples`` evenly spaced ones, times
    the spacing."""
    step = max(1, len(values) // samples)
    total = 0
    for v in range(0, len(values), step):
        if not proven(values[v], threshold, light_codes, light_unit, v):
            total += indptr[v + 1] - indptr[v]
    return total * step


@kernel(cache=True, parallel=True, nogil=True)
def _gathered(listed, lowered, out):
    """The lists of the vertices :func:`_pull_blocks`'s blocks lowered, one after another
    (none of a block not pulled), in ``out``, which it returns."""
    starts = np.empty(len(lowered) + 1, dtype=np.int64)
    starts[0] = 0
    for b in range(len(lowered)):
        starts[b + 1] = starts[b] + max(lowered[b], 0)
    for b in prange(len(lowered)):
        if lowered[b] > 0:
            copy(out[starts[b]:], listed[b * BLOCK:], lowered[b])
    return out
