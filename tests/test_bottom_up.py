"""Bottom-up host rounds (seraph/backends/cpu/bottom_up.py) against their definitions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seraph.backends.cpu import bottom_up
from seraph.backends.cpu.bottom_up import SAMPLES, pull_unsettled
from seraph.backends.cpu.pull import BLOCK
from seraph.operators import DISTANCE, HOP, LABEL, infinity, value_dtype


def csc(n: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, edge order) of the in-edges, duplicates and self-loops kept."""
    order = np.argsort(dst, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, src[order].astype(np.int32), order


@st.composite
def rounds(draw):
    """A graph, values (some unreached) and a threshold (-1: none, every vertex open)."""
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
    threshold = draw(st.sampled_from([-1, n, 2 * n]))
    return mode, indptr, indices, weights, values, threshold


def pulled(mode, indptr, indices, weights, vals: np.ndarray, v: int):
    """v's pull over all of its in-edges from ``vals``."""
    inf = infinity(mode)
    best = inf
    for e in range(indptr[v], indptr[v + 1]):
        u = indices[e]
        if vals[u] == inf:
            continue
        w = 1 if mode == HOP else 0 if mode == LABEL else weights[e]
        best = min(best, vals.dtype.type(vals[u] + w))
    return best


def check_pull(mode, indptr, indices, weights, values, threshold, limit=np.inf) -> None:
    """What a round promises, whatever order its threads read each other's writes in: only
    the open vertices (above the threshold, with in-edges) change, never upwards; each new
    value is at most the pull over the old values and is some in-neighbour's final value
    plus its edge weight. It runs, whole, where their in-edges are fewer than ``limit``;
    otherwise it stops (here where the sample, every vertex of a small graph, sees it)."""
    inf = infinity(mode)
    old = values.copy()
    degree = np.diff(indptr)
    open_ = np.flatnonzero((old > threshold) & (degree > 0))
    res = pull_unsettled(indptr, indices, weights, values, threshold, limit, mode, inf)
    if degree[open_].sum() >= limit:
        assert len(values) > SAMPLES or res is None
        if res is None:
            np.testing.assert_array_equal(values, old)
            return
        assert not res.complete
    else:
        assert res.complete
        assert (res.attempted, res.edges) == (len(open_), int(degree[open_].sum()))
    np.testing.assert_array_equal(res.lowered, np.flatnonzero(values < old))
    assert np.isin(res.lowered, open_).all()
    for v in open_:
        assert values[v] <= old[v]
        if res.complete:
            assert values[v] <= pulled(mode, indptr, indices, weights, old, v)
        assert values[v] == old[v] or values[v] >= pulled(mode, indptr, indices, weights,
                                                           values, v)
    assert res.minimum == (values[res.lowered].min() if len(res.lowered) else inf)


@settings(max_examples=200, deadline=None)
@given(case=rounds(), limit=st.sampled_from([0, 5, 50, np.inf]))
def test_a_bottom_up_round_pulls_exactly_the_open_vertices(case, limit):
    check_pull(*case, limit)


def test_a_large_bottom_up_round_shares_its_blocks_between_threads(all_threads):
    rng = np.random.default_rng(3)
    n, m = 30000, 600000
    src = rng.integers(0, n, m)
    dst = np.where(rng.random(m) < 0.2, 7, rng.integers(0, n, m))  # vertex 7 is a hub
    indptr, indices, order = csc(n, src, dst)
    weights = rng.integers(0, 9, m).astype(np.float32)[order]
    values = rng.integers(0, 50, n).astype(np.float32)
    values[rng.random(n) < 0.5] = np.inf
    check_pull(DISTANCE, indptr, indices, weights, values, 40)


def test_a_round_that_meets_its_limit_stops_between_blocks(monkeypatch):
    """Where the open vertices' in-edges reach the limit partway, the blocks pulled before
    stand (every open vertex of them pulled over all of its in-edges) and no later block
    is; the round is not complete. The sample, one vertex here, does not see it coming."""
    monkeypatch.setattr(bottom_up, "SAMPLES", 1)
    n = 5 * BLOCK
    indptr = np.arange(n + 1, dtype=np.int64)  # vertex v's one in-edge comes from v - 1
    indices = (np.arange(n) - 1).clip(0).astype(np.int32)
    inf = infinity(HOP)
    values = np.full(n, inf, dtype=value_dtype(HOP))
    values[::2] = 0
    values[0] = 0  # the sample's vertex is settled
    # A small graph's round runs on this thread, its blocks in order, each with BLOCK / 2
    # open vertices: the third meets the limit.
    got = pull_unsettled(indptr, indices, None, values, 0, 2.5 * BLOCK / 2, HOP, inf)
    assert got is not None and not got.complete
    assert got.attempted == BLOCK and got.edges == BLOCK
    np.testing.assert_array_equal(got.lowered, np.arange(1, 2 * BLOCK, 2))
    assert (values[1:2 * BLOCK:2] == 1).all() and (values[2 * BLOCK + 1::2] == inf).all()


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
        pull_unsettled(indptr, indices, None, values, threshold, np.inf, HOP, inf,
                       levels=True)
        assert values[0] == level


def test_threads_that_meet_the_limit_leave_whole_blocks(all_threads, monkeypatch):
    """On every thread, blocks taken in any order: each block is pulled whole or not at
    all, and the round that met its limit is not complete."""
    monkeypatch.setattr(bottom_up, "SAMPLES", 1)
    n = 16 * BLOCK
    indptr = np.arange(n + 1, dtype=np.int64)
    indices = (np.arange(n) - 1).clip(0).astype(np.int32)
    inf = infinity(HOP)
    values = np.full(n, inf, dtype=value_dtype(HOP))
    values[::2] = 0
    got = pull_unsettled(indptr, indices, None, values, 0, 5 * BLOCK, HOP, inf)
    assert got is not None and not got.complete
    per_block = (values[1::2] == 1).reshape(16, BLOCK // 2)
    assert (per_block.all(axis=1) | ~per_block.any(axis=1)).all()
    assert got.attempted == got.edges == len(got.lowered) == per_block.sum()
