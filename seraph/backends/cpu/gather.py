"""The summing kernels for the CPU backend (numba) (docs/design.md, "Summing programs").

:func:`gather_pages` is an iterating program's one pass over a window of pages: for every
destination vertex of a page it adds ``operand[u]``, summed over the page's in-edges
``(u -> v)`` in float64, to ``into[v]``. :func:`recompute_pages` is a recomputing
program's sweep (:class:`seraph.spec.Recompute`): each attempted vertex's sum is
recomputed, not added to. Pages (the gather's spans of pages) go one after another, the
vertices of a large one in parallel, so no two threads write one vertex: a vertex whose
in-edges span two pages gets the two partial sums one after the other.

:func:`walk_step` is an iterating program's step from the sums: its new values, their
change and the next operand in one parallel pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from seraph.backends.cpu.atomics import atomic_load
from seraph.backends.cpu.pull import (
    ATTEMPTED,
    NUM_COUNTERS,
    SERIAL_EDGES,
    SKIPPED_WEAK,
    SPAN_EDGES,
    SUCCEEDED,
    page_span,
)
from seraph.kernels import PARALLEL, kernel
from seraph.predictors import WEAK, weak_record, weak_skip

#: The column of the edges read, after pull.py's counters.
EDGES_READ = NUM_COUNTERS
#: What a vertex costs a sum besides its in-edges, in edges: its row bounds and its sum's
#: write, which count where most vertices have few in-edges (an R-MAT's tail).
VERTEX_COST = 2
#: The vertices of each block whose totals :func:`walk_step` adds up.
STEP_BLOCK = 1 << 14


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
        total = 0.0
        # Unsigned indices: numba wraps a signed one round where negative, a test and a
        # select on each of the edge's two reads.
        for i in range(np.uint64(lo + shift), np.uint64(hi + shift)):
            total += operand[np.uint64(indices[i])]
        into[v] += total


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
    in ``indices`` (a resident graph's, in ascending order) are summed as one span of up
    to :data:`SPAN_EDGES` edges, each span's vertices in ``num_chunks`` ranges of equal
    work. Stops before the next span once ``halt[0]`` is set (:mod:`seraph.interrupts`).
    Its serial twin sums every span on this thread (:mod:`seraph.kernels`)."""
    k = 0
    while k < len(pages):
        if atomic_load(halt, 0):
            break
        j = k + 1
        while (j < len(pages) and pages[j] == pages[j - 1] + 1
               and offsets[j] == offsets[j - 1] + page_edges
               and (j + 1 - k) * page_edges <= SPAN_EDGES):
            j += 1
        base, _, v_first, _ = page_span(pages[k], page_edges, num_edges, first_vertex,
                                        last_vertex)
        last_base, last_length, last_first, last_count = page_span(
            pages[j - 1], page_edges, num_edges, first_vertex, last_vertex)
        length, v_end = last_base + last_length - base, last_first + last_count
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


@njit(cache=True, nogil=True)
def _recompute_range(v0, v1, page, base, length, indptr, indices, offset, operand, values,
                     scale, page_sums, factor, eps, predictor, table, states, block_epoch,
                     block_shift, epoch, counters, chunk):
    """Recomputes destinations v0..v1-1 of one page; counters go to row ``chunk``."""
    for v in range(v0, v1):
        row_lo, row_hi = indptr[v], indptr[v + 1]
        lo, hi = max(row_lo, base), min(row_hi, base + length)
        if lo >= hi:
            continue
        whole = row_lo >= base and row_hi <= base + length
        # A vertex split across pages always attempts (as pull.py's): its state must
        # describe all of its in-edges.
        if predictor & WEAK and whole and weak_skip(table, states, v):
            counters[chunk, SKIPPED_WEAK] += 1
            continue
        counters[chunk, ATTEMPTED] += 1
        counters[chunk, EDGES_READ] += hi - lo
        total = 0.0
        for i in range(lo - base + offset, hi - base + offset):
            total += operand[indices[i]]
        # What this page last gave v: its whole sum, or the page's partial sum of the
        # vertex it shares with the page before (slot 0) or after (slot 1).
        at = 2 * page + (0 if row_lo < base else 1)
        old = values[v] if whole else page_sums[at]
        change = total - old
        success = abs(change) > eps * old
        if success:
            if whole:
                values[v] = total
            else:
                page_sums[at] = total
                values[v] += change
            operand[v] += factor * scale[v] * change
            block_epoch[v >> block_shift] = epoch
            counters[chunk, SUCCEEDED] += 1
        if predictor & WEAK:
            weak_record(table, states, v, success)


@njit(cache=True, nogil=True, parallel=True)
def _recompute_chunks(v_first, count, chunks, page, base, length, indptr, indices, offset,
                      operand, values, scale, page_sums, factor, eps, predictor, table, states,
                      block_epoch, block_shift, epoch, counters):
    """Recomputes one page's destinations as ``chunks`` vertex ranges in parallel."""
    for c in prange(chunks):
        _recompute_range(v_first + count * c // chunks, v_first + count * (c + 1) // chunks,
                         page, base, length, indptr, indices, offset, operand, values, scale,
                         page_sums, factor, eps, predictor, table, states, block_epoch,
                         block_shift, epoch, counters, np.int64(c))


@kernel(cache=True, nogil=True)
def recompute_pages(pages, offsets, page_edges, num_edges, first_vertex, last_vertex, indptr,
                    indices, operand, values, scale, page_sums, factor, eps, predictor, table,
                    states, block_epoch, block_shift, epoch, num_chunks, halt):
    """One sweep of a recomputing program (:class:`seraph.spec.Recompute`) over ``pages``:
    each vertex the weak predictor does not skip sets its sum (``values``, or a page's
    partial sum of a vertex split across pages: ``page_sums[2 p]`` for page p's first vertex
    and ``page_sums[2 p + 1]`` for its last) to the sum of ``operand`` over the page's
    in-edges, when it moved by more than ``eps`` times the sum it replaces; the operand
    then follows and the vertex's block is marked with ``epoch``. Pages are recomputed one
    after another, so a split vertex's partial sums never race. Stops before the next page
    once ``halt[0]`` is set (:mod:`seraph.interrupts`).

    Returns the counters (pull.py's columns, and the edges read) summed over chunks."""
    counters = np.zeros((num_chunks, NUM_COUNTERS + 1), dtype=np.int64)
    for k in range(len(pages)):
        if atomic_load(halt, 0):
            break
        p = pages[k]
        base, length, v_first, count = page_span(p, page_edges, num_edges, first_vertex,
                                                 last_vertex)
        if not PARALLEL or length < SERIAL_EDGES:
            _recompute_range(v_first, v_first + count, p, base, length, indptr, indices,
                             offsets[k], operand, values, scale, page_sums, factor, eps,
                             predictor, table, states, block_epoch, block_shift, epoch,
                             counters, np.int64(0))
        else:
            _recompute_chunks(v_first, count, min(num_chunks, count), p, base, length, indptr,
                              indices, offsets[k], operand, values, scale, page_sums, factor,
                              eps, predictor, table, states, block_epoch, block_shift, epoch,
                              counters)
    return counters.sum(axis=0)


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
