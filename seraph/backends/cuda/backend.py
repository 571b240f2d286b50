"""The CUDA backend (cupy): pinned host pages, a copy and a compute stream, device slots.

The graph's pages live in host memory registered with ``cudaHostRegister``, so every page
copy is a DMA at full PCIe speed. What every run of a graph uploads alike (the CSC index
and, when the graph fits, all its pages) stays on the device between runs
(:class:`DeviceGraph`). Copies run on their own stream and record an event per
slot; a sweep runs on the compute stream after making it wait on the events of the pages
it reads. The kernels come from ``kernels/*.cu`` beside this module (pull, push, select and
reach, each after ``values.cuh`` and the header of :mod:`.kernels.interface`, which
declares their parameters and the constants they share with Python) through
``RawModule``, as templates named by ``name_expressions``: the relaxing kernels over the
algorithm's edge operator (``pull_window<Distance>``), the selections over a value type; a
launch passes its arguments by name (:class:`_Kernel`).

A window's repeated sweeps run in one persistent cooperative kernel: right after a page's
bytes, the copy stream writes the load's sequence number into device memory, and the
kernel, polling it between grid-wide syncs, stops when the page has landed, so no host
round-trip sits between sweeps. The scheduler and predictors are the CPU backend's,
unchanged.

Sparse phases stay on the device too. Bottom-up rounds pull a few vertices' in-edges
straight from the host's pinned CSC, and push rounds (``kernels/push.cu``) a few vertices'
out-edges straight from its CSR, both mapped into the device's address space (zero-copy):
a round reads the edges of the vertices it touches, not their pages, and the values never
leave the device. ``push_on="host"`` hands push rounds to the CPU push engine instead.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
import weakref
from collections.abc import Iterator

import cupy as cp
import cupyx
import numpy as np

from seraph import interrupts, progress
from seraph.backends.activity import PUSH_ALPHA, blocks_of
from seraph.backends.base import BottomUpResult, PeakMemory, PushOutcome, SweepResult
from seraph.backends.caches import (
    graph_cached,
    graph_hub_chunks,
    graph_max_out_degree,
    hand_back,
    take_pooled,
)
from seraph.backends.cpu.host_push import HostPush
from seraph.backends.cpu.push import default_delta
from seraph.backends.cpu.union_find import GIANT_SAMPLES, giant_sample, most_common
from seraph.backends.cuda.kernels import interface
from seraph.backends.layout import MAX_PUSH_BLOCKS, Layout, frontier_capacity
from seraph.backends.output import output_values
from seraph.hubs import HubChunks
from seraph.operators import EdgeOperator
from seraph.predictors import ATTEMPT, OWES
from seraph.spec import ACCUMULATOR, MIN, OPERAND, SCALE, Output

_THREADS = 256
_STATUS = 8  # int64 words of a launch's status block (see CudaBackend._launch_buffers)
_WINDOW_ARRAYS = 4  # a launch's window: pages, slot offsets, vertex and hub-chunk prefixes
_modules: dict[tuple[str, bool, tuple[EdgeOperator, ...]], cp.RawModule] = {}
#: cudaHostRegisterMapped: the pinned pages are also addressable from kernels.
_REGISTER_MAPPED = 2
#: BFS's push limit when pages move: its levels push while their out-edges are fewer than
#: m / LEVEL_PUSH_ALPHA. A dense round moves every active page, a pass over PCIe, where a
#: pushed level reads just its frontier's out-edges in place, each once. SSSP keeps
#: PUSH_ALPHA: delta-stepping relaxes edges more than once, so pushing further than that
#: does not pay on every graph.
LEVEL_PUSH_ALPHA = 4.0
#: When pages move, a bottom-up round takes up to this share of all edges (see
#: CudaBackend.bottom_up_edge_limit).
BOTTOM_UP_SHARE = 0.7
#: Waiting for a launch, the host asks whether it is done for this long, as a blocking
#: synchronize would spin, then every POLL_S: a signal's handler runs meanwhile (see
#: CudaBackend._finish), and a sleep after a short launch would delay every window step.
SPIN_S = 0.05
#: The most blocks that share one page's vertices when counting what its sweep reads
#: (CudaBackend.awake_in_pages).
AWAKE_SHARES = 16
#: The blocks over which a walk's totals and steps add up their vertices' shares: fixed, so
#: that every card rounds them alike and a partitioned run's workers stop together.
WALK_BLOCKS = 1024
POLL_S = 0.0005


def _kernels(source: str, cooperative: bool, operators: tuple[EdgeOperator, ...]
             ) -> cp.RawModule:
    """A kernel file of kernels/ (beside this module), after its header
    (:mod:`.kernels.interface`) and the shared ``values.cuh``, compiled once per process
    and operator set: its relaxing kernels for ``operators`` alone, as cupy caches no
    module with name expressions on disk and each process builds what it runs. The
    cooperative build is the one whose kernels may sync the whole grid."""
    key = (source, cooperative, operators)
    if key not in _modules:
        _modules[key] = cp.RawModule(
            code=interface.source_code(source), options=("-std=c++17",),
            name_expressions=interface.name_expressions(source, operators),
            enable_cooperative_groups=cooperative)
    return _modules[key]


class _Kernel:
    """A kernel of kernels/ for one template argument (an edge operator, a value type, or
    none: :func:`.kernels.interface.name_expression`), launched with its parameters by
    name (:mod:`.kernels.interface` declares them)."""

    def __init__(self, name: str, argument: EdgeOperator | np.dtype | None,
                 cooperative: bool):
        self.name = name
        source = interface.KERNELS[name].source
        expression = interface.name_expression(name, argument)  # refuses a wrong argument
        operators = (argument,) if isinstance(argument, EdgeOperator) else ()
        self.function = _kernels(source, cooperative, operators).get_function(expression)
        self._pack = interface.packer(name, argument)

    def __call__(self, blocks: int, **args) -> None:
        """Launches ``blocks`` blocks of ``_THREADS`` threads on the current stream."""
        self.function((blocks,), (_THREADS,), self._pack(args))


@functools.cache
def _kernel(name: str, argument: EdgeOperator | np.dtype | None = None,
            cooperative: bool = False) -> _Kernel:
    """``name`` for ``argument``: the algorithm's edge operator for a relaxing kernel
    (pull.cu, push.cu), a value type for a selection (select.cu), none for the others."""
    if argument is not None and not isinstance(argument, EdgeOperator):
        argument = np.dtype(argument)
    return _Kernel(name, argument, cooperative)


#: values[v] = x for each (v, x): a push on the host's changes, written back.
_scatter = cp.ElementwiseKernel("int64 v, T x", "raw T values", "values[v] = x",
                                "seraph_scatter")
#: A lowered vertex's predictor state starts again, its debt kept (as kernels/push.cu does).
_reset_states = cp.ElementwiseKernel(
    "int64 v, uint8 initial", "raw uint8 states",
    f"states[v] = initial | (states[v] & {int(OWES)})", "seraph_reset_states")
#: values[i] = i, written in place.
_iota = cp.ElementwiseKernel("", "T x", "x = (T)i", "seraph_iota")
#: scale[v] = 1 / (indptr[v + 1] - indptr[v]), 0 where that is 0.
_reciprocal_degrees = cp.ElementwiseKernel(
    "raw I indptr", "T scale",
    "const I d = indptr[i + 1] - indptr[i]; scale = d > 0 ? (T)1 / (T)d : (T)0",
    "seraph_reciprocal_degrees")
#: scale[v] = 1 / degrees[v], 0 where that is 0.
_reciprocal = cp.ElementwiseKernel(
    "I d", "T scale", "scale = d > 0 ? (T)1 / (T)d : (T)0", "seraph_reciprocal")
#: x[v] = value where v's indptr row is not empty, else 0.
_fill_where_in_edges = cp.ElementwiseKernel(
    "raw I indptr, T value", "T x", "x = indptr[i + 1] > indptr[i] ? value : (T)0",
    "seraph_fill_where_in_edges")
#: A vertex that owes an attempt (seraph.predictors.OWES) flags every page holding its
#: in-edges and starts again from `initial`: a pass with no temporary a vertex (cupy's
#: masks and prefix sums, as predictors.take_owing_pages takes them, hold 17 bytes a vertex,
#: past the budget).
_flag_owing_pages = cp.ElementwiseKernel(
    "raw int64 indptr, int64 page_edges, uint8 initial", "uint8 state, raw uint8 flags",
    f"""if ((state & {int(OWES)}) && indptr[i + 1] > indptr[i]) {{
        for (long long p = indptr[i] / page_edges; p <= (indptr[i + 1] - 1) / page_edges; ++p)
            flags[p] = 1;
        state = initial;
    }}""", "seraph_flag_owing_pages")
#: first[0] = the smallest i with value[i] != inf (first[0] starts at n). A thread reads the
#: word before its atomic, so that once a small i is in, the many reached vertices after it
#: do not all queue on the word (a stale read only costs an atomic).
_first_reached = cp.ElementwiseKernel(
    "T value, T inf", "raw uint64 first",
    "if (value != inf && (unsigned long long)i < first[0]) "
    "atomicMin(&first[0], (unsigned long long)i)", "seraph_first_reached")


def _co_resident_blocks(kernel) -> int:
    """The largest grid a cooperative launch of ``kernel`` accepts (0: none)."""
    device = cp.cuda.Device()
    if not device.attributes.get("CooperativeLaunch", 0):
        return 0
    per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
        kernel.kernel.ptr, _THREADS, 0)
    return per_sm * device.attributes["MultiProcessorCount"]


def default_budget(graph) -> int:
    """Most of the free device memory (a margin stays for cupy and the driver), counting
    as free what cupy's pool holds unused and what this graph keeps on the device."""
    free, _total = cp.cuda.runtime.memGetInfo()
    held = graph.__dict__.get("_engine_cache", {}).get("device")
    return int((free + cp.get_default_memory_pool().free_bytes()) * 0.9) + \
        (held.nbytes if held is not None else 0)


def _memcpy(dst: int, src: int, nbytes: int, kind: int, stream: cp.cuda.Stream) -> None:
    """An asynchronous copy between raw pointers (pinned host or device memory)."""
    if nbytes:
        cp.cuda.runtime.memcpyAsync(dst, src, nbytes, kind, stream.ptr)


def _pin(graph, array: np.ndarray) -> None:
    """Registers one of the graph's page arrays as pinned, mapped memory, once per graph:
    pinning costs time in proportion to the bytes, too much to repeat in every run. The pages stay
    pinned until the graph is garbage-collected."""
    pinned = graph_cached(graph, "pinned", set)
    ptr = array.ctypes.data
    if array.nbytes == 0 or ptr in pinned:
        return
    cp.cuda.runtime.hostRegister(ptr, array.nbytes, _REGISTER_MAPPED)
    pinned.add(ptr)
    # Runs before the graph's arrays are freed; at exit the driver releases everything.
    weakref.finalize(graph, cp.cuda.runtime.hostUnregister, ptr).atexit = False


def _mapped(graph, array: np.ndarray) -> cp.ndarray:
    """A device array over a pinned host array of the graph (zero-copy: kernels read it
    over PCIe, a cache line at a time)."""
    _pin(graph, array)
    if array.nbytes == 0:
        return cp.empty(1, dtype=array.dtype)
    return _device_view(array)


def _device_view(array: np.ndarray) -> cp.ndarray:
    """A device array over pinned host memory that the device can address (registered as
    mapped, or allocated pinned: with unified addressing, every such allocation is)."""
    device_ptr = cp.cuda.runtime.pointerGetAttributes(array.ctypes.data).devicePointer
    memory = cp.cuda.UnownedMemory(device_ptr, array.nbytes, array)
    return cp.ndarray(array.shape, array.dtype, cp.cuda.MemoryPointer(memory, 0))


def _upload(array: np.ndarray, stream: cp.cuda.Stream) -> cp.ndarray:
    """A copy of a pinned host array on the device (at least one element, so that an
    empty graph still passes the kernels a valid pointer)."""
    device = cp.empty(max(1, len(array)), dtype=array.dtype)
    _memcpy(device.data.ptr, array.ctypes.data, array.nbytes,
            cp.cuda.runtime.memcpyHostToDevice, stream)
    return device


class DeviceGraph:
    """What every CUDA run of a graph uploads alike, kept with the graph between runs, as
    a cuGraph graph stays on its device: the CSC ``indptr`` (and a directed graph's CSR
    one, whose degrees are the out-degrees), the page starts, the hub chunks
    (:mod:`seraph.hubs`) and, while the whole graph fits the runs' budget, every page.
    Repeated queries then start at once; :meth:`seraph.Graph.release_device_memory` frees
    it."""

    def __init__(self, graph, stream: cp.cuda.Stream):
        with stream:
            # Pinned first: their uploads (8 bytes a vertex) are DMAs, not staged copies.
            self.indptr = self._upload_pinned(graph, graph.csc()[0], stream)
            self.out_indptr = self.indptr if graph.symmetric else \
                self._upload_pinned(graph, graph.out_indptr(), stream)
            self.page_first = cp.asarray(graph.page_first_vertex)
            self.page_last = cp.asarray(graph.page_last_vertex)
        self.hubs: HubChunks | None = None
        self.hub_chunks = self.page_chunks = None
        self.indices: cp.ndarray | None = None
        self.weights: cp.ndarray | None = None
        self.lightest: cp.ndarray | None = None

    @staticmethod
    def _upload_pinned(graph, array: np.ndarray, stream: cp.cuda.Stream) -> cp.ndarray:
        _pin(graph, array)
        return _upload(array, stream)

    @classmethod
    def of(cls, graph, stream: cp.cuda.Stream) -> DeviceGraph:
        return graph_cached(graph, "device", lambda: cls(graph, stream))

    @property
    def nbytes(self) -> int:
        arrays = (self.indptr, self.page_first, self.page_last, self.hub_chunks,
                  self.page_chunks, self.indices, self.weights, self.lightest)
        out = self.out_indptr.nbytes if self.out_indptr is not self.indptr else 0
        return out + sum(a.nbytes for a in arrays if a is not None)

    def hold_hubs(self, graph) -> HubChunks:
        """The graph's hub chunks on the device (uploaded again only when the thresholds
        of :mod:`seraph.hubs` changed since)."""
        hubs = graph_hub_chunks(graph)
        if hubs is not self.hubs:
            self.hubs = hubs
            self.hub_chunks = cp.asarray(hubs.chunks if len(hubs.chunks) else
                                         np.zeros((1, 3), np.int64))
            self.page_chunks = cp.asarray(hubs.page_chunks)
        return hubs

    def hold_lightest(self, codes: np.ndarray) -> cp.ndarray:
        """SSSP's lightest in-edge bytes (:mod:`seraph.lightest`) on the device."""
        if self.lightest is None:
            self.lightest = cp.asarray(codes)
        return self.lightest

    def hold_pages(self, graph, weights: bool, stream: cp.cuda.Stream) -> int:
        """Every page on the device (with its weights if asked); returns the bytes this
        call uploaded (0 when an earlier run left them here)."""
        _indptr, indices, host_weights = graph.csc()
        uploaded = 0
        for name, host in (("indices", indices), ("weights", host_weights if weights else None)):
            if host is not None and getattr(self, name) is None:
                _pin(graph, host)
                setattr(self, name, _upload(host, stream))
                uploaded += host.nbytes
        return uploaded

    def keep_only(self, layout: Layout) -> None:
        """Frees what ``layout``'s run would not read: the pages when they move by slot,
        the weights when it reads none, SSSP's lightest in-edge bytes when its rule does
        not use them. Its budget counts only what it reads."""
        if not layout.resident:
            self.drop_pages()
        if not layout.weights:
            self.weights = None
        if not layout.lightest:
            self.lightest = None

    def drop_pages(self) -> None:
        """Frees the resident pages: a run that pages needs the room for its slots."""
        self.indices = self.weights = None

    def release(self) -> None:
        self.indptr = self.out_indptr = self.page_first = self.page_last = None
        self.hub_chunks = self.page_chunks = self.lightest = None
        self.drop_pages()
        cp.get_default_memory_pool().free_all_blocks()


class CudaBackend(HostPush):
    name = "cuda"
    xp = cp
    #: Lanes that pull one light vertex (a power of two up to 32), and the in-page degree
    #: above which a vertex is heavy and gets a whole warp (see kernels/pull.cu).
    light_lanes = 8
    heavy_edges = 64

    # -- capabilities ---------------------------------------------------------------------
    @classmethod
    def create(cls, config, *args) -> CudaBackend:
        return cls(*args, push_on=config.push_on)

    @classmethod
    @contextlib.contextmanager
    def measuring_memory(cls) -> Iterator[PeakMemory]:
        """The peak of the bytes in use in cupy's memory pool, which every device
        allocation of a run goes through (the graph's arrays cached on the device and
        every temporary included), sampled at each allocation."""
        pool, memory = cp.get_default_memory_pool(), PeakMemory()

        def malloc(size: int) -> cp.cuda.MemoryPointer:
            pointer = pool.malloc(size)
            memory.peak = max(memory.peak, pool.used_bytes())
            return pointer

        memory.peak = pool.used_bytes()
        with cp.cuda.using_allocator(malloc):
            yield memory

    @classmethod
    def make_room(cls, graph, layout: Layout) -> None:
        held = graph.__dict__.get("_engine_cache", {}).get("device")
        if held is not None:
            held.keep_only(layout)

    @classmethod
    def default_budget(cls, graph) -> int:
        return default_budget(graph)

    @classmethod
    def weak_pays(cls, algorithm) -> bool:
        """For a recomputing sum (PageRank-delta): its sleeping vertices skip whole rows,
        and a paged round reads in place the pages they leave nearly idle instead of
        copying them. A relaxation's weak skips cost it more dense rounds than they save
        here (docs/benchmarks/predictors-gpu.md)."""
        return algorithm.recompute is not None

    def default_push_alpha(self) -> float:
        """:data:`~seraph.backends.activity.PUSH_ALPHA`, resident or not: the push loop
        (kernels/push.cu) reads the frontier's out-edges where they are, the device's own
        copy or the host's pinned CSR, and a high-diameter graph's thousands of small
        levels cost a dense round each without it. BFS levels push further when pages
        move (:data:`LEVEL_PUSH_ALPHA`)."""
        if self.algorithm.levels and not self.layout.resident:
            return LEVEL_PUSH_ALPHA
        return PUSH_ALPHA

    @property
    def push_capacity(self) -> int:
        return self._capacity

    def bottom_up_edge_limit(self, push_limit: float, num_edges: int) -> float:
        """A share of all edges (:data:`BOTTOM_UP_SHARE`): the round reads the unsettled
        vertices' in-edges from the host's pinned CSC in place, in aligned 128-byte tiles at
        about the PCIe copy rate (kernels/pull.cu, pull_tiles), where the dense round moves
        every active page; past that share a dense round's copies cost less.

        No limit for SSSP on rows listed lightest first (``Graph.rows_by_weight``) when
        pages move: its pulls stop at the first in-edge too heavy to help, so a round reads
        a fraction of the in-edges it counts, where a dense round copies every page. A
        resident graph's dense rounds copy nothing, and keep the share."""
        if self._pulls_stop_early and not self.layout.resident:
            return math.inf
        return BOTTOM_UP_SHARE * num_edges

    def __init__(self, graph, algorithm, layout, table, initial_state: int = 0,
                 push_on: str = "device"):
        super().__init__(graph, algorithm, layout, table, initial_state)
        self.push_on = push_on
        csc_indptr, indices, weights = graph.csc()
        n, pe = graph.num_vertices, graph.page_edges
        dtype, op = algorithm.dtype, algorithm.operator
        # SSSP's pulls stop at the first in-edge too heavy to help where rows are
        # listed lightest first.
        self._pulls_stop_early = algorithm.lightest_first and graph.rows_by_weight
        self._push_grid = self._persistent_grid = 0  # no push loop, no persistent sweep
        if algorithm.recompute is not None:  # a recomputing sum's sweeps (gather.cu)
            self._kernel = _kernel("recompute_window", op)
        elif algorithm.combine == MIN:  # the relaxing kernels (an iterating sum's: gather_sum)
            self._kernel = _kernel("pull_window", op)
            self._bottom_up_kernel = _kernel("pull_unsettled", op)
            self._push_loop = _kernel("push_loop", op, cooperative=True)
            self._push_grid = min(MAX_PUSH_BLOCKS,
                                  _co_resident_blocks(self._push_loop.function))
            self._persistent = _kernel("pull_persistent", op, cooperative=True)
            self._persistent_grid = _co_resident_blocks(self._persistent.function)
        # Near-far's bucket width where the operator's pushes go in bins (the CPU engine's
        # delta-stepping width); the others push in plain rounds.
        self._delta = dtype.type(
            graph_cached(graph, "push_delta", lambda: default_delta(csc_indptr, weights))
            if algorithm.operator.binned and weights is not None else algorithm.inf)
        self.copy_stream = cp.cuda.Stream(non_blocking=True)
        self.compute_stream = cp.cuda.Stream(non_blocking=True)
        weights = weights if layout.weights else None  # BFS and CC never read them
        self._host_indices, self._host_weights = indices, weights
        num_slots = graph.num_pages if layout.resident else layout.num_slots
        device_graph = DeviceGraph.of(graph, self.compute_stream)
        device_graph.keep_only(layout)
        self.indptr, self.page_first = device_graph.indptr, device_graph.page_first
        self._page_last = device_graph.page_last
        with self.compute_stream:
            self._hubs = device_graph.hold_hubs(graph)
        self._hub_chunks, self._page_chunks = device_graph.hub_chunks, device_graph.page_chunks
        self._out_indptr = device_graph.out_indptr
        self.upload_bytes = 0
        with self.compute_stream:
            if layout.resident:
                # The whole graph fits: every page is on the device (uploaded once per
                # graph) and no page moves.
                self.upload_bytes = device_graph.hold_pages(graph, weights is not None,
                                                            self.compute_stream)
                self.slot_indices = device_graph.indices
                self.slot_weights = device_graph.weights if weights is not None else \
                    cp.empty(1, dtype=cp.float32)
                # Resident pages sit at their own offsets: they are the whole CSC.
                self._csc_indices, self._csc_weights = self.slot_indices, self.slot_weights
            else:
                self.slot_indices = cp.empty(max(1, num_slots * pe), dtype=cp.int32)
                self.slot_weights = cp.empty(max(1, num_slots * pe) if weights is not None
                                             else 1, dtype=cp.float32)
                # Pinned, so pages copy at full speed, and mapped for the bottom-up rounds.
                self._csc_indices = _mapped(graph, indices)
                self._csc_weights = _mapped(graph, weights) if weights is not None else \
                    self.slot_weights
            self.values = cp.empty(n, dtype=algorithm.dtype)
            # A summing program's vectors (the layout counts them), and a recomputing one's
            # partial sums: two a page, one a hub chunk.
            self.vectors = {name: cp.zeros(n, dtype=dtype) for name, dtype in algorithm.vectors}
            self._page_sums = self._chunk_sums = None
            if algorithm.recompute is not None:
                self._page_sums, self._chunk_sums = (
                    cp.zeros(max(1, k), dtype=cp.float64)
                    for k in (2 * graph.num_pages, len(self._hubs.chunks)))
            # Whole words: push rounds claim a vertex by an atomicOr on its flag's word.
            self._changed_words = cp.zeros(max(1, -(-n // 4)), dtype=cp.uint32)
            self.changed = self._changed_words.view(cp.uint8)[:n]
            # The push phase's near lists (this round's and the next; kernels/push.cu),
            # their edge offsets and a word per block of the loop's scan.
            self._capacity = frontier_capacity(n)
            self._near = [cp.empty(self._capacity, dtype=cp.int32) for _ in range(2)]
            self._ends = cp.zeros(self._capacity + 1, dtype=cp.int64)
            self._block_sums = cp.zeros(max(1, self._push_grid), dtype=cp.int64)
            self.states = cp.full(n if table is not None else 1, self.initial_state, cp.uint8)
            # The weak predictor's state counts and owing pages' flags (a word a state, a
            # byte a page: the device's small scratch and its bytes a page), and a round's
            # pages with the counts of what their sweeps read (awake_in_pages).
            pages = max(1, graph.num_pages)
            self._weak_scratch = None if table is None else (
                cp.zeros(table.shape[1], dtype=cp.uint64), cp.zeros(pages, dtype=cp.uint8),
                cp.empty(pages, dtype=cp.int64), cp.empty(2 * pages, dtype=cp.uint64))
            self.block_epoch = cp.full(layout.num_blocks, -1, dtype=cp.int64)
            self._no_codes = cp.zeros(1, dtype=cp.uint8)
            self._light_codes = device_graph.hold_lightest(self.lightest.codes) \
                if self.lightest.unit > 0 else self._no_codes
            # select.cu's rule for the changed flags: a flag above 0.
            self._flag_set = {"threshold": 0, "light_codes": self._no_codes, "light_unit": 0}
            self._d_table = cp.asarray(table if table is not None else np.zeros((4, 1), np.uint8))
        # A window of slots, or a round's pages read in place (PAGE_BYTES counts a page's
        # window entries).
        self._launch_buffers(graph.num_pages)
        self._totals = cp.zeros(2, dtype=cp.uint64)  # a selection's vertices and edges
        self._totals_host = cupyx.empty_pinned(2, dtype=np.uint64)
        # The scheduler reads the block epochs before every window step: a pinned mirror,
        # refreshed by the launch's one readback and kept current by the host's own writes.
        self._epochs = cupyx.empty_pinned(layout.num_blocks, dtype=np.int64)
        self._epochs[:] = -1
        self._events: dict[int, tuple[cp.cuda.Event, cp.cuda.Event]] = {}
        # Load sequence numbers: the copy stream writes slot_seq[slot] into landed_seq[slot]
        # after the page's bytes (from pinned memory, so the write is an ordered DMA).
        self.landed_seq = cp.zeros(max(1, num_slots), dtype=cp.int64)
        self._slot_seq = cupyx.empty_pinned(max(1, num_slots), dtype=np.int64)
        self._slot_seq[:] = 0
        self._loads = 0
        self._host: np.ndarray | None = None
        self._out_edges: tuple[cp.ndarray, cp.ndarray] | None = None
        self._grid = 8 * cp.cuda.Device().attributes["MultiProcessorCount"]
        # The long kernels' line to the host (kernels/interface.py, "live"): the stop word
        # the host sets, and a push phase's rounds and frontier so far.
        self._live = cupyx.empty_pinned(4, dtype=np.int64)
        self._live[:] = 0
        self._live_device = _device_view(self._live)
        self._done = cp.cuda.Event(disable_timing=True)
        self._base_event = cp.cuda.Event()
        self._base_event.record(self.copy_stream)
        self._base_event.synchronize()
        self._base_time = time.perf_counter()

    # -- pages ----------------------------------------------------------------------------
    def load(self, slot: int, page: int) -> None:
        start, end = self.graph.page_range(page)
        pe = self.graph.page_edges
        began, done = cp.cuda.Event(), cp.cuda.Event()
        began.record(self.copy_stream)
        pairs = [(self.slot_indices, self._host_indices)]
        if self._host_weights is not None:
            pairs.append((self.slot_weights, self._host_weights))
        for device, host in pairs:
            item = host.itemsize
            self._copy(device.data.ptr + slot * pe * item, host.ctypes.data + start * item,
                       (end - start) * item)
        # The slot's previous load has landed (the scheduler waited on it before reusing the
        # slot), so its pinned sequence entry is free to change.
        self._loads += 1
        self._slot_seq[slot] = self._loads
        self._copy(self.landed_seq.data.ptr + slot * 8, self._slot_seq.ctypes.data + slot * 8,
                   8)
        done.record(self.copy_stream)
        self._events[slot] = (began, done)

    def _copy(self, device_ptr: int, host_ptr: int, nbytes: int) -> None:
        _memcpy(device_ptr, host_ptr, nbytes, cp.cuda.runtime.memcpyHostToDevice,
                self.copy_stream)

    def landed(self, slot: int) -> bool:
        events = self._events.get(slot)
        return events is None or events[1].done

    def wait(self, slot: int) -> tuple[float, float] | None:
        events = self._events.pop(slot, None)
        if events is None:
            return None
        began, done = events
        self.compute_stream.wait_event(done)
        done.synchronize()
        return (self._base_time + cp.cuda.get_elapsed_time(self._base_event, began) / 1e3,
                self._base_time + cp.cuda.get_elapsed_time(self._base_event, done) / 1e3)

    def sweep(self, slots, pages, predictor, threshold, epoch) -> SweepResult:
        if self.algorithm.recompute is not None:
            return self._recompute(slots, pages, predictor, epoch)
        return self._launch(slots, pages, predictor, threshold, epoch, None)

    def sweep_until(self, slots, pages, predictor, threshold, epoch, max_sweeps,
                    incoming=None, mandatory=1) -> SweepResult:
        if max_sweeps == 1 or not self._persistent_grid:
            return super().sweep_until(slots, pages, predictor, threshold, epoch, max_sweeps,
                                       incoming, mandatory)
        expected = self._slot_seq[incoming] if incoming is not None else 0
        return self._launch(slots, pages, predictor, threshold, epoch,
                            (max_sweeps, -1 if incoming is None else incoming, expected,
                             max(1, mandatory)))

    def _launch_buffers(self, num_pages: int) -> None:
        """One device buffer carries everything a launch sends and returns, so a launch is
        one upload, one kernel, one readback and one wait: int64 words [0, 8) are the
        status (counters, smallest value written, the persistent kernel's control words,
        and in word 7 the edges a recomputing sweep read), then the window's pages, their
        slot offsets and the prefix sums of their vertices and of their hub chunks."""
        w = max(1, num_pages)
        # Each array has room for a whole window and, for the prefix sums, their total.
        self._io = cp.zeros(_STATUS + _WINDOW_ARRAYS * (w + 1), dtype=cp.int64)
        self._io_host = cupyx.empty_pinned(self._io.shape, dtype=np.int64)
        self._status = cupyx.empty_pinned(_STATUS, dtype=np.int64)
        self._fresh_status = np.zeros(_STATUS, dtype=np.int64)
        self._fresh_status[4:5].view(self.algorithm.dtype)[0] = self.algorithm.inf
        io, dtype = self._io, self.algorithm.dtype
        self._counters = io[0:4].view(cp.uint64)
        self._minimum = io[4:5].view(dtype)
        self._control = io[5:7].view(cp.int32)  # passes begun, pages in the last, stop
        # A recomputing sweep's sum of |change| written, in a word its launch has no
        # control in.
        self._moved = io[5:6].view(cp.float64)
        self._edges_read = io[7:8].view(cp.uint64)
        self._window = tuple(_STATUS + i * (w + 1) for i in range(_WINDOW_ARRAYS))
        self._window_views = tuple(io[a:a + w + 1] for a in self._window)
        # The push loop's (kernels/push.cu): counters [0, 4), result [4, 12), the smallest
        # values [12, 14) (four of the value type), fresh from a pinned template.
        self._loop_io = cp.zeros(14, dtype=cp.int64)
        self._loop_host = cupyx.empty_pinned(14, dtype=np.int64)
        self._fresh_loop = cupyx.empty_pinned(14, dtype=np.int64)
        self._fresh_loop[:] = 0
        self._fresh_loop[12:14].view(dtype)[:] = self.algorithm.inf

    def _launch(self, slots, pages, predictor, threshold, epoch, persistent) -> SweepResult:
        """One sweep, or with ``persistent = (max_sweeps, incoming slot or -1, expected
        sequence number, mandatory pages)`` the persistent kernel's repeated sweeps."""
        alg = self.algorithm
        k = len(pages)
        window, warps = self._upload_window(slots, pages)
        stream = self.compute_stream
        sweep = dict(
            **window, **self._pulled_edges(*self._page_edges(slots)),
            predictor=predictor,
            **self._strong_rule(threshold), table=self._d_table,
            num_states=self._d_table.shape[1], states=self.states, **self._marks(epoch),
            light_lanes=self.light_lanes, heavy_edges=self.heavy_edges)
        with stream:
            if persistent is None:
                self._kernel(self._blocks(warps * 32), **sweep)
            else:
                max_sweeps, incoming, expected, mandatory = persistent
                blocks = self._blocks(warps * 32, self._persistent_grid)
                self._persistent(blocks, **sweep, max_sweeps=max_sweeps,
                                 landed_seq=self.landed_seq, incoming_slot=incoming,
                                 expected_seq=expected, mandatory=mandatory,
                                 control=self._control, live=self._live_device)
        status = self._read_status()
        counters = status[0:4].view(np.uint64)
        minimum = status[4:5].view(alg.dtype)[0]
        if persistent is None:
            sweeps, last_pages = 1, k
        else:
            sweeps, last_pages = (int(c) for c in status[5:6].view(np.int32))
        return SweepResult(*(int(c) for c in counters), minimum, sweeps, last_pages)

    def _page_edges(self, slots) -> tuple[cp.ndarray, cp.ndarray]:
        """The indices and weights a sweep of pages in ``slots`` reads: the slots', or with
        ``slots`` None the host's pinned CSC, in place."""
        if slots is None:
            return self._csc_indices, self._csc_weights
        return self.slot_indices, self.slot_weights

    def _upload_window(self, slots, pages) -> tuple[dict, int]:
        """Uploads a fresh status block and the window (its pages, their slot offsets and
        the prefix sums of their vertices and hub chunks) in one copy; returns the
        window's kernel arguments, the graph's paging and hub chunks with them, and its
        vertex count."""
        g = self.graph
        k = len(pages)
        pages = np.asarray(pages, dtype=np.int64)
        first = g.page_first_vertex[pages]
        vertices = g.page_last_vertex[pages] + 1 - first
        chunks = self._hubs.page_chunks[pages + 1] - self._hubs.page_chunks[pages]
        host = self._io_host
        at_pages, at_offsets, at_vertices, at_chunks = self._window
        host[:_STATUS] = self._fresh_status
        host[at_pages:at_pages + k] = pages
        host[at_offsets:at_offsets + k] = self.slot_offsets(slots, pages)
        for at, counts in ((at_vertices, vertices), (at_chunks, chunks)):
            host[at] = 0
            np.cumsum(counts, out=host[at + 1:at + k + 1])
        _memcpy(self._io.data.ptr, host.ctypes.data, (at_chunks + k + 1) * 8,
                cp.cuda.runtime.memcpyHostToDevice, self.compute_stream)
        d_pages, d_offsets, d_vertices, d_chunks = self._window_views
        window = dict(
            pages=d_pages, offsets=d_offsets, vertex_prefix=d_vertices, chunk_prefix=d_chunks,
            num_window_pages=k, page_first=self.page_first, page_edges=g.page_edges,
            num_edges=g.num_edges, indptr=self.indptr, page_chunks=self._page_chunks,
            hub_chunks=self._hub_chunks, hub_edges=self._hubs.hub_edges)
        return window, int(host[at_vertices + k])

    def _recompute(self, slots, pages, predictor, epoch) -> SweepResult:
        """A recomputing program's sweep (gather.cu, recompute_window): one launch a window,
        its counts and the edges read in the status block's words (see _launch_buffers)."""
        rule, n = self.algorithm.recompute, len(pages)
        window, items = self._upload_window(slots, pages)
        with self.compute_stream:
            self._kernel(
                self._blocks(items * self.light_lanes), **window,
                indices=self._page_edges(slots)[0], operand=self.vectors[OPERAND],
                values=self.values, scale=self.vectors[SCALE], page_sums=self._page_sums,
                chunk_sums=self._chunk_sums, factor=rule.factor,
                eps=self.write_share, predictor=predictor, table=self._d_table,
                num_states=self._d_table.shape[1], states=self.states,
                block_epoch=self.block_epoch, block_shift=self.layout.block_shift, epoch=epoch,
                counters=self._counters, edges_read=self._edges_read, moved=self._moved,
                light_lanes=self.light_lanes, heavy_edges=self.heavy_edges)
        status = self._read_status()
        counters = status[0:4].view(np.uint64)
        return SweepResult(*(int(c) for c in counters), self.algorithm.inf, 1, n,
                           edges_read=int(status[7:8].view(np.uint64)[0]),
                           moved=float(status[5:6].view(np.float64)[0]))

    def split_sums_from_values(self) -> None:
        g, chunks = self.graph, len(self._hubs.chunks)
        with self.compute_stream:
            _kernel("split_sums_from_values", self.algorithm.operator)(
                self._blocks(max(g.num_pages, chunks)), indptr=self.indptr,
                page_last=self._page_last, num_pages=g.num_pages, page_edges=g.page_edges,
                num_edges=g.num_edges, hub_chunks=self._hub_chunks, num_chunks=chunks,
                values=self.values, page_sums=self._page_sums, chunk_sums=self._chunk_sums)

    def scale_sums(self, factor: float) -> None:
        with self.compute_stream:
            for sums in (self.values, self._page_sums, self._chunk_sums):
                sums *= factor

    def gather_sum(self, slots, pages, operand, into) -> None:
        """kernels/gather.cu over the window; waits for it, so that its slots may take
        other pages (the copy stream does not wait on the compute stream)."""
        window, items = self._upload_window(slots, pages)
        with self.compute_stream:
            _kernel("gather_sum", operand.dtype)(self._blocks(items * self.light_lanes), **window,
                                  indices=self.slot_indices, operand=operand, into=into,
                                  light_lanes=self.light_lanes, heavy_edges=self.heavy_edges)
        self._finish(self.compute_stream)

    def walk_step(self, damping: float, restart: float, vertex: int | None) -> float:
        """The sums' total, then kernels/gather.cu's step in one pass over the vertices, its
        change a block added up here."""
        n, sums, operand = len(self.values), self.vector(ACCUMULATOR), self.vector(OPERAND)
        jump = restart + damping * (1.0 - self._walk_totals_of(sums)[0])
        blocks = self._blocks(n, WALK_BLOCKS)
        with self.compute_stream:
            partial = cp.empty(blocks, dtype=cp.float64)
            _kernel("walk_step", operand.dtype)(
                blocks, values=self.values, sums=sums, scale=self.vector(SCALE),
                operand=operand, damping=damping, jump=jump,
                vertex=-1 if vertex is None else vertex, n=n, partial=partial)
            return float(partial.get(stream=self.compute_stream).sum())

    def walk_totals(self) -> tuple[float, float]:
        return self._walk_totals_of(self.values)

    def _walk_totals_of(self, x: cp.ndarray) -> tuple[float, float]:
        """``x``'s total and its total where ``scale`` is 0: kernels/gather.cu's pairs a
        block, added up here (a cupy ReductionKernel reduces a whole vector to one value in
        a single block)."""
        blocks = self._blocks(len(x), WALK_BLOCKS)
        with self.compute_stream:
            partial = cp.empty(2 * blocks, dtype=cp.float64)
            _kernel("walk_totals", self.algorithm.operator)(
                blocks, values=x, scale=self.vector(SCALE), n=len(x), partial=partial)
            pairs = partial.get(stream=self.compute_stream).reshape(blocks, 2)
        total, dangling = pairs.sum(axis=0)
        return float(total), float(dangling)

    def set_walk_scale(self) -> None:
        """From the CSR's indptr on the device (or the whole graph's degrees a partitioned
        run's worker gave it): no host pass over the vertices, no upload."""
        with self.compute_stream:
            if self.walk_degrees is None:
                _reciprocal_degrees(self._out_indptr, self.vector(SCALE))
            else:
                _reciprocal(self.walk_degrees, self.vector(SCALE))

    def fill_where_in_edges(self, name: str, value: float) -> None:
        """From the CSC's indptr on the device: no host pass over the vertices, no upload."""
        x = self.vector(name)
        with self.compute_stream:
            _fill_where_in_edges(self.indptr, x.dtype.type(value), x)

    def vector_steps(self) -> cp.cuda.Stream:
        return self.compute_stream

    def set_vector(self, name: str, host: np.ndarray) -> None:
        self.vector(name).set(np.ascontiguousarray(host, dtype=self.vector(name).dtype),
                              stream=self.compute_stream)

    def _read_status(self) -> np.ndarray:
        """After a launch: its status block and the block epochs, in one wait."""
        return self._read_back(self._io[:_STATUS], self._status)

    def _read_back(self, status: cp.ndarray, host: np.ndarray, pushing: bool = False
                   ) -> np.ndarray:
        """After a launch: ``status`` into the pinned ``host`` and the block epochs into
        their mirror, in one wait (``pushing``: a push phase's, whose progress shows
        meanwhile)."""
        stream = self.compute_stream
        _memcpy(host.ctypes.data, status.data.ptr, host.nbytes,
                cp.cuda.runtime.memcpyDeviceToHost, stream)
        _memcpy(self._epochs.ctypes.data, self.block_epoch.data.ptr, self._epochs.nbytes,
                cp.cuda.runtime.memcpyDeviceToHost, stream)
        self._finish(stream, pushing)
        return host

    def _finish(self, stream: cp.cuda.Stream, pushing: bool = False) -> None:
        """Waits for the work queued on ``stream`` by asking whether it is done, not in a
        blocking synchronize, which would hold a signal's handler until a long kernel
        ended (seraph.interrupts): on an interrupt the running kernel is told to stop
        (push_loop and pull_persistent look between rounds and pages) and is waited for,
        so that its buffers are free to go. With ``pushing``, the push loop's rounds so far
        go to :data:`seraph.progress.LIVE` meanwhile."""
        self._done.record(stream)
        spin_until = time.perf_counter() + SPIN_S
        try:
            while not self._done.done:
                if pushing:
                    progress.LIVE[:2] = self._live[1:3]
                if interrupts.stopping():  # a handler of the caller's, that did not raise
                    self._live[0] = 1
                if time.perf_counter() > spin_until:
                    time.sleep(POLL_S)
        except BaseException:
            self._live[0] = 1
            stream.synchronize()
            raise

    def _blocks(self, threads: int, most: int | None = None) -> int:
        """Blocks of ``_THREADS`` for ``threads`` threads (a grid-stride loop takes the
        rest), at most ``most`` (default ``_grid``)."""
        return max(1, min(self._grid if most is None else most, -(-threads // _THREADS)))

    def _strong_rule(self, threshold) -> dict:
        """The kernels' strong rule (a ``StrongRule``, values.cuh): the threshold and
        :meth:`strong_bound`'s bytes."""
        # With unit 0 (no bound yet) the kernels never read the codes.
        unit = self.strong_bound(threshold).unit
        return {"threshold": threshold, "light_codes": self._light_codes, "light_unit": unit}

    def _edges(self, indices: cp.ndarray, weights: cp.ndarray) -> dict:
        """The edges a pull or push relaxes, and the values it lowers (by the operator's
        offer, which the kernel's instantiation fixes)."""
        return {"indices": indices, "weights": weights, "values": self.values,
                "inf": self.algorithm.inf}

    def _pulled_edges(self, indices: cp.ndarray, weights: cp.ndarray) -> dict:
        """The edges a pull relaxes: :meth:`_edges`, and whether its rows are lightest
        first, so that SSSP's pulls stop at the first in-edge too heavy to help, and whether
        BFS's bottom-up pulls may stop at the threshold."""
        return {**self._edges(indices, weights), "by_weight": int(self._pulls_stop_early),
                "levels": int(self.algorithm.levels)}

    def _marks(self, epoch: int) -> dict:
        """Where a pull marks its successes, and counts them and their smallest value."""
        return {"changed": self.changed, "block_epoch": self.block_epoch,
                "block_shift": self.layout.block_shift, "epoch": epoch,
                "counters": self._counters, "min_written": self._minimum}

    def _count_selected(self, value: cp.ndarray, rule: dict, indptr: cp.ndarray
                        ) -> tuple[int, int]:
        """The vertices that ``rule`` does not prove (select.cu: the strong rule's
        :meth:`_strong_rule` over the values, or ``_flag_set`` over the changed flags) and
        their edges by ``indptr``: two numbers cross, not a vertex array."""
        n = self.graph.num_vertices
        stream = self.compute_stream
        with stream:
            self._totals.fill(0)
            _kernel("count_selected", value.dtype)(
                self._blocks(n), value=value, **rule, indptr=indptr, n=n, totals=self._totals)
        _memcpy(self._totals_host.ctypes.data, self._totals.data.ptr, 16,
                cp.cuda.runtime.memcpyDeviceToHost, stream)
        stream.synchronize()
        return int(self._totals_host[0]), int(self._totals_host[1])

    def _list_selected(self, value: cp.ndarray, rule: dict, out: cp.ndarray) -> None:
        """Lists the vertices :meth:`_count_selected` counts into ``out`` (which has room
        for them all), in no particular order."""
        n = self.graph.num_vertices
        with self.compute_stream:
            self._totals.fill(0)
            _kernel("list_selected", value.dtype)(
                self._blocks(n), value=value, **rule, n=n, out=out, claimed=self._totals)

    def bottom_up(self, threshold, edge_limit: float, epoch: int) -> BottomUpResult | None:
        alg, n = self.algorithm, self.graph.num_vertices
        strong = self._strong_rule(threshold)
        _vertices, edges = self._count_selected(self.values, strong, self.indptr)
        if edges >= edge_limit:
            return None
        with self.compute_stream:
            self._io[:_STATUS].set(self._fresh_status, stream=self.compute_stream)
            # A warp a tile of 32 vertices (pull_tiles in kernels/pull.cu).
            self._bottom_up_kernel(
                self._blocks(n), indptr=self.indptr, num_vertices=n,
                hub_chunks=self._hub_chunks, num_chunks=len(self._hubs.chunks),
                hub_edges=self._hubs.hub_edges,
                **self._pulled_edges(self._csc_indices, self._csc_weights), **strong,
                **self._marks(epoch))
        status = self._read_status()
        attempted, succeeded = (int(c) for c in status[0:2].view(np.uint64))
        return BottomUpResult(attempted, succeeded, status[4:5].view(alg.dtype)[0], edges)

    # -- vertex state ---------------------------------------------------------------------
    def set_values(self, values: np.ndarray) -> None:
        self.values.set(np.ascontiguousarray(values, dtype=self.algorithm.dtype),
                        stream=self.compute_stream)

    def init_values(self, source: int | None) -> None:
        # Built on the device: uploading n values from pageable memory takes longer.
        alg = self.algorithm
        with self.compute_stream:
            if alg.needs_source:
                self.values.fill(alg.inf)
                self.values[source] = 0
            else:
                _iota(self.values)  # in place: cp.arange would hold a second copy

    @property
    def _pinned_pool(self) -> str:
        """The graph's pool of pinned value buffers of this run's value size."""
        return f"pinned values, {self.algorithm.dtype.itemsize} bytes"

    def host_values(self) -> np.ndarray:
        # Pinned, so the values cross at full PCIe speed; allocating pinned memory takes
        # longer than the copy, so the buffer is kept with the graph for its next run.
        if self._host is None:
            self._host = take_pooled(self.graph, self._pinned_pool, lambda: cupyx.empty_pinned(
                self.graph.num_vertices, dtype=self.algorithm.dtype))
        host = self._host.view(self.algorithm.dtype)
        self.values.get(stream=self.compute_stream, out=host)
        return host

    def result(self, output: Output) -> np.ndarray:
        # The caller gets a fresh pageable array (pinned memory is too scarce to hand out),
        # converted from the pinned buffer by every host thread: a copy straight into
        # pageable memory is bound by one thread's page faults.
        staged = self.host_values()
        self.compute_stream.synchronize()
        return output_values(staged, self.algorithm.inf, output, fresh=True)

    def apply_host_changes(self, changed: np.ndarray, epoch: int) -> None:
        """Only the push engine's changes cross back over PCIe, in pieces through the push
        lists' room: the budget counts it, and a push on the host leaves it idle. Uploaded
        whole, the changes' ids and values would take memory the budget does not count."""
        values = self._host.view(self.algorithm.dtype)
        stream = self.compute_stream
        for ids, part in self._uploaded(changed):
            new = self._near[0][:len(part)].view(self.values.dtype)
            new.set(values[part], stream=stream)
            with stream:
                _scatter(ids, new, self.values)
                if self.table is not None:
                    _reset_states(ids, self.initial_state, self.states)
        self.mark_blocks(changed, epoch)

    def _uploaded(self, host_ids: np.ndarray) -> Iterator[tuple[cp.ndarray, np.ndarray]]:
        """``host_ids`` (int64) on the device in pieces, through the push lists' room (see
        :meth:`apply_host_changes`): each piece's device copy and the piece. A piece's room
        is reused for the next once the work queued on it is done (one stream)."""
        for lo in range(0, len(host_ids), self._capacity):
            part = host_ids[lo:lo + self._capacity]
            ids = self._ends[:len(part)]
            ids.set(part, stream=self.compute_stream)
            yield ids, part

    def union_find(self, merge=None) -> None:
        """Union-find on the device (kernels/union_find.cu), CC's values being the parents:
        link each vertex with its first neighbours (those of one read), find the largest
        component from a sample, link the other vertices' rows. The edges are read where they
        are: the device's pages when resident, else the host's pinned CSC in place over
        PCIe, each about once and no page copied."""
        n = self.graph.num_vertices
        if n == 0:
            return
        blocks, parent = self._blocks(n), self.values
        rows = {"indptr": self.indptr, "indices": self._csc_indices, "parent": parent, "n": n}
        with self.compute_stream:
            _kernel("link_sampled")(blocks, **rows)
            _kernel("compress")(blocks, parent=parent, n=n)
            if merge is not None:
                merge(parent)
            # After a compression each vertex holds its root. The sample and its roots sit
            # in the push lists' room, which the budget counts.
            picks = self._ends[:min(GIANT_SAMPLES, self._capacity)]
            picks.set(giant_sample(n, len(picks)), stream=self.compute_stream)
            roots = self._near[0][:len(picks)]
            cp.take(parent, picks, out=roots)
            giant = most_common(roots.get(stream=self.compute_stream))
            _kernel("link_rest")(blocks, **rows, skip_root=giant)
            _kernel("compress")(blocks, parent=parent, n=n)
            if merge is not None:
                merge(parent)
        self._finish(self.compute_stream)

    def link_parents(self, parent, other) -> None:
        n, blocks = len(parent), self._blocks(len(parent))
        with self.compute_stream:
            _kernel("link_parents")(blocks, parent=parent, other=other, n=n)
            _kernel("compress")(blocks, parent=parent, n=n)

    def label_unreached(self) -> np.ndarray | None:
        """On the device (kernels/reach.cu): only the list of vertices whose labels must
        still spread crosses PCIe, or nothing when it outgrows the push lists (None: every
        vertex, which plain CC also converges from)."""
        alg, n = self.algorithm, self.graph.num_vertices
        inf = alg.dtype.type(alg.inf)
        with self.compute_stream:
            # Into a word the budget counts (cp.argmax would take scratch of its own); the
            # changed flags are cleared (a dense round's may be left when no push followed).
            smallest = self._totals[:1]
            smallest.fill(n)
            _first_reached(self.values, inf, smallest)
            self.changed.fill(0)
            _kernel("label_from_reach")(
                self._blocks(n), value=self.values, inf=inf, smallest=smallest.view(cp.int64),
                out_indptr=self._out_indptr, n=n, spreads=self.changed)
        spreading = self.take_changed(np.inf)
        if spreading is None:
            return None
        return np.sort(spreading.get(stream=self.compute_stream)).astype(np.int64)

    def mark_blocks(self, vertices: np.ndarray, epoch: int) -> None:
        blocks = blocks_of(vertices, self.layout.block_shift, self.layout.num_blocks)
        self._epochs[blocks] = epoch  # the host mirror, as the launches refresh it
        for ids, _part in self._uploaded(blocks):
            with self.compute_stream:
                _scatter(ids, np.int64(epoch), self.block_epoch)

    def block_epochs(self) -> np.ndarray:
        return self._epochs

    def take_changed(self, edge_limit: float) -> cp.ndarray | None:
        # Counted on the device, and listed there for the push rounds: a dense round's
        # flags (one byte a vertex) never cross.
        count, edges = self._count_selected(self.changed, self._flag_set, self._out_indptr)
        vertices = None
        if edges < edge_limit and count <= self._capacity:
            vertices = self._near[0][:count]  # where the push loop's frontier starts
            self._list_selected(self.changed, self._flag_set, vertices)
        with self.compute_stream:
            self.changed.fill(0)
        return vertices

    # -- push rounds ----------------------------------------------------------------------
    def push(self, frontier, edge_limit: float, epoch: int) -> PushOutcome:
        """A sparse phase's push rounds in one cooperative launch (kernels/push.cu), near-far
        for SSSP; or, with ``push_on="host"``, a device without cooperative launches or a
        starting frontier larger than the device's lists, the CPU push engine's."""
        on_device = isinstance(frontier, cp.ndarray)
        if self.push_on == "host" or not self._push_grid or \
                (not on_device and len(frontier) > self._capacity):
            vertices = frontier.get(stream=self.compute_stream) if on_device else \
                np.asarray(frontier)
            return super().push(np.sort(vertices).astype(np.int64), edge_limit, epoch)
        start, count, stream = self._near[0], len(frontier), self.compute_stream
        if not on_device:
            start[:count].set(np.asarray(frontier, dtype=np.int32), stream=stream)
        elif frontier.data.ptr != start.data.ptr:  # take_changed lists into _near[0]
            with stream:
                start[:count] = frontier
        alg, io = self.algorithm, self._loop_io
        _memcpy(io.data.ptr, self._fresh_loop.ctypes.data, self._fresh_loop.nbytes,
                cp.cuda.runtime.memcpyHostToDevice, stream)
        self._live[1:] = 0  # no rounds yet (the last phase's may be there)
        with stream:
            self._push_loop(
                self._push_grid, near_a=self._near[0], near_b=self._near[1], count=count,
                capacity=self._capacity, n=self.graph.num_vertices,
                ends=self._ends, block_sums=self._block_sums, out_indptr=self._out_indptr,
                **self._edges(*self._out_edges_on_device()),
                delta=self._delta if self.push_in_bins else alg.dtype.type(alg.inf),
                edge_limit=min(edge_limit, 1 << 62), claimed=self._changed_words,
                states=self.states if self.table is not None else None,
                initial_state=self.initial_state, block_epoch=self.block_epoch,
                block_shift=self.layout.block_shift, epoch=epoch,
                counters=io[0:4].view(cp.uint64), mins=io[12:14].view(alg.dtype),
                result=io[4:12], max_degree=graph_max_out_degree(self.graph),
                live=self._live_device)
            self.changed.fill(0)
        host = self._read_back(io, self._loop_host, pushing=True)
        if host[9] or host[10]:  # the host's stop word ended the phase: no answer follows
            interrupts.check()
            raise RuntimeError("the push loop stopped on the host's stop word, yet no "
                               "signal came")
        rounds, edges, near, nq, overflow = (int(x) for x in host[4:9])
        lowered = int(host[2])
        mins = host[12:14].view(alg.dtype)
        # Unlisted waiting vertices were written in the phase: its smallest write bounds them.
        minimum = min(mins[1], mins[2]) if overflow else mins[1]
        # The phase ends with near vertices waiting, or with none waiting at all.
        waiting = self._near[nq][:min(near, self._capacity)]
        return PushOutcome(waiting, rounds, edges, lowered, minimum)

    def _out_edges_on_device(self) -> tuple[cp.ndarray, cp.ndarray]:
        """The CSR's indices and weights as the push kernel reads them: a symmetric graph's
        are its CSC's (on the device when resident, else mapped), a directed graph's its
        pinned, mapped CSR (pinned by the first run that pushes)."""
        if self._out_edges is None:
            if self.graph.symmetric:
                self._out_edges = (self._csc_indices, self._csc_weights)
            else:
                _indptr, indices, weights = self.graph.csr()
                self._out_edges = (_mapped(self.graph, indices),
                                   _mapped(self.graph, weights) if self._host_weights
                                   is not None else self.slot_weights)
        return self._out_edges

    def take_owing_pages(self) -> np.ndarray:
        # On the device, where the states are: a flag a page, and only the page numbers
        # cross.
        flags = self._weak_scratch[1]
        with self.compute_stream:
            flags.fill(0)
            _flag_owing_pages(self.indptr, np.int64(self.graph.page_edges),
                              np.uint8(self.initial_state), self.states, flags)
            return cp.flatnonzero(flags).get(stream=self.compute_stream)

    def awake_in_pages(self, pages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g, k = self.graph, len(pages)
        if not k:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        listed, counts = self._weak_scratch[2][:k], self._weak_scratch[3][:2 * k]
        most = int((g.page_last_vertex[pages] + 1 - g.page_first_vertex[pages]).max())
        shares = max(1, min(AWAKE_SHARES, -(-most // _THREADS)))
        with self.compute_stream:
            listed.set(np.asarray(pages, dtype=np.int64), stream=self.compute_stream)
            counts.fill(0)
            _kernel("count_awake")(
                k * shares, pages=listed, shares=shares, page_first=self.page_first,
                page_last=self._page_last, page_edges=g.page_edges, num_edges=g.num_edges,
                indptr=self.indptr, states=self.states, attempt=self._d_table[ATTEMPT],
                hub_edges=self._hubs.hub_edges, counts=counts)
            pairs = counts.get(stream=self.compute_stream).reshape(k, 2).astype(np.int64)
        return pairs[:, 0], pairs[:, 1]

    def state_counts(self) -> list[int]:
        counts = self._weak_scratch[0]
        with self.compute_stream:
            counts.fill(0)
            _kernel("count_states")(self._blocks(len(self.states)), states=self.states,
                                    n=len(self.states), num_states=len(counts),
                                    counts=counts)
            return counts.get(stream=self.compute_stream).tolist()

    def close(self) -> None:
        super().close()
        if self._host is not None:
            hand_back(self.graph, self._pinned_pool, self._host)
            self._host = None
        self.copy_stream.synchronize()
        self.compute_stream.synchronize()
        # The device arrays go back to the pool now, also where something outlives the
        # call with this backend (a failed call's traceback), or the next run would find
        # less room than its budget says.
        self.vectors = {}
        for name, value in list(vars(self).items()):
            if isinstance(value, cp.ndarray) or isinstance(value, list | tuple) and \
                    any(isinstance(v, cp.ndarray) for v in value):
                setattr(self, name, None)
