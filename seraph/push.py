"""CPU push engine: exact parallel (min, +) relaxation from a sparse frontier over CSR.

The scheduler hands over here when the out-edges of the changed vertices are few
(DESIGN section 4): pulling over every page would then do almost only failed attempts,
while pushing touches just the frontier's out-edges.

A round splits the frontier's out-edges (not its vertices, so one hub cannot stall a
thread) into equal contiguous pieces, one ``prange`` iteration each. Every relaxation is
an atomic min, so no update is lost; a vertex whose value a thread lowers is claimed for
the next frontier with an atomic test-and-set on ``in_next``, so it is listed once.
Each piece appends its claims to its own slice of one output buffer; the slices are
concatenated and sorted (for a large frontier, scanning the flags is faster). The answer
after convergence is the exact fixpoint whatever the thread interleaving, because every
lowering re-queues the vertex.

Pushing is Bellman-Ford-like: on high-diameter weighted graphs a vertex may be lowered and
re-pushed many times (no priority order, no delta-stepping buckets).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from seraph.atomics import atomic_load, atomic_min, atomic_xchg
from seraph.semiring import STORED, UNIT, infinity, value_dtype

#: Edges per piece below which splitting a round further costs more than it balances.
_GRAIN_EDGES = 4096
#: Pieces per thread, so threads that draw cheap pieces (few successful updates) take more.
_PIECES_PER_THREAD = 4
#: Sorted ids of a set larger than 1/_SCAN_RATIO of the vertices come faster from scanning a
#: flag per vertex (about 2 ns each) than from sorting the ids (about 70 ns each).
_SCAN_RATIO = 32


@dataclass
class PushResult:
    """What :func:`push_until` did.

    Attributes:
        frontier: vertices still to push (sorted int64); empty when converged.
        rounds: push rounds run.
        edges_pushed: out-edges relaxed over all rounds.
        changed: sorted unique int64 ids of every vertex whose value was lowered.
        min_changed_value: the smallest value written by a successful update in the last
            round (the SSSP strong predictor's threshold), or INF if it lowered nothing.
    """

    frontier: np.ndarray
    rounds: int
    edges_pushed: int
    changed: np.ndarray
    min_changed_value: np.int32 | np.float32

    @property
    def converged(self) -> bool:
        return self.frontier.size == 0


def push_round(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray | None,
               values: np.ndarray, frontier: np.ndarray, in_next: np.ndarray,
               weight_mode: int) -> tuple[np.ndarray, int]:
    """Relax every out-edge of ``frontier`` once, in parallel, updating ``values`` in place.

    ``frontier`` holds distinct vertex ids (int32 or int64). ``in_next`` is a uint8 array of
    ``len(values)`` zeros; it is zero again on return. Returns the next frontier (sorted
    int64: every vertex whose value this round lowered) and the number of edges pushed.
    """
    edge_weights, stride = _edge_weights(indices, weights, values, weight_mode)
    nxt, pushed, _ = _push_round(indptr, indices, edge_weights, stride, values,
                                 infinity(weight_mode), frontier, in_next, _max_pieces())
    return nxt, int(pushed)


def push_until(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray | None,
               values: np.ndarray, frontier: np.ndarray, weight_mode: int,
               max_frontier_edges: int, outdeg: np.ndarray) -> PushResult:
    """Push rounds until the frontier is empty or has ``max_frontier_edges`` out-edges or more.

    At least one round runs, so a caller that hands over on the same threshold always makes
    progress. The result's frontier is what the dense engine must continue from.
    """
    edge_weights, stride = _edge_weights(indices, weights, values, weight_mode)
    inf = infinity(weight_mode)
    in_next = np.zeros(len(values), dtype=np.uint8)
    frontier = np.asarray(frontier, dtype=np.int64)
    changed = []
    rounds = edges = 0
    min_changed = inf
    while frontier.size:
        frontier, pushed, min_changed = _push_round(indptr, indices, edge_weights, stride,
                                                    values, inf, frontier, in_next,
                                                    _max_pieces())
        rounds += 1
        edges += int(pushed)
        changed.append(frontier)
        if outdeg[frontier].sum() >= max_frontier_edges:
            break
    return PushResult(frontier=frontier, rounds=rounds, edges_pushed=edges,
                      changed=_sorted_union(changed, len(values)),
                      min_changed_value=values.dtype.type(min_changed))


def _sorted_union(arrays: list[np.ndarray], n: int) -> np.ndarray:
    """Sorted unique ids in [0, n) from int64 arrays (np.unique hashes: ten times slower)."""
    ids = np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)
    if len(ids) > n // _SCAN_RATIO:
        marks = np.zeros(n, dtype=bool)
        marks[ids] = True
        return np.flatnonzero(marks)
    ids.sort()
    keep = np.ones(len(ids), dtype=bool)
    keep[1:] = ids[1:] != ids[:-1]
    return ids[keep]


def _edge_weights(indices: np.ndarray, weights: np.ndarray | None, values: np.ndarray,
                  weight_mode: int) -> tuple[np.ndarray, int]:
    """The weight array the kernel reads as ``weights[e * stride]``.

    Unit and zero weights become a one-element array of the value dtype with stride 0, so a
    single kernel serves all three modes and its arithmetic stays in the value dtype.
    """
    dtype = value_dtype(weight_mode)
    if values.dtype != dtype:
        raise ValueError(f"weight mode {weight_mode} relaxes {dtype} values, got {values.dtype}")
    if weight_mode != STORED:
        return np.array([1 if weight_mode == UNIT else 0], dtype=dtype), 0
    if weights is None or weights.dtype != np.float32 or len(weights) != len(indices):
        raise ValueError("stored-weight mode needs float32 weights, one per edge")
    return weights, 1


def _max_pieces() -> int:
    return numba.get_num_threads() * _PIECES_PER_THREAD


@njit(cache=True)
def _edge_ends(indptr: np.ndarray, frontier: np.ndarray) -> np.ndarray:
    """``ends[i]``: out-edges of ``frontier[:i + 1]``, i.e. where vertex i's edges end in
    the round's edge numbering."""
    ends = np.empty(len(frontier), dtype=np.int64)
    total = 0
    for i in range(len(frontier)):
        u = frontier[i]
        total += indptr[u + 1] - indptr[u]
        ends[i] = total
    return ends


@njit(cache=True)
def _push_round(indptr, indices, weights, stride, values, inf, frontier, in_next, max_pieces):
    """One push round; returns (next frontier, edges pushed, smallest value written).

    Only the pushing itself runs in parallel: one parallel region per round, because each
    region wakes the thread pool, which is what small rounds (most rounds of a BFS or SSSP
    tail) would otherwise spend their time on. A round below ``_GRAIN_EDGES`` edges runs
    on this thread alone.
    """
    ends = _edge_ends(indptr, frontier)
    total = ends[-1] if len(ends) else 0
    pieces = max(1, min(max_pieces, (total + _GRAIN_EDGES - 1) // _GRAIN_EDGES))
    # A piece can claim at most one vertex per edge and at most every vertex once.
    offsets = np.zeros(pieces + 1, dtype=np.int64)
    for p in range(pieces):
        offsets[p + 1] = offsets[p] + min(_piece_end(total, pieces, p)
                                          - _piece_end(total, pieces, p - 1), len(values))
    claimed = np.empty(offsets[-1], dtype=np.int64)
    counts = np.zeros(pieces, dtype=np.int64)
    pushed = np.zeros(pieces, dtype=np.int64)
    lowest = np.full(pieces, inf, dtype=values.dtype)
    if pieces == 1:
        counts[0], pushed[0], lowest[0] = _push_piece(
            indptr, indices, weights, stride, values, inf, frontier, ends, in_next, 0, total,
            claimed)
    else:
        _push_pieces(indptr, indices, weights, stride, values, inf, frontier, ends, in_next,
                     offsets, claimed, counts, pushed, lowest)
    if counts.sum() > len(values) // _SCAN_RATIO:
        nxt = np.flatnonzero(in_next)
    else:
        nxt = np.empty(counts.sum(), dtype=np.int64)
        k = 0
        for p in range(pieces):
            nxt[k:k + counts[p]] = claimed[offsets[p]:offsets[p] + counts[p]]
            k += counts[p]
        nxt.sort()
    in_next[nxt] = 0
    return nxt, pushed.sum(), lowest.min()


@njit(parallel=True, cache=True)
def _push_pieces(indptr, indices, weights, stride, values, inf, frontier, ends, in_next,
                 offsets, claimed, counts, pushed, lowest):
    """Push the round's edges as ``len(counts)`` equal pieces in parallel; piece p claims
    into ``claimed[offsets[p]:offsets[p + 1]]`` and reports in ``counts/pushed/lowest[p]``."""
    total, pieces = ends[-1], len(counts)
    for p in prange(pieces):
        counts[p], pushed[p], lowest[p] = _push_piece(
            indptr, indices, weights, stride, values, inf, frontier, ends, in_next,
            _piece_end(total, pieces, p - 1), _piece_end(total, pieces, p),
            claimed[offsets[p]:offsets[p + 1]])


@njit(inline="always", cache=True)
def _piece_end(total, pieces, p):
    """End (exclusive) of piece p in the round's edge numbering; p = -1 gives 0."""
    return total * (p + 1) // pieces


@njit(inline="always", cache=True)
def _push_piece(indptr, indices, weights, stride, values, inf, frontier, ends, in_next,
                lo, hi, out):
    """Relax round edges [lo, hi); returns (vertices claimed into out, edges pushed,
    smallest value written)."""
    claimed = 0
    pushed = 0
    lowest = inf
    i = np.searchsorted(ends, lo, side="right")  # the frontier vertex owning edge lo
    pos = lo
    while pos < hi:
        u = frontier[i]
        stop = min(ends[i], hi)
        # Read once: if another thread lowers value[u] meanwhile, it also re-queues u.
        val = atomic_load(values, u)
        if val != inf:  # never add to INF (int32 INF + 1 would wrap)
            first = indptr[u] + pos - (ends[i] - (indptr[u + 1] - indptr[u]))
            for e in range(first, first + stop - pos):
                v = indices[e]
                cand = val + weights[e * stride]
                # The plain read filters the common failing case without a locked write.
                if cand < atomic_load(values, v) and cand < atomic_min(values, v, cand):
                    lowest = min(lowest, cand)
                    if atomic_xchg(in_next, v, 1) == 0:
                        out[claimed] = v
                        claimed += 1
            pushed += stop - pos
        pos = stop
        i += 1
    return claimed, pushed, lowest
