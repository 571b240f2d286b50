"""Single-source widest paths (max-min): the width of the widest path from a source to
every vertex, a path's width being its narrowest edge weight.

Method: the pull of the edge operator ``max(d, width_code(w))``
(:data:`~seraph.operators.WIDTH`) over width codes, which order widths the other way
round, so the engine's min over in-edges is the max of ``min(width[u], w)``, exactly. The
source starts at code 0 (width inf). Strong rule ``SMALLEST_WRITTEN``: an offer never
lowers the code it is made from, so no vertex at or below the smallest code the last round
wrote can still change (the Dijkstra argument). The result decodes the codes to float32
widths (``Output.code_base``), 0 for an unreached vertex, as Subway's ``sswp`` does.

- M. Pollack. The maximum capacity through a network. Operations Research 8(5), 1960.
- A. H. N. Sabet, Z. Zhao, R. Gupta. Subway: minimizing data transfer during out-of-GPU-
  memory graph processing. EuroSys 2020.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from seraph.algorithms.entry import Entry
from seraph.algorithms.verify import compare, verify_paths
from seraph.api import as_graph, execute_from, make_config, public_call
from seraph.errors import InputError
from seraph.operators import OPERATORS, WIDTH, WIDTH_CODE_BASE
from seraph.scheduler import EngineConfig
from seraph.spec import SMALLEST_WRITTEN, Algorithm, Output
from seraph.stats import RunStats, Trace

SPEC = Algorithm("sswp", OPERATORS[WIDTH], SMALLEST_WRITTEN, "strong", needs_source=True,
                 output=Output(np.dtype(np.float32), 0.0, int(WIDTH_CODE_BASE)))


@dataclass
class SSWPResult:
    widths: np.ndarray  #: float32 widest-path width from the source: inf there, 0 unreached
    predecessors: np.ndarray | None  #: input id of a widest-path-tree parent, -1 for none
    stats: RunStats
    trace: Trace

    @property
    def values(self) -> np.ndarray:
        return self.widths


@public_call
def sswp(graph, source: int, *, predecessors: bool = False, config: EngineConfig | None = None,
         **options) -> SSWPResult:
    """Widest-path widths (float32) from ``source`` (an input vertex id)."""
    g = as_graph(graph)
    if not g.weighted:
        raise InputError("SSWP needs edge weights but this graph is unweighted: preprocess "
                         "with --weights file|random:LO,HI")
    config = config or make_config(**options)
    values, preds, stats, trace = execute_from(g, SPEC, source, config, predecessors)
    return SSWPResult(values, preds, stats, trace)


def reference(graph, source: int | None) -> np.ndarray:
    """The widths from ``source`` (a store vertex number) by a plain max-min Dijkstra, the
    tests' oracle: float32, inf at the source, 0 unreached."""
    indptr, indices, weights = graph.csr()
    widths = [0.0] * graph.num_vertices
    widths[source] = np.inf
    heap = [(-np.inf, source)]
    while heap:
        width, u = heapq.heappop(heap)
        if -width < widths[u]:
            continue  # a wider path reached u after this entry
        for i in range(indptr[u], indptr[u + 1]):
            v, through = int(indices[i]), min(-width, float(weights[i]))
            if through > widths[v]:
                widths[v] = through
                heapq.heappush(heap, (-through, v))
    return np.array(widths, np.float32)


def check(graph, widths: np.ndarray, source: int | None) -> str | None:
    return compare(graph, widths, lambda: reference(graph, source), oracle="max-min Dijkstra")


def verify(graph, widths: np.ndarray, source: int | None,
           predecessors: np.ndarray | None = None) -> str | None:
    """None if ``widths`` are the widest-path widths from ``source`` (a store vertex; inf
    there, 0 unreached) and the ``predecessors`` (input ids, when given) a widest-path
    tree's, else what is wrong: every edge (u, v) from a reached u has ``widths[v] >=
    min(widths[u], w)``, and every reached vertex but the source is joined to it by edges
    with equality (:func:`~seraph.algorithms.verify.verify_paths`)."""
    return verify_paths(graph, widths, source, predecessors, 0.0, weighted=True, widest=True)


def summary(widths: np.ndarray) -> str:
    return f"{int((widths > 0).sum()):,} reached"


ENTRY = Entry(SPEC, sswp, SSWPResult, reference, check, verify, summary)
