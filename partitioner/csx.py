"""Turning one bucket of edges into compressed-sparse rows (numba).

A bucket holds edges whose *key* vertex (the destination for CSC, the source for CSR)
lies in a contiguous range. A counting sort by key gives the row structure directly; each
row is then sorted by (neighbour, weight) so that duplicates are adjacent and the first of
a run carries the minimum weight, which is the one kept.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# Rows at most this long are insertion-sorted; longer ones use numba's np.sort.
_SMALL_ROW = 32


@njit(cache=True)
def _counting_sort(keys, others, wbits, num_keys):
    """Groups edges by key; returns (row offsets, others, wbits) in key order."""
    counts = np.zeros(num_keys + 1, dtype=np.int64)
    for k in keys:
        counts[k + 1] += 1
    offsets = np.cumsum(counts)
    fill = offsets[:-1].copy()
    out_o = np.empty_like(others)
    out_w = np.empty_like(wbits)
    for i in range(len(keys)):
        pos = fill[keys[i]]
        out_o[pos] = others[i]
        out_w[pos] = wbits[i]
        fill[keys[i]] = pos + 1
    return offsets, out_o, out_w


@njit(cache=True, inline="always")
def _insertion_sort(a, lo, hi):
    for i in range(lo + 1, hi):
        x = a[i]
        j = i - 1
        while j >= lo and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True)
def _sort_and_dedup_row(pairs, lo, hi, me, keep_duplicates, keep_self_loops):
    """Sorts one row in place and compacts it; returns (kept, self-loops, duplicates)."""
    if hi - lo <= _SMALL_ROW:
        _insertion_sort(pairs, lo, hi)
    else:
        pairs[lo:hi] = np.sort(pairs[lo:hi])
    out = lo
    loops = 0
    dups = 0
    for i in range(lo, hi):
        nb = pairs[i] >> 32
        if nb == me and not keep_self_loops:
            loops += 1
        elif not keep_duplicates and out > lo and (pairs[out - 1] >> 32) == nb:
            dups += 1
        else:
            pairs[out] = pairs[i]
            out += 1
    return out - lo, loops, dups


@njit(cache=True, parallel=True)
def _sort_and_dedup_rows(offsets, pairs, first_key, keep_duplicates, keep_self_loops):
    """Sorts each row of ``pairs`` (neighbour << 32 | weight bits) and compacts it in place.

    Returns the kept length of every row and the removed self-loops and duplicates per
    row. Non-negative float32 weights order like their bit patterns, so sorting the packed
    value sorts by neighbour, then weight: the first of a duplicate run has the minimum.
    """
    num_rows = len(offsets) - 1
    kept = np.zeros(num_rows, dtype=np.int64)
    loops = np.zeros(num_rows, dtype=np.int64)
    dups = np.zeros(num_rows, dtype=np.int64)
    for r in prange(num_rows):
        kept[r], loops[r], dups[r] = _sort_and_dedup_row(
            pairs, offsets[r], offsets[r + 1], first_key + r, keep_duplicates, keep_self_loops)
    return kept, loops.sum(), dups.sum()


@njit(cache=True, parallel=True)
def _gather_rows(offsets, kept, pairs, out_idx, out_wbits):
    starts = np.zeros(len(kept) + 1, dtype=np.int64)
    for r in range(len(kept)):
        starts[r + 1] = starts[r] + kept[r]
    for r in prange(len(kept)):
        src = offsets[r]
        dst = starts[r]
        for i in range(kept[r]):
            p = pairs[src + i]
            out_idx[dst + i] = np.int32(p >> 32)
            out_wbits[dst + i] = np.uint32(p & 0xFFFFFFFF)
    return starts[-1]


@njit(cache=True)
def _pack(others, wbits):
    out = np.empty(len(others), dtype=np.int64)
    for i in range(len(others)):
        out[i] = (np.int64(others[i]) << 32) | np.int64(wbits[i])
    return out


def build_rows(keys: np.ndarray, others: np.ndarray, weights: np.ndarray | None,
               first_key: int, num_keys: int, *, keep_duplicates: bool = False,
               keep_self_loops: bool = False):
    """Builds the rows of keys ``first_key .. first_key+num_keys-1`` from one bucket.

    Args:
        keys: int32/int64 key vertex of each edge, all within the range.
        others: int32 neighbour of each edge.
        weights: float32 weights (non-negative) or None.

    Returns:
        (degrees int64[num_keys], neighbours int32[k], weights float32[k] or None,
        self_loops_removed, duplicates_removed)
    """
    local = (keys - first_key).astype(np.int64, copy=False)
    wbits = (np.zeros(len(others), np.uint32) if weights is None
             else np.ascontiguousarray(weights, dtype=np.float32).view(np.uint32))
    offsets, o_sorted, w_sorted = _counting_sort(local, others.astype(np.int32, copy=False),
                                                 wbits, num_keys)
    pairs = _pack(o_sorted, w_sorted)
    del o_sorted, w_sorted
    kept, loops, dups = _sort_and_dedup_rows(offsets, pairs, first_key, keep_duplicates,
                                             keep_self_loops)
    out_idx = np.empty(int(kept.sum()), dtype=np.int32)
    out_w = np.empty(len(out_idx), dtype=np.uint32)
    _gather_rows(offsets, kept, pairs, out_idx, out_w)
    return kept, out_idx, (None if weights is None else out_w.view(np.float32)), int(loops), \
        int(dups)
