"""The engine is exact: BFS, SSSP and CC equal scipy.sparse.csgraph's answers, and SSWP a
plain max-min Dijkstra's, under every schedule, predictor, page size, memory budget and push
threshold, on every backend (each test takes the ``device`` fixture of conftest.py; its
cuda copies run only with a GPU).

Hypothesis draws small graphs together with one configuration each; a deterministic sweep
runs the full cross product of configurations on three fixed graphs; named shapes (chains,
stars, grids, a single vertex) cover what random graphs rarely produce.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph
from test_predictors import SLEEPY_TOML

import seraph
from seraph import rounds, schedules
from seraph.algorithms import cc, get, sswp
from seraph.backends import backend_class
from seraph.backends.activity import page_source_blocks, pages_active
from seraph.backends.cpu.pull import BLOCK, SERIAL_EDGES
from seraph.backends.layout import Layout
from seraph.graph import Graph
from seraph.predictors import LATE_WEAK_DENSE_ROUNDS
from seraph.scheduler import Run
from seraph.validate import check

SCHEDULES = ("pipelined", "reentry", "single")
#: "sleepy" is a valid but bad weak diagram: a vertex sleeps 20 sweeps after any failure.
#: "auto" adds the weak history to the strong rule after some dense rounds where that pays.
PREDICTORS = ("none", "strong", "weak", "sleepy", "combined", "auto")
WHOLE = 1024  #: a page size above every test graph's edge count: one page holds the graph
PAGE_EDGES = (1, 2, 4, 16, WHOLE)
SLOTS = (None, 2, 3, 5)  #: None: no budget, every page resident; 5 keeps two copies in flight
PUSH_ALL = 1e-3  #: push while the frontier has fewer than 1000 m out-edges: always
#: off; the default; hands over often, so that a bottom-up round's changes are at times
#: too many to push and a dense round must take them; pushes only frontiers without
#: out-edges; pushes everything
ALPHAS = (0.0, 20.0, 8.0, 1e9, PUSH_ALL)
ALGORITHMS = ("bfs", "sssp", "cc", "sswp")


@pytest.fixture(scope="module")
def sleepy(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("diagrams") / "sleepy.toml"
    path.write_text(SLEEPY_TOML)
    return path


# -- inputs and their expected answers -------------------------------------------------------
@dataclass(frozen=True)
class Edges:
    """A test input: edges ``src[i] -> dst[i]`` on ``n`` vertices (tuples, so it hashes)."""

    n: int
    src: tuple[int, ...]
    dst: tuple[int, ...]
    weight: tuple[float, ...] | None = None  # float32-representable
    symmetric: bool = False  # built with symmetrize=True
    keep: bool = True  # keep self-loops and duplicate edges in the graph

    @property
    def integral(self) -> bool:
        """Small integer weights: float32 path sums are exact."""
        return self.weight is None or all(float(w).is_integer() for w in self.weight)

    def graph(self, page_edges: int) -> Graph:
        weight = None if self.weight is None else np.array(self.weight, np.float32)
        return Graph.from_edges(np.array(self.src, np.int64), np.array(self.dst, np.int64),
                                weight, num_vertices=self.n, symmetrize=self.symmetric,
                                page_edges=page_edges, keep_duplicates=self.keep,
                                keep_self_loops=self.keep)

    def arcs(self) -> dict[tuple[int, int], float]:
        """Every arc (u, v) of the graph with its smallest weight (1 when unweighted)."""
        weights = self.weight or (1.0,) * len(self.src)
        pairs = zip(self.src, self.dst, weights, strict=True)
        if self.symmetric:
            pairs = [*pairs, *zip(self.dst, self.src, weights, strict=True)]
        arcs: dict[tuple[int, int], float] = {}
        for u, v, w in pairs:
            arcs[u, v] = min(w, arcs.get((u, v), np.inf))
        return arcs

    def adjacency(self) -> sp.csr_array:
        """The adjacency matrix csgraph reads (explicit zeros are zero-weight edges)."""
        arcs = self.arcs()
        rows = np.array([u for u, _ in arcs], np.int64)
        cols = np.array([v for _, v in arcs], np.int64)
        return sp.csr_array((np.array(list(arcs.values()), np.float64), (rows, cols)),
                            shape=(self.n, self.n))


cached_graph = cache(Edges.graph)


def expected(algorithm: str, edges: Edges, source: int) -> np.ndarray:
    """scipy's answer in the API's conventions (SSWP's: a plain max-min Dijkstra's)."""
    if algorithm == "sswp":
        return sswp.reference(cached_graph(edges, WHOLE), source)
    a = edges.adjacency()
    if algorithm == "cc":
        count, component = csgraph.connected_components(a, directed=False)
        smallest = np.full(count, edges.n)
        np.minimum.at(smallest, component, np.arange(edges.n))
        return smallest[component]
    if algorithm == "bfs":
        hops = csgraph.shortest_path(a, directed=True, unweighted=True, indices=source)
        return np.where(np.isinf(hops), -1, hops).astype(np.int32)
    return csgraph.dijkstra(a, directed=True, indices=source)


# -- configurations and runs ---------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    schedule: str = "pipelined"
    predictor: str = "strong"
    page_edges: int = 4
    slots: int | None = None
    alpha: float = 20.0

    def weak(self, algorithm: str, device: str) -> bool:
        """Whether the run keeps a weak state a vertex (its budget makes room for it): auto
        does for CC by propagation where the weak history pays."""
        if self.schedule == "single":
            return False
        if self.predictor == "auto":
            return algorithm == "cc" and backend_class(device).weak_pays(get("cc").spec)
        return self.predictor in ("weak", "sleepy", "combined")

    def options(self, graph: Graph, sleepy: Path, device: str, algorithm: str) -> dict:
        # CC by label propagation, the method whose rounds these configurations shape
        # (union-find, the CPU's default, is checked in test_union_find_components).
        opts = dict(device=device, schedule=self.schedule, push_alpha=self.alpha,
                    predictor="weak" if self.predictor == "sleepy" else self.predictor,
                    components="propagation")
        if self.predictor in ("sleepy", "combined"):  # combined: sleepy where not proven
            opts["diagram"] = str(sleepy)
        if self.slots is not None:
            opts["device_memory"] = budget(graph, self.slots, self.weak(algorithm, device),
                                           algorithm, self.strong)
        return opts

    @property
    def strong(self) -> bool:
        return self.schedule != "single" and self.predictor in ("strong", "combined", "auto")


def budget(graph: Graph, slots: int, weak: bool, algorithm: str, strong: bool = False) -> int:
    """Bytes for the vertex state (:class:`Layout`'s, which test_api_errors checks term by
    term) plus ``slots`` page slots: a slot holds a page's indices (4 bytes an edge), and
    its weights (4) for a weighted operator only."""
    spec = get(algorithm).spec
    weights = spec.operator.weighted and graph.weighted
    layout = Layout.plan(graph, weak, None, weights=weights,
                         lightest=weights and strong and spec.lightest_first)
    return layout.state_bytes + slots * layout.slot_bytes


def solve(algorithm: str, graph: Graph, source: int, options: dict, predecessors=False):
    if algorithm == "cc":
        return seraph.connected_components(graph, **options)
    return get(algorithm).run(graph, source, predecessors=predecessors, **options)


def answer(algorithm: str, result) -> np.ndarray:
    if algorithm == "bfs":
        assert result.levels.dtype == np.int32
        return result.levels
    if algorithm == "sssp":
        assert result.distances.dtype == np.float32
        return result.distances
    if algorithm == "sswp":
        assert result.widths.dtype == np.float32
        return result.widths
    return result.labels


def check_run(algorithm: str, edges: Edges, source: int, cfg: Config, sleepy: Path,
              device: str, graph: Graph | None = None):
    """Runs one configuration on ``device`` and checks its answer and its stats; returns the
    result."""
    graph = graph or edges.graph(cfg.page_edges)
    result = solve(algorithm, graph, source, cfg.options(graph, sleepy, device, algorithm))
    got, want = answer(algorithm, result), expected(algorithm, edges, source)
    if algorithm == "sssp" and not edges.integral:
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=str(cfg))
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=str(cfg))
    if algorithm == "cc":
        assert result.num_components == len(np.unique(want))
    check_stats(result.stats, cfg, graph, device)
    return result


def check_resident(stats, graph: Graph, device: str) -> None:
    """A resident graph never pages: the CPU backend reads it in place, the CUDA backend
    uploads each page at most once per graph (with its weights for a weighted operator
    only): a run finds what an earlier one on the graph left on the device."""
    assert stats.resident and stats.device == device
    if device == "cpu" or graph.num_edges == 0 or stats.bytes_h2d == 0:
        assert stats.pages_transferred == stats.bytes_h2d == 0
    else:
        weights = get(stats.algorithm).spec.operator.weighted and graph.weighted
        assert stats.pages_transferred == graph.num_pages
        assert stats.bytes_h2d in (graph.num_edges * 4, graph.num_edges * (8 if weights else 4))


def check_stats(stats, cfg: Config, graph: Graph, device: str) -> None:
    """What the configuration promises about every run."""
    assert stats.device == device
    if cfg.slots is None or graph.num_pages <= cfg.slots:
        check_resident(stats, graph, device)
    else:
        assert not stats.resident and stats.num_slots == cfg.slots
        # Slots start empty, so sweeping anything means copying it first, or reading it
        # in place.
        assert (stats.pages_transferred + stats.pages_in_place > 0) == (stats.sweeps > 0)
    if stats.predictor not in ("weak", "combined") or stats.resident:
        assert stats.pages_in_place == 0
    if cfg.alpha == 0 or cfg.schedule == "single":
        assert stats.edges_pushed == 0 and stats.sparse_rounds == 0
    elif cfg.alpha == PUSH_ALL:
        assert stats.sweeps == 0
    if cfg.schedule == "single":
        assert stats.predictor == "none"
    if stats.predictor not in ("strong", "combined"):
        assert stats.skipped_strong == 0
    if stats.predictor not in ("weak", "combined"):
        assert stats.skipped_weak == 0
    check_round_log(stats)


def check_round_log(stats) -> None:
    """The per-round log adds up to the run's totals, one entry per dense and bottom-up
    round and one per push phase."""
    log = stats.round_log
    total = {key: sum(entry[key] for entry in log) for key in
             ("rounds", "attempted", "succeeded", "skipped_strong", "skipped_weak", "edges")}
    assert total["rounds"] == stats.rounds
    assert total["attempted"] == stats.updates_attempted + stats.edges_pushed
    assert total["succeeded"] == stats.updates_succeeded
    assert (total["skipped_strong"], total["skipped_weak"]) == (stats.skipped_strong,
                                                                stats.skipped_weak)
    assert total["edges"] == \
        stats.edges_swept + stats.edges_pushed + stats.edges_pulled_bottom_up
    kinds = [entry["kind"] for entry in log]
    assert kinds.count("dense") == stats.dense_rounds
    assert kinds.count("bottom-up") == stats.bottom_up_rounds
    assert set(kinds) <= {"dense", "push", "bottom-up"}
    assert all(entry["edges"] >= 0 and entry["rounds"] >= 0 for entry in log)


def test_a_first_dense_round_of_cc_sweeps_every_edge(device):
    """Label propagation starts with every vertex changed, so its first round (no pushes)
    sweeps every page once: the log's edges are the graph's."""
    rng = np.random.default_rng(3)
    graph = seraph.Graph.from_edges(rng.integers(0, 40, 90), rng.integers(0, 40, 90),
                                    num_vertices=40, symmetrize=True, page_edges=4)
    stats = seraph.connected_components(graph, device=device, push_alpha=0,
                                        components="propagation", predictor="none").stats
    assert stats.round_log[0]["kind"] == "dense"
    assert stats.round_log[0]["edges"] == graph.num_edges
    assert stats.round_log[0]["attempted"] > 0



@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_run_is_gone_when_its_call_returns(monkeypatch, device, algorithm):
    """The run and its backend go as the call returns, not at a later garbage collection:
    on a device their arrays would otherwise share the next call's budget."""
    import gc
    import weakref

    from seraph import scheduler

    runs = []
    original = scheduler.Run.__init__

    def remembered(run, *args, **kwargs):
        original(run, *args, **kwargs)
        runs.extend((weakref.ref(run), weakref.ref(run.be)))

    graph = Graph.from_edges(np.arange(20), np.arange(1, 21), np.ones(20, np.float32), 21,
                             symmetrize=True, page_edges=4)

    def call():
        seraph.run(graph, algorithm, 0 if algorithm != "cc" else None, device=device,
                   device_memory=budget(graph, 2, False, algorithm, strong=True),
                   components="propagation" if algorithm == "cc" else "union-find")

    call()  # compiles first: numba's compiler keeps the calling frames for a while
    monkeypatch.setattr(scheduler.Run, "__init__", remembered)
    gc.disable()
    try:
        call()
        assert runs and all(ref() is None for ref in runs)
    finally:
        gc.enable()

# -- hypothesis: random graphs, each with a random configuration ----------------------------
configs = st.builds(Config, st.sampled_from(SCHEDULES), st.sampled_from(PREDICTORS),
                    st.sampled_from(PAGE_EDGES), st.sampled_from(SLOTS),
                    st.sampled_from(ALPHAS))


@st.composite
def inputs(draw, weighted: bool, symmetric: bool | None = None) -> tuple[Edges, int]:
    """A graph of up to 60 vertices and 300 edges, with a source vertex.

    A path through a random order of the vertices gives some graphs a long diameter;
    random edges add self-loops, duplicates and shortcuts. Weights are small integers
    (zeros included) or arbitrary float32 values."""
    n = draw(st.integers(1, 60))
    order = draw(st.permutations(range(n)))
    path = order[:draw(st.integers(0, n))]
    vertex = st.integers(0, n - 1)
    pairs = [*zip(path, path[1:], strict=False),
             *draw(st.lists(st.tuples(vertex, vertex), max_size=300 - len(path)))]
    weight = None
    if weighted:
        value = draw(st.sampled_from([st.integers(0, 4).map(float),
                                      st.floats(0, 1000, width=32)]))
        weight = tuple(draw(st.lists(value, min_size=len(pairs), max_size=len(pairs))))
    edges = Edges(n, tuple(u for u, _ in pairs), tuple(v for _, v in pairs), weight,
                  draw(st.booleans()) if symmetric is None else symmetric,
                  draw(st.booleans()))
    return edges, draw(vertex)


HYPOTHESIS = settings(max_examples=60, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@HYPOTHESIS
@given(case=inputs(weighted=False), cfg=configs)
def test_bfs_levels_equal_scipy(case, cfg, sleepy, device):
    check_run("bfs", *case, cfg, sleepy, device)


@HYPOTHESIS
@given(case=inputs(weighted=True), cfg=configs)
def test_sssp_distances_equal_scipy(case, cfg, sleepy, device):
    check_run("sssp", *case, cfg, sleepy, device)


def rows_by_source(graph: Graph) -> Graph:
    """The same graph as a store written before rows were ordered by weight: each CSC row
    sorted by source, and its attributes saying so."""
    arrays = dict(graph._arrays)
    indptr, indices, weights = graph.csc()
    by = np.lexsort((indices, np.repeat(np.arange(graph.num_vertices), np.diff(indptr))))
    arrays["csc/indices"], arrays["csc/weights"] = indices[by], weights[by]
    return Graph(dataclasses.replace(graph.attrs, row_order="source"), arrays=arrays)


@HYPOTHESIS
@given(case=inputs(weighted=True), cfg=configs)
def test_sssp_on_rows_by_source_equals_scipy(case, cfg, sleepy, device):
    """Pulls stop early only where the rows are lightest first (Graph.rows_by_weight)."""
    edges, source = case
    graph = rows_by_source(edges.graph(cfg.page_edges))
    assert not graph.rows_by_weight
    check_run("sssp", edges, source, cfg, sleepy, device, graph=graph)


@HYPOTHESIS
@given(case=inputs(weighted=False, symmetric=True), cfg=configs)
def test_cc_labels_equal_scipy(case, cfg, sleepy, device):
    check_run("cc", *case, cfg, sleepy, device)


@HYPOTHESIS
@given(case=inputs(weighted=False, symmetric=True), cfg=configs)
def test_union_find_components(case, cfg, sleepy, device):
    """CC's default on both backends: union-find, whatever the budget, schedule and
    predictor (which shape only label propagation's rounds); no page is copied."""
    edges, _source = case
    graph = edges.graph(cfg.page_edges)
    options = {**cfg.options(graph, sleepy, device, "cc"), "components": "union-find"}
    result = seraph.connected_components(graph, **options)
    want = expected("cc", edges, 0)
    np.testing.assert_array_equal(result.labels, want)
    assert result.num_components == len(np.unique(want))
    assert result.stats.rounds == 0
    assert result.stats.pages_transferred == 0 or result.stats.resident


def test_union_find_on_larger_graphs(device, all_threads):
    """Graphs whose rows and hooks race across many threads and blocks: a shuffled grid
    with holes, a power-law graph and many small components, paged and resident."""
    rng = np.random.default_rng(3)
    side = 120
    grid = np.arange(side * side).reshape(side, side)
    src = np.concatenate([grid[:, :-1].ravel(), grid[:-1, :].ravel()])
    dst = np.concatenate([grid[:, 1:].ravel(), grid[1:, :].ravel()])
    keep = rng.random(len(src)) > 0.3
    order = rng.permutation(side * side)
    cases = [(order[src[keep]], order[dst[keep]], side * side),
             (rng.zipf(1.6, 40_000) % 5000, rng.integers(0, 5000, 40_000), 5000),
             (rng.integers(0, 20_000, 6000), rng.integers(0, 20_000, 6000), 20_000)]
    for s, d, n in cases:
        graph = Graph.from_edges(s, d, num_vertices=n, symmetrize=True, page_edges=1024)
        layout = Layout.for_run(graph, cc.SPEC, "strong", None)
        for memory in (None, layout.state_bytes + 2 * layout.slot_bytes):
            got = seraph.connected_components(graph, device=device, device_memory=memory)
            assert check(graph, "cc", got.labels) is None


@HYPOTHESIS
@given(case=inputs(weighted=False, symmetric=True), more=st.data(),
       page_edges=st.sampled_from([1, 4, 1 << 20]), paged=st.booleans())
def test_union_find_unites_its_forest_with_another(case, more, page_edges, paged, device):
    """What a partitioned run's workers do between union-find's phases, on one process:
    the forest is linked with another one (``Backend.link_parents``, here the components
    of other edges) after the sampling and after the finish, and the labels are the
    components of both edge sets."""
    edges, _source = case
    graph = edges.graph(page_edges)
    n = graph.num_vertices
    src = np.array(more.draw(st.lists(st.integers(0, n - 1), max_size=6)), np.int64)
    dst = np.array(more.draw(st.lists(st.integers(0, n - 1), min_size=len(src),
                                      max_size=len(src))), np.int64)
    extra = Graph.from_edges(src, dst, num_vertices=n, symmetrize=True)
    other = seraph.connected_components(extra, device="cpu").labels.astype(np.int32)
    both = Graph.from_edges(np.concatenate([np.array(edges.src, np.int64), src]),
                            np.concatenate([np.array(edges.dst, np.int64), dst]),
                            num_vertices=n, symmetrize=True)
    linked = []

    def forests_linked(run, parent):
        run.be.link_parents(parent, run.be.xp.asarray(other))
        linked.append(len(parent))

    layout = Layout.for_run(graph, cc.SPEC, "strong", None)
    memory = layout.state_bytes + 2 * layout.slot_bytes if paged else None
    with mock.patch.object(Run, "forests_linked", forests_linked):
        got = seraph.connected_components(graph, device=device, device_memory=memory)
    np.testing.assert_array_equal(got.labels, seraph.connected_components(
        both, device="cpu").labels)
    assert linked == [n, n] or n == 0


@HYPOTHESIS
@given(data=st.data(), cfg=configs, algorithm=st.sampled_from(ALGORITHMS),
       share=st.sampled_from([0.0, 0.1, 0.5, 1.0]))
def test_answers_do_not_depend_on_the_bottom_up_limit(data, cfg, algorithm, share, sleepy,
                                                      device):
    """The bottom-up limit only chooses between rounds that are each exact: none at all, a
    tenth, half (a GPU's whose pages move) or all of the edges give scipy's answers."""
    case = data.draw(inputs(weighted=get(algorithm).spec.operator.weighted,
                            symmetric=True if algorithm == "cc" else None))
    limit = lambda backend, push_limit, num_edges: share * num_edges  # noqa: E731
    with mock.patch.object(backend_class(device), "bottom_up_edge_limit", limit):
        check_run(algorithm, *case, cfg, sleepy, device)


@HYPOTHESIS
@given(case=inputs(weighted=False), cfg=configs, again=st.booleans(),
       share=st.sampled_from([0.1, 0.5, 1.0]))
def test_bfs_answers_do_not_depend_on_pulling_again(case, cfg, again, share, sleepy, device):
    """Whether the round after a bottom-up round is another bottom-up round (or, where
    that one does not run whole, a dense round) or pushes from the vertices it lowered,
    the levels are scipy's: the lowered vertices' marked blocks keep their pages active."""
    cls = backend_class(device)
    with mock.patch.object(cls, "pulls_again", lambda backend, lowered: again), \
            mock.patch.object(cls, "bottom_up_edge_limit",
                              lambda backend, push_limit, num_edges: share * num_edges):
        check_run("bfs", *case, cfg, sleepy, device)


@HYPOTHESIS
@given(data=st.data(), cfg=configs, algorithm=st.sampled_from(ALGORITHMS),
       passes=st.sampled_from([1, 2, 8]))
def test_answers_do_not_depend_on_the_last_window_passes(data, cfg, algorithm, passes,
                                                         sleepy, device):
    """How often the pipelined schedule sweeps a round's last window (once by default,
    up to ``max_reentries`` before) only moves work between rounds: scipy's answers. With
    2 or 8 this also keeps pipelined re-sweeps (several passes over a window whose pages
    carry the round's swept flags) under test on the CPU backend, whose copies land at
    once, so that its windows are otherwise swept once."""
    case = data.draw(inputs(weighted=get(algorithm).spec.operator.weighted,
                            symmetric=True if algorithm == "cc" else None))
    with mock.patch.object(schedules, "LAST_WINDOW_SWEEPS", passes):
        check_run(algorithm, *case, cfg, sleepy, device)


@HYPOTHESIS
@given(data=st.data(), cfg=configs, algorithm=st.sampled_from(ALGORITHMS),
       share=st.sampled_from([0.0, math.inf]))
def test_answers_do_not_depend_on_pages_read_in_place(data, cfg, algorithm, share, sleepy,
                                                      device):
    """A paged round under the weak predictor reads a page in place, rather than copied,
    where few of its vertices attempt: never (0) or every page it can (inf), scipy's
    answers."""
    case = data.draw(inputs(weighted=get(algorithm).spec.operator.weighted,
                            symmetric=True if algorithm == "cc" else None))
    with mock.patch.object(rounds, "IN_PLACE_SHARE", share):
        stats = check_run(algorithm, *case, cfg, sleepy, device).stats
    if share == 0:
        assert stats.pages_in_place == 0


# -- the full cross product on fixed graphs -------------------------------------------------
def _random_edges(seed: int, n: int, m: int, used: int) -> Edges:
    """Random weighted edges among the first ``used`` of ``n`` vertices (the rest are
    isolated), with self-loops, duplicates and zero weights."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, used, m), rng.integers(0, used, m)
    src[:3], dst[:3] = (5, 7, 7), (5, 9, 9)  # a self-loop and a duplicate
    weight = rng.integers(0, 4, m).astype(float)
    return Edges(n, tuple(src.tolist()), tuple(dst.tolist()), tuple(weight.tolist()))


def _chain_and_stars() -> Edges:
    """A chain 0 -> ... -> 15 with a zero-weight cycle 3 -> 4 -> 3, an out-star from 15
    whose leaves all point into 22 (an in-star), and the isolated vertex 23."""
    arcs = [(i, i + 1, 1.0) for i in range(14)] + [(4, 3, 0.0), (14, 15, 2.0)]
    arcs += [(15, v, float(v % 3)) for v in range(16, 22)]
    arcs += [(v, 22, 1.0) for v in range(16, 22)]
    src, dst, weight = zip(*arcs, strict=True)
    return Edges(24, src, dst, weight)


def grid_edges(rows: int, cols: int, weight=lambda u, v: 1.0, n: int | None = None
               ) -> Edges:
    """A rows x cols 4-neighbour grid, one arc per neighbour pair, built symmetric."""
    arcs = [(r * cols + c, r * cols + c + d) for r in range(rows) for c in range(cols)
            for d in (1, cols) if (d == 1 and c + 1 < cols) or (d == cols and r + 1 < rows)]
    src, dst = zip(*arcs, strict=True)
    return Edges(n or rows * cols, src, dst, tuple(weight(u, v) for u, v in arcs),
                 symmetric=True)


def _chain(n: int) -> Edges:
    return Edges(n, tuple(range(n - 1)), tuple(range(1, n)), (1.0,) * (n - 1))


def side_by_side(*parts: Edges) -> Edges:
    """The disjoint union of graphs, vertex ids shifted; symmetric if the first one is."""
    shift = np.cumsum([0] + [p.n for p in parts])
    return dataclasses.replace(
        parts[0], n=int(shift[-1]),
        src=tuple(u + int(s) for p, s in zip(parts, shift, strict=False) for u in p.src),
        dst=tuple(v + int(s) for p, s in zip(parts, shift, strict=False) for v in p.dst),
        weight=tuple(w for p in parts for w in p.weight))


FIXED = {
    "random": (_random_edges(3, n=24, m=56, used=20), 7),
    "chain_and_stars": (_chain_and_stars(), 0),
    # a 4 x 5 grid with weights 0..2 beside a path
    "grids": (side_by_side(grid_edges(4, 5, lambda u, v: float((u + v) % 3)), _chain(6)), 6),
}


@pytest.mark.parametrize("room", [True, False], ids=["room", "no-room"])
def test_auto_adds_the_weak_history_to_long_propagation_runs_where_it_pays(room, device):
    """CC by label propagation under auto: the strong rule alone for its first dense
    rounds, then the combined predictor with the patient diagram where the backend says the
    weak history pays (the CPU) and the budget holds a state byte a vertex; the strong rule
    alone otherwise. The labels are exact either way."""
    edges = dataclasses.replace(side_by_side(_chain(40), _chain(7)), weight=None,
                                symmetric=True)
    graph = cached_graph(edges, 4)
    result = seraph.connected_components(
        graph, device=device, components="propagation", push_alpha=0.0,
        device_memory=budget(graph, 2, room, "cc", strong=True))
    np.testing.assert_array_equal(result.labels, expected("cc", edges, 0))
    assert result.stats.dense_rounds > LATE_WEAK_DENSE_ROUNDS
    turned_weak = room and device == "cpu"
    assert result.stats.predictor == ("combined" if turned_weak else "strong")
    check_round_log(result.stats)


def _sweep_params():
    for name in FIXED:
        for algorithm in ALGORITHMS:
            for schedule in SCHEDULES:
                # single ignores the predictor (and the push engine): one run covers it
                for predictor in PREDICTORS if schedule != "single" else ("none",):
                    yield pytest.param(name, algorithm, schedule, predictor,
                                       id=f"{name}-{algorithm}-{schedule}-{predictor}")


@pytest.mark.parametrize("name, algorithm, schedule, predictor", list(_sweep_params()))
def test_every_configuration_is_exact(name, algorithm, schedule, predictor, sleepy, device):
    edges, source = FIXED[name]
    if algorithm == "cc":
        edges = dataclasses.replace(edges, weight=None, symmetric=True)
    alphas = ALPHAS if schedule != "single" else (0.0,)
    for page_edges in PAGE_EDGES:
        graph = cached_graph(edges, page_edges)
        assert page_edges != WHOLE or graph.num_pages == 1
        for slots in SLOTS:
            for alpha in alphas:
                cfg = Config(schedule, predictor, page_edges, slots, alpha)
                check_run(algorithm, edges, source, cfg, sleepy, device, graph)


# -- shapes random graphs rarely produce ----------------------------------------------------
def _star(n: int, inward: bool) -> Edges:
    """Vertex 0 joined to every other vertex, edges pointing out of it or into it."""
    leaves, hub = tuple(range(1, n)), (0,) * (n - 1)
    src, dst = (leaves, hub) if inward else (hub, leaves)
    return Edges(n, src, dst, tuple(float(v % 5) for v in leaves))


SHAPES = {
    "single_vertex": (Edges(1, (), (), ()), 0),
    "long_chain": (_chain(150), 0),
    "chain_from_the_middle": (_chain(100), 50),
    "out_star": (_star(50, inward=False), 0),
    "in_star": (_star(50, inward=True), 0),
    "in_star_from_a_leaf": (_star(50, inward=True), 7),
    "grid": (grid_edges(8, 8, lambda u, v: float(u * v % 7)), 27),
    "isolated_source": (dataclasses.replace(_chain(20), n=25), 22),
    "two_chains": (side_by_side(_chain(10), _chain(11)), 12),
}

#: A few configurations that differ in everything; the sweep above crosses them all.
SHAPE_CONFIGS = [
    Config(),
    Config("pipelined", "weak", 2, 2, 0.0),
    Config("reentry", "strong", 4, 3, 20.0),
    Config("single", "none", 2, 2, 0.0),
    Config("pipelined", "sleepy", 1, 3, PUSH_ALL),
    Config("reentry", "none", 16, None, 1e9),
    # 12 slots: four copies in flight, and the window takes every landed page at once
    Config("pipelined", "strong", 1, 12, 20.0),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_shapes(shape, algorithm, sleepy, device):
    edges, source = SHAPES[shape]
    if algorithm == "cc":
        edges = dataclasses.replace(edges, weight=None, symmetric=True)
    for cfg in SHAPE_CONFIGS:
        check_run(algorithm, edges, source, cfg, sleepy, device)


def test_big_pages_and_source_blocks_of_several_vertices(sleepy, device, all_threads):
    """Above 4096 vertices a source block (the unit of page activity) spans several
    vertices; pages of SERIAL_EDGES edges or more are pulled by several threads (on the
    CPU, where the kernels' parallel twins run: the fixture all_threads)."""
    rng = np.random.default_rng(11)
    n, m = 5000, 10000
    src = rng.integers(0, n, m)
    dst = np.clip(src + rng.integers(-60, 61, m), 0, n - 1)  # local edges: many rounds
    edges = Edges(n, tuple(src.tolist()), tuple(dst.tolist()),
                  tuple(rng.integers(0, 5, m).astype(float).tolist()), symmetric=True)
    graph = cached_graph(edges, SERIAL_EDGES)
    assert Layout.plan(graph, False, None).block_shift > 0 and graph.num_pages > 3
    for algorithm in ALGORITHMS:
        for cfg in (Config("pipelined", "strong", SERIAL_EDGES, 2, 0.0),
                    Config("reentry", "sleepy", SERIAL_EDGES, 3, 0.0),
                    Config("single", "none", SERIAL_EDGES, 2, 0.0),
                    Config("pipelined", "weak", SERIAL_EDGES, None, 20.0)):
            check_run(algorithm, edges, 0, cfg, sleepy, device, graph)


def _core_with_a_tail(weight_of_core: float | None) -> Edges:
    """A random core of 3000 vertices whose edges leave from a skewed few, with a chain of
    five vertices hanging off it: after a dense round or two only the tail is unsettled."""
    rng = np.random.default_rng(5)
    n, m = 3000, 24000
    src = np.r_[(rng.pareto(1.2, m) * 20).astype(np.int64) % n, 3, np.arange(n, n + 5)]
    dst = np.r_[rng.integers(0, n, m), n, np.arange(n + 1, n + 6)]
    core = rng.integers(0, 5, m) if weight_of_core is None else np.full(m, weight_of_core)
    weight = np.r_[core, np.ones(6)].astype(float)
    return Edges(n + 6, tuple(src.tolist()), tuple(dst.tolist()), tuple(weight.tolist()),
                 symmetric=True)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_bottom_up_rounds_pull_the_few_unsettled_vertices(algorithm, sleepy, device,
                                                          monkeypatch):
    """When few vertices are left above the strong threshold, the host pulls them instead
    of a dense round (seraph/backends/cpu/bottom_up.py). Under the weak predictor too: it
    stands on the last threshold found while nothing owed an attempt, and it pays every
    debt (design.md, section 8). The test sets the limit (every in-edge), so that the
    rounds do not hang on a backend's own rule."""
    monkeypatch.setattr(backend_class(device), "bottom_up_edge_limit",
                        lambda backend, push_limit, num_edges: num_edges)
    # SSSP's threshold settles the core at once only when its weights are zero.
    edges = _core_with_a_tail(0.0 if algorithm == "sssp" else None)
    if algorithm == "cc":
        edges = dataclasses.replace(edges, weight=None)
    graph = cached_graph(edges, 64)
    weak_pulled = False
    for predictor in ("strong", "none", "weak"):
        for slots in (None, 40):
            cfg = Config("pipelined", predictor, 64, slots, 20.0)
            stats = check_run(algorithm, edges, 0, cfg, sleepy, device, graph).stats
            assert stats.bottom_up_rounds > 0, cfg
            assert stats.bottom_up_rounds <= stats.sparse_rounds
            weak_pulled |= predictor == "weak" and stats.bottom_up_rounds > 0
    assert weak_pulled


@pytest.mark.parametrize("algorithm", ["bfs", "sssp"])
def test_the_cpu_takes_a_bottom_up_rounds_changes_as_listed(algorithm, sleepy, monkeypatch):
    """The changes a CPU bottom-up round hands to the next push are the vertices it lowered,
    as it listed them: the take after it reads no flag (a pass over every vertex), and the
    answer is scipy's."""
    import seraph.backends.cpu.backend as cpu

    monkeypatch.setattr(cpu.CpuBackend, "bottom_up_edge_limit",
                        lambda backend, push_limit, num_edges: num_edges)
    bottom_up, take, flagged = (cpu.CpuBackend.bottom_up, cpu.CpuBackend.take_changed,
                                cpu.flagged_below)
    pending, taken = [], []  # what the last bottom-up round lowered, until the take after it

    def listing_bottom_up(be, *args):
        before = be.values.copy()
        res = bottom_up(be, *args)
        if res is not None:
            pending[:] = [np.flatnonzero(be.values != before)]
        return res

    def take_listed(be, edge_limit):
        out = take(be, edge_limit)
        if pending:
            taken.append((out, pending.pop()))
        return out

    def flags_not_after_bottom_up(*args):
        assert not pending, "the take after a bottom-up round read the flags"
        return flagged(*args)

    monkeypatch.setattr(cpu.CpuBackend, "bottom_up", listing_bottom_up)
    monkeypatch.setattr(cpu.CpuBackend, "take_changed", take_listed)
    monkeypatch.setattr(cpu, "flagged_below", flags_not_after_bottom_up)
    edges = _core_with_a_tail(0.0 if algorithm == "sssp" else None)
    check_run(algorithm, edges, 0, Config("pipelined", "strong", 64, None, 2.0), sleepy,
              "cpu", cached_graph(edges, 64))
    assert any(out is not None and len(out) for out, _ in taken)
    for out, lowered in taken:
        assert out is None or np.array_equal(out, lowered)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("predictor", ["strong", "sleepy"])
def test_a_bottom_up_round_stopped_at_its_limit_leaves_the_rest_to_a_dense_round(
        algorithm, predictor, sleepy, monkeypatch):
    """A CPU bottom-up round that meets its edge limit partway (bottom_up.pull_unsettled)
    keeps what it pulled and is no round: the dense round after it attempts the rest. The
    test makes it stop there: its sample is one vertex, and the limit half of the edges of
    a graph of three blocks of vertices. The answers are scipy's, and the round log
    adds up (check_run)."""
    import seraph.backends.cpu.backend as cpu
    from seraph.backends.cpu import bottom_up

    monkeypatch.setattr(bottom_up, "SAMPLES", 1)
    monkeypatch.setattr(cpu.CpuBackend, "bottom_up_edge_limit",
                        lambda backend, push_limit, num_edges: num_edges / 2)
    pull, stopped = cpu.CpuBackend.bottom_up, []

    def counting(be, *args):
        res = pull(be, *args)
        stopped.append(res is not None and not res.complete)
        return res

    monkeypatch.setattr(cpu.CpuBackend, "bottom_up", counting)
    rng = np.random.default_rng(11)
    n, m = 3 * BLOCK, 6 * BLOCK
    weight = None if algorithm == "cc" else tuple(rng.integers(1, 4, m).astype(float))
    edges = Edges(n, tuple(rng.integers(0, n, m)), tuple(rng.integers(0, n, m)), weight,
                  symmetric=algorithm == "cc")
    check_run(algorithm, edges, 0, Config("pipelined", predictor, 4096, None, 8.0), sleepy,
              "cpu", cached_graph(edges, 4096))
    assert any(stopped)


def test_a_dense_round_takes_what_a_bottom_up_round_changed(monkeypatch, device):
    """Found by a random search: a bottom-up round lowers vertices (19, level 3) whose
    out-edges are too many to push, so the dense round after it must take them to vertex
    13 (level 4), which comes before 19 in the bottom-up round's order. The test sets the
    rounds: the first chance of a bottom-up round is taken (no edge limit) and no later
    one, so a dense round follows it on every backend and card."""
    from seraph.rounds import SparseRounds

    monkeypatch.setattr(backend_class(device), "bottom_up_edge_limit",
                        lambda backend, push_limit, num_edges: float("inf"))
    pull_once = SparseRounds.bottom_up
    monkeypatch.setattr(SparseRounds, "bottom_up",
                        lambda rounds: not rounds.run.stats.bottom_up_rounds
                        and pull_once(rounds))
    arcs = [(20, 15), (16, 5), (12, 15), (7, 18), (8, 10), (17, 14), (1, 0), (18, 20), (4, 4),
            (9, 8), (20, 4), (20, 19), (20, 18), (13, 3), (0, 9), (10, 0), (1, 16), (3, 18),
            (14, 19), (19, 13), (4, 8), (15, 20), (13, 19), (13, 20), (4, 14), (19, 11),
            (8, 12), (10, 7), (6, 9), (17, 8), (5, 9), (5, 0), (16, 6), (20, 0), (6, 5),
            (7, 10), (19, 10), (0, 3), (3, 8), (9, 7), (18, 5), (0, 16), (3, 1), (1, 0),
            (6, 20), (3, 12), (20, 12), (10, 11), (0, 7), (1, 6), (17, 17), (14, 7), (3, 10),
            (20, 18), (10, 17), (16, 5), (20, 3), (9, 20), (2, 3), (19, 10), (7, 4), (10, 16),
            (10, 18), (8, 14), (13, 16), (11, 10), (7, 6), (6, 0), (5, 19), (0, 11), (19, 18),
            (13, 7), (0, 8), (0, 6), (20, 12), (20, 7), (3, 20), (19, 8), (4, 14), (19, 6)]
    src, dst = zip(*arcs, strict=True)
    edges = Edges(21, src, dst)
    stats = check_run("bfs", edges, 0, Config("pipelined", "strong", 1, None, 8.0), Path(),
                      device).stats
    kinds = [entry["kind"] for entry in stats.round_log]
    assert kinds[kinds.index("bottom-up") + 1] == "dense", kinds


def test_pipelined_steps_that_take_several_landed_pages(monkeypatch, sleepy):
    """A copy engine faster than the host: every copy in flight has landed when a step
    ends, so each step takes a batch of up to four pages into the window (on the CPU
    backend copies rarely land together on their own)."""
    from seraph.backends.cpu.backend import CpuBackend

    def landed(self, slot: int) -> bool:
        copy = self._copies.get(slot)
        if copy is not None:
            copy.result()
        return True

    monkeypatch.setattr(CpuBackend, "landed", landed)
    for shape in ("long_chain", "grid", "in_star"):
        edges, source = SHAPES[shape]
        for algorithm in ALGORITHMS:
            shaped = edges if algorithm != "cc" else \
                dataclasses.replace(edges, weight=None, symmetric=True)
            for predictor in ("strong", "sleepy"):
                cfg = Config("pipelined", predictor, 1, 12, 0.0)
                stats = check_run(algorithm, shaped, source, cfg, sleepy, "cpu").stats
                assert not stats.resident and stats.num_slots == 12


def test_subnormal_weights_keep_their_bits(sleepy, device):
    """Weights and distances below float32's normal range are kept, not flushed to zero:
    CuPy compiles the CUDA kernels with -ftz=true, so they add and compare values by PTX
    without it (values.cuh, add_value). A Hypothesis example found a weight of 1e-45 whose
    distance the device gave as 0. Sums of a few smallest subnormals are exact, so
    scipy's float64 answer is the float32 one, bit for bit."""
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    rng = np.random.default_rng(5)
    n, m = 200, 900
    edges = Edges(n, tuple(int(u) for u in rng.integers(0, n, m)),
                  tuple(int(v) for v in rng.integers(0, n, m)),
                  tuple(float(k) * tiny for k in rng.integers(0, 4, m)))
    want = expected("sssp", edges, 0).astype(np.float32)
    assert (want[np.isfinite(want)] > 0).sum() > n // 2  # subnormal distances, mostly
    # Resident and paged, window sweeps, pushes and bottom-up rounds, and the strong
    # rule's lightest in-edge bound, whose unit is subnormal here.
    for cfg in (Config("pipelined", "strong", 16), Config("pipelined", "strong", 16, 3),
                Config("pipelined", "sleepy", 64, 3), Config("single", "none", 16, 2),
                Config("pipelined", "none", 16, 3, 0.0), Config("reentry", "strong", WHOLE)):
        graph = edges.graph(cfg.page_edges)
        got = solve("sssp", graph, 0, cfg.options(graph, sleepy, device, "sssp")).distances
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32),
                                      err_msg=str(cfg))


# -- predecessors -------------------------------------------------------------------------
def check_predecessors(algorithm: str, edges: Edges, source: int, result) -> None:
    """Every reached vertex's predecessor is a tight in-edge, and following predecessors
    reaches the source; the source and unreached vertices have -1."""
    values = result.levels if algorithm == "bfs" else result.distances
    reached = values >= 0 if algorithm == "bfs" else np.isfinite(values)
    pred, arcs = result.predecessors, edges.arcs()
    assert pred[source] == -1
    assert (pred[~reached] == -1).all()
    for v in np.flatnonzero(reached):
        if v == source:
            continue
        u = int(pred[v])
        assert (u, v) in arcs, f"{u} -> {v} is not an edge"
        if algorithm == "bfs":
            assert values[u] + 1 == values[v]
        else:
            assert np.float32(values[u]) + np.float32(arcs[u, v]) == values[v]
    for v in np.flatnonzero(reached):
        steps = 0
        while v != source:
            v, steps = pred[v], steps + 1
            assert steps <= edges.n, "the predecessors form a cycle"


@HYPOTHESIS
@given(case=inputs(weighted=True), cfg=configs, algorithm=st.sampled_from(["bfs", "sssp"]))
def test_predecessors_are_tight_and_lead_to_the_source(case, cfg, algorithm, sleepy, device):
    edges, source = case
    graph = edges.graph(cfg.page_edges)
    result = solve(algorithm, graph, source, cfg.options(graph, sleepy, device, algorithm),
                   predecessors=True)
    check_predecessors(algorithm, edges, source, result)


def test_predecessors_with_zero_weight_cycles(device):
    # 0 -> 1 -> 2 -> 0 and 2 -> 3 -> 1 are zero-weight cycles through the source 1.
    edges = Edges(6, (0, 1, 2, 2, 3, 3), (1, 2, 0, 3, 1, 4), (0.0, 0.0, 0.0, 0.0, 0.0, 2.0))
    for page_edges in (1, 4):
        result = solve("sssp", edges.graph(page_edges), 1, {"device": device},
                       predecessors=True)
        np.testing.assert_array_equal(result.distances, [0, 0, 0, 0, 2, np.inf])
        check_predecessors("sssp", edges, 1, result)


def test_results_speak_the_input_ids_of_a_relabelled_graph(device):
    """Sparse input ids are numbered 0..n-1 inside; sources, predecessors and labels are
    input ids, and position i of a result is vertex ``vertex_ids[i]``."""
    src, dst = np.array([10, 10**6, 5, 77]), np.array([10**6, 5, 10, 99])
    graph = Graph.from_edges(src, dst, np.array([1, 2, 3, 4], np.float32))
    np.testing.assert_array_equal(graph.vertex_ids, [5, 10, 77, 99, 10**6])
    bfs = seraph.bfs(graph, 10**6, device=device, predecessors=True)
    np.testing.assert_array_equal(bfs.levels, [1, 2, -1, -1, 0])
    np.testing.assert_array_equal(bfs.predecessors, [10**6, 5, -1, -1, -1])
    sssp = seraph.sssp(graph, 10, device=device, predecessors=True)
    np.testing.assert_array_equal(sssp.distances, [3, 0, np.inf, np.inf, 1])
    np.testing.assert_array_equal(sssp.predecessors, [10**6, -1, -1, -1, 10])
    cc = seraph.connected_components(Graph.from_edges(src, dst, symmetrize=True),
                                     device=device)
    np.testing.assert_array_equal(cc.labels, [5, 5, 77, 77, 5])
    assert cc.num_components == 2


# -- what the stats promise -------------------------------------------------------------------
def test_a_two_slot_budget_pages_and_no_budget_does_not(device):
    edges, source = FIXED["random"]
    graph = cached_graph(edges, 4)
    paged = seraph.bfs(graph, source, device=device, push_alpha=0,
                       device_memory=budget(graph, 2, False, "bfs")).stats
    assert (paged.num_slots, paged.resident) == (2, False)
    assert paged.pages_transferred > graph.num_pages  # more than one pass
    assert paged.bytes_h2d > 0
    check_resident(seraph.bfs(graph, source, device=device, push_alpha=0).stats, graph, device)


def test_the_strong_predictor_skips_converged_vertices_on_a_chain(device):
    # Every chain vertex also points back to vertex 1, so vertex 1 is pulled whenever the
    # chain advances, long after round 1 proved its level final.
    chain = _chain(100)
    edges = dataclasses.replace(chain, src=chain.src + tuple(range(2, 100)),
                                dst=chain.dst + (1,) * 98, weight=None)
    graph = edges.graph(4)
    stats = seraph.bfs(graph, 0, device=device, predictor="strong", push_alpha=0).stats
    assert stats.skipped_strong > 0
    assert seraph.bfs(graph, 0, device=device, predictor="none",
                      push_alpha=0).stats.skipped_strong == 0


def test_push_alpha_zero_disables_the_push_engine(device):
    graph = _chain(50).graph(4)
    assert seraph.bfs(graph, 0, device=device, push_alpha=0).stats.edges_pushed == 0
    pushed = seraph.bfs(graph, 0, device=device, push_alpha=PUSH_ALL).stats
    assert pushed.edges_pushed == 49 and pushed.sweeps == 0


@pytest.mark.parametrize("slots", [None, 2])
def test_a_sleepy_diagram_skips_and_the_final_recheck_catches_up(slots, sleepy, device):
    edges, source = FIXED["grids"]
    stats = check_run("sssp", edges, source, Config("pipelined", "sleepy", 4, slots, 0.0),
                      sleepy, device).stats
    assert stats.skipped_weak > 0 and stats.rechecks > 0


def test_only_weighted_operators_move_weights(device):
    """BFS and CC never read weights, so their slots and copies hold indices alone."""
    rng = np.random.default_rng(7)
    graph = seraph.Graph.from_edges(rng.integers(0, 300, 3000), rng.integers(0, 300, 3000),
                                    rng.integers(1, 9, 3000).astype(np.float32),
                                    num_vertices=300, symmetrize=True, page_edges=64)
    moved = {}
    for algorithm in ("bfs", "cc", "sssp", "sswp"):
        stats = solve(algorithm, graph, 0, dict(device=device, push_alpha=0, predictor="strong",
                                                components="propagation",
                                                device_memory=budget(graph, 3, False,
                                                                     algorithm, True))).stats
        assert (stats.num_slots, stats.resident) == (3, False)
        moved[algorithm] = stats.bytes_h2d / stats.pages_transferred / graph.page_edges
    assert moved["bfs"] <= 4 and moved["cc"] <= 4
    assert 6 < moved["sssp"] <= 8 and 6 < moved["sswp"] <= 8


@pytest.mark.parametrize("predictor", ["strong", "weak"])
def test_the_single_schedule_never_skips(predictor, device):
    graph = _chain(50).graph(2)
    stats = seraph.sssp(graph, 0, device=device, schedule="single", predictor=predictor,
                        device_memory=budget(graph, 2, False, "sssp")).stats
    assert stats.skipped_strong == stats.skipped_weak == 0
    assert stats.predictor == "none" and stats.pages_transferred > 0


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), num_blocks=st.integers(1, 200),
       page_edges=st.integers(1, 40))
def test_activity_summary_matches_its_definition(seed, num_blocks, page_edges):
    """A page is active exactly when a block one of its edges reads from changed at or after
    the epoch of its last sweep (checked edge by edge, with never-changed blocks at -1 and
    pages forced active at -1)."""
    rng = np.random.default_rng(seed)
    block_shift = int(rng.integers(0, 3))
    indices = rng.integers(0, num_blocks << block_shift, int(rng.integers(0, 400)))
    num_pages = max(1, -(-len(indices) // page_edges))
    bits = page_source_blocks(indices, page_edges, num_pages, block_shift, num_blocks)
    block_epoch = rng.integers(-1, 6, num_blocks)
    processed = rng.integers(-1, 7, num_pages)
    pages = rng.permutation(num_pages)[:int(rng.integers(0, num_pages + 1))]
    want = [any(block_epoch[u >> block_shift] >= processed[p]
                for u in indices[p * page_edges:(p + 1) * page_edges]) for p in pages]
    got = pages_active(pages.astype(np.int64), bits, block_epoch, processed)
    assert got.tolist() == want


@pytest.mark.parametrize("alpha", [0.0, 20.0, 1000.0])
@pytest.mark.parametrize("predictor", ["strong", "weak", "none"])
def test_paged_cc_labels_the_hubs_component_first(monkeypatch, device, alpha, predictor):
    """Paged CC reaches the highest out-degree vertex's component first, then labels the
    rest (seraph.algorithms.cc.components_from_hub); resident and single-schedule CC do
    not. The hub's component (a star on 50 with a tail) has larger ids than a long chain, a
    self-loop, a duplicated edge and isolated vertices, and its smallest id is a leaf."""
    calls = []
    original = cc.components_from_hub
    monkeypatch.setattr(cc, "components_from_hub",
                        lambda run, hub: (calls.append(hub), original(run, hub))[1])
    star = [(50, v) for v in (*range(40, 50), *range(51, 60))] + [(59, 70), (70, 71)]
    chain = [(v, v + 1) for v in range(12)]
    extra = [(20, 20), (21, 22), (21, 22), (30, 31)]
    src, dst = np.array(star + chain + extra).T
    graph = Graph.from_edges(src, dst, num_vertices=80, symmetrize=True, page_edges=4)
    want = expected("cc", Edges(80, tuple(src.tolist()), tuple(dst.tolist()),
                                symmetric=True), 0)
    weak = predictor == "weak"
    for schedule, memory, seeded in (("pipelined", budget(graph, 3, weak, "cc"), True),
                                     ("reentry", budget(graph, 2, weak, "cc"), True),
                                     ("pipelined", None, False),
                                     ("single", budget(graph, 2, weak, "cc"), False)):
        calls.clear()
        res = seraph.connected_components(graph, device=device, schedule=schedule,
                                          device_memory=memory, push_alpha=alpha,
                                          predictor=predictor, components="propagation")
        np.testing.assert_array_equal(res.labels, want)
        assert res.num_components == len(np.unique(want))
        assert calls == ([50] if seeded else [])
