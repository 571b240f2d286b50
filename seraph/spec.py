"""What the engine knows of an algorithm: a vertex program over one edge operator.

An algorithm declares its edge operator (:mod:`seraph.operators`: the offer over an edge,
which fixes the value dtype and the min's identity), how its values start, which strong
rule proves a vertex converged, its default predictor, how its result leaves the engine,
the specialisations it may use, and, for one that does not simply run to convergence from
its start, a :class:`Plan`. The engine does the rest; the algorithms themselves are
:mod:`seraph.algorithms` (docs/design.md, "Vertex programs").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from seraph.kernels import fill, fill_ids
from seraph.operators import EdgeOperator

if TYPE_CHECKING:
    from seraph.backends.layout import Layout
    from seraph.scheduler import EngineConfig, Run

@dataclass(frozen=True)
class StrongRule:
    """A proof that ``value[v] <= threshold`` is final (docs/design.md, "Strong predictors:
    the proofs"); the engine keeps the threshold as the rule says."""

    name: str
    #: True: the threshold is k + 1 after k completed rounds (hop counts: after k rounds
    #: every vertex within k hops holds its exact level, so a value <= k + 1 can only be
    #: exact). False: it is the smallest value any update wrote in the last round (the
    #: Dijkstra argument, for any offer that never lowers what it is made from).
    counts_rounds: bool


#: BFS's rule; with it a pull may stop at the first in-neighbour offering the threshold.
LEVELS = StrongRule("levels", counts_rounds=True)
#: CC's, SSSP's and SSWP's rule. For CC the smallest label whose component size changed is
#: exactly the smallest value written, so the labels below it form closed, settled
#: components (docs/engine.md).
SMALLEST_WRITTEN = StrongRule("smallest written", counts_rounds=False)


#: How a program combines what its in-edges give a vertex. MIN: the relaxation
#: ``value[v] = min(value[v], min of the offers)``, run to its fixpoint by rounds over the
#: active pages. SUM: a power iteration, each iteration summing the operand over every
#: in-edge once (:mod:`seraph.iterations`; docs/design.md, "Summing programs"), or, for a
#: program that recomputes (:class:`Recompute`), rounds over the active pages as a min's.
MIN, SUM = "min", "sum"
#: The vertex vectors every summing program keeps besides its values: what an iteration
#: sums over the in-edges, and the sums; and what a recomputing program's operand moves by
#: per unit of its vertex's sum (:class:`Recompute`).
OPERAND, ACCUMULATOR, SCALE = "operand", "accumulator", "scale"


@dataclass(frozen=True)
class Recompute:
    """A summing program that runs on the relaxation's rounds instead of in iterations
    (docs/design.md, "PageRank-delta"). An attempt on a vertex recomputes its whole sum,
    ``value[v] = sum of operand[u] over the in-edges (u -> v)``, from the operands as they
    are: re-sweeping a page, or reading an operand before or after another thread changes
    it, never counts an edge twice, so windows, reentries, page activity and the weak
    predictor's skips apply as they do to a min. The attempt succeeds, and the vertex's
    operand follows its sum, when the sum moved by more than ``eps`` times the sum it
    replaces; otherwise nothing is written, and the change left unwritten, at most that
    share of the sum, is the vertex's residual. Sums are float64 and operands at least 0,
    so the sums' total bounds the residuals'.

    The operand is ``(factor * value[v] + jump[v]) * scale[v]``, ``jump[v]`` being
    ``spread``, plus 1 at ``vertex`` (-1: none). A backend that sets it so from the sum
    rounds it once a write, and keeps it in ``operand_type``; one that adds ``factor *
    scale[v] * change`` to it (a GPU's, where a vertex's pieces meet in atomics) rounds it
    anew with each change, and keeps it in float64."""

    eps: float
    factor: float
    spread: float = 0.0
    vertex: int = -1
    operand_type: np.dtype = np.dtype(np.float64)


@dataclass(frozen=True)
class Output:
    """How a public result holds an algorithm's values: its dtype (None: the values' own),
    what stands for an unreached vertex (None: the algorithm's infinity itself), and, where
    the values are order-reversing codes of the public ones, the code's base: a public
    value's bits are ``code_base`` minus the value (:func:`seraph.operators.width_codes`:
    the engine's min is then the public max)."""

    dtype: np.dtype | None = None
    unreached: int | float | None = None
    code_base: int | None = None

    def engine_values(self, public: np.ndarray, inf) -> np.ndarray:
        """The engine's values of a public result, which predecessors are walked over: the
        result itself, or its codes with ``inf`` for the unreached."""
        if self.code_base is None:
            return public
        codes = self.code_base - public.view(np.dtype(f"i{public.itemsize}"))
        return np.where(public == self.unreached, inf, codes)


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
    """A vertex program (docs/design.md, "Vertex programs")."""

    name: str
    operator: EdgeOperator
    #: None for a summing program: it stops on a tolerance, and no value is ever final.
    strong_rule: StrongRule | None
    default_predictor: str
    needs_source: bool
    output: Output = Output()
    combine: str = MIN
    #: The vertex vectors a summing program keeps besides its values, by name and dtype,
    #: OPERAND and ACCUMULATOR among them (OPERAND and SCALE for one that recomputes); the
    #: layout counts them.
    vectors: tuple[tuple[str, np.dtype], ...] = ()
    #: A summing program whose rounds recompute each attempted vertex's sum (None: one
    #: that iterates, its plan summing every page once an iteration).
    recompute: Recompute | None = None
    #: The weak predictor's diagram when the run names none (a name in configs/).
    default_diagram: str = "weak-seraph"
    #: SSSP's specialisation: each row's in-edges are read lightest first, a pull stops at
    #: the first in-edge whose weight alone reaches its best, and the strong rule adds each
    #: vertex's lightest in-edge (:mod:`seraph.lightest`). Only for an offer of ``d + w``.
    lightest_first: bool = False
    #: ``predictor="auto"`` on a backend where the weak predictor pays
    #: (:meth:`~seraph.backends.base.Backend.weak_pays`): the dense rounds run under
    #: the strong rule alone before the weak diagram joins it (None: auto stays strong).
    weak_after: int | None = None
    #: ``predictor="auto"`` where it resolves to the weak predictor (on a backend where that
    #: pays; elsewhere auto runs no predictor): it joins after the first
    #: dense round in which most attempts failed, for a program whose attempts succeed until
    #: its vertices settle (PageRank-delta), where until then it has nothing to skip.
    weak_when_failing: bool = False
    #: ``plan(graph, layout, config)``: a :class:`Plan` for this run, or None for one
    #: convergence from :meth:`initial_frontier`.
    plan: Callable[[object, Layout, EngineConfig], Plan | None] | None = \
        field(default=None, compare=False)

    @property
    def skips_none(self) -> bool:
        """A summing program that attempts every vertex each round, so that no predictor
        applies: one that iterates, or one that recomputes and writes every change (eps 0:
        its bound counts on every vertex's sum being current)."""
        return self.combine == SUM and (self.recompute is None or self.recompute.eps == 0)

    def __post_init__(self):
        if self.combine not in (MIN, SUM):
            raise ValueError(f"{self.name}: unknown combine {self.combine!r}")
        if self.combine == SUM:
            kept = {OPERAND, ACCUMULATOR} if self.recompute is None else {OPERAND, SCALE}
            if not (kept <= dict(self.vectors).keys() and self.plan is not None):
                raise ValueError(f"{self.name}: this summing program keeps the vectors "
                                 f"{', '.join(sorted(kept))} and has a plan")
        elif self.recompute is not None:
            raise ValueError(f"{self.name}: only a summing program recomputes its sums")
        if self.combine == MIN and self.strong_rule is None:
            raise ValueError(f"{self.name}: a relaxing program needs a strong rule")
        if self.lightest_first and self.operator.formula != "d + w":
            raise ValueError(f"{self.name}: lightest_first needs the offer d + w, "
                             f"not {self.operator.formula}")

    @property
    def op(self) -> int:
        """The edge operator's code, what the CPU's compiled kernels switch on."""
        return self.operator.code

    @property
    def dtype(self) -> np.dtype:
        return self.operator.dtype

    @property
    def inf(self):
        return self.operator.inf

    @property
    def unreached(self):
        """What a public result holds for a vertex the source does not reach."""
        return self.inf if self.output.unreached is None else self.output.unreached

    @property
    def levels(self) -> bool:
        """BFS's specialisation: the rounds count levels, so a pull stops at the first
        in-neighbour offering the threshold (its bitmaps, :func:`seraph.backends.cpu.pull.
        pull_floor`) and a device pushes levels further when pages move."""
        return self.strong_rule is not None and self.strong_rule.counts_rounds

    def initial_values(self, num_vertices: int, source: int | None,
                       out: np.ndarray | None = None) -> np.ndarray:
        """Values before the first round: 0 at the source (the offer's best start) and the
        identity elsewhere, or every vertex its own id (CC); written into ``out`` where
        given (a backend's own array: built apart, they would be written twice)."""
        if not self.needs_source:
            if out is None:
                return np.arange(num_vertices, dtype=self.dtype)
            fill_ids(out)
            return out
        values = np.empty(num_vertices, dtype=self.dtype) if out is None else out
        fill(values, self.inf)
        values[source] = 0
        return values

    def initial_frontier(self, source: int | None) -> np.ndarray | None:
        """The vertices whose values start "changed" (their out-edges must be relaxed);
        None for every vertex (CC), which the engine need not list."""
        return np.array([source], dtype=np.int64) if self.needs_source else None

    def simple_plan(self, source: int | None) -> Plan:
        """One convergence from the initial values and frontier."""
        return Plan(self, source, lambda run: run.execute(self.initial_frontier(source)))
