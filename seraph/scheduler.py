"""The backend-agnostic engine: a run's rounds until convergence, and its configuration.

A run alternates dense rounds, which sweep every active page (:class:`~seraph.rounds.
DenseRounds`, cut into windows by the schedule, :mod:`seraph.schedules`), and sparse
rounds (:class:`~seraph.rounds.SparseRounds`): when the changed vertices' out-edges number
fewer than m/alpha, rounds go to the backend's push rounds (the CPU push engine, or the
GPU's own), and come back when that grows; when the vertices not yet proven final have
few in-edges, a bottom-up round pulls just those. Which pages are active is
:class:`~seraph.rounds.PageActivity`'s; which page each slot holds, :class:`~seraph.slots.
Slots`'. See docs/design.md, "Rounds and windows (schedules)".

Exactness: strong rules are proofs (see :mod:`seraph.spec`; docs/design.md, "Strong
predictors: the proofs"). A vertex the weak predictor skipped owes an attempt; before
convergence is reported every such vertex is re-attempted (its pages swept again), and the
run goes on if anything changes (docs/design.md, "Weak predictor and the recheck").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numba
import numpy as np

from seraph import interrupts, progress
from seraph.backends.base import Backend
from seraph.errors import ConfigError
from seraph.predictors import CODES as PREDICTOR_CODES
from seraph.predictors import WEAK, load_diagram
from seraph.rounds import DenseRounds, PageActivity, SparseRounds
from seraph.schedules import SCHEDULES as _SCHEDULES
from seraph.schedules import Schedule
from seraph.slots import Slots
from seraph.spec import SUM, Algorithm
from seraph.stats import RunStats, Trace

SCHEDULES = tuple(_SCHEDULES)
PUSH_ON = ("device", "host")
#: How connected components run: union-find (each edge read about once), or min-label
#: propagation over the pages (the predictors' subject).
COMPONENTS = ("union-find", "propagation")


@dataclass
class EngineConfig:
    """Everything that shapes a run but not its answer."""

    schedule: str = "pipelined"
    predictor: str = "auto"
    diagram: str | Path | None = None
    device: str = "auto"
    device_memory: int | None = None
    push_alpha: float | None = None  # None: see default_push_alpha
    push_on: str = "device"  # where a GPU's push rounds run (the CPU's always run on it)
    components: str = "union-find"  # connected components' method, one of COMPONENTS
    max_reentries: int = 8
    reentry_sweeps: int = 4
    trace: bool = False
    #: Several workers split the pages of one query (docs/design.md, "Many workers"): CPU
    #: worker processes, or GPUs, one process each, by id (a list), by count (the first
    #: ones) or "all". None: this process alone.
    workers: int | None = None
    devices: tuple[int, ...] | int | str | None = None
    #: The CPU threads the call's kernels run on (numba's ``set_num_threads``), at most the
    #: thread pool's size (``NUMBA_NUM_THREADS``); None: the pool's. A worker's own pool.
    threads: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def partitioned(self) -> bool:
        """Whether the query runs over several workers (or on GPUs named by ``devices``)."""
        return (self.workers or 1) > 1 or self.devices is not None

    @property
    def policy(self) -> Schedule:
        """The schedule's policy object (:mod:`seraph.schedules`)."""
        return _SCHEDULES[self.schedule]

    def check(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"unknown schedule {self.schedule!r}; expected one of "
                              f"{', '.join(SCHEDULES)}")
        if self.predictor not in ("auto", *PREDICTOR_CODES):
            raise ConfigError(f"unknown predictor {self.predictor!r}; expected auto, strong, "
                              "weak, combined or none")
        if self.push_alpha is not None and not (math.isfinite(self.push_alpha)
                                                and self.push_alpha >= 0):
            raise ConfigError(f"push_alpha must be a finite number >= 0, got "
                              f"{self.push_alpha} (0 disables the push engine)")
        if self.components not in COMPONENTS:
            raise ConfigError(f"unknown components method {self.components!r}; expected "
                              f"{', '.join(COMPONENTS)}")
        if self.push_on not in PUSH_ON:
            raise ConfigError(f"unknown push_on {self.push_on!r}; expected device or host")
        if self.max_reentries < 1 or self.reentry_sweeps < 1:
            raise ConfigError("max_reentries and reentry_sweeps must be at least 1")
        if self.diagram is not None:
            load_diagram(self.diagram)  # a bad diagram fails now, whichever predictor runs
        self._check_workers()
        self._check_threads()
        if self.diagram is not None and self.predictor in ("strong", "none"):
            raise ConfigError(f"a diagram describes the weak predictor's states, and predictor "
                              f"{self.predictor!r} does not use one: drop the diagram or use "
                              "predictor weak or combined (or auto)")

    def _check_threads(self) -> None:
        """Refuses a thread count that is not a whole number from 1 to the pool's size; a
        worker's pool is made for it (:func:`seraph.distributed.launch.environment`)."""
        if self.threads is None:
            return
        whole = isinstance(self.threads, int | np.integer) and not isinstance(self.threads, bool)
        if not (whole and self.threads >= 1):
            raise ConfigError(f"threads must be a whole number of at least 1, got "
                              f"{self.threads!r}")
        pool = numba.config.NUMBA_NUM_THREADS
        if not self.partitioned and self.threads > pool:
            raise ConfigError(f"threads={self.threads} but numba's thread pool has {pool}: "
                              "set NUMBA_NUM_THREADS before the process starts")

    def _check_workers(self) -> None:
        """Refuses workers or devices named wrongly, or with a device they cannot use."""
        def whole(x) -> bool:
            return isinstance(x, int) and not isinstance(x, bool) and x >= 1

        if self.workers is not None and not whole(self.workers):
            raise ConfigError(f"workers must be a whole number of at least 1, got "
                              f"{self.workers!r}")
        if isinstance(self.devices, list):
            self.devices = tuple(self.devices)
        if self.devices is not None and not (
                self.devices == "all" or whole(self.devices) or isinstance(self.devices, tuple)
                and self.devices and all(isinstance(d, int) and not isinstance(d, bool)
                                         and d >= 0 for d in self.devices)
                and len(set(self.devices)) == len(self.devices)):
            raise ConfigError(f"devices names GPUs: distinct ids (e.g. [0, 1]), a count, or "
                              f"'all'; got {self.devices!r}")
        if self.devices is not None and self.workers is not None:
            raise ConfigError("workers are CPU processes and devices GPUs: give one of them")
        if (self.workers or 1) > 1 and self.device == "cuda":
            raise ConfigError("workers run on the CPU; for several GPUs name them with "
                              "devices (--gpus)")
        if self.devices is not None and self.device == "cpu":
            raise ConfigError("devices name GPUs, but the device is cpu: drop one of them "
                              "(workers=N runs CPU worker processes)")

    def resolved_predictor(self, algorithm: Algorithm) -> str:
        if algorithm.skips_none:
            if self.predictor not in ("auto", "none") or self.diagram is not None:
                raise ConfigError(f"{algorithm.name} attempts every vertex each round, "
                                  f"skipping none: drop predictor {self.predictor!r} and any "
                                  "diagram")
            return "none"
        if algorithm.strong_rule is None and self.predictor in ("strong", "combined"):
            raise ConfigError(f"{algorithm.name} has no strong rule: use predictor weak, "
                              f"none or auto, not {self.predictor!r}")
        if not self.policy.allows_predictor:
            return "none"
        if self.predictor == "auto":
            # A diagram is a request for the weak predictor it describes.
            return "weak" if self.diagram is not None else algorithm.default_predictor
        return self.predictor


class Run:
    """One execution of an algorithm on a graph with a backend: the state its parts share
    (epoch, threshold, direction, re-check) and the loop that picks each round."""

    def __init__(self, graph, algorithm: Algorithm, backend: Backend, config: EngineConfig,
                 predictor: str, stats: RunStats, trace: Trace, weak_after: int | None = None):
        self.g, self.alg, self.be, self.cfg = graph, algorithm, backend, config
        self.schedule = config.policy
        self.predictor = PREDICTOR_CODES[predictor]
        # auto's weak half (api.predictor_and_layout): ``predictor`` is combined, and the
        # first ``weak_after`` dense rounds run under the strong rule alone.
        self.weak_after = weak_after
        if weak_after:
            self.predictor &= ~WEAK
        # auto's weak predictor for a program whose attempts succeed until its vertices
        # settle (Algorithm.weak_when_failing) joins after the first dense round in which
        # most attempts failed: before it there is nothing to skip.
        self.weak_when_failing = (algorithm.weak_when_failing and config.predictor == "auto"
                                  and config.diagram is None and bool(self.predictor & WEAK))
        if self.weak_when_failing:
            self.predictor &= ~WEAK
        self.stats, self.trace = stats, trace
        self.layout = backend.layout
        self.epoch = 0
        # The strong threshold the sweeps and bottom-up rounds use (prove); none before
        # the first round.
        self.proven = -1
        self.forward = True
        self.rechecking = False  # the current round is the weak predictor's final re-check
        self.moved = 0.0  # sum |change| of the recomputed sums written (SweepResult.moved)
        # Whether a vertex may owe an attempt (the weak predictor skipped one since the last
        # re-check or bottom-up round), and whether any ever did: a threshold found while
        # something owes proves nothing, and BFS's count of rounds never again (prove).
        self.owes = self.skipped_ever = False
        self.t0 = time.perf_counter()
        m = graph.num_edges
        alpha = backend.default_push_alpha() if config.push_alpha is None else \
            config.push_alpha
        # A sum's changes are no relaxations to push, nor bounded by a strong threshold.
        use_push = self.schedule.uses_sparse_rounds and alpha > 0 and m > 0 and \
            algorithm.combine != SUM
        self.push_limit = m / alpha if use_push else 0.0
        self.bottom_up_limit = backend.bottom_up_edge_limit(self.push_limit, m)
        self.activity = PageActivity(graph, backend)
        self.slots = Slots(graph, backend, stats, trace, self.t0)
        # The rounds refer back to the run weakly, so the run and everything its parts hold
        # (device arrays among them) go as soon as the call ends, not at the next garbage
        # collection: the next call's budget would otherwise share the device with them.
        self.dense = DenseRounds(self)
        self.sparse = SparseRounds(self)

    # -- the main loop --------------------------------------------------------------------
    def execute(self, frontier: np.ndarray | None, max_dense_rounds: int | None = None
                ) -> bool:
        """Runs to convergence from ``frontier``, the vertices whose values start changed
        (None: every vertex); returns True, or False where it stopped unconverged after
        ``max_dense_rounds`` dense rounds (None: no limit)."""
        # Marked with the current epoch, so every page reading them is active, also when
        # an earlier phase of the run swept pages.
        if frontier is None:
            # One vertex per source block marks them all; all m edges are the frontier's.
            first = np.arange(self.layout.num_blocks, dtype=np.int64) << self.layout.block_shift
            self.be.mark_blocks(first, self.epoch)
            sparse = self.g.num_edges < self.push_limit
            if sparse:
                frontier = np.arange(self.g.num_vertices, dtype=np.int64)
        else:
            self.be.mark_blocks(frontier, self.epoch)
            sparse = self.sparse.is_sparse(frontier)
        while True:
            interrupts.check()  # compiled work stopped early: its results are no answer
            if sparse:
                frontier = self.sparse.push(frontier)
                if len(frontier):
                    sparse = False
                    self.stats.switches_to_dense += 1
                    continue
                if not self._recheck():
                    return True
                sparse = False
                continue
            if not self.activity.active().any():
                if not self._recheck():
                    return True
                continue
            if max_dense_rounds is not None and self.stats.dense_rounds >= max_dense_rounds:
                return False
            if self.sparse.bottom_up():
                frontier = self.be.take_changed(self.push_limit)  # the vertices it lowered
                # Where the next round is bottom-up too, the lowered vertices' marked
                # blocks keep their pages active for it, or for a dense round.
                sparse = frontier is not None and len(frontier) > 0 \
                    and not self.be.pulls_again(len(frontier))
                continue
            progress.working("dense", self.stats)
            attempted = self.stats.updates_attempted
            changed_min, succeeded = self.dense.round()
            self._maybe_turn_weak(self.stats.updates_attempted - attempted, succeeded)
            if self.rechecking:  # it attempted every vertex that owed
                self.owes = self.rechecking = False
            self.end_round(succeeded, changed_min)
            self.stats.log_round("dense")
            progress.round_done("dense", self.stats)
            if not self.push_limit:
                continue  # the changed flags matter only to a hand-over to the push engine
            changed = self.be.take_changed(self.push_limit)
            if changed is not None and len(changed):
                frontier, sparse = changed, True
                self.stats.switches_to_sparse += 1

    def _maybe_turn_weak(self, attempted: int, succeeded: int) -> None:
        """auto's weak half joins once the run has had its dense rounds under the strong rule
        alone, or auto's weak predictor once a dense round's attempts (``attempted``, of
        which ``succeeded`` succeeded) mostly failed. No vertex owes anything yet and every
        state is the diagram's initial one, so the run goes on as one under that predictor
        would from a fresh start (design.md, section 8)."""
        if self.weak_after and self.stats.dense_rounds >= self.weak_after:
            self.predictor |= WEAK
            self.stats.predictor = "combined"
            self.weak_after = None
        if self.weak_when_failing and 2 * succeeded < attempted:
            self.predictor |= WEAK
            self.weak_when_failing = False

    def sums_gathered(self, sums) -> None:
        """A summing iteration summed every page of this run into ``sums`` (a partitioned
        run's worker adds the others' sums here)."""

    def forests_linked(self, parent) -> None:
        """Union-find linked this run's edges into the forest ``parent`` (a partitioned
        run's worker unites it with the others' here)."""

    def values_changed_outside(self) -> None:
        """The values changed outside a round (a plan's own step, as CC's labelling after
        its hub phase): nothing is proven final until a round has run, and what is marked
        from now on gets an epoch of its own."""
        self.proven = -1
        self.epoch += 1

    def settle_next_round(self) -> None:
        """The next round attempts every vertex of the pages it sweeps, as the weak
        predictor's re-check does, so that a vertex it put to sleep owes nothing after."""
        self.rechecking = True

    def end_round(self, succeeded: int, changed_min) -> None:
        self.stats.rounds += 1
        rule = self.alg.strong_rule
        if rule is not None and rule.counts_rounds:
            self.prove(self.rounds_bound())
        elif rule is not None and succeeded:
            self.prove(changed_min)
        if self.predictor & WEAK:
            self.stats.predictor_states.append(self.be.state_counts())

    def prove(self, threshold) -> None:
        """Takes ``threshold``, just found, as :attr:`proven` (the one the strong rule and
        bottom-up rounds use) where its argument held when it was found: nothing owed an
        attempt, and for BFS, whose bound counts rounds, nothing was ever skipped.
        Otherwise the last proven threshold stays: every later change descends from changes
        it bounded, so it stays a lower bound on them (design.md, section 8)."""
        if not self.owes and not (self.skipped_ever and self.alg.strong_rule.counts_rounds):
            self.proven = threshold

    def rounds_bound(self) -> int:
        """The BFS strong threshold: after k rounds every vertex within k hops holds its
        level, so a vertex holding k + 1 cannot be nearer and holds its level too."""
        return self.stats.rounds + 1

    def _recheck(self) -> bool:
        """Before reporting convergence: re-attempt every vertex the weak predictor owes.

        Returns True if there is work to do (their pages are forced active). With nothing
        skipped since the last re-check no vertex owes, and the states are not looked at."""
        if not self.predictor & WEAK or not self.owes:
            return False
        pages = self.be.take_owing_pages()
        if not len(pages):
            return False
        self.stats.rechecks += 1
        self.activity.force(pages)
        # The re-check round attempts every vertex it sweeps: skipping there would only
        # create new debts and the re-check could chase its own tail.
        self.rechecking = True
        return True
