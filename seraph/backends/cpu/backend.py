"""The CPU backend: host buffers stand in for device slots, numba kernels for CUDA ones.

It honours the same memory budget and slot logic as the CUDA backend, so CI exercises
every paging path without a GPU. When the whole graph fits the budget (the default has no
limit) the "slots" are views of the graph's own arrays and nothing is copied.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor

import numba
import numpy as np
from numba import prange

from seraph.backends.activity import (
    PUSH_ALPHA,
    awake_in_pages,
    blocks_of,
    edges_below,
    flagged_below,
)
from seraph.backends.base import BottomUpResult, SweepResult
from seraph.backends.caches import (
    graph_operands,
    hand_back,
    operand_dtype,
    operands,
    out_degrees,
    take_pooled,
)
from seraph.backends.cpu.bottom_up import pull_unsettled
from seraph.backends.cpu.gather import (
    EDGES_READ,
    gather_pages,
    recompute_pages,
    split_sums_from_values,
    walk_operands,
    walk_step,
    walk_totals,
)
from seraph.backends.cpu.host_push import HostPush
from seraph.backends.cpu.pull import (
    NO_BITS,
    SERIAL_EDGES,
    label_from_reach,
    offering_floor,
    pull_floor,
    sweep_pages,
)
from seraph.backends.cpu.push import ids_between
from seraph.backends.cpu.union_find import link_parents, trusted_components
from seraph.backends.output import SPARSE_SHARE, output_values
from seraph.interrupts import STOP
from seraph.kernels import kernel, serial
from seraph.predictors import ATTEMPT, OWES, STATE_MASK, WEAK, take_owing_pages
from seraph.spec import ACCUMULATOR, OPERAND, SCALE, Output

#: SSSP's pushes are delta-stepping, which relaxes most edges once, where a dense round
#: relaxes every in-edge of its pages again: they keep the phase until the waiting vertices
#: have m/2 out-edges, not m/20 (docs/engine.md, "Dense and sparse phases").
ORDERED_PUSH_ALPHA = 2.0
#: A pass over the vertices alone between rounds (a recomputing program's totals and
#: operands, the weak states' counts) runs on the calling thread below this many: a
#: millisecond or less there, about what waking the pool may cost on a busy machine, where
#: a thread the pool waits for can be descheduled for longer.
SERIAL_VERTICES = 1 << 20
#: The in-edges above which a vertex is a hub, which the weak predictor never skips: none
#: on the CPU (the GPU's pull kernels sum a hub by chunks, seraph.hubs).
NO_HUBS = np.iinfo(np.int64).max
#: A bottom-up round takes up to this many times the push limit's edges: it reads each
#: in-edge once with no atomic write, where a pushed edge also writes atomically.
PULL_PER_PUSH = 2
#: A BFS bottom-up round that lowered more than 1/BOTTOM_UP_BETA of the vertices is
#: followed by another, not by pushes from them (GAP's beta): a push reads each lowered
#: vertex's row where it lies, a bottom-up round the levels in order and the rows of the
#: vertices still open, which are then few.
BOTTOM_UP_BETA = 18


class CpuBackend(HostPush):
    name = "cpu"

    @classmethod
    def weak_pays(cls, algorithm) -> bool:
        return True

    def __init__(self, graph, algorithm, layout, table: np.ndarray | None,
                 initial_state: int = 0):
        super().__init__(graph, algorithm, layout, table, initial_state)
        indptr, indices, _weights = graph.csc()
        self.indptr, self._host_indices = indptr, indices
        n, pe = graph.num_vertices, graph.page_edges
        # A run from a source starts from values all at infinity where an earlier run on the
        # graph left them so (result): it then writes only the source's.
        self._clean_pool = ("values at infinity", algorithm.dtype.str, algorithm.inf)
        clean = take_pooled(graph, self._clean_pool, lambda: None) \
            if algorithm.needs_source else None
        self._at_infinity = clean is not None
        self._hand_back = False  # whether close gives the values to the graph's next run
        self.values = np.empty(n, dtype=algorithm.dtype) if clean is None else clean
        # The vertices whose values may have left the algorithm's infinity, while they are
        # small work and few of all (None: any vertex): the readback reads them alone
        # (output_values), on this thread.
        self._touched: list[np.ndarray] | None = None
        self._touched_count = 0
        types = dict(algorithm.vectors)
        if algorithm.recompute is not None:  # its sweeps set each operand from its sum
            types[OPERAND] = algorithm.recompute.operand_type
        self.vectors = {name: np.zeros(n, dtype=t) for name, t in types.items()}
        # A recomputing program's partial sums of the vertices split across pages.
        self.page_sums = np.zeros(2 * graph.num_pages) if algorithm.recompute else _NO_SUMS
        self.changed = _NO_FLAGS  # made by the first round that flags (_flags)
        # A bottom-up round's lowered vertices, listed, while no other change is flagged:
        # the next take_changed returns them without a pass over every vertex's flag.
        self._lowered: np.ndarray | None = None
        self.states = _NO_FLAGS if table is None else np.full(n, self.initial_state, np.uint8)
        self.block_epoch = np.full(layout.num_blocks, -1, dtype=np.int64)
        # The sweeps read each edge's operand (caches.operands): a page's weights, or what
        # the edge operator makes of them, which a copy makes in place.
        if layout.resident:
            # Every page is resident: the slot buffers are the graph's own arrays.
            self.slot_indices = indices
            self.slot_weights = graph_operands(graph, algorithm.op, "csc") \
                if layout.weights else _NO_WEIGHTS
        else:
            self.slot_indices = np.zeros(layout.num_slots * pe, dtype=np.int32)
            dtype = operand_dtype(algorithm.op)
            self.slot_weights = (np.zeros(layout.num_slots * pe, dtype=dtype)
                                 if layout.weights else _NO_WEIGHTS)
        # SSSP's pulls stop at the first in-edge too heavy to help where rows are listed
        # lightest first.
        self._by_weight = algorithm.lightest_first and graph.rows_by_weight
        self._copier: ThreadPoolExecutor | None = None  # started by the first copy
        # Bottom-up rounds' room to list vertices in, lent by the graph's pool: a new one
        # would cost each round a page fault per block.
        self._listed: np.ndarray | None = None
        self._copies: dict[int, Future] = {}
        # BFS sweeps' bitmap of the vertices offering the floor, and that floor: built once
        # a floor, not once a window (see _offering).
        self._offering, self._offering_for = NO_BITS, -1

    # -- capabilities ---------------------------------------------------------------------
    def default_push_alpha(self) -> float:
        """:data:`PUSH_ALPHA`, and :data:`ORDERED_PUSH_ALPHA` where pushes are
        delta-stepping (an operator whose pushes go in bins: SSSP's)."""
        return ORDERED_PUSH_ALPHA if self.algorithm.operator.binned else PUSH_ALPHA

    def bottom_up_edge_limit(self, push_limit: float, num_edges: int) -> float:
        """:data:`PULL_PER_PUSH` times the push limit."""
        return PULL_PER_PUSH * push_limit

    def pulls_again(self, lowered: int) -> bool:
        """For BFS, where more than 1/:data:`BOTTOM_UP_BETA` of the vertices were lowered."""
        return self.algorithm.levels and lowered * BOTTOM_UP_BETA > len(self.values)

    # -- pages ----------------------------------------------------------------------------
    def _copy(self, slot: int, page: int) -> tuple[float, float]:
        start = time.perf_counter()
        pe = self.graph.page_edges
        weights = self.slot_weights[slot * pe:(slot + 1) * pe] if self.layout.weights else None
        self.graph.read_page(page, self.slot_indices[slot * pe:(slot + 1) * pe],
                             None if weights is None else weights.view(np.float32))
        if weights is not None and weights.dtype != np.float32:
            weights[:] = operands(weights.view(np.float32), self.algorithm.op)
        return start, time.perf_counter()

    def load(self, slot: int, page: int) -> None:
        if self._copier is None:
            self._copier = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seraph-copy")
        self._copies[slot] = self._copier.submit(self._copy, slot, page)

    def landed(self, slot: int) -> bool:
        fut = self._copies.get(slot)
        return fut is None or fut.done()

    def wait(self, slot: int) -> tuple[float, float] | None:
        fut = self._copies.pop(slot, None)
        return None if fut is None else fut.result()

    def sweep(self, slots: np.ndarray, pages: np.ndarray, predictor: int, threshold,
              epoch: int) -> SweepResult:
        g = self.graph
        pages_arr = np.ascontiguousarray(pages, dtype=np.int64)  # one numba specialization
        offsets = self.slot_offsets(slots, pages)
        indices = self.slot_indices if slots is not None else self._host_indices
        table = self.table if self.table is not None else np.zeros((4, 1), np.uint8)
        rule = self.algorithm.recompute
        self._touched = None
        if rule is not None:
            counters, moved = recompute_pages.over(g.page_edges, g.num_edges, SERIAL_EDGES)(
                pages_arr, offsets, g.page_edges, g.num_edges, g.page_first_vertex,
                g.page_last_vertex, self.indptr, indices, self.vectors[OPERAND],
                self.values, self.vectors[SCALE], self.page_sums, rule.factor, rule.spread,
                rule.vertex, self.write_share, predictor, table, self.states, self.block_epoch,
                self.layout.block_shift, epoch, _chunks(), STOP)
            return SweepResult(*(int(c) for c in counters[:EDGES_READ]), self.algorithm.inf,
                               edges_read=int(counters[EDGES_READ]), moved=float(moved))
        counters, minimum = sweep_pages.over(g.page_edges, g.num_edges, SERIAL_EDGES)(
            pages_arr, offsets, g.page_edges, g.num_edges, g.page_first_vertex,
            g.page_last_vertex, self.indptr, indices, self.slot_weights, self.values,
            self.algorithm.op, self._by_weight, self.algorithm.levels, self.algorithm.inf,
            predictor,
            self.algorithm.dtype.type(threshold), *self.strong_bound(threshold), table,
            self.states, self._flags(),
            self.block_epoch, self.layout.block_shift, epoch, _chunks(),
            *self._offering_bits(predictor, threshold), STOP)
        return SweepResult(*(int(c) for c in counters), minimum)

    def gather_sum(self, slots: np.ndarray, pages: np.ndarray, operand, into) -> None:
        g = self.graph
        # Ascending, so that pages lying one after another in the slots (every page of a
        # resident graph) are summed as one span; a sum's order does not matter.
        order = np.argsort(pages, kind="stable")
        gather_pages.over(g.page_edges, g.num_edges, SERIAL_EDGES)(
            np.ascontiguousarray(pages, dtype=np.int64)[order],
            self.slot_offsets(slots, pages)[order], g.page_edges, g.num_edges,
            g.page_first_vertex, g.page_last_vertex, self.indptr, self.slot_indices, operand,
            into, _chunks(), STOP)

    def walk_step(self, damping: float, restart: float, vertex: int | None) -> float:
        """The step in one parallel pass over the vertices, after one for the sums' total
        (gather.walk_step)."""
        v = self.vectors
        return float(walk_step.over(len(self.values), self.graph.num_edges)(
            self.values, v[ACCUMULATOR], v[OPERAND], v[SCALE], damping, restart,
            -1 if vertex is None else vertex))

    def walk_totals(self) -> tuple[float, float]:
        """Both totals in one pass (gather.walk_totals)."""
        total, dangling = walk_totals.over(len(self.values), self.graph.num_edges,
                                           SERIAL_VERTICES)(self.values, self.vectors[SCALE])
        return float(total), float(dangling)

    def walk_operands(self, damping: float, factor: float, vertex: int | None) -> None:
        """The values' scaling and the operand in one pass (gather.walk_operands), and the
        partial sums' scaling beside it."""
        walk_operands.over(len(self.values), self.graph.num_edges, SERIAL_VERTICES)(
            self.values, self.vectors[OPERAND], self.vectors[SCALE], damping, factor,
            -1 if vertex is None else vertex)
        if factor != 1:
            self.page_sums *= factor

    def split_sums_from_values(self) -> None:
        g = self.graph
        split_sums_from_values(self.indptr, g.page_last_vertex, g.page_edges, g.num_edges,
                               self.values, self.page_sums)

    def scale_sums(self, factor: float) -> None:
        self._touched = None
        self.values *= factor
        self.page_sums *= factor

    def _offering_bits(self, predictor: int, threshold) -> tuple[np.ndarray, bool]:
        """:func:`~seraph.backends.cpu.pull.offering_floor` for a BFS sweep's floor, kept
        for every later window and round with the same floor (values only go down, so its
        bits stay true), or empty where no floor is known; and whether the sweep may read
        the bits alone (``bits_only`` of :func:`~seraph.backends.cpu.pull.sweep_pages`):
        only the sweep that sets them, where no finite value was at or above the floor.
        None under the weak predictor, whose states the bits' pull does not keep."""
        alg = self.algorithm
        floor = pull_floor(predictor, alg.levels, alg.dtype.type(threshold))
        if floor <= 0 or predictor & WEAK:
            return NO_BITS, False
        if floor == self._offering_for:
            return self._offering, False
        bits, beyond = offering_floor.over(len(self.values), self.graph.num_edges)(
            self.values, floor, alg.inf)
        self._offering, self._offering_for = bits, floor
        return bits, beyond == 0

    # -- vertex state ---------------------------------------------------------------------
    def set_values(self, values: np.ndarray) -> None:
        self.values[:] = values
        self._offering_for = -1  # values may have gone up: the bitmap is no longer true
        self._touched = None

    def init_values(self, source: int | None) -> None:
        if self._at_infinity:
            self.values[source] = 0
        else:
            self.algorithm.initial_values(len(self.values), source, out=self.values)
        self._at_infinity = False
        self._offering_for = -1
        self._touched = None
        if self.algorithm.needs_source:  # every value but the source's is infinity
            self._touched, self._touched_count = [], 0
            self._touch(np.array([source], dtype=np.int64))

    def _touch(self, vertices: np.ndarray) -> None:
        """``vertices``' values may have left infinity (see ``_touched``)."""
        if self._touched is None:
            return
        self._touched_count += len(vertices)
        if not serial(self._touched_count) or \
                self._touched_count * SPARSE_SHARE > len(self.values):
            self._touched = None  # the readback takes a pass over all, parallel where large
        else:  # a copy: the push engine's lists may be views of a buffer for every vertex
            self._touched.append(np.array(vertices, dtype=np.int64))

    def vector(self, name: str) -> np.ndarray:
        if name == "values":
            self._touched = None  # the caller may write any of them
        return super().vector(name)

    def host_values(self) -> np.ndarray:
        return self.values

    def result(self, output: Output) -> np.ndarray:
        inf = self.algorithm.inf
        if self._touched is None and not self.algorithm.needs_source:
            return output_values(self.values, inf, output, fresh=False)
        if self._touched is None:
            # Read back into a new array, the values set back to infinity in the same pass
            # on every thread: the graph's next run from a source writes only its source's
            # (close), where a fill on this thread would start it.
            out = output_values(self.values, inf, output, fresh=True, clear=True)
            self._hand_back = True
            return out
        # Few vertices touched: read back from them alone into a new array, and put them
        # back at infinity, so that the graph's next run starts from these values (close).
        touched = np.concatenate(self._touched)
        out = output_values(self.values, inf, output, fresh=True, touched=touched)
        self.values[touched] = inf
        self._hand_back = True
        return out

    def apply_host_changes(self, changed: np.ndarray, epoch: int) -> None:
        # The push engine wrote straight into self.values; only the bookkeeping remains.
        self._touch(changed)
        self.mark_blocks(changed, epoch)
        if self.table is not None:
            # A push success is a success (back to the initial state), but it relaxed only
            # some in-edges, so a debt from an earlier skip stays.
            self.states[changed] = self.initial_state | (self.states[changed] & OWES)

    def union_find(self, merge=None) -> None:
        """Union-find over the graph's CSC, which the host holds whole: each edge is read
        once or twice (Afforest's sampling, then the rest outside the giant component)."""
        indptr, indices, _ = self.graph.csc()
        self._touched = None
        trusted_components(indptr, indices, self.graph.num_vertices, merge=merge,
                           parent=self.values, sample=self.graph.sample())

    def link_parents(self, parent, other) -> None:
        link_parents(parent, other)

    def label_unreached(self) -> np.ndarray:
        """The labels of :func:`~seraph.backends.cpu.pull.label_from_reach`, in place."""
        self._touched = None
        return label_from_reach.over(len(self.values), self.graph.num_edges)(
            self.values, out_degrees(self.graph), self.algorithm.inf)

    def mark_blocks(self, vertices: np.ndarray, epoch: int) -> None:
        self.block_epoch[blocks_of(vertices, self.layout.block_shift,
                                   self.layout.num_blocks)] = epoch

    def block_epochs(self) -> np.ndarray:
        return self.block_epoch

    def take_changed(self, edge_limit: float) -> np.ndarray | None:
        if self._lowered is not None:
            lowered, self._lowered = self._lowered, None
            return lowered if edges_below(lowered, out_degrees(self.graph), edge_limit) \
                else None
        flags, self.changed = self._flags(), _NO_FLAGS
        count = flagged_below(flags, out_degrees(self.graph), edge_limit)
        if count <= 0:
            return None if count < 0 else np.zeros(0, dtype=np.int64)
        # np.flatnonzero, in parallel where large
        return ids_between.over(len(flags), self.graph.num_edges)(flags, np.int64(1),
                                                                   np.int64(1))

    def bottom_up(self, threshold, edge_limit: float, epoch: int) -> BottomUpResult | None:
        alg = self.algorithm
        if self._listed is None:
            self._listed = take_pooled(self.graph, "bottom-up list",
                                       lambda: np.empty(len(self.values), dtype=np.int32))
        res = pull_unsettled(self.indptr, self.graph.csc()[1],
                             graph_operands(self.graph, alg.op, "csc"), self.values,
                             threshold, edge_limit, alg.op, alg.inf,
                             self.strong_bound(threshold), self._by_weight, alg.levels,
                             self._listed)
        if res is None:
            return None
        lowered = res.lowered
        if res.complete and self.changed is _NO_FLAGS and self._lowered is None:
            self._lowered = lowered
        else:  # a dense round follows a partial pull, and takes its changes from the flags
            self._flags()[lowered] = 1
        self._touch(lowered)
        self.mark_blocks(lowered, epoch)
        return BottomUpResult(res.attempted, len(lowered), res.minimum, res.edges,
                              res.complete)

    def take_owing_pages(self) -> np.ndarray:
        g = self.graph
        return take_owing_pages(np, self.states, self.initial_state, g.page_first_vertex,
                                g.page_last_vertex)

    def awake_in_pages(self, pages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g = self.graph
        vertices = int((g.page_last_vertex[pages] + 1 - g.page_first_vertex[pages]).sum())
        counts = awake_in_pages.over(vertices, g.num_edges, SERIAL_VERTICES)(
            np.ascontiguousarray(pages, dtype=np.int64), g.page_first_vertex,
            g.page_last_vertex, g.page_edges, g.num_edges, self.indptr, self.states,
            self.table[ATTEMPT], NO_HUBS)
        return counts[:, 0], counts[:, 1]

    def state_counts(self) -> list[int]:
        return _state_counts.over(len(self.states), self.graph.num_edges, SERIAL_VERTICES)(
            self.states, self.table.shape[1]).tolist()

    def _flags(self) -> np.ndarray:
        """The changed flags, a byte per vertex, made where the run has none yet: a run of
        push rounds alone needs none."""
        if self.changed is _NO_FLAGS:
            # np.zeros maps zeroed pages lazily: cheaper than clearing the old flags.
            self.changed = np.zeros(len(self.values), np.uint8)
            if self._lowered is not None:  # a bottom-up round's changes join the flags
                self.changed[self._lowered] = 1
                self._lowered = None
        return self.changed

    def close(self) -> None:
        super().close()
        if self._copier is not None:
            self._copier.shutdown(wait=True)
        if self._hand_back:
            self._hand_back = False
            hand_back(self.graph, self._clean_pool, self.values)
        if self._listed is not None:
            hand_back(self.graph, "bottom-up list", self._listed)
            self._listed = None


#: What a run keeps where it needs none, shared (nothing can be written to them): changed
#: flags (until a round flags, CpuBackend._flags) or weak states, partial sums, weights.
_NO_FLAGS = np.zeros(0, dtype=np.uint8)
_NO_SUMS = np.zeros(0, dtype=np.float64)
_NO_WEIGHTS = np.zeros(0, dtype=np.float32)


def _chunks() -> int:
    """The pieces a sweep's pages are cut into: four a thread of the call."""
    return 4 * numba.get_num_threads()


@kernel(cache=True, parallel=True)
def _state_counts(states: np.ndarray, num_states: int) -> np.ndarray:
    """Vertices per weak state, counted per chunk in parallel (np.bincount of the masked
    states is one serial pass and a temporary, every round)."""
    chunks = max(1, min(64, len(states) >> 16))
    counts = np.zeros((chunks, num_states), dtype=np.int64)
    for c in prange(chunks):
        # Not a shared row (no false sharing); four of them, which vertices side by side in
        # one state do not make wait on one another's counts.
        mine = np.zeros((4, num_states), dtype=np.int64)
        lo, hi = len(states) * c // chunks, len(states) * (c + 1) // chunks
        for v in range(lo, hi):
            mine[v & 3, states[v] & STATE_MASK] += 1
        for s in range(num_states):
            counts[c, s] = mine[0, s] + mine[1, s] + mine[2, s] + mine[3, s]
    return counts.sum(axis=0)
