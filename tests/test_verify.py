"""The O(m) verifiers (each algorithm's ``verify``): they accept the engine's answers, which
scipy confirms, on every kind of graph (chains, stars, grids, disconnected graphs,
self-loops, duplicate edges, zero weights, a single vertex, relabelled and renumbered
stores, pages of a few edges), and reject wrong ones: a vertex off by one, an unreached
vertex beside a reached one, values held up by a cycle of zero weights, a missing or wrong
predecessor, a predecessor cycle, merged and split components, a label that is not the
smallest id."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seraph
from seraph.algorithms import ALGORITHMS, bfs, cc, get, sssp
from seraph.validate import check, verify

#: Weights whose float32 sums are exact (so scipy's float64 answer is the engine's), zero
#: among them.
WEIGHTS = (0.0, 0.5, 1.0, 2.0, 3.0)


def build(n, src, dst, weight=None, *, symmetric=True, keep=False, ids=None,
          order="input", page_edges=4) -> seraph.Graph:
    """A graph of edges ``src[i] -> dst[i]`` on vertices 0..n-1, or on the input ids
    ``ids[0..n-1]`` (then relabelled) in ``order``."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if ids is not None:
        src, dst = np.asarray(ids)[src], np.asarray(ids)[dst]
    weight = None if weight is None else np.asarray(weight, np.float32)
    return seraph.Graph.from_edges(src, dst, weight, None if ids is not None else n,
                                   symmetrize=symmetric, keep_duplicates=keep,
                                   keep_self_loops=keep, order=order, page_edges=page_edges)


@st.composite
def graphs(draw):
    """Random small graphs: any of the shapes above, relabelled or renumbered at times."""
    n = draw(st.integers(1, 24))
    m = draw(st.integers(0, 60))
    vertex = st.integers(0, n - 1)
    src, dst = draw(st.lists(vertex, min_size=m, max_size=m)), \
        draw(st.lists(vertex, min_size=m, max_size=m))
    weight = draw(st.lists(st.sampled_from(WEIGHTS), min_size=m, max_size=m))
    symmetric, keep = draw(st.booleans()), draw(st.booleans())
    relabel = m > 0 and draw(st.booleans())
    ids = [7 + 1000 * draw(st.integers(0, 10**6)) + i for i in range(n)] if relabel else None
    order = draw(st.sampled_from(("input", "degree", "rcm"))) if m else "input"
    return build(n, src, dst, weight, symmetric=symmetric, keep=keep, ids=ids, order=order,
                 page_edges=draw(st.sampled_from((1, 4, 16, 1024))))


SHAPES = {
    "chain": (6, [0, 1, 2, 3, 4], [1, 2, 3, 4, 5]),
    "star": (7, [0] * 6, [1, 2, 3, 4, 5, 6]),
    "grid": (9, [0, 1, 3, 4, 6, 7, 0, 1, 2, 3, 4, 5], [1, 2, 4, 5, 7, 8, 3, 4, 5, 6, 7, 8]),
    "disconnected": (8, [0, 1, 4, 5], [1, 2, 5, 6]),
    "single vertex": (1, [], []),
}


def check_engine_answers(graph: seraph.Graph, device: str, source: int = 0) -> None:
    """Every algorithm the graph allows, from store vertex ``source``: the engine's answer
    equals scipy's and passes its verifier, predecessors included."""
    for name, entry in ALGORITHMS.items():
        if (name == "cc" and not graph.symmetric) or \
                (entry.spec.operator.weighted and not graph.weighted):
            continue
        s = entry.source_for(source)
        options = {"predecessors": True} if entry.needs_source else {}
        input_source = None if s is None else int(graph.vertex_ids[s])
        result = seraph.run(graph, name, input_source, device=device, **options)
        assert check(graph, name, result.values, s) is None, name  # scipy agrees
        preds = getattr(result, "predecessors", None)
        assert verify(graph, name, result.values, s, preds) is None, name


@settings(max_examples=30, deadline=None)
@given(graph=graphs(), pick=st.integers(0, 10**6))
def test_the_engine_answers_pass(device, graph, pick):
    check_engine_answers(graph, device, pick % graph.num_vertices)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_engine_answers_pass_on_named_shapes(device, shape):
    n, src, dst = SHAPES[shape]
    weight = [WEIGHTS[i % len(WEIGHTS)] for i in range(len(src))]
    check_engine_answers(build(n, src, dst, weight), device)
    # Self-loops and duplicates kept, relabelled and renumbered, one edge a page.
    ids = [10**9 + 3 * i for i in range(n)]
    check_engine_answers(build(n, src + src + [0], dst + dst + [0], weight + weight + [0.0],
                               keep=True, ids=ids, order="degree", page_edges=1), device,
                         source=n // 2)


# -- rejections ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def road() -> seraph.Graph:
    """A 6x6 grid with zero and positive weights and a separate triangle, renumbered, its
    ids relabelled, two edges a page."""
    src, dst = [], []
    for r in range(6):
        for c in range(6):
            if c < 5:
                src, dst = src + [6 * r + c], dst + [6 * r + c + 1]
            if r < 5:
                src, dst = src + [6 * r + c], dst + [6 * r + c + 6]
    src, dst = src + [36, 37, 38], dst + [37, 38, 36]
    weight = [WEIGHTS[(3 * i) % len(WEIGHTS)] for i in range(len(src))]
    return build(39, src, dst, weight, ids=[5 + 11 * i for i in range(39)], order="rcm",
                 page_edges=2)


def answer(graph, name: str, source: int):
    """The engine's answer (CPU) from store vertex ``source``: values and predecessors,
    copies free to spoil."""
    entry = get(name)
    result = seraph.run(graph, name, entry.source_for(int(graph.vertex_ids[source])),
                        device="cpu", **({"predecessors": True} if entry.needs_source else {}))
    preds = getattr(result, "predecessors", None)
    return result.values.copy(), None if preds is None else preds.copy()


def reached_vertex(values: np.ndarray, source: int, far: bool = True) -> int:
    """A reached vertex other than the source (the farthest, or the nearest)."""
    reached = np.flatnonzero(np.isfinite(values) & (values >= 0) &
                             (np.arange(len(values)) != source))
    return int(reached[np.argmax(values[reached]) if far else np.argmin(values[reached])])


@pytest.mark.parametrize("name", ["bfs", "sssp"])
@pytest.mark.parametrize("delta", [1, -1])
def test_one_vertex_off_by_one_is_rejected(road, name, delta):
    source = road.vertex_index(5)
    values, preds = answer(road, name, source)
    assert get(name).verify(road, values, source, preds) is None
    for far in (True, False):
        wrong = values.copy()
        v = reached_vertex(values, source, far)
        wrong[v] += delta
        verdict = get(name).verify(road, wrong, source)
        assert verdict is not None and "vertices wrong; first: vertex" in verdict
        assert get(name).verify(road, wrong, source, preds) is not None


@pytest.mark.parametrize("name", ["bfs", "sssp"])
def test_an_unreached_vertex_beside_a_reached_one_is_rejected(road, name):
    source = road.vertex_index(5)
    values, _ = answer(road, name, source)
    v = reached_vertex(values, source)
    values[v] = -1 if name == "bfs" else np.inf
    verdict = get(name).verify(road, values, source)
    assert f"vertex {int(road.vertex_ids[v])} is unreached but in-neighbour" in verdict


@pytest.mark.parametrize("name", ["bfs", "sssp"])
def test_a_source_not_at_zero_is_rejected(road, name):
    source = road.vertex_index(5)
    values, _ = answer(road, name, source)
    values[source] += 1
    assert "vertices wrong" in get(name).verify(road, values, source)
    chain = build(3, [0, 1], [1, 2], [1.0, 1.0])
    values, _ = answer(chain, name, 0)
    values[0] = 1
    assert get(name).verify(chain, values, 0).startswith(
        "2 of 3 vertices wrong; first: vertex 0 is the source but has 1")


@pytest.mark.parametrize("name", ["bfs", "sssp"])
def test_a_missing_or_wrong_predecessor_is_rejected(road, name):
    source = road.vertex_index(5)
    values, preds = answer(road, name, source)
    v = reached_vertex(values, source)
    missing = preds.copy()
    missing[v] = -1
    assert "names no predecessor" in get(name).verify(road, values, source, missing)
    wrong = preds.copy()
    wrong[v] = road.vertex_ids[v]  # itself: no edge
    assert "is not a tight in-neighbour" in get(name).verify(road, values, source, wrong)
    named = preds.copy()
    named[source] = preds[v]
    assert "but names predecessor" in get(name).verify(road, values, source, named)
    unreached = road.vertex_index(5 + 11 * 36)  # the triangle's
    named = preds.copy()
    named[unreached] = 5
    assert "but names predecessor" in get(name).verify(road, values, source, named)


def test_values_held_up_by_a_zero_weight_cycle_are_rejected():
    """s -5-> a, a <-0-> b: a and b at 3 each have a tight in-edge (from each other), but no
    tight path from the source; a predecessor cycle a <-> b is rejected the same way."""
    graph = build(3, [0, 1], [1, 2], [5.0, 0.0], page_edges=1)
    right = np.array([0, 5, 5], np.float32)
    assert sssp.verify(graph, right, 0, np.array([-1, 0, 1])) is None
    verdict = sssp.verify(graph, np.array([0, 3, 3], np.float32), 0)
    assert verdict.startswith("2 of 3 vertices wrong; first: vertex 1 has 3.0 but its tight "
                              "in-edges come only from vertices of equal value")
    verdict = sssp.verify(graph, right, 0, np.array([-1, 2, 1]))
    assert verdict.startswith("2 of 3 vertices wrong; first: vertex 1 has 5.0 but its "
                              "predecessor 2 is not a tight in-neighbour")


def test_float32_sums_are_the_engines():
    """A weight too small to change a float32 sum: the tight edge is one of equal values,
    traced to the source through a chain of them; the next float32 up is wrong."""
    graph = build(4, [0, 1, 2], [1, 2, 3], [2.0**25, 1.0, 1.0], symmetric=False)
    values, preds = answer(graph, "sssp", 0)
    assert values.tolist() == [0.0, 2.0**25, 2.0**25, 2.0**25]
    assert sssp.verify(graph, values, 0, preds) is None
    above = np.array([0, 2**25, 2**25, 2**25 + 4], np.float32)
    assert "vertex 3 has 33554436.0 but in-neighbour 2 has" in sssp.verify(graph, above, 0)


def test_merged_components_are_rejected(road):
    labels, _ = answer(road, "cc", 0)
    assert cc.verify(road, labels) is None
    triangle = labels == labels.max()
    merged = np.where(triangle, labels.min(), labels)
    verdict = cc.verify(road, merged)
    assert verdict.startswith(f"{int(triangle.sum())} of 39 vertices wrong")
    assert "the id of no vertex of its component" in verdict


def test_a_split_component_is_rejected(road):
    labels, _ = answer(road, "cc", 0)
    v = int(np.flatnonzero(labels != road.vertex_ids)[0])  # not its component's smallest
    split = labels.copy()
    split[v] = road.vertex_ids[v]
    verdict = cc.verify(road, split)  # its edges, and which vertex owns the component
    assert verdict is not None and "vertices wrong; first: vertex" in verdict
    chain = build(3, [0, 1], [1, 2], page_edges=1)
    assert cc.verify(chain, np.array([0, 0, 1])) == (
        "1 of 3 vertices wrong; first: vertex 2 has label 1 but its neighbour 1 has 0")


def test_a_label_not_the_smallest_id_is_rejected(road):
    labels, _ = answer(road, "cc", 0)
    triangle = labels == labels.max()
    largest = np.where(triangle, road.vertex_ids[triangle].max(), labels)
    assert "above its own id" in cc.verify(road, largest)
    unknown = np.where(triangle, labels.max() - 1, labels)  # below every id, no vertex's
    assert "the id of no vertex of its component" in cc.verify(road, unknown)


def test_the_scipy_references_are_kept_for_the_tests(road):
    """bfs.reference and friends stay the tests' oracle; the verifiers agree with them."""
    source = road.vertex_index(5)
    assert bfs.verify(road, bfs.reference(road, source), source) is None
    labels = cc.component_labels(road, cc.reference(road))
    assert cc.verify(road, labels) is None
    assert sssp.verify(road, sssp.reference(road, source).astype(np.float32), source) is None


def test_more_edges_across_trees_than_a_task_keeps(monkeypatch):
    """Gadgets whose bridge neither end samples (two triangles {0, 2, 4} and {1, 3, 5},
    bridged 4-5), more of them than a task of the full pass has room for: the pass runs
    twice and the answer is still checked exactly."""
    gadget = [(0, 2), (2, 4), (0, 4), (1, 3), (3, 5), (1, 5), (4, 5)]
    count = cc.ROOM + 44
    src = [6 * j + a for j in range(count) for a, _ in gadget]
    dst = [6 * j + b for j in range(count) for _, b in gadget]
    graph = build(6 * count, src, dst, page_edges=1 << 16)
    assert graph.num_pages == 1
    passes = []
    join = cc._join
    monkeypatch.setattr(cc, "_join", lambda *a: passes.append(1) or join(*a))
    labels = 6 * (np.arange(6 * count) // 6)
    assert cc.verify(graph, labels) is None and len(passes) == 2
    merged = np.where(labels == 6, 0, labels)
    assert cc.verify(graph, merged).startswith("6 of ")


def test_a_store_is_checked_page_by_page_from_its_files(tmp_path):
    """A freshly opened store: the verifiers read each page from its chunk file (the
    next one on a thread), not the whole CSC, and check the answers exactly."""
    from seraph.cli import main

    path = tmp_path / "grid.zarr"
    assert main(["generate", "grid", "--rows", "12", "--cols", "15", "--remove", "0.1",
                 "--weighted", "--symmetrize", "--order", "rcm", "--page-edges", "64",
                 "-o", str(path), "-q"]) == 0
    answers = {name: answer(seraph.open_graph(path), name, 3) for name in ("bfs", "cc", "sssp")}
    graph = seraph.open_graph(path)
    assert graph.num_pages > 4
    read = []
    read_page = graph.read_page
    graph.read_page = lambda page, *out: read.append(page) or read_page(page, *out)
    for name, (values, preds) in answers.items():
        read.clear()
        assert get(name).verify(graph, values, get(name).source_for(3), preds) is None
        passes = 2 if name == "cc" else 1  # CC's first in-edges, then every edge
        assert read == list(range(graph.num_pages)) * passes, name
        values[int(np.argmax(values))] += 1  # the farthest vertex, or a label, spoiled
        assert get(name).verify(graph, values, get(name).source_for(3), preds) is not None
