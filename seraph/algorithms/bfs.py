"""Breadth-first search: the hop count from a source to every vertex.

Method: level-synchronous pull of the edge operator ``d + 1``
(:data:`~seraph.operators.HOP`), each round pulling ``min(level[u] + 1)`` over the in-edges
of the active pages, with direction
switching: when the frontier's out-edges are few the rounds push from it instead, and when
few vertices are left unsettled a bottom-up round pulls just their in-edges. Strong rule
``LEVELS``: after k rounds a vertex holding a level up to k + 1 holds its final level, so
its pulls are skipped.

- S. Beamer, K. Asanović, D. Patterson. Direction-optimizing breadth-first search.
  SC 2012.
- Seraph: "Scaling Up Large-Scale Graph Processing for GPU-Accelerated Heterogeneous
  Systems" (pipelined subgraph iteration and the predictors).

See docs/design.md, "Strong predictors: the proofs" and "Sparse rounds: push and
bottom-up".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse.csgraph as csgraph

from seraph.algorithms.entry import Entry
from seraph.algorithms.verify import compare, verify_paths
from seraph.api import as_graph, execute_from, make_config, public_call
from seraph.operators import HOP, OPERATORS
from seraph.scheduler import EngineConfig
from seraph.spec import LEVELS, Algorithm, Output
from seraph.stats import RunStats, Trace

SPEC = Algorithm("bfs", OPERATORS[HOP], LEVELS, "strong", needs_source=True,
                 output=Output(unreached=-1))


@dataclass
class BFSResult:
    levels: np.ndarray  #: int32 hop count from the source, -1 if unreached
    predecessors: np.ndarray | None  #: input id of a BFS-tree parent, -1 for none
    stats: RunStats
    trace: Trace

    @property
    def values(self) -> np.ndarray:
        return self.levels


@public_call
def bfs(graph, source: int, *, predecessors: bool = False, config: EngineConfig | None = None,
        **options) -> BFSResult:
    """Breadth-first search levels from ``source`` (an input vertex id).

    Options are those of :class:`seraph.scheduler.EngineConfig` (schedule, predictor,
    diagram, device, device_memory, push_alpha, ...).
    """
    g = as_graph(graph)
    config = config or make_config(**options)
    levels, preds, stats, trace = execute_from(g, SPEC, source, config, predecessors)
    return BFSResult(levels, preds, stats, trace)


def reference(graph, source: int | None) -> np.ndarray:
    """scipy's levels (-1 unreached) from ``source``, a store vertex number."""
    hops = csgraph.shortest_path(graph.to_scipy(), unweighted=True, indices=source)
    return np.where(np.isinf(hops), -1, hops).astype(np.int32)


def check(graph, levels: np.ndarray, source: int | None) -> str | None:
    return compare(graph, levels, lambda: reference(graph, source))


def verify(graph, levels: np.ndarray, source: int | None,
           predecessors: np.ndarray | None = None) -> str | None:
    """None if ``levels`` are the hop counts from ``source`` (a store vertex; -1
    unreached) and the ``predecessors`` (input ids, when given) a BFS tree's, else what is
    wrong: every edge (u, v) from a reached u has ``levels[v] <= levels[u] + 1``, and every
    reached vertex but the source has an in-edge with equality
    (:func:`~seraph.algorithms.verify.verify_paths`)."""
    return verify_paths(graph, levels, source, predecessors, -1, weighted=False)


def summary(levels: np.ndarray) -> str:
    return f"{int((levels >= 0).sum()):,} reached"


ENTRY = Entry(SPEC, bfs, BFSResult, reference, check, verify, summary)
