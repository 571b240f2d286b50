"""The device memory budget holds: every algorithm, on a grid, an RMAT and a uniform graph,
under a budget of the vertex state plus a quarter of the pages (at least two slots), holds
at most the budget on the device at its peak (``stats.peak_device_memory``: the high-water
mark of cupy's pool, through which every device allocation goes). Runs only with a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import seraph
from seraph.api import cuda_status
from seraph.backends.layout import Layout

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not cuda_status()[0], reason="no usable GPU: "
                                 + cuda_status()[1])]

PAGE_EDGES = 1 << 14


def graph_of(kind: str) -> seraph.Graph:
    from partitioner.generators import gap_weights, grid, rmat, uniform

    if kind == "grid":
        source = grid(192, 192, seed=1, weights=gap_weights())
    else:
        source = (rmat if kind == "rmat" else uniform)(15, 8, seed=3, weights=gap_weights())
    chunks = list(source.chunks())
    src, dst, weight = (np.concatenate([getattr(c, f) for c in chunks])
                        for f in ("src", "dst", "weight"))
    return seraph.Graph.from_edges(src, dst, weight, source.num_vertices, symmetrize=True,
                                   page_edges=PAGE_EDGES)


def quarter_budget(graph: seraph.Graph, weights: bool, lightest: bool) -> int:
    layout = Layout.plan(graph, False, None, weights=weights, lightest=lightest)
    slots = max(2, graph.num_pages // 4)
    return layout.state_bytes + slots * layout.slot_bytes


@pytest.mark.parametrize("kind", ["grid", "rmat", "uniform"])
def test_every_algorithm_keeps_within_its_budget(kind):
    import cupy as cp

    graph = graph_of(kind)
    assert graph.num_pages >= 8
    source = int(np.argmax(graph.out_degrees()))
    runs = [
        ("bfs", lambda b: seraph.bfs(graph, source, device="cuda", device_memory=b),
         False, False),
        ("sssp", lambda b: seraph.sssp(graph, source, device="cuda", device_memory=b),
         True, True),
        ("cc", lambda b: seraph.connected_components(graph, device="cuda", device_memory=b),
         False, False),
        ("cc propagation", lambda b: seraph.connected_components(
            graph, device="cuda", device_memory=b, components="propagation"), False, False),
    ]
    for name, call, weights, lightest in runs:
        graph.release_device_memory()  # each run's peak is its own, caches included
        held = cp.get_default_memory_pool().used_bytes()  # other tests' arrays
        budget = quarter_budget(graph, weights, lightest)
        for _ in range(2):  # the first run builds the graph's caches, the second reuses
            stats = call(budget).stats
            assert not stats.resident, name
            assert 0 < stats.peak_device_memory - held <= budget, \
                f"{kind} {name}: peak {stats.peak_device_memory - held} > budget {budget}"
