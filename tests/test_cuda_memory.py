"""The device memory budget holds: every algorithm, on a grid, an RMAT and a uniform graph,
under a budget of the vertex state plus a quarter of the pages (at least two slots), holds
at most the budget on the device at its peak (``stats.peak_device_memory``: the high-water
mark of cupy's pool, through which every device allocation goes). Runs only with a GPU."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

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


def held_by_others(graph: seraph.Graph) -> int:
    """The device bytes other tests' live arrays hold, once ``graph``'s caches are freed."""
    import cupy as cp

    graph.release_device_memory()
    gc.collect()  # unreachable arrays that a run's allocations would free mid-run
    return cp.get_default_memory_pool().used_bytes()


@pytest.mark.parametrize("kind", ["grid", "rmat", "uniform"])
def test_every_algorithm_keeps_within_its_budget(kind):

    graph = graph_of(kind)
    assert graph.num_pages >= 8
    source = int(np.argmax(graph.out_degrees()))
    runs = [
        ("bfs", lambda b: seraph.bfs(graph, source, device="cuda", device_memory=b),
         False, False),
        ("sssp", lambda b: seraph.sssp(graph, source, device="cuda", device_memory=b),
         True, True),
        ("bfs, pushed on the host", lambda b: seraph.bfs(
            graph, source, device="cuda", device_memory=b, push_on="host"), False, False),
        ("sssp, pushed on the host", lambda b: seraph.sssp(
            graph, source, device="cuda", device_memory=b, push_on="host"), True, True),
        ("cc", lambda b: seraph.connected_components(graph, device="cuda", device_memory=b),
         False, False),
        ("cc propagation", lambda b: seraph.connected_components(
            graph, device="cuda", device_memory=b, components="propagation"), False, False),
    ]
    for name, call, weights, lightest in runs:
        held = held_by_others(graph)  # each run's peak is its own, caches included
        budget = quarter_budget(graph, weights, lightest)
        for _ in range(2):  # the first run builds the graph's caches, the second reuses
            stats = call(budget).stats
            assert not stats.resident, name
            assert 0 < stats.peak_device_memory - held <= budget, \
                f"{kind} {name}: peak {stats.peak_device_memory - held} > budget {budget}"


@pytest.mark.parametrize("kind", ["grid", "rmat", "uniform"])
def test_pagerank_keeps_within_its_budget(kind):
    """PageRank by power iteration and PageRank-delta, without a predictor and with the
    weak one (whose re-check and state counts take no temporary a vertex), under the
    vertex state their own layouts count plus a quarter of the pages."""

    from seraph.algorithms import pagerank

    graph = graph_of(kind)
    for method, predictor in (("power", "none"), ("delta", "none"), ("delta", "weak")):
        spec = pagerank.SPEC if method == "power" else pagerank.DELTA
        layout = Layout.for_run(graph, spec, predictor, None)
        budget = layout.state_bytes + max(2, graph.num_pages // 4) * layout.slot_bytes
        held = held_by_others(graph)
        for _ in range(2):
            # PageRank-delta takes many rounds on a grid: this test is about the budget.
            res = seraph.pagerank(graph, method=method, predictor=predictor, device="cuda",
                                  device_memory=budget, max_iterations=2000)
            assert res.converged and not res.stats.resident
            assert 0 < res.stats.peak_device_memory - held <= budget, \
                f"{kind} {method} {predictor}: peak {res.stats.peak_device_memory - held} > " \
                f"budget {budget}"


COMPILING_CALLS = """
import gc, json, sys
sys.path[:0] = {paths!r}
from test_cuda_memory import graph_of, quarter_budget
import seraph

gc.disable()  # what the collector would free only when it happens to run
graph = graph_of("rmat")
budget = quarter_budget(graph, False, False)
source = int(graph.out_degrees().argmax())
for _ in range(2):
    stats = seraph.bfs(graph, source, device="cuda", device_memory=budget).stats
    print(json.dumps({{"peak": stats.peak_device_memory, "budget": budget,
                      "compiled": stats.compile_time}}))
"""


def test_a_compiling_call_leaves_the_next_call_its_budget(tmp_path):
    """A first call compiles its kernels (here into an empty numba cache); numba's compiler
    leaves reference cycles that hold the call's frames. The next call, collector or not,
    still has its whole budget."""
    root = Path(__file__).resolve().parent
    script = COMPILING_CALLS.format(paths=[str(root), str(root.parent)])
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    assert first["compiled"] > 0  # the first call did compile
    for call in (first, second):
        assert 0 < call["peak"] <= call["budget"], call


@pytest.mark.parametrize("kind", ["grid", "rmat"])
def test_a_call_holds_its_budget_after_a_larger_one(kind):
    """What an earlier, larger call left on the device for the graph counts in the next
    call's peak: SSSP with no limit keeps every page, the weights and its lightest in-edge
    bytes there; a BFS after it, resident or paged under a small budget, frees what it does
    not read before it starts, and holds no more than its budget."""

    graph = graph_of(kind)
    source = int(np.argmax(graph.out_degrees()))
    held = held_by_others(graph)
    resident_bfs = Layout.plan(graph, False, None, weights=False)
    resident_bfs = resident_bfs.state_bytes + graph.num_pages * resident_bfs.slot_bytes
    for budget in (resident_bfs, quarter_budget(graph, False, False)):
        seraph.sssp(graph, source, device="cuda")
        bfs = seraph.bfs(graph, source, device="cuda", device_memory=budget)
        assert bfs.stats.resident == (budget == resident_bfs)
        assert 0 < bfs.stats.peak_device_memory - held <= budget, \
            f"{kind}: peak {bfs.stats.peak_device_memory - held} > budget {budget}"
        np.testing.assert_array_equal(bfs.levels,
                                      seraph.bfs(graph, source, device="cpu").levels)
