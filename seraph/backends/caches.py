"""What every run of a graph needs and would otherwise rebuild, kept on the graph: its
out-degrees, hub chunks and lightest in-edges, and pools of buffers lent to one run at a
time."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from seraph import hubs
from seraph.lightest import NO_BOUND, LightestIn, lightest_in
from seraph.operators import WIDTH, width_codes


def graph_cached(graph, key, make: Callable[[], object]):
    """``make()``, computed once per graph: what every run of a graph needs and would
    otherwise rebuild (a pass over all its edges or vertices) is kept on the graph."""
    cache = graph.__dict__.setdefault("_engine_cache", {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def max_out_degree(indptr: np.ndarray) -> int:
    return int(np.diff(indptr).max()) if len(indptr) > 1 else 0


def graph_max_out_degree(graph) -> int:
    """The graph's largest out-degree (computed once per graph)."""
    return graph_cached(graph, "max out-degree", lambda: max_out_degree(graph.out_indptr()))


def graph_lightest_in(graph) -> LightestIn:
    """The graph's :func:`seraph.lightest.lightest_in` (built once per graph)."""
    def build() -> LightestIn:
        indptr, _indices, weights = graph.csc()
        return NO_BOUND if weights is None else lightest_in(indptr, weights)
    return graph_cached(graph, "lightest in", build)


def operands(weights: np.ndarray | None, op: int) -> np.ndarray | None:
    """What the host kernels read per edge for the edge operator ``op``: the weights, or
    for WIDTH their width codes (:func:`seraph.operators.width_codes`), so that each
    operator's offer stays in its values' type."""
    return width_codes(weights) if op == WIDTH and weights is not None else weights


def operand_dtype(op: int) -> np.dtype:
    """The dtype of :func:`operands` for the edge operator ``op``."""
    return np.dtype(np.int32 if op == WIDTH else np.float32)


def graph_operands(graph, op: int, rows: str) -> np.ndarray | None:
    """:func:`operands` of the graph's ``rows`` ("csc" or "csr") weights (built once per
    graph where they differ from the weights)."""
    weights = getattr(graph, rows)()[2]
    if op != WIDTH or weights is None:
        return weights
    return graph_cached(graph, ("operands", op, rows), lambda: operands(weights, op))


def graph_hub_chunks(graph) -> hubs.HubChunks:
    """The graph's :func:`seraph.hubs.hub_chunks` (built once per graph and thresholds)."""
    return graph_cached(graph, ("hub chunks", hubs.HUB_EDGES, hubs.CHUNK_EDGES),
                        lambda: hubs.hub_chunks(graph.csc()[0], graph.page_edges,
                                                graph.num_pages, hubs.HUB_EDGES,
                                                hubs.CHUNK_EDGES))


def take_pooled(graph, key: str, make: Callable[[], object]):
    """An object an earlier run on the graph handed back under ``key`` (:func:`hand_back`),
    or ``make()``: what costs O(n) to build (the push scratch, a pinned values buffer) is
    built once per graph and lent to one run at a time."""
    pool = graph_cached(graph, ("pool", key), list)
    return pool.pop() if pool else make()


def hand_back(graph, key: str, item: object) -> None:
    """Returns ``item`` to the graph's pool ``key`` for its next run."""
    graph_cached(graph, ("pool", key), list).append(item)


def out_degrees(graph) -> np.ndarray:
    return graph_cached(graph, "out_degrees", graph.out_degrees)
