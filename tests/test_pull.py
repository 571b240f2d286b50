"""The CPU pull sweep (seraph/backends/cpu/pull.py): pages swept one at a time or as spans,
on the serial twin or the parallel one, reach the same fixpoint, the weak predictor
skips no vertex whose in-edges a span holds across pages, and a BFS sweep on the frontier's
bits alone reads no value they do not offer. And the check of the changes a
sweep hands on, and of a list's out-edges and source blocks (seraph/backends/activity.py:
flagged_below, edges_below, blocks_of)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
from hypothesis import given, settings
from hypothesis import strategies as st

from seraph.backends.activity import blocks_of, edges_below, flagged_below
from seraph.backends.cpu.pull import NO_BITS, offering_floor, sweep_pages
from seraph.interrupts import STOP
from seraph.operators import HOP, infinity
from seraph.predictors import NONE, STRONG, WEAK

INF = infinity(HOP)


def paged(n: int, src: np.ndarray, dst: np.ndarray, page_edges: int):
    """The CSC of the edges (self-loops and duplicates kept) cut into pages of
    ``page_edges``: (indptr, indices, each page's first and last destination)."""
    order = np.argsort(dst, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    m = len(src)
    starts = np.arange(0, m, page_edges)
    first = np.searchsorted(indptr, starts, side="right") - 1
    last = np.searchsorted(indptr, np.minimum(starts + page_edges, m), side="left") - 1
    return indptr, src[order].astype(np.int32), first.astype(np.int64), last.astype(np.int64)


def sweep(twin, indptr, indices, first, last, page_edges, values, pages, predictor=NONE,
          table=None, states=None, threshold=-1, offering=NO_BITS, bits_only=False):
    """One sweep of ``pages`` (listed in one call) over a resident graph; returns the
    counters."""
    m = len(indices)
    table = np.zeros((4, 1), np.uint8) if table is None else table
    states = np.zeros(0, np.uint8) if states is None else states
    counters, _ = twin(pages, pages * page_edges, page_edges, m, first, last, indptr, indices,
                       np.zeros(0, np.int32), values, HOP, False, True, INF, predictor,
                       np.int32(threshold), np.zeros(1, np.uint8), np.float32(0), table, states,
                       np.zeros(len(values), np.uint8), np.zeros(len(values), np.int64), 0, 1,
                       4, offering, bits_only, STOP)
    return counters


def levels(n, src, dst, source):
    a = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    hops = csgraph.shortest_path(a, unweighted=True, indices=source)
    return np.where(np.isinf(hops), INF, hops).astype(np.int32)


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 30))
    m = draw(st.integers(1, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    return n, src, dst, draw(st.integers(1, 12)), int(rng.integers(0, n))


@pytest.mark.parametrize("twin", ["serial", "parallel"])
@settings(max_examples=60, deadline=None)
@given(case=graphs(), together=st.booleans())
def test_sweeps_reach_the_bfs_levels_one_page_at_a_time_or_in_spans(twin, case, together):
    n, src, dst, page_edges, source = case
    indptr, indices, first, last = paged(n, src, dst, page_edges)
    kernel = getattr(sweep_pages, twin)
    values = np.full(n, INF, np.int32)
    values[source] = 0
    pages = np.arange(len(first), dtype=np.int64)
    for _ in range(n + 1):
        counters = [sweep(kernel, indptr, indices, first, last, page_edges, values, p)
                    for p in ([pages] if together else [pages[i:i + 1] for i in pages])]
        if not sum(c[1] for c in counters):
            break
    np.testing.assert_array_equal(values, levels(n, src, dst, source))


@pytest.mark.parametrize("twin", ["serial", "parallel"])
def test_a_span_attempts_a_vertex_split_between_pages_whatever_its_weak_state(twin):
    # Vertex 3's in-edges fill pages 0 and 1 (two a page); vertex 4's lie in page 2 alone.
    src = np.array([0, 1, 2, 0, 1, 2])
    dst = np.array([3, 3, 3, 3, 4, 4])
    indptr, indices, first, last = paged(5, src, dst, 2)
    values = np.array([0, 0, 0, INF, INF], np.int32)
    table = np.zeros((4, 1), np.uint8)  # one state, which never attempts (ATTEMPT row 0)
    states = np.zeros(5, np.uint8)
    counters = sweep(getattr(sweep_pages, twin), indptr, indices, first, last, 2, values,
                     np.arange(3, dtype=np.int64), WEAK, table, states)
    assert values[3] == 1 and values[4] == INF
    assert counters[3] == 1  # vertex 4 skipped, vertex 3 attempted


@pytest.mark.parametrize("twin", ["serial", "parallel"])
@pytest.mark.parametrize("bits_only", [False, True])
def test_a_bfs_sweep_on_the_bits_alone_reads_no_value_they_do_not_offer(twin, bits_only):
    # The chain 0 -> 1 -> 2 at floor 1: vertex 1 takes the floor from 0's bit, and vertex 2
    # level 2 from the value 1 took earlier in the same sweep only where values are read.
    indptr, indices, first, last = paged(3, np.array([0, 1]), np.array([1, 2]), 2)
    values = np.array([0, INF, INF], np.int32)
    bits, beyond = getattr(offering_floor, twin)(values, np.int32(1), INF)
    assert beyond == 0 and bits.tolist() == [1]
    sweep(getattr(sweep_pages, twin), indptr, indices, first, last, 2, values,
          np.arange(len(first), dtype=np.int64), STRONG, threshold=1, offering=bits,
          bits_only=bits_only)
    assert values.tolist() == [0, 1, INF if bits_only else 2]


@pytest.mark.parametrize("twin", ["serial", "parallel"])
def test_spans_large_enough_for_threads_reach_the_bfs_levels(twin, all_threads):
    # Pages past SERIAL_EDGES: the parallel twin pulls each span in chunks on every thread.
    rng = np.random.default_rng(5)
    n, m, page_edges = 3000, 40000, 6000
    src, dst = rng.integers(0, n, m), (rng.pareto(1.5, m) * 50).astype(np.int64) % n
    indptr, indices, first, last = paged(n, src, dst, page_edges)
    values = np.full(n, INF, np.int32)
    values[0] = 0
    pages = np.arange(len(first), dtype=np.int64)
    while sweep(getattr(sweep_pages, twin), indptr, indices, first, last, page_edges, values,
                pages)[1]:
        pass
    np.testing.assert_array_equal(values, levels(n, src, dst, 0))


@settings(max_examples=200, deadline=None)
@given(flags=st.lists(st.integers(0, 1), max_size=60), seed=st.integers(0, 2**32 - 1),
       limit=st.floats(0, 400), chunk=st.sampled_from([3, 1 << 16]), parallel=st.booleans())
def test_flagged_below_counts_the_flagged_vertices_while_their_out_edges_stay_below(
        flags, seed, limit, chunk, parallel):
    from unittest import mock

    from seraph import kernels
    from seraph.backends import activity

    flags = np.array(flags, dtype=np.uint8)
    outdeg = np.random.default_rng(seed).integers(0, 20, len(flags)).astype(np.int64)
    # An empty set is never turned down (as edges_below's empty frontier).
    below = not flags.any() or outdeg[flags == 1].sum() < limit
    # Small chunks, so that a chunk stops on the edges of those before it; either twin.
    with mock.patch.object(activity, "_FLAG_CHUNK", chunk), \
            mock.patch.object(kernels, "SERIAL_WORK", 0 if parallel else 1 << 16):
        assert flagged_below(flags, outdeg, limit) == (int(flags.sum()) if below else -1)


@settings(max_examples=200, deadline=None)
@given(vertices=st.lists(st.integers(0, 59), max_size=80), seed=st.integers(0, 2**32 - 1),
       limit=st.floats(0, 600), chunk=st.sampled_from([3, 1 << 16]), parallel=st.booleans(),
       block_shift=st.integers(0, 6))
def test_a_lists_out_edges_and_source_blocks_are_those_of_its_vertices(
        vertices, seed, limit, chunk, parallel, block_shift):
    from unittest import mock

    from seraph import kernels
    from seraph.backends import activity

    vertices = np.array(vertices, dtype=np.int64)  # repeats count twice, as pushes do
    outdeg = np.random.default_rng(seed).integers(0, 20, 60).astype(np.int64)
    below = not len(vertices) or outdeg[vertices].sum() < limit
    with mock.patch.object(activity, "_FLAG_CHUNK", chunk), \
            mock.patch.object(kernels, "SERIAL_WORK", 0 if parallel else 1 << 16):
        assert edges_below(vertices, outdeg, limit) == below
        np.testing.assert_array_equal(blocks_of(vertices, block_shift, (59 >> block_shift) + 1),
                                      np.unique(vertices >> block_shift))
