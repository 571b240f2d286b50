"""Verifiers by algorithm name: each algorithm's answer against scipy.sparse.csgraph, as its
module (:mod:`seraph.algorithms`) defines it. Used by ``seraph run --validate``, ``seraph
demo`` and the benchmarks; the tests use the same oracle."""

from __future__ import annotations

import numpy as np

from seraph.algorithms import get


def reference(graph, algorithm: str, source: int | None) -> np.ndarray:
    """scipy's answer in Seraph's conventions (source is a store vertex number)."""
    return get(algorithm).reference(graph, source)


def check(graph, algorithm: str, values: np.ndarray, source: int | None = None) -> str | None:
    """None if a result array matches scipy, else what differs.

    ``values`` is the API's result (levels, distances or labels); ``source`` is the store's
    vertex number of the source."""
    return get(algorithm).check(graph, values, source)
