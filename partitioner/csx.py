"""Compressed-sparse rows from edge lists without comparison sorts (numba kernels).

An edge is ``(key, other, wbits)``: its row (the destination for CSC, the source for CSR),
its neighbour, and the bit pattern of its float32 weight. Non-negative float32 weights
order like their bit patterns, so a minimum over bits is the minimum weight.

A stable counting sort by key (:func:`sort_by_key`) turns an edge list into rows. Rows come
out sorted by neighbour when the input was already in neighbour order, which is how the
writer sorts every row with counting sorts alone (an LSD radix sort whose digits are vertex
ids): order the edges by source, then a stable sort by destination gives CSC rows sorted by
source, and a stable sort of that by source gives CSR rows sorted by destination.

A weighted graph's CSC rows are then ordered by weight (:func:`sort_rows_by_weight`), the
lightest in-edge first: a pull can stop at the first in-edge whose weight alone reaches
the vertex's value (docs/design.md, "Rows ordered by weight").

Unweighted edges pass an empty ``wbits`` array: numba compiles one kernel for both cases
and the branch on ``len(wbits)`` costs nothing next to the memory traffic.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from seraph.kernels import kernel, serial

#: A counting sort first splits the keys into at most this many parts of consecutive keys,
#: then sorts each part on its own: a part's counters and output stay in cache, where one
#: pass over all keys at once would miss the cache on nearly every edge.
_PARTS = 256
#: Edges per block of the parallel compaction.
_BLOCK = 1 << 16


def _parallel(num_edges: int) -> bool:
    """Whether a kernel over ``num_edges`` edges runs on every thread: a small input runs
    on the calling thread (its serial twin, :mod:`seraph.kernels`), where waking numba's
    thread pool costs more than the work, and milliseconds when other processes keep the
    cores busy."""
    return not serial(num_edges, num_edges)


@kernel(cache=True, parallel=True)
def _partition(keys, others, wbits, first_key, shift, num_parts, num_threads):
    """Stable partition of edges by part ``(key - first_key) >> shift``; returns the part
    offsets and the edges (keys relative to ``first_key``) in part order."""
    num_edges = len(keys)
    weighted = len(wbits) > 0
    step = -(-num_edges // num_threads)
    # Each thread counts its own contiguous slice of the edges; within a part, the slices
    # follow each other in order, which keeps the partition stable.
    counts = np.zeros((num_threads, num_parts), dtype=np.int64)
    for t in prange(num_threads):
        mine = counts[t]
        for i in range(t * step, min(num_edges, (t + 1) * step)):
            mine[(keys[i] - first_key) >> shift] += 1
    starts = np.empty(num_parts + 1, dtype=np.int64)
    total = 0
    for p in range(num_parts):
        starts[p] = total
        for t in range(num_threads):
            c = counts[t, p]
            counts[t, p] = total
            total += c
    starts[num_parts] = total
    out_keys = np.empty(num_edges, dtype=np.int32)
    out_others = np.empty(num_edges, dtype=np.int32)
    out_wbits = np.empty(len(wbits), dtype=np.uint32)
    for t in prange(num_threads):
        fill = counts[t]
        for i in range(t * step, min(num_edges, (t + 1) * step)):
            k = keys[i] - first_key
            p = k >> shift
            pos = fill[p]
            fill[p] = pos + 1
            out_keys[pos] = k
            out_others[pos] = others[i]
            if weighted:
                out_wbits[pos] = wbits[i]
    return starts, out_keys, out_others, out_wbits


def partition(keys: np.ndarray, others: np.ndarray, wbits: np.ndarray, first_key: int,
              shift: int, num_parts: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stable partition of edges by ``(key - first_key) >> shift`` into ``num_parts`` parts.

    Returns the part offsets (part p is ``starts[p]:starts[p + 1]``) and fresh int32 keys
    (minus ``first_key``), int32 neighbours and uint32 weight bits in part order.
    """
    parallel = _parallel(len(keys))
    threads = max(1, min(numba.get_num_threads(), len(keys) // num_parts)) if parallel else 1
    return _partition.twin(parallel)(keys, others, wbits, first_key, shift, num_parts,
                                      threads)


@kernel(cache=True, parallel=True)
def _sort_parts(starts, keys, others, wbits, shift, num_keys, out_others, out_wbits):
    """Counting sort of each part by key into ``out_*``; returns the row offsets."""
    weighted = len(wbits) > 0
    indptr = np.empty(num_keys + 1, dtype=np.int64)
    indptr[num_keys] = len(keys)
    mask = (1 << shift) - 1
    for p in prange(len(starts) - 1):
        lo = p << shift
        span = min(mask + 1, num_keys - lo)
        fill = np.zeros(span + 1, dtype=np.int64)
        for i in range(starts[p], starts[p + 1]):
            fill[(keys[i] & mask) + 1] += 1
        fill[0] = starts[p]
        for k in range(span):
            fill[k + 1] += fill[k]
            indptr[lo + k] = fill[k]
        for i in range(starts[p], starts[p + 1]):
            k = keys[i] & mask
            pos = fill[k]
            fill[k] = pos + 1
            out_others[pos] = others[i]
            if weighted:
                out_wbits[pos] = wbits[i]
    return indptr


def sort_by_key(keys: np.ndarray, others: np.ndarray, wbits: np.ndarray, first_key: int,
                num_keys: int) -> np.ndarray:
    """Stable counting sort of edges by key, in place: afterwards ``others`` (int32) and
    ``wbits`` (uint32, or empty when unweighted) hold the rows of keys ``first_key ..
    first_key + num_keys - 1`` in order. ``keys`` is left as it was.

    Returns the int64 row offsets, starting at 0.
    """
    shift = max(0, int(num_keys - 1).bit_length() - _PARTS.bit_length() + 1)
    num_parts = max(1, -(-num_keys // (1 << shift)))
    starts, *parted = partition(keys, others, wbits, first_key, shift, num_parts)
    return _sort_parts.twin(_parallel(len(keys)))(starts, *parted, shift, num_keys, others,
                                                wbits)


@kernel(cache=True, parallel=True)
def _expand_rows(indptr, first_key, out):
    for r in prange(len(indptr) - 1):
        out[indptr[r]: indptr[r + 1]] = first_key + r


def expand_rows(indptr: np.ndarray, first_key: int, out: np.ndarray) -> None:
    """Writes the int32 key of every edge of the rows ``indptr`` into ``out`` (undoes a
    counting sort)."""
    _expand_rows.twin(_parallel(int(indptr[-1])))(indptr, first_key, out)


@njit(cache=True)
def dedup_rows(indptr, others, wbits):
    """Removes repeated neighbours from rows sorted by neighbour, keeping the minimum weight.

    Compacts ``others`` and ``wbits`` in place and rewrites ``indptr``; returns the number
    of edges kept.
    """
    weighted = len(wbits) > 0
    out = 0
    for r in range(len(indptr) - 1):
        start, end = indptr[r], indptr[r + 1]
        indptr[r] = out  # indptr[r + 1] is still the old end, read on the next row
        row = out
        for i in range(start, end):
            if out > row and others[out - 1] == others[i]:
                if weighted and wbits[i] < wbits[out - 1]:
                    wbits[out - 1] = wbits[i]
            else:
                others[out] = others[i]
                if weighted:
                    wbits[out] = wbits[i]
                out += 1
    indptr[-1] = out
    return out


@kernel(cache=True, parallel=True)
def _compact_edges(src, dst, wbits, num_vertices, keep_self_loops, out_src, out_dst,
                   out_wbits):
    weighted = len(wbits) > 0
    num_blocks = -(-len(src) // _BLOCK)
    kept = np.zeros(num_blocks, dtype=np.int64)
    bad = np.full(num_blocks, -1, dtype=np.int64)
    # Each block is compacted to its own start in parallel...
    for b in prange(num_blocks):
        out = lo = b * _BLOCK
        for i in range(lo, min(len(src), lo + _BLOCK)):
            u, v = src[i], dst[i]
            if u < 0 or v < 0 or u >= num_vertices or v >= num_vertices:
                bad[b] = i
                break
            if u != v or keep_self_loops:
                out_src[out] = u
                out_dst[out] = v
                if weighted:
                    out_wbits[out] = wbits[i]
                out += 1
        kept[b] = out - lo
    # ...then the blocks move down over the gaps that dropped self-loops left.
    total = 0
    for b in range(num_blocks):
        if bad[b] >= 0:
            return total, bad[b]
        lo = b * _BLOCK
        if total < lo:
            for i in range(kept[b]):
                out_src[total + i] = out_src[lo + i]
                out_dst[total + i] = out_dst[lo + i]
                if weighted:
                    out_wbits[total + i] = out_wbits[lo + i]
        total += kept[b]
    return total, -1


def compact_edges(src: np.ndarray, dst: np.ndarray, wbits: np.ndarray, num_vertices: int,
                  keep_self_loops: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Edges as fresh int32 ``(src, dst)`` and uint32 ``wbits``, without self-loops unless
    they are kept, and the position of the first edge with an id outside
    ``0..num_vertices-1`` (-1 when there is none; otherwise the edges are incomplete)."""
    out = (np.empty(len(src), np.int32), np.empty(len(src), np.int32),
           np.empty(len(wbits), np.uint32))
    kept, bad = _compact_edges.twin(_parallel(len(src)))(src, dst, wbits, num_vertices,
                                                      keep_self_loops, *out)
    return out[0][:kept], out[1][:kept], out[2][:kept], bad


def sort_rows_by_weight(indptr: np.ndarray, others: np.ndarray, wbits: np.ndarray) -> None:
    """Orders every row by weight in place, stably (rows sorted by neighbour come out
    sorted by weight, then neighbour)."""
    _sort_rows_by_weight.twin(_parallel(len(others)))(indptr, others, wbits)


@kernel(cache=True, parallel=True)
def _sort_rows_by_weight(indptr, others, wbits):
    for r in prange(len(indptr) - 1):
        lo, hi = indptr[r], indptr[r + 1]
        if hi - lo < 2:
            continue
        by = np.argsort(wbits[lo:hi], kind="mergesort")
        row_others, row_wbits = others[lo:hi].copy(), wbits[lo:hi].copy()
        for i in range(hi - lo):  # a loop: a slice copy compiles a shape check's message
            others[lo + i], wbits[lo + i] = row_others[by[i]], row_wbits[by[i]]


def smallest_neighbours(indptr: np.ndarray, others: np.ndarray, count: int,
                        out: np.ndarray) -> None:
    """Each row's ``count`` smallest neighbours, ascending, into ``out`` (int32, ``count``
    entries a row, -1 past a shorter row's end), whatever the rows' order: Afforest's
    sample, which rows ordered by weight do not begin with (docs/store.md, ``csc/sample``)."""
    if count < 1:
        return  # nothing to keep (the kernel looks at a row's last place)
    _smallest_neighbours.twin(_parallel(len(others)))(indptr, others, count, out)


@kernel(cache=True, parallel=True)
def _smallest_neighbours(indptr, others, count, out):
    for r in prange(len(indptr) - 1):
        row = out[r * count:(r + 1) * count]
        row[:] = -1
        held = 0
        for e in range(indptr[r], indptr[r + 1]):
            x = others[e]
            if held == count and x >= row[count - 1]:
                continue
            # x takes the last free place, or the largest's, moving larger ones up past it
            j = min(held, count - 1)
            while j > 0 and row[j - 1] > x:
                row[j] = row[j - 1]
                j -= 1
            row[j] = x
            held = min(held + 1, count)
