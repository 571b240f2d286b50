"""The algorithm registry: seraph.run dispatches by name to the same functions, and each
algorithm's checks (its O(m) verifier, and scipy's answer) accept its answer and reject a
wrong one."""

from __future__ import annotations

import numpy as np
import pytest

import seraph
from seraph.algorithms import ALGORITHMS, get
from seraph.errors import ConfigError, InputError


@pytest.fixture(scope="module")
def graph() -> seraph.Graph:
    rng = np.random.default_rng(7)
    m, n = 3000, 400
    return seraph.Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m),
                                   rng.integers(1, 9, m).astype(np.float32), num_vertices=n,
                                   symmetrize=True, page_edges=256)


def test_the_registry_lists_each_algorithm_once_in_order():
    assert list(ALGORITHMS) == ["bfs", "cc", "sssp", "sswp", "pagerank"]
    assert all(get(name).name == name == entry.spec.name for name, entry in ALGORITHMS.items())
    assert [e.needs_source for e in ALGORITHMS.values()] == [True, False, True, True, False]


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_run_by_name_is_the_named_function(graph, name, device):
    entry = get(name)
    source = entry.source_for(3)
    got = seraph.run(graph, name, source, device=device)
    assert isinstance(got, entry.result_type)
    assert entry.check(graph, got.values, entry.source_for(graph.vertex_index(3))) is None
    assert entry.verify(graph, got.values, entry.source_for(graph.vertex_index(3))) is None
    named = {"bfs": seraph.bfs, "cc": seraph.connected_components, "sssp": seraph.sssp,
             "sswp": seraph.sswp, "pagerank": seraph.pagerank}[name]
    want = named(graph, *([source] if entry.needs_source else []), device=device)
    np.testing.assert_array_equal(got.values, want.values)
    assert entry.summary(got.values).endswith(("reached", "components", "ranked"))


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_the_verifier_reports_a_wrong_answer(graph, name):
    entry = get(name)
    source = entry.source_for(graph.vertex_index(3))
    values = entry.run(graph, *([3] if entry.needs_source else []), device="cpu").values.copy()
    values[np.flatnonzero(np.isfinite(values) & (values >= 0))[0]] += 1  # reached: no sentinel
    verdict = entry.check(graph, values, source)
    if name == "pagerank":  # ranks are checked within a tolerance, in L1 and in total
        assert "from scipy's in L1" in verdict and "sum to" in entry.verify(graph, values)
        return
    assert verdict is not None and "1 of 400 vertices differ from " in verdict
    verdict = entry.verify(graph, values, source)
    assert verdict is not None and " of 400 vertices wrong; first: vertex " in verdict


def test_bad_names_and_sources_are_refused(graph):
    with pytest.raises(ConfigError, match="unknown algorithm 'nosuch'"):
        seraph.run(graph, "nosuch")
    with pytest.raises(InputError, match="cc takes no source"):
        seraph.run(graph, "cc", source=0)
    with pytest.raises(InputError, match="a source vertex is required"):
        seraph.run(graph, "bfs")


def test_the_call_time_covers_the_engine_time():
    """``stats.call_time`` is the whole public call (the result's conversions included),
    ``stats.wall_time`` the engine's run inside it."""
    graph = seraph.Graph.from_edges(np.arange(50), np.arange(1, 51),
                                    np.ones(50, np.float32), symmetrize=True)
    for name in ALGORITHMS:
        stats = seraph.run(graph, name, 0 if get(name).needs_source else None,
                           device="cpu").stats
        assert 0 < stats.wall_time <= stats.call_time, name
