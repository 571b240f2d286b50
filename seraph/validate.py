"""Verifiers: each algorithm's answer checked against scipy.sparse.csgraph (GAP style).

Used by ``seraph run --validate``, ``seraph demo`` and the benchmarks; the tests use the
same oracle. Only for graphs whose adjacency matrix fits comfortably in host memory.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse.csgraph as csgraph

#: Larger graphs are not validated: scipy would need several times their size in RAM.
MAX_VALIDATE_EDGES = 200_000_000


def reference(graph, algorithm: str, source: int | None) -> np.ndarray:
    """scipy's answer in Seraph's conventions (source is a store vertex number)."""
    adj = graph.to_scipy()
    if algorithm == "bfs":
        hops = csgraph.shortest_path(adj, unweighted=True, indices=source)
        return np.where(np.isinf(hops), -1, hops).astype(np.int32)
    if algorithm == "sssp":
        return csgraph.dijkstra(adj, indices=source)
    _, labels = csgraph.connected_components(adj, directed=False)
    # scipy numbers components arbitrarily; Seraph labels each by its smallest vertex.
    smallest = np.full(labels.max() + 1, len(labels), dtype=np.int64)
    np.minimum.at(smallest, labels, np.arange(len(labels)))
    return smallest[labels]


def check(graph, algorithm: str, values: np.ndarray, source: int | None = None) -> str | None:
    """None if a result array matches scipy, else what differs.

    ``values`` is the API's result (levels, distances or labels); ``source`` is the store's
    vertex number of the source."""
    if graph.num_edges > MAX_VALIDATE_EDGES:
        return f"graph too large to validate ({graph.num_edges} edges)"
    expect = reference(graph, algorithm, source)
    if algorithm == "cc":
        expect = graph.vertex_ids[expect]  # labels are reported as input ids
    if algorithm == "sssp":
        # Seraph sums in float32, scipy in float64.
        bad = ~np.isclose(values, expect, rtol=1e-5, atol=0) & ~(np.isinf(values) &
                                                                  np.isinf(expect))
    else:
        bad = values != expect
    if not bad.any():
        return None
    v = int(np.flatnonzero(bad)[0])
    return (f"{int(bad.sum())} of {len(values)} vertices differ from scipy; first: vertex {v} "
            f"has {values[v]}, scipy says {expect[v]}")
