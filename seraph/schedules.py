"""Schedules: how a dense round is cut into windows, and what else a schedule allows.

A *round* visits every active page once in slot order (docs/design.md, "Rounds and windows
(schedules)"). A schedule is a policy object: it answers the engine's questions (may a
predictor skip vertices? may rounds go sparse, to push and bottom-up rounds? are inactive
pages skipped?) and drives a paged round through :meth:`Schedule.run_round`, over the
run's slots (:class:`seraph.slots.Slots`) and sweeps (:class:`seraph.rounds.DenseRounds`).

- ``pipelined`` (default): a window of resident pages is swept again and again while the
  next pages copy into the other slots; when a copy lands, every page that has landed
  joins and as many of the oldest leave (the Seraph paper's pipelined subgraph
  iteration).
- ``reentry``: CLIP-style groups of S-1 pages, each loaded, swept a fixed number of times,
  then replaced; no overlap between groups.
- ``single``: every page once per round, no reentry, no predictor, no push engine and no
  activity skipping: the Graphie/Garaph-style full-pass baseline.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from seraph.scheduler import Run

#: Page copies the pipelined schedule keeps in flight when it has the slots (at most half
#: of them, less one).
PREFETCH = 4
#: Passes the pipelined schedule makes over a round's last window, which no copy follows.
#: Re-sweeping it there leaves the copy engine idle, and the next round starts with the
#: same pages, re-sweeping them while its copies run (docs/engine.md).
LAST_WINDOW_SWEEPS = 1


class Schedule:
    """A window policy and the engine features it allows (all, unless a schedule says
    otherwise)."""

    name: str
    allows_predictor = True  #: whether a predictor may skip vertices
    uses_sparse_rounds = True  #: whether rounds may go to push and bottom-up rounds
    skips_inactive_pages = True  #: whether a round leaves out the pages nothing changed for

    def run_round(self, run: Run, order: np.ndarray) -> None:
        """Sweeps ``order`` (the round's pages, in order) through the run's slots; the
        pages do not all fit, so they move."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<schedule {self.name}>"


class Pipelined(Schedule):
    name = "pipelined"

    def run_round(self, run: Run, order: np.ndarray) -> None:
        slots_, dense = run.slots, run.dense
        # With the slots for it, several copies are kept in flight, so that the copy engine
        # still has work queued while the host does a step's bookkeeping and launch.
        depth = max(1, min(PREFETCH, (run.layout.num_slots - 1) // 2))
        width = run.layout.num_slots - depth
        pending = deque(int(p) for p in order)
        incoming: deque[tuple[int, int]] = deque()
        swept = np.zeros(run.g.num_pages, dtype=np.bool_)
        # The window, oldest page first; nothing is swept until it is full.
        slots, pages = slots_.load_all([pending.popleft()
                                        for _ in range(min(width, len(pending)))])
        while len(pages):
            while len(incoming) < depth and pending:
                page = pending.popleft()
                incoming.append((slots_.place(page), page))
            nxt = incoming[0] if incoming else None
            # Sweep the window, newest page first, and go on re-sweeping it while it still
            # changes and the next page is in flight.
            passes = run.cfg.max_reentries if nxt is not None else \
                min(run.cfg.max_reentries, LAST_WINDOW_SWEEPS)
            dense.sweep_window(slots[::-1], pages[::-1], passes,
                               None if nxt is None else nxt[0], swept)
            if nxt is None:
                slots_.release(slots)
                return
            # Every page that has landed joins now: one step (one launch) per landed batch
            # rather than per page, so a slow host step does not leave the copy engine idle.
            arrived = [incoming.popleft()]
            slots_.landed(*arrived[0])
            while incoming and run.be.landed(incoming[0][0]):
                arrived.append(incoming.popleft())
                slots_.landed(*arrived[-1])
            j = len(arrived)
            slots_.release(slots[:j])
            slots = np.append(slots[j:], [s for s, _ in arrived])
            pages = np.append(pages[j:], [p for _, p in arrived])


class Reentry(Schedule):
    name = "reentry"

    def run_round(self, run: Run, order: np.ndarray) -> None:
        width = run.layout.num_slots - 1
        pending = deque(int(p) for p in order)
        while pending:
            slots, pages = run.slots.load_all([pending.popleft()
                                               for _ in range(min(width, len(pending)))])
            run.dense.sweep_window(slots, pages, run.cfg.reentry_sweeps)
            run.slots.release(slots)


class Single(Schedule):
    name = "single"
    allows_predictor = False
    uses_sparse_rounds = False
    skips_inactive_pages = False

    def run_round(self, run: Run, order: np.ndarray) -> None:
        pages = [int(p) for p in order]
        if not pages:
            return
        slots = run.slots
        current = (slots.place(pages[0]), pages[0])
        slots.landed(*current)
        for nxt in [*pages[1:], None]:
            incoming = None if nxt is None else (slots.place(nxt), nxt)
            run.dense.sweep(np.array([current[0]]), np.array([current[1]]))
            slots.release(current[0])
            if incoming is None:
                return
            slots.landed(*incoming)
            current = incoming


#: The schedules by name, the default first.
SCHEDULES: dict[str, Schedule] = {s.name: s for s in (Pipelined(), Reentry(), Single())}
