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
from seraph.kernels import kernel


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


@njit(cache=True)
def pages_active(pages, bits, block_epoch, processed):
    """For each of ``pages``, whether a source block it reads changed at or after the epoch
    in which it was last swept.

    The scheduler asks before every window step, so the cost must not grow with blocks x
    pages: the pages of a window were last swept in a few distinct epochs, and for each
    such epoch one bit mask of the blocks changed since then serves every page, which
    then needs one AND per 64 blocks."""
    active = np.zeros(len(pages), dtype=np.bool_)
    if len(pages) == 0:
        return active
    since = processed[pages]
    epochs = np.unique(since)
    # dirty[k]: the blocks changed at or after epochs[k]. A block goes into the mask of the
    # newest epoch it is dirty for; the masks of older epochs then take in the newer ones.
    dirty = np.zeros((len(epochs), bits.shape[1]), dtype=np.uint64)
    newest = np.searchsorted(epochs, block_epoch, side="right") - 1
    for b in range(len(block_epoch)):
        if newest[b] >= 0:
            dirty[newest[b], b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    for k in range(len(epochs) - 2, -1, -1):
        dirty[k] |= dirty[k + 1]
    for i in range(len(pages)):
        row, mask = bits[pages[i]], dirty[np.searchsorted(epochs, since[i])]
        for w in range(len(row)):
            if row[w] & mask[w]:
                active[i] = True
                break
    return active


@njit(cache=True)
def blocks_of(vertices, block_shift, num_blocks):
    """The distinct source blocks of ``vertices``, ascending (a mask, not a sort: O(n))."""
    hit = np.zeros(num_blocks, dtype=np.bool_)
    for v in vertices:
        hit[v >> block_shift] = True
    return np.flatnonzero(hit)


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
    """Whether ``vertices`` have fewer than ``limit`` out-edges in all."""
    return _edges_below(vertices, outdeg, limit)


@njit(cache=True)
def _edges_below(vertices, outdeg, limit):
    edges = 0
    for v in vertices:
        edges += outdeg[v]
        if edges >= limit:
            return False
    return True
