"""How a graph maps onto a device memory budget: page slots, the vertex state's bytes and
the activity summary's source blocks (docs/design.md, "Rounds and windows (schedules)")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from seraph.backends.caches import graph_hub_chunks
from seraph.errors import DeviceError
from seraph.predictors import WITH_DIAGRAM
from seraph.units import format_size

#: The most source blocks the activity summary tracks; more blocks are more precise but
#: cost more per activity check.
MAX_BLOCKS = 4096
#: A push phase on a device lists at most 1/FRONTIER_SHARE of the vertices, so its two
#: near lists (this round's and the next; int32) and their edge offsets (int64) cost 2
#: bytes a vertex, not 16; a larger frontier goes to a dense round (or, in near-far, waits
#: far). A graph of up to FRONTIER_MIN vertices has room for all of them (1 MiB at most), so
#: small graphs push as far as the CPU engine does.
FRONTIER_SHARE = 8
FRONTIER_MIN = 1 << 16
#: The most blocks a device's push loop runs (co-resident ones: about a thousand on a
#: large data-center card). DEVICE_SCRATCH: their per-block scan sums, and a device's
#: small status arrays, each rounded up to cupy's 512-byte allocation unit.
MAX_PUSH_BLOCKS = 1024
DEVICE_SCRATCH = 8 * MAX_PUSH_BLOCKS + (1 << 13)
#: A summing program's vector steps reduce whole vectors (cupy's sums), whose temporary
#: storage is one block of the same size at every vector length (42,495 bytes measured
#: from 2^12 to 2^27 float64 entries, CuPy 14).
REDUCE_SCRATCH = 1 << 16
#: Bytes a device keeps per page: its first and last vertex and hub chunk offset, and, per
#: slot (at most one a page), a launch's window entries and the slot's load sequence number.
PAGE_BYTES = 64


def frontier_capacity(num_vertices: int) -> int:
    """The most vertices a device's push frontier holds (see FRONTIER_SHARE)."""
    return max(num_vertices // FRONTIER_SHARE + 1, min(num_vertices, FRONTIER_MIN))


@dataclass
class Layout:
    """How a graph maps onto a device memory budget."""

    num_slots: int
    resident: bool
    state_bytes: int
    slot_bytes: int
    block_shift: int
    num_blocks: int
    weights: bool  # whether pages carry their weights to the device
    lightest: bool = False  # whether the strong rule keeps SSSP's lightest in-edge bytes

    @classmethod
    def plan(cls, graph, weak: bool, budget: int | None, weights: bool | None = None,
             lightest: bool = False, vector_bytes: int = 0, value_bytes: int = 4,
             recompute: bool = False) -> Layout:
        """Slots for ``budget`` bytes (None: everything resident). ``weights`` says whether
        the algorithm reads edge weights (default: whenever the graph has them); BFS and CC
        do not, so their pages move and occupy half the bytes. ``lightest``: SSSP under the
        strong predictor, whose rule reads each vertex's lightest in-edge
        (:mod:`seraph.lightest`, one byte a vertex, when the graph has weights).
        ``vector_bytes``: the bytes a vertex of a summing program's own vectors
        (:attr:`~seraph.spec.Algorithm.vectors`); ``value_bytes``: a value's. ``recompute``:
        a summing program that recomputes (:class:`~seraph.spec.Recompute`), which keeps the
        partial sums of the vertices a page shares with its neighbours (two a page) and of
        the hub chunks (one a chunk), float64 each."""
        weights = graph.weighted if weights is None else weights and graph.weighted
        lightest = lightest and graph.weighted
        n, pages = graph.num_vertices, graph.num_pages
        block_shift = 0
        while (n >> block_shift) >= MAX_BLOCKS:
            block_shift += 1
        num_blocks = max(1, ((n - 1) >> block_shift) + 1)
        # values (4 bytes, 8 for a float64 program's), csc indptr 8, changed flag 1, weak
        # state 1, plus block epochs; a directed graph's CSR indptr too (the out-edges of
        # changed vertices are counted on the device; a symmetric graph's are the CSC's);
        # the push phase's two lists and edge offsets; DEVICE_SCRATCH and PAGE_BYTES; the
        # hub chunk list (none on a graph without hubs); SSSP's lightest in-edge, one byte a
        # vertex; a summing program's vectors and REDUCE_SCRATCH; a recomputing one's
        # partial sums; and the weak predictor's counts of what each page's sweep reads
        # (a page's number and two words)
        indptrs = 1 if graph.symmetric else 2
        frontier = frontier_capacity(n)
        per_vertex = value_bytes + 1 + (1 if weak else 0) + (1 if lightest else 0) + vector_bytes
        hubs = graph_hub_chunks(graph)
        state = n * per_vertex + \
            8 * indptrs * (n + 1) + num_blocks * 8 + 16 * frontier + DEVICE_SCRATCH + \
            PAGE_BYTES * (pages + 1) + hubs.nbytes + \
            (REDUCE_SCRATCH if vector_bytes else 0) + \
            (16 * pages + 8 * len(hubs.chunks) if recompute else 0) + \
            (24 * pages if weak else 0)
        slot = graph.page_edges * (8 if weights else 4)
        fields = (state, slot, block_shift, num_blocks, weights, lightest)
        if budget is None:
            return cls(max(pages, 1), True, *fields)
        needed_slots = min(2, max(pages, 1))
        minimum = state + needed_slots * slot
        if budget < minimum:
            raise DeviceError(
                f"device memory budget {format_size(budget)} is too small for this graph: the "
                f"vertex state needs {format_size(state)} plus {needed_slots} page slot(s) of "
                f"{format_size(slot)}; the minimum is {format_size(minimum)} "
                f"({minimum} bytes). Raise the budget or preprocess with smaller pages.")
        slots = int((budget - state) // slot)
        if slots >= pages:
            return cls(max(pages, 1), True, *fields)
        return cls(slots, False, *fields)

    @classmethod
    def for_run(cls, graph, algorithm, predictor: str, budget: int | None) -> Layout:
        """The layout of a run of ``algorithm`` under ``predictor`` (resolved: ``none``,
        ``strong``, ``weak`` or ``combined``), as :func:`seraph.api.execute` plans it."""
        return cls.plan(graph, predictor in WITH_DIAGRAM, budget,
                        weights=algorithm.operator.weighted,
                        lightest=predictor in ("strong", "combined")
                        and algorithm.lightest_first,
                        vector_bytes=sum(np.dtype(t).itemsize for _, t in algorithm.vectors),
                        value_bytes=algorithm.dtype.itemsize,
                        recompute=algorithm.recompute is not None)
