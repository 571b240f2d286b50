"""BFS, CC and SSSP as three small specs over one (min, +) pull (DESIGN section 2).

An algorithm is only: the weight mode (which fixes the value dtype and infinity), how the
values start, which strong rule proves a vertex converged, and the default predictor.
The engine does the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seraph.semiring import STORED, UNIT, ZERO, infinity, value_dtype

#: Strong rules (DESIGN section 1); each proves ``value[v] <= threshold`` is final.
#: ROUNDS: BFS, the threshold is k + 1 after k completed rounds: after k rounds every
#: vertex within k hops holds its exact level, so a value <= k + 1 can only be exact.
#: MIN_CHANGED: CC and SSSP, the threshold is the smallest value any update wrote in the
#: last round. For CC that is the smallest label whose component size changed, so the
#: labels below it form closed, settled components; for SSSP every vertex no farther than
#: that has a settled shortest path (the Dijkstra argument). See docs/engine.md.
ROUNDS = "rounds"
MIN_CHANGED = "min_changed"


@dataclass(frozen=True)
class Algorithm:
    name: str
    weight_mode: int
    strong_rule: str
    default_predictor: str
    needs_source: bool

    @property
    def dtype(self) -> np.dtype:
        return value_dtype(self.weight_mode)

    @property
    def lightest_in_rule(self) -> bool:
        """Whether the strong rule may add each vertex's lightest in-edge
        (:mod:`seraph.lightest`): distances over stored weights, as SSSP's."""
        return self.weight_mode == STORED and self.strong_rule == MIN_CHANGED

    @property
    def inf(self):
        return infinity(self.weight_mode)

    def initial_values(self, num_vertices: int, source: int | None) -> np.ndarray:
        """Values before the first round: 0 at the source (BFS, SSSP) or the own id (CC)."""
        if not self.needs_source:
            return np.arange(num_vertices, dtype=self.dtype)
        values = np.full(num_vertices, self.inf, dtype=self.dtype)
        values[source] = 0
        return values

    def initial_frontier(self, source: int | None) -> np.ndarray | None:
        """The vertices whose values start "changed" (their out-edges must be relaxed);
        None for every vertex (CC), which the engine need not list."""
        return np.array([source], dtype=np.int64) if self.needs_source else None


BFS = Algorithm("bfs", UNIT, ROUNDS, "strong", needs_source=True)
CC = Algorithm("cc", ZERO, MIN_CHANGED, "strong", needs_source=False)
#: SSSP's default is the strong rule, not the paper's weak diagram (still one option away):
#: the weak predictor's skips void the strong proofs, so no vertex counts as settled, no
#: bottom-up round can run, and late updates keep the threshold low (docs/engine.md).
SSSP = Algorithm("sssp", STORED, MIN_CHANGED, "strong", needs_source=True)
#: CC's first phase when pages move (:meth:`seraph.scheduler.Run.components_from_hub`): the
#: hub's component, found as BFS finds its levels. CC's kernels and strong rule, but the
#: values start at infinity with 0 at the hub, so a reached vertex holds 0, provably final.
REACH = Algorithm("cc", ZERO, MIN_CHANGED, "strong", needs_source=True)

ALGORITHMS = {a.name: a for a in (BFS, CC, SSSP)}
