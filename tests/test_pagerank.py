"""PageRank (seraph.pagerank, a summing vertex program, by power iteration or
PageRank-delta): its ranks are networkx's within the tolerance's L1 bound, resident and
paged, on every backend (each engine test takes the ``device`` fixture of conftest.py; its
cuda copies run only with a GPU), PageRank-delta's under every predictor and schedule; bad
parameters are refused before any work; the verifier accepts the engine's answer and
rejects a perturbed one.

Hypothesis draws small directed graphs with dangling and isolated vertices, self-loops
and duplicate edges, with a page size and a budget of slots each; named shapes cover a
single vertex, a chain, a star, cycles and disconnected parts.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.linalg import spsolve

import seraph
from partitioner import generators
from seraph import rounds
from seraph.algorithms import get, pagerank
from seraph.backends import backend_class
from seraph.backends.base import Backend
from seraph.backends.cpu import gather
from seraph.backends.cpu.backend import CpuBackend
from seraph.backends.layout import REDUCE_SCRATCH, Layout
from seraph.cli import main
from seraph.errors import ConfigError, InputError
from seraph.graph import Graph
from seraph.predictors import WEAK
from seraph.spec import ACCUMULATOR, OPERAND, SCALE

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


def slots_budget(graph: Graph, slots: int, method: str = "power",
                 predictor: str = "none", tolerance: float = 1e-6) -> int:
    """PageRank's vertex state under ``method`` and ``predictor`` (its vectors counted, the
    shares' type the ``tolerance``'s) and ``slots`` page slots."""
    spec = pagerank.DELTA if method != "power" else replace(
        pagerank.SPEC, vectors=pagerank.PowerIteration(tolerance=tolerance).vectors)
    layout = Layout.for_run(graph, spec, predictor, None)
    return layout.state_bytes + slots * layout.slot_bytes


def check_against_networkx(n, src, dst, device, page_edges=4, slots=None, damping=0.85,
                           tolerance=1e-6, personalization=None, method="power", **options):
    """The run's ranks against networkx's; ``options`` are the engine's (a predictor, a
    schedule, ...)."""
    graph = build(n, src, dst, page_edges)
    if slots is not None:
        # auto runs PageRank-delta with the weak predictor where that pays and its state
        # fits, and the budget gives it room; single skips nothing.
        asks = options.get("predictor") == "weak" or "diagram" in options or \
            (method == "delta" and options.get("predictor", "auto") == "auto"
             and backend_class(device).weak_pays(pagerank.DELTA))
        weak = asks and options.get("schedule") != "single"
        options["device_memory"] = slots_budget(graph, slots, method,
                                                "weak" if weak else "none", tolerance)
    res = seraph.pagerank(graph, damping, tolerance, 2000, personalization, method,
                          device=device, **options)
    want = networkx_ranks(n, src, dst, damping, personalization)
    assert res.ranks.dtype == np.float64 and res.ranks.shape == (n,)
    assert res.converged and res.delta < tolerance
    # PageRank-delta has no round to run where no in-edge reads a vertex that moved.
    assert res.iterations == res.stats.rounds >= (1 if method == "power" else 0)
    error = np.abs(res.ranks - want).sum()
    assert error <= pagerank.l1_bound(damping, tolerance), (error, res.iterations)
    s = None if personalization is None else graph.vertex_index(personalization)
    assert pagerank.verify(graph, res.ranks, damping=damping, tolerance=tolerance,
                           personalization=s) is None
    if slots is not None and graph.num_pages > slots:
        assert not res.stats.resident
        assert res.stats.pages_transferred + res.stats.pages_in_place > 0 or \
            not res.iterations
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
       tolerance=st.sampled_from([1e-6, 1e-4, 1e-3]), personalized=st.booleans(),
       pick=st.integers(0, 10**6))
def test_ranks_are_networkx_within_the_tolerance(edges, page_edges, slots, damping, tolerance,
                                                 personalized, pick, device):
    """Either share type (float32 where the tolerance leaves room for it)."""
    n, src, dst = edges
    check_against_networkx(n, src, dst, device, page_edges, slots, damping, tolerance,
                           personalization=pick % n if personalized else None)


@pytest.mark.parametrize(("damping", "tolerance", "shares"), [
    (0.85, 1e-4, np.float32), (0.85, 1e-5, np.float32), (0.85, 1e-6, np.float64),
    (0.99, 1e-4, np.float32), (0.99, 1e-5, np.float64)])
def test_shares_are_float32_where_the_tolerance_leaves_room(damping, tolerance, shares):
    program = pagerank.PowerIteration(damping, tolerance)
    assert program.share_type == shares
    assert dict(program.vectors)[OPERAND] == shares
    rounding = pagerank.SHARE_ROUNDING if shares == np.float32 else 0.0
    assert program.stop_below == tolerance - rounding


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edges=directed_graphs(), page_edges=st.sampled_from([1, 4, 8, 1024]),
       slots=st.sampled_from([None, 2, 3, 5]), damping=st.sampled_from([0.85, 0.5, 0.99, 0.0]),
       personalized=st.booleans(), pick=st.integers(0, 10**6),
       predictor=st.sampled_from([{"predictor": "none"}, {"predictor": "weak"},
                                  {"predictor": "auto"}, {"diagram": "weak-patient"},
                                  {"diagram": "weak-delta"}]),
       schedule=st.sampled_from(["pipelined", "reentry", "single"]))
def test_delta_ranks_are_networkx_within_the_tolerance(edges, page_edges, slots, damping,
                                                       personalized, pick, predictor,
                                                       schedule, device):
    """PageRank-delta under every predictor and schedule, resident and paged: its sums are
    recomputed, so the windows' re-sweeps, the skipped pages and the weak predictor's
    skips leave the bound intact, and the verifier accepts its answer."""
    n, src, dst = edges
    check_against_networkx(n, src, dst, device, page_edges, slots, damping,
                           personalization=pick % n if personalized else None,
                           method="delta", schedule=schedule, **predictor)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edges=directed_graphs(), page_edges=st.sampled_from([1, 4, 8, 1024]),
       slots=st.sampled_from([None, 2, 3, 5]), damping=st.sampled_from([0.85, 0.5, 0.99, 0.0]),
       tolerance=st.sampled_from([1e-6, 1e-3]), personalized=st.booleans(),
       pick=st.integers(0, 10**6), schedule=st.sampled_from(["pipelined", "reentry", "single"]))
def test_gauss_seidel_ranks_are_networkx_within_the_tolerance(edges, page_edges, slots, damping,
                                                              tolerance, personalized, pick,
                                                              schedule, device):
    """Gauss-Seidel sweeps under every schedule, resident and paged: a round's re-sweeps
    and its pages' order change what each sum read, never the bound it stops on."""
    n, src, dst = edges
    check_against_networkx(n, src, dst, device, page_edges, slots, damping, tolerance,
                           personalization=pick % n if personalized else None,
                           method="gauss-seidel", schedule=schedule)


@pytest.mark.parametrize("threads", [1, 2])
def test_gauss_seidel_takes_fewer_rounds_than_the_power_iteration_on_the_cpu(threads):
    """On the CPU each thread's sums read what the sums before them in its range wrote in
    the round, as GAP's pr does: on a random graph the same bound takes fewer rounds than
    the power iteration's. (A GPU's sweep is one parallel relaxation, most of its reads
    the last round's: there the rounds are about the power iteration's.)"""
    rng = np.random.default_rng(8)
    n, m = 4000, 64_000
    graph = build(n, rng.integers(0, n, m).tolist(), rng.integers(0, n, m).tolist(), 4096)
    power = seraph.pagerank(graph, device="cpu", threads=threads)
    sweeps = seraph.pagerank(graph, method="gauss-seidel", device="cpu", threads=threads)
    assert sweeps.converged and sweeps.delta <= 0.85 * 1e-6
    assert pagerank.verify(graph, sweeps.ranks) is None
    assert sweeps.iterations < power.iterations, (sweeps.iterations, power.iterations)


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
@pytest.mark.parametrize("method", pagerank.METHODS)
def test_named_shapes(shape, slots, method, device):
    n, src, dst = SHAPES[shape]
    predictors = [{"predictor": "none"}, {"predictor": "weak"}] if method == "delta" else [{}]
    for options in predictors:
        check_against_networkx(n, src, dst, device, page_edges=1, slots=slots, method=method,
                               **options)
        check_against_networkx(n, src, dst, device, page_edges=1, slots=slots,
                               personalization=n - 1, method=method, **options)


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


def test_an_iteration_sums_short_windows_until_copies_are_queued(monkeypatch):
    """An iteration starts on the pages the last one left in the slots, none copying: its
    windows hold 1, 1, 2, 4... pages, so slots free for copies soon, and never more than
    half the slots. The copies land as they are queued, so the windows are the same in
    every run."""
    monkeypatch.setattr(CpuBackend, "load", lambda be, slot, page: be._copy(slot, page))
    rng = np.random.default_rng(6)
    n, m, slots = 3000, 60_000, 16
    graph = build(n, rng.integers(0, n, m).tolist(), rng.integers(0, n, m).tolist(), 512)
    res = seraph.pagerank(graph, tolerance=1e-3, device="cpu", trace=True,
                          device_memory=slots_budget(graph, slots, tolerance=1e-3))
    windows = [len(e["pages"]) for e in res.trace.events if e["kind"] == "compute"]
    assert res.iterations >= 3 and max(windows) <= slots // 2
    ends = np.flatnonzero(np.cumsum(windows) % graph.num_pages == 0)  # an iteration's last
    assert len(ends) == res.iterations
    for end in ends[:-1]:
        assert windows[end + 1:end + 5] == [1, 1, 2, 4]


@pytest.mark.parametrize("slots", [None, 2])
@pytest.mark.parametrize("tolerance", [1e-4, 1e-6])
@pytest.mark.parametrize("method", pagerank.METHODS)
def test_the_parallel_kernels_rank_as_networkx(slots, tolerance, method, all_threads):
    """The CPU's parallel twins, however small the work (the fixture all_threads): spans of
    whole pages (a resident graph's in one) cut into vertex ranges of equal work, on
    in-degrees as skewed as an R-MAT's (hubs split across pages), with either share type;
    PageRank-delta's ranges taken in turn by the threads, with and without the weak
    predictor."""
    rng = np.random.default_rng(7)
    n, m = 3000, 40_000
    dst = (rng.pareto(1.0, m) * 10).astype(np.int64) % n
    src = rng.integers(0, n, m).tolist()
    if method == "power":
        res = check_against_networkx(n, src, dst.tolist(), "cpu", page_edges=8192,
                                     slots=slots, tolerance=tolerance)
        assert res.stats.edges_swept == m * res.iterations
        return
    if method == "gauss-seidel":
        check_against_networkx(n, src, dst.tolist(), "cpu", page_edges=4096, slots=slots,
                               tolerance=tolerance, method=method)
        return
    for predictor in ("none", "weak"):
        res = check_against_networkx(n, src, dst.tolist(), "cpu", page_edges=4096,
                                     slots=slots, tolerance=tolerance, method="delta",
                                     predictor=predictor)
        assert (res.stats.skipped_weak > 0) == (predictor == "weak")


def _recompute_graph():
    """A graph of skewed in-degrees, its hubs split across pages of 4096 edges, whose
    pages lie in the slots partly one after another (spans) and partly not."""
    rng = np.random.default_rng(17)
    n, m, pe = 500, 60_000, 4096
    dst = (rng.pareto(1.0, m) * 5).astype(np.int64) % n
    graph = build(n, rng.integers(0, n, m).tolist(), dst.tolist(), pe)
    indptr, indices, _ = graph.csc()
    slot_of = np.array([3, 4, 5, 0, 2, 1, 6, 9, 10, 11, 7, 8, 13, 14, 12])
    assert len(slot_of) == graph.num_pages
    slots = np.zeros(len(slot_of) * pe, dtype=indices.dtype)
    for page, slot in enumerate(slot_of):
        edges = indices[page * pe:(page + 1) * pe]
        slots[slot * pe:slot * pe + len(edges)] = edges
    return graph, slots, slot_of * pe, rng


@pytest.mark.parametrize("parallel", [False, True])
def test_the_gather_sums_each_in_edge_once_in_any_order_of_pages_and_slots(parallel):
    """gather_pages over pages sorted as the backend sorts them, some lying one after
    another in the slots (summed as one span) and some not: scipy's sums, added to what
    the accumulator held."""
    graph, slots, offsets, rng = _recompute_graph()
    n, pe = graph.num_vertices, graph.page_edges
    indptr, indices, _ = graph.csc()
    operand = rng.random(n).astype(np.float32)
    into = rng.random(n)
    want = into + sp.csc_array((operand[indices].astype(np.float64), indices, indptr),
                               shape=(n, n)).sum(axis=0)
    pages = np.arange(graph.num_pages, dtype=np.int64)
    gather.gather_pages.twin(parallel)(pages, offsets, pe, graph.num_edges,
                                       graph.page_first_vertex, graph.page_last_vertex,
                                       indptr, slots, operand, into, 3, np.zeros(1, np.int64))
    np.testing.assert_allclose(into, want, rtol=1e-12)



def _recompute(graph, slots, offsets, pages, operand, values, page_sums, predictor, table,
               states, parallel, rule=(None, 0.0, 0.0, -1)):
    """One recompute_pages sweep over ``pages`` (ascending), every change written (eps 0),
    under ``rule = (scale, factor, spread, vertex)`` (no scale: ones); returns its counters
    and the sum of |change| it wrote."""
    scale, factor, spread, vertex = rule
    block_epoch = np.zeros(graph.num_vertices, dtype=np.int64)
    return gather.recompute_pages.twin(parallel)(
        pages, offsets[pages], graph.page_edges, graph.num_edges, graph.page_first_vertex,
        graph.page_last_vertex, graph.csc()[0], slots, operand, values,
        np.ones(graph.num_vertices) if scale is None else scale, page_sums, factor, spread, vertex,
        0.0, predictor, table, states, block_epoch, 0, 1, 3, np.zeros(1, np.int64))


@pytest.mark.parametrize("parallel", [False, True])
def test_a_recomputing_sweep_sets_each_sum_and_each_pieces_partial_sum(parallel):
    """recompute_pages over every page, some summed as spans: each vertex's sum is
    scipy's, each split vertex's partial sums are its pages' shares of it, each operand is
    set from its sum by the rule (jump included), and the sweep counts a piece a page and
    every in-edge once, and the changes it wrote.

    The operands start at the rule's fixed point, so that what a sweep writes leaves them
    there whatever the order: ``operand = (factor * A operand + jump) * scale``, A summing
    the in-edges, with scale 0 at a split vertex (whose sum moves a piece at a time)."""
    graph, slots, offsets, rng = _recompute_graph()
    indptr, indices, _ = graph.csc()
    n, pe = graph.num_vertices, graph.page_edges
    cut = indptr[:-1] // pe != (indptr[1:] - 1) // pe
    with_edges = np.diff(indptr) > 0
    scale = np.where(cut & with_edges, 0.0, rng.random(n) / (1 + graph.out_degrees()))
    factor, spread, vertex = 0.6, 0.3, 7
    jump = np.full(n, spread)
    jump[vertex] += 1
    a = sp.csc_array((np.ones(graph.num_edges), indices, indptr), shape=(n, n)).T  # sums
    operand = spsolve(sp.identity(n, format="csc") - factor * (sp.diags(scale) @ a),
                      jump * scale)
    values = rng.random(n)
    page_sums = np.zeros(2 * graph.num_pages)
    gather.split_sums_from_values(indptr, graph.page_last_vertex, pe, graph.num_edges, values,
                                  page_sums)
    pages = np.arange(graph.num_pages, dtype=np.int64)
    values_before, sums_before, fixed = values.copy(), page_sums.copy(), operand.copy()
    counters, moved = _recompute(graph, slots, offsets, pages, operand, values, page_sums, 0,
                                 np.zeros((4, 1), np.uint8), np.zeros(0, np.uint8), parallel,
                                 (scale, factor, spread, vertex))
    want = a @ fixed
    np.testing.assert_allclose(values[with_edges], want[with_edges], rtol=1e-12)
    np.testing.assert_allclose(operand[with_edges], fixed[with_edges], rtol=1e-12)
    pieces = 0
    for p in range(graph.num_pages):
        first, last = graph.page_first_vertex[p], graph.page_last_vertex[p]
        for slot, v in ((0, first), (1, last)):
            lo, hi = max(indptr[v], p * pe), min(indptr[v + 1], (p + 1) * pe)
            started_before = indptr[v] < p * pe  # its piece here is slot 0's, else 1's
            split = started_before if slot == 0 else \
                not started_before and indptr[v + 1] > (p + 1) * pe
            if split:
                assert page_sums[2 * p + slot] == pytest.approx(operand[indices[lo:hi]].sum())
        pieces += int(np.count_nonzero(np.diff(indptr[first:last + 2]) > 0))
    assert pieces > int(with_edges.sum())  # some vertex is split
    attempted, succeeded, _strong, weak, edges = counters
    assert (attempted, weak, edges) == (pieces, 0, graph.num_edges)
    whole = with_edges & ~cut
    assert moved == pytest.approx(np.abs(values - values_before)[whole].sum()
                                  + np.abs(page_sums - sums_before).sum(), rel=1e-12)


@pytest.mark.parametrize("parallel", [False, True])
def test_the_weak_predictor_skips_a_split_vertex_whole_or_not_at_all(parallel):
    """Every vertex dormant, the graph resident: a sweep of every page (one span) skips
    every vertex, split ones too, and each owes an attempt; a sweep of some pages attempts
    the pieces it holds of a vertex with in-edges beyond them, which keeps its debt, and
    skips the rest."""
    from seraph.predictors import OWES, STATE_MASK, load_diagram

    graph, _slots, _offsets, rng = _recompute_graph()
    indptr, slots, _ = graph.csc()  # resident: its pages one span
    n, pe = graph.num_vertices, graph.page_edges
    offsets = np.arange(graph.num_pages, dtype=np.int64) * pe
    diagram = load_diagram("weak-delta")
    dormant = int(diagram.dormant_states()[0])
    operand, values = rng.random(n), rng.random(n)
    page_sums = np.zeros(2 * graph.num_pages)
    with_edges = np.diff(indptr) > 0
    states = np.full(n, dormant, np.uint8)
    pages = np.arange(graph.num_pages, dtype=np.int64)
    before = values.copy()
    counters, _ = _recompute(graph, slots, offsets, pages, operand, values, page_sums, WEAK,
                             diagram.table, states, parallel)
    assert counters[0] == counters[4] == 0 and counters[3] == with_edges.sum()
    np.testing.assert_array_equal(values, before)
    assert ((states[with_edges] & OWES) != 0).all()
    assert ((states[with_edges] & STATE_MASK) == diagram.next_dormant[dormant]).all()
    # Pages 3 to 5 alone: the vertices wholly inside them skip, those reaching past attempt.
    states[:] = dormant | OWES
    some = np.arange(3, 6, dtype=np.int64)
    lo, hi = some[0] * pe, (some[-1] + 1) * pe
    inside = with_edges & (indptr[:-1] >= lo) & (indptr[1:] <= hi)
    reaching = (indptr[:-1] < hi) & (indptr[1:] > lo) & ~inside
    assert reaching.sum() == 2
    counters, _ = _recompute(graph, slots, offsets, some, operand, values, page_sums, WEAK,
                             diagram.table, states, parallel)
    assert counters[3] == inside.sum() and counters[0] >= 2
    assert ((states & OWES) != 0).all()  # a part attempted keeps the debt


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("vertex", [None, 7])
@pytest.mark.parametrize("share", [np.float32, np.float64])
def test_the_fused_walk_step_is_the_whole_vector_one(parallel, vertex, share):
    """The CPU's walk step (gather.walk_step, over several blocks) against the whole-vector
    steps that the other backends run (Backend.walk_step over numpy)."""
    rng = np.random.default_rng(13)
    n = 3 * gather.STEP_BLOCK + 5
    values = rng.random(n)
    values /= values.sum()
    scale = np.where(rng.random(n) < 0.1, 0.0, 1 / rng.integers(1, 20, n))
    sums = rng.random(n)
    sums *= 0.9 / sums.sum()  # what the shares carried: the rest is lost, and restarts
    vectors = {"values": values.copy(), ACCUMULATOR: sums.copy(), SCALE: scale,
               OPERAND: np.zeros(n, dtype=share)}
    whole = SimpleNamespace(xp=np, vector=vectors.__getitem__)
    want = Backend.walk_step(whole, 0.85, 0.15, vertex)
    fused = {"values": values.copy(), ACCUMULATOR: sums.copy(), OPERAND: np.zeros(n, share)}
    got = gather.walk_step.twin(parallel)(fused["values"], fused[ACCUMULATOR], fused[OPERAND],
                                          scale, 0.85, 0.15, -1 if vertex is None else vertex)
    assert got == pytest.approx(want, rel=1e-12)
    # The sums' totals are added up in another order: the restart differs in its last bits.
    np.testing.assert_allclose(fused["values"], vectors["values"], rtol=1e-13)
    np.testing.assert_allclose(fused[OPERAND], vectors[OPERAND],
                               rtol=max(1e-13, np.finfo(share).eps))
    assert not fused[ACCUMULATOR].any() and not vectors[ACCUMULATOR].any()
    assert fused["values"].sum() == pytest.approx(1, abs=1e-14)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("vertex", [None, 7])
@pytest.mark.parametrize("factor", [1.0, 1.25])
def test_the_fused_walk_totals_and_operands_are_the_whole_vector_ones(parallel, vertex, factor):
    """The CPU's walk totals (gather.walk_totals, over several blocks) against numpy's,
    and its walk operands (gather.walk_operands) against the whole-vector steps that the
    other backends run."""
    rng = np.random.default_rng(19)
    n = 3 * gather.STEP_BLOCK + 5
    values = rng.random(n)
    scale = np.where(rng.random(n) < 0.1, 0.0, 1 / rng.integers(1, 20, n))
    vectors = {"values": values.copy(), SCALE: scale, OPERAND: np.zeros(n)}
    scaled = []

    def scale_sums(f):  # a backend's, on its values alone
        scaled.append(f)
        vectors["values"] *= f

    whole = SimpleNamespace(xp=np, vector=vectors.__getitem__, scale_sums=scale_sums)
    want_totals = values.sum(), values[scale == 0].sum()
    Backend.walk_operands(whole, 0.85, factor, vertex)
    assert scaled == ([] if factor == 1 else [factor])
    got_values, got_operand = values.copy(), np.zeros(n)
    got_totals = gather.walk_totals.twin(parallel)(got_values, scale)
    assert got_totals == pytest.approx(want_totals, rel=1e-12)
    gather.walk_operands.twin(parallel)(got_values, got_operand, scale, 0.85, factor,
                                        -1 if vertex is None else vertex)
    np.testing.assert_allclose(got_values, whole.vector("values"), rtol=1e-15)
    np.testing.assert_allclose(got_operand, whole.vector(OPERAND), rtol=1e-13)


@pytest.mark.parametrize("predictor", ["none", "weak"])
def test_delta_reads_the_edges_of_the_vertices_it_attempts(predictor, device):
    """A larger paged graph: PageRank-delta's sweeps count the in-edges they read, every
    in-edge of a swept page without a predictor, fewer where the weak predictor skipped a
    vertex; the run has no sparse round, and its answer meets the bound."""
    rng = np.random.default_rng(5)
    n, m = 2000, 30_000
    src, dst = rng.integers(0, n, m).tolist(), rng.integers(0, n, m).tolist()
    res = check_against_networkx(n, src, dst, device, page_edges=1024, slots=4,
                                 method="delta", predictor=predictor)
    stats = res.stats
    assert stats.sparse_rounds == stats.bottom_up_rounds == stats.edges_pushed == 0
    assert stats.dense_rounds == res.iterations and stats.updates_succeeded > 0
    if predictor == "none":
        assert stats.edges_read == stats.edges_swept and stats.skipped_weak == 0
        assert not stats.predictor_states
    else:
        assert stats.edges_read < stats.edges_swept and stats.skipped_weak > 0
        assert stats.rechecks >= 1  # whatever it skipped was attempted again at the end
        assert len(stats.predictor_states) == stats.dense_rounds  # Figure 10's counts
        weak_delta_states = 17
        assert all(sum(counts) == n and len(counts) == weak_delta_states
                   for counts in stats.predictor_states)
    assert sum(entry["edges"] for entry in stats.round_log) == stats.edges_read


@pytest.mark.parametrize("symmetric", [False, True])
def test_delta_balances_the_total_between_rounds(symmetric, device):
    """A random graph, directed or not: PageRank-delta's rounds update the sums in place,
    which moves their total; balancing it between rounds (Delta.rebalance) leaves only the
    error the power iteration also has, so it converges in about the power iteration's
    iterations, where the total alone would take about three times as many."""
    rng = np.random.default_rng(5)
    n, m = 2000, 30_000
    graph = Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m), num_vertices=n,
                             page_edges=1024, symmetrize=symmetric)
    power = seraph.pagerank(graph, device=device)
    delta = seraph.pagerank(graph, method="delta", predictor="none", device=device)
    assert delta.converged and delta.iterations <= 1.5 * power.iterations
    assert pagerank.verify(graph, delta.ranks) is None


def test_the_weak_predictor_skips_what_settled(device):
    """An R-MAT (symmetrized), resident: most vertices settle within a few rounds and a few
    keep moving for many more, spread over every page. The weak predictor puts the settled
    ones to sleep and reads well under the edges of the same run without it, and both
    answers meet the bound; auto runs it where the backend says it pays, and none
    elsewhere."""
    source = generators.rmat(13, 16, seed=1)
    chunks = list(source.chunks())
    graph = Graph.from_edges(np.concatenate([c.src for c in chunks]),
                             np.concatenate([c.dst for c in chunks]), num_vertices=1 << 13,
                             symmetrize=True, page_edges=16384)
    none, weak, auto = (seraph.pagerank(graph, method="delta", predictor=predictor,
                                        device=device)
                        for predictor in ("none", "weak", "auto"))
    assert weak.stats.predictor == "weak" and weak.stats.skipped_weak > 0
    assert weak.stats.edges_read < 0.75 * none.stats.edges_read
    for res in (none, weak, auto):
        assert res.converged and pagerank.verify(graph, res.ranks) is None
    pays = backend_class(device).weak_pays(pagerank.DELTA)
    assert auto.stats.predictor == ("weak" if pays else "none")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edges=directed_graphs(), page_edges=st.sampled_from([1, 4, 8]),
       seed=st.integers(0, 2**32 - 1))
def test_awake_in_pages_counts_what_a_sweep_of_the_page_reads(edges, page_edges, seed,
                                                              device):
    """Under random weak states, the in-edges Backend.awake_in_pages counts in each page
    are those a weak sweep of that page alone reads, and its rows those it attempts."""
    from seraph.predictors import load_diagram

    n, src, dst = edges
    graph = build(n, src, dst, page_edges)
    diagram = load_diagram("weak-delta")
    spec = replace(pagerank.DELTA, recompute=pagerank.Delta().rule(graph, 0.5e-6))
    layout = Layout.for_run(graph, spec, "weak", None)
    be = backend_class(device)(graph, spec, layout, diagram.table, diagram.initial)
    states = np.random.default_rng(seed).integers(0, diagram.num_states, n).astype(np.uint8)
    with be.vector_steps():  # on a GPU, the stream its kernels run on
        be.vector("values").fill(0)
        be.states[:] = be.xp.asarray(states)
    pages = np.arange(graph.num_pages, dtype=np.int64)
    edges_in, rows = be.awake_in_pages(pages)
    for p in pages:
        with be.vector_steps():
            be.states[:] = be.xp.asarray(states)  # each sweep steps them
        res = be.sweep(np.zeros(1, np.int64), pages[p:p + 1], WEAK, -1, 1)
        assert (res.edges_read, res.attempted) == (edges_in[p], rows[p])
    be.close()


@pytest.mark.parametrize("share", [0.0, rounds.IN_PLACE_SHARE, math.inf])
def test_a_paged_round_reads_in_place_the_pages_whose_vertices_sleep(share, device):
    """The same R-MAT at a quarter of its pages, under the weak predictor: a round reads in
    place the pages whose attempting vertices hold few edges (by default), none of them
    (0), or every page it sweeps under the predictor (inf), and copies the rest. Every
    answer meets the bound, and reading in place copies fewer pages."""
    source = generators.rmat(13, 16, seed=1)
    chunks = list(source.chunks())
    graph = Graph.from_edges(np.concatenate([c.src for c in chunks]),
                             np.concatenate([c.dst for c in chunks]), num_vertices=1 << 13,
                             symmetrize=True, page_edges=8192)
    memory = slots_budget(graph, graph.num_pages // 4, "delta", "weak")

    def run(share):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(rounds, "IN_PLACE_SHARE", share)
            return seraph.pagerank(graph, method="delta", predictor="weak", device=device,
                                   device_memory=memory)

    copied, res = run(0.0).stats.pages_transferred, run(share)
    assert res.converged and pagerank.verify(graph, res.ranks) is None
    assert (res.stats.pages_in_place > 0) == (share > 0)
    if share > 0:
        assert res.stats.pages_transferred < copied


def test_delta_writes_every_change_where_a_wave_would_carry_the_unwritten_ones(device):
    """On a large grid, vertices crossing the write threshold carry their neighbours'
    unwritten changes along, a row a round: without the round that writes every change
    (Delta.drive), this grid took 534 rounds to the power iteration's 24, and about 100
    under the weak predictor. A GPU's sweep is one parallel relaxation, whose reads race
    its writes: there the tail after the settling round varies from call to call (62-103
    rounds under the weak predictor on an H100), so its bound is wider."""
    chunks = list(generators.grid(512, 512, seed=1).chunks())
    graph = Graph.from_edges(np.concatenate([c.src for c in chunks]),
                             np.concatenate([c.dst for c in chunks]), num_vertices=512 * 512,
                             symmetrize=True, page_edges=16384)
    power = seraph.pagerank(graph, device=device)
    bound = 4 if device == "cpu" else 8
    for predictor in ("none", "weak"):  # the weak predictor's sleepers hold changes too
        res = seraph.pagerank(graph, method="delta", predictor=predictor, max_iterations=1000,
                              device=device)
        assert res.converged and pagerank.verify(graph, res.ranks) is None
        assert res.iterations <= bound * power.iterations, (predictor, res.iterations,
                                                            power.iterations)


def test_delta_stops_after_max_iterations(device):
    """Too few rounds: not converged, no bound claimed (inf), and the ranks still a
    distribution."""
    graph = build(6, [0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0], page_edges=2)
    res = seraph.pagerank(graph, personalization=0, max_iterations=3, method="delta",
                          device=device)
    assert res.iterations == 3 and not res.converged and res.delta == np.inf
    assert abs(float(res.ranks.sum()) - 1) < 1e-12
    # Where a round reads the values of the round before (a device's pages run at once),
    # a cycle's error shrinks only by the damping a round: past the default 100 rounds.
    res = seraph.pagerank(graph, personalization=0, method="delta", max_iterations=1000,
                          device=device)
    assert res.converged and 0 < res.delta <= 0.85 * 1e-6


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
    # Vertex 3's self-loop gains 0.9 of its last change a round: 138 rounds to settle.
    delta = seraph.run(graph, "pagerank", damping=0.9, method="delta", predictor="weak",
                       max_iterations=200, device=device)
    assert (delta.stats.predictor, delta.converged) == ("weak", True)
    assert entry.verify(graph, delta.values, damping=0.9, method="delta") is None
    assert entry.check(graph, delta.values, damping=0.9, method="delta") is None
    # auto: the weak predictor where it pays (vertices settle at different rounds).
    assert seraph.run(graph, "pagerank", method="delta", device=device).stats.predictor == \
        ("weak" if backend_class(device).weak_pays(pagerank.DELTA) else "none")


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"damping": -0.1}, ConfigError, "damping must be a number from 0 to 1"),
    ({"damping": 1.5}, ConfigError, "damping must be a number from 0 to 1"),
    ({"damping": float("nan")}, ConfigError, "damping"),
    ({"tolerance": 0}, ConfigError, "tolerance must be a positive number"),
    ({"tolerance": -1e-6}, ConfigError, "tolerance must be a positive number"),
    ({"max_iterations": 0}, ConfigError, "max_iterations must be an integer of at least 1"),
    ({"max_iterations": 2.5}, ConfigError, "max_iterations"),
    ({"personalization": 7}, InputError, "personalization: .* out of range"),
    ({"predictor": "weak"}, ConfigError, "attempts every vertex each round, skipping none"),
    ({"diagram": "weak-delta"}, ConfigError, "attempts every vertex each round, skipping none"),
    ({"method": "gauss"}, ConfigError,
     "method must be one of power, delta, gauss-seidel, got 'gauss'"),
    ({"method": "gauss-seidel", "damping": 1}, ConfigError,
     "method gauss-seidel needs a damping below 1"),
    ({"method": "gauss-seidel", "predictor": "weak"}, ConfigError,
     "attempts every vertex each round, skipping none"),
    ({"method": "delta", "damping": 1}, ConfigError, "method delta needs a damping below 1"),
    ({"method": "delta", "predictor": "strong"}, ConfigError,
     "pagerank has no strong rule: use predictor weak, none or auto, not 'strong'"),
    ({"method": "delta", "predictor": "combined"}, ConfigError, "pagerank has no strong rule"),
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


def test_a_delta_budget_counts_its_vectors_and_partial_sums(device):
    """PageRank-delta keeps float64 sums, two float64 vectors (operands, scales), two
    partial sums a page, room for its vector steps' reductions, and under the weak
    predictor a state byte a vertex and three words a page."""
    graph = build(50, list(range(49)), list(range(1, 50)), page_edges=8)
    plain = Layout.plan(graph, False, None, weights=False)
    for predictor, weak in (("none", 0), ("weak", 1)):
        state = Layout.for_run(graph, pagerank.DELTA, predictor, None).state_bytes
        assert state == plain.state_bytes + (4 + 2 * 8 + weak) * graph.num_vertices \
            + (16 + 24 * weak) * graph.num_pages + REDUCE_SCRATCH
        budget = slots_budget(graph, 2, "delta", predictor)
        with pytest.raises(seraph.DeviceError, match="too small"):
            seraph.pagerank(graph, method="delta", predictor=predictor, device=device,
                            device_memory=budget - 1)
        seraph.pagerank(graph, method="delta", predictor=predictor, device=device,
                        device_memory=budget)
    # auto takes the weak predictor where it pays and its state fits, and runs without it
    # where not.
    pays = backend_class(device).weak_pays(pagerank.DELTA)
    for predictor in ("none", "weak"):
        res = seraph.pagerank(graph, method="delta", device=device,
                              device_memory=slots_budget(graph, 2, "delta", predictor))
        assert res.converged and res.stats.predictor == (predictor if pays else "none")


def test_a_budget_counts_the_vectors(device):
    """The layout counts PageRank's float64 values and its three float64 vectors (operand,
    accumulator, scales); a budget one byte short of the state and two slots is
    refused."""
    graph = build(50, list(range(49)), list(range(1, 50)), page_edges=8)
    plain = Layout.plan(graph, False, None, weights=False)
    state = Layout.for_run(graph, pagerank.SPEC, "none", None).state_bytes
    assert state == plain.state_bytes + (4 + 3 * 8) * graph.num_vertices + REDUCE_SCRATCH
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


def test_cli_runs_delta_with_the_weak_predictor(store, capsys, device, tmp_path):
    """`seraph run pagerank --method delta --predictor weak --validate`, traced: the trace
    holds the weak predictor's state counts per round, which `seraph plot` draws."""
    budget = str(slots_budget(seraph.open_graph(store), 3, "delta", "weak"))
    trace = tmp_path / "delta.json"
    assert main(["run", "pagerank", str(store), "--device", device, "--gpu-memory", budget,
                 "--method", "delta", "--predictor", "weak", "--diagram", "weak-delta",
                 "--tolerance", "1e-7", "--validate", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "validation: ok" in out and "predictor weak" in out and "edges read" in out
    from seraph.plot import load_trace, timeline
    tl = timeline(load_trace(trace))
    assert tl.predictor_states and len(tl.predictor_states) == tl.stats["dense_rounds"]
    pytest.importorskip("matplotlib")
    assert main(["plot", str(trace), "-o", str(tmp_path / "delta.png"), "-q"]) == 0
    assert (tmp_path / "delta.png").stat().st_size > 10_000


@pytest.mark.parametrize(("args", "match"), [
    (["--damping", "1.5"], "damping must be a number from 0 to 1"),
    (["--damping", "-1"], "damping must be a number from 0 to 1"),
    (["--tolerance", "0"], "tolerance must be a positive number"),
    (["--max-iterations", "0"], "max_iterations must be an integer of at least 1"),
    (["--source", "1"], r"pagerank takes no source \(use --personalization"),
    (["--personalization", "100000"], "personalization: .* out of range"),
    (["--method", "delta", "--damping", "1"], "method delta needs a damping below 1"),
    (["--method", "delta", "--predictor", "strong"], "pagerank has no strong rule"),
    (["--predictor", "weak"], "attempts every vertex each round, skipping none"),
    (["--method", "gauss-seidel", "--predictor", "weak"],
     "attempts every vertex each round, skipping none"),
])
def test_cli_refuses_bad_options_in_one_line(store, capsys, args, match):
    assert main(["run", "pagerank", str(store), "--device", "cpu", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(match, err[0]), err


def test_cli_refuses_pagerank_options_elsewhere(store, capsys):
    assert main(["run", "bfs", str(store), "--device", "cpu", "--damping", "0.5"]) == 2
    assert "bfs takes no --damping" in capsys.readouterr().err
