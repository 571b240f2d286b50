"""The parts of a :class:`~seraph.scheduler.Run` that do its rounds: which pages are active
(:class:`PageActivity`), dense rounds over the pages (:class:`DenseRounds`), and the sparse
rounds that replace them when little changes (:class:`SparseRounds`; docs/design.md,
"Sparse rounds: push and bottom-up").

Each part keeps a reference to its run, whose epoch, threshold and statistics they share.
"""

from __future__ import annotations

import time
import weakref
from typing import TYPE_CHECKING

import numpy as np

from seraph import progress
from seraph.backends.activity import edges_below, page_summary, pages_active
from seraph.backends.caches import out_degrees
from seraph.compiling import compile_seconds
from seraph.predictors import NONE, WEAK

if TYPE_CHECKING:
    from seraph.scheduler import Run


#: A paged round reads a page in place where its attempting rows cost less than this share
#: of the page's copy (DenseRounds.in_place): a read in place crosses the link in small
#: requests, which move fewer bytes a second than a copy's.
IN_PLACE_SHARE = 0.5
#: What a row read in place costs beside its indices: its requests round up to whole
#: lines, half of one wasted on average.
ROW_BYTES = 64
INDEX_BYTES = 4  #: an in-edge's source, int32


class PageActivity:
    """A page is *active* if a source block it reads changed at or after the epoch (sweep
    number) in which the page was last swept (``processed``)."""

    def __init__(self, graph, backend):
        self.g, self.be = graph, backend
        self.page_blocks = page_summary(graph, backend.layout)
        self.processed = np.zeros(graph.num_pages, dtype=np.int64)

    def active(self, pages: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask of ``pages`` (default: all) that need a sweep now."""
        # Contiguous, so pages_active is compiled for one array layout only.
        pages = np.arange(self.g.num_pages) if pages is None else \
            np.ascontiguousarray(pages, np.int64)
        return pages_active(pages, self.page_blocks, self.be.block_epochs(), self.processed)

    def swept(self, pages: np.ndarray, last_pass_pages: int, sweeps: int, last: int) -> None:
        """``pages`` were swept ``sweeps`` times, the last pass (epoch ``last``) reaching
        the first ``last_pass_pages`` of them. A page has pulled every change made before
        the pass in which it was last swept, so only changes from that pass's epoch on make
        it active again."""
        self.processed[pages[:last_pass_pages]] = last
        if sweeps > 1:
            self.processed[pages[last_pass_pages:]] = last - 1

    def pulled_everything(self, epoch: int) -> None:
        """Every vertex that could change pulled after every change before ``epoch``."""
        self.processed[:] = epoch

    def force(self, pages: np.ndarray) -> None:
        """Makes ``pages`` active whatever changed."""
        self.processed[pages] = -1


class DenseRounds:
    """Rounds over the pages: the resident graph in one window, or a paged one through the
    schedule's windows."""

    def __init__(self, run: Run):
        self.run = weakref.proxy(run)  # see Run.__init__
        self._round_min, self._round_succeeded = run.alg.inf, 0

    def round(self):
        """One round under the configured schedule; returns (smallest value written, count)."""
        run = self.run
        run.stats.dense_rounds += 1
        order = np.arange(run.g.num_pages)
        if run.schedule.skips_inactive_pages:
            # A page active now stays active until it is swept (block epochs only grow),
            # so the schedules copy the round's pages without looking at them again.
            active = run.activity.active()
            run.stats.pages_skipped += int((~active).sum())
            order = order[active]
        if not run.forward:
            order = order[::-1]
        # A recomputing program's rounds all go forward: its sums are updated in place, and
        # a round in the other direction would first sweep the vertices that the last one
        # swept last, which read nothing newer than then (two in-neighbours swept in turn,
        # as a pair of vertices that link each other, then gain one step a round, not two);
        # that costs more rounds than the copies alternating saves.
        run.forward = not run.forward or run.alg.recompute is not None
        self._round_min, self._round_succeeded = run.alg.inf, 0
        if run.layout.resident:
            self.sweep(np.zeros(len(order), dtype=np.int64), order)
        else:
            in_place = self.in_place(order)
            if in_place.any():
                run.stats.pages_in_place += int(in_place.sum())
                self.sweep(None, order[in_place])
            run.schedule.run_round(run, order[~in_place])
        return self._round_min, self._round_succeeded

    def predictor(self) -> int:
        """What the next sweep skips with: the run's predictor, or none in the weak
        predictor's re-check and where the schedule allows none."""
        run = self.run
        return NONE if run.rechecking or not run.schedule.allows_predictor else run.predictor

    def in_place(self, pages: np.ndarray) -> np.ndarray:
        """Which of a paged round's ``pages`` its sweep reads where they lie in host memory
        rather than copied (docs/design.md, "Pages read in place"): under the weak predictor,
        those whose attempting vertices' rows cost less read in place than
        :data:`IN_PLACE_SHARE` of the page's copy, a row costing its indices' bytes and
        :data:`ROW_BYTES` more. Only indices are read in place: a layout with weights
        copies every page."""
        run = self.run
        if run.layout.weights or not self.predictor() & WEAK or not len(pages):
            return np.zeros(len(pages), dtype=np.bool_)
        edges, rows = run.be.awake_in_pages(pages)
        cost = INDEX_BYTES * edges + ROW_BYTES * rows
        return cost < IN_PLACE_SHARE * INDEX_BYTES * self._edges_of(pages)

    def sweep(self, slots: np.ndarray | None, pages: np.ndarray, max_sweeps: int = 1,
              incoming: int | None = None, mandatory: int | None = None) -> np.ndarray:
        """Sweeps pages (already resident in ``slots``, or with ``slots`` None read in
        place) up to ``max_sweeps`` times, stopping early as :meth:`Backend.sweep_until`
        says; returns the pages it swept."""
        if not len(pages):
            return pages
        run = self.run
        run.epoch += 1
        start, compiled = time.perf_counter(), compile_seconds()
        res = run.be.sweep_until(slots, pages, self.predictor(), run.proven, run.epoch,
                                 max_sweeps, incoming,
                                 len(pages) if mandatory is None else mandatory)
        end = time.perf_counter()
        last = run.epoch + res.sweeps - 1
        done = res.last_pass_pages
        run.activity.swept(pages, done, res.sweeps, last)
        run.epoch = last
        s = run.stats
        edges = self._edges_of(pages)  # the pages' edge counts
        s.edges_swept += int(edges.sum() * (res.sweeps - 1) + edges[:done].sum())
        if res.edges_read is not None:
            s.edges_read = (s.edges_read or 0) + res.edges_read
        s.sweeps += res.sweeps
        s.reentries += res.sweeps - 1
        s.kernel_time += end - start - (compile_seconds() - compiled)
        s.updates_attempted += res.attempted
        s.updates_succeeded += res.succeeded
        s.skipped_strong += res.skipped_strong
        s.skipped_weak += res.skipped_weak
        run.moved += res.moved
        if res.skipped_weak:
            run.owes = run.skipped_ever = True
        if res.succeeded:
            self._round_succeeded += res.succeeded
            self._round_min = min(self._round_min, res.minimum)
        if run.trace.enabled:
            run.trace.add("compute", start - run.t0, end - run.t0, pages=pages.tolist(),
                          updates=res.succeeded, sweeps=res.sweeps)
        return pages if res.sweeps > 1 else pages[:done]

    def _edges_of(self, pages: np.ndarray) -> np.ndarray:
        """The pages' edge counts (each page holds page_edges, the last one the rest)."""
        g = self.run.g
        return np.minimum(g.page_edges, g.num_edges - pages * g.page_edges)

    def sweep_window(self, slots: np.ndarray, pages: np.ndarray, max_sweeps: int,
                     incoming: int | None = None, swept: np.ndarray | None = None) -> None:
        """Sweeps the window's active pages, in the given order. With ``swept`` (a flag per
        page: swept so far this round, updated here), the pages not swept yet go first and
        are swept before the sweep may stop for a landed copy: the strong rules and the
        hand-over to the push engine count on every page active at a round's start being
        swept in the round."""
        live = self.run.activity.active(pages)
        slots, pages = slots[live], pages[live]
        mandatory = None
        if swept is not None:
            first = np.argsort(swept[pages], kind="stable")  # keeps the given order
            slots, pages = slots[first], pages[first]
            mandatory = int(np.count_nonzero(~swept[pages]))
        done = self.sweep(slots, pages, max_sweeps, incoming, mandatory)
        if swept is not None:
            swept[done] = True


class SparseRounds:
    """Push rounds from a small frontier, and bottom-up rounds over the few vertices not
    yet proven final: when the changed vertices' out-edges number fewer than the push
    limit, a round touches just those edges instead of every active page."""

    def __init__(self, run: Run):
        self.run = weakref.proxy(run)  # see Run.__init__

    def is_sparse(self, frontier: np.ndarray) -> bool:
        run = self.run
        return run.push_limit > 0 and edges_below(frontier, out_degrees(run.g), run.push_limit)

    def push(self, frontier) -> object:
        """Push rounds (the backend's :meth:`~Backend.push`); returns the vertices still
        waiting, empty when converged."""
        run = self.run
        start, compiled = time.perf_counter(), compile_seconds()
        run.epoch += 1
        progress.working("push", run.stats)
        res = run.be.push(frontier, run.push_limit, run.epoch)
        run.stats.sparse_rounds += res.rounds
        run.stats.rounds += res.rounds
        run.stats.edges_pushed += res.edges
        run.stats.updates_succeeded += res.succeeded
        run.stats.sparse_time += time.perf_counter() - start - (compile_seconds() - compiled)
        if run.alg.strong_rule.counts_rounds:
            run.prove(run.rounds_bound())
        elif len(res.frontier):
            # Every later update descends from a vertex still waiting to push, and weights
            # are non-negative, so no vertex at or below their smallest value can change.
            run.prove(res.minimum)
        run.stats.log_round("push", res.rounds)
        run.trace.add("push", start - run.t0, time.perf_counter() - run.t0,
                      rounds=res.rounds, edges=res.edges)
        progress.round_done("push", run.stats, len(res.frontier))
        return res.frontier

    def bottom_up(self) -> bool:
        """A round that pulls the vertices not yet proven final, when their in-edges are
        few enough (see :mod:`seraph.backends.cpu.bottom_up`); returns whether it ran (one
        that stopped at the edge limit did not, though its changes stand). It
        stands on the last proven threshold (:meth:`Run.prove`), and under the weak
        predictor it also settles every debt: a vertex that owes an attempt is pulled, or
        proven final."""
        run = self.run
        if not run.push_limit or run.proven < 0:
            return False
        start, compiled = time.perf_counter(), compile_seconds()
        progress.working("bottom-up", run.stats)
        res = run.be.bottom_up(run.proven, run.bottom_up_limit, run.epoch + 1)
        if res is None:
            return False
        run.epoch += 1
        s = run.stats
        s.edges_pulled_bottom_up += res.edges
        s.updates_attempted += res.attempted
        s.updates_succeeded += res.succeeded
        s.sparse_time += time.perf_counter() - start - (compile_seconds() - compiled)
        if not res.complete:
            # Its changes are marked as a sweep's, and every page active before it still
            # is: the dense round that follows attempts what it did not, and logs its work.
            return False
        # Every vertex that could change pulled after every change so far: only this
        # round's own changes can make a page active.
        run.activity.pulled_everything(run.epoch)
        s.bottom_up_rounds += 1
        s.sparse_rounds += 1
        run.owes = False
        run.end_round(res.succeeded, res.minimum)
        s.log_round("bottom-up")
        run.trace.add("bottom-up", start - run.t0, time.perf_counter() - run.t0,
                      vertices=res.attempted, edges=res.edges)
        progress.round_done("bottom-up", run.stats)
        return True
