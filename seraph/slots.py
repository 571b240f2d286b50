"""Which page each device slot holds, and the copies that fill them."""

from __future__ import annotations

import numpy as np

from seraph.backends.base import Backend
from seraph.stats import RunStats, Trace


class Slots:
    """The run's page slots: a page is copied only if no free slot holds it already, and a
    slot stays busy (in a window, or copying) until released."""

    def __init__(self, graph, backend: Backend, stats: RunStats, trace: Trace, t0: float):
        self.g, self.be, self.stats, self.trace, self.t0 = graph, backend, stats, trace, t0
        num_slots = backend.layout.num_slots
        self.slot_page = np.full(num_slots, -1, dtype=np.int64)
        self.busy = np.zeros(num_slots, dtype=np.bool_)

    def place(self, page: int) -> int:
        """Puts ``page`` into a slot that is not busy, copying only if it is not there yet;
        the slot is busy until :meth:`release`."""
        free = np.flatnonzero(~self.busy)
        held = free[self.slot_page[free] == page]
        slot = int(held[0] if len(held) else free[0])
        self.busy[slot] = True
        if not len(held):
            self.slot_page[slot] = page
            self.be.load(slot, page)
            start, end = self.g.page_range(page)
            self.stats.pages_transferred += 1
            self.stats.bytes_h2d += (end - start) * self.be.layout.slot_bytes // \
                self.g.page_edges
        return slot

    def holding(self, page: int) -> bool:
        """Whether a slot that is not busy holds ``page``: placing it copies nothing."""
        return bool((self.slot_page[~self.busy] == page).any())

    def release(self, slots) -> None:
        self.busy[slots] = False

    def landed(self, slot: int, page: int) -> None:
        """Waits for the copy into ``slot`` (if any) and traces it."""
        times = self.be.wait(slot)
        if times is not None:
            self.stats.transfer_time += times[1] - times[0]
            self.trace.add("copy", times[0] - self.t0, times[1] - self.t0, page=int(page),
                           slot=slot)

    def load_all(self, pages: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Places ``pages``, queueing all their copies before waiting on any, so that they
        run back to back on the copy engine; returns (slots, pages) once they landed."""
        slots = [self.place(page) for page in pages]
        for slot, page in zip(slots, pages, strict=True):
            self.landed(slot, page)
        return np.array(slots, dtype=np.int64), np.array(pages, dtype=np.int64)
