"""Bottom-up host rounds (seraph/backends/cpu/bottom_up.py) against their definitions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seraph.backends.cpu.bottom_up import pull_round, unsettled
from seraph.operators import DISTANCE, HOP, LABEL, infinity, value_dtype


def csc(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, edge order) of the in-edges, duplicates and self-loops kept."""
    order = np.argsort(dst, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, src[order].astype(np.int32), order


@st.composite
def rounds(draw):
    """A graph, values (some unreached) and a set of distinct vertices to pull."""
    n = draw(st.integers(1, 40))
    m = draw(st.integers(0, 150))
    seed = draw(st.integers(0, 2**32 - 1))
    mode = draw(st.sampled_from([HOP, LABEL, DISTANCE]))
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    indptr, indices, order = csc(n, src, dst)
    weights = rng.integers(0, 4, m).astype(np.float32)[order] if mode == DISTANCE else None
    inf = infinity(mode)
    values = rng.integers(0, 3 * n, n).astype(value_dtype(mode))
    values[rng.random(n) < 0.3] = inf
    vertices = np.flatnonzero(rng.random(n) < 0.5).astype(np.int64)
    return mode, indptr, indices, weights, values, vertices


def check_pull(mode, indptr, indices, weights, values, vertices) -> None:
    """What a round promises, whatever order its parallel pieces read each other's writes
    in: only the pulled vertices change, never upwards; each new value is at most the pull
    over the old values and is some in-neighbour's final value plus its edge weight."""
    inf = infinity(mode)
    old = values.copy()
    # No threshold (-1): these values stand for no round, so each pull takes every in-edge.
    changed, minimum, edges = pull_round(indptr, indices, weights, values, vertices, mode,
                                         inf, -1)

    def pulled(vals: np.ndarray, v: int):
        best = inf
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            if vals[u] == inf:
                continue
            w = 1 if mode == HOP else 0 if mode == LABEL else weights[e]
            best = min(best, vals.dtype.type(vals[u] + w))
        return best

    assert edges == int(np.diff(indptr)[vertices].sum())
    np.testing.assert_array_equal(changed, vertices[values[vertices] < old[vertices]])
    untouched = np.setdiff1d(np.arange(len(values)), vertices)
    np.testing.assert_array_equal(values[untouched], old[untouched])
    for v in vertices:
        assert values[v] <= old[v]
        assert values[v] <= pulled(old, v)
        assert values[v] == old[v] or values[v] >= pulled(values, v)
    assert minimum == (values[changed].min() if len(changed) else inf)


@settings(max_examples=200, deadline=None)
@given(case=rounds())
def test_a_bottom_up_round_pulls_exactly_the_given_vertices(case):
    check_pull(*case)


def test_a_large_bottom_up_round_splits_its_edges_between_threads(all_threads):
    rng = np.random.default_rng(3)
    n, m = 3000, 60000
    src = rng.integers(0, n, m)
    dst = np.where(rng.random(m) < 0.2, 7, rng.integers(0, n, m))  # vertex 7 is a hub
    indptr, indices, order = csc(n, src, dst)
    weights = rng.integers(0, 9, m).astype(np.float32)[order]
    values = rng.integers(0, 50, n).astype(np.float32)
    values[rng.random(n) < 0.5] = np.inf
    check_pull(DISTANCE, indptr, indices, weights, values, np.arange(0, n, 2, dtype=np.int64))


def check_unsettled(n: int, seed: int, threshold: int, limit: int) -> None:
    rng = np.random.default_rng(seed)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rng.integers(0, 4, n), out=indptr[1:])
    values = rng.integers(0, 10, n).astype(np.int32)
    values[rng.random(n) < 0.2] = infinity(HOP)
    degree = np.diff(indptr)
    expected = np.flatnonzero((values > threshold) & (degree > 0))
    got = unsettled(values, indptr, threshold, limit)
    if degree[expected].sum() >= limit:
        assert got is None
    else:
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, expected)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 300), seed=st.integers(0, 2**32 - 1), threshold=st.integers(-1, 12),
       limit=st.integers(0, 400))
def test_unsettled_lists_vertices_with_in_edges_above_the_threshold(n, seed, threshold,
                                                                    limit):
    check_unsettled(n, seed, threshold, limit)


def test_unsettled_counts_and_lists_in_parallel_chunks(all_threads):
    # 300,000 vertices are five chunks; the first limit is met, the second not.
    for limit in (10**5, 10**6):
        check_unsettled(300_000, 4, 8, limit)


def test_a_bfs_pull_stops_at_the_lowest_level_it_can_get():
    """Under the strong rule's threshold t no in-neighbour of an open vertex offers less
    than t (pull_floor), so a BFS pull stops at the first one that offers t, as a bottom-up
    BFS step stops at its first parent. Here, against the rule, a later in-neighbour would
    offer less: with the threshold it is never read, without one (-1) it is."""
    indptr = np.array([0, 2, 2, 2], dtype=np.int64)
    indices = np.array([1, 2], dtype=np.int32)  # vertex 0's in-edges: from 1, then from 2
    inf = infinity(HOP)
    for threshold, level in ((3, 3), (-1, 1)):
        values = np.array([inf, 2, 0], dtype=value_dtype(HOP))
        pull_round(indptr, indices, None, values, np.array([0]), HOP, inf, threshold,
                   levels=True)
        assert values[0] == level
