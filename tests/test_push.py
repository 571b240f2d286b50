"""The CPU push engine and its atomics against scipy.sparse.csgraph."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit, prange
from scipy.sparse import csgraph

from seraph import kernels
from seraph.backends.caches import max_out_degree
from seraph.backends.cpu import push, region
from seraph.backends.cpu.atomics import atomic_load, atomic_min, atomic_xchg
from seraph.backends.cpu.bins import UNTOUCHED
from seraph.backends.cpu.push import (
    _PARALLEL_EDGES,
    Scratch,
    _frontier_edges,
    default_delta,
    edge_ends,
    ids_between,
    push_round,
    push_until,
    ring_bits_for,
    weight_sample,
)
from seraph.operators import DISTANCE, HOP, INT_INF, LABEL, infinity, value_dtype

# --- atomics under contention ---------------------------------------------------------------


@njit(parallel=True, cache=True)
def _hammer_min(cells, vals):
    """Every thread atomic-mins vals[i] into cell i % len(cells); returns each old value."""
    olds = np.empty_like(vals)
    for i in prange(len(vals)):
        olds[i] = atomic_min(cells, i % len(cells), vals[i])
    return olds


@njit(parallel=True, cache=True)
def _hammer_test_and_set(flags, ids):
    won = np.zeros(len(ids), dtype=np.uint8)
    for i in prange(len(ids)):
        won[i] = atomic_xchg(flags, ids[i], 1) == 0
    return won


@njit(cache=True)
def _load(arr, i):
    return atomic_load(arr, i)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_atomic_min_is_linearizable_under_contention(dtype):
    rng = np.random.default_rng(1)
    vals = rng.permutation(400_000).astype(dtype)  # distinct, so successes are strict
    start = dtype(10**6)
    cells = np.full(3, start, dtype=dtype)
    olds = _hammer_min(cells, vals)
    for c in range(3):
        mine, old = vals[c::3], olds[c::3]
        assert cells[c] == mine.min()
        assert _load(cells, c) == mine.min()
        # The successful writes of a cell form one descending chain: each saw the previous.
        won = np.argsort(-mine[old > mine])
        chain_vals, chain_olds = mine[old > mine][won], old[old > mine][won]
        assert chain_olds[0] == start
        np.testing.assert_array_equal(chain_olds[1:], chain_vals[:-1])
        # A failed attempt saw a value at most its own.
        assert (old[old <= mine] <= mine[old <= mine]).all()


def test_atomic_xchg_has_exactly_one_winner_per_flag():
    ids = np.random.default_rng(2).integers(0, 50, 300_000)
    flags = np.zeros(50, dtype=np.uint8)
    won = _hammer_test_and_set(flags, ids)
    assert (flags == 1).all()
    np.testing.assert_array_equal(np.bincount(ids[won == 1], minlength=50), np.ones(50))


# --- graphs and oracles ---------------------------------------------------------------------


def csr(n, src, dst, weights=None):
    """Our CSR (int64 indptr, int32 indices) keeping self loops and duplicate edges."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    order = np.argsort(src, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    w = None if weights is None else np.asarray(weights, np.float32)[order]
    return indptr, dst[order].astype(np.int32), w


def scipy_matrix(n, src, dst, weights):
    """A scipy CSR with the lightest of each duplicate edge; explicit zeros stay edges."""
    src, dst, w = np.asarray(src), np.asarray(dst), np.asarray(weights, np.float64)
    order = np.lexsort((w, dst, src))
    src, dst, w = src[order], dst[order], w[order]
    first = np.ones(len(src), dtype=bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    src, dst, w = src[first], dst[first], w[first]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return sp.csr_matrix((w, dst, indptr), shape=(n, n))


def component_min_labels(matrix):
    """Each vertex's smallest vertex id in its (weakly) connected component."""
    _, component = csgraph.connected_components(matrix, directed=False)
    smallest = np.full(component.max() + 1, matrix.shape[0], dtype=np.int32)
    np.minimum.at(smallest, component, np.arange(matrix.shape[0], dtype=np.int32))
    return smallest[component]


def engine_values(reference, op):
    """scipy's float64 answer (inf = unreachable) in the engine's dtype and INF."""
    inf = infinity(op)
    return np.where(np.isinf(reference), inf, reference).astype(value_dtype(op))


def initial_values(n, sources, op):
    values = np.full(n, infinity(op), dtype=value_dtype(op))
    values[sources] = 0
    return values


def run(graph, values, frontier, op, max_frontier_edges=2**62):
    indptr, indices, weights = graph
    return push_until(indptr, indices, weights, values, np.asarray(frontier), op,
                      max_frontier_edges)


@st.composite
def graphs(draw, max_n=40):
    """Small multigraphs: random edges (self loops, duplicates), a chain and a star, with
    quarter-integer weights (exact in float32, so dijkstra's float64 sums agree) including 0.
    Vertices past the drawn edges stay isolated."""
    n = draw(st.integers(1, max_n))
    vertex = st.integers(0, n - 1)
    pairs = draw(st.lists(st.tuples(vertex, vertex), max_size=4 * n))
    if draw(st.booleans()):
        chain = draw(st.permutations(range(n)))
        pairs += list(zip(chain[:-1], chain[1:], strict=True))
    if draw(st.booleans()):
        hub = draw(vertex)
        pairs += [(hub, v) for v in range(n)]
    if draw(st.booleans()) and pairs:
        pairs += draw(st.lists(st.sampled_from(pairs), max_size=n))  # more duplicates
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    weights = np.array(draw(st.lists(st.integers(0, 40), min_size=len(pairs),
                                     max_size=len(pairs))), dtype=np.float32) / 4
    return n, src, dst, weights


# --- exactness against scipy ----------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(graphs(), st.data())
def test_bfs_levels_match_scipy(g, data):
    n, src, dst, _ = g
    source = data.draw(st.integers(0, n - 1))
    values = initial_values(n, source, HOP)
    result = run(csr(n, src, dst), values, [source], HOP)
    levels = csgraph.shortest_path(scipy_matrix(n, src, dst, np.ones(len(src))),
                                   indices=source, unweighted=True)
    np.testing.assert_array_equal(values, engine_values(levels, HOP))
    assert result.converged
    # Unique, in no particular order.
    np.testing.assert_array_equal(np.sort(result.changed), np.flatnonzero(
        values != initial_values(n, source, HOP)))
    assert len(np.unique(result.changed)) == len(result.changed)


@settings(max_examples=150, deadline=None)
@given(graphs(), st.data())
def test_levels_from_a_frontier_of_several_levels(g, data):
    """A frontier whose vertices hold different levels (a hand-over from dense rounds) is
    pushed with claim flags: every vertex ends at its smallest level over the frontier's
    vertices plus their hops, and each lowered vertex is reported once."""
    n, src, dst, _ = g
    frontier = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))))
    start = np.array(data.draw(st.lists(st.integers(0, 5), min_size=len(frontier),
                                        max_size=len(frontier))), dtype=np.int32)
    values = initial_values(n, [], HOP)
    values[frontier] = start
    before = values.copy()
    result = run(csr(n, src, dst), values, frontier, HOP)
    hops = csgraph.shortest_path(scipy_matrix(n, src, dst, np.ones(len(src))),
                                 indices=frontier, unweighted=True)
    want = np.minimum(before, engine_values((hops + start[:, None]).min(axis=0), HOP))
    np.testing.assert_array_equal(values, want)
    np.testing.assert_array_equal(np.sort(result.changed), np.flatnonzero(values != before))
    assert len(np.unique(result.changed)) == len(result.changed)


@settings(max_examples=150, deadline=None)
@given(graphs(), st.data())
def test_sssp_distances_match_dijkstra(g, data):
    n, src, dst, w = g
    source = data.draw(st.integers(0, n - 1))
    values = initial_values(n, source, DISTANCE)
    assert run(csr(n, src, dst, w), values, [source], DISTANCE).converged
    dist = csgraph.dijkstra(scipy_matrix(n, src, dst, w), indices=source)
    np.testing.assert_array_equal(values, engine_values(dist, DISTANCE))


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_cc_labels_match_connected_components(g):
    n, src, dst, _ = g
    both_src, both_dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    labels = np.arange(n, dtype=np.int32)
    assert run(csr(n, both_src, both_dst), labels, np.arange(n), LABEL).converged
    np.testing.assert_array_equal(labels, component_min_labels(
        scipy_matrix(n, both_src, both_dst, np.ones(len(both_src)))))


# --- one round, parallel determinism, hand-back ---------------------------------------------


def random_graph(n=20_000, m=200_000, seed=3):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    return n, src, dst, rng.random(m, dtype=np.float32)


@pytest.mark.parametrize("mode", [HOP, LABEL, DISTANCE])
def test_rounds_split_across_threads_match_scipy(mode, all_threads):
    n, src, dst, _ = random_graph(m=400_000)
    if mode == LABEL:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    w = np.random.default_rng(4).integers(0, 40, len(src)).astype(np.float32) / 4
    matrix = scipy_matrix(n, src, dst, w)
    if mode == LABEL:
        values, frontier, expected = np.arange(n, dtype=np.int32), np.arange(n), \
            component_min_labels(matrix)
    else:
        values, frontier = initial_values(n, 0, mode), [0]
        expected = engine_values(csgraph.dijkstra(matrix, indices=0) if mode == DISTANCE else
                                 csgraph.shortest_path(matrix, indices=0, unweighted=True), mode)
    if mode == HOP:  # a level with more out-edges than one thread pushes alone
        reached = expected != infinity(HOP)
        level_edges = np.bincount(expected[reached], np.bincount(src, minlength=n)[reached])
        assert level_edges.max() >= _PARALLEL_EDGES
    result = run(csr(n, src, dst, w), values, frontier, mode)
    assert result.edges_pushed > 8 * 4096  # the busy rounds are split into several pieces
    np.testing.assert_array_equal(values, expected)


def test_push_round_returns_sorted_claims_and_clears_flags():
    n, src, dst, w = random_graph()
    indptr, indices, weights = csr(n, src, dst, w)
    values = initial_values(n, 0, DISTANCE)
    in_next = np.zeros(n, dtype=np.uint8)
    frontier = np.array([0], dtype=np.int32)
    for _ in range(4):  # grows past one piece of edges, so several threads push
        before = values.copy()
        frontier, pushed = push_round(indptr, indices, weights, values, frontier, in_next,
                                      DISTANCE)
        assert not in_next.any()
        np.testing.assert_array_equal(frontier, np.flatnonzero(values != before))
        assert frontier.dtype == np.int64
    assert pushed > 4096


def test_a_hub_split_across_threads_matches_scipy(all_threads):
    n = 30_000
    src = np.zeros(n, dtype=np.int64)  # vertex 0 -> everyone, then a long path back
    dst = np.arange(n)
    w = np.full(n, 7.0, dtype=np.float32)
    path_src, path_dst = np.arange(1, n - 1), np.arange(2, n)
    src, dst = np.concatenate([src, path_src]), np.concatenate([dst, path_dst])
    w = np.concatenate([w, np.full(n - 2, 0.25, dtype=np.float32)])
    values = initial_values(n, 0, DISTANCE)
    run(csr(n, src, dst, w), values, [0], DISTANCE)
    np.testing.assert_array_equal(values, engine_values(
        csgraph.dijkstra(scipy_matrix(n, src, dst, w), indices=0), DISTANCE))


def test_fifty_parallel_runs_agree_with_each_other_and_one_thread(all_threads):
    n, src, dst, w = random_graph()
    graph = csr(n, src, dst, w)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        expected = initial_values(n, 0, DISTANCE)
        run(graph, expected, [0], DISTANCE)
    finally:
        numba.set_num_threads(threads)
    for _ in range(50):
        values = initial_values(n, 0, DISTANCE)
        run(graph, values, [0], DISTANCE)
        np.testing.assert_array_equal(values, expected)
    # float32 sums differ from dijkstra's float64 ones only by rounding
    dist = csgraph.dijkstra(scipy_matrix(n, src, dst, w), indices=0)
    np.testing.assert_allclose(expected, dist.astype(np.float32), rtol=1e-5)


def test_hand_back_stops_early_and_resuming_gives_the_same_answer():
    n, src, dst, w = random_graph()
    graph = csr(n, src, dst, w)
    outdeg = np.diff(graph[0])
    one_shot = initial_values(n, 0, DISTANCE)
    run(graph, one_shot, [0], DISTANCE)

    values = initial_values(n, 0, DISTANCE)
    frontier, calls, changed = np.array([0]), 0, []
    while frontier.size:
        result = run(graph, values, frontier, DISTANCE, max_frontier_edges=500)
        if not result.converged:
            assert outdeg[result.frontier].sum() >= 500
        frontier, calls = result.frontier, calls + 1
        changed.append(result.changed)
    assert calls > 2
    np.testing.assert_array_equal(values, one_shot)
    np.testing.assert_array_equal(np.unique(np.concatenate(changed)),
                                  np.flatnonzero(values != initial_values(n, 0, DISTANCE)))


@pytest.mark.parametrize("mode, delta", [(HOP, None), (DISTANCE, None), (DISTANCE, np.inf),
                                         (DISTANCE, 0.01), (DISTANCE, 10.0)])
def test_values_at_or_below_the_waiting_minimum_are_final_after_a_hand_back(mode, delta):
    """The scheduler's strong threshold after a push: later updates all descend from a
    waiting vertex, so nothing at or below the smallest waiting value changes again."""
    n, src, dst, w = random_graph()
    indptr, indices, weights = csr(n, src, dst, w)
    values = initial_values(n, 0, mode)
    frontier, handbacks = np.array([0]), 0
    while frontier.size:
        result = push_until(indptr, indices, weights, values, frontier, mode, 2000,
                            delta=delta)
        frontier = result.frontier
        if frontier.size:
            handbacks += 1
            threshold = values[frontier].min()
            settled = np.flatnonzero(values <= threshold)
            before = values[settled].copy()
            final = values.copy()
            run((indptr, indices, weights), final, frontier, mode)
            np.testing.assert_array_equal(final[settled], before)
    assert handbacks >= 2


def through_hand_backs(indptr, indices, weights, n, mode, limit, delta):
    """push_until from vertex 0 over and over, as the scheduler calls it, with one Scratch
    through every hand-back at ``limit`` edges: each call leaves the scratch clean, reports
    exactly the vertices it changed, once each, and hands back a frontier of at least
    ``limit`` out-edges at its smallest value. Returns the values."""
    scratch = Scratch(n)
    values = initial_values(n, 0, mode)
    frontier, calls = np.array([0]), 0
    while frontier.size:
        before = values.copy()
        result = push_until(indptr, indices, weights, values, frontier, mode, limit,
                            delta=delta, scratch=scratch)
        assert not scratch.in_next().any()
        assert (scratch.pend() == np.iinfo(np.int32).max).all()
        np.testing.assert_array_equal(np.sort(result.changed), np.flatnonzero(values != before))
        assert len(np.unique(result.changed)) == len(result.changed)
        if result.frontier.size:
            assert np.diff(indptr)[result.frontier].sum() >= limit
            assert result.minimum == values[result.frontier].min()
        frontier, calls = result.frontier, calls + 1
    assert calls >= 2
    return values


@pytest.mark.parametrize("mode, delta", [(HOP, None), (LABEL, None), (DISTANCE, None),
                                         (DISTANCE, np.inf), (DISTANCE, 0.01)])
def test_one_scratch_serves_a_run_of_hand_backs(mode, delta):
    """The scheduler passes one Scratch to all its calls: each call must leave it clean,
    or the next one would miss changed vertices."""
    n, src, dst, w = random_graph()
    indptr, indices, weights = csr(n, src, dst, w)
    values = through_hand_backs(indptr, indices, weights, n, mode, 2000, delta)
    fresh = initial_values(n, 0, mode)
    run((indptr, indices, weights), fresh, [0], mode)  # in one call, without a scratch
    np.testing.assert_array_equal(values, fresh)


@settings(max_examples=100, deadline=None)
@given(graphs(), st.data())
def test_sssp_with_every_bin_pushed_and_filed_in_parallel_matches_dijkstra(g, data):
    """Every delta-stepping bin takes the parallel round and its lowerings the parallel
    filing, however few (with hand-backs, a far pile from a small delta, and 0 weights);
    or, on several threads, bins below a larger limit go to the region (region.py), after
    the calling thread's first ``alone`` out-edges, and it hands back to them: each call
    lists what it lowered once each. Two sources' runs share one Scratch: the first's
    rounds work in new arrays, the second's in the room the first's grew, or in new ones
    where a round needs more."""
    n, src, dst, w = g
    delta = data.draw(st.sampled_from([None, 0.25, 100.0]))
    limit = data.draw(st.sampled_from([1, 4, 2**62]))
    parallel_edges = data.draw(st.sampled_from([1, 5, 32, 1 << 16]))
    alone = data.draw(st.sampled_from([0, 3, 1 << 62]), label="alone")
    graph = csr(n, src, dst, w)
    scratch = Scratch(n)
    for _ in range(2):
        source = data.draw(st.integers(0, n - 1))
        values = initial_values(n, source, DISTANCE)
        frontier, changed, regions = np.array([source]), [], []
        with pytest.MonkeyPatch.context() as patch:
            for limit_name in ("SERIAL_WORK", "SERIAL_GRAPH", "SERIAL_FILL"):  # all_threads
                patch.setattr(kernels, limit_name, 0)
            patch.setattr(push, "_PARALLEL_EDGES", parallel_edges)
            patch.setattr(push, "_ALONE_EDGES", alone)
            patch.setattr(push, "delta_region",
                          lambda *a, seen=regions: seen.append(1) or region.delta_region(*a))
            while frontier.size:
                result = push_until(*graph, values, frontier, DISTANCE, limit, delta=delta,
                                    scratch=scratch)
                assert len(np.unique(result.changed)) == len(result.changed)
                frontier = result.frontier
                changed.append(result.changed)
        # A one-vertex frontier enters the region where a bin of 4 out-edges is small,
        # unless the calling thread ends the run first.
        if alone == 0:
            assert bool(regions) == (parallel_edges > 4)
        if alone == 1 << 62:
            assert not regions
        dist = csgraph.dijkstra(scipy_matrix(n, src, dst, w), indices=source)
        np.testing.assert_array_equal(values, engine_values(dist, DISTANCE))
        np.testing.assert_array_equal(
            np.unique(np.concatenate(changed)),
            np.flatnonzero(values != initial_values(n, source, DISTANCE)))


def test_delta_steppings_room_grows_past_the_largest_round_and_is_kept(monkeypatch,
                                                                        all_threads):
    """A Scratch's room starts with no round arrays; a run's parallel rounds ask for as
    much as their largest, and the next run gets twice that, in arrays kept from then on
    until a round asks for more."""
    n, src, dst, w = random_graph()
    graph = csr(n, src, dst, w)
    monkeypatch.setattr(push, "_PARALLEL_EDGES", 1)
    scratch = Scratch(n)
    bits = ring_bits_for(weight_sample(graph[2])[1], default_delta(graph[0], graph[2]))
    first = scratch.room(bits)[0]
    assert len(first.keys) == 0
    push_until(*graph, initial_values(n, 0, DISTANCE), np.array([0]), DISTANCE, 2**62,
               scratch=scratch)
    need = first.need[0]
    assert 0 < need <= len(src)
    room = scratch.room(bits)[0]
    assert room is not first and len(room.keys) == len(room.grouped_degs) == 2 * need
    push_until(*graph, initial_values(n, 0, DISTANCE), np.array([0]), DISTANCE, 2**62,
               scratch=scratch)
    assert room.need[0] == need and scratch.room(bits)[0] is room  # the same rounds again
    room.need[0] = 2 * need + 1  # a run of a larger round than the room holds
    assert len(scratch.room(bits)[0].keys) == 4 * need + 2
    assert len(scratch.room(bits + 1)[1][0]) == (1 << bits + 1) + 1  # another ring


@settings(max_examples=100, deadline=None)
@given(graphs(), st.data())
def test_delta_stepping_from_any_frontier_lists_each_change_once(g, data):
    """A frontier with repeated and unreached vertices, taken apart from the source's run
    at a hand-back, queued and finished one by one or by every thread: each call lists
    exactly the vertices it lowered, once each, and the run ends at Dijkstra's values."""
    n, src, dst, w = g
    source = data.draw(st.integers(0, n - 1))
    delta = data.draw(st.sampled_from([None, 0.25, 100.0]))
    graph = csr(n, src, dst, w)
    values = initial_values(n, source, DISTANCE)
    frontier = np.array([source])
    with pytest.MonkeyPatch.context() as patch:
        if data.draw(st.booleans(), label="every thread"):
            for limit_name in ("SERIAL_WORK", "SERIAL_GRAPH", "SERIAL_FILL"):  # all_threads
                patch.setattr(kernels, limit_name, 0)
            patch.setattr(push, "_PARALLEL_EDGES", 1)
        while frontier.size:
            extra = data.draw(st.lists(st.integers(0, n - 1), max_size=6), label="extra")
            frontier = np.concatenate([frontier, frontier[:2], extra]).astype(np.int64)
            before = values.copy()
            result = push_until(*graph, values, frontier, DISTANCE, 4, delta=delta)
            assert len(np.unique(result.changed)) == len(result.changed)
            np.testing.assert_array_equal(np.sort(result.changed),
                                          np.flatnonzero(values < before))
            frontier = result.frontier
    dist = csgraph.dijkstra(scipy_matrix(n, src, dst, w), indices=source)
    np.testing.assert_array_equal(values, engine_values(dist, DISTANCE))


# --- delta-stepping in one region (region.py) -------------------------------------------------
_REGION_WAITS = {"patient": {}, "busy at once": {"spins": 0, "slow_ns": 0, "slow_yields": 1}}
#: The region runs on Linux (its barriers' calls), on several threads.
needs_region = pytest.mark.skipif(not region._LINUX or numba.config.NUMBA_NUM_THREADS < 2,
                                  reason="no region: one thread, or not Linux")


@settings(max_examples=100, deadline=None)
@given(graphs(), st.data())
def test_a_region_then_push_until_ends_at_dijkstra(g, data):
    """The region from a source, ended by any of its reasons (a large bin, a bin past a
    small ring, the waiting vertices' limit, a busy stamp at the first wait, or none),
    then push.py's bins from what still waits: Dijkstra's values, each vertex the region
    lowered listed once, and ``pend`` clean for the next call."""
    n, src, dst, w = g
    source = data.draw(st.integers(0, n - 1))
    delta = data.draw(st.sampled_from([0.25, 2.0, 100.0]))
    graph = csr(n, src, dst, w)
    values = initial_values(n, source, DISTANCE)
    scratch = Scratch(n)
    why, rounds, pushed, changed, waiting = region.delta_region(
        *graph, values, np.array([source]), 1 / delta,
        data.draw(st.sampled_from([1, 2, 8]), label="ring bits"),
        data.draw(st.sampled_from([1, 8, 2**62]), label="limit"),
        data.draw(st.sampled_from([1, 16, 2**62]), label="parallel edges"),
        scratch.pend(), np.zeros(1, np.int32), np.zeros(3, np.int64),
        **_REGION_WAITS[data.draw(st.sampled_from(sorted(_REGION_WAITS)))])
    assert (scratch.pend() == UNTOUCHED).all()
    assert len(np.unique(changed)) == len(changed)
    np.testing.assert_array_equal(np.sort(changed), np.flatnonzero(
        values != initial_values(n, source, DISTANCE)))
    if why == region.DONE:
        assert not len(waiting)
    frontier = waiting
    while frontier.size:
        frontier = push_until(*graph, values, frontier, DISTANCE, 2**62, delta=delta,
                              scratch=scratch).frontier
    dist = csgraph.dijkstra(scipy_matrix(n, src, dst, w), indices=source)
    np.testing.assert_array_equal(values, engine_values(dist, DISTANCE))


def _grid_road(side=40):
    """A weighted grid (both directions), GAP's integer weights."""
    rng = np.random.default_rng(5)
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    w = rng.integers(1, 256, len(src)).astype(np.float32)
    return side * side, src, dst, w


@needs_region
def test_a_region_settles_a_grid_alone():
    """On a grid every bin is small: the region runs to the end, on its own."""
    n, src, dst, w = _grid_road()
    values = initial_values(n, 0, DISTANCE)
    scratch = Scratch(n)
    why, rounds, pushed, changed, waiting = region.delta_region(
        *csr(n, src, dst, w), values, np.array([0]), 1 / 256, 2, 2**62, 1 << 16,
        scratch.pend(), np.zeros(1, np.int32), np.zeros(3, np.int64))
    assert (why, len(waiting)) == (region.DONE, 0)
    assert rounds > 1 and pushed >= len(src)
    dist = csgraph.dijkstra(scipy_matrix(n, src, dst, w), indices=0)
    np.testing.assert_array_equal(values, engine_values(dist, DISTANCE))
    assert len(changed) == n - 1 and (scratch.pend() == UNTOUCHED).all()


@pytest.mark.skipif(not region._LINUX, reason="the region's barriers are Linux's")
@pytest.mark.parametrize("workers, halt, why", [
    (numba.config.NUMBA_NUM_THREADS + 1, 0, region.HANDED),  # a thread starts late
    (numba.config.NUMBA_NUM_THREADS, 1, region.HALTED),
])
def test_a_region_ends_before_its_first_bin(workers, halt, why):
    """More threads than the pool runs at once (one starts only after another ended):
    the leader goes without it and hands back; a halt before the first bin: halted.
    Either way nothing is pushed, and the source still waits."""
    if workers < 2:
        pytest.skip("one thread: no region")
    n, src, dst, w = _grid_road(8)
    indptr, indices, weights = csr(n, src, dst, w)
    values = initial_values(n, 0, DISTANCE)
    pend = Scratch(n).pend()
    cells = np.zeros(region._CELLS, np.int64)
    cells[region._NEXT:region._NEXT + 2] = region._NONE
    changed = np.empty(n + workers * region._BLOCK, np.int64)
    region._region(indptr, indices, weights, values, pend, np.array([0]), 0, 1 / 256, 2,
                   2**62, 1 << 16, (region.SPINS, region.SLOW_YIELD_NS, region.SLOW_YIELDS),
                   np.array([halt], np.int32), np.zeros(3, np.int64), cells,
                   np.empty(n, np.int32), np.empty((workers, 4, n), np.int32),
                   np.zeros((workers, 4), np.int64), changed, workers)
    assert (cells[region._VERDICT], cells[region._ROUNDS], cells[region._PUSHED]) == \
        (why, 0, 0)
    assert values[0] == 0 and np.isinf(values[1:]).all()


@pytest.mark.parametrize("parallel_edges", [1, 1 << 12])
@pytest.mark.parametrize("delta", [None, 0.01, 10.0])
def test_many_lowerings_filed_by_several_pieces_match_one_shot(parallel_edges, delta,
                                                               all_threads, monkeypatch):
    """Rounds of many pieces, each filing thousands of lowerings, in parallel (or, below
    the limit, one piece after another), through hand-backs with one scratch."""
    monkeypatch.setattr(push, "_PARALLEL_EDGES", parallel_edges)
    n, src, dst, w = random_graph()
    indptr, indices, weights = csr(n, src, dst, w)
    values = through_hand_backs(indptr, indices, weights, n, DISTANCE, 50_000, delta)
    dist = csgraph.dijkstra(scipy_matrix(n, src, dst, w), indices=0)
    np.testing.assert_allclose(values, dist.astype(np.float32), rtol=1e-5)


@settings(max_examples=100, deadline=None)
@given(graphs(), st.data())
def test_a_bounded_frontier_count_decides_as_the_exact_one(g, data):
    """_frontier_edges may return a bound instead of the count, or stop counting at the
    cap: never below the count unless at the cap, and on the same side of the threshold
    and of the cap, so every decision and every room reserved holds."""
    n, src, dst, _ = g
    indptr = csr(n, src, dst)[0]
    frontier = np.array(data.draw(st.lists(st.integers(0, n - 1))), dtype=np.int64)
    threshold = data.draw(st.integers(1, 4 * len(src) + 1))
    cap = data.draw(st.integers(threshold, 4 * len(src) + 2))
    exact = int(np.diff(indptr)[frontier].sum())
    edges = _frontier_edges(indptr, frontier, max_out_degree(indptr), threshold, cap)
    assert edges >= min(exact, cap)
    assert (edges < threshold) == (exact < threshold)
    assert (edges >= cap) == (exact >= cap)


@pytest.mark.parametrize("length", [_PARALLEL_EDGES - 1, _PARALLEL_EDGES,
                                    3 * _PARALLEL_EDGES + 5])
def test_a_long_frontiers_edges_are_counted_on_every_thread_as_on_one(length):
    """A frontier of at least _PARALLEL_EDGES vertices has its edges' ends scanned, and its
    out-edges counted, in parallel: the same figures as one thread's."""
    rng = np.random.default_rng(length)
    indptr = np.concatenate(([0], np.cumsum(rng.integers(0, 9, 5000))))
    frontier = rng.integers(0, 5000, length)  # repeats, as a round's claims may have
    degrees = np.diff(indptr)[frontier]
    np.testing.assert_array_equal(edge_ends(indptr, frontier, 7), np.cumsum(degrees))
    for twin in (_frontier_edges.serial, _frontier_edges.parallel):
        assert twin(indptr, frontier, 8, 1, 2**62) == degrees.sum()
        assert twin(indptr, frontier, 8, 1, 100) >= 100  # at the cap, or counted past it


@pytest.mark.parametrize("n", [0, 1, 1000, 300_000])
def test_parallel_flag_scan_equals_flatnonzero(n):
    """Large sets of sorted ids come from scanning a flag per vertex in parallel chunks
    (300,000 vertices are four chunks)."""
    a = np.random.default_rng(n).integers(-3, 9, n).astype(np.int32)
    np.testing.assert_array_equal(ids_between(a, 0, 5), np.flatnonzero((a >= 0) & (a <= 5)))
    flags = (a > 4).astype(np.uint8)
    np.testing.assert_array_equal(ids_between(flags, 1, 1), np.flatnonzero(flags))


def test_unreached_frontier_vertices_push_nothing():
    graph = csr(3, [0, 1], [1, 2])
    values = initial_values(3, [], HOP)  # all INF: INF + 1 must not wrap to a small value
    result = run(graph, values, [0, 1], HOP)
    assert result.converged and result.edges_pushed == 0
    assert (values == INT_INF).all()


@pytest.mark.parametrize("mode, dtype, weights", [
    (HOP, np.float32, None), (DISTANCE, np.int32, None), (DISTANCE, np.float32, None),
    (DISTANCE, np.float32, np.ones(1, np.float64))])
def test_mismatched_values_or_weights_are_rejected(mode, dtype, weights):
    indptr, indices, _ = csr(2, [0], [1])
    with pytest.raises(ValueError):
        push_until(indptr, indices, weights, np.zeros(2, dtype), np.array([0]), mode, 10)
