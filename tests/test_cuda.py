"""The CUDA backend gives the CPU backend's answers bit for bit (runs only with a GPU).

The rest of the suite runs on the CUDA backend too, through the ``device`` fixture of
conftest.py: answers against scipy, stats, paging, budgets and errors. This file holds the
direct comparisons of the two backends."""

from __future__ import annotations

import numpy as np
import pytest

import seraph
from seraph import hubs
from seraph.api import cuda_status
from seraph.backends.layout import Layout
from seraph.operators import DISTANCE, operator

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not cuda_status()[0], reason="no usable GPU: "
                                 + cuda_status()[1])]


def random_graph(seed: int, n: int, m: int, page_edges: int) -> seraph.Graph:
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    weights = rng.integers(0, 40, m).astype(np.float32)  # zeros included
    return seraph.Graph.from_edges(src, dst, weights, num_vertices=n, symmetrize=True,
                                   page_edges=page_edges)


def budgets(graph: seraph.Graph, predictor: str) -> list[int | None]:
    # Room for the weak states and for SSSP's lightest in-edge bytes, as each predictor needs.
    layout = Layout.plan(graph, predictor in ("weak", "combined"), None,
                         lightest=predictor != "weak")
    return [None, layout.state_bytes + 2 * layout.slot_bytes,
            layout.state_bytes + 3 * layout.slot_bytes]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("page_edges", [16, 256, 1 << 16])
@pytest.mark.parametrize("schedule", ["pipelined", "reentry", "single"])
@pytest.mark.parametrize("predictor", ["none", "strong", "weak", "combined"])
def test_cuda_matches_cpu(monkeypatch, seed, page_edges, schedule, predictor):
    if seed % 2:
        # Hubs of a few in-edges, so that the hub chunks (seraph/hubs.py) are pulled
        # under every page size, schedule and predictor: many vertices have more than 8.
        monkeypatch.setattr(hubs, "HUB_EDGES", 8)
        monkeypatch.setattr(hubs, "CHUNK_EDGES", 3)
    graph = random_graph(seed, n=300 + 50 * seed, m=1500, page_edges=page_edges)
    hub = int(np.argmax(graph.out_degrees()))
    for budget in budgets(graph, predictor):
        for alpha in (0.0, 20.0):
            opts = dict(schedule=schedule, predictor=predictor, device_memory=budget,
                        push_alpha=alpha)
            cpu = [seraph.bfs(graph, hub, device="cpu", **opts).levels,
                   seraph.connected_components(graph, device="cpu", **opts).labels,
                   seraph.sssp(graph, hub, device="cpu", **opts).distances]
            cuda = [seraph.bfs(graph, hub, device="cuda", **opts),
                    seraph.connected_components(graph, device="cuda", **opts),
                    seraph.sssp(graph, hub, device="cuda", **opts)]
            for want, res in zip(cpu, cuda, strict=True):
                got = getattr(res, "levels", getattr(res, "labels", None))
                got = res.distances if got is None else got
                assert res.stats.device == "cuda"
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("predictor", ["strong", "weak"])
def test_push_rounds_on_the_device(symmetric, predictor):
    """Push rounds over frontiers of thousands of vertices (many blocks of offsets, a hub
    of thousands of out-edges) and over more than the device's lists hold (a BFS level
    larger than frontier_capacity: that round goes to a dense one), reading a symmetric
    graph's CSC or a directed graph's own CSR: every answer is the CPU's, pushing on the
    device or on the host. (test_cuda_matches_cpu pushes on the device, the default.)"""
    from partitioner.generators import gap_weights, rmat
    from seraph.backends.layout import frontier_capacity

    chunk = next(iter(rmat(18, 4, seed=5, weights=gap_weights()).chunks()))
    graph = seraph.Graph.from_edges(chunk.src, chunk.dst, chunk.weight, 1 << 18,
                                    symmetrize=symmetric, page_edges=8192)
    degrees = graph.out_degrees()
    hub, light = int(np.argmax(degrees)), int(np.flatnonzero(degrees == 1)[0])
    levels = seraph.bfs(graph, hub, device="cpu").levels
    assert np.bincount(levels[levels >= 0]).max() > frontier_capacity(graph.num_vertices)
    layout = Layout.plan(graph, predictor == "weak", None, lightest=predictor == "strong")
    for budget in (None, layout.state_bytes + 4 * 2 * layout.slot_bytes):
        for alpha in (1.0, 20.0):
            opts = dict(device_memory=budget, predictor=predictor, push_alpha=alpha)
            for call, field in ((lambda **o: seraph.bfs(graph, hub, **o), "levels"),
                                (lambda **o: seraph.sssp(graph, hub, **o), "distances"),
                                (lambda **o: seraph.sssp(graph, light, **o), "distances")):
                want = getattr(call(device="cpu", **opts), field)
                for push_on in ("device", "host"):
                    res = call(device="cuda", push_on=push_on, **opts)
                    np.testing.assert_array_equal(getattr(res, field), want)
                    assert res.stats.edges_pushed > 0
            if symmetric:
                want = seraph.connected_components(graph, device="cpu", **opts).labels
                for push_on in ("device", "host"):
                    got = seraph.connected_components(graph, device="cuda", push_on=push_on,
                                                      **opts).labels
                    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("blocks", [None, 2])
def test_bounded_degree_rounds_on_the_device(monkeypatch, blocks):
    """A graph whose out-degrees are all small (a grid with a tenth of its edges removed,
    its ids shuffled) pushes in rounds that balance edges within each block of the device
    (kernels/push.cu, relax_local): over the device's whole grid of blocks, and over two
    blocks, whose chunks of a frontier then span many tiles. BFS and SSSP (near-far,
    whose rounds lower vertices of their own list) from several sources, resident and
    paged, give the CPU's answers."""
    from partitioner.generators import gap_weights, grid
    from seraph.backends.caches import graph_max_out_degree
    from seraph.backends.cuda import backend as cuda_backend

    if blocks:
        monkeypatch.setattr(cuda_backend, "MAX_PUSH_BLOCKS", blocks)
    chunks = list(grid(150, 150, remove_fraction=0.1, seed=1, weights=gap_weights()).chunks())
    ids = np.random.default_rng(2).permutation(150 * 150)
    src, dst, weight = (np.concatenate([getattr(c, f) for c in chunks])
                        for f in ("src", "dst", "weight"))
    graph = seraph.Graph.from_edges(ids[src], ids[dst], weight, num_vertices=150 * 150,
                                    symmetrize=True, page_edges=4096)
    assert graph_max_out_degree(graph) <= 32  # relax_local's bound (LOCAL_MAX_DEGREE)
    layout = Layout.plan(graph, False, None, weights=True, lightest=True)
    sources = np.random.default_rng(3).choice(np.flatnonzero(graph.out_degrees()), 3)
    for budget in (None, layout.state_bytes + 2 * layout.slot_bytes):
        for source in sources.tolist():
            for call, field in ((seraph.bfs, "levels"), (seraph.sssp, "distances")):
                want = getattr(call(graph, source, device="cpu"), field)
                res = call(graph, source, device="cuda", device_memory=budget)
                np.testing.assert_array_equal(getattr(res, field), want)
                assert res.stats.edges_pushed > 0



def test_a_path_keeps_its_frontier_through_every_round_on_the_device():
    """A path of 2^19 vertices is as many push rounds of a vertex or two, with no grid
    sync in a round but the one at its end (relax_local): a block that starts a round
    early appends to a list whose count another block has not read yet, so a list's count
    must never be reset under it. Every round, from both ends, reaches the far end."""
    n = 1 << 19
    src = np.arange(n - 1)
    graph = seraph.Graph.from_edges(src, src + 1, np.ones(n - 1, np.float32), num_vertices=n,
                                    symmetrize=True, page_edges=1 << 16)
    for source in (0, n - 1):
        want = np.abs(np.arange(n) - source)
        res = seraph.bfs(graph, source, device="cuda")
        np.testing.assert_array_equal(res.levels, want, err_msg=f"rounds {res.stats.rounds}")
        np.testing.assert_array_equal(seraph.sssp(graph, source, device="cuda").distances,
                                      want.astype(np.float32))

@pytest.mark.parametrize("capacity", [None, 4])
def test_hub_first_cc_labels_on_the_device(monkeypatch, capacity):
    """After paged CC's reach from the hub, the labels are made on the device (reach.cu):
    the vertices left to spread are the CPU's, or None (every vertex) when they outgrow
    the device's push lists; the answers are the CPU's either way. The hub's component
    (a star on 150) has a leaf as its smallest id, after 40 two-vertex components and
    isolated vertices."""
    from seraph.backends.cuda import backend as cuda

    if capacity:
        monkeypatch.setattr(cuda, "frontier_capacity", lambda n: capacity)
    spread = []
    original = cuda.CudaBackend.label_unreached
    monkeypatch.setattr(cuda.CudaBackend, "label_unreached",
                        lambda backend: (spread.append(original(backend)), spread[-1])[1])
    star = [(150, v) for v in range(101, 200) if v != 150]
    pairs = [(2 * k, 2 * k + 1) for k in range(40)]
    src, dst = np.array(star + pairs).T
    graph = seraph.Graph.from_edges(src, dst, num_vertices=200, symmetrize=True,
                                    page_edges=16)
    memory = budgets(graph, "strong")[1]
    want = seraph.connected_components(graph, device="cpu", device_memory=memory).labels
    assert want[150] == 101 and want[1] == 0
    for alpha in (0.0, 20.0):
        spread.clear()
        got = seraph.connected_components(graph, device="cuda", device_memory=memory,
                                          push_alpha=alpha, components="propagation").labels
        np.testing.assert_array_equal(got, want)
        assert len(spread) == 1
        if capacity:
            assert spread[0] is None
        else:
            np.testing.assert_array_equal(spread[0], np.arange(80))


@pytest.mark.parametrize("schedule", ["pipelined", "reentry"])
def test_persistent_kernel_resweeps_windows_on_the_device(schedule):
    """A chain needs many sweeps per window: the cooperative kernel runs several passes in
    one launch, giving the CPU's answer. Under reentry every window is swept until it stops
    changing (reentries counted, trace events with several passes); under pipelined only
    while a copy is in flight, which on this tiny graph may never last a pass."""
    from seraph.backends.cuda.backend import _co_resident_blocks, _kernel

    n = 4000
    src = np.arange(n - 1)
    graph = seraph.Graph.from_edges(src, src + 1, np.ones(n - 1, np.float32), num_vertices=n,
                                    symmetrize=True, page_edges=256)
    persistent = _kernel("pull_persistent", operator(DISTANCE), cooperative=True)
    assert _co_resident_blocks(persistent.function) > 0
    layout = Layout.plan(graph, False, None)
    opts = dict(push_alpha=0, predictor="none", schedule=schedule,
                device_memory=layout.state_bytes + 5 * layout.slot_bytes)
    want = seraph.sssp(graph, 0, device="cpu", **opts).distances
    got = seraph.sssp(graph, 0, device="cuda", trace=True, **opts)
    np.testing.assert_array_equal(got.distances, want)
    assert not got.stats.resident
    if schedule == "reentry":
        assert got.stats.reentries > 0
        assert any(e.get("sweeps", 1) > 1 for e in got.trace.events
                   if e["kind"] == "compute")


def test_graph_stays_on_the_device_between_runs():
    """The second resident run on a graph uploads no page; a paged run frees the resident
    pages for its slots; after release_device_memory the pages go up again. Every answer
    is the CPU's."""
    graph = random_graph(7, n=2000, m=20000, page_edges=1024)
    want = seraph.sssp(graph, 0, device="cpu").distances
    layout = Layout.plan(graph, True, None)
    paged = layout.state_bytes + 3 * layout.slot_bytes
    uploads = []
    for budget in (None, None, paged, None, "release", None):
        if budget == "release":
            graph.release_device_memory()
            assert "device" not in graph._engine_cache
            continue
        res = seraph.sssp(graph, 0, device="cuda", device_memory=budget)
        np.testing.assert_array_equal(res.distances, want)
        uploads.append(res.stats.bytes_h2d if res.stats.resident else None)
    page_bytes = graph.num_edges * 8
    assert uploads == [page_bytes, 0, None, page_bytes, page_bytes]
    # BFS reads only the indices, which the SSSP runs left on the device.
    assert seraph.bfs(graph, 0, device="cuda").stats.bytes_h2d == 0


def test_a_push_loop_stopped_with_no_signal_raises_not_answers(monkeypatch):
    """The push loop ends its phase early once the host's stop word is set, which only a
    signal should do: with the word set and no signal, the call fails rather than give the
    phase's partial levels as the answer."""
    from seraph.backends.cuda.backend import CudaBackend

    n = 500
    path = seraph.Graph.from_edges(np.arange(n - 1), np.arange(1, n), num_vertices=n,
                                   symmetrize=True, page_edges=256)
    push = CudaBackend.push

    def push_with_the_word_set(self, *args):
        self._live[0] = 1
        return push(self, *args)

    monkeypatch.setattr(CudaBackend, "push", push_with_the_word_set)
    with pytest.raises(RuntimeError, match="stop word"):
        seraph.bfs(path, 0, device="cuda", push_alpha=20.0)


@pytest.mark.parametrize("light_lanes", [1, 4, 8, 32])
@pytest.mark.parametrize("page_edges", [512, 1 << 16])
@pytest.mark.parametrize("hub_edges", [hubs.HUB_EDGES, 100])
def test_group_widths_and_warp_pulled_hubs(monkeypatch, light_lanes, page_edges, hub_edges):
    """A power-law graph (R-MAT, hubs of hundreds of in-edges) under every lane-group
    width of the dense sweeps, with hubs both whole in a page and split across pages:
    the light vertices go to groups, the heavy ones to whole warps, and every answer is
    the CPU's. With hub_edges 100, the hubs' in-edges go to chunks of
    24 (seraph/hubs.py), a warp each."""
    from partitioner.generators import gap_weights, rmat
    from seraph.backends.cuda.backend import CudaBackend

    chunk = next(iter(rmat(11, 16, seed=3, weights=gap_weights()).chunks()))
    graph = seraph.Graph.from_edges(chunk.src, chunk.dst, chunk.weight, 1 << 11,
                                    symmetrize=True, page_edges=page_edges)
    assert int(graph.in_degrees().max()) > 4 * CudaBackend.heavy_edges
    monkeypatch.setattr(CudaBackend, "light_lanes", light_lanes)
    monkeypatch.setattr(hubs, "HUB_EDGES", hub_edges)
    monkeypatch.setattr(hubs, "CHUNK_EDGES", 24)
    hub = int(np.argmax(graph.out_degrees()))
    layout = Layout.plan(graph, True, None)
    for budget in (None, layout.state_bytes + 4 * layout.slot_bytes):
        for predictor in ("strong", "weak"):
            opts = dict(device_memory=budget, predictor=predictor, push_alpha=0)
            for call, field in ((lambda **o: seraph.bfs(graph, hub, **o), "levels"),
                                (lambda **o: seraph.connected_components(graph, **o), "labels"),
                                (lambda **o: seraph.sssp(graph, hub, **o), "distances")):
                want = getattr(call(device="cpu", **opts), field)
                np.testing.assert_array_equal(getattr(call(device="cuda", **opts), field), want)


@pytest.mark.parametrize("light_lanes", [1, 8, 32])
@pytest.mark.parametrize("page_edges", [512, 1 << 16])
@pytest.mark.parametrize("hub_edges", [hubs.HUB_EDGES, 100])
def test_pagerank_delta_sums_hubs_and_split_vertices_on_the_device(monkeypatch, light_lanes,
                                                                   page_edges, hub_edges):
    """PageRank-delta on a directed R-MAT (dangling vertices, hubs of hundreds of
    in-edges) under every lane-group width, with vertices split across pages and, with
    hub_edges 100, hubs summed by chunks of 24, whose partial sums meet in atomics: the
    answer is within the bound of the reference, resident and paged, with and without the
    weak predictor, and the sweeps count the edges they read."""
    from partitioner.generators import rmat
    from seraph.algorithms import pagerank
    from seraph.backends.cuda.backend import CudaBackend

    chunk = next(iter(rmat(11, 16, seed=3).chunks()))
    graph = seraph.Graph.from_edges(chunk.src, chunk.dst, num_vertices=1 << 11,
                                    page_edges=page_edges)
    monkeypatch.setattr(CudaBackend, "light_lanes", light_lanes)
    monkeypatch.setattr(hubs, "HUB_EDGES", hub_edges)
    monkeypatch.setattr(hubs, "CHUNK_EDGES", 24)
    want = pagerank.reference(graph)
    for predictor in ("none", "weak"):
        layout = Layout.for_run(graph, pagerank.DELTA, predictor, None)
        for budget in (None, layout.state_bytes + 4 * layout.slot_bytes):
            for personalization in (None, 5):
                # Rounds enough for a slow convergence: this test is about the sums.
                res = seraph.pagerank(graph, method="delta", predictor=predictor,
                                      personalization=personalization, device="cuda",
                                      device_memory=budget, max_iterations=2000)
                s = res.stats
                assert res.converged and s.device == "cuda"
                assert s.edges_read <= s.edges_swept
                assert (s.edges_read == s.edges_swept) == (s.skipped_weak == 0)
                assert pagerank.verify(graph, res.ranks, personalization=personalization) \
                    is None
                if personalization is None:
                    assert np.abs(res.ranks - want).sum() <= pagerank.l1_bound(0.85, 1e-6)


@pytest.mark.parametrize("offset", [0, 1, 3, 6, 13, 31])
def test_bottom_up_tiles_read_rows_at_any_alignment(monkeypatch, offset):
    """Bottom-up rounds read the host's CSC in place, 32 edges at a time in chunks aligned
    in memory (kernels/pull.cu, pull_tiles). Rows of every length (none, one, within a
    chunk, across several, hubs cut into chunks) and arrays starting anywhere give the
    CPU's answers, in rounds that pull every open vertex (the edge limit lifted). Pushes
    hand over after a round (a push limit below one edge), so that the rounds after are
    dense or bottom-up; CC by propagation, which has such rounds."""
    from partitioner.generators import gap_weights, rmat
    from seraph.backends.cuda import backend as cuda_backend

    chunk = next(iter(rmat(10, 16, seed=offset, weights=gap_weights()).chunks()))
    # Vertices past R-MAT's 1,024 have no edges: whole tiles of empty rows.
    graph = seraph.Graph.from_edges(chunk.src, chunk.dst, chunk.weight, 1100,
                                    symmetrize=True, page_edges=256)
    for name in ("csc/indices", "csc/weights"):
        whole = graph.array(name)
        moved = np.empty(len(whole) + 32, dtype=whole.dtype)[offset:offset + len(whole)]
        moved[:] = whole
        graph._arrays[name] = moved
    degrees = graph.in_degrees()
    assert degrees.max() > 150 and (degrees == 0).any() and (degrees == 1).any()
    monkeypatch.setattr(hubs, "HUB_EDGES", 150)
    monkeypatch.setattr(hubs, "CHUNK_EDGES", 24)
    monkeypatch.setattr(cuda_backend, "BOTTOM_UP_SHARE", 1.0)
    hub = int(np.argmax(graph.out_degrees()))
    for budget in budgets(graph, "strong"):
        opts = dict(device_memory=budget, predictor="strong", push_alpha=1e9)
        for call, field in ((lambda **o: seraph.bfs(graph, hub, **o), "levels"),
                            (lambda **o: seraph.connected_components(
                                graph, components="propagation", **o), "labels"),
                            (lambda **o: seraph.sssp(graph, hub, **o), "distances")):
            want = getattr(call(device="cpu", **opts), field)
            got = call(device="cuda", **opts)
            assert got.stats.bottom_up_rounds > 0, (budget, field)
            np.testing.assert_array_equal(getattr(got, field), want)


@pytest.mark.parametrize("n", [0, 1, 31, 1000, 1 << 20])
def test_weak_state_counts_on_the_device(n):
    """The weak predictor's per-round state counts (Figure 10's) are a histogram of the
    state bytes' low bits, the owed bit ignored: warps of mixed and equal states, a block's
    partial last warp, and more vertices than the grid has threads."""
    import cupy as cp

    from seraph.backends.cuda.backend import _kernel
    from seraph.predictors import STATE_MASK

    num_states = 17
    rng = np.random.default_rng(n)
    states = rng.integers(0, num_states, n).astype(np.uint8)
    states[: n // 2] = 3  # whole warps of one state
    states |= rng.integers(0, 2, n).astype(np.uint8) << 7  # the owed bit
    counts = cp.zeros(num_states, dtype=cp.uint64)
    _kernel("count_states")(64, states=cp.asarray(states), n=n, num_states=num_states,
                            counts=counts)
    np.testing.assert_array_equal(counts.get(),
                                  np.bincount(states & STATE_MASK, minlength=num_states))


@pytest.mark.parametrize("vertex", [None, 7])
@pytest.mark.parametrize("share", [np.float32, np.float64])
@pytest.mark.parametrize("n", [31, 100_003])
def test_the_walk_step_on_the_device_is_the_whole_vector_one(vertex, share, n):
    """The CUDA backend's walk step (kernels/gather.cu, a block's change each) against the
    whole-vector steps over numpy (Backend.walk_step), with more vertices than the grid
    has threads and with a block's partial last warp."""
    from types import SimpleNamespace

    import cupy as cp

    from seraph.backends.base import Backend
    from seraph.backends.cuda.backend import CudaBackend
    from seraph.operators import SHARE
    from seraph.spec import ACCUMULATOR, OPERAND, SCALE

    rng = np.random.default_rng(n)
    values = rng.random(n)
    values /= values.sum()
    scale = np.where(rng.random(n) < 0.1, 0.0, 1 / rng.integers(1, 20, n))
    sums = rng.random(n)
    sums *= 0.9 / sums.sum()  # what the shares carried: the rest is lost, and restarts
    host = {"values": values.copy(), ACCUMULATOR: sums.copy(), SCALE: scale,
            OPERAND: np.zeros(n, dtype=share)}
    want = Backend.walk_step(SimpleNamespace(xp=np, vector=host.__getitem__), 0.85, 0.15,
                             vertex)
    device = {"values": cp.asarray(values), ACCUMULATOR: cp.asarray(sums),
              SCALE: cp.asarray(scale), OPERAND: cp.zeros(n, dtype=share)}
    be = SimpleNamespace(values=device["values"], vector=device.__getitem__,
                         algorithm=SimpleNamespace(operator=operator(SHARE)),
                         _blocks=lambda _threads, _most: 4, compute_stream=cp.cuda.Stream())
    be._walk_totals_of = lambda x: CudaBackend._walk_totals_of(be, x)
    got = CudaBackend.walk_step(be, 0.85, 0.15, vertex)
    assert got == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(device["values"].get(), host["values"], rtol=1e-13)
    np.testing.assert_allclose(device[OPERAND].get(), host[OPERAND],
                               rtol=max(1e-13, np.finfo(share).eps))
    assert not device[ACCUMULATOR].any()
