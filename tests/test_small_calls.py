"""A call that touches few vertices costs no pass over all of them (issue 35): it starts
from an array at infinity that the graph's last run left there, reads back from the
vertices it touched alone into a new array, and puts those back. Its answers are exact,
stay valid whatever later calls do. A large run (dense rounds) reads back in one pass over
every vertex, which also puts its values back at infinity for the next run."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seraph
from seraph.algorithms import get
from seraph.backends.output import SPARSE_SHARE, output_values
from seraph.validate import check

ALGORITHMS = ("bfs", "sssp", "sswp")


@pytest.fixture(scope="module")
def islands() -> seraph.Graph:
    """A weighted symmetric graph of a 40x40 grid, whose runs sweep pages, and 300 small
    components (paths of 2 to 6 vertices), whose runs push a few vertices; ids shuffled."""
    rng = np.random.default_rng(7)
    side = 40
    ids = np.arange(side * side).reshape(side, side)
    src = [ids[:, :-1].ravel(), ids[:-1, :].ravel()]
    dst = [ids[:, 1:].ravel(), ids[1:, :].ravel()]
    n = side * side
    for _ in range(300):
        k = int(rng.integers(2, 7))
        src.append(np.arange(n, n + k - 1))
        dst.append(np.arange(n + 1, n + k))
        n += k
    src, dst = np.concatenate(src), np.concatenate(dst)
    perm = rng.permutation(n)
    weights = rng.integers(1, 9, len(src)).astype(np.float32)
    return seraph.Graph.from_edges(perm[src], perm[dst], weights, num_vertices=n,
                                   symmetrize=True, page_edges=256)


def _pools(graph: seraph.Graph) -> list[tuple[np.ndarray, object]]:
    """The value arrays the graph keeps for its next runs, each with the infinity it holds."""
    cache = graph.__dict__.get("_engine_cache", {})
    return [(a, key[1][2]) for key, pool in cache.items()
            if key[0] == "pool" and key[1][0] == "values at infinity" for a in pool]


def _vertices(graph: seraph.Graph, degree: int) -> list[int]:
    """Store vertices of that degree: 1, the ends of the small paths; 4, the grid's inside."""
    return [int(v) for v in np.flatnonzero(graph.out_degrees() == degree)]


def test_small_and_large_calls_in_any_order_answer_exactly_and_keep_their_answers(islands):
    small, large = _vertices(islands, 1)[:12], _vertices(islands, 4)[:3]
    rng = np.random.default_rng(3)
    calls = [(alg, v) for alg in ALGORITHMS for v in small + large]
    results = []
    for i in rng.permutation(len(calls)):
        alg, v = calls[i]
        result = seraph.run(islands, alg, int(islands.vertex_ids[v]), device="cpu")
        results.append((alg, v, result.values, result.values.copy()))
    for alg, v, values, copy in results:
        assert np.array_equal(values, copy, equal_nan=True), (alg, v)  # no later call wrote it
        assert check(islands, alg, values, v) is None, (alg, v)
    pools = _pools(islands)
    assert pools and all((a == inf).all() for a, inf in pools)


def test_large_and_small_runs_hand_back_values_at_infinity_and_keep_their_answers(islands):
    inside, end = _vertices(islands, 4)[0], _vertices(islands, 1)[0]
    big = seraph.bfs(islands, int(islands.vertex_ids[inside]), device="cpu", push_alpha=0)
    assert big.stats.dense_rounds > 0
    pools = _pools(islands)
    assert pools and all((a == inf).all() for a, inf in pools)
    small = seraph.bfs(islands, int(islands.vertex_ids[end]), device="cpu")
    assert small.stats.dense_rounds == 0
    assert (small.levels >= 0).sum() * SPARSE_SHARE <= len(small.levels)
    kept = [id(a) for a, _ in _pools(islands)]
    assert id(big.levels) not in kept and id(small.levels) not in kept
    assert check(islands, "bfs", big.levels, inside) is None
    assert check(islands, "bfs", small.levels, end) is None


@settings(max_examples=60, deadline=None)
@given(data=st.data(), algorithm=st.sampled_from(("bfs", "sssp", "sswp", "cc")))
def test_a_readback_from_the_touched_vertices_equals_a_full_one(data, algorithm):
    spec = get(algorithm).spec
    n = data.draw(st.integers(1, 200))
    touched = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=20)), np.int64)
    values = np.full(n, spec.inf, dtype=spec.dtype)
    if len(touched):
        drawn = data.draw(st.lists(st.integers(0, 1000), min_size=len(touched),
                                   max_size=len(touched)))
        values[touched] = np.array(drawn).astype(spec.dtype)
        # Some touched vertices may have stayed at infinity.
        values[touched[::3]] = spec.inf
    full = output_values(values.copy(), spec.inf, spec.output, fresh=True)
    cleared = values.copy()
    read = output_values(cleared, spec.inf, spec.output, fresh=True, clear=True)
    sparse = output_values(values, spec.inf, spec.output, fresh=True, touched=touched)
    assert sparse.dtype == full.dtype == read.dtype
    assert np.array_equal(sparse.view(np.uint8), full.view(np.uint8))
    assert np.array_equal(read.view(np.uint8), full.view(np.uint8))
    assert np.array_equal(cleared, np.full(n, spec.inf, spec.dtype))  # back at infinity


@pytest.mark.parametrize("algorithm", ["bfs", "sssp", "sswp"])
def test_a_readback_on_every_thread_puts_the_values_back_at_infinity(algorithm, all_threads):
    spec = get(algorithm).spec
    rng = np.random.default_rng(5)
    values = rng.integers(0, 1000, 300_000).astype(spec.dtype)
    values[rng.random(len(values)) < 0.3] = spec.inf
    full = output_values(values.copy(), spec.inf, spec.output, fresh=True)
    read = output_values(values, spec.inf, spec.output, fresh=True, clear=True)
    assert np.array_equal(read.view(np.uint8), full.view(np.uint8))
    assert np.array_equal(values, np.full(len(values), spec.inf, spec.dtype))
