"""What the scheduler needs from a backend, and the slot layout a memory budget allows."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from seraph import hubs
from seraph.backends.cpu.pull import label_from_reach
from seraph.backends.cpu.push import Scratch, push_until
from seraph.errors import DeviceError
from seraph.lightest import NO_BOUND, LightestIn, lightest_in
from seraph.predictors import OWES
from seraph.semiring import STORED
from seraph.units import format_size

#: The most source blocks the activity summary tracks; more blocks are more precise but
#: cost more per activity check.
MAX_BLOCKS = 4096
#: A push frontier on a device holds at most 1/FRONTIER_SHARE of the vertices, so its two
#: lists (int32) and their edge offsets (int64) cost 2 bytes a vertex, not 16; a larger
#: frontier goes to a dense round. A graph of up to FRONTIER_MIN vertices has room for all
#: of them (1 MiB at most), so small graphs push as far as the CPU engine does.
FRONTIER_SHARE = 8
FRONTIER_MIN = 1 << 16


def graph_cached(graph, key, make: Callable[[], object]):
    """``make()``, computed once per graph: what every run of a graph needs and would
    otherwise rebuild (a pass over all its edges or vertices) is kept on the graph."""
    cache = graph.__dict__.setdefault("_engine_cache", {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def graph_lightest_in(graph) -> LightestIn:
    """The graph's :func:`seraph.lightest.lightest_in` (built once per graph)."""
    def build() -> LightestIn:
        indptr, _indices, weights = graph.csc()
        return NO_BOUND if weights is None else lightest_in(indptr, weights)
    return graph_cached(graph, "lightest in", build)


def graph_hub_chunks(graph) -> hubs.HubChunks:
    """The graph's :func:`seraph.hubs.hub_chunks` (built once per graph and thresholds)."""
    return graph_cached(graph, ("hub chunks", hubs.HUB_EDGES, hubs.CHUNK_EDGES),
                        lambda: hubs.hub_chunks(graph.csc()[0], graph.page_edges,
                                                graph.num_pages, hubs.HUB_EDGES,
                                                hubs.CHUNK_EDGES))


def take_pooled(graph, key: str, make: Callable[[], object]):
    """An object an earlier run on the graph handed back under ``key`` (:func:`hand_back`),
    or ``make()``: what costs O(n) to build (the push scratch, a pinned values buffer) is
    built once per graph and lent to one run at a time."""
    pool = graph_cached(graph, ("pool", key), list)
    return pool.pop() if pool else make()


def hand_back(graph, key: str, item: object) -> None:
    """Returns ``item`` to the graph's pool ``key`` for its next run."""
    graph_cached(graph, ("pool", key), list).append(item)


def out_degrees(graph) -> np.ndarray:
    return graph_cached(graph, "out_degrees", graph.out_degrees)


def frontier_capacity(num_vertices: int) -> int:
    """The most vertices a device's push frontier holds (see FRONTIER_SHARE)."""
    return max(num_vertices // FRONTIER_SHARE + 1, min(num_vertices, FRONTIER_MIN))


@dataclass
class SweepResult:
    attempted: int
    succeeded: int
    skipped_strong: int
    skipped_weak: int
    minimum: object  # smallest value written, or the algorithm's infinity
    sweeps: int = 1  # passes over the window begun
    last_pass_pages: int = 0  # pages of the window the last pass swept, in the given order

    def __add__(self, other: SweepResult) -> SweepResult:
        return SweepResult(self.attempted + other.attempted, self.succeeded + other.succeeded,
                           self.skipped_strong + other.skipped_strong,
                           self.skipped_weak + other.skipped_weak,
                           min(self.minimum, other.minimum), self.sweeps + other.sweeps,
                           other.last_pass_pages)


@dataclass
class BottomUpResult:
    """What a bottom-up round did (see :meth:`Backend.bottom_up`)."""

    attempted: int  # the vertices above the threshold with in-edges
    succeeded: int
    minimum: object  # smallest value written, or the algorithm's infinity
    edges: int  # in-edges read


@dataclass
class PushOutcome:
    """What :meth:`Backend.push` did."""

    frontier: object  # the vertices still waiting to push (empty when converged), in the
    # backend's memory; the scheduler only asks how many
    rounds: int
    edges: int  # out-edges relaxed
    succeeded: int  # vertices lowered
    minimum: object  # the smallest value among the waiting vertices, when there are any


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
             lightest: bool = False) -> Layout:
        """Slots for ``budget`` bytes (None: everything resident). ``weights`` says whether
        the algorithm reads edge weights (default: whenever the graph has them); BFS and CC
        do not, so their pages move and occupy half the bytes. ``lightest``: SSSP under the
        strong predictor, whose rule reads each vertex's lightest in-edge
        (:mod:`seraph.lightest`, one byte a vertex, when the graph has weights)."""
        weights = graph.weighted if weights is None else weights and graph.weighted
        lightest = lightest and graph.weighted
        n, pages = graph.num_vertices, graph.num_pages
        block_shift = 0
        while (n >> block_shift) >= MAX_BLOCKS:
            block_shift += 1
        num_blocks = max(1, ((n - 1) >> block_shift) + 1)
        # values 4, csc indptr 8, changed flag 1, weak state 1, plus block epochs; a
        # directed graph's CSR indptr too (the out-edges of changed vertices are counted on
        # the device; a symmetric graph's are the CSC's); the push frontier's two lists
        # and edge offsets; the hub chunk list (none on a graph without hubs); and SSSP's
        # lightest in-edge, one byte a vertex
        indptrs = 1 if graph.symmetric else 2
        frontier = frontier_capacity(n)
        state = n * (4 + 1 + (1 if weak else 0) + (1 if lightest else 0)) + \
            8 * indptrs * (n + 1) + num_blocks * 8 + 16 * frontier + 8 + \
            graph_hub_chunks(graph).nbytes
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
        ``strong`` or ``weak``), as :func:`seraph.api.execute` plans it."""
        return cls.plan(graph, predictor == "weak", budget,
                        weights=algorithm.weight_mode == STORED,
                        lightest=predictor == "strong" and algorithm.lightest_in_rule)


def take_owing_pages(xp, states, initial_state, page_first, page_last):
    """The pages holding in-edges of the vertices whose state owes an attempt, which are
    reset to ``initial_state``; ``xp`` is numpy or cupy (the states stay where they are).

    A page holds in-edges of exactly the vertices between its first and last destination
    (one in between without in-edges only adds the page to the re-check), so a prefix count
    of the owing vertices finds the pages without listing the vertices."""
    owing = (states & OWES) != 0
    states[owing] = initial_state
    before = xp.concatenate((xp.zeros(1, xp.int64), xp.cumsum(owing, dtype=xp.int64)))
    return xp.flatnonzero(before[page_last + 1] - before[page_first])


class Backend(ABC):
    """Page slots and vertex state on a device, driven by the scheduler.

    Copies are asynchronous: ``load`` starts one, ``landed`` polls it, ``wait`` blocks and
    returns its (start, end) times for the trace.
    """

    name = "abstract"

    def __init__(self, graph, algorithm, layout: Layout, table: np.ndarray | None,
                 initial_state: int = 0):
        self.graph, self.algorithm, self.layout = graph, algorithm, layout
        self.table = table  # the weak diagram's packed table, or None
        self.initial_state = np.uint8(initial_state)
        self._scratch: Scratch | None = None
        self.lightest = graph_lightest_in(graph) if layout.lightest else NO_BOUND

    def strong_bound(self, threshold) -> LightestIn:
        """What the strong rule adds to ``threshold`` (:func:`seraph.lightest.proven`): each
        vertex's lightest in-edge for SSSP, once a round has set the threshold; nothing
        before (-1), when no round stands behind the argument."""
        return self.lightest if threshold >= 0 else NO_BOUND

    def slot_offsets(self, slots, pages) -> np.ndarray:
        """Where each page's first edge sits in the slot arrays: a resident graph's pages
        sit at their own offsets, paged ones at their slot's."""
        where = pages if self.layout.resident else slots
        return np.asarray(where, dtype=np.int64) * self.graph.page_edges

    @abstractmethod
    def load(self, slot: int, page: int) -> None: ...

    @abstractmethod
    def landed(self, slot: int) -> bool: ...

    @abstractmethod
    def wait(self, slot: int) -> tuple[float, float] | None: ...

    @abstractmethod
    def sweep(self, slots: np.ndarray, pages: np.ndarray, predictor: int, threshold,
              epoch: int) -> SweepResult: ...

    def sweep_until(self, slots: np.ndarray, pages: np.ndarray, predictor: int, threshold,
                    epoch: int, max_sweeps: int, incoming: int | None = None,
                    mandatory: int = 1) -> SweepResult:
        """Sweeps the window again and again, up to ``max_sweeps`` passes. Stops after a
        pass that changed nothing, or, once its first ``mandatory`` pages are swept, as
        soon as the copy into slot ``incoming`` has landed.

        Pass s marks what it changes with epoch ``epoch + s``. Returns the totals, with
        ``sweeps`` the passes begun and ``last_pass_pages`` how many pages (from the first)
        the last one swept. This is the persistent GPU kernel's rule, run from the host:
        whole passes while there is no copy to watch, and page by page while there is, so
        that a landed copy stops the sweep within a page.
        """
        total: SweepResult | None = None
        swept = pass_succeeded = 0  # pages swept over all passes; successes in this pass
        while True:
            sweep, k = divmod(swept, len(pages))
            if incoming is None:
                end = len(pages)
            else:
                end = k + 1 if swept >= mandatory else min(len(pages), mandatory)
            res = self.sweep(slots[k:end], pages[k:end], predictor, threshold, epoch + sweep)
            total = res if total is None else total + res
            total.sweeps, total.last_pass_pages = sweep + 1, end
            swept += end - k
            pass_succeeded += res.succeeded
            if incoming is not None and swept >= mandatory and self.landed(incoming):
                return total
            if end == len(pages):
                if not pass_succeeded or sweep + 1 == max_sweeps:
                    return total
                pass_succeeded = 0

    @abstractmethod
    def set_values(self, values: np.ndarray) -> None: ...

    def init_values(self, source: int | None) -> None:
        """The algorithm's values before the first round (a device may build them there)."""
        self.set_values(self.algorithm.initial_values(self.graph.num_vertices, source))

    @abstractmethod
    def host_values(self) -> np.ndarray:
        """The values in host memory, for the push engine: the backend's own array, which
        the next call overwrites."""

    def result(self) -> np.ndarray:
        """The final values, in a host array the caller owns (the run is over)."""
        return self.host_values()

    @abstractmethod
    def apply_host_changes(self, changed: np.ndarray, epoch: int) -> None:
        """The host changed ``changed`` (push rounds): sync them, dirty their blocks, and
        return their predictor states to the initial one (every success returns to 0)."""

    def push(self, frontier, edge_limit: float, epoch: int) -> PushOutcome:
        """Push rounds from ``frontier`` (every vertex whose out-edges may not have been
        relaxed with its current value) until converged or until the waiting vertices have
        ``edge_limit`` out-edges or more; at least one round runs. The vertices lowered get
        their blocks marked with ``epoch`` and their predictor states reset.

        Here the CPU push engine (:mod:`seraph.backends.cpu.push`) runs on :meth:`host_values`
        and the changes go back through :meth:`apply_host_changes`; a device may push itself."""
        graph, alg = self.graph, self.algorithm
        indptr, indices, weights = graph.csr()
        if self._scratch is None:
            # Filling a new one costs O(n): 50 ms at 67 M vertices.
            self._scratch = take_pooled(graph, "push_scratch",
                                        lambda: Scratch(graph.num_vertices))
        values = self.host_values()
        res = push_until(indptr, indices, weights, values, np.asarray(frontier),
                         alg.weight_mode, int(edge_limit), out_degrees(graph),
                         scratch=self._scratch)
        if len(res.changed):
            self.apply_host_changes(res.changed, epoch)
        # Read after apply_host_changes: host_values is the backend's own buffer.
        minimum = values[res.frontier].min() if len(res.frontier) else alg.inf
        return PushOutcome(res.frontier, res.rounds, res.edges_pushed, len(res.changed),
                           minimum)

    def label_unreached(self) -> np.ndarray | None:
        """After a reach from a hub: the labels of :func:`~seraph.backends.cpu.pull.
        label_from_reach`; returns the unreached vertices with out-edges, whose labels
        must still spread (a backend may return None instead: every vertex)."""
        values = self.host_values()
        spreading = label_from_reach(values, out_degrees(self.graph), self.algorithm.inf)
        self.set_values(values)
        return spreading

    @abstractmethod
    def mark_blocks(self, vertices: np.ndarray, epoch: int) -> None: ...

    @abstractmethod
    def block_epochs(self) -> np.ndarray:
        """Per source block, the epoch of its last change (host array)."""

    @abstractmethod
    def take_changed(self, edge_limit: float) -> np.ndarray | None:
        """The vertices changed since the last call, as :meth:`push` takes them (in the
        backend's memory), or None when their out-edges number ``edge_limit`` or more, or
        (on a device) they are more than its push frontier holds; the flags are cleared
        either way. After a dense round most vertices may have changed, and the scheduler
        wants the list only when it can push, so a device counts before it lists."""

    @abstractmethod
    def bottom_up(self, threshold, edge_limit: float, epoch: int) -> BottomUpResult | None:
        """A bottom-up round (:mod:`seraph.backends.cpu.bottom_up`), when the vertices with
        in-edges whose value is above ``threshold`` have fewer than ``edge_limit`` of them
        (None: it did not run). Each such vertex pulls all of its in-edges; the vertices
        lowered are flagged changed and their blocks marked with ``epoch``, as a sweep's are."""

    @abstractmethod
    def take_owing_pages(self) -> np.ndarray:
        """The pages holding in-edges of the vertices the weak predictor skipped since their
        last attempt (ascending); those vertices are made to attempt again."""

    @abstractmethod
    def state_counts(self) -> list[int]: ...

    def close(self) -> None:
        """The run is over: what the graph's later runs can reuse goes back to it."""
        if self._scratch is not None:
            hand_back(self.graph, "push_scratch", self._scratch)  # every push leaves it clean
            self._scratch = None
