"""Checks by algorithm name. :func:`verify` is each algorithm's own O(m) verifier, for
any size (``seraph run --validate``, ``seraph demo``, the benchmarks); :func:`check` and
:func:`reference` are scipy.sparse.csgraph's answer, the tests' oracle, as each module
(:mod:`seraph.algorithms`) defines them."""

from __future__ import annotations

import numpy as np

from seraph.algorithms import get


def verify(graph, algorithm: str, values: np.ndarray, source: int | None = None,
           predecessors: np.ndarray | None = None, **options) -> str | None:
    """None if an answer is right, else what is wrong (how many vertices, the first).

    ``values`` is the API's result (levels, distances, labels or ranks) and
    ``predecessors`` its predecessors (None: not checked); ``source`` is the store's vertex
    number of the source; ``options`` are the algorithm's own of the run (PageRank's
    damping, ...: :attr:`~seraph.algorithms.entry.Entry.options`)."""
    return get(algorithm).verify(graph, values, source, predecessors, **options)


def reference(graph, algorithm: str, source: int | None) -> np.ndarray:
    """scipy's answer in Seraph's conventions (source is a store vertex number)."""
    return get(algorithm).reference(graph, source)


def check(graph, algorithm: str, values: np.ndarray, source: int | None = None) -> str | None:
    """None if a result array matches scipy, else what differs.

    ``values`` is the API's result (levels, distances or labels); ``source`` is the store's
    vertex number of the source."""
    return get(algorithm).check(graph, values, source)
