"""The activity summary both backends and the scheduler share: which source blocks each
page reads, which pages a change since their last sweep makes active, and how many
out-edges a frontier has (whether a round may push).

A vertex's block is ``v >> block_shift`` (:class:`~seraph.backends.layout.Layout`); each
backend records per block the epoch of its last change.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from seraph.backends.caches import graph_cached
from seraph.backends.layout import Layout
from seraph.kernels import kernel, zeros
from seraph.predictors import STATE_MASK


@kernel(cache=True, parallel=True)
def page_source_blocks(indices, page_edges, num_pages, block_shift, num_blocks):
    """The source blocks each page reads, one bit per block (row p: page p's blocks, 64
    to a word).

    This is the engine's activity summary: a page needs a sweep only if one of these
    blocks changed since the page was last swept.
    """
    bits = np.zeros((num_pages, (num_blocks + 63) // 64), dtype=np.uint64)
    for p in prange(num_pages):
        lo = p * page_edges
        hi = min(lo + page_edges, len(indices))
        for i in range(lo, hi):
            b = indices[i] >> block_shift
            bits[p, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    return bits


@kernel(cache=True, parallel=True)
def awake_in_pages(pages, page_first, page_last, page_edges, num_edges, indptr, states,
                   attempt, hub_edges):
    """For each of ``pages``: the in-edges held in it by the vertices that a sweep of it
    under the weak predictor attempts, and how many of those vertices have some (an int64
    pair a page). A vertex attempts in an attempting state (``attempt[state &
    STATE_MASK]``), and whatever its state where its in-edges are not all in the page or
    number more than ``hub_edges`` (a GPU's hubs, summed by chunks)."""
    counts = zeros(2 * len(pages), np.int64).reshape(len(pages), 2)
    for k in prange(len(pages)):
        p = pages[k]
        lo = p * page_edges
        hi = min(lo + page_edges, num_edges)
        edges = rows = 0
        for v in range(page_first[p], page_last[p] + 1):
            first, end = indptr[v], indptr[v + 1]
            if attempt[states[v] & STATE_MASK] or first < lo or end > hi or \
                    end - first > hub_edges:
                held = min(end, hi) - max(first, lo)
                if held > 0:
                    edges += held
                    rows += 1
        counts[k, 0], counts[k, 1] = edges, rows
    return counts


def pages_active(pages: np.ndarray, bits: np.ndarray, block_epoch: np.ndarray,
                 processed: np.ndarray) -> np.ndarray:
    """For each of ``pages`` (int64, contiguous), whether a source block it reads changed
    at or after the epoch in which it was last swept.

    The scheduler asks before every window step, so the cost must not grow with blocks x
    pages: the pages of a window were last swept in a few distinct epochs, and for each
    such epoch one bit mask of the blocks changed since then serves every page, which
    then needs one AND per 64 blocks."""
    since = processed[pages]
    return _pages_active(pages, bits, block_epoch, since, np.unique(since))


@njit(cache=True)
def _pages_active(pages, bits, block_epoch, since, epochs):
    """:func:`pages_active` given ``since`` (the pages' epochs) and ``epochs`` (those
    epochs, ascending and distinct)."""
    active = np.zeros(len(pages), dtype=np.bool_)
    if len(pages) == 0:
        return active
    # dirty[k]: the blocks changed at or after epochs[k]. A block goes into the mask of the
    # newest epoch it is dirty for; the masks of older epochs then take in the newer ones.
    dirty = np.zeros((len(epochs), bits.shape[1]), dtype=np.uint64)
    for b in range(len(block_epoch)):
        newest = _epochs_up_to(epochs, block_epoch[b]) - 1
        if newest >= 0:
            dirty[newest, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    for k in range(len(epochs) - 2, -1, -1):
        for w in range(bits.shape[1]):
            dirty[k, w] |= dirty[k + 1, w]
    for i in range(len(pages)):
        k = _epochs_up_to(epochs, since[i] - 1)  # the index of since[i] in epochs
        for w in range(bits.shape[1]):
            if bits[pages[i], w] & dirty[k, w]:
                active[i] = True
                break
    return active


@njit(cache=True, inline="always")
def _epochs_up_to(epochs, epoch):
    """How many of ``epochs`` (ascending) are at most ``epoch``: a binary search written
    out, which compiles in a fraction of np.searchsorted's time."""
    lo, hi = 0, len(epochs)
    while lo < hi:
        mid = (lo + hi) // 2
        if epochs[mid] <= epoch:
            lo = mid + 1
        else:
            hi = mid
    return lo


def blocks_of(vertices, block_shift, num_blocks):
    """The distinct source blocks of ``vertices``, ascending (a mask, not a sort: O(n)),
    on every thread where they are many."""
    hit = np.zeros(num_blocks, dtype=np.bool_)
    _hit_blocks.over(len(vertices))(vertices, block_shift, hit)
    return np.flatnonzero(hit)


@kernel(cache=True, parallel=True, nogil=True)
def _hit_blocks(vertices, block_shift, hit):
    for i in prange(len(vertices)):
        block = vertices[i] >> block_shift
        # Read first: the few blocks' flags share a few cache lines, which every thread's
        # store would take for itself in turn, though all store True.
        if not hit[block]:
            hit[block] = True


def page_summary(graph, layout: Layout) -> np.ndarray:
    """Source blocks read by each page (a bit per block), built once per graph and block
    size."""
    return graph_cached(graph, ("page_summary", layout.block_shift),
                        lambda: page_source_blocks.over(graph.num_edges, graph.num_edges)(
                            graph.csc()[1], graph.page_edges, graph.num_pages,
                            layout.block_shift, layout.num_blocks))


#: The push threshold a backend uses by default: rounds push while the changed vertices'
#: out-edges are fewer than m / PUSH_ALPHA (5% of the edges).
PUSH_ALPHA = 20.0


def edges_below(vertices: np.ndarray, outdeg: np.ndarray, limit: float) -> bool:
    """Whether ``vertices`` have fewer than ``limit`` out-edges in all: read in chunks, on
    every thread where they are many, that stop once the limit is reached."""
    if not len(vertices):
        return True
    chunks = max(1, -(-len(vertices) // _FLAG_CHUNK))
    return _listed_edges.over(len(vertices))(vertices, outdeg, limit, chunks).sum() < limit


def flagged_below(flags: np.ndarray, outdeg: np.ndarray, limit: float) -> int:
    """How many vertices ``flags`` flags, or -1 where their out-edges reach ``limit``: read
    in one pass that stops at the limit, so that a large set (a dense round's changes) is
    turned down without being listed, and an empty one needs no listing."""
    chunks = max(1, -(-len(flags) // _FLAG_CHUNK))
    counts, edges = _count_flagged.over(len(flags))(flags, outdeg, limit, chunks)
    count = int(counts.sum())
    return -1 if count and edges.sum() >= limit else count


#: Vertices per chunk of :func:`flagged_below` (one prange iteration each), and between a
#: chunk's looks at the other chunks' edges.
_FLAG_CHUNK = 1 << 16
_FLAG_LOOK = 4096


@kernel(cache=True, parallel=True, nogil=True)
def _count_flagged(flags, outdeg, limit, chunks):
    """Per chunk of vertices: the flagged ones and their out-edges (:func:`_count_chunk`),
    every chunk stopping once all chunks' edges so far reach ``limit``."""
    n = len(flags)
    counts = zeros(chunks, np.int64)
    edges = zeros(chunks, np.int64)
    for c in prange(chunks):
        _count_chunk(flags, outdeg, limit, n * c // chunks, n * (c + 1) // chunks, c,
                     counts, edges)
    return counts, edges


@njit(cache=True, nogil=True)
def _count_chunk(flags, outdeg, limit, lo, hi, c, counts, edges):
    """Chunk ``c`` (vertices ``[lo, hi)``) of :func:`_count_flagged`, without a branch on
    a flag (a dense round's changes are scattered, and a branch on each mispredicts). Every
    :data:`_FLAG_LOOK` vertices it publishes its edges and stops once all chunks' reach
    ``limit`` (the others' are read while they grow: a lower bound)."""
    count = edge_count = 0
    for look in range(lo, hi, _FLAG_LOOK):
        edges[c] = edge_count
        if _reached(edges, limit):
            break
        for v in range(look, min(look + _FLAG_LOOK, hi)):
            flagged = np.int64(flags[v] != 0)
            count += flagged
            edge_count += flagged * outdeg[v]
    counts[c], edges[c] = count, edge_count


@kernel(cache=True, parallel=True, nogil=True)
def _listed_edges(vertices, outdeg, limit, chunks):
    """Per chunk of ``vertices``: their out-edges, every chunk stopping once all chunks'
    so far reach ``limit`` (as :func:`_count_chunk`)."""
    n = len(vertices)
    edges = zeros(chunks, np.int64)
    for c in prange(chunks):
        lo, hi = n * c // chunks, n * (c + 1) // chunks
        edge_count = 0
        for look in range(lo, hi, _FLAG_LOOK):
            edges[c] = edge_count
            if _reached(edges, limit):
                break
            for i in range(look, min(look + _FLAG_LOOK, hi)):
                edge_count += outdeg[vertices[i]]
        edges[c] = edge_count
    return edges


@njit(cache=True, inline="always")
def _reached(edges, limit):
    """Whether the chunks' edges published so far reach ``limit`` (a lower bound, read
    while the others grow)."""
    total = 0
    for e in edges:  # a loop compiles faster than .sum()
        total += e
    return total >= limit and total > 0  # (a limit of 0 still counts)
