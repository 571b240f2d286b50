"""Single-source shortest paths: float32 distances over the stored (non-negative) weights.

Method: Bellman-Ford style pull of the edge operator ``d + w``, each round pulling
``min(dist[u] + w)`` over the in-edges of the active pages, with the strong rule
``SMALLEST_WRITTEN``: no vertex at or below the smallest distance the last round wrote can
still change (the Dijkstra argument; Crauser et al.'s IN criterion), raised per vertex by
its lightest in-edge (:mod:`seraph.lightest`). Sparse phases push by delta-stepping
(Meyer & Sanders) and pull bottom-up, as BFS's do.

- A. Crauser, K. Mehlhorn, U. Meyer, P. Sanders. A parallelization of Dijkstra's
  shortest path algorithm. MFCS 1998 (the IN/OUT criteria).
- U. Meyer, P. Sanders. Delta-stepping: a parallelizable shortest path algorithm.
  J. Algorithms 2003.
- Seraph: "Scaling Up Large-Scale Graph Processing for GPU-Accelerated Heterogeneous
  Systems" (pipelined subgraph iteration and the weak predictor).

The default is the strong rule, not the paper's weak diagram (still one option away): the
weak predictor's skips void the strong proofs, so no vertex counts as settled, no
bottom-up round can run, and late updates keep the threshold low (docs/engine.md). See
docs/design.md, "Strong predictors: the proofs" and "Weak predictor and the recheck".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse.csgraph as csgraph

from seraph.algorithms.entry import Entry
from seraph.algorithms.verify import compare, verify_paths
from seraph.api import as_graph, execute_from, make_config, public_call
from seraph.errors import InputError
from seraph.operators import DISTANCE, OPERATORS
from seraph.scheduler import EngineConfig
from seraph.spec import SMALLEST_WRITTEN, Algorithm
from seraph.stats import RunStats, Trace

SPEC = Algorithm("sssp", OPERATORS[DISTANCE], SMALLEST_WRITTEN, "strong", needs_source=True,
                 lightest_first=True)


@dataclass
class SSSPResult:
    distances: np.ndarray  #: float32 distance from the source, inf if unreached
    predecessors: np.ndarray | None  #: input id of a shortest-path-tree parent, -1 for none
    stats: RunStats
    trace: Trace

    @property
    def values(self) -> np.ndarray:
        return self.distances


@public_call
def sssp(graph, source: int, *, predecessors: bool = False, config: EngineConfig | None = None,
         **options) -> SSSPResult:
    """Single-source shortest path distances (float32) from ``source`` (an input vertex id)."""
    g = as_graph(graph)
    if not g.weighted:
        raise InputError("SSSP needs edge weights but this graph is unweighted: use bfs() "
                         "for hop counts, or preprocess with --weights file|random:LO,HI")
    config = config or make_config(**options)
    values, preds, stats, trace = execute_from(g, SPEC, source, config, predecessors)
    return SSSPResult(values, preds, stats, trace)


def reference(graph, source: int | None) -> np.ndarray:
    """scipy's distances (float64, inf unreached) from ``source``, a store vertex number."""
    return csgraph.dijkstra(graph.to_scipy(), indices=source)


def check(graph, distances: np.ndarray, source: int | None) -> str | None:
    # Seraph sums in float32, scipy in float64.
    return compare(graph, distances, lambda: reference(graph, source), close=True)


def verify(graph, distances: np.ndarray, source: int | None,
           predecessors: np.ndarray | None = None) -> str | None:
    """None if ``distances`` are the float32 shortest distances from ``source`` (a store
    vertex; inf unreached) and the ``predecessors`` (input ids, when given) a
    shortest-path tree's, else what is wrong: every edge (u, v) from a reached u has
    ``distances[v] <= float32(distances[u] + w)``, and every reached vertex but the source
    is joined to it by edges with equality
    (:func:`~seraph.algorithms.verify.verify_paths`)."""
    return verify_paths(graph, distances, source, predecessors, np.inf, weighted=True)


def summary(distances: np.ndarray) -> str:
    return f"{int(np.isfinite(distances).sum()):,} reached"


ENTRY = Entry(SPEC, sssp, SSSPResult, reference, check, verify, summary)
