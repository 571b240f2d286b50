"""Delta-stepping in one parallel region, for graphs whose bins are small: grids and road
networks. GAP's ``sssp.cc`` (Beamer, Asanović and Patterson, "The GAP Benchmark Suite",
2015), after Meyer and Sanders' delta-stepping (2003).

push.py drains a bin of few out-edges on one thread, since a parallel region costs more
than such a bin; on a road network nearly every bin is one, so the run is serial. Here the
threads enter one region for the whole run and meet at two barriers a bin:

- each thread keeps its own ring of bins and files there what it lowers, claiming the
  vertex's bin in the shared ``pend`` with an atomic min (bins.py), so that a waiting
  vertex has one live entry;
- before the first barrier each thread offers its nearest non-empty bin; between the two,
  each copies its part of the nearest into the shared bin, and the leader (the first
  thread in) reads the run's totals and says whether the region goes on;
- after the second, the threads take the shared bin's vertices a chunk at a time and push
  them; then a thread whose own part of the same bin holds fewer than ``_FUSE`` vertices
  pushes them at once, alone (GAP's bin fusion), which saves the barriers of the many
  tiny bins of a high-diameter graph.

The region hands the run back to push.py's bins where they serve better or must:

- a bin of ``parallel_edges`` out-edges or more, whose edges push.py's rounds share out
  (not its vertices, which a hub would stall);
- a vertex it cannot file: its bin is beyond the ring's reach (push.py's far pile), or
  the thread's part of the bin is full (it holds as many as a bin of ``parallel_edges``
  out-edges could, or a ring's share of ``_ROOM``);
- waiting vertices of ``max_frontier_edges`` out-edges (the caller's hand-back), and a
  ``halt``: those end the call, as push.py's loop does;
- a busy machine: a thread waiting at a barrier that yields its core and gets it back
  only ``slow_ns`` later has met another task on it; once it has ``slow_yields`` times,
  every bin would go on waiting for a descheduled thread;
- threads that do not all start (a threading layer that runs them one after another).

Whatever the reason, the vertices still waiting are those whose ``pend`` holds a bin
(:func:`_settled`).
"""

from __future__ import annotations

import sys

import numba
import numpy as np
from numba import njit, prange, types

from seraph.backends.cpu.atomics import (
    atomic_add,
    atomic_cas,
    atomic_load,
    atomic_min,
    atomic_store,
    fence,
)
from seraph.backends.cpu.bins import IDLE, MAX_BIN, UNTOUCHED, ask_ahead, bin_of, publish
from seraph.kernels import zeros

# The barriers yield and time their yields with Linux's calls (CLOCK_MONOTONIC is 1 there);
# elsewhere push.py's bins run alone.
_LINUX = sys.platform.startswith("linux")
_sched_yield = types.ExternalFunction("sched_yield", types.intc())
_clock_gettime = types.ExternalFunction("clock_gettime", types.intc(types.intc, types.voidptr))
_CLOCK_MONOTONIC = 1

#: Checks of a barrier a waiting thread makes before it yields its core at each further one.
SPINS = 4000
#: A yield that gives the core back this late (ns) means another task took it; a thread
#: that has met that this many times tells of a busy machine, and the region ends (the
#: module docstring). A quiet machine too has a slow yield now and then.
SLOW_YIELD_NS = 200_000
SLOW_YIELDS = 3
#: How long (ns) the leader waits for every thread to start before it goes without them.
JOIN_NS = 2_000_000
#: A thread pushes its own part of the current bin at once while it is smaller (GAP's
#: kBinSizeThreshold).
_FUSE = 1000
#: Vertices a thread takes from the shared bin at a time.
_CHUNK = 64

#: Why the region ended: every vertex settled; the waiting vertices' out-edges reached
#: the limit; halted; handed back to push.py's bins (the module docstring).
DONE, LIMIT, HALTED, HANDED = range(4)

# The region's shared cells (int64): a barrier's arrivals, generation and busy stamp; the
# threads joined (with _CLOSED once the leader closed the region) and the members; the
# leader's verdict; the totals; then, per iteration's parity, the nearest bin offered, the
# shared bin's length and the vertices taken from it.
(_ARRIVED, _GENERATION, _STAMP, _JOINED, _MEMBERS, _VERDICT, _ROUNDS, _PUSHED, _WAITING,
 _WAITING_EDGES, _UNFILED, _CHANGED) = range(12)
_NEXT, _TAIL, _TICKET = 12, 14, 16
_CELLS = 18
_CLOSED = np.int64(1) << 32
_NONE = np.iinfo(np.int64).max  #: no bin offered
# A thread's counts, summed into the cells before each first barrier; then where its
# block of the changed vertices starts, and how much of it is used.
_C_PUSHED, _C_WAITING, _C_WAITING_EDGES, _C_BLOCK, _C_USED = range(5)
#: The changed vertices a thread lists in a block it reserves at once.
_BLOCK = 1024
#: Entries a thread's bins hold at most, together.
_ROOM = 1 << 22
#: int64 cells between two threads' rows of counts (two cache lines).
_APART = 16
#: An unused place of a block.
_HOLE = -1
#: ``pend`` of a vertex :func:`_settled` has met.
_MET = -1


def delta_region(indptr, indices, weights, values, frontier, inv_delta, ring_bits,
                 max_frontier_edges, parallel_edges, pend, halt, live, spins=SPINS,
                 slow_ns=SLOW_YIELD_NS, slow_yields=SLOW_YIELDS):
    """Delta-stepping from ``frontier`` (int64; at most ``2^ring_bits`` bins apart) on every
    thread in one region, as push.py's ``_delta_stepping`` with ``pend`` all UNTOUCHED,
    and so again on return. Returns (why it ended, rounds, edges pushed, every vertex it
    lowered, once each, the vertices still waiting)."""
    workers = numba.get_num_threads()
    start = values[frontier]
    cells = np.zeros(_CELLS, dtype=np.int64)
    cells[_NEXT:_NEXT + 2] = _NONE
    first, last = _bins_of(start, inv_delta)
    if _LINUX and workers > 1 and last - first < 1 << ring_bits:
        shared = np.empty(len(values), dtype=np.int32)
        # Each thread's bins, each of room for a bin that push.py's rounds would take, up
        # to _ROOM entries in all (a fuller bin hands back); untouched pages cost nothing.
        room = min(parallel_edges, len(values), max(1, _ROOM >> ring_bits))
        bins = np.empty((workers, 1 << ring_bits, room), dtype=np.int32)
        # Each thread's bins' out-edges, a row each, apart by more than a cache line: the
        # threads count their filings there all the time.
        offered = np.zeros((workers, (1 << ring_bits) + _APART), dtype=np.int64)
        changed = np.empty(len(values) + workers * _BLOCK, dtype=np.int64)
        _region(indptr, indices, weights, values, pend, frontier, first, inv_delta,
                ring_bits, max_frontier_edges, parallel_edges, (spins, slow_ns, slow_yields),
                halt, live, cells, shared, bins, offered, changed, workers)
        changed, waiting = _settled(pend, values, frontier, start, changed, cells[_CHANGED])
        return int(cells[_VERDICT]), int(cells[_ROUNDS]), int(cells[_PUSHED]), changed, \
            waiting
    return HANDED, 0, 0, np.empty(0, dtype=np.int64), frontier


@njit(cache=True)
def _bins_of(start, inv_delta):
    """The smallest and the largest bin of the reached ones of a frontier's values
    ``start`` (_NONE and -1 for none)."""
    lo, hi = np.int64(_NONE), np.int64(-1)
    for x in start:
        if x != np.inf:
            lo, hi = min(lo, bin_of(x, inv_delta)), max(hi, bin_of(x, inv_delta))
    return lo, hi


@njit(parallel=True, cache=True)
def _region(indptr, indices, weights, values, pend, frontier, first, inv_delta, ring_bits,
            max_frontier_edges, parallel_edges, waits, halt, live, cells, shared, bins,
            offered, changed, workers):
    for _ in prange(workers):
        rank = atomic_add(cells, _JOINED, 1)
        if rank < _CLOSED:  # else the leader closed the region before this thread came
            clock = zeros(3, np.int64)  # room for _now, and the slow yields met
            members = _join(cells, rank, workers, waits[0], clock)
            if members == workers:
                _member(indptr, indices, weights, values, pend, frontier, first,
                        inv_delta, ring_bits, max_frontier_edges, parallel_edges, waits, halt, live,
                        cells, shared, bins[rank], offered, changed, rank, members, clock)
            elif rank == 0:
                atomic_store(cells, _VERDICT, HANDED)


@njit(inline="always", cache=True)
def _join(cells, rank, workers, spins, clock):
    """The members: the leader (rank 0) waits for every thread (for JOIN_NS at most), then
    closes the region; the others wait until it has."""
    if rank == 0:
        checks, start = 0, _now(clock)
        while atomic_load(cells, _JOINED) < workers:
            checks += 1
            if checks > spins:
                if _now(clock) - start > JOIN_NS:
                    break
                _sched_yield()
        members = atomic_add(cells, _JOINED, _CLOSED)
        atomic_store(cells, _MEMBERS, members)
        return members
    _wait(cells, _MEMBERS, 0, (spins, 0, 0), 0, clock)
    return atomic_load(cells, _MEMBERS)


@njit(cache=True)
def _now(clock):
    """CLOCK_MONOTONIC in ns (``clock``: two int64 of room)."""
    _clock_gettime(_CLOCK_MONOTONIC, clock.ctypes)
    return clock[0] * 1_000_000_000 + clock[1]


@njit(inline="always", cache=True)
def _wait(cells, cell, value, waits, stamp, clock):
    """Wait while ``cells[cell] == value``: ``spins`` checks, then a yield of the core at
    each (``waits``: spins, slow_ns, slow_yields). Where ``stamp`` (unless 0), a yield that
    returns ``slow_ns`` or more later is counted in ``clock[2]``, and the one that makes
    it ``slow_yields`` writes ``stamp`` to the busy stamp."""
    spins, slow_ns, slow_yields = waits
    checks = 0
    while atomic_load(cells, cell) == value:
        checks += 1
        if checks > spins:
            if stamp:
                before = _now(clock)
                _sched_yield()
                if _now(clock) - before >= slow_ns:
                    clock[2] += 1
                    if clock[2] == slow_yields:
                        atomic_store(cells, _STAMP, stamp)
            else:
                _sched_yield()


@njit(inline="always", cache=True)
def _barrier(cells, members, waits, stamp, clock):
    """Every member's writes before it are seen by every member after it. A waiter writes
    ``stamp`` (unless 0) to the busy stamp after a slow yield (:func:`_wait`)."""
    # Fences between the barrier's own relaxed steps too: the compiler may reorder
    # relaxed operations on different cells.
    fence()
    generation = atomic_load(cells, _GENERATION)
    fence()
    if atomic_add(cells, _ARRIVED, 1) == members - 1:
        atomic_store(cells, _ARRIVED, 0)
        fence()
        atomic_add(cells, _GENERATION, 1)
    else:
        _wait(cells, _GENERATION, generation, waits, stamp, clock)
    fence()


@njit(inline="always", cache=True)
def _member(indptr, indices, weights, values, pend, frontier, first, inv_delta, ring_bits,
            max_frontier_edges, parallel_edges, waits, halt, live, cells, shared, own,
            offered, changed, rank, members, clock):
    """One thread's part of the region: its own bins, then a bin at a time until the
    leader's verdict, the busy stamp of this iteration, or no bin left."""
    ring = 1 << ring_bits
    mask = ring - 1
    sizes = zeros(ring, np.int64)  # of its part of each bin, in ``own``
    edges = offered[rank]  # their out-edges, for the leader's verdict
    counts = zeros(5, np.int64)
    counts[_C_USED] = _BLOCK  # no block yet
    fused = np.empty(_FUSE, dtype=np.int32)
    cur = first  # the frontier's smallest bin (_NONE: it reaches nothing)
    if rank == 0:
        for v in frontier:
            b = bin_of(values[v], inv_delta)
            if values[v] != np.inf and b < pend[v]:
                old, pend[v] = pend[v], b
                _file(indptr, v, b, old, False, cur, mask, own, sizes, edges, counts,
                      changed, cells)
    it = 0
    while True:
        p = it & 1
        for d in range(ring if cur != _NONE else 0):
            if sizes[(cur + d) & mask]:
                atomic_min(cells, _NEXT + p, cur + d)
                break
        atomic_add(cells, _PUSHED, counts[_C_PUSHED])
        atomic_add(cells, _WAITING, counts[_C_WAITING])
        atomic_add(cells, _WAITING_EDGES, counts[_C_WAITING_EDGES])
        counts[_C_PUSHED] = counts[_C_WAITING] = counts[_C_WAITING_EDGES] = 0
        _barrier(cells, members, waits, it + 1, clock)
        nxt = atomic_load(cells, _NEXT + p)
        if rank == 0:
            _lead(cells, offered, members, it, nxt, mask, max_frontier_edges,
                  parallel_edges, halt, live)
        if nxt != _NONE and sizes[nxt & mask]:
            k = sizes[nxt & mask]
            at = atomic_add(cells, _TAIL + p, k)
            shared[at:at + k] = own[nxt & mask, :k]
            sizes[nxt & mask] = 0
        _barrier(cells, members, waits, 0, clock)
        if atomic_load(cells, _VERDICT) != DONE or nxt == _NONE:
            break
        if atomic_load(cells, _STAMP) == it + 1:
            if rank == 0:
                atomic_store(cells, _VERDICT, HANDED)
            break
        cur = nxt
        edges[cur & mask] = 0
        tail = atomic_load(cells, _TAIL + p)
        while True:
            first = atomic_add(cells, _TICKET + p, _CHUNK)
            if first >= tail:
                break
            _push(indptr, indices, weights, values, pend, shared, first,
                  min(first + _CHUNK, tail), cur, inv_delta, mask, own, sizes, edges,
                  counts, changed, cells)
        while 0 < sizes[cur & mask] < _FUSE:
            k = sizes[cur & mask]
            fused[:k] = own[cur & mask, :k]
            sizes[cur & mask] = edges[cur & mask] = 0
            _push(indptr, indices, weights, values, pend, fused, 0, k, cur, inv_delta,
                  mask, own, sizes, edges, counts, changed, cells)
        it += 1
    if rank == 0:
        atomic_store(cells, _ROUNDS, it)
    changed[counts[_C_BLOCK] + counts[_C_USED]:counts[_C_BLOCK] + _BLOCK] = _HOLE


@njit(inline="always", cache=True)
def _lead(cells, offered, members, it, nxt, mask, max_frontier_edges, parallel_edges,
          halt, live):
    """The leader's turn between the barriers: the next iteration's cells cleared, the
    progress shown, and the verdict (the module docstring)."""
    q = (it + 1) & 1
    atomic_store(cells, _NEXT + q, _NONE)
    atomic_store(cells, _TAIL + q, 0)
    atomic_store(cells, _TICKET + q, 0)
    publish(live, it, atomic_load(cells, _WAITING), atomic_load(cells, _PUSHED))
    bin_edges = 0
    if nxt != _NONE:
        for r in range(members):
            bin_edges += atomic_load(offered[r], nxt & mask)
    verdict = DONE
    if bin_edges >= parallel_edges or atomic_load(cells, _UNFILED):
        verdict = HANDED
    if it and atomic_load(cells, _WAITING_EDGES) >= max_frontier_edges:
        verdict = LIMIT
    if atomic_load(halt, 0):
        verdict = HALTED
    atomic_store(cells, _VERDICT, verdict)


@njit(inline="always", cache=True)
def _push(indptr, indices, weights, values, pend, vertices, lo, hi, cur, inv_delta, mask,
          own, sizes, edges, counts, changed, cells):
    """Push those of ``vertices[lo:hi]`` that still wait in bin ``cur``, taking each from
    ``pend`` first, and file what they lower."""
    for i in range(lo, hi):
        ask_ahead(indptr, indices, weights, values, pend, vertices, i, hi - 1)
        u = vertices[i]
        if atomic_cas(pend, u, cur, IDLE) != cur:
            continue  # moved to a nearer bin and pushed there, or taken by another thread
        row, end = indptr[u], indptr[u + 1]
        counts[_C_WAITING] -= 1
        counts[_C_WAITING_EDGES] -= end - row
        counts[_C_PUSHED] += end - row
        du = atomic_load(values, u)
        for e in range(row, end):
            v = indices[e]
            cand = du + weights[e]
            if cand < atomic_load(values, v) and cand < atomic_min(values, v, cand):
                b = bin_of(cand, inv_delta)
                old = atomic_min(pend, v, b)
                if b < old:
                    _file(indptr, v, b, old, True, cur, mask, own, sizes, edges, counts,
                          changed, cells)


@njit(inline="always", cache=True)
def _file(indptr, v, b, old, lowered, cur, mask, own, sizes, edges, counts, changed,
          cells):
    """v now waits in bin b, its ``pend`` lowered from ``old`` (its value too, where
    ``lowered``): count it, note a first change, and add it to this thread's part of the
    bin, ``own`` (a vertex it cannot file ends the region)."""
    degree = indptr[v + 1] - indptr[v]
    if old > MAX_BIN:
        counts[_C_WAITING] += 1
        counts[_C_WAITING_EDGES] += degree
    if lowered and old == UNTOUCHED:
        if counts[_C_USED] == _BLOCK:
            counts[_C_BLOCK], counts[_C_USED] = atomic_add(cells, _CHANGED, _BLOCK), 0
        changed[counts[_C_BLOCK] + counts[_C_USED]] = v
        counts[_C_USED] += 1
    s = b & mask
    if b - cur > mask or sizes[s] == own.shape[1]:
        atomic_store(cells, _UNFILED, 1)
        return
    own[s, sizes[s]] = v
    sizes[s] += 1
    edges[s] += degree


@njit(cache=True)
def _settled(pend, values, frontier, start, changed, count):
    """After the region: the vertices it lowered (those lowered from UNTOUCHED, listed in
    the blocks ``changed[:count]`` with their holes, then the frontier's that it lowered
    below ``start``), once each, and those still waiting: whose ``pend`` holds a bin, and
    the reached ones of the frontier if the region never started. Every ``pend``
    UNTOUCHED again."""
    waiting = np.empty(count + len(frontier), dtype=np.int64)
    w = k = 0
    for i in range(count):
        v = changed[i]
        if v != _HOLE:
            if pend[v] <= MAX_BIN:
                waiting[w] = v
                w += 1
            pend[v] = _MET
            changed[k] = v
            k += 1
    lowered = k
    for i in range(len(frontier)):
        v = frontier[i]
        p = pend[v]
        if p != _MET:
            pend[v] = _MET
            if p <= MAX_BIN or (p == UNTOUCHED and start[i] != np.inf):
                waiting[w] = v
                w += 1
            if values[v] < start[i]:
                changed[k] = v
                k += 1
    for i in range(lowered):
        pend[changed[i]] = UNTOUCHED
    for v in frontier:
        pend[v] = UNTOUCHED
    return changed[:k], waiting[:w]


def joined(first, second, pend):
    """The vertices of ``first`` and of ``second`` (each without repeats) once each
    (``pend``, all UNTOUCHED, marks the first's, and is so again on return)."""
    # numpy allocates what the caller keeps, backed by huge pages where large.
    return _joined(first, second, pend, np.empty(len(first) + len(second), dtype=np.int64))


@njit(cache=True)
def _joined(first, second, pend, out):
    for i in range(len(first)):
        out[i] = first[i]
        pend[first[i]] = IDLE
    k = len(first)
    for v in second:
        if pend[v] == UNTOUCHED:
            out[k] = v
            k += 1
    for v in first:
        pend[v] = UNTOUCHED
    return out[:k]
