"""CPU push engine: exact parallel (min, +) relaxation from a sparse frontier over CSR.

The scheduler hands over here when the out-edges of the changed vertices are few
(docs/design.md, "Sparse rounds: push and bottom-up"): pulling over every page would then
do almost only failed attempts, while pushing touches just the frontier's out-edges.

Two ways to push:

- **Rounds** (BFS and CC, and SSSP with ``delta=inf``): each round relaxes every out-edge of
  the frontier, and the vertices it lowered are the next frontier. For unit weights this
  is exactly BFS; with stored weights it is Bellman-Ford, and on a high-diameter graph a
  vertex is lowered and re-pushed many times (50 times the edges on a weighted grid).
- **Delta-stepping** (SSSP, Meyer & Sanders; GAP's ``sssp.cc``): a lowered vertex waits in
  bin ``floor(value / delta)`` and bins are emptied in increasing order, so most vertices
  are pushed only once they are (nearly) final. A bin is drained either by this thread
  alone, one vertex at a time (a bucket queue: cheap when bins are small, as on grids,
  and parallel regions cost tens of microseconds each), or, when its out-edges reach
  ``_PARALLEL_EDGES``, as one parallel round. On several threads, a small frontier's
  small bins go first to one parallel region for the whole run (region.py), which hands
  the rest back here.

A parallel round splits the frontier's out-edges (not its vertices, so one hub cannot stall
a thread) into equal contiguous pieces, one ``prange`` iteration each. Every relaxation is
an atomic min, so no update is lost; a vertex whose value a thread lowers is claimed with
an atomic test-and-set on ``in_next``, so it is listed once. Each piece appends its claims
to its own slice of one output buffer.

Exactness does not depend on the order: every lowering queues the vertex again, so at
convergence every vertex has pushed its final value and the values are the fixpoint,
whatever delta and the thread interleaving were. Delta only changes how much work it takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange
from numba.typed import List

from seraph.backends.caches import max_out_degree, operand_dtype
from seraph.backends.cpu.atomics import (
    atomic_add,
    atomic_load,
    atomic_min,
    atomic_xchg,
)
from seraph.backends.cpu.bins import (
    BOUNDS_AHEAD,
    HEADS_AHEAD,
    HEADS_ROW,
    IDLE,
    MAX_BIN,
    ROW_AHEAD,
    UNTOUCHED,
    ask_ahead,
    bin_of,
    publish,
)
from seraph.backends.cpu.pull import offer
from seraph.backends.cpu.region import DONE, HANDED, delta_region, joined
from seraph.errors import ConfigError
from seraph.interrupts import STOP
from seraph.kernels import PARALLEL, kernel, zeros
from seraph.operators import HOP, OPERATORS, infinity, value_dtype
from seraph.prefetch import prefetch
from seraph.progress import LIVE

#: Edges per piece below which splitting a round further costs more than it balances.
GRAIN_EDGES = 4096
#: Pieces per thread, so threads that draw cheap pieces (few successful updates) take more.
_PIECES_PER_THREAD = 4
#: Sorted ids of a set larger than 1/(_SCAN_RATIO x threads) of the vertices come faster
#: from scanning a flag per vertex in parallel than from sorting the ids: a flag costs
#: that many times less than an id to sort.
_SCAN_RATIO = 32
#: Vertices per chunk of a parallel scan, at least, and the most chunks.
_SCAN_CHUNK = 1 << 16
_MAX_SCAN_CHUNKS = 512
#: A round, or a delta-stepping bin, whose out-edges reach this is pushed in parallel;
#: smaller ones are pushed by one thread, since waking the pool costs as much as pushing
#: ~10^5 edges on a busy machine: a lower limit slows a road-like grid's many mid-sized
#: rounds and speeds up no other graph.
_PARALLEL_EDGES = 1 << 16
#: Delta-stepping that would start in the region (region.py) first pushes this many
#: out-edges on the calling thread: a query of a small component ends within them, and
#: never wakes the pool nor waits for a descheduled thread to join.
_ALONE_EDGES = 1 << 13
#: No limit on the out-edges delta-stepping pushes.
_NO_BUDGET = np.iinfo(np.int64).max
#: Auto delta: this many mean weights per average out-degree (see default_delta).
_DELTA_DEGREES = 4.0
#: Weights sampled for the auto delta and the ring size.
_WEIGHT_SAMPLES = 1 << 16
#: The ring holds at most 2^_MAX_RING_BITS consecutive bins; farther ones wait in a pile.
_MAX_RING_BITS = 12
#: Claims a piece of a one-level round keeps before moving them to the shared list.
_CLAIM_BUFFER = 1024


@dataclass
class PushResult:
    """What :func:`push_until` did.

    Attributes:
        frontier: vertices whose out-edges still need pushing (int64, in no particular
            order); empty when converged. After a hand-back this is every vertex still
            waiting, so nothing is lost.
        rounds: push rounds run (for delta-stepping: bins drained, each parallel round of a
            bin counting once).
        edges_pushed: out-edges relaxed over all rounds.
        changed: unique int64 ids of every vertex whose value was lowered, in no
            particular order.
        minimum: the smallest value of the frontier's vertices (infinity when empty).
    """

    frontier: np.ndarray
    rounds: int
    edges_pushed: int
    changed: np.ndarray
    minimum: object

    @property
    def converged(self) -> bool:
        return self.frontier.size == 0


def push_round(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray | None,
               values: np.ndarray, frontier: np.ndarray, in_next: np.ndarray,
               op: int) -> tuple[np.ndarray, int]:
    """Relax every out-edge of ``frontier`` once, in parallel, updating ``values`` in place.

    ``frontier`` holds distinct vertex ids (int32 or int64). ``in_next`` is a uint8 array of
    ``len(values)`` zeros; it is zero again on return. Returns the next frontier (sorted
    int64: every vertex whose value this round lowered) and the number of edges pushed.
    """
    edge_weights, stride = _edge_weights(indices, weights, values, op)
    nxt, pushed, _, ordered = _push_round.parallel(
        indptr, indices, edge_weights, stride, op, values, infinity(op), frontier, in_next,
        round_pieces())
    if not ordered:
        nxt.sort()
    return nxt, int(pushed)


class Scratch:
    """The scratch arrays of :func:`push_until`: per-vertex ones, which it leaves clean,
    and delta-stepping's work arrays.

    Allocating and filling them costs O(n) per call (the delta-stepping bins are filled
    in numba), which is more than a tail of small pushes costs, and fresh memory costs a
    page fault per page written. A caller that pushes again and again on one graph passes
    one Scratch to every call (the engine keeps one with the graph, for all its runs)."""

    def __init__(self, num_vertices: int) -> None:
        self.num_vertices = num_vertices
        self._in_next: np.ndarray | None = None
        self._pend: np.ndarray | None = None
        self._room: _Room | None = None
        self._stacks: tuple[List, List] | None = None

    def in_next(self) -> np.ndarray:
        """A uint8 flag per vertex, all zero (push rounds' claims)."""
        if self._in_next is None:
            self._in_next = np.zeros(self.num_vertices, dtype=np.uint8)
        return self._in_next

    def pend(self) -> np.ndarray:
        """An int32 per vertex, all ``UNTOUCHED`` (delta-stepping's bin of each vertex)."""
        if self._pend is None:
            self._pend = np.full(self.num_vertices, UNTOUCHED, dtype=np.int32)
        return self._pend

    def room(self, ring_bits: int) -> tuple[_Room, tuple[List, List]]:
        """Delta-stepping's work arrays, and its bins' stacks for a ring of
        ``2^ring_bits`` bins (two typed lists, which a call passes on their own: within a
        tuple numba takes far longer to read them). A round's arrays are twice as large
        as the largest an earlier run asked for (none before the first): the next source's
        slightly larger round then makes no new ones, and pages never written cost
        nothing."""
        room, stacks = self._room, self._stacks
        if room is None or room.need[0] > len(room.keys):
            size = 0 if room is None else 2 * int(room.need[0])
            self._room = room = _new_room(self.num_vertices, size)
        if stacks is None or len(stacks[0]) != (1 << ring_bits) + 1:
            self._stacks = stacks = tuple(
                List([np.empty(16, dtype=np.int64) for _ in range((1 << ring_bits) + 1)])
                for _ in range(2))
        return room, stacks


def push_until(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray | None,
               values: np.ndarray, frontier: np.ndarray, op: int,
               max_frontier_edges: int, delta: float | None = None,
               scratch: Scratch | None = None, max_degree: int | None = None,
               sample: tuple[float, float] | None = None) -> PushResult:
    """Push until converged or until the waiting vertices have ``max_frontier_edges``
    out-edges or more (the hand-back to the dense engine).

    ``frontier`` must hold every vertex whose out-edges may not have been relaxed with its
    current value. At least one round runs, so a caller
    that hands over on the same threshold always makes progress.

    ``delta`` applies to stored weights only: the delta-stepping bin width (``None``: chosen
    by :func:`default_delta`; ``math.inf``: plain rounds, unordered). Unit and zero weights
    always push in rounds, which for them is already in order.

    ``scratch`` (for ``len(values)`` vertices) saves allocating the per-vertex arrays,
    ``max_degree`` (the largest out-degree) a pass over ``indptr``, and ``sample``
    (:func:`weight_sample` of ``weights``) sampling the weights.
    """
    edge_weights, stride = _edge_weights(indices, weights, values, op)
    frontier = np.asarray(frontier, dtype=np.int64)
    if scratch is None or scratch.num_vertices != len(values):
        scratch = Scratch(len(values))
    if OPERATORS[op].binned:
        sample = weight_sample(weights) if sample is None else sample
        delta = default_delta(indptr, weights, sample) if delta is None else \
            _checked_delta(delta)
        if delta != math.inf:
            return _ordered(indptr, indices, edge_weights, values, frontier,
                            max_frontier_edges, delta, scratch, sample[1])
    if max_degree is None:
        max_degree = max_out_degree(indptr)
    return _rounds(indptr, indices, edge_weights, stride, op, values, frontier,
                   max_frontier_edges, scratch.in_next(), max_degree)


def weight_sample(weights: np.ndarray) -> tuple[float, float]:
    """The mean and the largest of a strided sample of ``weights`` (0 for none), which
    delta-stepping's bins are sized by."""
    sample = weights[:: max(1, len(weights) // _WEIGHT_SAMPLES)]
    if not len(sample):
        return 0.0, 0.0
    return float(sample.mean(dtype=np.float64)), float(sample.max())


def default_delta(indptr: np.ndarray, weights: np.ndarray,
                  sample: tuple[float, float] | None = None) -> float:
    """The delta-stepping bin width for a graph: ``_DELTA_DEGREES`` mean weights per average
    out-degree (from a strided sample of the weights, or ``sample``, their
    :func:`weight_sample`).

    Meyer and Sanders' delta for random weights is Theta(max weight / degree): each bin then
    holds about as many vertices as one round can use, and a vertex is rarely lowered after
    it was pushed. One constant serves grids and R-MAT and uniform graphs with GAP's
    weights (docs/engine.md, "Dense and sparse phases").
    """
    m = len(weights)
    if m == 0:
        return 1.0
    mean = (weight_sample(weights) if sample is None else sample)[0]
    degree = m / max(1, len(indptr) - 1)
    return _DELTA_DEGREES * mean / degree if mean > 0 else 1.0


def _checked_delta(delta: float) -> float:
    delta = float(delta)
    if not delta > 0:  # also rejects NaN
        raise ConfigError(f"delta must be positive (or inf for unordered rounds), got {delta}")
    return delta


def _rounds(indptr, indices, edge_weights, stride, op, values, frontier,
            max_frontier_edges, in_next, max_degree) -> PushResult:
    """Push rounds until the frontier is empty or has ``max_frontier_edges`` out-edges
    (``in_next``: zero flags, zero again on return)."""
    loop = _rounds_loop.over(max_frontier_edges, len(indices))
    inf = infinity(op)
    frontier, rounds, edges, changed, unique = loop(
        indptr, indices, edge_weights, stride, op, values, inf, frontier, in_next,
        round_pieces(), max_frontier_edges, max_degree, STOP, LIVE)
    # Unique: the frontier is one level, every vertex of it at one value.
    minimum = values[frontier[0]] if unique and len(frontier) else \
        _smallest(values, frontier, values.dtype.type(inf))
    return PushResult(frontier=frontier, rounds=int(rounds), edges_pushed=int(edges),
                      changed=changed if unique else _sorted_unique(changed, len(values)),
                      minimum=minimum)


@kernel(cache=True, nogil=True)
def _rounds_loop(indptr, indices, weights, stride, op, values, inf, frontier, in_next,
                 max_pieces, max_frontier_edges, max_degree, halt, live):
    """The loop of :func:`_rounds` in compiled code: a high-diameter graph (a grid, a road
    network) runs thousands of tiny rounds, where a Python loop would cost more than the
    pushing. Returns (frontier, rounds, edges pushed, every frontier concatenated, whether
    that concatenation is free of repeats).

    Rounds below ``_PARALLEL_EDGES`` edges, and every round of its serial twin
    (:mod:`seraph.kernels`), run on this thread (:func:`_push_alone_round`) and claim
    straight into the concatenation, so a grid's thousands of small rounds allocate nothing
    and take no atomic.

    A frontier of one value pushed over one weight for every edge (BFS's levels) offers
    every head the same candidate: a round lowers a vertex at most once, and no later round
    lowers it again (its candidates are no smaller). Such rounds need no claim flags, the
    next frontier has one value again, and the concatenation has no repeats to remove; in
    parallel too they claim straight into it (:func:`_push_level_round`).

    A small frontier's out-edges are bounded, and a large one's counted only until they
    reach ``max_frontier_edges`` (:func:`_frontier_edges`).

    After each round it publishes the rounds, the frontier and the edges so far in
    ``live`` (:data:`seraph.progress.LIVE`), and it stops once ``halt[0]`` is set
    (:mod:`seraph.interrupts`): the frontier it returns still holds every vertex waiting."""
    # Room for every vertex once (a BFS claims each at most once), reserved, not touched:
    # grown from a small size, it would be reallocated and copied log2(n) times in a BFS.
    changed = np.empty(max(16, 2 * len(frontier), len(values)), dtype=np.int64)
    count = rounds = edges = np.int64(0)  # a literal 0 would compile its callees once more
    one_level = stride == 0 and _one_value(values, frontier)
    # Every decision on a frontier's out-edges compares them with one of these.
    threshold = min(_PARALLEL_EDGES, max_frontier_edges)
    frontier_edges = _frontier_edges(indptr, frontier, max_degree, threshold,
                                     max_frontier_edges)
    while len(frontier):
        if not PARALLEL or frontier_edges < _PARALLEL_EDGES:
            if count + frontier_edges > len(changed):  # room for a claim per edge
                changed = _grown(changed, count, count + frontier_edges)
            claimed, pushed = _push_alone_round(
                indptr, indices, weights, stride, op, values, inf, frontier, in_next, changed,
                count, not one_level)
            frontier = changed[count:count + claimed]
            frontier_edges = _frontier_edges(indptr, frontier, max_degree, threshold,
                                             max_frontier_edges)
        elif one_level:
            claimed, pushed = _push_level_round(indptr, indices, weights[0], values, inf,
                                                frontier, changed, count, max_pieces)
            frontier = changed[count:count + claimed]
            frontier_edges = _frontier_edges(indptr, frontier, max_degree, threshold,
                                             max_frontier_edges)
        else:
            frontier, pushed, frontier_edges, _ = _push_round(
                indptr, indices, weights, stride, op, values, inf, frontier, in_next,
                max_pieces)
            if count + len(frontier) > len(changed):
                changed = _grown(changed, count, count + len(frontier))
            changed[count:count + len(frontier)] = frontier
        rounds += 1
        edges += pushed
        count += len(frontier)
        publish(live, rounds, len(frontier), edges)
        if frontier_edges >= max_frontier_edges or atomic_load(halt, 0):
            break
    return frontier, rounds, edges, changed[:count], one_level


@njit(cache=True)
def _one_value(values, vertices):
    """Whether every one of ``vertices`` holds the same value."""
    same = True
    for i in range(1, len(vertices)):
        same = same and values[vertices[i]] == values[vertices[0]]
    return same


@kernel(cache=True)
def _frontier_edges(indptr, frontier, max_degree, threshold, cap):
    """The frontier's out-edges, or, when its size times the largest out-degree is below
    ``threshold``, that bound: a decision that compares them with ``threshold`` (or a
    larger number) takes the same branch either way, and the room reserved for a round's
    claims (one per edge) only needs a bound. Counting reads every new vertex's row bounds,
    the first touch of each, where the next round's prefetched reads take those misses
    anyway, so a road network's BFS, whose frontiers are small, would pay them twice.
    A long frontier is counted on every thread; a short one only until it reaches
    ``cap``, the hand-back's limit: past it the rounds end, and a frontier that large
    holds more vertices than it takes to get there."""
    bound = len(frontier) * max_degree
    if bound < threshold:
        return bound
    if PARALLEL and len(frontier) >= _PARALLEL_EDGES:
        return _out_edges_everywhere(indptr, frontier)
    return _out_edges(indptr, frontier, cap)


@njit(cache=True)
def _out_edges(indptr, vertices, cap):
    """The out-edges of ``vertices``, counted until they reach ``cap``."""
    total = 0
    for u in vertices:
        total += indptr[u + 1] - indptr[u]
        if total >= cap:
            break
    return total


@njit(parallel=True, cache=True)
def _out_edges_everywhere(indptr, vertices):
    """The out-edges of ``vertices``, on every thread."""
    total = 0
    for i in prange(len(vertices)):
        total += indptr[vertices[i] + 1] - indptr[vertices[i]]
    return total


@njit(cache=True)
def _grown(a, used, need):
    """``a`` with room for ``need`` items, its first ``used`` kept."""
    grown = np.empty(max(2 * len(a), need), dtype=a.dtype)
    copy(grown, a, used)
    return grown


@njit(inline="always", cache=True)
def copy(dst, src, count):
    """``dst[:count] = src[:count]``, as a loop: the slice copy's shape check compiles an
    error message (numba's string formatting), a large share of a small kernel's compile."""
    for i in range(count):
        dst[i] = src[i]


@njit(cache=True)
def _push_alone_round(indptr, indices, weights, stride, op, values, inf, frontier, in_next,
                      out, start, flagged):
    """One push round on this thread, with plain loads and stores: claims go to
    ``out[start:]``, each once by its flag in ``in_next`` where ``flagged`` (without it,
    the caller knows a vertex is lowered at most once a round: see _rounds_loop); returns
    (vertices claimed, edges pushed)."""
    k = start
    pushed = 0
    last = len(frontier) - 1
    for i in range(len(frontier)):
        # Rows ahead (see BOUNDS_AHEAD), written out: a compiled helper taking the
        # arrays costs this loop more than the prefetch saves.
        prefetch(indptr, frontier[min(i + BOUNDS_AHEAD, last)])
        prefetch(indices, indptr[frontier[min(i + ROW_AHEAD, last)]])
        u = frontier[i]
        val = values[u]
        if val == inf:  # never add to INF (int32 INF + 1 would wrap)
            continue
        lo, hi = indptr[u], indptr[u + 1]
        pushed += hi - lo
        if not flagged:
            # One level (stride 0): one candidate for every out-edge, each head lowered once.
            # Without a branch on the comparison: a head is listed, and kept only where
            # lowered, so a mispredicted compare cannot stall the loads of later rows.
            cand = val + weights[0]
            for e in range(lo, hi):
                v = indices[e]
                old = values[v]
                lowered = cand < old
                values[v] = cand if lowered else old
                out[k] = v
                k += lowered
            continue
        for e in range(lo, hi):
            v = indices[e]
            cand = offer(op, val, weights[e * stride])
            if cand < values[v]:
                values[v] = cand
                if in_next[v] == 0:
                    in_next[v] = 1
                    out[k] = v
                    k += 1
    if flagged:
        for i in range(start, k):
            in_next[out[i]] = 0
    return k - start, pushed


def _ordered(indptr, indices, weights, values, frontier, max_frontier_edges, delta,
             scratch, largest) -> PushResult:
    """Delta-stepping from ``frontier`` (stored float32 weights, the largest sampled
    ``largest``)."""
    ring_bits = ring_bits_for(largest, delta)
    stepping = _delta_stepping.over(max_frontier_edges, len(indices))
    pend, (room, (stack_keys, stack_degs)) = scratch.pend(), scratch.room(ring_bits)

    def step(twin, frontier, budget):
        return twin(indptr, indices, weights, values, frontier, 1.0 / delta, ring_bits,
                    max_frontier_edges, budget, _PARALLEL_EDGES, round_pieces(), pend, room,
                    stack_keys, stack_degs, STOP, LIVE)

    # A step's changed vertices are a view of the room's list, which the next step reuses:
    # what the caller keeps is a copy (numpy's, in huge pages where large), or joined.
    rounds, pushed, changed = 0, 0, np.empty(0, dtype=np.int64)
    if stepping is _delta_stepping.parallel and \
            len(frontier) * _CLAIM_EDGES < _PARALLEL_EDGES:
        frontier, ordered, rounds, pushed, changed = step(_delta_stepping.serial, frontier,
                                                          _ALONE_EDGES)
        if not frontier.size or pushed < _ALONE_EDGES or STOP[0]:  # done, at the limit
            return _waiting_result(values, frontier, ordered, rounds, pushed,
                                   changed.copy())
        # Small bins on every thread in one region, until a bin is large (region.py).
        why, more_rounds, more_pushed, more_changed, frontier = delta_region(
            indptr, indices, weights, values, frontier, 1.0 / delta, ring_bits,
            max_frontier_edges, _PARALLEL_EDGES, pend, STOP, LIVE)
        rounds, pushed = rounds + more_rounds, pushed + more_pushed
        changed = joined(changed, more_changed, pend)
        if why == DONE or (why != HANDED and more_rounds):
            return _waiting_result(values, frontier, False, rounds, pushed, changed)
    nxt, ordered, more_rounds, more_pushed, more_changed = step(stepping, frontier,
                                                                _NO_BUDGET)
    more_changed = joined(changed, more_changed, pend) if len(changed) else \
        more_changed.copy()
    return _waiting_result(values, nxt, ordered, rounds + int(more_rounds),
                           pushed + int(more_pushed), more_changed)


def ring_bits_for(largest: float, delta: float) -> int:
    """The ring's size (bits) for the largest weight ``largest``: a bin for every bin one
    push can reach, so that the far pile only takes initial values."""
    reach = largest / delta
    return min(_MAX_RING_BITS, max(1, math.ceil(math.log2(min(reach, 2.0**30) + 2))))


def _waiting_result(values, waiting, ordered, rounds, pushed, changed) -> PushResult:
    """Delta-stepping's result: ``waiting`` sorted (where not ``ordered``) as the next
    frontier, and its smallest value."""
    if not ordered:
        waiting.sort()
    return PushResult(frontier=waiting, rounds=int(rounds), edges_pushed=int(pushed),
                      changed=changed,
                      minimum=_smallest(values, waiting, values.dtype.type(np.inf)))


def _sorted_unique(ids: np.ndarray, n: int) -> np.ndarray:
    """The sorted unique ids in [0, n) of int64 ``ids`` (np.unique's sort and mask make
    more passes)."""
    if _scan_is_faster(len(ids), n, round_pieces()):
        marks = np.zeros(n, dtype=np.uint8)
        _mark(marks, ids)
        return ids_between.over(n)(marks, 1, 1)
    ids = np.sort(ids)
    keep = np.ones(len(ids), dtype=bool)
    keep[1:] = ids[1:] != ids[:-1]
    return ids[keep]


@njit(cache=True)
def _smallest(values, vertices, inf):
    """The smallest of ``values[vertices]``, ``inf`` for none, without numpy's gathered
    copy (a hand-back's frontier can hold most of the vertices)."""
    smallest = inf
    for v in vertices:
        smallest = min(smallest, values[v])
    return smallest


@njit(cache=True)
def _mark(marks, ids):
    """``marks[ids] = 1`` in one compiled loop, without numpy's fancy-index overhead."""
    for v in ids:
        marks[v] = 1


@njit(cache=True)
def _scan_is_faster(count, n, max_pieces):
    """Whether ``count`` sorted ids of [0, n) come faster from a parallel scan of a flag per
    vertex than from sorting them (``max_pieces``: see round_pieces; numba's thread count
    read in compiled code would keep it out of the cache)."""
    return count * _SCAN_RATIO * (max_pieces // _PIECES_PER_THREAD) > n


@kernel(cache=True, parallel=True)
def ids_between(a, lo, hi):
    """The ascending ids ``v`` with ``lo <= a[v] <= hi``: np.flatnonzero, in parallel (a
    count per chunk, then each chunk writes its ids at its offset)."""
    n = len(a)
    chunks = max(1, min(n // _SCAN_CHUNK, _MAX_SCAN_CHUNKS))
    starts = zeros(chunks + 1, np.int64)
    for c in prange(chunks):
        k = 0
        for v in range(n * c // chunks, n * (c + 1) // chunks):
            k += _between(a[v], lo, hi)
        starts[c + 1] = k
    starts = np.cumsum(starts)
    out = np.empty(starts[-1], dtype=np.int64)
    for c in prange(chunks):
        k, end = starts[c], starts[c + 1]
        for v in range(n * c // chunks, n * (c + 1) // chunks):
            # Without a branch on the selection, which a dense round's flags (half of
            # them set, in no pattern) mispredict: every id is written at the chunk's next
            # place and kept by moving on, until the chunk's room is full.
            if k < end:
                out[k] = v
            k += _between(a[v], lo, hi)
    return out


@njit(cache=True, inline="always")
def _between(x, lo, hi):
    """``lo <= x <= hi`` without a branch: the chained comparison short-circuits, and its
    branch mispredicts on flags set in no pattern (it costs a pass several times over)."""
    return (lo <= x) & (x <= hi)


def _edge_weights(indices: np.ndarray, weights: np.ndarray | None, values: np.ndarray,
                  op: int) -> tuple[np.ndarray, int]:
    """The weight array the kernel reads as ``weights[e * stride]``.

    HOP's and LABEL's constant 1 and 0 become a one-element array of the value dtype with
    stride 0, so a single kernel serves every operator (:func:`~seraph.backends.cpu.pull.
    offer`) and its arithmetic stays in the value dtype. A weighted operator reads its
    operands (:func:`seraph.backends.caches.operands`), one per edge.
    """
    dtype = value_dtype(op)
    if values.dtype != dtype:
        raise ValueError(f"edge operator {op} relaxes {dtype} values, got {values.dtype}")
    if not OPERATORS[op].weighted:
        return _CONSTANT_WEIGHTS[op], 0
    want = operand_dtype(op)
    if weights is None or weights.dtype != want or len(weights) != len(indices):
        raise ValueError(f"edge operator {op} needs {want} operands, one per edge")
    return weights, 1


#: HOP's and LABEL's one weight, read by the kernels, never written.
_CONSTANT_WEIGHTS = {op: np.array([1 if op == HOP else 0], dtype=value_dtype(op))
                     for op in OPERATORS if not OPERATORS[op].weighted}


def round_pieces() -> int:
    """How many pieces a parallel round of host work is split into at most."""
    return numba.get_num_threads() * _PIECES_PER_THREAD


# --------------------------------------------------------------------------------------
# Parallel rounds
# --------------------------------------------------------------------------------------
@njit(cache=True)
def edge_ends(indptr: np.ndarray, frontier: np.ndarray, max_pieces: int) -> np.ndarray:
    """``ends[i]``: out-edges of ``frontier[:i + 1]``, i.e. where vertex i's edges end in
    the round's edge numbering; a long frontier's in up to ``max_pieces`` on every thread."""
    ends = np.empty(len(frontier), dtype=np.int64)
    if len(frontier) >= _PARALLEL_EDGES:
        _edge_ends_everywhere(indptr, frontier, ends, max_pieces)
        return ends
    total = 0
    for i in range(len(frontier)):
        u = frontier[i]
        total += indptr[u + 1] - indptr[u]
        ends[i] = total
    return ends


@njit(parallel=True, cache=True)
def _edge_ends_everywhere(indptr, frontier, ends, max_pieces):
    """:func:`edge_ends` as a scan in two parallel passes: each piece's running sums, then
    the pieces before it added."""
    n = len(frontier)
    pieces = min(n, max_pieces)
    before = np.zeros(pieces + 1, dtype=np.int64)
    for p in prange(pieces):
        total = 0
        for i in range(n * p // pieces, n * (p + 1) // pieces):
            u = frontier[i]
            total += indptr[u + 1] - indptr[u]
            ends[i] = total
        before[p + 1] = total
    for p in range(pieces):
        before[p + 1] += before[p]
    for p in prange(1, pieces):
        for i in range(n * p // pieces, n * (p + 1) // pieces):
            ends[i] += before[p]


@kernel(cache=True)
def _push_round(indptr, indices, weights, stride, op, values, inf, frontier, in_next, max_pieces):
    """One push round; returns (next frontier, edges pushed, the next frontier's out-edges,
    whether it is sorted). The next frontier is sorted only when it comes from a scan:
    sorting a few hundred claims costs more than a small round's pushing (a 1024^2 grid's
    BFS is 2045 such rounds), and claim order is discovery order, which keeps the next
    round's reads near each other."""
    claimed, offsets, counts, pushed, out_edges = _push_frontier(
        indptr, indices, weights, stride, op, values, inf, frontier, in_next, max_pieces)
    ordered = _scan_is_faster(counts.sum(), len(values), max_pieces)
    if ordered:
        nxt = ids_between(in_next, np.int64(1), np.int64(1))  # as from Python: one compile
    else:
        nxt = np.empty(counts.sum(), dtype=np.int64)
        k = 0
        for p in range(len(counts)):
            nxt[k:k + counts[p]] = claimed[offsets[p]:offsets[p] + counts[p]]
            k += counts[p]
    in_next[nxt] = 0
    return nxt, pushed, out_edges, ordered


@njit(cache=True)
def _push_frontier(indptr, indices, weights, stride, op, values, inf, frontier, in_next,
                   max_pieces):
    """Relax every out-edge of ``frontier`` once; returns (claimed, offsets, counts, edges
    pushed, the claimed vertices' out-edges): piece p claimed (set ``in_next`` of, once
    each) the vertices ``claimed[offsets[p]:offsets[p] + counts[p]]``.

    Only the pushing itself runs in parallel: one parallel region per round, because each
    region wakes the thread pool, which is what small rounds (most rounds of a BFS or SSSP
    tail) would otherwise spend their time on. A round below ``GRAIN_EDGES`` edges runs
    on this thread alone.
    """
    ends = edge_ends(indptr, frontier, max_pieces)
    total = ends[-1] if len(ends) else 0
    pieces = _piece_count(total, max_pieces)
    # A piece can claim at most one vertex per edge and at most every vertex once.
    offsets = np.zeros(pieces + 1, dtype=np.int64)
    for p in range(pieces):
        offsets[p + 1] = offsets[p] + min(_piece_end(total, pieces, p)
                                          - _piece_end(total, pieces, p - 1), len(values))
    claimed = np.empty(offsets[-1], dtype=np.int64)
    counts = np.zeros(pieces, dtype=np.int64)
    pushed = np.zeros(pieces, dtype=np.int64)
    out_edges = np.zeros(pieces, dtype=np.int64)
    if pieces == 1:
        counts[0], pushed[0], out_edges[0] = _push_piece(
            indptr, indices, weights, stride, op, values, inf, frontier, ends, in_next, 0, total,
            claimed)
    else:
        _push_pieces(indptr, indices, weights, stride, op, values, inf, frontier, ends, in_next,
                     offsets, claimed, counts, pushed, out_edges)
    return claimed, offsets, counts, pushed.sum(), out_edges.sum()


@njit(parallel=True, cache=True)
def _push_pieces(indptr, indices, weights, stride, op, values, inf, frontier, ends, in_next,
                 offsets, claimed, counts, pushed, out_edges):
    """Push the round's edges as ``len(counts)`` equal pieces in parallel; piece p claims
    into ``claimed[offsets[p]:offsets[p + 1]]`` and reports in ``counts/pushed/out_edges[p]``."""
    total, pieces = ends[-1], len(counts)
    for p in prange(pieces):
        counts[p], pushed[p], out_edges[p] = _push_piece(
            indptr, indices, weights, stride, op, values, inf, frontier, ends, in_next,
            _piece_end(total, pieces, p - 1), _piece_end(total, pieces, p),
            claimed[offsets[p]:offsets[p + 1]])


@njit(inline="always", cache=True)
def _piece_count(total, max_pieces):
    """How many pieces a round of ``total`` edges (or entries) is split into: at most
    ``max_pieces``, each of GRAIN_EDGES or more unless there is only one."""
    return max(1, min(max_pieces, (total + GRAIN_EDGES - 1) // GRAIN_EDGES))


@njit(inline="always", cache=True)
def _piece_end(total, pieces, p):
    """End (exclusive) of piece p in the round's edge numbering; p = -1 gives 0."""
    return total * (p + 1) // pieces


@njit(inline="always", cache=True)
def _push_piece(indptr, indices, weights, stride, op, values, inf, frontier, ends, in_next,
                lo, hi, out):
    """Relax round edges [lo, hi); returns (vertices claimed into out, edges pushed, the
    claimed vertices' out-edges)."""
    claimed = 0
    pushed = 0
    out_edges = 0
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
                cand = offer(op, val, weights[e * stride])
                # The plain read filters the common failing case without a locked write.
                if (cand < atomic_load(values, v) and cand < atomic_min(values, v, cand)
                        and atomic_xchg(in_next, v, 1) == 0):
                    out[claimed] = v
                    claimed += 1
                    out_edges += indptr[v + 1] - indptr[v]
            pushed += stop - pos
        pos = stop
        i += 1
    return claimed, pushed, out_edges


@njit(cache=True)
def _push_level_round(indptr, indices, weight, values, inf, frontier, out, start, max_pieces):
    """One parallel round from a frontier of one value (see _rounds_loop), pushing
    ``weight`` over every out-edge: the thread whose atomic min lowers a head claims it,
    into ``out`` from ``start`` on, in no order. Returns (vertices claimed, edges pushed).

    As GAP's top-down step: a piece keeps its claims in a small buffer of its own and
    moves them to ``out`` a buffer at a time, at a place it takes from a shared cursor, so
    no claim is copied twice and nothing of the frontier's size is allocated."""
    val = values[frontier[0]]
    if val == inf:  # an unreached frontier pushes nothing (int32 INF + 1 would wrap)
        return 0, 0
    ends = edge_ends(indptr, frontier, max_pieces)
    total = ends[-1]
    pieces = _piece_count(total, max_pieces)
    cursor = np.zeros(1, dtype=np.int64)
    _level_pieces(indptr, indices, val + weight, values, frontier, ends, out, start, cursor,
                  pieces)
    return cursor[0], total


@njit(parallel=True, cache=True)
def _level_pieces(indptr, indices, cand, values, frontier, ends, out, start, cursor, pieces):
    """The pieces of :func:`_push_level_round`: piece p pushes round edges
    [_piece_end(p - 1), _piece_end(p))."""
    total = ends[-1]
    for p in prange(pieces):
        buffer = np.empty(_CLAIM_BUFFER, dtype=np.int64)
        k = 0
        pos, hi = _piece_end(total, pieces, p - 1), _piece_end(total, pieces, p)
        i = np.searchsorted(ends, pos, side="right")  # the frontier vertex owning edge pos
        while pos < hi:
            u = frontier[i]
            stop = min(ends[i], hi)
            first = indptr[u] + pos - (ends[i] - (indptr[u + 1] - indptr[u]))
            for e in range(first, first + stop - pos):
                v = indices[e]
                # The plain read filters the common failing case without a locked write.
                if cand < atomic_load(values, v) and cand < atomic_min(values, v, cand):
                    buffer[k] = v
                    k += 1
                    if k == _CLAIM_BUFFER:
                        copy(out[start + atomic_add(cursor, 0, k):], buffer, k)
                        k = 0
            pos = stop
            i += 1
        copy(out[start + atomic_add(cursor, 0, k):], buffer, k)


# --------------------------------------------------------------------------------------
# Delta-stepping
#
# Bin b holds the waiting vertices whose value x has floor(x / delta) == b. A push from a
# vertex of bin `cur` writes values >= its own, hence into bins >= cur (the bin function is
# monotone in floating point too), so every vertex below bin `cur` is final once `cur` is
# the smallest non-empty bin. Bins cur .. cur + R - 1 are a ring of R stacks; farther bins,
# which only initial frontier values can reach, share a far pile that is sorted out again
# when `cur` reaches its smallest bin.
#
# As in GAP, a lowered vertex gets a new entry in its new bin and its old entry stays
# behind. `pend[v]` is the bin of v's live entry, lowered with an atomic min, so only the
# thread that moves v to a lower bin adds an entry, and the waiting vertices and their
# out-edges are counted exactly (the hand-back check reads one counter). A vertex that
# waits nowhere has `pend` IDLE, or UNTOUCHED if this run never lowered or queued it;
# both are above every bin, so the same atomic min also tells its caller that v starts to
# wait, and whether this is v's first change. A round takes the live entries of bin `cur`
# between parallel regions and sets their `pend` to IDLE; a lowering during the round then
# queues the vertex again, so no update is lost however the threads interleave.
#
# In a parallel round the pushing threads only list the vertices they lower, each piece in
# its own part of one buffer; then the pieces take the atomic min on `pend` and place the
# entries grouped per stack (_file_pieces), and the stacks are appended to between parallel
# regions.
# --------------------------------------------------------------------------------------
_VERTEX_BITS = 31  #: an entry is (bin << _VERTEX_BITS) | vertex
_VERTEX_MASK = (1 << _VERTEX_BITS) - 1
_CUR, _WAITING, _WAITING_EDGES, _FAR_MIN, _RING, _CHANGED = range(6)  #: indices into meta
_QUEUE, _NEW, _FIRST = 1, 2, 4  #: claim flags: add an entry, newly waiting, first change
#: A parallel filing's notes per piece: first changes, newly waiting vertices, their
#: out-edges, the smallest bin it adds to the far pile.
_NOTE_FIRST, _NOTE_NEW, _NOTE_NEW_EDGES, _NOTE_FAR_MIN = range(4)
_NOTES = 4
#: A lowering costs about as much to file as this many edges to push (a vertex's ``pend``
#: and row bounds, and its entry's writes): a parallel round's are filed in parallel too
#: once they would cost as much as a parallel round's edges (_PARALLEL_EDGES).
_CLAIM_EDGES = 4
#: How many claims ahead a parallel filing asks for a vertex's ``pend`` and row bounds.
_CLAIM_AHEAD = 16


class _Bins(NamedTuple):
    """The delta-stepping state (numba passes the arrays; scalars live in ``meta``)."""

    pend: np.ndarray  # int32[n]: the bin of each vertex's live entry, IDLE or UNTOUCHED
    keys: List  # R + 1 int64 stacks of entries: the ring's, then the far pile
    degs: List  # R + 1 int64 stacks: each entry's out-degree
    size: np.ndarray  # int64[R + 1]: entries in each stack, live or not
    edges: np.ndarray  # int64[R + 1]: their out-degrees summed
    meta: np.ndarray  # int64: cur bin, waiting vertices, their out-edges, a lower bound of
    #                   the far pile's bins, entries in the ring, changed vertices (the
    #                   first meta[_CHANGED] of room.changed: those lowered while UNTOUCHED)
    room: _Room


class _Room(NamedTuple):
    """Delta-stepping's work arrays, kept from run to run (:meth:`Scratch.room`): a parallel
    round's fresh arrays cost a page fault per page the threads write, and their release
    stops every thread to drop the pages from its TLB."""

    batch: np.ndarray  # int64[n]: the vertices a round takes
    batch_degs: np.ndarray  # int64[n]: their out-degrees, or their rows' ends in the round
    batch_bins: np.ndarray  # int64[n]: their bins
    changed: np.ndarray  # int64[n]: the vertices a run lowered
    live: np.ndarray  # uint8[n]: a stack's live entries
    keys: np.ndarray  # int64[r]: a round's lowerings, as entries
    degs: np.ndarray  # int64[r]: their out-degrees
    flags: np.ndarray  # uint8[r]: their claim flags
    grouped_keys: np.ndarray  # int64[r]: the claims grouped per stack
    grouped_degs: np.ndarray  # int64[r]
    need: np.ndarray  # int64[1]: the largest r a round has asked for


def _new_room(n: int, r: int) -> _Room:
    """Work arrays for ``n`` vertices and rounds of up to ``r`` lowerings."""
    return _Room(*(np.empty(n, dtype=t) for t in (np.int64, np.int64, np.int64, np.int64,
                                                  np.uint8)),
                 *(np.empty(r, dtype=t) for t in (np.int64, np.int64, np.uint8, np.int64,
                                                  np.int64)),
                 np.zeros(1, dtype=np.int64))


@njit(cache=True, inline="always")
def _lend(a, size):
    """``a[:size]``, or a new array where ``a`` is shorter."""
    return a[:size] if size <= len(a) else np.empty(size, dtype=a.dtype)


@njit(cache=True, inline="always")
def _new_bins(pend, ring_bits, room, stack_keys, stack_degs):
    """Empty bins over ``pend`` (every entry UNTOUCHED), working in ``room``, their stacks'
    arrays those of ``stack_keys`` and ``stack_degs``, as large as earlier runs grew them."""
    stacks = (1 << ring_bits) + 1
    meta = np.zeros(6, dtype=np.int64)
    meta[_FAR_MIN] = MAX_BIN
    return _Bins(pend, stack_keys, stack_degs,
                 np.zeros(stacks, dtype=np.int64), np.zeros(stacks, dtype=np.int64), meta,
                 room)


@njit(inline="always", cache=True)
def _far(bins):
    return len(bins.size) - 1


@njit(inline="always", cache=True)
def _count_waiting(bins, deg, sign):
    bins.meta[_WAITING] += sign
    bins.meta[_WAITING_EDGES] += sign * deg


@njit(inline="always", cache=True)
def _record(keys, degs, flags, k, v, b, deg, old, lowered):
    """Record claim k: v, whose ``pend`` was ``old``, now waits in bin b < old."""
    keys[k] = (b << _VERTEX_BITS) | v
    degs[k] = deg
    flags[k] = (_QUEUE | (_NEW if old > MAX_BIN else 0)
                | (_FIRST if lowered and old == UNTOUCHED else 0))


@njit(inline="always", cache=True)
def _claim(pend, v, b, deg, lowered, keys, degs, flags, k):
    """Queue v for bin b unless it waits there or lower already (no other thread runs).
    Returns the number of claims recorded."""
    old = pend[v]
    if b >= old:
        return k
    pend[v] = b
    _record(keys, degs, flags, k, v, b, deg, old, lowered)
    return k + 1


@njit(inline="always", cache=True)
def _stack_of(b, cur, far):
    """The stack of bin b: its ring slot while within the ring's reach of ``cur``, else the
    far pile."""
    return b & (far - 1) if b - cur < far else far


@njit(cache=True)
def _file(bins, keys, degs, flags, k):
    """Carry out claims ``[0, k)``: note changed vertices, count newly waiting ones, and add
    the entries to their stacks.

    Entries are grouped per stack first (a counting sort), because fetching an array out of
    the stack list costs as much as filing a hundred entries."""
    far = _far(bins)
    incoming = np.zeros(far + 1, dtype=np.int64)
    touched = np.empty(far + 1, dtype=np.int64)  # stacks that get entries, in first-seen order
    stack = np.empty(k, dtype=np.int64)
    t = 0
    for i in range(k):
        v, b = keys[i] & _VERTEX_MASK, keys[i] >> _VERTEX_BITS
        if flags[i] & _FIRST:
            bins.room.changed[bins.meta[_CHANGED]] = v
            bins.meta[_CHANGED] += 1
        if flags[i] & _NEW:
            _count_waiting(bins, degs[i], 1)
        stack[i] = -1
        if flags[i] & _QUEUE:
            lst = _stack_of(b, bins.meta[_CUR], far)
            if lst == far:
                bins.meta[_FAR_MIN] = min(bins.meta[_FAR_MIN], b)
            if incoming[lst] == 0:
                touched[t] = lst
                t += 1
            incoming[lst] += 1
            bins.edges[lst] += degs[i]
            stack[i] = lst
    for lst in range(far):
        bins.meta[_RING] += incoming[lst]
    start = np.empty(far + 1, dtype=np.int64)  # each touched stack's segment of `order`
    total = 0
    for lst in touched[:t]:
        start[lst] = total
        total += incoming[lst]
    order = np.empty(total, dtype=np.int64)
    fill = start.copy()
    for i in range(k):
        if stack[i] >= 0:
            order[fill[stack[i]]] = i
            fill[stack[i]] += 1
    for lst in touched[:t]:
        first, size = start[lst], bins.size[lst]
        stack_keys = _room(bins.keys, lst, size + incoming[lst])
        stack_degs = _room(bins.degs, lst, size + incoming[lst])
        for j in range(incoming[lst]):
            stack_keys[size + j] = keys[order[first + j]]
            stack_degs[size + j] = degs[order[first + j]]
        bins.size[lst] = size + incoming[lst]


@njit(inline="always", cache=True)
def _room(stacks, lst, need):
    """``stacks[lst]``, grown first if it holds fewer than ``need`` entries."""
    stack = stacks[lst]
    if need > len(stack):
        grown = np.empty(max(need, 2 * len(stack)), dtype=np.int64)
        copy(grown, stack, len(stack))
        stacks[lst] = stack = grown
    return stack


@njit(cache=True, inline="always")
def _take(bins, lst, batch, batch_degs, batch_bins):
    """Empty stack ``lst``; its live entries go to the batch arrays and stop waiting.
    Returns how many."""
    keys, degs = bins.keys[lst], bins.degs[lst]
    k = 0
    for i in range(bins.size[lst]):
        v, b = keys[i] & _VERTEX_MASK, keys[i] >> _VERTEX_BITS
        if bins.pend[v] == b:
            bins.pend[v] = IDLE
            _count_waiting(bins, degs[i], -1)
            batch[k], batch_degs[k], batch_bins[k] = v, degs[i], b
            k += 1
    if lst != _far(bins):
        bins.meta[_RING] -= bins.size[lst]
    bins.size[lst] = bins.edges[lst] = 0
    return k


@njit(cache=True, inline="always")
def _queue_all(bins, vertices, vertex_degs, vertex_bins):
    """Queue vertices that wait nowhere yet (the initial frontier, the far pile)."""
    k = len(vertices)
    keys = np.empty(k, dtype=np.int64)
    degs = np.empty(k, dtype=np.int64)
    flags = np.empty(k, dtype=np.uint8)
    claims = np.int64(0)  # a literal 0 would compile _file once more
    for i in range(k):
        claims = _claim(bins.pend, vertices[i], vertex_bins[i], vertex_degs[i], False, keys,
                        degs, flags, claims)
    _file(bins, keys, degs, flags, claims)


@njit(cache=True, inline="always")
def _refill(bins, batch, batch_degs, batch_bins):
    """Sort the far pile out again: bins now within the ring's reach move there. If the ring
    is empty, ``cur`` first jumps to the pile's smallest bin."""
    k = _take(bins, _far(bins), batch, batch_degs, batch_bins)
    bins.meta[_FAR_MIN] = MAX_BIN
    if k and bins.meta[_RING] == 0:
        least = batch_bins[0]  # the pile's smallest bin (a loop compiles faster than .min())
        for i in range(1, k):
            least = min(least, batch_bins[i])
        bins.meta[_CUR] = max(bins.meta[_CUR], least)
    _queue_all(bins, batch[:k], batch_degs[:k], batch_bins[:k])


@njit(cache=True, inline="always")
def _advance(bins, batch, batch_degs, batch_bins):
    """Move ``cur`` to the smallest bin with entries; False when no vertex waits."""
    mask = _far(bins) - 1
    while bins.meta[_WAITING]:
        if bins.meta[_RING] == 0 or bins.meta[_CUR] >= bins.meta[_FAR_MIN]:
            _refill(bins, batch, batch_degs, batch_bins)
        if bins.size[bins.meta[_CUR] & mask]:
            return True
        bins.meta[_CUR] += 1
    return False


@njit(cache=True)
def _push_alone(indptr, indices, weights, values, bins, frontier, edges, inv_delta):
    """Push ``frontier`` (``edges`` out-edges) on this thread and queue what it lowers."""
    keys = np.empty(edges, dtype=np.int64)  # at most one claim per successful update
    degs = np.empty(edges, dtype=np.int64)
    flags = np.empty(edges, dtype=np.uint8)
    claims = np.int64(0)  # a literal 0 would compile _file once more
    last = len(frontier) - 1
    for i in range(len(frontier)):
        ask_ahead(indptr, indices, weights, values, bins.pend, frontier, i, last)
        u = frontier[i]
        val = values[u]
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            cand = val + weights[e]
            if cand < values[v]:
                values[v] = cand
                claims = _claim(bins.pend, v, bin_of(cand, inv_delta),
                                indptr[v + 1] - indptr[v], True, keys, degs, flags, claims)
    _file(bins, keys, degs, flags, claims)


@njit(cache=True)
def _push_together(indptr, indices, weights, values, bins, frontier, ends, inv_delta,
                   max_pieces, parallel_edges):
    """Push ``frontier`` (``ends``: each vertex's row end in the round's edges) in parallel
    pieces of equal edge counts, then queue what they lowered (_file_pieces;
    ``parallel_edges``: see _PARALLEL_EDGES)."""
    total = ends[-1]
    offsets = _even_pieces(total, max_pieces)
    # A piece lowers a vertex at most once per edge.
    keys = _lend(bins.room.keys, total)
    counts = np.zeros(len(offsets) - 1, dtype=np.int64)
    _ordered_pieces(indptr, indices, weights, values, frontier, ends, inv_delta, offsets,
                    keys, counts)
    _file_pieces(indptr, bins, offsets, keys, counts, parallel_edges, True)


@njit(cache=True)
def _even_pieces(total, max_pieces):
    """Offsets of the _piece_count equal pieces of [0, total)."""
    pieces = _piece_count(total, max_pieces)
    offsets = np.empty(pieces + 1, dtype=np.int64)
    for p in range(pieces + 1):
        offsets[p] = _piece_end(total, pieces, p - 1)
    return offsets


@njit(cache=True)
def _exclusive_sums(counts):
    """Each piece's first place when the pieces' ``counts`` are laid end to end."""
    at = np.empty(len(counts), dtype=np.int64)
    total = 0
    for p in range(len(counts)):
        at[p] = total
        total += counts[p]
    return at


@njit(cache=True)
def _file_pieces(indptr, bins, offsets, keys, counts, parallel_edges, lowered):
    """File the lowerings of a parallel round: piece p's are ``keys[offsets[p]:][:counts[p]]``
    (``lowered``: their values were lowered, so a first one is a change; else they are
    entries of vertices that wait nowhere, as _queue_all's).

    _file's work, shared out: each piece settles which of its lowerings are claims and
    counts them per stack (_claim_piece); the counts place every piece's entries, stack by
    stack, in one array (_scatter_piece), whose segments are then appended to the stacks.
    The pieces run in parallel where their entries cost ``parallel_edges`` (see
    _CLAIM_EDGES), and a stack's segment is appended by every thread where it alone costs
    as much; for fewer, waking the pool costs more than they take."""
    pieces, far, cur = len(counts), _far(bins), bins.meta[_CUR]
    spread = counts.sum() * _CLAIM_EDGES >= parallel_edges
    total = offsets[-1]
    bins.room.need[0] = max(bins.room.need[0], total)  # the next run's room grows to it
    degs = _lend(bins.room.degs, total)
    flags = _lend(bins.room.flags, total)
    tally = np.zeros((pieces, far + 1), dtype=np.int64)  # claims per piece and stack
    notes = np.zeros((pieces, _NOTES), dtype=np.int64)
    if spread:
        _claim_pieces(indptr, bins.pend, cur, far, offsets, keys, degs, flags, counts,
                      tally, notes, lowered)
    else:
        for p in range(pieces):
            counts[p] = _claim_piece(indptr, bins.pend, cur, far, offsets[p], counts[p],
                                     keys, degs, flags, tally[p], notes[p], lowered)
    at = np.empty((pieces, far + 1), dtype=np.int64)  # piece p's first place per stack
    incoming = np.zeros(far + 1, dtype=np.int64)
    placed = 0
    for lst in range(far + 1):
        for p in range(pieces):
            at[p, lst] = placed
            placed += tally[p, lst]
            incoming[lst] += tally[p, lst]
        if lst != far:
            bins.meta[_RING] += incoming[lst]
    changed_at = np.empty(pieces, dtype=np.int64)  # piece p's first place in bins.room.changed
    for p in range(pieces):
        changed_at[p] = bins.meta[_CHANGED]
        bins.meta[_CHANGED] += notes[p, _NOTE_FIRST]
        bins.meta[_WAITING] += notes[p, _NOTE_NEW]
        bins.meta[_WAITING_EDGES] += notes[p, _NOTE_NEW_EDGES]
        bins.meta[_FAR_MIN] = min(bins.meta[_FAR_MIN], notes[p, _NOTE_FAR_MIN])
    grouped_keys = _lend(bins.room.grouped_keys, placed)
    grouped_degs = _lend(bins.room.grouped_degs, placed)
    if spread:
        _scatter_pieces(cur, far, offsets, keys, degs, flags, counts, at, changed_at,
                        bins.room.changed, grouped_keys, grouped_degs)
    else:
        for p in range(pieces):
            _scatter_piece(cur, far, offsets[p], counts[p], keys, degs, flags, at[p],
                           changed_at[p], bins.room.changed, grouped_keys, grouped_degs)
    first = 0
    for lst in range(far + 1):
        size, add = bins.size[lst], incoming[lst]
        if add:
            stack_keys = _room(bins.keys, lst, size + add)
            stack_degs = _room(bins.degs, lst, size + add)
            # A long segment is copied by every thread: one thread would copy a uniform
            # graph's busiest rounds alone.
            parts = _even_pieces(add, pieces if add * _CLAIM_EDGES >= parallel_edges else 1)
            edges = np.zeros(len(parts) - 1, dtype=np.int64)
            if len(edges) > 1:
                _append_pieces(stack_keys, stack_degs, size, grouped_keys, grouped_degs,
                               first, parts, edges)
            else:
                edges[0] = _append_piece(stack_keys, stack_degs, size, grouped_keys,
                                         grouped_degs, first, 0, add)
            bins.size[lst] = size + add
            bins.edges[lst] += edges.sum()
            first += add


@njit(parallel=True, cache=True)
def _append_pieces(stack_keys, stack_degs, size, grouped_keys, grouped_degs, first,
                   parts, edges):
    """_append_piece for every piece of ``parts``, in parallel."""
    for p in prange(len(edges)):
        edges[p] = _append_piece(stack_keys, stack_degs, size, grouped_keys, grouped_degs,
                                 first, parts[p], parts[p + 1])


@njit(inline="always", cache=True)
def _append_piece(stack_keys, stack_degs, size, grouped_keys, grouped_degs, first, lo, hi):
    """Copy entries [lo, hi) of a stack's segment (from ``first`` in ``grouped_*``) to the
    stack past its ``size`` entries; returns their out-edges."""
    edges = 0
    for j in range(lo, hi):
        stack_keys[size + j] = grouped_keys[first + j]
        stack_degs[size + j] = grouped_degs[first + j]
        edges += grouped_degs[first + j]
    return edges


@njit(parallel=True, cache=True)
def _ordered_pieces(indptr, indices, weights, values, frontier, ends, inv_delta, offsets,
                    keys, counts):
    """Piece p pushes round edges [offsets[p], offsets[p + 1]) and lists the vertices it
    lowers as entries in ``keys`` from ``offsets[p]`` on, reporting in ``counts[p]``."""
    for p in prange(len(counts)):
        lo, hi = offsets[p], offsets[p + 1]
        counts[p] = _ordered_piece(indptr, indices, weights, values, frontier, ends,
                                   inv_delta, lo, hi, keys[lo:hi])


@njit(inline="always", cache=True)
def _ordered_piece(indptr, indices, weights, values, frontier, ends, inv_delta, lo, hi,
                   keys):
    """Relax round edges [lo, hi); returns the number of lowerings listed in ``keys``.

    Only the lowering is done here: which of them queue their vertex is settled after the
    round, where the vertices' ``pend`` and rows can be asked for ahead (_claim_pieces)."""
    lowered = 0
    i = np.searchsorted(ends, lo, side="right")  # the frontier vertex owning edge lo
    last = min(np.searchsorted(ends, hi - 1, side="right"), len(frontier) - 1)
    pos = lo
    while pos < hi:
        # Rows ahead as in _push_alone, and the heads' values of a row that has landed.
        prefetch(indptr, frontier[min(i + BOUNDS_AHEAD, last)])
        ahead = indptr[frontier[min(i + ROW_AHEAD, last)]]
        prefetch(indices, ahead)
        prefetch(weights, ahead)
        w = frontier[min(i + HEADS_AHEAD, last)]
        for e in range(indptr[w], min(indptr[w + 1], indptr[w] + HEADS_ROW)):
            prefetch(values, indices[e])
        u = frontier[i]
        stop = min(ends[i], hi)
        # Read once: if another thread lowers value[u] meanwhile, it also re-queues u.
        val = atomic_load(values, u)
        first = indptr[u] + pos - (ends[i] - (indptr[u + 1] - indptr[u]))
        end = first + stop - pos
        for e in range(first, end):
            prefetch(values, indices[min(e + HEADS_ROW, end - 1)])  # a long row's own
            v = indices[e]
            cand = val + weights[e]
            if cand < atomic_load(values, v) and cand < atomic_min(values, v, cand):
                keys[lowered] = (bin_of(cand, inv_delta) << _VERTEX_BITS) | v
                lowered += 1
        pos = stop
        i += 1
    return lowered


@njit(parallel=True, cache=True)
def _claim_pieces(indptr, pend, cur, far, offsets, keys, degs, flags, counts, tally, notes,
                  lowered):
    """_claim_piece for every piece, in parallel."""
    for p in prange(len(counts)):
        counts[p] = _claim_piece(indptr, pend, cur, far, offsets[p], counts[p], keys, degs,
                                 flags, tally[p], notes[p], lowered)


@njit(inline="always", cache=True)
def _claim_piece(indptr, pend, cur, far, lo, count, keys, degs, flags, tally, notes,
                 lowered):
    """Move the ``pend`` of each vertex of a piece's entries (``keys[lo:lo + count]``) to
    the entry's bin. The entries that moved it to a lower bin are the piece's claims, kept
    in place at the front of its part of ``keys``, with ``degs`` and ``flags`` (see
    _record; ``lowered`` as there); returns how many. ``tally``: the claims per stack;
    ``notes``: see _NOTES."""
    notes[_NOTE_FAR_MIN] = MAX_BIN
    claims = 0
    last = lo + count - 1
    for i in range(lo, lo + count):
        ahead = keys[min(i + _CLAIM_AHEAD, last)] & _VERTEX_MASK
        prefetch(pend, ahead)
        prefetch(indptr, ahead)
        v, b = keys[i] & _VERTEX_MASK, keys[i] >> _VERTEX_BITS
        old = atomic_min(pend, v, b)
        if b < old:  # this piece moved v to a lower bin: it files the entry
            deg = indptr[v + 1] - indptr[v]
            _record(keys, degs, flags, lo + claims, v, b, deg, old, lowered)
            claims += 1
            notes[_NOTE_FIRST] += lowered and old == UNTOUCHED
            if old > MAX_BIN:
                notes[_NOTE_NEW] += 1
                notes[_NOTE_NEW_EDGES] += deg
            lst = _stack_of(b, cur, far)
            tally[lst] += 1
            if lst == far:
                notes[_NOTE_FAR_MIN] = min(notes[_NOTE_FAR_MIN], b)
    return claims


@njit(parallel=True, cache=True)
def _scatter_pieces(cur, far, offsets, keys, degs, flags, counts, at, changed_at, changed,
                    grouped_keys, grouped_degs):
    """_scatter_piece for every piece, in parallel."""
    for p in prange(len(counts)):
        _scatter_piece(cur, far, offsets[p], counts[p], keys, degs, flags, at[p],
                       changed_at[p], changed, grouped_keys, grouped_degs)


@njit(inline="always", cache=True)
def _scatter_piece(cur, far, lo, claims, keys, degs, flags, at, changed_at, changed,
                   grouped_keys, grouped_degs):
    """Write a piece's claims (``keys[lo:lo + claims]``) to ``grouped_*``, each stack's from
    ``at[stack]`` on, and its first changes to ``changed`` from ``changed_at`` on."""
    place = at.copy()
    k = changed_at
    for i in range(lo, lo + claims):
        lst = _stack_of(keys[i] >> _VERTEX_BITS, cur, far)
        grouped_keys[place[lst]] = keys[i]
        grouped_degs[place[lst]] = degs[i]
        place[lst] += 1
        if flags[i] & _FIRST:
            changed[k] = keys[i] & _VERTEX_MASK
            k += 1


@njit(cache=True)
def _queue_together(indptr, values, bins, frontier, start, inv_delta, max_pieces,
                    parallel_edges):
    """Queue the reached vertices of a long ``frontier``, as _delta_stepping does one by one
    for a short one, and read their values into ``start``: by every thread."""
    offsets = _even_pieces(len(frontier), max_pieces)
    pieces = len(offsets) - 1
    keys = _lend(bins.room.keys, len(frontier))
    counts = np.empty(pieces, dtype=np.int64)
    least = np.empty(pieces, dtype=np.int64)
    _entry_pieces(values, frontier, start, inv_delta, offsets, keys, counts, least)
    if counts.sum():
        bins.meta[_CUR] = least.min()
    _file_pieces(indptr, bins, offsets, keys, counts, parallel_edges, False)


@njit(parallel=True, cache=True)
def _entry_pieces(values, frontier, start, inv_delta, offsets, keys, counts, least):
    """Piece p reads the values of its part of the frontier into ``start`` and lists the
    reached ones as entries of their bins, in ``keys`` from ``offsets[p]`` on
    (``counts[p]`` of them, the smallest bin ``least[p]``)."""
    for p in prange(len(counts)):
        lo, hi, k, low = offsets[p], offsets[p + 1], 0, np.int64(MAX_BIN)
        for i in range(lo, hi):
            prefetch(values, frontier[min(i + _CLAIM_AHEAD, hi - 1)])
            start[i] = values[frontier[i]]
            if start[i] != np.inf:
                b = bin_of(start[i], inv_delta)
                keys[lo + k] = (b << _VERTEX_BITS) | frontier[i]
                low = min(low, b)
                k += 1
        counts[p], least[p] = k, low


@njit(cache=True)
def _take_together(bins, lst, batch, ends, max_pieces, parallel_edges):
    """_take of ring stack ``lst`` for a parallel round, each live entry's row end in the
    round's edges in ``ends`` (as _push_together takes them) in place of its degree and
    bin, by every thread where its entries cost ``parallel_edges``. Returns how many."""
    keys, degs, size = bins.keys[lst], bins.degs[lst], bins.size[lst]
    offsets = _even_pieces(size, max_pieces if size * _CLAIM_EDGES >= parallel_edges else 1)
    pieces = len(offsets) - 1
    live = _lend(bins.room.live, size)
    counts = np.empty(pieces, dtype=np.int64)
    edges = np.empty(pieces, dtype=np.int64)
    if pieces > 1:
        _live_pieces(bins.pend, keys, degs, offsets, live, counts, edges)
        _compact_pieces(keys, degs, offsets, live, _exclusive_sums(counts),
                        _exclusive_sums(edges), batch, ends)
    else:
        counts[0], edges[0] = _live_piece(bins.pend, keys, degs, 0, size, live)
        _compact_piece(keys, degs, 0, size, live, 0, 0, batch, ends)
    k = counts.sum()
    bins.meta[_WAITING] -= k
    bins.meta[_WAITING_EDGES] -= edges.sum()
    bins.meta[_RING] -= size
    bins.size[lst] = bins.edges[lst] = 0
    return k


@njit(parallel=True, cache=True)
def _live_pieces(pend, keys, degs, offsets, live, counts, edges):
    """_live_piece for every piece, in parallel."""
    for p in prange(len(counts)):
        counts[p], edges[p] = _live_piece(pend, keys, degs, offsets[p], offsets[p + 1], live)


@njit(inline="always", cache=True)
def _live_piece(pend, keys, degs, lo, hi, live):
    """Flag the live entries among a stack's [lo, hi) in ``live`` and stop them waiting (an
    entry is its vertex's only one in its bin, so no two pieces share a vertex); returns
    how many, and their out-edges."""
    k = e = 0
    for i in range(lo, hi):
        prefetch(pend, keys[min(i + _CLAIM_AHEAD, hi - 1)] & _VERTEX_MASK)
        v, b = keys[i] & _VERTEX_MASK, keys[i] >> _VERTEX_BITS
        live[i] = pend[v] == b
        if live[i]:
            pend[v] = IDLE
            k += 1
            e += degs[i]
    return k, e


@njit(parallel=True, cache=True)
def _compact_pieces(keys, degs, offsets, live, at, before, batch, ends):
    """_compact_piece for every piece, in parallel."""
    for p in prange(len(at)):
        _compact_piece(keys, degs, offsets[p], offsets[p + 1], live, at[p], before[p], batch,
                       ends)


@njit(inline="always", cache=True)
def _compact_piece(keys, degs, lo, hi, live, k, e, batch, ends):
    """Write the live entries among [lo, hi) to ``batch`` from ``k`` on, and their rows'
    ends counted from ``e`` to ``ends``."""
    for i in range(lo, hi):
        if live[i]:
            e += degs[i]
            batch[k], ends[k] = keys[i] & _VERTEX_MASK, e
            k += 1


@njit(parallel=True, cache=True)
def _set_at(a, ids, value):
    """``a[ids] = value`` by every thread."""
    chunks = max(1, min(len(ids) // GRAIN_EDGES, _MAX_SCAN_CHUNKS))
    for c in prange(chunks):
        for i in range(len(ids) * c // chunks, len(ids) * (c + 1) // chunks):
            a[ids[i]] = value


@njit(cache=True)
def _also_lowered(pend, values, frontier, start, bins):
    """The changed vertices: those lowered from UNTOUCHED (whose ``pend`` is UNTOUCHED
    again), then the frontier's that the run lowered below ``start``, once each; every
    ``pend`` of the frontier is UNTOUCHED again."""
    k = bins.meta[_CHANGED]
    for i in range(len(frontier)):
        v = frontier[i]
        if pend[v] != UNTOUCHED:  # queued, and not met before in the frontier
            pend[v] = UNTOUCHED
            if values[v] < start[i]:
                bins.room.changed[k] = v
                k += 1
    return bins.room.changed[:k]


@njit(cache=True)
def _also_lowered_together(pend, values, frontier, start, bins, max_pieces):
    """_also_lowered by every thread."""
    offsets = _even_pieces(len(frontier), max_pieces)
    pieces = len(offsets) - 1
    again = np.empty(len(frontier), dtype=np.uint8)
    counts = np.empty(pieces, dtype=np.int64)
    _again_pieces(pend, values, frontier, start, offsets, again, counts)
    at = _exclusive_sums(counts)
    for p in range(pieces):
        at[p] += bins.meta[_CHANGED]
    _list_again(frontier, offsets, again, at, bins.room.changed)
    return bins.room.changed[:bins.meta[_CHANGED] + counts.sum()]


@njit(parallel=True, cache=True)
def _again_pieces(pend, values, frontier, start, offsets, again, counts):
    """Piece p's part of _also_lowered's test, flagged in ``again`` and counted in
    ``counts[p]``; a vertex twice in the frontier is taken by one piece only."""
    for p in prange(len(counts)):
        k = 0
        for i in range(offsets[p], offsets[p + 1]):
            v = frontier[i]
            again[i] = (atomic_xchg(pend, v, UNTOUCHED) != UNTOUCHED
                        and values[v] < start[i])
            k += again[i]
        counts[p] = k


@njit(parallel=True, cache=True)
def _list_again(frontier, offsets, again, at, changed):
    """Piece p writes its flagged frontier vertices to ``changed`` from ``at[p]`` on."""
    for p in prange(len(at)):
        k = at[p]
        for i in range(offsets[p], offsets[p + 1]):
            if again[i]:
                changed[k] = frontier[i]
                k += 1


@kernel(cache=True)
def _waiting(bins, max_pieces):
    """The ids of the waiting vertices, and whether they are sorted."""
    n, k = len(bins.pend), bins.meta[_WAITING]
    if PARALLEL and _scan_is_faster(k, n, max_pieces):
        return ids_between(bins.pend, np.int64(0), np.int64(MAX_BIN)), True
    out = np.empty(k, dtype=np.int64)
    k = 0
    for lst in range(len(bins.size)):
        for key in bins.keys[lst][:bins.size[lst]]:
            v = key & _VERTEX_MASK
            if bins.pend[v] == key >> _VERTEX_BITS:
                out[k] = v
                k += 1
    return out, False


@kernel(cache=True, nogil=True)
def _delta_stepping(indptr, indices, weights, values, frontier, inv_delta, ring_bits,
                    max_frontier_edges, budget, parallel_edges, max_pieces, pend, room,
                    stack_keys, stack_degs, halt, live):
    """Delta-stepping; returns (waiting vertices, whether they are sorted, rounds, edges
    pushed, every vertex it lowered, once each). ``pend`` is all UNTOUCHED, and so again on
    return; ``room`` and the stacks hold its work arrays (:meth:`Scratch.room`), the
    changed vertices' list among them, which it returns a view of. Progress and stopping
    as :func:`_rounds_loop`'s, a bin at a time, and no bin begun once ``budget`` out-edges
    are pushed."""
    bins = _new_bins(pend, ring_bits, room, stack_keys, stack_degs)
    start = np.empty(len(frontier), dtype=values.dtype)  # to tell which ones the run lowers
    # The kernel's passes over a long frontier, or over many changed vertices, run on every
    # thread; the serial twin never compiles them (seraph.kernels).
    spread = len(frontier) * _CLAIM_EDGES >= parallel_edges
    if PARALLEL and spread:
        _queue_together(indptr, values, bins, frontier, start, inv_delta, max_pieces,
                        parallel_edges)
    else:
        reached = np.empty(len(frontier), dtype=np.int64)  # an unreached one pushes nothing
        starts = np.empty(len(frontier), dtype=np.int64)
        first = np.int64(MAX_BIN)  # their smallest (a loop compiles faster than .min())
        r = 0
        for i in range(len(frontier)):
            start[i] = values[frontier[i]]
            if start[i] != np.inf:
                reached[r], starts[r] = frontier[i], bin_of(start[i], inv_delta)
                first = min(first, starts[r])
                r += 1
        if r:
            bins.meta[_CUR] = first
        reached = reached[:r]
        _queue_all(bins, reached, indptr[reached + 1] - indptr[reached], starts[:r])
    batch, batch_degs, batch_bins = room.batch, room.batch_degs, room.batch_bins
    rounds = pushed = 0
    while pushed < budget and _advance(bins, batch, batch_degs, batch_bins):
        lst = bins.meta[_CUR] & (_far(bins) - 1)
        together = bins.edges[lst] >= parallel_edges
        if PARALLEL and together:
            # ``batch_degs`` takes each vertex's row end in the round's edges.
            k = _take_together(bins, lst, batch, batch_degs, max_pieces, parallel_edges)
            edges = batch_degs[k - 1] if k else np.int64(0)
        else:
            k = _take(bins, lst, batch, batch_degs, batch_bins)
            edges = np.int64(0)
            for i in range(k):  # a loop compiles faster than .sum()
                edges += batch_degs[i]
        if k == 0:
            continue  # only entries left behind by vertices that moved
        if PARALLEL and together:
            _push_together(indptr, indices, weights, values, bins, batch[:k],
                           batch_degs[:k], inv_delta, max_pieces, parallel_edges)
        else:
            _push_alone(indptr, indices, weights, values, bins, batch[:k], edges, inv_delta)
        rounds += 1
        pushed += edges
        publish(live, rounds, bins.meta[_WAITING], pushed)
        if bins.meta[_WAITING_EDGES] >= max_frontier_edges or atomic_load(halt, 0):
            break
    waiting, ordered = _waiting(bins, max_pieces)
    # Only the vertices lowered from UNTOUCHED and the frontier ever left it. The first
    # are the changed vertices so far; those of the frontier that the run lowered join them.
    lowered = bins.room.changed[:bins.meta[_CHANGED]]
    if PARALLEL and len(lowered) * _CLAIM_EDGES >= parallel_edges:
        _set_at(pend, lowered, UNTOUCHED)
    else:
        pend[lowered] = UNTOUCHED
    if PARALLEL and spread:
        changed = _also_lowered_together(pend, values, frontier, start, bins, max_pieces)
    else:
        changed = _also_lowered(pend, values, frontier, start, bins)
    return waiting, ordered, rounds, pushed, changed
