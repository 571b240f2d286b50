"""SSWP, the widest path (max-min), written against the vertex-program interface alone: its
widths equal a plain max-min Dijkstra's (itself checked against a fixpoint iteration) under
every schedule, predictor, page size, budget and push threshold, on every backend (the
``device`` fixture), its predecessors pass its verifier, and the verifier rejects wrong
widths, missing tight edges, cycles of equal widths and wrong predecessors.
tests/test_engine.py runs its sweeps and named shapes over SSWP too."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from test_engine import (
    FIXED,
    HYPOTHESIS,
    PUSH_ALL,
    SCHEDULES,
    SHAPES,
    Config,
    check_stats,
    configs,
    inputs,
    sleepy,
    solve,
)

import seraph
from seraph.algorithms import sswp
from seraph.backends.output import output_values
from seraph.cli import main
from seraph.errors import InputError
from seraph.operators import INT_INF, code_widths, width_codes

__all__ = ["sleepy"]  # test_engine's fixture, used here

INF = np.float32(np.inf)


def fixpoint(graph: seraph.Graph, source: int) -> np.ndarray:
    """The widths by relaxing every edge until nothing changes: what the Dijkstra is
    checked against."""
    indptr, sources, weights = graph.csc()
    heads = np.repeat(np.arange(graph.num_vertices), np.diff(indptr))
    widths = np.zeros(graph.num_vertices, np.float32)
    widths[source] = INF
    while True:
        before = widths.copy()
        np.maximum.at(widths, heads, np.minimum(widths[sources], weights))
        if (widths == before).all():
            return widths


def run(graph, source, cfg: Config, sleepy, device, predecessors=True):
    """One configuration's run, its stats checked as every engine run's are."""
    result = solve("sswp", graph, source, cfg.options(graph, sleepy, device, "sswp"),
                   predecessors=predecessors)
    assert result.widths.dtype == np.float32
    check_stats(result.stats, cfg, graph, device)
    return result


def check_answer(graph, source: int, result) -> None:
    """The widths are the Dijkstra's, and they and the predecessors pass the verifier."""
    np.testing.assert_array_equal(result.widths, sswp.reference(graph, source))
    assert sswp.check(graph, result.widths, source) is None
    assert sswp.verify(graph, result.widths, source, result.predecessors) is None


# -- the oracle -----------------------------------------------------------------------------
@HYPOTHESIS
@given(case=inputs(weighted=True))
def test_the_dijkstra_is_the_fixpoint(case):
    edges, source = case
    graph = edges.graph(16)
    np.testing.assert_array_equal(sswp.reference(graph, source), fixpoint(graph, source))


def test_the_width_codes_order_widths_the_other_way_round():
    widths = np.array([np.inf, 1e30, 3.0, 2.5, 1e-45, 0.0], np.float32)
    codes = width_codes(widths)
    assert codes[0] == 0 and (np.diff(codes) > 0).all() and (codes < INT_INF).all()
    np.testing.assert_array_equal(code_widths(codes), widths)


@pytest.mark.parametrize("fresh", [False, True])
def test_the_output_decodes_the_codes(fresh):
    codes = np.r_[width_codes(np.array([np.inf, 2.0, 0.0], np.float32)), INT_INF]
    got = output_values(codes.copy(), INT_INF, sswp.SPEC.output, fresh=fresh)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [np.inf, 2.0, 0.0, 0.0])


# -- the engine -----------------------------------------------------------------------------
@HYPOTHESIS
@given(case=inputs(weighted=True), cfg=configs)
def test_widths_and_predecessors_equal_the_dijkstra(case, cfg, sleepy, device):
    edges, source = case
    graph = edges.graph(cfg.page_edges)
    check_answer(graph, source, run(graph, source, cfg, sleepy, device))


@pytest.mark.parametrize("name", list(FIXED))
@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("predictor", ["strong", "none", "weak", "combined"])
def test_paged_and_resident_runs_with_predecessors(name, schedule, predictor, sleepy, device):
    """Small pages and budgets of two or three slots, pushes off and on."""
    edges, source = FIXED[name]
    for page_edges in (1, 4):
        graph = edges.graph(page_edges)
        for slots in (None, 2, 3):
            for alpha in (0.0, 20.0, PUSH_ALL):
                cfg = Config(schedule, predictor, page_edges, slots, alpha)
                check_answer(graph, source, run(graph, source, cfg, sleepy, device))


@HYPOTHESIS
@given(case=inputs(weighted=True), cfg=configs)
def test_pushes_do_not_change_the_widths(case, cfg, sleepy, device):
    edges, source = case
    graph = edges.graph(cfg.page_edges)
    pushed = run(graph, source, cfg, sleepy, device, predecessors=False)
    pulled = run(graph, source, Config(cfg.schedule, cfg.predictor, cfg.page_edges, cfg.slots,
                                       0.0), sleepy, device, predecessors=False)
    np.testing.assert_array_equal(pushed.widths, pulled.widths)


@pytest.mark.parametrize("shape", ["single_vertex", "long_chain", "out_star", "in_star",
                                   "grid", "isolated_source", "two_chains"])
def test_named_shapes_with_predecessors(shape, sleepy, device):
    edges, source = SHAPES[shape]
    for cfg in (Config(), Config("pipelined", "weak", 2, 2, 0.0),
                Config("single", "none", 1, 3, 0.0), Config("reentry", "combined", 4, 3, 8.0)):
        graph = edges.graph(cfg.page_edges)
        check_answer(graph, source, run(graph, source, cfg, sleepy, device))


def test_zero_widths_self_loops_and_duplicates(device):
    """0 -> 1 twice (widths 2 and 5: the wider counts), a self-loop on the source, 1 -> 2 of
    weight 0 (width 0: as unreached, no predecessor), 1 -> 3 -> 1 a cycle, 4 unreached."""
    src, dst = [0, 0, 0, 1, 1, 3], [1, 1, 0, 2, 3, 1]
    graph = seraph.Graph.from_edges(np.array(src), np.array(dst),
                                    np.array([2, 5, 1, 0, 7, 9], np.float32), num_vertices=5,
                                    keep_duplicates=True, keep_self_loops=True, page_edges=2)
    for options in ({}, {"push_alpha": 0}, {"schedule": "single"}):
        got = seraph.sswp(graph, 0, predecessors=True, device=device, **options)
        np.testing.assert_array_equal(got.widths, [np.inf, 5, 0, 5, 0])
        np.testing.assert_array_equal(got.predecessors, [-1, 0, -1, 1, -1])
        assert sswp.verify(graph, got.widths, 0, got.predecessors) is None
        assert sswp.summary(got.widths) == "3 reached"


def test_results_speak_input_ids(device):
    graph = seraph.Graph.from_edges(np.array([10, 20, 30]), np.array([20, 30, 10]),
                                    np.array([4, 3, 8], np.float32), page_edges=1)
    got = seraph.run(graph, "sswp", 20, predecessors=True, device=device)
    assert isinstance(got, seraph.SSWPResult)
    np.testing.assert_array_equal(got.values, [3, np.inf, 3])
    np.testing.assert_array_equal(got.predecessors, [30, -1, 20])


def test_an_unweighted_graph_is_refused(tmp_path, capsys):
    graph = seraph.Graph.from_edges(np.arange(3), np.arange(1, 4))
    with pytest.raises(InputError, match="SSWP needs edge weights"):
        seraph.sswp(graph, 0)
    edges = tmp_path / "g.el"
    edges.write_text("0 1\n1 2\n")
    store = tmp_path / "g.zarr"
    assert main(["preprocess", str(edges), "-o", str(store), "-q"]) == 0
    assert main(["run", "sswp", str(store), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SSWP needs edge weights" in err


def test_the_command_line_runs_and_validates(tmp_path, capsys, device):
    store = tmp_path / "g.zarr"
    assert main(["generate", "grid", "--rows", "12", "--cols", "12", "--remove", "0.2",
                 "--weights", "random:1,9", "-o", str(store), "-q"]) == 0
    args = ["run", "sswp", str(store), "--device", device, "--validate", "--json"]
    assert main([*args, "--source", "5", "--predecessors"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["validation"] == "ok" and report["summary"].endswith("reached")
    assert main([*args, "--random-sources", "3", "--predecessors"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert len(runs) == 3 and all(r["validation"] == "ok" for r in runs)
    graph = seraph.open_graph(store)
    for r in runs:
        widths = seraph.sswp(graph, r["source"], device=device).widths
        assert r["reached"] == int((widths > 0).sum())


# -- the verifier ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def answer():
    """A 5x5 grid (weights 0..4, both directions) beside a triangle, relabelled, two
    edges a page, and its widths and predecessors from the grid's store vertex of id 3."""
    arcs = [(r * 5 + c, r * 5 + c + d) for r in range(5) for c in range(5) for d in (1, 5)
            if (d == 1 and c < 4) or (d == 5 and r < 4)] + [(25, 26), (26, 27), (27, 25)]
    src, dst = (np.array(x) * 7 + 3 for x in zip(*arcs, strict=True))
    weight = np.array([(3 * i) % 5 for i in range(len(arcs))], np.float32)
    graph = seraph.Graph.from_edges(src, dst, weight, symmetrize=True, order="rcm",
                                    page_edges=2)
    source = graph.vertex_index(3)
    got = seraph.sswp(graph, 3, predecessors=True, device="cpu")
    assert sswp.verify(graph, got.widths, source, got.predecessors) is None
    return graph, source, got.widths, got.predecessors


def reached(widths, source):
    return np.flatnonzero((widths > 0) & (np.arange(len(widths)) != source))


@pytest.mark.parametrize("delta", [1.0, -1.0])
def test_a_wrong_width_is_rejected(answer, delta):
    graph, source, widths, preds = answer
    for v in reached(widths, source)[[0, -1]]:
        wrong = widths.copy()
        wrong[v] += delta
        verdict = sswp.verify(graph, wrong, source)
        assert verdict is not None and "vertices wrong; first: vertex" in verdict
        assert sswp.verify(graph, wrong, source, preds) is not None
        assert "differ from max-min Dijkstra" in sswp.check(graph, wrong, source)


def test_an_unreached_vertex_beside_a_reached_one_is_rejected(answer):
    graph, source, widths, _ = answer
    wrong = widths.copy()
    wrong[reached(widths, source)[0]] = 0
    assert "vertices wrong" in sswp.verify(graph, wrong, source)
    chain = seraph.Graph.from_edges(np.array([0, 1]), np.array([1, 2]),
                                    np.array([2, 3], np.float32))
    assert sswp.verify(chain, np.array([INF, 2, 0], np.float32), 0) == (
        "1 of 3 vertices wrong; first: vertex 2 is unreached but in-neighbour 1 has 2.0 over "
        "an edge of weight 3.0")


def test_a_source_not_at_inf_is_rejected(answer):
    graph, source, widths, _ = answer
    wrong = widths.copy()
    wrong[source] = 4
    assert f"vertex 3 is the source but has 4.0, not {INF}" in sswp.verify(graph, wrong, source)


def test_a_missing_tight_edge_is_rejected():
    """Every in-edge of 2 offers at most 1: a width of 2 is an upper bound, not tight."""
    graph = seraph.Graph.from_edges(np.array([0, 1, 0]), np.array([1, 2, 2]),
                                    np.array([3, 1, 1], np.float32), page_edges=1)
    assert sswp.verify(graph, np.array([INF, 3, 1], np.float32), 0) is None
    assert sswp.verify(graph, np.array([INF, 3, 2], np.float32), 0).startswith(
        "1 of 3 vertices wrong; first: vertex 2 has 2.0 but no in-edge is tight")


def test_a_cycle_of_equal_widths_is_rejected():
    """s -1-> a, a <-5-> b: a and b at 5 each have a tight in-edge (from each other), but no
    tight path from the source; a predecessor cycle a <-> b is rejected the same way."""
    graph = seraph.Graph.from_edges(np.array([0, 1]), np.array([1, 2]),
                                    np.array([1, 5], np.float32), symmetrize=True,
                                    page_edges=1)
    right = np.array([INF, 1, 1], np.float32)
    assert sswp.verify(graph, right, 0, np.array([-1, 0, 1])) is None
    verdict = sswp.verify(graph, np.array([INF, 5, 5], np.float32), 0)
    assert verdict.startswith("2 of 3 vertices wrong; first: vertex 1 has 5.0 but its tight "
                              "in-edges come only from vertices of equal value")
    verdict = sswp.verify(graph, right, 0, np.array([-1, 2, 1]))
    assert verdict.startswith("2 of 3 vertices wrong; first: vertex 1 has 1.0 but its "
                              "predecessor 2 is not a tight in-neighbour")


def test_wrong_predecessors_are_rejected(answer):
    graph, source, widths, preds = answer
    v = reached(widths, source)[-1]
    missing = preds.copy()
    missing[v] = -1
    assert "names no predecessor" in sswp.verify(graph, widths, source, missing)
    wrong = preds.copy()
    wrong[v] = graph.vertex_ids[v]  # itself: no edge
    assert "is not a tight in-neighbour" in sswp.verify(graph, widths, source, wrong)
    named = preds.copy()
    named[source] = preds[v]
    assert "but names predecessor" in sswp.verify(graph, widths, source, named)
    unreached = graph.vertex_index(25 * 7 + 3)  # the triangle's
    named = preds.copy()
    named[unreached] = 3
    assert "but names predecessor" in sswp.verify(graph, widths, source, named)


@pytest.mark.parametrize("seed", range(3))
def test_a_non_tight_predecessor_is_rejected(answer, seed):
    """Any in-neighbour that does not offer the width is refused as the predecessor."""
    graph, source, widths, preds = answer
    indptr, sources, weights = graph.csc()
    rng = np.random.default_rng(seed)
    for v in rng.permutation(reached(widths, source)):
        row = slice(indptr[v], indptr[v + 1])
        loose = np.minimum(widths[sources[row]], weights[row]) != widths[v]
        if loose.any():
            wrong = preds.copy()
            wrong[v] = graph.vertex_ids[sources[row][loose][0]]
            assert "is not a tight in-neighbour" in sswp.verify(graph, widths, source, wrong)
            return
    pytest.fail("no vertex with a loose in-edge")


def test_the_reference_passes_its_verifier(answer):
    graph, source, _, _ = answer
    for s in (source, 0, graph.num_vertices - 1):
        assert sswp.verify(graph, sswp.reference(graph, s), s) is None
