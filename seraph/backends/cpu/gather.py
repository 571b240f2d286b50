"""The summing kernels for the CPU backend (numba) (docs/design.md, "Summing programs").

:func:`gather_pages` is an iterating program's one pass over a window of pages: for every
destination vertex of a page it adds ``operand[u]``, summed over the page's in-edges
``(u -> v)`` in float64, to ``into[v]``. :func:`recompute_pages` is a recomputing
program's sweep (:class:`seraph.spec.Recompute`): each attempted vertex's sum is
recomputed, not added to. Both go by spans of pages that lie one after another in the
slots, one span after another, the vertices of a large one in parallel ranges, so no two
threads write one vertex: a vertex whose in-edges span two pages gets the two partial
sums one after the other.

:func:`walk_step` is an iterating program's step from the sums: its new values, their
change and the next operand in one parallel pass; :func:`walk_totals` and
:func:`walk_operands` are a recomputing one's between its rounds.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from seraph.backends.cpu.atomics import atomic_add, atomic_load
from seraph.backends.cpu.pull import (
    ATTEMPTED,
    NUM_COUNTERS,
    SERIAL_EDGES,
    SKIPPED_WEAK,
    SUCCEEDED,
    mark_block,
    next_span,
)
from seraph.kernels import PARALLEL, kernel
from seraph.predictors import WEAK, weak_record, weak_record_part, weak_skip

#: The column of the edges read, after pull.py's counters.
EDGES_READ = NUM_COUNTERS
#: What a vertex costs a sum besides its in-edges, in edges: its row bounds and its sum's
#: write, which count where most vertices have few in-edges (an R-MAT's tail).
VERTEX_COST = 2
#: The work (edges, and :data:`VERTEX_COST` a vertex) of each vertex range that a
#: recomputing sweep's threads take in turn (:func:`recompute_pages`): a fraction of a
#: page, so that they recompute neighbouring vertices, as a sweep page by page did.
RANGE_WORK = 1 << 14
#: The vertices of each block whose totals :func:`walk_step` and :func:`walk_totals` add
#: up.
STEP_BLOCK = 1 << 14


@njit(cache=True, nogil=True, inline="always")
def _row_sum(indices, operand, lo, hi):
    """The sum of ``operand`` over the in-edges at ``indices[lo:hi]``, in float64, four
    edges at a time into four sums: one sum's chain of dependent adds, not the reads, would
    set the pace."""
    # Unsigned indices: numba wraps a signed one round where negative, a test and a select
    # on each of the edge's two reads.
    i, end = np.uint64(lo), np.uint64(hi)
    a = b = c = d = 0.0
    while i + np.uint64(4) <= end:
        a += operand[np.uint64(indices[i])]
        b += operand[np.uint64(indices[i + np.uint64(1)])]
        c += operand[np.uint64(indices[i + np.uint64(2)])]
        d += operand[np.uint64(indices[i + np.uint64(3)])]
        i += np.uint64(4)
    while i < end:
        a += operand[np.uint64(indices[i])]
        i += np.uint64(1)
    return (a + b) + (c + d)


@njit(cache=True, nogil=True)
def _sum_range(v0, v1, base, length, indptr, indices, offset, operand, into):
    """Sums destinations v0..v1-1 of one span (span edge ``base`` sits at ``offset`` in
    ``indices``)."""
    end, shift = base + length, offset - base
    for v in range(v0, v1):
        lo = max(indptr[v], base)
        hi = min(indptr[v + 1], end)
        if lo >= hi:
            continue
        into[v] += _row_sum(indices, operand, lo + shift, hi + shift)


@njit(cache=True, nogil=True)
def _cuts(indptr, v_first, v_end, chunks):
    """The first vertex of each of ``chunks`` vertex ranges of v_first..v_end-1, and
    v_end: ranges of about equal edges plus :data:`VERTEX_COST` per vertex, found by
    bisection (a vertex's in-edges before the span count too: one vertex at most)."""
    cuts = np.empty(chunks + 1, dtype=np.int64)
    first = indptr[v_first] + VERTEX_COST * v_first
    work = indptr[v_end] + VERTEX_COST * v_end - first
    cuts[0], cuts[chunks] = v_first, v_end
    for c in range(1, chunks):
        target = first + work * c // chunks
        lo, hi = cuts[c - 1], v_end  # the first vertex whose work before it reaches target
        while lo < hi:
            mid = (lo + hi) // 2
            if indptr[mid] + VERTEX_COST * mid < target:
                lo = mid + 1
            else:
                hi = mid
        cuts[c] = lo
    return cuts


@njit(cache=True, nogil=True, parallel=True)
def _sum_chunks(cuts, base, length, indptr, indices, offset, operand, into):
    """Sums one span's destinations as the vertex ranges between ``cuts``, in parallel."""
    for c in prange(len(cuts) - 1):
        _sum_range(cuts[c], cuts[c + 1], base, length, indptr, indices, offset, operand,
                   into)


@kernel(cache=True, nogil=True)
def gather_pages(pages, offsets, page_edges, num_edges, first_vertex, last_vertex, indptr,
                 indices, operand, into, num_chunks, halt):
    """``into[v] += sum of operand[u]`` over the in-edges of ``pages`` (page p's edges start
    at ``offsets[k]`` in ``indices``). Pages that follow one another both in the graph and
    in ``indices`` (a resident graph's, in ascending order) are summed as one span
    (:func:`~seraph.backends.cpu.pull.next_span`), each span's vertices in ``num_chunks``
    ranges of equal work. Stops before the next span once ``halt[0]`` is set
    (:mod:`seraph.interrupts`). Its serial twin sums every span on this thread
    (:mod:`seraph.kernels`)."""
    k = 0
    while k < len(pages):
        if atomic_load(halt, 0):
            break
        j, base, length, v_first, v_end = next_span(pages, offsets, page_edges, num_edges,
                                                    first_vertex, last_vertex, k)
        if not PARALLEL or length < SERIAL_EDGES:
            _sum_range(v_first, v_end, base, length, indptr, indices, offsets[k], operand,
                       into)
        else:
            _sum_chunks(_cuts(indptr, v_first, v_end, min(num_chunks, v_end - v_first)),
                        base, length, indptr, indices, offsets[k], operand, into)
        k = j


@kernel(cache=True, parallel=True)
def walk_step(values, sums, operand, scale, damping, restart, vertex):
    """:meth:`seraph.backends.base.Backend.walk_step` in two passes over the vertices (the
    sums' total, then the rest at once), ``vertex`` -1 for a uniform restart. The totals
    are added up over blocks of :data:`STEP_BLOCK` vertices whatever the threads, so that
    every twin and thread count rounds them alike (a partitioned run's workers must all
    see the same change)."""
    n = len(values)
    blocks = (n + STEP_BLOCK - 1) // STEP_BLOCK
    totals = np.zeros(blocks)
    for b in prange(blocks):
        total = 0.0
        for v in range(b * STEP_BLOCK, min(n, (b + 1) * STEP_BLOCK)):
            total += sums[v]
        totals[b] = total
    jump = restart + damping * (1.0 - totals.sum())
    spread = jump / n if vertex < 0 else 0.0
    for b in prange(blocks):
        change = 0.0
        for v in range(b * STEP_BLOCK, min(n, (b + 1) * STEP_BLOCK)):
            new = damping * sums[v] + spread
            if v == vertex:
                new += jump
            sums[v] = 0.0
            change += abs(new - values[v])
            values[v] = new
            operand[v] = new * scale[v]
        totals[b] = change
    return totals.sum()


@kernel(cache=True, parallel=True)
def walk_totals(values, scale):
    """:meth:`seraph.backends.base.Backend.walk_totals` in one pass, added up over blocks of
    :data:`STEP_BLOCK` vertices whatever the threads (as :func:`walk_step`'s)."""
    n = len(values)
    blocks = (n + STEP_BLOCK - 1) // STEP_BLOCK
    totals, dangling = np.zeros(blocks), np.zeros(blocks)
    for b in prange(blocks):
        total = lost = 0.0
        for v in range(b * STEP_BLOCK, min(n, (b + 1) * STEP_BLOCK)):
            total += values[v]
            lost += values[v] * (scale[v] == 0)  # no branch on the few vertices, at random
        totals[b], dangling[b] = total, lost
    return totals.sum(), dangling.sum()


@njit(cache=True, nogil=True, inline="always")
def _operand(value, factor, spread, vertex, scale, v):
    """v's operand from its sum, ``(factor * value + jump) * scale[v]`` with the jump
    ``spread`` plus 1 at ``vertex`` (:class:`seraph.spec.Recompute`), rounded once to the
    operand's type."""
    jump = spread + 1.0 if v == vertex else spread
    return (factor * value + jump) * scale[v]


@kernel(cache=True, parallel=True)
def walk_operands(values, operand, scale, damping, factor, vertex):
    """:meth:`seraph.backends.base.Backend.walk_operands` on the values in one pass
    (``vertex`` -1 for a uniform ``p``); the partial sums are the caller's."""
    n = len(values)
    spread = 1.0 / n if vertex < 0 else 0.0
    for v in prange(n):
        t = values[v] * factor
        values[v] = t
        operand[v] = _operand(t, damping, spread, vertex, scale, v)


@njit(cache=True, nogil=True)
def _recompute_range(v0, v1, base, length, page_edges, indptr, indices, offset, operand,
                     values, scale, page_sums, factor, spread, vertex, eps, predictor, table,
                     states, block_epoch, block_shift, epoch, counters, moved, chunk):
    """Recomputes destinations v0..v1-1 of one span of pages (span edge ``base``, a page's
    first, sits at ``offset`` in ``indices``); counters go to row ``chunk``, once, and the
    sum of |change| over the sums written to ``moved[chunk]``.

    A vertex whose in-edges lie in one page recomputes its sum; one split across pages
    recomputes the piece of each page of the span in turn, each held to its own partial
    sum (:func:`recompute_pages`). The weak predictor skips or attempts a vertex whose
    in-edges all lie in the span as a whole; one with in-edges outside it always attempts
    its pieces here, and keeps any debt (:func:`~seraph.predictors.weak_record_part`).
    The vertices go in ascending order, so the end of the page holding a vertex's first
    in-edge in the span only moves forward."""
    end, shift = base + length, offset - base
    weak = predictor & WEAK
    attempted = succeeded = skipped = edges = 0
    written = 0.0
    # The end of the page holding the first in-edge in the span of the last vertex attempted.
    page_end = base + ((max(indptr[v0], base) - base) // page_edges + 1) * page_edges
    for v in range(v0, v1):
        row_lo, row_hi = indptr[v], indptr[v + 1]
        lo, hi = max(row_lo, base), min(row_hi, end)
        if lo >= hi:
            continue
        whole = row_lo == lo and row_hi == hi
        if weak and whole and weak_skip(table, states, v):
            skipped += 1
            continue
        while lo >= page_end:
            page_end += page_edges
        if row_lo >= page_end - page_edges and row_hi <= page_end:  # in one page
            attempted += 1
            edges += hi - lo
            total = _row_sum(indices, operand, lo + shift, hi + shift)
            change = total - values[v]
            success = abs(change) > eps * values[v]
            if success:
                values[v] = total
                operand[v] = _operand(total, factor, spread, vertex, scale, v)
                mark_block(block_epoch, v, block_shift, epoch)
                succeeded += 1
                written += abs(change)
            if weak:
                weak_record(table, states, v, success)
            continue
        # Split: what each page last gave v is its partial sum of the vertex it shares with
        # the page before (slot 0) or after (slot 1).
        wrote = False
        piece_start = page_end - page_edges
        while piece_start < hi:
            piece_lo, piece_hi = max(row_lo, piece_start), min(row_hi, piece_start + page_edges)
            attempted += 1
            edges += piece_hi - piece_lo
            total = _row_sum(indices, operand, piece_lo + shift, piece_hi + shift)
            at = 2 * (piece_start // page_edges) + (0 if row_lo < piece_start else 1)
            change = total - page_sums[at]
            if abs(change) > eps * page_sums[at]:
                page_sums[at] = total
                values[v] += change
                operand[v] = _operand(values[v], factor, spread, vertex, scale, v)
                mark_block(block_epoch, v, block_shift, epoch)
                succeeded += 1
                written += abs(change)
                wrote = True
            piece_start += page_edges
        if weak and whole:
            weak_record(table, states, v, wrote)
        elif weak:
            weak_record_part(table, states, v, wrote)
    counters[chunk, ATTEMPTED] += attempted
    counters[chunk, SUCCEEDED] += succeeded
    counters[chunk, SKIPPED_WEAK] += skipped
    counters[chunk, EDGES_READ] += edges
    moved[chunk] += written


@njit(cache=True, nogil=True, parallel=True)
def _recompute_chunks(cuts, workers, base, length, page_edges, indptr, indices, offset,
                      operand, values, scale, page_sums, factor, spread, vertex, eps, predictor,
                      table, states, block_epoch, block_shift, epoch, counters, moved):
    """Recomputes one span's destinations as the vertex ranges between ``cuts``, which
    ``workers`` tasks take in order, each the next one not yet taken.

    The threads then recompute neighbouring ranges at any moment, so a range reads nearly
    all that the ranges before it wrote in the sweep, as in a sweep page by page: ranges
    split among the threads in blocks would have the later blocks read the last sweep's
    sums, and the rounds would take longer to settle. A thread that the machine's other
    work holds up delays its range alone."""
    taken = np.zeros(1, dtype=np.int64)
    for w in prange(workers):
        while True:
            c = atomic_add(taken, 0, 1)
            if c >= len(cuts) - 1:
                break
            # An int64 row (see pull.py's _pull_chunks).
            _recompute_range(cuts[c], cuts[c + 1], base, length, page_edges, indptr, indices,
                             offset, operand, values, scale, page_sums, factor, spread, vertex,
                             eps, predictor, table, states, block_epoch, block_shift, epoch,
                             counters, moved, np.int64(w))


@kernel(cache=True, nogil=True)
def recompute_pages(pages, offsets, page_edges, num_edges, first_vertex, last_vertex, indptr,
                    indices, operand, values, scale, page_sums, factor, spread, vertex, eps,
                    predictor, table, states, block_epoch, block_shift, epoch, num_chunks,
                    halt):
    """One sweep of a recomputing program (:class:`seraph.spec.Recompute`) over ``pages``:
    each vertex the weak predictor does not skip sets its sum (``values``, or a page's
    partial sum of a vertex split across pages: ``page_sums[2 p]`` for page p's first vertex
    and ``page_sums[2 p + 1]`` for its last) to the sum of ``operand`` over the page's
    in-edges, when it moved by more than ``eps`` times the sum it replaces; the operand is
    then set from the vertex's sum (``factor``, ``spread`` and ``vertex`` as the rule's:
    :class:`seraph.spec.Recompute`), and the vertex's block is marked with ``epoch``.

    Pages that follow one another both in the graph and in ``indices`` go as one span, as
    :func:`gather_pages`' do, its vertices in ranges of :data:`RANGE_WORK`, which
    ``num_chunks`` tasks take in order (:func:`_recompute_chunks`): one parallel pass a
    span, not one a page, so a round that attempts few vertices costs little more than
    their in-edges. One thread recomputes every piece of a vertex in the
    span and spans go one after another, so a split vertex's partial sums never race.
    Stops before the next span once ``halt[0]`` is set (:mod:`seraph.interrupts`).

    Returns the counters (pull.py's columns, and the edges read) summed over chunks, and the
    sum of |change| over the sums written."""
    counters = np.zeros((num_chunks, NUM_COUNTERS + 1), dtype=np.int64)
    moved = np.zeros(num_chunks)
    k = 0
    while k < len(pages):
        if atomic_load(halt, 0):
            break
        j, base, length, v_first, v_end = next_span(pages, offsets, page_edges, num_edges,
                                                    first_vertex, last_vertex, k)
        if not PARALLEL or length < SERIAL_EDGES:
            _recompute_range(v_first, v_end, base, length, page_edges, indptr, indices,
                             offsets[k], operand, values, scale, page_sums, factor, spread,
                             vertex, eps, predictor, table, states, block_epoch, block_shift,
                             epoch, counters, moved, np.int64(0))
        else:
            work = length + VERTEX_COST * (v_end - v_first)
            ranges = min(v_end - v_first, max(num_chunks, work // RANGE_WORK))
            _recompute_chunks(_cuts(indptr, v_first, v_end, ranges), num_chunks, base, length,
                              page_edges, indptr, indices, offsets[k], operand, values, scale,
                              page_sums, factor, spread, vertex, eps, predictor, table, states,
                              block_epoch, block_shift, epoch, counters, moved)
        k = j
    return counters.sum(axis=0), moved.sum()


@njit(cache=True)
def split_sums_from_values(indptr, last_vertex, page_edges, num_edges, values, page_sums):
    """The page sums of the vertices split across pages (see :func:`recompute_pages`), from
    their values: the page holding a vertex's first in-edge holds its whole value, the
    others 0, so that they add up to it. Only a page's last vertex can start there and go
    on past it (its first vertex started in an earlier page)."""
    for p in range(len(last_vertex)):
        base = p * page_edges
        w = last_vertex[p]
        page_sums[2 * p] = 0.0
        starts_here = indptr[w] >= base and indptr[w + 1] > min(base + page_edges, num_edges)
        page_sums[2 * p + 1] = values[w] if starts_here else 0.0
