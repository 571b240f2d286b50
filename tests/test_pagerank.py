"""PageRank (seraph.pagerank, a summing vertex program): its ranks are networkx's within
the tolerance's L1 bound, resident and paged, on every backend (each engine test takes the
``device`` fixture of conftest.py; its cuda copies run only with a GPU); bad parameters
are refused before any work; the verifier accepts the engine's answer and rejects a
perturbed one.

Hypothesis draws small directed graphs with dangling and isolated vertices, self-loops
and duplicate edges, with a page size and a budget of slots each; named shapes cover a
single vertex, a chain, a star, cycles and disconnected parts.
"""

from __future__ import annotations

import re

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seraph
from seraph.algorithms import get, pagerank
from seraph.backends.layout import Layout
from seraph.cli import main
from seraph.errors import ConfigError, InputError
from seraph.graph import Graph

#: networkx's own tolerance (it stops at n * tol): far below any bound checked here.
NX_TOL = 1e-14


def build(n: int, src, dst, page_edges: int) -> Graph:
    return Graph.from_edges(np.array(src, np.int64), np.array(dst, np.int64), num_vertices=n,
                            page_edges=page_edges, keep_duplicates=True, keep_self_loops=True)


def networkx_ranks(n: int, src, dst, damping=0.85, personalization=None) -> np.ndarray:
    """networkx's PageRank of the multigraph (duplicate edges count, as in the CSR)."""
    g = nx.MultiDiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(src, dst, strict=True))
    p = None if personalization is None else {v: float(v == personalization) for v in range(n)}
    ranks = nx.pagerank(g, alpha=damping, personalization=p, tol=NX_TOL, max_iter=100_000)
    return np.array([ranks[v] for v in range(n)])


def slots_budget(graph: Graph, slots: int) -> int:
    """PageRank's vertex state (its vectors counted) and ``slots`` page slots."""
    layout = Layout.for_run(graph, pagerank.SPEC, "none", None)
    return layout.state_bytes + slots * layout.slot_bytes


def check_against_networkx(n, src, dst, device, page_edges=4, slots=None, damping=0.85,
                           tolerance=1e-6, personalization=None):
    graph = build(n, src, dst, page_edges)
    options = {} if slots is None else {"device_memory": slots_budget(graph, slots)}
    res = seraph.pagerank(graph, damping, tolerance, 2000, personalization, device=device,
                          **options)
    want = networkx_ranks(n, src, dst, damping, personalization)
    assert res.ranks.dtype == np.float64 and res.ranks.shape == (n,)
    assert res.converged and res.delta < tolerance
    assert res.iterations == res.stats.rounds >= 1
    error = np.abs(res.ranks - want).sum()
    assert error <= pagerank.l1_bound(damping, tolerance), (error, res.iterations)
    s = None if personalization is None else graph.vertex_index(personalization)
    assert pagerank.verify(graph, res.ranks, damping=damping, tolerance=tolerance,
                           personalization=s) is None
    if slots is not None and graph.num_pages > slots:
        assert not res.stats.resident and res.stats.pages_transferred > 0
    return res


@st.composite
def directed_graphs(draw):
    """Up to 24 vertices, some isolated or dangling; repeated pairs and self-loops kept."""
    n = draw(st.integers(1, 24))
    m = draw(st.integers(0, 3 * n))
    src = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    dst = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    return n, src, dst


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edges=directed_graphs(), page_edges=st.sampled_from([1, 4, 8, 1024]),
       slots=st.sampled_from([None, 2, 3, 5]), damping=st.sampled_from([0.85, 0.5, 0.99]),
       personalized=st.booleans(), pick=st.integers(0, 10**6))
def test_ranks_are_networkx_within_the_tolerance(edges, page_edges, slots, damping,
                                                 personalized, pick, device):
    n, src, dst = edges
    check_against_networkx(n, src, dst, device, page_edges, slots, damping,
                           personalization=pick % n if personalized else None)


SHAPES = {
    "single vertex": (1, [], []),
    "self-loop": (1, [0], [0]),
    "chain": (6, [0, 1, 2, 3, 4], [1, 2, 3, 4, 5]),
    "star in": (7, [1, 2, 3, 4, 5, 6], [0] * 6),
    "star out": (7, [0] * 6, [1, 2, 3, 4, 5, 6]),
    "cycle": (5, [0, 1, 2, 3, 4], [1, 2, 3, 4, 0]),
    "duplicates": (3, [0, 0, 0, 1, 2], [1, 1, 2, 2, 0]),
    "disconnected": (9, [0, 1, 4, 5, 5, 7], [1, 0, 5, 6, 4, 7]),
    "isolated only": (4, [], []),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("slots", [None, 2])
def test_named_shapes(shape, slots, device):
    n, src, dst = SHAPES[shape]
    check_against_networkx(n, src, dst, device, page_edges=1, slots=slots)
    check_against_networkx(n, src, dst, device, page_edges=1, slots=slots,
                           personalization=n - 1)


def test_a_larger_paged_graph_reads_every_page_once_an_iteration(device):
    rng = np.random.default_rng(5)
    n, m = 2000, 30_000
    src, dst = rng.integers(0, n, m).tolist(), rng.integers(0, n, m).tolist()
    res = check_against_networkx(n, src, dst, device, page_edges=1024, slots=4,
                                 tolerance=1e-6)
    stats = res.stats
    assert stats.edges_swept == m * res.iterations
    # Alternate directions: the pages the last iteration left in the slots are not copied.
    pages = stats.num_pages
    assert pages * res.iterations - (stats.num_slots - 1) * (res.iterations - 1) >= \
        stats.pages_transferred > (pages - stats.num_slots) * res.iterations
    assert stats.dense_rounds == res.iterations and stats.sparse_rounds == 0


def test_iterations_and_the_last_change_are_reported(device):
    graph = build(6, [0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0], page_edges=2)
    # A cycle from uniform ranks is already stationary: one iteration changes nothing.
    res = seraph.pagerank(graph, device=device)
    assert (res.iterations, res.converged) == (1, True) and res.delta < 1e-6
    # From one vertex, the rank goes round: it does not converge in three iterations.
    res = seraph.pagerank(graph, personalization=0, max_iterations=3, device=device)
    assert res.iterations == 3 and not res.converged and res.delta > 1e-3
    assert res.stats.converged is False and res.stats.change == res.delta
    assert abs(float(res.ranks.sum()) - 1) < 1e-6


def test_the_registry_runs_pagerank(device):
    graph = build(5, [0, 1, 2, 2, 3], [1, 2, 0, 3, 3], page_edges=2)
    entry = get("pagerank")
    got = seraph.run(graph, "pagerank", damping=0.9, device=device)
    assert isinstance(got, entry.result_type)
    assert entry.check(graph, got.values, damping=0.9) is None
    assert entry.verify(graph, got.values, damping=0.9) is None
    assert not entry.needs_source and "personalization" in entry.options
    assert entry.summary(got.values).endswith("of 5 vertices ranked")


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"damping": -0.1}, ConfigError, "damping must be a number from 0 to 1"),
    ({"damping": 1.5}, ConfigError, "damping must be a number from 0 to 1"),
    ({"damping": float("nan")}, ConfigError, "damping"),
    ({"tolerance": 0}, ConfigError, "tolerance must be a positive number"),
    ({"tolerance": -1e-6}, ConfigError, "tolerance must be a positive number"),
    ({"max_iterations": 0}, ConfigError, "max_iterations must be an integer of at least 1"),
    ({"max_iterations": 2.5}, ConfigError, "max_iterations"),
    ({"personalization": 7}, InputError, "personalization: .* out of range"),
    ({"predictor": "weak"}, ConfigError, "power iterations, which skip no vertex"),
])
def test_bad_parameters_are_refused(kwargs, error, match):
    graph = build(3, [0, 1], [1, 2], page_edges=2)
    with pytest.raises(error, match=match):
        seraph.pagerank(graph, device="cpu", **kwargs)
    with pytest.raises(InputError, match="pagerank takes no source vertex.*--personalization"):
        seraph.run(graph, "pagerank", source=0)


def test_the_verifier_rejects_a_perturbed_answer():
    rng = np.random.default_rng(3)
    n, m = 400, 3000
    graph = build(n, rng.integers(0, n, m).tolist(), rng.integers(0, n, m).tolist(), 256)
    ranks = seraph.pagerank(graph, device="cpu").ranks
    assert pagerank.verify(graph, ranks) is None and pagerank.check(graph, ranks) is None
    moved = ranks.copy()  # rank moved between two vertices: the total stays 1
    moved[0] += 1e-4
    moved[1] -= 1e-4
    assert "one power-iteration step moves the ranks by" in pagerank.verify(graph, moved)
    assert "from scipy's in L1" in pagerank.check(graph, moved)
    assert "sum to" in pagerank.verify(graph, ranks * 1.001)
    negative = ranks.copy()
    negative[5] = -negative[5]
    assert "vertex 5 has rank" in pagerank.verify(graph, negative)
    # Another personalization's ranks are not these.
    assert pagerank.verify(graph, ranks, personalization=0) is not None
    assert pagerank.verify(graph, ranks, damping=0.5) is not None


def test_a_budget_counts_the_vectors(device):
    """The layout counts PageRank's float64 values and its three float64 vectors (operand,
    accumulator, scales); a budget one byte short of the state and two slots is
    refused."""
    graph = build(50, list(range(49)), list(range(1, 50)), page_edges=8)
    plain = Layout.plan(graph, False, None, weights=False)
    state = Layout.for_run(graph, pagerank.SPEC, "none", None).state_bytes
    assert state == plain.state_bytes + (4 + 3 * 8) * graph.num_vertices
    with pytest.raises(seraph.DeviceError, match="too small"):
        seraph.pagerank(graph, device=device, device_memory=slots_budget(graph, 2) - 1)
    seraph.pagerank(graph, device=device, device_memory=slots_budget(graph, 2))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("pagerank") / "g.zarr"
    assert main(["generate", "rmat", "--scale", "9", "-o", str(path), "--page-edges", "512",
                 "-q"]) == 0
    return path


def test_cli_runs_and_validates(store, capsys, device):
    budget = str(slots_budget(seraph.open_graph(store), 3))
    assert main(["run", "pagerank", str(store), "--device", device, "--gpu-memory", budget,
                 "--tolerance", "1e-7", "--damping", "0.8", "--personalization", "3",
                 "--validate"]) == 0
    out = capsys.readouterr().out
    assert "validation: ok" in out and ", converged: last change" in out


@pytest.mark.parametrize(("args", "match"), [
    (["--damping", "1.5"], "damping must be a number from 0 to 1"),
    (["--damping", "-1"], "damping must be a number from 0 to 1"),
    (["--tolerance", "0"], "tolerance must be a positive number"),
    (["--max-iterations", "0"], "max_iterations must be an integer of at least 1"),
    (["--source", "1"], r"pagerank takes no source \(use --personalization"),
    (["--personalization", "100000"], "personalization: .* out of range"),
])
def test_cli_refuses_bad_options_in_one_line(store, capsys, args, match):
    assert main(["run", "pagerank", str(store), "--device", "cpu", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(match, err[0]), err


def test_cli_refuses_pagerank_options_elsewhere(store, capsys):
    assert main(["run", "bfs", str(store), "--device", "cpu", "--damping", "0.5"]) == 2
    assert "bfs takes no --damping" in capsys.readouterr().err
