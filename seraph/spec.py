"""What the engine knows of an algorithm: a small spec over one (min, +) pull.

An algorithm is only: the weight mode (which fixes the value dtype and infinity), how the
values start, which strong rule proves a vertex converged, the default predictor, and, for
one that does not simply run to convergence from its start, a :class:`Plan`. The engine
does the rest; the algorithms themselves are :mod:`seraph.algorithms`
(docs/design.md, "Architecture").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from seraph.semiring import STORED, infinity, value_dtype

if TYPE_CHECKING:
    from seraph.backends.layout import Layout
    from seraph.scheduler import EngineConfig, Run

#: Strong rules (docs/design.md, "Strong predictors: the proofs"); each proves
#: ``value[v] <= threshold`` is final.
#: ROUNDS: BFS, the threshold is k + 1 after k completed rounds: after k rounds every
#: vertex within k hops holds its exact level, so a value <= k + 1 can only be exact.
#: MIN_CHANGED: CC and SSSP, the threshold is the smallest value any update wrote in the
#: last round. For CC that is the smallest label whose component size changed, so the
#: labels below it form closed, settled components; for SSSP every vertex no farther than
#: that has a settled shortest path (the Dijkstra argument). See docs/engine.md.
ROUNDS = "rounds"
MIN_CHANGED = "min_changed"


@dataclass(frozen=True)
class Output:
    """How a public result holds an algorithm's values: its dtype (None: the values' own)
    and what stands for an unreached vertex (None: the algorithm's infinity itself)."""

    dtype: np.dtype | None = None
    unreached: int | float | None = None


@dataclass(frozen=True)
class Plan:
    """How a run goes when it is not one convergence from the algorithm's own start: the
    spec the backend is built for, the source its values start from, and the body that
    drives the :class:`~seraph.scheduler.Run`."""

    algorithm: Algorithm
    source: int | None
    drive: Callable[[Run], None]


@dataclass(frozen=True)
class Algorithm:
    name: str
    weight_mode: int
    strong_rule: str
    default_predictor: str
    needs_source: bool
    output: Output = Output()
    #: ``predictor="auto"`` on a backend where the weak history pays on long runs
    #: (:attr:`~seraph.backends.base.Backend.weak_history_pays`): the dense rounds run under
    #: the strong rule alone before the weak diagram joins it (None: auto stays strong).
    weak_after: int | None = None
    #: ``plan(graph, layout, config)``: a :class:`Plan` for this run, or None for one
    #: convergence from :meth:`initial_frontier`.
    plan: Callable[[object, Layout, EngineConfig], Plan | None] | None = \
        field(default=None, compare=False)

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

    def simple_plan(self, source: int | None) -> Plan:
        """One convergence from the initial values and frontier."""
        return Plan(self, source, lambda run: run.execute(self.initial_frontier(source)))
