"""Summing programs' iterations: the engine's driver for a vertex program whose combine is
a sum (:data:`~seraph.spec.SUM`), such as PageRank's power iteration (docs/design.md,
"Summing programs").

The program starts with its values and the operand they give, and an iteration is two
steps: the backend sums the operand over every in-edge into the accumulator
(:meth:`~seraph.backends.base.Backend.gather_sum`), and the program makes its new values
from the sums, says how much they changed, and makes the next operand from them, leaving
the accumulator at 0 (its own step, on the backend's vectors). The engine sums each page
exactly once an iteration: a sum, unlike a min, counts an edge read twice twice, so no
page may be swept again (no reentries), none skipped (no predictor, no activity: every
value changes every iteration) and none pushed. Paged runs stream the pages through the
slots, the next pages copying while the landed ones are summed.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Protocol

import numpy as np

from seraph import interrupts, progress
from seraph.compiling import compile_seconds
from seraph.spec import ACCUMULATOR, OPERAND

if TYPE_CHECKING:
    from seraph.backends.base import Backend
    from seraph.scheduler import Run


class SummingProgram(Protocol):
    """A summing program's own steps, on the backend's vectors (``be.vector(name)``, arrays
    of ``be.xp``), and when it stops: once an iteration changes the values by less than
    ``stop_below``, or after ``max_iterations``."""

    stop_below: float
    max_iterations: int

    def start(self, be: Backend) -> None:
        """The values before the first iteration, the operand they give, the accumulator
        at 0 (and the program's own vectors)."""

    def apply(self, be: Backend) -> float:
        """The new values from the accumulator's sums, the operand they give, and the
        accumulator back at 0; returns how much the values changed."""


def iterate(run: Run, program: SummingProgram) -> None:
    """Runs ``program`` until it converges or has run its ``max_iterations``; the stats
    say which (``converged``) and keep the last iteration's change."""
    be, stats = run.be, run.stats
    operand, accumulator = be.vector(OPERAND), be.vector(ACCUMULATOR)
    stats.converged = False
    with be.vector_steps():
        program.start(be)
    if run.g.num_vertices == 0:  # nothing to rank: no iteration changes anything
        stats.converged, stats.change = True, 0.0
        return
    while stats.rounds < program.max_iterations:
        interrupts.check()
        progress.working("dense", stats)
        gather(run, operand, accumulator)
        run.sums_gathered(accumulator)
        with be.vector_steps():
            stats.change = float(program.apply(be))
        stats.rounds += 1
        stats.dense_rounds += 1
        stats.log_round("dense")
        progress.round_done("dense", stats)
        if stats.change < program.stop_below:
            stats.converged = True
            return


def gather(run: Run, operand, into) -> None:
    """``into[v] += sum of operand[u] over every in-edge (u -> v)``: every page exactly
    once, in page order one iteration and the reverse the next, so that the pages the last
    iteration left in the slots are summed first, without a copy."""
    order = np.arange(run.g.num_pages, dtype=np.int64)
    if not run.forward:
        order = order[::-1]
    run.forward = not run.forward
    if run.layout.resident:
        _sum(run, np.zeros(len(order), dtype=np.int64), order, operand, into)
        return
    slots, be = run.slots, run.be
    batch = max(1, run.layout.num_slots // 2)
    pending = deque(int(p) for p in order)
    incoming: deque[tuple[int, int, bool]] = deque()  # (slot, page, whether it is copied)
    copies = 0
    while pending or incoming:
        while pending and not slots.busy.all():
            page = pending.popleft()
            copy = not slots.holding(page)
            incoming.append((slots.place(page), page, copy))
            copies += copy
        # A window sums the pages that landed, at most half the slots (the others hold
        # copies in flight meanwhile) and at most the copies queued: an iteration starts
        # with every slot holding a page summed first and none copying, so windows of 1, 2,
        # 4... pages free slots for copies while the rest are summed.
        room = max(1, min(batch, copies))
        arrived: list[tuple[int, int]] = []
        while incoming and (not arrived or len(arrived) < room and be.landed(incoming[0][0])):
            slot, page, copy = incoming.popleft()
            slots.landed(slot, page)
            copies -= copy
            arrived.append((slot, page))
        window = np.array([s for s, _ in arrived], dtype=np.int64)
        _sum(run, window, np.array([p for _, p in arrived], dtype=np.int64), operand, into)
        slots.release(window)


def _sum(run: Run, slots: np.ndarray, pages: np.ndarray, operand, into) -> None:
    """The backend's sum over ``pages``, counted in the run's stats and trace."""
    if not len(pages):
        return
    g, s = run.g, run.stats
    start, compiled = time.perf_counter(), compile_seconds()
    run.be.gather_sum(slots, pages, operand, into)
    end = time.perf_counter()
    s.kernel_time += end - start - (compile_seconds() - compiled)
    s.sweeps += 1
    edges = int(np.minimum(g.page_edges, g.num_edges - pages * g.page_edges).sum())
    s.edges_swept += edges
    s.edges_read = (s.edges_read or 0) + edges  # every in-edge of the pages, once
    run.trace.add("compute", start - run.t0, end - run.t0, pages=pages.tolist())
