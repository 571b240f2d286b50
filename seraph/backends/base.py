"""What the scheduler needs from a backend (:class:`Backend`) and what its calls return.

The shared host-side pieces live beside it: the slot layout (:mod:`seraph.backends.layout`),
the per-graph caches (:mod:`seraph.backends.caches`) and the activity summary
(:mod:`seraph.backends.activity`). The backends themselves are :mod:`seraph.backends.cpu`
and :mod:`seraph.backends.cuda` (docs/design.md, "Architecture").
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from seraph.backends.caches import graph_lightest_in, out_degrees
from seraph.backends.layout import Layout
from seraph.backends.output import output_values
from seraph.lightest import NO_BOUND, LightestIn
from seraph.spec import ACCUMULATOR, OPERAND, SCALE, Output


@dataclass
class SweepResult:
    attempted: int
    succeeded: int
    skipped_strong: int
    skipped_weak: int
    minimum: object  # smallest value written, or the algorithm's infinity
    sweeps: int = 1  # passes over the window begun
    last_pass_pages: int = 0  # pages of the window the last pass swept, in the given order
    edges_read: int | None = None  # in-edges read, where the kernel counts them
    moved: float = 0.0  # a recomputing sweep's sum of |change| over the sums it wrote

    def __add__(self, other: SweepResult) -> SweepResult:
        edges = None if self.edges_read is None else self.edges_read + other.edges_read
        return SweepResult(self.attempted + other.attempted, self.succeeded + other.succeeded,
                           self.skipped_strong + other.skipped_strong,
                           self.skipped_weak + other.skipped_weak,
                           min(self.minimum, other.minimum), self.sweeps + other.sweeps,
                           other.last_pass_pages, edges, self.moved + other.moved)


@dataclass
class PeakMemory:
    """The most device memory a run held (bytes); filled while the run lasts."""

    peak: int = 0


@dataclass
class BottomUpResult:
    """What a bottom-up round did (see :meth:`Backend.bottom_up`)."""

    attempted: int  # the vertices above the threshold with in-edges
    succeeded: int
    minimum: object  # smallest value written, or the algorithm's infinity
    edges: int  # in-edges read
    #: Whether it pulled every vertex above the threshold (a round); where it stopped at
    #: the edge limit what it pulled stands, and a dense round attempts the rest.
    complete: bool = True


@dataclass
class PushOutcome:
    """What :meth:`Backend.push` did."""

    frontier: object  # the vertices still waiting to push (empty when converged), in the
    # backend's memory; the scheduler only asks how many
    rounds: int
    edges: int  # out-edges relaxed
    succeeded: int  # vertices lowered
    minimum: object  # the smallest value among the waiting vertices, when there are any


def add_at_p(x, amount: float, vertex: int | None) -> None:
    """``x += amount * p`` in place, ``p`` a random walk's restart: uniform (``vertex``
    None) or all at ``vertex``."""
    if vertex is None:
        x += x.dtype.type(amount / len(x))
    else:
        x[vertex] += x.dtype.type(amount)


class Backend(ABC):
    """Page slots and vertex state on a device, driven by the scheduler.

    Copies are asynchronous: ``load`` starts one, ``landed`` polls it, ``wait`` blocks and
    returns its (start, end) times for the trace.
    """

    name = "abstract"  #: what the run's stats call the device
    #: The bytes of a one-time upload of the whole graph (0: its pages moved by slot).
    upload_bytes: int = 0
    #: Whether :meth:`push` orders the pushes of a binned operator (SSSP's) itself, in
    #: delta-stepping bins or near-far; False: plain rounds of the frontier it is given, as
    #: a partitioned run's worker pushes (the workers order them together).
    push_in_bins: bool = True
    #: Whether a recomputing program's next sweeps write every sum that moved at all,
    #: rather than those that moved by more than its rule's ``eps`` of themselves.
    write_every_change: bool = False
    #: The out-degrees a random walk divides by (:meth:`set_walk_scale`), in the backend's
    #: memory, where they are not its graph's CSR's: a partitioned run's part holds only
    #: some out-edges, and its worker gives the whole graph's here. None: the graph's own.
    walk_degrees = None

    def __init__(self, graph, algorithm, layout: Layout, table: np.ndarray | None,
                 initial_state: int = 0):
        self.graph, self.algorithm, self.layout = graph, algorithm, layout
        self.table = table  # the weak diagram's packed table, or None
        self.initial_state = np.uint8(initial_state)
        self.lightest = graph_lightest_in(graph) if layout.lightest else NO_BOUND

    # -- capabilities: what the engine asks before a run ------------------------------------
    @classmethod
    def create(cls, config, graph, algorithm, layout: Layout, table: np.ndarray | None,
               initial_state: int = 0) -> Backend:
        """The backend for a run under ``config`` (an :class:`~seraph.scheduler.EngineConfig`;
        a backend takes the options that concern it)."""
        return cls(graph, algorithm, layout, table, initial_state)

    @classmethod
    @contextlib.contextmanager
    def measuring_memory(cls) -> Iterator[PeakMemory]:
        """Around a whole run (the backend's creation to its close): the most device memory
        in use meanwhile (none on a device that is the host's memory)."""
        yield PeakMemory()

    @classmethod
    def make_room(cls, graph, layout: Layout) -> None:
        """Before a run is measured: frees what earlier runs left on the device for the
        graph that this run's ``layout`` does not use, so that the run holds no more than
        its budget (nothing to free on a device that is the host's memory)."""
        return None

    @classmethod
    def default_budget(cls, graph) -> int | None:
        """The memory budget when the run names none (None: no limit, everything resident)."""
        return None

    @classmethod
    def weak_pays(cls, algorithm) -> bool:
        """Whether the weak predictor's skipped attempts pay for its bookkeeping here on
        ``algorithm``'s sweeps, so that ``predictor="auto"`` takes it where the algorithm
        asks for it: after :attr:`~seraph.spec.Algorithm.weak_after` dense rounds of a long
        label propagation, or as PageRank-delta's default (measured:
        docs/benchmarks/predictors-cpu.md, predictors-gpu.md,
        predictors-pagerank-delta-cpu.md and -gpu.md)."""
        return False

    @abstractmethod
    def default_push_alpha(self) -> float:
        """The push threshold when the run names none: rounds push while the changed
        vertices' out-edges are fewer than m / alpha (0: never push)."""

    @property
    def push_capacity(self) -> int:
        """The most vertices a push phase's frontier may hold: any number on the host; a
        device's push lists hold fewer."""
        return self.graph.num_vertices

    @abstractmethod
    def bottom_up_edge_limit(self, push_limit: float, num_edges: int) -> float:
        """The most in-edges a bottom-up round takes, given the push limit (in out-edges)
        and the graph's edge count; bottom-up rounds run only where pushes do."""

    def pulls_again(self, lowered: int) -> bool:
        """Whether the round after a bottom-up round that lowered ``lowered`` vertices is
        bottom-up too, rather than pushed from them (where the backend says so)."""
        return False

    def strong_bound(self, threshold) -> LightestIn:
        """What the strong rule adds to ``threshold`` (:func:`seraph.lightest.proven`): each
        vertex's lightest in-edge for SSSP, once a round has set the threshold; nothing
        before (-1), when no round stands behind the argument."""
        return self.lightest if threshold >= 0 else NO_BOUND

    def slot_offsets(self, slots, pages) -> np.ndarray:
        """Where each page's first edge sits in the arrays its sweep reads: a resident
        graph's pages, and pages read in place (``slots`` None), at their own offsets in the
        whole CSC; paged ones at their slot's."""
        where = pages if self.layout.resident or slots is None else slots
        return np.asarray(where, dtype=np.int64) * self.graph.page_edges

    @abstractmethod
    def awake_in_pages(self, pages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each of ``pages``: the in-edges held there by the vertices that a sweep of
        the page under the weak predictor attempts (in an attempting state, or split across
        pages, or a hub), and how many such vertices (rows) have some: what the sweep reads
        (host arrays)."""

    @abstractmethod
    def load(self, slot: int, page: int) -> None: ...

    @abstractmethod
    def landed(self, slot: int) -> bool: ...

    @abstractmethod
    def wait(self, slot: int) -> tuple[float, float] | None: ...

    @abstractmethod
    def sweep(self, slots: np.ndarray | None, pages: np.ndarray, predictor: int, threshold,
              epoch: int) -> SweepResult:
        """Sweeps ``pages``, held in ``slots``, or with ``slots`` None read in place from the
        graph's arrays in host memory (indices only: the engine reads in place only where
        the layout has no weights, :meth:`seraph.rounds.DenseRounds.in_place`)."""

    def sweep_until(self, slots: np.ndarray | None, pages: np.ndarray, predictor: int, threshold,
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
            res = self.sweep(None if slots is None else slots[k:end], pages[k:end], predictor,
                             threshold, epoch + sweep)
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

    # -- a summing program's vectors (docs/design.md, "Summing programs") -------------------
    #: The array module of the backend's vertex vectors: numpy, or cupy on a GPU. A summing
    #: program's own steps are written once over it, inside :meth:`vector_steps`.
    xp = np

    def vector(self, name: str):
        """The vertex vector ``name`` in the backend's memory: the values, or one of the
        program's :attr:`~seraph.spec.Algorithm.vectors`."""
        return self.values if name == "values" else self.vectors[name]

    def set_vector(self, name: str, host: np.ndarray) -> None:
        """Copies a host array into the vertex vector ``name`` (no device temporary)."""
        self.xp.copyto(self.vector(name), host)

    @property
    def write_share(self) -> float:
        """How far a recomputed sum must move, as a share of the sum it replaces, to be
        written (:class:`~seraph.spec.Recompute`)."""
        return 0.0 if self.write_every_change else self.algorithm.recompute.eps

    def set_walk_scale(self) -> None:
        """The vector ``scale``: ``1 / outdeg(v)``, 0 where v has no out-edges, the share of
        a random walk's value that each out-edge carries (:meth:`walk_step`). Written in
        place from the graph's CSR here, for vectors in host memory; a device computes it
        where its vectors are."""
        scale = self.vector(SCALE)
        degrees = out_degrees(self.graph) if self.walk_degrees is None else self.walk_degrees
        scale.fill(0)
        np.divide(1.0, degrees, out=scale, where=degrees > 0)

    def fill_where_in_edges(self, name: str, value: float) -> None:
        """The vector ``name``: ``value`` at each vertex with in-edges, 0 elsewhere. Written
        in place from the graph's CSC here, for vectors in host memory; a device writes it
        where its vectors are."""
        x, indptr = self.vector(name), self.graph.csc()[0]
        x.fill(0)
        x[indptr[1:] > indptr[:-1]] = value

    def vector_steps(self) -> contextlib.AbstractContextManager:
        """Around a program's own steps on the vectors: where they run (on a GPU, the
        stream that the backend's kernels run on, so that they are ordered with them)."""
        return contextlib.nullcontext()

    @abstractmethod
    def split_sums_from_values(self) -> None:
        """A recomputing program (:class:`~seraph.spec.Recompute`) has set its values: the
        partial sums of each vertex whose in-edges the sweeps cut into pieces (across
        pages, or into a device's hub chunks) start from its value, the piece holding its
        first in-edge with all of it and the others with 0, so that they add up to it."""

    @abstractmethod
    def scale_sums(self, factor: float) -> None:
        """Multiplies a recomputing program's values and every partial sum of the vertices
        split into pieces by ``factor``: the pieces still add up to the values, and each
        still holds what its own in-edges gave (a reset to the values would not)."""

    @abstractmethod
    def gather_sum(self, slots: np.ndarray, pages: np.ndarray, operand, into) -> None:
        """``into[v] += sum of operand[u] over the in-edges (u -> v) of the pages`` (already
        resident in ``slots``), each edge counted once; a vertex whose in-edges span
        several pages gets each page's partial sum. Returns once done: the pages' slots
        may then take other pages."""

    def walk_step(self, damping: float, restart: float, vertex: int | None) -> float:
        """An iterating summing program's step from its sums, for values that are a
        distribution (total 1) over the vertices, each passing ``damping`` of itself
        along its out-edges, scaled by ``scale`` (a random walk's): the new values are

            values'[v] = damping * (sums[v] + lost p[v]) + restart p[v],

        ``p`` uniform (``vertex`` None) or all at ``vertex``, and ``lost`` the mass the
        sums did not carry (1 less their total: the values of vertices without
        out-edges, and the shares' rounding), so that the total stays 1 when ``restart``
        is ``1 - damping``. Then ``operand = values' * scale`` and the sums go back to 0,
        ready for the next gather. Returns the change ``sum |values' - values|``.

        Written over :attr:`xp` in whole-vector steps, inside :meth:`vector_steps`; a
        backend may fuse them (the CPU and CUDA backends do, in one pass after the sums'
        total)."""
        xp = self.xp
        values, sums = self.vector("values"), self.vector(ACCUMULATOR)
        jump = restart + damping * (1.0 - float(sums.sum(dtype=np.float64)))
        sums *= sums.dtype.type(damping)
        add_at_p(sums, jump, vertex)
        xp.subtract(values, sums, out=values)
        xp.abs(values, out=values)
        change = float(values.sum(dtype=np.float64))
        xp.copyto(values, sums)
        xp.multiply(values, self.vector(SCALE), out=self.vector(OPERAND))
        sums.fill(0)
        return change

    @abstractmethod
    def walk_totals(self) -> tuple[float, float]:
        """A recomputing random walk's totals (:class:`~seraph.spec.Recompute`): the
        values' total, and their total over the vertices whose ``scale`` is 0 (those
        without out-edges). Leaves every vector as it was: the operands stand between
        rounds that do not scale the sums."""

    def walk_operands(self, damping: float, factor: float, vertex: int | None) -> None:
        """A recomputing random walk's operand from its sums: the values (and every partial
        sum, :meth:`scale_sums`) scaled by ``factor`` where it is not 1, then

            operand[v] = (damping * values[v] + p[v]) * scale[v],

        ``p`` uniform (``vertex`` None) or all at ``vertex``: each vertex's rank, of total
        ``sum(damping * values + p)``, over its out-degree. Written over :attr:`xp` in
        whole-vector steps, inside :meth:`vector_steps`; a backend may fuse them (the CPU
        does, in one pass)."""
        if factor != 1:
            self.scale_sums(factor)
        values, operand = self.vector("values"), self.vector(OPERAND)
        self.xp.multiply(values, values.dtype.type(damping), out=operand)
        add_at_p(operand, 1.0, vertex)
        operand *= self.vector(SCALE)

    @abstractmethod
    def set_values(self, values: np.ndarray) -> None: ...

    def init_values(self, source: int | None) -> None:
        """The algorithm's values before the first round (a device may build them there)."""
        self.set_values(self.algorithm.initial_values(self.graph.num_vertices, source))

    @abstractmethod
    def host_values(self) -> np.ndarray:
        """The values in host memory, for the push engine: the backend's own array, which
        the next call overwrites."""

    def result(self, output: Output) -> np.ndarray:
        """The final values as ``output`` says (the public algorithm's), in a host array
        the caller owns (the run is over: the backend's own host values may be it)."""
        return output_values(self.host_values(), self.algorithm.inf, output, fresh=False)

    @abstractmethod
    def apply_host_changes(self, changed: np.ndarray, epoch: int) -> None:
        """The host changed ``changed`` (push rounds): sync them, dirty their blocks, and
        return their predictor states to the initial one (every success returns to 0)."""

    @abstractmethod
    def push(self, frontier, edge_limit: float, epoch: int) -> PushOutcome:
        """Push rounds from ``frontier`` (every vertex whose out-edges may not have been
        relaxed with its current value) until converged or until the waiting vertices have
        ``edge_limit`` out-edges or more; at least one round runs. The vertices lowered get
        their blocks marked with ``epoch`` and their predictor states reset
        (:class:`seraph.backends.cpu.host_push.HostPush` runs them on the host)."""

    @abstractmethod
    def union_find(self, merge=None) -> None:
        """Connected components by union-find, into the values (CC's, every vertex its own
        id to start): each vertex's value becomes the smallest vertex id of its component
        (docs/design.md, "Union-find CC"). ``merge``, where given, is called with the
        parents (int32, in the backend's memory, each pointing at its root) after the
        sampling and after the finish: the workers of a partitioned run, each of which
        links its own part's edges, unite their forests there (:meth:`link_parents`), so
        that all of them skip the same largest component."""

    @abstractmethod
    def link_parents(self, parent, other) -> None:
        """Unites, in ``parent``, each vertex with its parent in ``other`` (another forest
        of the same vertices, in the backend's memory), then points every vertex at its
        root."""

    @abstractmethod
    def label_unreached(self) -> np.ndarray | None:
        """After a reach from a hub (:mod:`seraph.algorithms.cc`): every reached vertex takes
        the smallest reached id, every other vertex its own id; returns the unreached
        vertices with out-edges, whose labels must still spread (a backend may return None
        instead: every vertex)."""

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
        lowered are flagged changed and their blocks marked with ``epoch``, as a sweep's are.
        A backend that finds the limit met partway may return what it pulled with
        ``complete`` False: those changes are a dense sweep's, and no round."""

    @abstractmethod
    def take_owing_pages(self) -> np.ndarray:
        """The pages holding in-edges of the vertices the weak predictor skipped since their
        last attempt (ascending); those vertices are made to attempt again."""

    @abstractmethod
    def state_counts(self) -> list[int]: ...

    @abstractmethod
    def close(self) -> None:
        """The run is over: what the graph's later runs can reuse goes back to it."""
