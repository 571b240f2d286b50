"""The backend-agnostic engine: rounds, sliding windows, activity, dense/sparse switches.

A *round* visits every active page once in slot order (DESIGN section 4). How a round is
cut into windows is the *schedule*:

- ``pipelined`` (default): a window of resident pages is swept again and again while the
  next pages copy into the other slots; when a copy lands, every page that has landed
  joins and as many of the oldest leave (the Seraph paper's pipelined subgraph
  iteration).
- ``reentry``: CLIP-style groups of S-1 pages, each loaded, swept a fixed number of times,
  then replaced; no overlap between groups.
- ``single``: every page once per round, no reentry, no predictor, no push engine and no
  activity skipping: the Graphie/Garaph-style full-pass baseline.

A page is *active* if a source block it reads changed at or after the epoch (sweep
number) in which the page was last swept. When the changed vertices' out-edges number
fewer than m/alpha, rounds go to the backend's push rounds (the CPU push engine, or the
GPU's own), and come back when that grows.

Exactness: strong rules are proofs (see :mod:`seraph.algorithms`). A vertex the weak
predictor skipped owes an attempt; before convergence is reported every such vertex is
re-attempted (its pages swept again), and the run goes on if anything changes.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seraph.algorithms import ROUNDS, Algorithm
from seraph.backends.base import Backend, Layout, graph_cached, out_degrees
from seraph.backends.cpu_kernels import NONE, STRONG, WEAK, page_source_blocks, pages_active
from seraph.compiling import compile_seconds
from seraph.errors import ConfigError
from seraph.predictors import load_diagram
from seraph.push import edges_below
from seraph.stats import RunStats, Trace

SCHEDULES = ("pipelined", "reentry", "single")
PUSH_ON = ("device", "host")
#: Page copies the pipelined schedule keeps in flight when it has the slots (at most half
#: of them, less one).
PREFETCH = 4
PREDICTOR_CODES = {"none": NONE, "strong": STRONG, "weak": WEAK}
#: On the CPU, a bottom-up round takes up to this many times the push limit's edges: it
#: reads each in-edge once with no atomic write, about half the cost of a pushed edge
#: (2.1-3.4 ns against 3.9-6.4 ns on RMAT-20, 2 threads).
PULL_PER_PUSH = 2
#: On a GPU whose pages move, a bottom-up round takes up to this share of all edges
#: (see bottom_up_edge_limit).
GPU_BOTTOM_UP_SHARE = 0.7
#: Passes the pipelined schedule makes over a round's last window, which no copy follows.
#: Re-sweeping it there leaves the copy engine idle, and the next round starts with the
#: same pages, re-sweeping them while its copies run (docs/engine.md).
LAST_WINDOW_SWEEPS = 1


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
    max_reentries: int = 8
    reentry_sweeps: int = 4
    trace: bool = False
    extra: dict = field(default_factory=dict)

    def check(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"unknown schedule {self.schedule!r}; expected one of "
                              f"{', '.join(SCHEDULES)}")
        if self.predictor not in ("auto", *PREDICTOR_CODES):
            raise ConfigError(f"unknown predictor {self.predictor!r}; expected auto, strong, "
                              "weak or none")
        if self.push_alpha is not None and self.push_alpha < 0:
            raise ConfigError(f"push_alpha must be >= 0 (0 disables the push engine), got "
                              f"{self.push_alpha}")
        if self.push_on not in PUSH_ON:
            raise ConfigError(f"unknown push_on {self.push_on!r}; expected device or host")
        if self.max_reentries < 1 or self.reentry_sweeps < 1:
            raise ConfigError("max_reentries and reentry_sweeps must be at least 1")
        if self.diagram is not None:
            load_diagram(self.diagram)  # a bad diagram fails now, whichever predictor runs

    def resolved_predictor(self, algorithm: Algorithm) -> str:
        if self.schedule == "single":
            return "none"
        if self.predictor == "auto":
            # A diagram is a request for the weak predictor it describes.
            return "weak" if self.diagram is not None else algorithm.default_predictor
        return self.predictor


def page_summary(graph, layout: Layout) -> np.ndarray:
    """Source blocks read by each page (a bit per block), built once per graph and block
    size."""
    return graph_cached(graph, ("page_summary", layout.block_shift), lambda: page_source_blocks(
        graph.csc()[1], graph.page_edges, graph.num_pages, layout.block_shift,
        layout.num_blocks))


def default_push_alpha(backend: Backend) -> float:
    """20 (push when the frontier's out-edges are under 5% of the edges), except on a GPU
    holding the whole graph: there a dense round over the active pages costs about a
    millisecond, less than taking the values to the host and back, so it never pushes."""
    return 0.0 if backend.name == "cuda" and backend.layout.resident else 20.0


def bottom_up_edge_limit(backend: Backend, push_limit: float, num_edges: int) -> float:
    """The most in-edges a bottom-up round takes (it runs only where pushes do).

    On the CPU, :data:`PULL_PER_PUSH` times the push limit. On a GPU, a share of all edges
    (:data:`GPU_BOTTOM_UP_SHARE`): the round reads the unsettled vertices' in-edges from
    the host's pinned CSC in place, in aligned 128-byte tiles at about the PCIe copy rate
    (kernels/pull.cu, pull_tiles), where the dense round moves every active page. RMAT-26
    at 25% on an H100 (session 11): BFS's round read 875 M in-edges in 73 ms, where a
    dense round over all 2.1 G takes about 0.25 s; SSSP took 0.756 s at 0.7 and 0.9, with
    one dense round where 0.5 needs two (0.821 s). docs/engine.md has the figures."""
    if backend.name == "cuda":
        return GPU_BOTTOM_UP_SHARE * num_edges
    return PULL_PER_PUSH * push_limit


class Run:
    """One execution of an algorithm on a graph with a backend."""

    def __init__(self, graph, algorithm: Algorithm, backend: Backend, config: EngineConfig,
                 predictor: str, stats: RunStats, trace: Trace):
        self.g, self.alg, self.be, self.cfg = graph, algorithm, backend, config
        self.predictor = PREDICTOR_CODES[predictor]
        self.stats, self.trace = stats, trace
        self.layout = backend.layout
        self.page_blocks = page_summary(graph, self.layout)
        self.processed = np.zeros(graph.num_pages, dtype=np.int64)
        self.epoch = 0
        self.threshold = -1  # no vertex is proven converged before the first round
        self.slot_page = np.full(self.layout.num_slots, -1, dtype=np.int64)
        self.busy = np.zeros(self.layout.num_slots, dtype=np.bool_)  # in a window or copying
        self.forward = True
        self.rechecking = False  # the current round is the weak predictor's final re-check
        self.t0 = time.perf_counter()
        m = graph.num_edges
        alpha = default_push_alpha(backend) if config.push_alpha is None else config.push_alpha
        use_push = config.schedule != "single" and alpha > 0 and m > 0
        self.push_limit = m / alpha if use_push else 0.0
        self.bottom_up_limit = bottom_up_edge_limit(backend, self.push_limit, m)

    # -- activity -------------------------------------------------------------------------
    def active_pages(self, pages: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask of ``pages`` (default: all) that need a sweep now."""
        # Contiguous, so pages_active is compiled for one array layout only.
        pages = np.arange(self.g.num_pages) if pages is None else \
            np.ascontiguousarray(pages, np.int64)
        return pages_active(pages, self.page_blocks, self.be.block_epochs(),
                            self.processed)

    # -- the main loop --------------------------------------------------------------------
    def execute(self, frontier: np.ndarray | None) -> None:
        """Runs to convergence from ``frontier``, the vertices whose values start changed
        (None: every vertex)."""
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
            sparse = self._is_sparse(frontier)
        while True:
            if sparse:
                frontier = self._push(frontier)
                if len(frontier):
                    sparse = False
                    self.stats.switches_to_dense += 1
                    continue
                if not self._recheck():
                    return
                sparse = False
                continue
            if not self.active_pages().any():
                if not self._recheck():
                    return
                continue
            if self._bottom_up():
                frontier = self.be.take_changed(self.push_limit)  # the vertices it lowered
                sparse = frontier is not None and len(frontier) > 0
                continue
            changed_min, succeeded = self._dense_round()
            self.rechecking = False
            self._end_round(succeeded, changed_min)
            if not self.push_limit:
                continue  # the changed flags matter only to a hand-over to the push engine
            changed = self.be.take_changed(self.push_limit)
            if changed is not None and len(changed):
                frontier, sparse = changed, True
                self.stats.switches_to_sparse += 1

    def components_from_hub(self, hub: int) -> None:
        """Connected components with the largest one found first, as GAP's Afforest does:
        min-label propagation from every vertex moves 1.75 passes of pages on an R-MAT,
        most of them to spread labels through the giant component, which a reach from its
        hub covers in one BFS-like pass with push and bottom-up rounds.

        The backend runs :data:`~seraph.algorithms.REACH` from ``hub`` (values start at
        infinity, 0 at the hub). Then every reached vertex takes the smallest reached id,
        its component's label, and every other vertex its own id; from there the other
        components' labels spread as plain CC's do, starting from the unreached vertices
        with out-edges (on an R-MAT, small components: push rounds). The answer is plain
        CC's: the hub's component is closed and holds its smallest id, and no other
        label can enter or leave it."""
        self.execute(np.array([hub], dtype=np.int64))
        spreading = self.be.label_unreached()
        # The labels changed outside a round: nothing is proven final until one has run.
        self.threshold = -1
        self.epoch += 1
        self.execute(spreading)

    def _is_sparse(self, frontier: np.ndarray) -> bool:
        return self.push_limit > 0 and edges_below(frontier, out_degrees(self.g),
                                                   self.push_limit)

    def _end_round(self, succeeded: int, changed_min) -> None:
        self.stats.rounds += 1
        if self.alg.strong_rule == ROUNDS:
            self.threshold = self._rounds_bound()
        elif succeeded:
            self.threshold = changed_min
        if self.predictor == WEAK:
            self.stats.predictor_states.append(self.be.state_counts())

    def _rounds_bound(self) -> int:
        """The BFS strong threshold: after k rounds every vertex within k hops holds its
        level, so a vertex holding k + 1 cannot be nearer and holds its level too."""
        return self.stats.rounds + 1

    def _recheck(self) -> bool:
        """Before reporting convergence: re-attempt every vertex the weak predictor owes.

        Returns True if there is work to do (their pages are forced active)."""
        if self.predictor != WEAK:
            return False
        pages = self.be.take_owing_pages()
        if not len(pages):
            return False
        self.stats.rechecks += 1
        self.processed[pages] = -1
        # The re-check round attempts every vertex it sweeps: skipping there would only
        # create new debts and the re-check could chase its own tail.
        self.rechecking = True
        return True

    # -- sparse rounds --------------------------------------------------------------------
    def _push(self, frontier) -> object:
        """Push rounds (the backend's :meth:`~Backend.push`); returns the vertices still
        waiting, empty when converged."""
        start, compiled = time.perf_counter(), compile_seconds()
        self.epoch += 1
        res = self.be.push(frontier, self.push_limit, self.epoch)
        self.stats.sparse_rounds += res.rounds
        self.stats.rounds += res.rounds
        self.stats.edges_pushed += res.edges
        self.stats.updates_succeeded += res.succeeded
        self.stats.sparse_time += time.perf_counter() - start - (compile_seconds() - compiled)
        if self.alg.strong_rule == ROUNDS:
            self.threshold = self._rounds_bound()
        elif len(res.frontier):
            # Every later update descends from a vertex still waiting to push, and weights
            # are non-negative, so no vertex at or below their smallest value can change.
            self.threshold = res.minimum
        self.trace.add("push", start - self.t0, time.perf_counter() - self.t0,
                       rounds=res.rounds, edges=res.edges)
        return res.frontier

    def _bottom_up(self) -> bool:
        """A round that pulls the vertices not yet proven final, when their in-edges are
        few enough (see :mod:`seraph.bottom_up`); returns whether it ran. The weak
        predictor's skips void the strong proofs, so under it no vertex counts as settled."""
        if not self.push_limit or self.predictor == WEAK or self.threshold < 0:
            return False
        start, compiled = time.perf_counter(), compile_seconds()
        res = self.be.bottom_up(self.threshold, self.bottom_up_limit, self.epoch + 1)
        if res is None:
            return False
        self.epoch += 1
        # Every vertex that could change pulled after every change so far: only this
        # round's own changes can make a page active.
        self.processed[:] = self.epoch
        s = self.stats
        s.bottom_up_rounds += 1
        s.sparse_rounds += 1
        s.edges_pulled_bottom_up += res.edges
        s.updates_attempted += res.attempted
        s.updates_succeeded += res.succeeded
        self._end_round(res.succeeded, res.minimum)
        s.sparse_time += time.perf_counter() - start - (compile_seconds() - compiled)
        self.trace.add("bottom-up", start - self.t0, time.perf_counter() - self.t0,
                       vertices=res.attempted, edges=res.edges)
        return True

    # -- dense rounds ---------------------------------------------------------------------
    def _dense_round(self):
        """One round under the configured schedule; returns (smallest value written, count)."""
        self.stats.dense_rounds += 1
        order = np.arange(self.g.num_pages)
        if self.cfg.schedule != "single":
            # A page active now stays active until it is swept (block epochs only grow),
            # so the schedules copy the round's pages without looking at them again.
            active = self.active_pages()
            self.stats.pages_skipped += int((~active).sum())
            order = order[active]
        if not self.forward:
            order = order[::-1]
        self.forward = not self.forward
        self._round_min, self._round_succeeded = self.alg.inf, 0
        if self.layout.resident:
            self._sweep(np.zeros(len(order), dtype=np.int64), order)
        elif self.cfg.schedule == "pipelined":
            self._pipelined(order)
        elif self.cfg.schedule == "reentry":
            self._reentry(order)
        else:
            self._single(order)
        return self._round_min, self._round_succeeded

    def _sweep(self, slots: np.ndarray, pages: np.ndarray, max_sweeps: int = 1,
               incoming: int | None = None, mandatory: int | None = None) -> np.ndarray:
        """Sweeps pages (already resident in ``slots``) up to ``max_sweeps`` times, stopping
        early as :meth:`Backend.sweep_until` says; returns the pages it swept."""
        if not len(pages):
            return pages
        self.epoch += 1
        start, compiled = time.perf_counter(), compile_seconds()
        predictor = NONE if self.rechecking or self.cfg.schedule == "single" else \
            self.predictor
        res = self.be.sweep_until(slots, pages, predictor, self.threshold, self.epoch,
                                  max_sweeps, incoming,
                                  len(pages) if mandatory is None else mandatory)
        end = time.perf_counter()
        # A page has pulled every change made before the pass in which it was last swept,
        # so only changes from that pass's epoch on make it active again.
        last = self.epoch + res.sweeps - 1
        done = res.last_pass_pages
        self.processed[pages[:done]] = last
        if res.sweeps > 1:
            self.processed[pages[done:]] = last - 1
        self.epoch = last
        s = self.stats
        s.sweeps += res.sweeps
        s.reentries += res.sweeps - 1
        s.kernel_time += end - start - (compile_seconds() - compiled)
        s.updates_attempted += res.attempted
        s.updates_succeeded += res.succeeded
        s.skipped_strong += res.skipped_strong
        s.skipped_weak += res.skipped_weak
        if res.succeeded:
            self._round_succeeded += res.succeeded
            self._round_min = min(self._round_min, res.minimum)
        if self.trace.enabled:
            self.trace.add("compute", start - self.t0, end - self.t0, pages=pages.tolist(),
                           updates=res.succeeded, sweeps=res.sweeps)
        return pages if res.sweeps > 1 else pages[:done]

    def _place(self, page: int) -> int:
        """Puts ``page`` into a slot that is not busy, copying only if it is not there yet;
        the slot is busy until :meth:`_release`."""
        free = np.flatnonzero(~self.busy)
        held = free[self.slot_page[free] == page]
        slot = int(held[0] if len(held) else free[0])
        self.busy[slot] = True
        if not len(held):
            self.slot_page[slot] = page
            self.be.load(slot, page)
            start, end = self.g.page_range(page)
            self.stats.pages_transferred += 1
            self.stats.bytes_h2d += (end - start) * self.layout.slot_bytes // self.g.page_edges
        return slot

    def _release(self, slots) -> None:
        self.busy[slots] = False

    def _landed(self, slot: int, page: int) -> None:
        times = self.be.wait(slot)
        if times is not None:
            self.stats.transfer_time += times[1] - times[0]
            self.trace.add("copy", times[0] - self.t0, times[1] - self.t0, page=int(page),
                           slot=slot)

    def _load_all(self, pages: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Places ``pages``, queueing all their copies before waiting on any, so that they
        run back to back on the copy engine; returns (slots, pages) once they landed."""
        slots = [self._place(page) for page in pages]
        for slot, page in zip(slots, pages, strict=True):
            self._landed(slot, page)
        return np.array(slots, dtype=np.int64), np.array(pages, dtype=np.int64)

    def _sweep_window(self, slots: np.ndarray, pages: np.ndarray, max_sweeps: int,
                      incoming: int | None = None, swept: np.ndarray | None = None) -> None:
        """Sweeps the window's active pages, in the given order. With ``swept`` (a flag per
        page: swept so far this round, updated here), the pages not swept yet go first and
        are swept before the sweep may stop for a landed copy: the strong rules and the
        hand-over to the push engine count on every page active at a round's start being
        swept in the round."""
        live = self.active_pages(pages)
        slots, pages = slots[live], pages[live]
        mandatory = None
        if swept is not None:
            first = np.argsort(swept[pages], kind="stable")  # keeps the given order
            slots, pages = slots[first], pages[first]
            mandatory = int(np.count_nonzero(~swept[pages]))
        done = self._sweep(slots, pages, max_sweeps, incoming, mandatory)
        if swept is not None:
            swept[done] = True

    def _pipelined(self, order: np.ndarray) -> None:
        # With the slots for it, several copies are kept in flight, so that the copy engine
        # still has work queued while the host does a step's bookkeeping and launch.
        depth = max(1, min(PREFETCH, (self.layout.num_slots - 1) // 2))
        width = self.layout.num_slots - depth
        pending = deque(int(p) for p in order)
        incoming: deque[tuple[int, int]] = deque()
        swept = np.zeros(self.g.num_pages, dtype=np.bool_)
        # The window, oldest page first; nothing is swept until it is full.
        slots, pages = self._load_all([pending.popleft()
                                       for _ in range(min(width, len(pending)))])
        while len(pages):
            while len(incoming) < depth and pending:
                page = pending.popleft()
                incoming.append((self._place(page), page))
            nxt = incoming[0] if incoming else None
            # Sweep the window, newest page first, and go on re-sweeping it while it still
            # changes and the next page is in flight.
            passes = self.cfg.max_reentries if nxt is not None else \
                min(self.cfg.max_reentries, LAST_WINDOW_SWEEPS)
            self._sweep_window(slots[::-1], pages[::-1], passes,
                               None if nxt is None else nxt[0], swept)
            if nxt is None:
                self._release(slots)
                return
            # Every page that has landed joins now: one step (one launch) per landed batch
            # rather than per page, so a slow host step does not leave the copy engine idle.
            arrived = [incoming.popleft()]
            self._landed(*arrived[0])
            while incoming and self.be.landed(incoming[0][0]):
                arrived.append(incoming.popleft())
                self._landed(*arrived[-1])
            j = len(arrived)
            self._release(slots[:j])
            slots = np.append(slots[j:], [s for s, _ in arrived])
            pages = np.append(pages[j:], [p for _, p in arrived])

    def _reentry(self, order: np.ndarray) -> None:
        width = self.layout.num_slots - 1
        pending = deque(int(p) for p in order)
        while pending:
            slots, pages = self._load_all([pending.popleft()
                                           for _ in range(min(width, len(pending)))])
            self._sweep_window(slots, pages, self.cfg.reentry_sweeps)
            self._release(slots)

    def _single(self, order: np.ndarray) -> None:
        pages = [int(p) for p in order]
        if not pages:
            return
        current = (self._place(pages[0]), pages[0])
        self._landed(*current)
        for nxt in [*pages[1:], None]:
            incoming = None if nxt is None else (self._place(nxt), nxt)
            self._sweep(np.array([current[0]]), np.array([current[1]]))
            self._release(current[0])
            if incoming is None:
                return
            self._landed(*incoming)
            current = incoming
