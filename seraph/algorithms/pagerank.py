"""PageRank: the stationary distribution of a random surfer who follows a random out-edge
with probability ``damping`` and otherwise jumps to a vertex drawn from ``p`` (uniform,
or all at one vertex for personalised PageRank).

Method: pull-based power iteration, a summing vertex program (:data:`~seraph.spec.SUM`
over the operand ``x[u] / outdeg[u]``, :data:`~seraph.operators.SHARE`; the engine's
driver is :mod:`seraph.iterations`). From ``x = p`` (uniform ``1/n`` when not
personalised) each iteration computes

    x'[v] = (1 - d) p[v] + d (sum over in-edges (u -> v) of x[u] / outdeg[u] + D p[v])

where ``D`` is the rank held by vertices without out-edges (dangling), spread as ``p``
is, as networkx does. Duplicate edges and self-loops count as edges (out-degrees count
them, as the CSR does). The run stops when the L1 change ``sum |x' - x|`` falls below
``tolerance`` (networkx compares with ``n * tol``), or after ``max_iterations``, which
the result reports as not converged rather than raising. Ranks and sums are float64; the
shares ``x[u] / outdeg[u]`` are float32 where the tolerance leaves room for their
rounding (:attr:`PowerIteration.share_type`), since the sums read them at random.

Method ``delta`` (PageRank-delta, :class:`Delta`): the same ranks, as ``y / sum(y)`` with
``y = p + d M y``, found by the relaxation engine's rounds, which attempt only the pages a
change reaches, and there only the vertices the weak predictor does not put to sleep, with
the sums' total balanced between rounds; its answer meets the power iteration's bound.
Method ``gauss-seidel`` (:class:`GaussSeidel`): the same sums swept in place, every
vertex each round, as GAP's ``pr``, stopped by a bound from what the round wrote.

- L. Page, S. Brin, R. Motwani, T. Winograd. The PageRank citation ranking: bringing
  order to the web. Stanford InfoLab, 1999.
- networkx's ``pagerank`` (its conventions); Subway's ``pr`` (personalised PageRank).
- J. J. Whang, A. Lenharth, I. S. Dhillon, K. Pingali. Scalable data-driven PageRank:
  algorithms, system issues, and lessons learned. Euro-Par 2015 (data-driven PageRank).
- S. Beamer, K. Asanovic, D. Patterson. The GAP benchmark suite. arXiv:1508.03619, 2015
  (``pr``: Gauss-Seidel PageRank).

See docs/design.md, "Summing programs" and "PageRank-delta".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from seraph.algorithms.entry import Entry
from seraph.algorithms.verify import EDGE_CHUNK, pages, row_of, wrong
from seraph.api import as_graph, execute, make_config, public_call, source_index
from seraph.backends.base import add_at_p
from seraph.backends.caches import graph_cached, out_degrees
from seraph.errors import ConfigError, InputError
from seraph.iterations import iterate
from seraph.operators import OPERATORS, SHARE
from seraph.scheduler import EngineConfig
from seraph.spec import ACCUMULATOR, OPERAND, SCALE, SUM, Algorithm, Plan, Recompute
from seraph.stats import RunStats, Trace

#: What float64 rounding adds to the verifier's bounds: each rank is rounded a few times
#: an iteration, a few float64 units of the total rank, scaled up by the contraction's
#: ``1 / (1 - damping)`` at most a million.
ROUNDING_SLACK = 1e6 * 16 * float(np.finfo(np.float64).eps)
#: How the ranks are computed: by power iteration, by PageRank-delta's data-driven rounds
#: (:class:`Delta`), or by Gauss-Seidel sweeps (:class:`GaussSeidel`).
METHODS = ("power", "delta", "gauss-seidel")
#: The most float32 shares' rounding moves a step's ranks in L1: each share is within
#: 2^-24 of itself, and the shares times the out-degrees total at most the ranks' 1.
SHARE_ROUNDING = 2.0 ** -24


_FLOAT64 = np.dtype(np.float64)


@dataclass(frozen=True)
class PageRankProgram:
    """PageRank's parameters, ``personalization`` a store vertex or None, and what both
    methods do on the backend's vectors, written once over its array module."""

    damping: float = 0.85
    tolerance: float = 1e-6
    max_iterations: int = 100
    personalization: int | None = None

    def start(self, be) -> None:
        """The values ``p``, and each vertex's 1 / outdeg (0 where it has no out-edges)."""
        x = be.vector("values")
        x.fill(0)
        if len(x):
            add_at_p(x, 1.0, self.personalization)
        be.set_walk_scale()


@dataclass(frozen=True)
class PowerIteration(PageRankProgram):
    """PageRank's iteration (a :class:`seraph.iterations.SummingProgram`)."""

    @property
    def share_type(self) -> np.dtype:
        """float32 where the tolerance leaves room for its rounding, which halves the bytes
        the sums read at random; else float64. A rounded step is a damping-contraction but
        for twice :data:`SHARE_ROUNDING`, so the changes settle below ``2 SHARE_ROUNDING /
        (1 - damping)``, which this keeps under an eighth of the tolerance."""
        room = self.tolerance * (1 - self.damping)
        return np.dtype(np.float32 if room >= 16 * SHARE_ROUNDING else np.float64)

    @property
    def stop_below(self) -> float:
        """The tolerance, less what rounded shares may add to the next step's change, so
        that a float64 step from the answer moves it by at most ``damping * tolerance``
        (:func:`verify`)."""
        return self.tolerance - (SHARE_ROUNDING if self.share_type == np.float32 else 0.0)

    @property
    def vectors(self) -> tuple[tuple[str, np.dtype], ...]:
        return (OPERAND, self.share_type), (ACCUMULATOR, _FLOAT64), (SCALE, _FLOAT64)

    def plan(self, graph, layout, config: EngineConfig) -> Plan:
        return Plan(replace(SPEC, vectors=self.vectors), None, lambda run: iterate(run, self))

    def start(self, be) -> None:
        """The values ``p``, their shares, and the sums at 0."""
        super().start(be)
        be.xp.multiply(be.vector("values"), be.vector(SCALE), out=be.vector(OPERAND))
        be.vector(ACCUMULATOR).fill(0)

    def apply(self, be) -> float:
        """x' from the sums, the L1 change, and the next shares (a walk step,
        :meth:`~seraph.backends.base.Backend.walk_step`, which spreads the dangling rank
        as ``p`` from what the sums did not carry: the total rank stays 1)."""
        return be.walk_step(self.damping, 1 - self.damping, self.personalization)


@dataclass(frozen=True)
class Delta(PageRankProgram):
    """PageRank-delta (docs/design.md, "PageRank-delta"): the sums ``t`` of
    ``y = p + damping * M y`` (``M``: each in-edge's ``1 / outdeg`` of its tail), found by
    the relaxation's rounds with a recomputing pull (:class:`~seraph.spec.Recompute`), the
    operand of u being ``y[u] / outdeg[u]``; the ranks are then ``y / sum(y)``. With the
    dangling rank spread as ``p`` these are exactly PageRank's ranks, so no term touches
    every vertex each round, and only vertices whose in-neighbours moved are attempted.

    A vertex's sum is written when it moved by more than ``tolerance / 2`` of itself, so
    the sums left unwritten total at most ``tolerance / 2`` of all of them, and one power
    step from the ranks moves them by at most ``tolerance * (S - 1) / S <= damping *
    tolerance`` in L1 (S = sum(y)): the bound the power iteration meets, which the
    verifier checks. Between rounds the sums are scaled to balance their total
    (:meth:`rebalance`), so that the rounds need not wait for it to settle."""

    #: Its own vectors beside the sums: the operand and the scales (no accumulator).
    vectors = (OPERAND, _FLOAT64), (SCALE, _FLOAT64)

    def plan(self, graph, layout, config: EngineConfig) -> Plan:
        return Plan(replace(DELTA, recompute=self.rule(graph, self.tolerance / 2)), None,
                    self.drive)

    def rule(self, graph, eps: float, operand_type=_FLOAT64) -> Recompute:
        """The sums' rule (:class:`~seraph.spec.Recompute`): u's operand is ``(damping * t[u]
        + p[u]) / outdeg[u]``, ``p`` the jump."""
        uniform = self.personalization is None
        return Recompute(eps=eps, factor=self.damping,
                         spread=1 / graph.num_vertices if uniform and graph.num_vertices else 0.0,
                         vertex=-1 if uniform else self.personalization,
                         operand_type=operand_type)

    def rebalance(self, be, owed: float) -> bool:
        """Scales the sums so that the ranks' total balances, where that moves them by more
        than a write would (``tolerance / 2`` of themselves); returns whether it did.

        A round updates the sums in place, each vertex reading what the vertices before it
        just wrote, so the total ``sum(y)`` drifts, and its error, along the principal
        eigenvector of ``M``, decays only by ``damping`` a round. The solution meets
        ``1^T (I - d M) y = 1^T p = 1``, which is ``b(y) = 1`` with ``b(z) = (1 - d) sum(z)
        + d (z's sum over the vertices without out-edges)``; ``y = p + d t``, so scaling
        ``t`` by ``(1 - b(p)) / (d b(t))`` meets it (``owed``: ``1 - b(p)``). A projection
        onto what the solution meets, not a feedback: what is left decays as the power
        iteration's error does. Scaled sums give new operands
        (:meth:`~seraph.backends.base.Backend.walk_operands`, in the same pass as the
        scaling where the backend fuses them); otherwise the operands stand, since every
        write of a sum moved its operand with it, and a late round, which writes few sums,
        makes no pass over every vertex but the totals'."""
        d = self.damping
        total, dangling = be.walk_totals()
        have = d * ((1 - d) * total + d * dangling)
        factor = owed / have if have > 0 else 1.0
        moved = abs(factor - 1) > self.tolerance / 2
        if moved:
            be.walk_operands(d, factor, self.personalization)
        return moved

    def drive(self, run) -> None:
        """From a start to convergence; then the ranks, in place of the sums, and the bound
        on a power step's change that the run met (inf if it stopped unconverged).

        Any sums at least 0 are a start. Uniform jumps start every vertex with in-edges at
        ``y = 1 / (n (1 - damping))``, the ranks' total when no rank dangles, so that the
        sums do not all have to grow from nothing (in rounds that each add ``damping``
        times less); a personalised run starts at ``y = p``, and from its vertex alone.
        The rounds run one at a time, each followed by a :meth:`rebalance`; one that scaled
        the sums moved every operand, and every page is active again.

        Thresholded writes can carry a wave: a vertex that crosses ``eps`` writes the small
        changes its in-neighbours left unwritten, which pushes the next vertices over it in
        turn, one row of a grid a round for as many rounds as the grid has rows. Two rounds
        in a row whose writes did not fall, the second with most attempts failing, bear
        its mark (one alone may be a device's noise), and the next round sweeps every page
        and writes every sum that moved at all, the weak predictor's sleeping vertices
        among them: the unwritten changes settle at once, and the threshold finds none to
        carry after."""
        be, stats = run.be, run.stats
        owed = self.begin(run)
        if owed is None:
            return
        start = None if self.personalization is None else \
            np.array([self.personalization], dtype=np.int64)
        writes, flat = None, 0  # the last round's writes; the rounds since they last fell
        while True:
            succeeded, attempted = stats.updates_succeeded, stats.updates_attempted
            done = run.execute(start, stats.dense_rounds + 1)
            be.write_every_change = False
            if done or stats.dense_rounds >= self.max_iterations:
                break
            wrote = stats.updates_succeeded - succeeded
            tried = stats.updates_attempted - attempted
            flat = flat + 1 if writes is not None and wrote >= writes else 0
            settle = flat >= 2 and wrote < tried / 2
            writes, flat = (None, 0) if settle else (wrote, flat)
            start = np.empty(0, dtype=np.int64)  # the round's writes marked what they moved
            with be.vector_steps():
                moved = self.rebalance(be, owed)
            if moved or settle:
                run.values_changed_outside()
                start = None
            if settle:
                be.write_every_change = True
                run.settle_next_round()
        total = self.finish(run)
        stats.converged = done
        stats.change = self.tolerance * (total - 1) / total if done else math.inf

    def begin(self, run) -> float | None:
        """The start (see :meth:`drive`) and ``owed``, ``1 - b(p)`` (see :meth:`rebalance`);
        None where there is nothing to rank."""
        be, n, d = run.be, run.g.num_vertices, self.damping
        if not n:
            run.stats.converged, run.stats.change = True, 0.0
            return None
        with be.vector_steps():
            self.start(be)
            if self.personalization is None:
                be.fill_where_in_edges("values", 1 / (n * (1 - d)))
                be.split_sums_from_values()
            else:
                be.vector("values").fill(0)
            be.walk_operands(d, 1.0, self.personalization)
        jump_dangling = dangling_share(run.g) if self.personalization is None else \
            float(out_degrees(run.g)[self.personalization] == 0)
        return d * (1 - jump_dangling)

    def finish(self, run) -> float:
        """The ranks ``y / sum(y)`` in place of the sums; returns ``sum(y)``, at least 1
        since ``y >= p``."""
        be, t, d = run.be, run.be.vector("values"), self.damping
        with be.vector_steps():
            be.xp.multiply(t, t.dtype.type(d), out=t)
            add_at_p(t, 1.0, self.personalization)
            total = float(t.sum(dtype=np.float64))
            t /= t.dtype.type(total)
        return total


@dataclass(frozen=True)
class GaussSeidel(Delta):
    """PageRank by Gauss-Seidel sweeps, as GAP's ``pr``: PageRank-delta's sums of ``y = p +
    damping * M y``, every vertex's recomputed each round in place, so that it reads what
    the vertices before it wrote in the round, and every change written (no threshold, so
    no predictor: :attr:`~seraph.spec.Algorithm.skips_none`). A round's sums then lag the
    sums of what their in-neighbours hold only by what those wrote after being read, so
    the residual ``r = p + damping * M y - y`` has ``|r| <= damping^2 * W`` in L1, ``W``
    the round's written changes of the sums (``Run.moved``). A power step from the ranks
    ``y / S`` moves them by ``(r - sum(r) p) / S``, and ``sum(r) = 1 - b(y)`` (see
    :meth:`Delta.rebalance`) comes from the sums' totals: the run stops once

        (damping^2 * W + |1 - b(y)|) / S <= damping * tolerance,

    the power iteration's bound, which the verifier checks. Where the operands are float32
    (:attr:`operand_type`), each read is within :data:`SHARE_ROUNDING` of its exact value,
    whose total over the edges is at most ``S + damping * W``: ``|r|`` gains ``damping *
    SHARE_ROUNDING`` times that. Between rounds the sums are scaled so that ``b(y) = 1``,
    as PageRank-delta's are."""

    @property
    def operand_type(self) -> np.dtype:
        """float32 where the tolerance leaves room for its rounding, which halves the bytes
        the sums read at random; else float64. An operand set from its sum is rounded once,
        so the bound gains about ``SHARE_ROUNDING``, which this keeps under a sixteenth of
        the tolerance. (A backend that adds changes to its operands keeps them in float64:
        :class:`~seraph.spec.Recompute`.)"""
        return np.dtype(np.float32 if self.tolerance >= 16 * SHARE_ROUNDING else np.float64)

    def plan(self, graph, layout, config: EngineConfig) -> Plan:
        return Plan(replace(GAUSS_SEIDEL, recompute=self.rule(graph, 0.0, self.operand_type)),
                    None, self.drive)

    def drive(self, run) -> None:
        be, stats, d = run.be, run.stats, self.damping
        owed = self.begin(run)
        if owed is None:
            return
        start = None if self.personalization is None else \
            np.array([self.personalization], dtype=np.int64)
        bound, target = math.inf, d * self.tolerance
        rounding = SHARE_ROUNDING if be.vector(OPERAND).dtype == np.float32 else 0.0
        while stats.dense_rounds < self.max_iterations:
            run.moved = 0.0
            run.execute(start, stats.dense_rounds + 1)
            with be.vector_steps():
                total, dangling = be.walk_totals()
                have = d * ((1 - d) * total + d * dangling)
                s = 1 + d * total
                lag = d * run.moved
                bound = (d * lag + abs(owed - have) + rounding * d * (s + lag)) / s
                if bound <= target:
                    break
                be.walk_operands(d, owed / have if have > 0 else 1.0, self.personalization)
            run.values_changed_outside()
            start = None  # every operand moved: every page is active again
        self.finish(run)
        stats.converged = bound <= target
        stats.change = bound if stats.converged else math.inf


def dangling_share(graph) -> float:
    """The share of the vertices without out-edges (once per graph)."""
    return graph_cached(graph, "dangling share", lambda: float((out_degrees(graph) == 0).mean()))


SPEC = Algorithm("pagerank", OPERATORS[SHARE], None, "none", needs_source=False,
                 combine=SUM, vectors=PowerIteration().vectors, plan=PowerIteration().plan)
#: PageRank-delta's spec: its rule's parameters are each run's (:meth:`Delta.plan`). auto
#: runs it with the weak predictor where the backend says that pays (Backend.weak_pays),
#: from the first round in which most attempts failed: on a graph whose vertices settle at
#: different rounds (an R-MAT) it then skips most attempts of the late rounds, and where
#: they settle together it joins at the end, if at all (configs/weak-delta.toml).
DELTA = replace(SPEC, default_predictor="weak", default_diagram="weak-delta",
                weak_when_failing=True, vectors=Delta.vectors,
                recompute=Recompute(eps=0.5e-6, factor=0.85), plan=Delta().plan)
#: Gauss-Seidel's spec: PageRank-delta's with every change written, and so no predictor.
GAUSS_SEIDEL = replace(DELTA, default_predictor="none", weak_when_failing=False,
                       recompute=Recompute(eps=0.0, factor=0.85), plan=GaussSeidel().plan)


@dataclass
class PageRankResult:
    ranks: np.ndarray  #: float64 rank of each vertex, summing to 1
    iterations: int  #: the iterations run (PageRank-delta's: its dense rounds)
    #: Power iteration: the last iteration's L1 change (below the tolerance if converged).
    #: PageRank-delta and Gauss-Seidel: the most one power step could move the ranks in L1,
    #: by the bound its rounds met (below ``damping * tolerance``; inf if it did not
    #: converge).
    delta: float
    stats: RunStats
    trace: Trace

    @property
    def values(self) -> np.ndarray:
        return self.ranks

    @property
    def converged(self) -> bool:
        return bool(self.stats.converged)


def check_parameters(damping=0.85, tolerance=1e-6, max_iterations=100,
                     personalization=None, method="power") -> None:
    """Refuses a damping outside [0, 1] (1 too for PageRank-delta, whose sums grow without
    bound there), a tolerance that is not a positive number, fewer than one iteration and
    an unknown method, in one line each (the personalization vertex is checked against the
    graph)."""
    def number(x) -> bool:
        return isinstance(x, int | float | np.number) and not isinstance(x, bool)

    if not (number(damping) and 0 <= damping <= 1):
        raise ConfigError(f"damping must be a number from 0 to 1, got {damping!r}")
    if not (number(tolerance) and tolerance > 0 and math.isfinite(tolerance)):
        raise ConfigError(f"tolerance must be a positive number, got {tolerance!r}")
    if not (isinstance(max_iterations, int | np.integer) and not isinstance(max_iterations, bool)
            and max_iterations >= 1):
        raise ConfigError(f"max_iterations must be an integer of at least 1, got "
                          f"{max_iterations!r}")
    if method not in METHODS:
        raise ConfigError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method != "power" and damping == 1:
        raise ConfigError(f"method {method} needs a damping below 1: its sums grow without "
                          "bound at 1 (use method power)")


@public_call
def pagerank(graph, damping: float = 0.85, tolerance: float = 1e-6, max_iterations: int = 100,
             personalization: int | None = None, method: str = "power", *,
             config: EngineConfig | None = None, **options) -> PageRankResult:
    """PageRank (float64 ranks summing to 1). ``method="power"``: power iteration, which
    stops once an iteration's L1 change is below ``tolerance``; ``"delta"``: PageRank-delta
    (:class:`Delta`), whose rounds attempt only the vertices whose in-neighbours moved, and
    whose answer meets the same bound (one power step moves it by at most ``damping *
    tolerance`` in L1); ``"gauss-seidel"``: sweeps in place, as GAP's ``pr``
    (:class:`GaussSeidel`), to the same bound. Each stops after ``max_iterations``
    iterations (dense rounds), and then ``result.converged`` is False. ``personalization``:
    an input vertex id, where every jump (and the dangling vertices' rank) goes, for
    personalised PageRank.

    Options are those of :class:`seraph.scheduler.EngineConfig` (device, device_memory,
    ...); the power iteration and Gauss-Seidel skip no vertex, so they take no predictor,
    and PageRank-delta takes the weak one (or none), PageRank having no strong rule.
    """
    check_parameters(damping, tolerance, max_iterations, method=method)
    g = as_graph(graph)
    try:
        s = None if personalization is None else source_index(g, personalization)
    except InputError as e:
        raise InputError(f"personalization: {e}") from None
    config = config or make_config(**options)
    kind, spec = {"power": (PowerIteration, SPEC), "delta": (Delta, DELTA),
                  "gauss-seidel": (GaussSeidel, GAUSS_SEIDEL)}[method]
    program = kind(float(damping), float(tolerance), int(max_iterations), s)
    spec = replace(spec, vectors=program.vectors, plan=program.plan)
    ranks, stats, trace = execute(g, spec, None, config)
    return PageRankResult(ranks, stats.rounds, stats.change, stats, trace)


# -- the checks ------------------------------------------------------------------------------
def reference(graph, source: int | None = None, *, damping: float = 0.85,
              personalization: int | None = None, tolerance: float = 1e-13,
              max_iterations: int = 100_000) -> np.ndarray:
    """A float64 power iteration with scipy (the tests' oracle): the same iteration, to
    ``tolerance`` in L1. ``personalization`` is a store vertex."""
    indptr, indices, _weights = graph.csc()
    n = graph.num_vertices
    a = sp.csc_array((np.ones(len(indices)), indices, indptr), shape=(n, n))
    shares = a.T.tocsr()  # row v: v's in-edges, duplicates summed
    degrees = np.bincount(indices, minlength=n).astype(np.float64)
    scale = np.divide(1.0, degrees, out=np.zeros(n), where=degrees > 0)
    p = np.full(n, 1 / max(n, 1)) if personalization is None else np.eye(1, n,
                                                                          personalization)[0]
    x = p.copy()
    for _ in range(max_iterations):
        sums = shares @ (x * scale)
        new = damping * (sums + x[degrees == 0].sum() * p) + (1 - damping) * p
        change = np.abs(new - x).sum()
        x = new
        if change < tolerance:
            break
    return x


def check(graph, ranks: np.ndarray, source: int | None = None, *, damping: float = 0.85,
          tolerance: float = 1e-6, personalization: int | None = None,
          method: str = "power") -> str | None:
    """None if ``ranks`` are within the tolerance's L1 bound of :func:`reference` (see
    :func:`l1_bound`; either method's answer meets it), else by how much they are not."""
    want = reference(graph, damping=damping, personalization=personalization)
    error = float(np.abs(np.asarray(ranks, np.float64) - want).sum())
    bound = l1_bound(damping, tolerance)
    if error <= bound:
        return None
    return f"the ranks are {error:.3g} from scipy's in L1, more than the bound {bound:.3g}"


def l1_bound(damping: float, tolerance: float) -> float:
    """How far (L1) a converged answer may be from the exact ranks: a step is a
    ``damping``-contraction in L1, so ranks whose residual ``|step(x) - x|`` is r lie
    within ``r / (1 - damping)`` of its fixpoint, and :func:`verify` accepts residuals up
    to ``damping * tolerance`` plus float64 rounding's slack."""
    return (damping * tolerance + ROUNDING_SLACK) / max(1 - damping, 1e-12)


def verify(graph, ranks: np.ndarray, source: int | None = None, predecessors=None, *,
           damping: float = 0.85, tolerance: float = 1e-6,
           personalization: int | None = None, method: str = "power") -> str | None:
    """None if ``ranks`` are PageRank's within ``tolerance``, else what is wrong, in O(m)
    and independent of the engine: the ranks are finite and at least 0, they sum to 1,
    and one power-iteration step from them, computed in float64 page by page, moves them
    by at most ``damping * tolerance`` plus float64 rounding's slack in L1.

    Why that bound: a step is a ``damping``-contraction in L1, so once an iteration's
    change is below ``tolerance`` the next step moves its ranks by less than ``damping *
    tolerance``; the ranks are rounded a few times a step (:data:`ROUNDING_SLACK`).
    PageRank-delta's and Gauss-Seidel's answers meet the same bound (:class:`Delta`,
    :class:`GaussSeidel`), so ``method`` changes nothing. ``personalization`` is a store
    vertex."""
    n = graph.num_vertices
    x = np.ascontiguousarray(ranks, dtype=np.float64)
    if len(x) != n:
        return f"{len(x)} ranks for {n} vertices"
    bad = (~(np.isfinite(x) & (x >= 0))).astype(np.uint8)
    found = wrong(graph, bad, lambda v, _code: f"has rank {ranks[v]}, not a number >= 0")
    if found or n == 0:
        return found
    total = float(x.sum())
    if abs(total - 1) > ROUNDING_SLACK:
        return f"the ranks sum to {total:.9g}, not 1"
    indptr = graph.array("csc/indptr")
    degrees = np.zeros(n, dtype=np.int64)
    for _start, indices, _w in pages(graph):
        _count_tails(indices, degrees)
    share = np.divide(x, degrees, out=np.zeros(n), where=degrees > 0)
    sums = np.zeros(n)
    for start, indices, _w in pages(graph):
        _sum_shares(indptr, start, indices, share, sums)
    p = np.full(n, 1 / n) if personalization is None else np.eye(1, n, personalization)[0]
    step = damping * (sums + x[degrees == 0].sum() * p) + (1 - damping) * p
    residual = float(np.abs(step - x).sum())
    bound = damping * tolerance + ROUNDING_SLACK
    if residual <= bound:
        return None
    return (f"one power-iteration step moves the ranks by {residual:.3g} in L1, more than "
            f"damping * tolerance + rounding slack = {bound:.3g}")


@njit(cache=True)
def _count_tails(indices, degrees):
    """Adds the page's in-edges to their tails' out-degrees."""
    for u in indices:
        degrees[u] += 1


@njit(cache=True, parallel=True)
def _sum_shares(indptr, start, indices, share, sums):
    """Adds, for each vertex with in-edges in the page (first edge ``start``), the shares
    of their tails; vertex ranges in parallel, so no two tasks write one vertex."""
    end = start + len(indices)
    first, last = row_of(indptr, start), row_of(indptr, end - 1)
    count = last - first + 1
    chunks = max(1, min(count, len(indices) // EDGE_CHUNK + 1))
    for c in prange(chunks):
        for v in range(first + count * c // chunks, first + count * (c + 1) // chunks):
            total = 0.0
            for i in range(max(indptr[v], start), min(indptr[v + 1], end)):
                total += share[indices[i - start]]
            sums[v] += total


def summary(ranks: np.ndarray) -> str:
    top = f"highest rank {float(ranks.max()):.4g} of " if len(ranks) else ""
    return f"{top}{len(ranks):,} vertices ranked"


ENTRY = Entry(SPEC, pagerank, PageRankResult, reference, check, verify, summary,
              options=("damping", "tolerance", "max_iterations", "personalization", "method"),
              vertex_options=("personalization",),
              source_hint="use --personalization V for PageRank personalised to vertex V",
              check_options=check_parameters)
