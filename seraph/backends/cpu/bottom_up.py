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
so the strong rules' arguments hold across it as across a dense round.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from seraph.backends.cpu.atomics import atomic_load
from seraph.backends.cpu.pull import pull_floor, relax
from seraph.backends.cpu.push import GRAIN_EDGES, copy, edge_ends, round_pieces
from seraph.interrupts import STOP
from seraph.kernels import kernel, zeros
from seraph.lightest import NO_BOUND, LightestIn, proven
from seraph.predictors import STRONG

#: Vertices per chunk when looking for the unsettled ones (one prange iteration each).
_SCAN_CHUNK = 1 << 16
#: Vertices a chunk scans between looks at the other chunks' counts.
_LOOK_EVERY = 4096


def unsettled(values: np.ndarray, indptr: np.ndarray, threshold, limit: int,
              lightest: LightestIn = NO_BOUND) -> np.ndarray | None:
    """The vertices with in-edges that the strong rule does not prove final (ascending
    int64; :func:`seraph.lightest.proven`), or None when their in-edges number ``limit``
    or more."""
    chunks = max(1, -(-len(values) // _SCAN_CHUNK))
    threshold = values.dtype.type(threshold)
    m = int(indptr[-1])
    # Chunk c lists its vertices from its first vertex's place on: only their pages of
    # this array are ever touched.
    listed = np.empty(len(values), dtype=np.int64)
    counts, edges = _list_unsettled.over(len(values), m)(values, indptr, threshold, *lightest,
                                                          limit, chunks, listed, STOP)
    if edges.sum() >= limit:
        return None
    return _gathered(listed, counts)


def pull_round(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray | None,
               values: np.ndarray, vertices: np.ndarray, op: int, inf,
               threshold, by_weight: bool = False, levels: bool = False
               ) -> tuple[np.ndarray, object, int]:
    """Pulls the in-edges of each of ``vertices`` (distinct ids, the ones the strong rule
    leaves open at ``threshold``) into ``values``, each vertex's until it has the lowest
    value it can get (with ``levels``: :func:`~seraph.backends.cpu.pull.pull_floor`) or,
    with ``by_weight``
    (rows lightest first), until the next in-edge's weight alone reaches its value.

    Returns (the vertices lowered, ascending if ``vertices`` is, the smallest value written
    or ``inf``, the in-edges of ``vertices``)."""
    weights = np.zeros(0, dtype=np.float32) if weights is None else weights
    ends = edge_ends(indptr, vertices)  # compiled: one pass, where numpy takes three
    total = int(ends[-1]) if len(ends) else 0
    pieces = max(1, min(round_pieces(), total // GRAIN_EDGES))  # as the push engine's
    # Piece p takes the vertices whose in-edges end in its share of the round's edges.
    bounds = np.searchsorted(ends, total * np.arange(pieces + 1) // pieces, side="right")
    bounds[0], bounds[-1] = 0, len(vertices)
    lowered = np.zeros(len(vertices), dtype=np.bool_)
    minimum = np.full(pieces, inf, dtype=values.dtype)
    # One piece, or a small graph: the serial twin (seraph.kernels).
    _pull_pieces.over(total, len(indices), 2 * GRAIN_EDGES)(
        indptr, indices, weights, values, vertices, bounds, lowered, minimum, op, by_weight,
        inf, pull_floor(STRONG, levels, threshold), STOP)
    return _kept(vertices, lowered), minimum.min(), total


@kernel(cache=True, parallel=True, nogil=True)
def _list_unsettled(values, indptr, threshold, light_codes, light_unit, limit, chunks, listed,
                    halt):
    """Per chunk of vertices: the unsettled ones, listed in ``listed`` from the chunk's
    first vertex on, how many and their in-edges, in one pass. Every ``_LOOK_EVERY``
    vertices a chunk adds up all chunks' edges so far and stops once they reach ``limit``:
    the caller then only needs to know that the total is that high. (The other chunks'
    counts are read while they grow, so the sum is a lower bound.) It stops there too once
    ``halt[0]`` is set (:mod:`seraph.interrupts`)."""
    n = len(values)
    counts = zeros(chunks, np.int64)
    edges = zeros(chunks, np.int64)
    for c in prange(chunks):
        # Counted in locals, published between blocks of _LOOK_EVERY vertices, so no
        # vertex pays for testing whether a look is due (a modulo).
        count = edge_count = 0
        lo, hi = n * c // chunks, n * (c + 1) // chunks
        for look in range(lo, hi, _LOOK_EVERY):
            edges[c] = edge_count
            if _total(edges) >= limit or atomic_load(halt, 0):
                break
            for v in range(look, min(look + _LOOK_EVERY, hi)):
                # The value first: most vertices are settled, and their indptr stays unread.
                if not proven(values[v], threshold, light_codes, light_unit, v):
                    # Written at the chunk's next place and kept where it has in-edges,
                    # without a branch: isolated vertices lie in no pattern.
                    degree = indptr[v + 1] - indptr[v]
                    listed[lo + count] = v
                    count += degree > 0
                    edge_count += degree
        counts[c], edges[c] = count, edge_count
    return counts, edges


@njit(cache=True, inline="always")
def _total(a):
    """``a.sum()``, as a loop: numba's sum compiles in far more time."""
    total = 0
    for x in a:
        total += x
    return total


@njit(cache=True)
def _gathered(listed, counts):
    """The lists of :func:`_list_unsettled`'s chunks, one after another."""
    n, chunks = len(listed), len(counts)
    out = np.empty(_total(counts), dtype=np.int64)
    k = 0
    for c in range(chunks):
        lo = n * c // chunks
        copy(out[k:], listed[lo:], counts[c])
        k += counts[c]
    return out


@njit(cache=True)
def _kept(vertices, keep):
    """``vertices[keep]`` in one compiled pass (numpy's mask indexing scans twice)."""
    out = np.empty(len(vertices), dtype=vertices.dtype)
    k = 0
    for i in range(len(vertices)):
        if keep[i]:
            out[k] = vertices[i]
            k += 1
    return out[:k]


@kernel(cache=True, parallel=True, nogil=True)
def _pull_pieces(indptr, indices, weights, values, vertices, bounds, lowered, minimum,
                 op, by_weight, inf, floor, halt):
    # No bitmap of the vertices offering the floor: a round pulls a few thousand vertices,
    # and building it (pull.offering_floor) would cost more than it saves.
    # Each vertex is written only by the piece that pulls it; reading a value another
    # piece is lowering is safe (module docstring of seraph.backends.cpu.pull).
    # A piece looks at halt[0] (seraph.interrupts) every _LOOK_EVERY vertices.
    for p in prange(len(bounds) - 1):
        best_written = inf
        for i in range(bounds[p], bounds[p + 1]):
            if (i & (_LOOK_EVERY - 1)) == 0 and atomic_load(halt, 0):
                break
            v = vertices[i]
            old = values[v]
            best = relax(values, indices, weights, indptr[v], indptr[v + 1], old,
                          op, by_weight, inf, floor)
            if best < old:
                values[v] = best
                lowered[i] = True
                best_written = min(best_written, best)
        minimum[p] = best_written
