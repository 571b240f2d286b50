"""Seraph on a GPU: out of GPU memory at a quarter of the pages, and fully resident
(docs/benchmarks/engine-gpu.md).

    python scripts/bench_gpu.py [--scale 26] [--json-out FILE] [--md-out FILE] [--skip ...]

One command, on a GPU host, in this order (each phase prints its elapsed time to stderr):

1. **bandwidth**: pinned host-to-device copies of 1 GiB timed with CUDA events (the
   physical floor of an out-of-memory run), plus pageable and device-to-device copies.
2. **check**: a weighted, symmetrized RMAT at ``--check-scale``; BFS, CC and SSSP on the
   device (paged at ``--budget-fraction`` under ``pipelined`` and ``single``, and
   resident) compared element for element with the CPU backend. A mismatch exits 1.
3. **resident**: RMAT at ``--resident-scale`` fully in GPU memory: GTEPS.
4. **big**: RMAT at ``--scale`` (default 26, edge factor 16: 1.07 B generated edges)
   generated straight into a store and preprocessed (timed together), then BFS, CC and
   SSSP with ``device_memory`` = vertex state + ``--budget-fraction`` of the page bytes
   under ``pipelined`` and ``single`` (and fully resident, as a reference).

Every graph has GAP weights (integers 1..255) and is symmetrized, so CC runs on the same
store. The source is the vertex of highest out-degree. Each run records a trace; the copy
engine's busy fraction is the union of the copy intervals over the dense-phase time (the
run's traced span less the union of the sparse rounds: push and bottom-up).
Pass-equivalents are the wall time over one pass of the bytes the algorithm's pages move
(``Layout.plan``'s slot bytes: indices only, or indices and weights) at the measured pinned
bandwidth. Each run gets at most
``--time-limit`` seconds and the whole script ``--total-limit`` (later runs are skipped and
the report is still written). Stores go to a temporary directory (under ``build/`` of the
checkout unless ``--workdir``) and are deleted, also on SIGTERM or Ctrl-C.

A CPU smoke test of the script itself (no GPU needed):

    python scripts/bench_gpu.py --device cpu --scale 14 --resident-scale 12 --check-scale 12
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import benchlib
import numpy as np

ALGORITHMS = ("bfs", "cc", "sssp")
PHASES = ("bandwidth", "check", "resident", "big", "pipelined", "single", "big-resident")
REPO = Path(__file__).resolve().parent.parent
GB = 1e9

#: Targets of the issue (out of memory: pass-equivalents at most; resident: GTEPS at least).
PASS_EQ_TARGET = {"bfs": 1.5, "cc": 2.0, "sssp": 3.0}
SPEEDUP_TARGET = 2.0  # pipelined at least this many times faster than single
COPY_BUSY_TARGET = 0.85  # of the dense-phase wall time
GTEPS_TARGET = {"bfs": 10.0, "cc": 5.0, "sssp": 2.0}
GTEPS_TARGET_SCALE = 24
PREPROCESS_TARGET_S = 240.0
PREPROCESS_TARGET_SCALE, PREPROCESS_TARGET_CORES = 26, 16
#: A configuration is run again (``--repeat``) only while its runs so far took less.
REPEAT_SECONDS = 3.0

_T0 = time.perf_counter()


def log(message: str) -> None:
    """A progress line on stderr with the elapsed time (the lead sees only the tail)."""
    print(f"[bench_gpu {time.perf_counter() - _T0:7.1f}s] {message}", file=sys.stderr,
          flush=True)


# --------------------------------------------------------------------------- time guards
class TimeLimit(Exception):
    """A run or phase went past its time limit."""


class Alarm:
    """Whether a :func:`time_limit` went off (an alarm that lands inside a numba call
    surfaces as that call's SystemError, not as TimeLimit)."""

    fired = False


@contextlib.contextmanager
def time_limit(seconds: float | None, what: str) -> Iterator[Alarm]:
    """Raises TimeLimit in the main thread after ``seconds`` (SIGALRM; None or <= 0: none).

    The engine's loop is Python, so the alarm lands between kernel calls; the API's
    ``finally`` blocks release the device buffers and the pinned pages."""
    alarm = Alarm()
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield alarm
        return

    def expired(signum, frame):
        alarm.fired = True
        raise TimeLimit(f"{what} passed its limit of {seconds:.3g} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield alarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class Terminated(SystemExit):
    """SIGTERM or SIGINT: stop everything (the finally blocks still delete the stores)."""


_stopping: list[int] = []  # the signal that asked the script to stop, once one has


def stop(signum, frame) -> None:
    _stopping.append(signum)
    raise Terminated(128 + signum)


def check_stop() -> None:
    """Re-raises a stop that surfaced as another exception (e.g. inside a numba call)."""
    if _stopping:
        raise Terminated(128 + _stopping[0])


class Clock:
    """The whole script's time budget (``--total-limit``)."""

    def __init__(self, total: float | None):
        self.total = total if total and total > 0 else None

    def left(self) -> float | None:
        if self.total is None:
            return None
        return self.total - (time.perf_counter() - _T0)

    def limit(self, per_call: float | None) -> float | None:
        """The limit of the next call: its own, cut to what is left of the total."""
        left = self.left()
        if left is None:
            return per_call if per_call and per_call > 0 else None
        return max(0.001, min(left, per_call) if per_call and per_call > 0 else left)

    def exhausted(self, reserve: float = 5.0) -> bool:
        left = self.left()
        return left is not None and left < reserve


# --------------------------------------------------------------------------- intervals
def union_length(intervals: Iterator[tuple[float, float]]) -> float:
    """Total length covered by a set of [start, end] intervals (overlaps counted once)."""
    total, lo, hi = 0.0, None, None
    for start, end in sorted(intervals):
        if hi is None or start > hi:
            if hi is not None:
                total += hi - lo
            lo, hi = start, end
        else:
            hi = max(hi, end)
    return total + (hi - lo if hi is not None else 0.0)


def trace_figures(events: list[dict]) -> dict:
    """Span, sparse-round time, copy time and the copy engine's busy fraction of a run's trace.

    The trace's clock starts when the engine's loop starts (after the backend is built:
    pinning, allocation and, when resident, the upload), so the span is the run without
    its setup."""
    from seraph.stats import SPARSE_KINDS

    if not events:
        return {"span": None, "sparse_union": 0.0, "copy_union": 0.0, "dense_time": None,
                "copy_busy": None, "copies": 0}
    span = max(e["end"] for e in events)
    sparse = union_length((e["start"], e["end"]) for e in events if e["kind"] in SPARSE_KINDS)
    copies = [(e["start"], e["end"]) for e in events if e["kind"] == "copy"]
    copy = union_length(copies)
    dense = span - sparse
    return {"span": span, "sparse_union": sparse, "copy_union": copy, "dense_time": dense,
            "copy_busy": copy / dense if copies and dense > 0 else None,
            "copies": len(copies)}


# --------------------------------------------------------------------------- device
def require_device(device: str) -> None:
    if device != "cuda":
        return
    from seraph.api import cuda_status

    ok, why = cuda_status()
    if not ok:
        print(f"bench_gpu: --device cuda but no usable GPU: {why}. Run it on a GPU host, or "
              "try the script on the CPU backend with --device cpu and small scales "
              "(--scale 14 --resident-scale 12 --check-scale 12).", file=sys.stderr)
        sys.exit(2)


def device_description(device: str) -> dict:
    if device != "cuda":
        return {"name": f"CPU backend ({benchlib._cpu_model()})", "kind": "cpu"}
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"]
    return {"kind": "cuda", "name": name.decode() if isinstance(name, bytes) else str(name),
            "memory_bytes": int(props["totalGlobalMem"]),
            "multiprocessors": int(props["multiProcessorCount"]),
            "driver": cp.cuda.runtime.driverGetVersion(),
            "runtime": cp.cuda.runtime.runtimeGetVersion(), "cupy": cp.__version__}


def free_device_memory(device: str, collect: bool = True) -> None:
    if collect:
        gc.collect()
    if device == "cuda":
        import cupy as cp

        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


def measure_bandwidth(device: str, nbytes: int, repeat: int) -> dict:
    """Pinned H2D (the floor of paging), pageable H2D and D2D, in bytes per second."""
    if device != "cuda":
        # The CPU backend's "copy" is a memcpy from the graph's arrays into slot buffers.
        src = np.ones(nbytes, np.uint8)
        dst = np.empty_like(src)
        np.copyto(dst, src)
        best, _ = benchlib.best_time(lambda: np.copyto(dst, src), repeat)
        return {"kind": "host memcpy (the CPU backend's stand-in for H2D)", "bytes": nbytes,
                "pinned_h2d": nbytes / best, "pinned_h2d_best": nbytes / best,
                "pageable_h2d": None, "d2d": None}
    import cupy as cp
    import cupyx

    h2d = cp.cuda.runtime.memcpyHostToDevice
    stream = cp.cuda.Stream(non_blocking=True)
    pinned = cupyx.empty_pinned((nbytes,), dtype=np.uint8)
    pinned[:] = 1  # touch every page
    dev = cp.empty(nbytes, dtype=cp.uint8)

    def timed_copies(dst_ptr: int, src_ptr: int, kind: int) -> tuple[float, float]:
        """(mean over ``repeat`` back-to-back copies, fastest single copy) in seconds."""
        cp.cuda.runtime.memcpyAsync(dst_ptr, src_ptr, nbytes, kind, stream.ptr)  # warm-up
        events = [cp.cuda.Event() for _ in range(repeat + 1)]
        events[0].record(stream)
        for i in range(repeat):
            cp.cuda.runtime.memcpyAsync(dst_ptr, src_ptr, nbytes, kind, stream.ptr)
            events[i + 1].record(stream)
        events[-1].synchronize()
        each = [cp.cuda.get_elapsed_time(events[i], events[i + 1]) / 1e3
                for i in range(repeat)]
        return sum(each) / repeat, min(each)

    mean, best = timed_copies(dev.data.ptr, pinned.ctypes.data, h2d)
    out = {"kind": "cudaMemcpyAsync from cupyx.empty_pinned memory, CUDA events",
           "bytes": nbytes, "repeat": repeat, "pinned_h2d": nbytes / mean,
           "pinned_h2d_best": nbytes / best,
           "zero_copy_read": zero_copy_read(pinned, repeat, stream)}
    del pinned
    pageable = np.ones(nbytes, np.uint8)
    mean, _ = timed_copies(dev.data.ptr, pageable.ctypes.data, h2d)
    out["pageable_h2d"] = nbytes / mean
    del pageable
    try:
        other = cp.empty(nbytes, dtype=cp.uint8)
        mean, _ = timed_copies(other.data.ptr, dev.data.ptr, cp.cuda.runtime.memcpyDeviceToDevice)
        out["d2d"] = nbytes / mean  # bytes copied; the memory moves twice that (read + write)
        del other
    except cp.cuda.memory.OutOfMemoryError:
        out["d2d"] = None
    del dev
    free_device_memory(device)
    return out


def zero_copy_read(pinned: np.ndarray, repeat: int, stream) -> float:
    """Bytes per second at which a kernel reads pinned host memory in place, in aligned
    128-byte warp loads (scripts/zero_copy_read.cu): the rate of the bottom-up rounds,
    which read the host's CSC so. It differs between hosts more than copies do: one
    host read the CSC at half the rate of another, at the same copy rate
    (docs/benchmarks/engine-gpu-slow-zero-copy-host.md)."""
    import cupy as cp

    kernel = cp.RawModule(code=(Path(__file__).parent / "zero_copy_read.cu").read_text()
                          ).get_function("read_mapped")
    words = pinned.view(np.int32)
    count = len(words)
    sink = cp.zeros(1, dtype=cp.uint64)
    blocks = 4 * cp.cuda.Device().attributes["MultiProcessorCount"]
    args = (np.uintp(words.ctypes.data), np.int64(count), sink)  # UVA: the host address
    with stream:
        kernel((blocks,), (1024,), args)  # warm-up
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        for _ in range(repeat):
            kernel((blocks,), (1024,), args)
        end.record(stream)
        end.synchronize()
    return repeat * pinned.nbytes / (cp.cuda.get_elapsed_time(start, end) / 1e3)


def pinning_cost(graph, device: str) -> dict | None:
    """Seconds to register and unregister each page array (indices, weights) as pinned
    memory. The CUDA backend pins the arrays a run reads in the first run on a graph that
    reads them, and keeps them pinned while the graph lives, so this is inside that first
    run's wall time only."""
    if device != "cuda":
        return None
    import cupy as cp

    _, indices, weights = graph.csc()
    out = {}
    for name, a in (("indices", indices), ("weights", weights)):
        if a is None or not a.nbytes:
            continue
        start = time.perf_counter()
        cp.cuda.runtime.hostRegister(a.ctypes.data, a.nbytes, 0)
        cp.cuda.runtime.hostUnregister(a.ctypes.data)
        out[name] = {"bytes": a.nbytes, "seconds": time.perf_counter() - start}
    return out


def recover(graph, device: str) -> None:
    """After a run was abandoned part-way: wait for the device and free what it holds for
    the graph, so the next configuration starts clean (the pinning of the graph's pages
    lasts as long as the graph and stays valid)."""
    if device != "cuda":
        return
    import cupy as cp

    with contextlib.suppress(Exception):
        cp.cuda.Device().synchronize()
    with contextlib.suppress(AttributeError):  # an engine without device caching
        graph.release_device_memory()
    free_device_memory(device)


# --------------------------------------------------------------------------- workspace
class Workspace:
    """Where the stores go; everything the script creates there is deleted at the end."""

    def __init__(self, workdir: str | None, keep: bool):
        self.keep = keep
        if workdir:
            self.root = Path(workdir)
            self.created = not self.root.exists()
            self.root.mkdir(parents=True, exist_ok=True)
        else:
            # Under the checkout, not /tmp: /tmp may be a RAM disk, and the scale-26 store is
            # about 16 GiB.
            parent = REPO / "build"
            parent.mkdir(exist_ok=True)
            self.root = Path(tempfile.mkdtemp(prefix="bench-gpu-", dir=parent))
            self.created = True
        self.stores: list[Path] = []

    def store(self, name: str) -> Path:
        path = self.root / name
        self.stores.append(path)
        return path

    def remove(self, path: Path) -> None:
        if self.keep:
            return
        shutil.rmtree(path, ignore_errors=True)
        # What an interrupted write_store can leave beside its output.
        for left in [*path.parent.glob(f"{path.name}.tmp-*"),
                     *path.parent.glob(f".{path.name}.spill-*")]:
            shutil.rmtree(left, ignore_errors=True)

    def close(self) -> None:
        for path in self.stores:
            self.remove(path)
        if self.created and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


# --------------------------------------------------------------------------- graphs
def page_edges_for(scale: int, edge_factor: int, requested: int | None) -> int:
    """The default page size (2^22), halved until the graph has at least 32 pages, so that
    a quarter of them is still a window of several slots."""
    from partitioner.writer import DEFAULT_PAGE_EDGES

    if requested:
        return requested
    expected = 2 * edge_factor << scale  # symmetrized, before duplicates are removed
    pe = DEFAULT_PAGE_EDGES
    while expected // pe < 32 and pe > 1024:
        pe //= 2
    return pe


def preprocess_memory(requested: str | None) -> int:
    """The partitioner's host-memory budget: half of RAM, at most 64 GiB (enough to keep
    the scale-26 weighted symmetric RMAT in one in-memory bucket)."""
    from seraph.units import parse_size

    if requested:
        return parse_size(requested)
    return max(1 << 30, min(64 << 30, benchlib._ram_bytes() // 2))


def disk_needed(scale: int, edge_factor: int, memory: int) -> int:
    """Rough disk bytes of the store (and the spill files when it does not fit memory)."""
    edges = 2 * edge_factor << scale
    store = edges * 8 + (9 << scale) * 2
    from partitioner.writer import _sweep_bytes

    spill = 0 if _sweep_bytes(edges, 1 << scale, True) <= memory else edges * 12
    return int((store + spill) * 1.05)


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def build_graph(ws: Workspace, scale: int, args, clock: Clock, label: str) -> tuple:
    """Generates a weighted symmetrized RMAT straight into a store (timed), opens it and
    loads its arrays; returns (graph, description)."""
    import seraph
    from partitioner.generators import gap_weights, rmat
    from partitioner.writer import Options, write_store
    from seraph.errors import StoreError

    pe = page_edges_for(scale, args.edge_factor, args.page_edges)
    memory = preprocess_memory(args.preprocess_memory)
    path = ws.store(f"rmat{scale}-ef{args.edge_factor}-s{args.seed}-p{pe}.zarr")
    generated = args.edge_factor << scale
    desc = {"name": f"RMAT-{scale} ef{args.edge_factor}", "role": label, "scale": scale,
            "edge_factor": args.edge_factor, "seed": args.seed, "weights": "GAP 1..255",
            "generated_edges": generated, "page_edges": pe, "preprocess_memory": memory,
            "threads": _numba_threads(), "preprocess_seconds": None, "reused": False,
            "command": f"seraph generate rmat --scale {scale} --edge-factor {args.edge_factor} "
                       f"--weighted --symmetrize --seed {args.seed} --page-edges {pe} "
                       f"--memory {memory} -o {path.name}"}
    graph = None
    if ws.keep and path.exists():
        try:
            graph = seraph.open_graph(path)
            desc["reused"] = True
            log(f"{desc['name']}: reusing {path}")
        except StoreError:
            graph = None
    if graph is None:
        free = shutil.disk_usage(ws.root).free
        need = disk_needed(scale, args.edge_factor, memory)
        if free < need:
            raise SystemExit(f"bench_gpu: {ws.root} has {benchlib.size(free)} free but "
                             f"{desc['name']} needs about {benchlib.size(need)}; pass "
                             "--workdir on a larger disk")
        log(f"{desc['name']}: generating {generated:,} edges into {path} (pages of {pe:,} "
            f"edges, --memory {benchlib.size(memory)}, {desc['threads']} threads)")
        source = rmat(scale, args.edge_factor, seed=args.seed, weights=gap_weights())
        options = Options(symmetrize=True, seed=args.seed, page_edges=pe, memory=memory)
        start = time.perf_counter()
        with time_limit(clock.limit(None), f"generating {desc['name']}"):
            write_store(source, path, options, force=True, command=desc["command"])
        desc["preprocess_seconds"] = time.perf_counter() - start
        desc["edges_per_second"] = generated / desc["preprocess_seconds"]
        log(f"{desc['name']}: generated and preprocessed in {desc['preprocess_seconds']:.1f} s "
            f"({desc['edges_per_second'] / 1e6:.1f} M generated edges/s)")
        graph = seraph.open_graph(path)
    desc["disk_bytes"] = dir_bytes(path)
    start = time.perf_counter()
    graph.csc()
    graph.csr()
    degrees = graph.out_degrees()
    _ = graph.page_first_vertex, graph.page_last_vertex  # loads them
    desc["load_seconds"] = time.perf_counter() - start
    desc["summary_seconds"] = warm_page_summary(graph)
    source_vertex = int(np.argmax(degrees))
    desc.update(num_vertices=graph.num_vertices, num_edges=graph.num_edges,
                num_pages=graph.num_pages, weighted=graph.weighted,
                symmetric=graph.symmetric,
                self_loops_removed=int(graph.attrs.self_loops_removed or 0),
                duplicates_removed=int(graph.attrs.duplicates_removed or 0),
                index_bytes=graph.num_edges * 4,
                page_bytes=graph.num_edges * (8 if graph.weighted else 4),
                source=source_vertex, source_degree=int(degrees[source_vertex]))
    log(f"{desc['name']}: {graph.num_vertices:,} vertices, {graph.num_edges:,} stored edges "
        f"({graph.num_edges / generated:.2f}x the generated ones: both directions, less "
        f"{desc['self_loops_removed']:,} self-loops and {desc['duplicates_removed']:,} "
        f"duplicates), {graph.num_pages} pages, {benchlib.size(desc['page_bytes'])} of page "
        f"bytes; arrays loaded in {desc['load_seconds']:.1f} s; source {source_vertex} "
        f"(out-degree {desc['source_degree']:,})")
    return graph, desc


def _numba_threads() -> int:
    import numba

    return numba.config.NUMBA_NUM_THREADS


def warm_page_summary(graph) -> float | None:
    """Builds the engine's per-graph page summary before anything is timed (it is cached on
    the graph; the first run would otherwise pay for it)."""
    try:
        from seraph.backends.activity import page_summary
        from seraph.backends.layout import Layout

        start = time.perf_counter()
        page_summary(graph, Layout.plan(graph, False, None))
        return time.perf_counter() - start
    except (ImportError, TypeError, AttributeError) as e:  # the scheduler changed under us
        log(f"could not pre-build the page summary ({e}); the first run includes it")
        return None


def resident_layout(graph, alg: str, schedule: str, predictor: str = "auto"):
    """The engine's Layout of a run with no budget under the schedule and ``predictor``
    (auto: the algorithm's default): its vertex state bytes and its slot bytes."""
    import seraph
    from seraph.algorithms import get
    from seraph.backends.layout import Layout

    spec = get(alg).spec
    resolved = seraph.make_config(schedule=schedule, predictor=predictor) \
        .resolved_predictor(spec)
    return Layout.for_run(graph, spec, resolved, None)


def pass_bytes(graph, alg: str) -> int:
    """Bytes one pass over the graph moves for ``alg``: every edge's slot bytes."""
    layout = resident_layout(graph, alg, "pipelined")
    return graph.num_edges * layout.slot_bytes // graph.page_edges


def paged_budget(graph, alg: str, schedule: str, fraction: float,
                 predictor: str = "auto") -> int:
    """device_memory for a paged run: the vertex state (``predictor``'s: the weak one
    keeps a state byte a vertex, the strong one SSSP's lightest in-edge) plus ``fraction``
    of the bytes of the algorithm's pages (at least two slots)."""
    layout = resident_layout(graph, alg, schedule, predictor)
    pages = max(2 * layout.slot_bytes, fraction * pass_bytes(graph, alg))
    return int(layout.state_bytes + pages)


# --------------------------------------------------------------------------- runs
def call(graph, alg: str, source: int, **options):
    """One API call; returns (result array, stats, trace events)."""
    import seraph
    from seraph.algorithms import get

    res = seraph.run(graph, alg, get(alg).source_for(source), trace=True, **options)
    return res.values, res.stats, res.trace.events


def measure(graph, desc: dict, alg: str, *, device: str, schedule: str, paged: bool,
            args, bandwidth: float | None, clock: Clock, keep_values: bool = False,
            repeat: int = 1) -> dict:
    """Runs one configuration ``repeat`` times (the fastest kept); derives its figures."""
    from seraph.algorithms import get

    budget = paged_budget(graph, alg, schedule, args.budget_fraction) if paged else None
    memory = f"{args.budget_fraction:.0%} of pages" if paged else "resident"
    row = {"graph": desc["name"], "scale": desc["scale"], "algorithm": alg, "device": device,
           "schedule": schedule, "memory": memory, "paged": paged, "budget": budget,
           "error": None}
    src = get(alg).source_for(desc["source"])
    best, spent, first_wall = None, 0.0, None
    for attempt in range(max(1, repeat)):
        if attempt and spent > REPEAT_SECONDS:
            break  # slow runs are not repeated: the time budget matters more
        limit = clock.limit(args.time_limit)
        label = f"{desc['name']} {alg.upper()} {device} {schedule} {memory}"
        alarm = Alarm()
        if not attempt and not paged:
            recover(graph, device)  # the first run of each configuration uploads the graph
        try:
            with time_limit(limit, label) as alarm:
                start = time.perf_counter()
                values, stats, events = call(graph, alg, src, device=device,
                                             schedule=schedule, device_memory=budget,
                                             push_on=args.push_on)
                seconds = time.perf_counter() - start
            spent += seconds
        except Exception as e:  # one failed configuration must not lose the others
            check_stop()
            if alarm.fired or isinstance(e, TimeLimit):
                row["error"] = f"timed out after {limit:.3g} s"
            else:
                row["error"] = f"{type(e).__name__}: {e}"
            log(f"{label}: FAILED: {row['error']}")
            recover(graph, device)
            break
        # Each run's device memory goes back, so the next run's peak is its own (the
        # backend reports the cupy pool's total).
        free_device_memory(device, collect=False)
        first_wall = first_wall or stats.wall_time
        if best is None or stats.wall_time < best[1].wall_time:
            best = (values, stats, events, seconds)
        log(f"{label}: {stats.wall_time:.3f} s, {stats.rounds} rounds, "
            f"{stats.pages_transferred} pages moved" + (f" (run {attempt + 1})" if
                                                         repeat > 1 else ""))
        del values
    if best is None:
        return row
    values, stats, events, seconds = best
    row.update(derive(stats, events, desc, pass_bytes(graph, alg), bandwidth))
    row["call_seconds"] = seconds
    row["first_wall"] = first_wall
    row["gteps_first"] = desc["num_edges"] / first_wall / 1e9
    row["pass_eq_first"] = row["pass_eq"] and row["pass_eq"] * first_wall / stats.wall_time
    if keep_values:
        row["_values"] = values
    return row


def derive(stats, events: list[dict], desc: dict, one_pass_bytes: int,
           bandwidth: float | None) -> dict:
    """The reported figures of one run (see the module docstring)."""
    tf = trace_figures(events)
    wall = stats.wall_time
    span = tf["span"]
    setup = None if span is None else max(0.0, wall - span)
    one_pass = one_pass_bytes / bandwidth if bandwidth else None
    m = desc["num_edges"]
    st = stats.to_dict()
    return {
        "wall": wall, "span": span, "setup": setup, "pass_bytes": one_pass_bytes,
        "one_pass_seconds": one_pass,
        "pass_eq": wall / one_pass if one_pass else None,
        "pass_eq_engine": span / one_pass if one_pass and span else None,
        "pass_eq_runstats": st.get("pass_equivalents"),
        "h2d_bandwidth_runstats": st.get("h2d_bandwidth"),
        "gteps": st.get("gteps"), "gteps_engine": m / span / 1e9 if span else None,
        "kernel_time": st.get("kernel_time"), "sparse_time_stats": st.get("sparse_time"),
        "rounds": st.get("rounds"), "dense_rounds": st.get("dense_rounds"),
        "sparse_rounds": st.get("sparse_rounds"), "sweeps": st.get("sweeps"),
        "bottom_up_rounds": st.get("bottom_up_rounds"),
        "pages_moved": st.get("pages_transferred"), "num_slots": st.get("num_slots"),
        "num_pages": st.get("num_pages"), "resident": st.get("resident"),
        "bytes_h2d": st.get("bytes_h2d"),
        "sparse_time": tf["sparse_union"], "dense_time": tf["dense_time"],
        "copy_time": tf["copy_union"], "copy_busy": tf["copy_busy"], "copies": tf["copies"],
        "trace_events": len(events), "stats": st,
    }


def add_speedups(rows: list[dict]) -> None:
    """"x faster than single" = single's wall time / pipelined's, per graph and algorithm."""
    for r in rows:
        if r["schedule"] != "pipelined" or not r["paged"] or "wall" not in r:
            continue
        single = next((s for s in rows if s["graph"] == r["graph"] and s["paged"]
                       and s["algorithm"] == r["algorithm"] and s["schedule"] == "single"
                       and "wall" in s), None)
        if single:
            r["vs_single"] = single["wall"] / r["wall"]
            if r.get("span") and single.get("span"):
                r["vs_single_engine"] = single["span"] / r["span"]


# --------------------------------------------------------------------------- phases
def warm_up(device: str) -> float:
    """Every engine path once on a tiny in-memory graph: numba and CUDA kernels compiled or
    loaded before anything is timed."""
    import seraph
    from partitioner.generators import gap_weights, rmat

    start = time.perf_counter()
    src = rmat(10, 8, seed=1, weights=gap_weights())
    chunk = next(iter(src.chunks()))
    graph = seraph.Graph.from_edges(chunk.src, chunk.dst, chunk.weight, src.num_vertices,
                                    symmetrize=True, page_edges=1024)
    for dev in sorted({device, "cpu"}):  # the check compares with the CPU backend
        for alg in ALGORITHMS:
            for schedule, paged in (("pipelined", False), ("pipelined", True),
                                    ("single", True)):
                budget = paged_budget(graph, alg, schedule, 0.25) if paged else None
                call(graph, alg, 0, device=dev, schedule=schedule, device_memory=budget)
    return time.perf_counter() - start


def phase_check(ws, args, clock, results) -> bool:
    """Device runs (paged under both schedules, and resident) against the CPU backend."""
    graph, desc = build_graph(ws, args.check_scale, args, clock, "check")
    results["graphs"].append(desc)
    ok = True
    try:
        for alg in ALGORITHMS:
            ref = measure(graph, desc, alg, device="cpu", schedule="pipelined", paged=False,
                          args=args, bandwidth=None, clock=clock, keep_values=True)
            expect = ref.pop("_values", None)
            for schedule, paged in (("pipelined", True), ("single", True),
                                    ("pipelined", False)):
                row = measure(graph, desc, alg, device=args.device, schedule=schedule,
                              paged=paged, args=args, bandwidth=None, clock=clock,
                              keep_values=True)
                got = row.pop("_values", None)
                if expect is None or got is None:
                    verdict = "ERROR: " + (row["error"] or ref["error"] or "no result")
                elif np.array_equal(got, expect):
                    verdict = "PASS"
                else:
                    bad = int(np.sum(got != expect)) if got.shape == expect.shape else -1
                    verdict = f"FAIL: {bad} of {len(expect)} vertices differ"
                ok &= verdict == "PASS"
                check = {"graph": desc["name"], "algorithm": alg, "device": args.device,
                         "schedule": schedule, "memory": row["memory"],
                         "slots": row.get("num_slots"), "pages": row.get("num_pages"),
                         "verdict": verdict, "cpu_seconds": ref.get("wall"),
                         "device_seconds": row.get("wall")}
                results["checks"].append(check)
                log(f"check {alg.upper()} {args.device} {schedule} {row['memory']} vs cpu: "
                    f"{verdict}")
    finally:
        del graph
        free_device_memory(args.device)
        ws.remove(Path(ws.stores[-1]))
    return ok


def phase_runs(ws, args, clock, results, bandwidth, scale: int, role: str,
               configs: list[tuple[str, bool]]) -> None:
    """A graph built (timed) and then BFS, CC and SSSP under each (schedule, paged)."""
    graph, desc = build_graph(ws, scale, args, clock, role)
    results["graphs"].append(desc)
    try:
        if role == "big":
            desc["pinning"] = pinning_cost(graph, args.device)
            if desc["pinning"]:
                log(f"{desc['name']}: {pinning_text(desc['pinning'])}")
        for alg in ALGORITHMS:
            answers = []
            for schedule, paged in configs:
                if clock.exhausted():
                    log(f"total time limit reached: skipping {alg} {schedule}")
                    results["skipped"].append(f"{desc['name']} {alg} {schedule} "
                                              f"{'paged' if paged else 'resident'}")
                    continue
                row = measure(graph, desc, alg, device=args.device, schedule=schedule,
                              paged=paged, args=args, bandwidth=bandwidth, clock=clock,
                              keep_values=len(configs) > 1,
                              repeat=args.resident_repeat if role == "resident" else
                              args.repeat)
                values = row.pop("_values", None)
                if values is not None:
                    answers.append(values)
                    # Every configuration must give the same answer (exact engine).
                    row["agrees"] = bool(np.array_equal(values, answers[0]))
                results["runs"].append(row)
            del answers
            add_speedups(results["runs"])
            save_json(results, args.json_out)
    finally:
        del graph
        free_device_memory(args.device)
        ws.remove(Path(ws.stores[-1]))


# --------------------------------------------------------------------------- report
def fmt(x: float | None, digits: int = 2, suffix: str = "") -> str:
    return "—" if x is None else f"{x:.{digits}f}{suffix}"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def verdict(value: float | None, target: float, higher: bool, alt: float | None = None
            ) -> str:
    def meets(v):
        return v >= target if higher else v <= target

    if value is None:
        return "not measured"
    if meets(value):
        return "met"
    if alt is not None and meets(alt):
        return "**short** (met excl. setup)"
    return "**short**"


def runs_table(rows: list[dict]) -> str:
    headers = ["graph", "alg", "memory", "schedule", "slots / pages", "time s", "setup s",
               "kernels / sparse / copies s", "pass-eq.", "pass-eq. excl. setup", "GTEPS",
               "GTEPS excl. setup", "rounds (dense / sparse: bottom-up)", "pages moved",
               "copy busy", "x faster than single", "answer"]
    body = []
    for r in rows:
        if "wall" not in r:
            body.append([r["graph"], r["algorithm"].upper(), r["memory"], r["schedule"]]
                        + ["—"] * 12 + [f"**{r['error']}**"])
            continue
        slots = f"{r['num_slots']} / {r['num_pages']}" if r["paged"] else f"all {r['num_pages']}"
        speed = ""
        if "vs_single" in r:
            speed = f"{r['vs_single']:.2f}x"
            if r.get("vs_single_engine"):
                speed += f" ({r['vs_single_engine']:.2f}x excl. setup)"
        body.append([
            r["graph"], r["algorithm"].upper(), r["memory"], r["schedule"], slots,
            benchlib.seconds(r["wall"]), benchlib.seconds(r["setup"]),
            " / ".join(benchlib.seconds(x) for x in (r["kernel_time"], r["sparse_time"],
                                                     r["copy_time"])),
            fmt(r["pass_eq"]),
            fmt(r["pass_eq_engine"]), fmt(r["gteps"]), fmt(r["gteps_engine"]),
            f"{r['rounds']} ({r['dense_rounds']} / {r['sparse_rounds']}"
            f"{'' if r.get('bottom_up_rounds') is None else ': ' + str(r['bottom_up_rounds'])})",
            f"{r['pages_moved']:,}", pct(r["copy_busy"]), speed or "—",
            {True: "same", False: "**differs**"}.get(r.get("agrees"), "—")])
    return benchlib.markdown_table(headers, body, [False] * 4 + [True] * 12 + [False])


def targets(results: dict, args) -> list[dict]:
    runs = [r for r in results["runs"] if "wall" in r]
    out = []

    def find(role_scale: int, alg: str, schedule: str, paged: bool) -> dict | None:
        return next((r for r in runs if r["scale"] == role_scale and r["algorithm"] == alg
                     and r["schedule"] == schedule and r["paged"] == paged), None)

    for alg in ALGORITHMS:
        r = find(args.scale, alg, "pipelined", True)
        out.append({"target": f"{alg.upper()} out of GPU memory ({args.budget_fraction:.0%} "
                              f"budget, RMAT-{args.scale}): pass-eq. ≤ {PASS_EQ_TARGET[alg]}",
                    "measured": None if r is None else
                    f"{fmt(r['pass_eq'])} ({fmt(r['pass_eq_engine'])} excl. setup; "
                    f"{fmt(r['pass_eq_first'])} in the first run on the graph, which pins "
                    "its pages)",
                    "verdict": verdict(r and r["pass_eq"], PASS_EQ_TARGET[alg], False,
                                       r and r["pass_eq_engine"])})
    for alg in ALGORITHMS:
        r = find(args.scale, alg, "pipelined", True)
        out.append({"target": f"{alg.upper()} pipelined ≥ {SPEEDUP_TARGET:g}x faster than "
                              "single",
                    "measured": None if r is None or "vs_single" not in r else
                    f"{r['vs_single']:.2f}x ({fmt(r.get('vs_single_engine'))}x excl. setup)",
                    "verdict": verdict(r and r.get("vs_single"), SPEEDUP_TARGET, True,
                                       r and r.get("vs_single_engine"))})
    for alg in ALGORITHMS:
        r = find(args.scale, alg, "pipelined", True)
        out.append({"target": f"{alg.upper()} pipelined: copy engine busy ≥ "
                              f"{COPY_BUSY_TARGET:.0%} of the dense-phase time",
                    "measured": None if r is None else
                    f"{pct(r['copy_busy'])} of {benchlib.seconds(r['dense_time'])} s",
                    "verdict": verdict(r and r["copy_busy"], COPY_BUSY_TARGET, True)})
    note = "" if args.resident_scale == GTEPS_TARGET_SCALE else \
        f" (target set for RMAT-{GTEPS_TARGET_SCALE})"
    for alg in ALGORITHMS:
        r = find(args.resident_scale, alg, "pipelined", False)
        out.append({"target": f"{alg.upper()} fully resident, RMAT-{args.resident_scale} "
                              f"ef{args.edge_factor}: ≥ {GTEPS_TARGET[alg]:g} GTEPS{note}",
                    "measured": None if r is None else
                    f"{fmt(r['gteps'])} ({fmt(r['gteps_engine'])} excl. setup; "
                    f"{fmt(r['gteps_first'])} in a first run, which uploads)",
                    "verdict": verdict(r and r["gteps"], GTEPS_TARGET[alg], True,
                                       r and r["gteps_engine"])})
    big = next((g for g in results["graphs"] if g["role"] == "big"), None)
    note = "" if (args.scale, args.edge_factor) == (PREPROCESS_TARGET_SCALE, 16) and \
        big and big["threads"] == PREPROCESS_TARGET_CORES else \
        f" (target set for RMAT-{PREPROCESS_TARGET_SCALE} ef16 on {PREPROCESS_TARGET_CORES} cores)"
    seconds = big and big["preprocess_seconds"]
    out.append({"target": f"generate + preprocess RMAT-{args.scale} ef{args.edge_factor} "
                          f"within {PREPROCESS_TARGET_S:.0f} s{note}",
                "measured": None if not seconds else
                f"{seconds:.1f} s on {big['threads']} threads "
                f"({big['edges_per_second'] / 1e6:.1f} M edges/s)",
                "verdict": verdict(seconds or None, PREPROCESS_TARGET_S, False)})
    return out


def report(results: dict, info: dict, command: str, args) -> str:
    dev = results["device"]
    bw = results.get("bandwidth") or {}
    lines = [
        "# Engine on the GPU: out of GPU memory and fully resident",
        "",
        f"Generated by `{command}`.",
        "",
        f"- Device: {dev['name']}" + (f", {benchlib.size(dev['memory_bytes'])}, "
                                      f"{dev['multiprocessors']} SMs, CUDA runtime "
                                      f"{dev['runtime']}, driver {dev['driver']}, CuPy "
                                      f"{dev['cupy']}" if dev["kind"] == "cuda" else ""),
        benchlib.machine_markdown(info),
        f"- Total time of the script: {results['elapsed']:.0f} s, of which "
        f"{results.get('warm_up_seconds') or 0:.0f} s compiling the kernels (numba, NVRTC) on a "
        "tiny graph before anything is timed",
        "",
    ]
    if bw:
        lines += ["## Copy bandwidth", "",
                  f"{bw['kind']}, {benchlib.size(bw['bytes'])} per copy: "
                  f"**{bw['pinned_h2d'] / GB:.1f} GB/s** (fastest copy "
                  f"{bw['pinned_h2d_best'] / GB:.1f} GB/s)"
                  + (f"; pageable {bw['pageable_h2d'] / GB:.1f} GB/s" if bw.get("pageable_h2d")
                     else "")
                  + (f"; device to device {bw['d2d'] / GB:.0f} GB/s copied "
                     f"({2 * bw['d2d'] / GB:.0f} GB/s read + written)" if bw.get("d2d")
                     else "") + "."
                  + (f" A kernel reading pinned memory in place (zero-copy, 128-byte warp "
                     f"loads, as bottom-up rounds read the CSC): "
                     f"**{bw['zero_copy_read'] / GB:.1f} GB/s**." if bw.get("zero_copy_read")
                     else ""), ""]
    lines += ["## Graphs", "",
              "Graph500 R-MAT (a, b, c = 0.57, 0.19, 0.19), GAP weights (integers 1..255), "
              "symmetrized: the store holds both directions of every edge, less self-loops "
              "and duplicates, so *stored edges* is about twice *generated edges*. GTEPS "
              "count stored edges. Preprocessing is `write_store` of the generator (edges made "
              "on the fly), timed from the first edge to the renamed store; M edges/s count "
              "generated edges.", "", graphs_table(results["graphs"]), ""]
    for g in results["graphs"]:
        if g.get("pinning"):
            lines += [f"{g['name']}: {pinning_text(g['pinning'])}.", ""]
    lines += [
        "## Runs", "",
        f"*memory*: `device_memory` = the vertex state (`Layout.plan`) + "
        f"{args.budget_fraction:.0%} of the page bytes (paged), or no limit (resident). "
        "*time*: `RunStats.wall_time`. *setup*: wall time outside the engine's traced loop "
        "(allocation and the result's copy back; in the first run on a graph also pinning its "
        "page arrays and, resident, the upload of the pages and the CSC index, which later "
        "runs on the graph find on the device). "
        "*kernels / sparse / copies*: time in pull sweeps (`RunStats.kernel_time`), in the "
        "sparse rounds (the CPU push engine, and bottom-up rounds, which on the GPU read "
        "the host's CSC in place) and with a copy in flight "
        "(the last two from the trace; copies overlap sweeps). The traced span less kernels "
        "and sparse rounds is the scheduler's own work and its "
        "waits for copies. "
        "*pass-eq.*: time over one pass of the bytes the algorithm's pages move (the slot "
        "bytes of `Layout.plan`: 4 B per stored edge when the pages leave the weights behind, "
        "8 B with them) at the measured pinned bandwidth. *copy busy*: union of the trace's copy "
        "intervals over the dense-phase time (traced span less sparse rounds). *answer*: "
        "equal to the first configuration's answer for that algorithm. Resident-graph rows "
        f"are the fastest of up to {args.resident_repeat} runs (the first run on a graph "
        "uploads it; later ones find it on the device, as a cuGraph graph object or a GAP "
        "kernel's input already is; the Targets table gives the first, uploading run "
        "too), big-graph "
        "rows of up to "
        f"{args.repeat} (the first paged run pins the pages; the Targets table gives it "
        f"too; a configuration is not repeated once its runs took "
        f"{REPEAT_SECONDS:g} s).", "",
        runs_table(results["runs"]), ""]
    lines += ["## Targets", "",
              benchlib.markdown_table(["target", "measured", "verdict"],
                                      [[t["target"], t["measured"] or "—", t["verdict"]]
                                       for t in results["targets"]]), ""]
    if results["checks"]:
        lines += ["## Correctness", "",
                  f"Each algorithm on `{args.device}` compared element for element "
                  "(`np.array_equal`) with the CPU backend (resident, default options) on "
                  "the check graph. *device s* and *cpu s* time single runs: the first "
                  "paged device run of an algorithm on the graph includes what the engine "
                  "builds once per graph and caches (it pins the page arrays it reads; "
                  "SSSP's first run also pins the weights and finds each vertex's lightest "
                  "in-edge), which the Runs table above leaves out of its repeated runs.",
                  "",
                  benchlib.markdown_table(
                      ["graph", "alg", "device", "memory", "schedule", "slots / pages",
                       "verdict", "device s", "cpu s"],
                      [[c["graph"], c["algorithm"].upper(), c["device"], c["memory"],
                        c["schedule"],
                        f"{c['slots']} / {c['pages']}" if c["slots"] is not None else "—",
                        c["verdict"],
                        benchlib.seconds(c["device_seconds"]),
                        benchlib.seconds(c["cpu_seconds"])] for c in results["checks"]],
                      [False] * 5 + [True, False, True, True]), ""]
    if results["errors"]:
        lines += ["Failed: " + "; ".join(results["errors"]) + ".", ""]
    if results["skipped"]:
        lines += ["Not run (time limit or `--skip`): " + "; ".join(results["skipped"]) + ".",
                  ""]
    return "\n".join(lines)


def pinning_text(pinning: dict) -> str:
    parts = [f"{name} ({benchlib.size(p['bytes'])}) {p['seconds']:.2f} s"
             for name, p in pinning.items()]
    return ("registering the page arrays as pinned memory and unregistering them takes "
            + ", ".join(parts) + "; the CUDA backend does this once per graph for the arrays "
            "its runs read (indices, and weights for SSSP), in the first run that reads "
            "them, so it is part of that run's *setup* only")


def graphs_table(graphs: list[dict]) -> str:
    headers = ["graph", "role", "vertices", "generated edges", "stored edges",
               "duplicates removed", "pages x edges", "indices / + weights", "preprocess s",
               "M edges/s", "load s", "source (degree)"]
    body = [[g["name"], g["role"], f"{g['num_vertices']:,}", f"{g['generated_edges']:,}",
             f"{g['num_edges']:,}", f"{g['duplicates_removed']:,}",
             f"{g['num_pages']} x {g['page_edges']:,}",
             f"{benchlib.size(g['index_bytes'])} / {benchlib.size(g['page_bytes'])}",
             "reused" if g["reused"] else benchlib.seconds(g["preprocess_seconds"]),
             fmt(g.get("edges_per_second") and g["edges_per_second"] / 1e6, 1),
             benchlib.seconds(g["load_seconds"]), f"{g['source']} ({g['source_degree']:,})"]
            for g in graphs]
    return benchlib.markdown_table(headers, body, [False, False] + [True] * 10)


def save_json(results: dict, path: str | None) -> None:
    """Writes what is known so far (a run cut short still leaves its figures)."""
    if path:
        results["elapsed"] = time.perf_counter() - _T0
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(results, indent=1, default=str) + "\n")


# --------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=int, default=26, help="RMAT scale of the out-of-memory graph")
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--resident-scale", type=int, default=24,
                   help="RMAT scale of the fully resident runs")
    p.add_argument("--check-scale", type=int, default=22,
                   help="RMAT scale of the check against the CPU backend")
    p.add_argument("--budget-fraction", type=float, default=0.25,
                   help="share of the page bytes the paged runs may hold on the device")
    p.add_argument("--seed", type=int, default=0, help="generator seed (as seraph generate)")
    p.add_argument("--page-edges", type=int, default=None,
                   help="edges per page (default 2^22, smaller for graphs of < 32 pages)")
    p.add_argument("--preprocess-memory", default=None,
                   help="partitioner memory budget (default half of RAM, at most 64GiB)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--push-on", choices=["device", "host"], default="device",
                   help="where the GPU runs' push rounds run (the engine's push_on)")
    p.add_argument("--skip", nargs="*", default=[], choices=PHASES,
                   help="phases to leave out ('big' skips the large graph altogether; "
                        "'pipelined', 'single', 'big-resident' its runs)")
    p.add_argument("--repeat", type=int, default=2,
                   help="runs per configuration on the big graph (the fastest kept)")
    p.add_argument("--resident-repeat", type=int, default=3,
                   help="runs per algorithm on the resident graph (the fastest kept)")
    p.add_argument("--time-limit", type=float, default=120.0,
                   help="seconds one run may take before it is abandoned (0: none)")
    p.add_argument("--total-limit", type=float, default=570.0,
                   help="seconds for the whole script; later runs are skipped so that the "
                        "report is still written (0: none)")
    p.add_argument("--bandwidth-bytes", type=int, default=None,
                   help="bytes per bandwidth copy (default 1 GiB on cuda, 256 MiB on cpu)")
    p.add_argument("--workdir", default=None,
                   help="directory for the stores (default: a temporary one under build/); "
                        "what the script writes there is deleted")
    p.add_argument("--keep", action="store_true",
                   help="keep the stores (and reuse valid ones found in --workdir)")
    p.add_argument("--json-out", default=None, help="write the figures here as JSON")
    p.add_argument("--md-out", default=None,
                   help="write the markdown report here (e.g. docs/benchmarks/engine-gpu.md)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    require_device(args.device)
    benchlib.quiet()
    # Ctrl-C and SIGTERM unwind through the finally blocks, which delete the stores.
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    command = shlex.join(["python", "scripts/bench_gpu.py",
                          *(argv if argv is not None else sys.argv[1:])])
    clock = Clock(args.total_limit)
    info = benchlib.machine(["cupy"] if args.device == "cuda" else [])
    results: dict = {"command": command, "args": vars(args), "machine": info,
                     "device": device_description(args.device), "bandwidth": None,
                     "graphs": [], "runs": [], "checks": [], "targets": [], "skipped": [],
                     "errors": [], "phases": []}
    log(f"device: {results['device']['name']}; {info['cores']} cores, "
        f"{_numba_threads()} numba threads, {benchlib.size(info['ram_bytes'])} RAM")
    ws = Workspace(args.workdir, args.keep)
    log(f"stores go to {ws.root} ({benchlib.size(shutil.disk_usage(ws.root).free)} free)")
    checks_ok = True

    def phase(name: str, fn: Callable[[], object]) -> object:
        if name in args.skip:
            results["skipped"].append(f"phase {name}")
            return None
        if clock.exhausted(30.0):
            log(f"total time limit: skipping phase {name}")
            results["skipped"].append(f"phase {name} (time)")
            return None
        start = time.perf_counter() - _T0
        log(f"phase {name}: start")
        try:
            return fn()
        except Exception as e:  # report what the other phases measured all the same
            check_stop()
            what = "time limit" if isinstance(e, TimeLimit) else f"{type(e).__name__}: {e}"
            log(f"phase {name}: FAILED ({what})")
            if not isinstance(e, TimeLimit):
                traceback.print_exc()
            results["errors"].append(f"phase {name}: {what}")
            return None
        finally:
            end = time.perf_counter() - _T0
            results["phases"].append({"phase": name, "start": start, "end": end})
            log(f"phase {name}: done in {end - start:.1f} s (elapsed {end:.1f} s)")
            save_json(results, args.json_out)

    try:
        results["warm_up_seconds"] = phase("warm-up", lambda: warm_up(args.device))
        nbytes = args.bandwidth_bytes or (benchlib.GiB if args.device == "cuda"
                                          else 256 * benchlib.MiB)
        results["bandwidth"] = phase("bandwidth", lambda: measure_bandwidth(
            args.device, nbytes, 10 if args.device == "cuda" else 3))
        bw = results["bandwidth"]["pinned_h2d"] if results["bandwidth"] else None
        if bw:
            log(f"pinned H2D: {bw / GB:.1f} GB/s")
        checks_ok = phase("check", lambda: phase_check(ws, args, clock, results)) is not False
        phase("resident", lambda: phase_runs(ws, args, clock, results, bw,
                                             args.resident_scale, "resident",
                                             [("pipelined", False)]))
        configs = [(s, True) for s in ("pipelined", "single") if s not in args.skip]
        if "big-resident" not in args.skip:
            configs.append(("pipelined", False))
        phase("big", lambda: phase_runs(ws, args, clock, results, bw, args.scale, "big",
                                        configs))
    finally:
        ws.close()
        results["elapsed"] = time.perf_counter() - _T0
        results["targets"] = targets(results, args)
        results["checks_ok"] = checks_ok
        benchlib.finish_machine(info)
        benchlib.write_outputs(results, args.json_out, report(results, info, command, args),
                               args.md_out)
        log(f"finished in {results['elapsed']:.1f} s")
    if not checks_ok:
        print("bench_gpu: FAIL: a device answer differs from the CPU backend's, or one of "
              "them could not be computed (see the Correctness table)", file=sys.stderr)
        return 1
    failed = results["errors"] + [f"{r['graph']} {r['algorithm']} {r['schedule']} "
                                  f"{r['memory']}: {r['error']}" for r in results["runs"]
                                  if r["error"]]
    if failed:
        print("bench_gpu: some runs did not finish: " + "; ".join(failed), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
