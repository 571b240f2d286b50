"""The pull window kernel for the CPU backend (numba), and host-side helpers.

One call sweeps the pages of a window in order. For every destination vertex of a page it
pulls ``min(value[u] + w)`` over the page's in-edges of that vertex, unless a predictor
says the attempt can be skipped. Pages are swept one after another, the vertices of a
large page in parallel; a vertex whose in-edges span two pages is therefore never written
by two threads at once, and min is idempotent, so partial minima from both pages combine.

Values are read while other threads lower them: any value read is an upper bound that
some path achieves, so a stale read can delay convergence but never change the result.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from seraph.backends.cpu.atomics import atomic_add, atomic_load
from seraph.kernels import PARALLEL, kernel
from seraph.lightest import proven
from seraph.operators import HOP, LABEL, WIDTH
from seraph.predictors import STRONG, WEAK, weak_record, weak_skip
from seraph.prefetch import prefetch

# Counters each sweep reports, as columns of the per-chunk counter array.
ATTEMPTED, SUCCEEDED, SKIPPED_STRONG, SKIPPED_WEAK = range(4)
NUM_COUNTERS = 4
#: The empty bitmap: no vertex known to offer the floor (see relax).
NO_BITS = np.zeros(0, dtype=np.uint8)
#: Pages of fewer edges are pulled on the calling thread: waking the thread pool would cost
#: more than the page (the push engine's small rounds follow the same rule).
SERIAL_EDGES = 4096
#: Pages that lie one after another in the slots are swept (or summed, gather.py) as one
#: span of up to this many edges: a resident graph in a few parallel passes, and an
#: interrupt heard between them.
SPAN_EDGES = 1 << 26
#: Vertices a sweep's worker takes at a time (_pull_blocks), looking at the halt flag
#: before each block.
BLOCK = 4096
#: How many vertices ahead the BFS sweep asks for a row (_pull_levels; see prefetch.py).
ROW_AHEAD = 16


@njit(cache=True, inline="always")
def mark_block(block_epoch, v, block_shift, epoch):
    """Marks v's source block with ``epoch``, writing only where the mark differs: threads
    on neighbouring vertex ranges share the marks' cache lines, and a store on every
    success would bounce each line between their cores."""
    if block_epoch[v >> block_shift] != epoch:
        block_epoch[v >> block_shift] = epoch


@njit(cache=True, inline="always")
def lower(values, changed, block_epoch, block_shift, epoch, v, old, best, best_written):
    """Where a pull found ``best`` below v's value ``old``: writes it, flags v changed and
    marks its block. Returns whether it did, and the smallest value written so far."""
    if best >= old:
        return False, best_written
    values[v] = best
    changed[v] = 1
    mark_block(block_epoch, v, block_shift, epoch)
    return True, min(best, best_written)


@njit(cache=True, inline="always")
def offer(op, val, w):
    """What a weighted edge operator (:mod:`seraph.operators`) offers over an edge of weight
    operand ``w`` from a value ``val``: ``val + w`` for DISTANCE (and for HOP and LABEL
    given their constant 1 or 0), ``max(val, w)`` for WIDTH, whose operands are width codes
    (:func:`~seraph.operators.width_codes`). Both branches keep the operands' type."""
    if op == WIDTH:
        return w if w > val else val
    return val + w


@njit(cache=True, inline="always")
def relax(values, indices, weights, lo, hi, best, op, by_weight, inf, floor):
    """min(best, offer(value[u], w)) over the in-edges [lo, hi) (:func:`offer`; never
    offering from INF), stopping once it reaches ``floor``, below which no candidate can go
    (:func:`pull_floor`). ``weights`` holds the operator's operands (weighted operators).

    With ``by_weight`` (rows lightest first, ``Graph.rows_by_weight``) it also stops at the
    first in-edge whose weight alone reaches ``best``: values are at least 0, so neither it
    nor any heavier in-edge after it can offer less, and their sources' values go unread."""
    for i in range(lo, hi):
        if by_weight and weights[i] >= best:
            break
        u = indices[i]
        val = values[u]
        if op == HOP:
            if val != inf and val + 1 < best:
                best = val + 1
        elif op == LABEL:
            if val < best:
                best = val
        else:
            cand = offer(op, val, weights[i])
            if cand < best:
                best = cand
        if best <= floor:
            break
    return best


@njit(cache=True, inline="always")
def pull_floor(predictor, levels, threshold):
    """The smallest value a pull can give a vertex the strong rule leaves open, so that
    the pull stops once it has it (-1: none known). For BFS it is the threshold: after k
    rounds every vertex within k hops holds its level, so a vertex above k + 1 is more than
    k hops away and no in-neighbour offers less than k + 1 (design.md, section 7). This is
    the early exit of a bottom-up BFS step, which stops at the first parent it finds."""
    if predictor & STRONG and levels and threshold >= 0:
        return threshold
    return -1


@kernel(cache=True, parallel=True)
def offering_floor(values, floor, inf):
    """A bit per vertex, set where its value plus one is at most ``floor`` (BFS: it offers
    an open vertex the lowest level that vertex can get), and how many vertices hold a
    value from ``floor`` up, short of ``inf`` (none: an in-neighbour without its bit offers
    nothing). Values only go down during a run, so a bit stays true for later sweeps with
    the same floor."""
    bits = np.empty((len(values) + 7) >> 3, dtype=np.uint8)  # each word written once
    beyond = 0
    for w in prange(len(bits)):
        # Without branches: a late round's values fall either side of the floor at random.
        word = count = 0
        for v in range(8 * w, min(8 * w + 8, len(values))):
            value = values[v]
            word |= np.uint8(value < floor) << (v - 8 * w)
            count += (value >= floor) & (value != inf)
        bits[w] = word
        beyond += count
    return bits, beyond


@njit(cache=True, nogil=True)
def _pull_range(v0, v1, base, length, page_edges, indptr, indices, weights, offset, values,
                op, by_weight, inf, predictor, threshold, light_codes, light_unit, table, states,
                changed, block_epoch, block_shift, epoch, counters, minimum, chunk, floor):
    """Pulls destinations v0..v1-1 of a span of pages; counters go to row ``chunk``."""
    best_written = minimum[chunk]
    # Counted in locals, written once: a count in the shared array is a load and a store
    # every vertex.
    attempted = succeeded = skipped_strong = skipped_weak = 0
    for v in range(v0, v1):
        lo = max(indptr[v], base)
        hi = min(indptr[v + 1], base + length)
        if lo >= hi:
            continue
        old = values[v]
        if predictor & STRONG and proven(old, threshold, light_codes, light_unit, v):
            skipped_strong += 1
            continue
        # A vertex split across pages always attempts, in a span too: its state must
        # describe all of its in-edges, or a skip on one page could be hidden by an attempt
        # on another (a re-check sweeps the owing vertex's pages one at a time).
        if predictor & WEAK and indptr[v] // page_edges == (indptr[v + 1] - 1) // page_edges \
                and weak_skip(table, states, v):
            skipped_weak += 1
            continue
        attempted += 1
        lo, hi = lo - base + offset, hi - base + offset
        best = relax(values, indices, weights, lo, hi, old, op, by_weight, inf, floor)
        lowered, best_written = lower(values, changed, block_epoch, block_shift, epoch, v, old,
                                      best, best_written)
        succeeded += lowered
        if predictor & WEAK:
            weak_record(table, states, v, lowered)
    _counted(counters, minimum, chunk, best_written, attempted, succeeded, skipped_strong,
             skipped_weak)


@njit(cache=True, inline="always")
def _counted(counters, minimum, chunk, best_written, attempted, succeeded, skipped_strong,
             skipped_weak):
    """A pull's counts and smallest value written, into row ``chunk``."""
    minimum[chunk] = best_written
    counters[chunk, ATTEMPTED] += attempted
    counters[chunk, SUCCEEDED] += succeeded
    counters[chunk, SKIPPED_STRONG] += skipped_strong
    counters[chunk, SKIPPED_WEAK] += skipped_weak


@njit(cache=True, nogil=True)
def _pull_levels(v0, v1, base, length, indptr, indices, weights, offset, values, inf, floor,
                 changed, block_epoch, block_shift, epoch, counters, minimum, chunk, offering,
                 bits_only):
    """:func:`_pull_range` for BFS under the strong rule alone, with ``offering``
    (:func:`offering_floor`'s bits, set where a vertex offers the floor, which is the
    threshold): GAP's bottom-up step. A vertex's level comes first, its row bounds only
    where it is open: most vertices of a late round are settled. A vertex the rule proves
    final counts as skipped also where it has no in-edges in the span (for BFS at most
    the source: any other vertex holding a level was reached over an in-edge).

    The whole row's bits come before any value: a value read before the row's first
    offering in-neighbour could not lower the pull below the floor it ends at. The test is
    written out here, not in relax: a row's scan in a called function, even inlined,
    compiled into much slower code per vertex."""
    best_written = minimum[chunk]
    attempted = succeeded = skipped_strong = 0
    for v in range(v0, v1):
        # Open rows lie too far apart for the hardware prefetcher; a settled vertex's row
        # is not asked for, as a late sweep's vertices are mostly settled.
        ahead = min(v + ROW_AHEAD, v1 - 1)
        if values[ahead] > floor:
            prefetch(indices, indptr[ahead] - base + offset)
        old = values[v]
        if old <= floor:
            skipped_strong += 1
            continue
        lo = max(indptr[v], base)
        hi = min(indptr[v + 1], base + length)
        if lo >= hi:
            continue
        attempted += 1
        lo, hi = lo - base + offset, hi - base + offset
        offered = False
        for i in range(lo, hi):
            u = indices[i]
            if offering[u >> 3] >> (u & 7) & 1:
                offered = True
                break
        if offered:
            best = floor
        elif bits_only:
            # No in-neighbour without its bit offers anything (sweep_pages): their values
            # stay unread, as GAP's step reads only its frontier's bits.
            continue
        else:
            best = relax(values, indices, weights, lo, hi, old, HOP, False, inf, floor)
        lowered, best_written = lower(values, changed, block_epoch, block_shift, epoch, v, old,
                                      best, best_written)
        succeeded += lowered
    _counted(counters, minimum, chunk, best_written, attempted, succeeded, skipped_strong, 0)


@njit(cache=True, nogil=True)
def _pull_blocks(ticket, v_first, v_end, base, length, page_edges, indptr, indices, weights,
                 offset, values, op, by_weight, inf, predictor, threshold, light_codes,
                 light_unit, table, states, changed, block_epoch, block_shift, epoch, counters,
                 minimum, chunk, floor, offering, bits_only, halt):
    """Pulls blocks of :data:`BLOCK` destinations of [v_first, v_end), each the next one
    ``ticket`` hands out, until none is left or ``halt[0]`` is set; counters go to row
    ``chunk``. A worker that is descheduled on a busy machine thus leaves its blocks to
    the others, as GAP's dynamically scheduled steps do. ``offering`` (BFS; empty: none)
    picks :func:`_pull_levels`."""
    while not atomic_load(halt, 0):
        v0 = v_first + atomic_add(ticket, 0, 1) * BLOCK
        if v0 >= v_end:
            break
        v1 = min(v0 + BLOCK, v_end)
        if len(offering):
            _pull_levels(v0, v1, base, length, indptr, indices, weights, offset, values, inf,
                         floor, changed, block_epoch, block_shift, epoch, counters, minimum,
                         chunk, offering, bits_only)
        else:
            _pull_range(v0, v1, base, length, page_edges, indptr, indices, weights, offset,
                        values, op, by_weight, inf, predictor, threshold, light_codes,
                        light_unit, table, states, changed, block_epoch, block_shift, epoch,
                        counters, minimum, chunk, floor)


@njit(cache=True, nogil=True, inline="always")
def page_span(p, page_edges, num_edges, first_vertex, last_vertex):
    """Page ``p``'s first edge and its edge count, and its first destination vertex and
    how many it has (the first and last may be split with the pages beside it)."""
    base = p * page_edges
    v_first = first_vertex[p]
    return base, min(page_edges, num_edges - base), v_first, last_vertex[p] + 1 - v_first


@kernel(cache=True, nogil=True)
def sweep_pages(pages, offsets, page_edges, num_edges, first_vertex, last_vertex, indptr,
                indices, weights, values, op, by_weight, levels, inf, predictor, threshold,
                light_codes, light_unit, table, states, changed, block_epoch, block_shift,
                epoch, num_chunks, offering, bits_only, halt):
    """Sweeps ``pages`` (page p's edges start at ``offsets[k]`` in ``indices``/``weights``).
    The strong rule's test is :func:`seraph.lightest.proven`; ``offering`` is
    :func:`offering_floor`'s bitmap for this sweep's floor, or empty. With ``bits_only``
    (where the bitmap was set just before this sweep, and every finite value then was
    below the floor) a vertex no bit offers keeps its value, its in-neighbours' values
    unread: relaxing them then could give it only values this sweep writes, and a page
    reading those is active again (seraph.rounds.PageActivity). Pages that follow one
    another both in the graph and in the slots, ascending, are pulled as one span of up to
    :data:`SPAN_EDGES` edges; the sweep stops within a block of :data:`BLOCK` vertices
    once ``halt[0]`` is set (:mod:`seraph.interrupts`). Its serial twin pulls every page on this
    thread (:mod:`seraph.kernels`).

    Returns (counters summed over chunks, the smallest value written or ``inf``).
    """
    counters = np.zeros((num_chunks, NUM_COUNTERS), dtype=np.int64)
    minimum = np.full(num_chunks, inf, dtype=values.dtype)
    floor = pull_floor(predictor, levels, threshold)
    ticket = np.zeros(1, dtype=np.int64)  # the next block of the span (_pull_blocks)
    k = 0
    while k < len(pages) and not atomic_load(halt, 0):
        # Pages that lie one after another in the slots too (every page of a resident
        # graph) are pulled as one span, in one parallel region: each region costs a wake
        # of the pool and a wait for its slowest thread, on a busy machine a scheduler
        # quantum, and a vertex split between two of them is pulled once.
        after, base, length, v_first, v_end = next_span(pages, offsets, page_edges, num_edges,
                                                        first_vertex, last_vertex, k)
        ticket[0] = 0
        workers = 1 if not PARALLEL or length < SERIAL_EDGES else \
            min(num_chunks, -(-(v_end - v_first) // BLOCK))
        if workers == 1:
            _pull_blocks(ticket, v_first, v_end, base, length, page_edges, indptr, indices,
                         weights, offsets[k], values, op, by_weight, inf, predictor, threshold,
                         light_codes, light_unit, table, states, changed, block_epoch,
                         block_shift, epoch, counters, minimum, np.int64(0),  # see _pull_chunks
                         floor, offering, bits_only, halt)
        else:
            _pull_chunks(ticket, v_first, v_end, workers, base, length, page_edges, indptr,
                         indices, weights, offsets[k], values, op, by_weight, inf, predictor,
                         threshold, light_codes, light_unit, table, states, changed,
                         block_epoch, block_shift, epoch, counters, minimum, floor, offering,
                         bits_only, halt)
        k = after
    # Summed in loops, not counters.sum(axis=0) and minimum.min(), which compile slowly.
    total, best = np.zeros(NUM_COUNTERS, dtype=np.int64), inf
    for c in range(num_chunks):
        for j in range(NUM_COUNTERS):
            total[j] += counters[c, j]
        if minimum[c] < best:
            best = minimum[c]
    return total, best


@njit(cache=True, nogil=True)
def next_span(pages, offsets, page_edges, num_edges, first_vertex, last_vertex, k):
    """The span from index ``k``: the run of ascending pages one after another, in the
    slots too, of up to :data:`SPAN_EDGES` edges (a run going down is swept page by page,
    in its order). Returns the index after it, its first edge and edge count, and its
    destinations' range [v_first, v_end)."""
    end = k
    while end + 1 < len(pages) and pages[end + 1] == pages[end] + 1 \
            and offsets[end + 1] == offsets[end] + page_edges \
            and (end + 2 - k) * page_edges <= SPAN_EDGES:
        end += 1
    base, _, v_first, _ = page_span(pages[k], page_edges, num_edges, first_vertex,
                                    last_vertex)
    last_base, last_length, last_first, last_count = page_span(
        pages[end], page_edges, num_edges, first_vertex, last_vertex)
    return end + 1, base, last_base + last_length - base, v_first, last_first + last_count


@njit(cache=True, nogil=True, parallel=True)
def _pull_chunks(ticket, v_first, v_end, workers, base, length, page_edges, indptr, indices,
                 weights, offset, values, op, by_weight, inf, predictor, threshold, light_codes,
                 light_unit, table, states, changed, block_epoch, block_shift, epoch, counters,
                 minimum, floor, offering, bits_only, halt):
    """Pulls a span's destinations on ``workers`` workers in parallel (_pull_blocks)."""
    for c in prange(workers):
        # An int64 worker index, as sweep_pages passes: prange's index type (int64 while
        # typing, uint64 once parallelised) would compile _pull_blocks twice more.
        _pull_blocks(ticket, v_first, v_end, base, length, page_edges, indptr, indices,
                     weights, offset, values, op, by_weight, inf, predictor, threshold,
                     light_codes, light_unit, table, states, changed, block_epoch, block_shift,
                     epoch, counters, minimum, np.int64(c), floor, offering, bits_only, halt)


@kernel(cache=True, parallel=True)
def label_from_reach(values, out_degrees, inf):
    """In place, after a reach from a hub (:data:`seraph.algorithms.cc.REACH`): every reached
    vertex takes the smallest reached id, the label of its component, and every other
    vertex its own id. Returns the unreached vertices with out-edges (ascending), the
    ones whose labels must still spread."""
    n = len(values)
    smallest = 0
    while smallest < n and values[smallest] == inf:
        smallest += 1
    spreads = np.empty(n, dtype=np.bool_)
    for v in prange(n):
        unreached = values[v] == inf
        spreads[v] = unreached and out_degrees[v] > 0
        values[v] = v if unreached else smallest
    return np.nonzero(spreads)[0]
