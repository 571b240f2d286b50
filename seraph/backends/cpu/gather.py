"""The summing kernel for the CPU backend (numba): a summing program's one pass over a
window of pages (docs/design.md, "Summing programs").

For every destination vertex of a page it adds ``operand[u]``, summed over the page's
in-edges ``(u -> v)`` in float64, to ``into[v]``. Pages are summed one after another, the
vertices of a large page in parallel, so no two threads write one vertex: a vertex whose
in-edges span two pages gets the two partial sums one after the other.
"""

from __future__ import annotations

from numba import njit, prange

from seraph.backends.cpu.atomics import atomic_load
from seraph.backends.cpu.pull import SERIAL_EDGES
from seraph.kernels import PARALLEL, kernel


@njit(cache=True, nogil=True)
def _sum_range(v0, v1, base, length, indptr, indices, offset, operand, into):
    """Sums destinations v0..v1-1 of one page (page edge ``base`` sits at ``offset`` in
    ``indices``)."""
    for v in range(v0, v1):
        lo = max(indptr[v], base)
        hi = min(indptr[v + 1], base + length)
        if lo >= hi:
            continue
        total = 0.0
        for i in range(lo - base + offset, hi - base + offset):
            total += operand[indices[i]]
        into[v] += total


@njit(cache=True, nogil=True, parallel=True)
def _sum_chunks(v_first, count, chunks, base, length, indptr, indices, offset, operand, into):
    """Sums one page's destinations as ``chunks`` vertex ranges in parallel."""
    for c in prange(chunks):
        _sum_range(v_first + count * c // chunks, v_first + count * (c + 1) // chunks, base,
                   length, indptr, indices, offset, operand, into)


@kernel(cache=True, nogil=True)
def gather_pages(pages, offsets, page_edges, num_edges, first_vertex, last_vertex, indptr,
                 indices, operand, into, num_chunks, halt):
    """``into[v] += sum of operand[u]`` over the in-edges of ``pages`` (page p's edges start
    at ``offsets[k]`` in ``indices``). Stops before the next page once ``halt[0]`` is set
    (:mod:`seraph.interrupts`). Its serial twin sums every page on this thread
    (:mod:`seraph.kernels`)."""
    for k in range(len(pages)):
        if atomic_load(halt, 0):
            break
        p = pages[k]
        base = p * page_edges
        length = min(page_edges, num_edges - base)
        v_first = first_vertex[p]
        count = last_vertex[p] + 1 - v_first
        if not PARALLEL or length < SERIAL_EDGES:
            _sum_range(v_first, v_first + count, base, length, indptr, indices, offsets[k],
                       operand, into)
        else:
            _sum_chunks(v_first, count, min(num_chunks, count), base, length, indptr,
                        indices, offsets[k], operand, into)
