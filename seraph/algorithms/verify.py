"""What the verifiers share: each algorithm's answer is checked against
scipy.sparse.csgraph (GAP style), by ``seraph run --validate``, ``seraph demo``, the
benchmarks and the tests. Only for graphs whose adjacency matrix fits comfortably in host
memory."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Larger graphs are not validated: scipy would need several times their size in RAM.
MAX_VALIDATE_EDGES = 200_000_000


def compare(graph, values: np.ndarray, expected: Callable[[], np.ndarray],
            close: bool = False) -> str | None:
    """None if ``values`` equal ``expected()`` (scipy's answer, computed only for a graph
    small enough), else what differs. ``close``: float32 sums against scipy's float64,
    equal to a relative 1e-5 (infinities equal)."""
    if graph.num_edges > MAX_VALIDATE_EDGES:
        return f"graph too large to validate ({graph.num_edges} edges)"
    expect = expected()
    if close:
        bad = ~np.isclose(values, expect, rtol=1e-5, atol=0) & ~(np.isinf(values) &
                                                                  np.isinf(expect))
    else:
        bad = values != expect
    if not bad.any():
        return None
    v = int(np.flatnonzero(bad)[0])
    return (f"{int(bad.sum())} of {len(values)} vertices differ from scipy; first: vertex {v} "
            f"has {values[v]}, scipy says {expect[v]}")
