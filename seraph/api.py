"""The Python API: ``bfs``, ``sssp`` and ``connected_components`` over a :class:`Graph`.

Results are NumPy arrays indexed by vertex (position i is the input vertex
``graph.vertex_ids[i]``), with the conventional sentinels: -1 for unreached levels and
predecessors, inf for unreached distances. Ids in results (predecessors, labels) are the
input's ids.
"""

from __future__ import annotations

import os
import time
import tomllib
import warnings
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from seraph.algorithms import BFS, CC, REACH, SSSP, Algorithm
from seraph.compiling import compile_seconds
from seraph.errors import ConfigError, DeviceError, InputError
from seraph.graph import Graph, open_graph
from seraph.paths import predecessors as tight_predecessors
from seraph.scheduler import EngineConfig, Run
from seraph.stats import RunStats, Trace
from seraph.units import parse_size


@dataclass
class BFSResult:
    levels: np.ndarray  #: int32 hop count from the source, -1 if unreached
    predecessors: np.ndarray | None  #: input id of a BFS-tree parent, -1 for none
    stats: RunStats
    trace: Trace


@dataclass
class SSSPResult:
    distances: np.ndarray  #: float32 distance from the source, inf if unreached
    predecessors: np.ndarray | None  #: input id of a shortest-path-tree parent, -1 for none
    stats: RunStats
    trace: Trace


@dataclass
class CCResult:
    labels: np.ndarray  #: input id of the smallest vertex in each vertex's component
    num_components: int
    stats: RunStats
    trace: Trace


# -- configuration -------------------------------------------------------------------------
def load_config(path: str | os.PathLike) -> dict:
    """Reads a run config TOML: the keys of :class:`EngineConfig` (sizes may be "4GiB")."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    known = {f.name for f in fields(EngineConfig)} - {"extra", "trace"}
    unknown = sorted(set(doc) - known - {"source"})
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}; known keys: "
                          f"{', '.join(sorted(known | {'source'}))}")
    return doc


def make_config(**options) -> EngineConfig:
    """An EngineConfig from keyword options (None means the default)."""
    opts = {k: v for k, v in options.items() if v is not None}
    if "device_memory" in opts:
        opts["device_memory"] = parse_size(opts["device_memory"])
    try:
        cfg = EngineConfig(**opts)
    except TypeError as e:
        raise ConfigError(f"unknown engine option: {e}") from None
    cfg.check()
    return cfg


# -- devices --------------------------------------------------------------------------------
def cuda_status() -> tuple[bool, str]:
    """Whether the CUDA backend can run here, and why not."""
    try:
        import cupy
    except ImportError:
        return False, "cupy is not installed (pip install 'seraph[cuda13]' or '[cuda12]')"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # cupy raises its own runtime errors when no driver is present
        return False, f"no CUDA driver or device ({e})"
    if count == 0:
        return False, "no CUDA device is visible"
    try:
        import seraph.backends.cuda  # noqa: F401
    except ImportError as e:
        return False, f"the CUDA backend is not available in this build ({e})"
    return True, "ok"


def resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"unknown device {device!r}; expected auto, cuda or cpu")
    if device == "cpu":
        return "cpu"
    ok, why = cuda_status()
    if ok:
        return "cuda"
    if device == "cuda":
        raise DeviceError(f"--device cuda: no usable GPU: {why}; use --device cpu or auto")
    warnings.warn(f"no usable GPU ({why}); running on the CPU backend", RuntimeWarning,
                  stacklevel=3)
    return "cpu"


def _make_backend(device: str, config: EngineConfig, *args):
    if device == "cuda":
        from seraph.backends.cuda import CudaBackend

        return CudaBackend(*args, push_on=config.push_on)
    from seraph.backends.cpu import CpuBackend

    return CpuBackend(*args)


# -- running ---------------------------------------------------------------------------------
def _as_graph(graph) -> Graph:
    if isinstance(graph, Graph):
        return graph
    if isinstance(graph, (str, os.PathLike)):
        return open_graph(graph)
    raise InputError(f"expected a seraph.Graph or a store path, got {type(graph).__name__}")


def execute(graph: Graph, algorithm: Algorithm, source: int | None, config: EngineConfig
            ) -> tuple[np.ndarray, RunStats, Trace]:
    """Runs an algorithm to convergence; returns the engine's values (INF = unreached)."""
    from seraph.backends.base import Layout

    start, compiled_before = time.perf_counter(), compile_seconds()
    device = resolve_device(config.device)
    predictor = config.resolved_predictor(algorithm)
    table, initial_state = None, 0
    if predictor == "weak":
        from seraph.predictors import load_diagram

        diagram = load_diagram(config.diagram or "seraph")
        table, initial_state = diagram.table, diagram.initial
    budget = config.device_memory
    if device == "cuda" and budget is None:
        from seraph.backends.cuda import default_budget

        budget = default_budget(graph)
    layout = Layout.for_run(graph, algorithm, predictor, budget)
    stats = RunStats(algorithm=algorithm.name, device=device, schedule=config.schedule,
                     predictor=predictor, num_vertices=graph.num_vertices,
                     num_edges=graph.num_edges, num_pages=graph.num_pages,
                     num_slots=layout.num_slots, resident=layout.resident)
    trace = Trace(enabled=config.trace)
    hub = _components_hub(graph, algorithm, layout, config)
    if hub is not None:
        algorithm, source = REACH, hub
    backend = _make_backend(device, config, graph, algorithm, layout, table, initial_state)
    try:
        backend.init_values(source)
        run = Run(graph, algorithm, backend, config, predictor, stats, trace)
        stats.setup_time = time.perf_counter() - start - (compile_seconds() - compiled_before)
        if hub is not None:
            run.components_from_hub(hub)
        else:
            run.execute(algorithm.initial_frontier(source))
        done = time.perf_counter()
        values = backend.result()
        stats.readback_time = time.perf_counter() - done
        stats.peak_device_memory = getattr(backend, "peak_memory", 0)
        if getattr(backend, "upload_bytes", 0):  # a resident graph's one upload
            stats.bytes_h2d += backend.upload_bytes
            stats.pages_transferred += graph.num_pages
    finally:
        backend.close()
    # A first call compiles kernels (once per install); the run's times leave that out.
    stats.compile_time = compile_seconds() - compiled_before
    stats.finish(time.perf_counter() - start - stats.compile_time,
                 graph.num_edges * layout.slot_bytes // max(1, graph.page_edges))
    return values, stats, trace


def _components_hub(graph: Graph, algorithm: Algorithm, layout, config: EngineConfig
                     ) -> int | None:
    """The vertex CC starts from (:meth:`Run.components_from_hub`: its highest out-degree
    vertex), or None for plain min-label propagation: when no page moves a dense round
    costs little and spreads every label at once, and the ``single`` schedule is the
    plain full-pass baseline."""
    if algorithm is not CC or layout.resident or config.schedule == "single" or \
            graph.num_vertices == 0:
        return None
    from seraph.backends.base import graph_cached, out_degrees

    # Kept with the graph: the argmax alone takes 20 ms at 2**26 vertices.
    return graph_cached(graph, "cc hub", lambda: int(np.argmax(out_degrees(graph))))


def _source_index(graph: Graph, source) -> int:
    if source is None:
        raise InputError("a source vertex is required")
    # int() would silently truncate 1.5 or parse "1"; a vertex id is an integer.
    if isinstance(source, bool) or not isinstance(source, int | np.integer):
        raise InputError(f"the source must be an integer vertex id, got {source!r}")
    return graph.vertex_index(source)


def _input_ids(graph: Graph, internal: np.ndarray) -> np.ndarray:
    """Maps internal vertex numbers (-1 kept) to the input's ids."""
    if not graph.attrs.relabelled:
        return internal
    out = np.full(len(internal), -1, dtype=np.int64)
    ok = internal >= 0
    out[ok] = graph.vertex_ids[internal[ok]]
    return out


def bfs(graph, source: int, *, predecessors: bool = False, config: EngineConfig | None = None,
        **options) -> BFSResult:
    """Breadth-first search levels from ``source`` (an input vertex id).

    Options are those of :class:`seraph.scheduler.EngineConfig` (schedule, predictor,
    diagram, device, device_memory, push_alpha, ...).
    """
    g = _as_graph(graph)
    config = config or make_config(**options)
    s = _source_index(g, source)
    values, stats, trace = execute(g, BFS, s, config)
    preds = None
    if predecessors:
        preds = _input_ids(g, tight_predecessors(g, values, s, BFS.weight_mode))
    levels = values  # int32 already, and ours: relabel the unreached in place (putmask:
    np.putmask(levels, levels == BFS.inf, -1)  # boolean-index assignment is ~10x slower)
    return BFSResult(levels, preds, stats, trace)


def sssp(graph, source: int, *, predecessors: bool = False, config: EngineConfig | None = None,
         **options) -> SSSPResult:
    """Single-source shortest path distances (float32) from ``source`` (an input vertex id)."""
    g = _as_graph(graph)
    if not g.weighted:
        raise InputError("SSSP needs edge weights but this graph is unweighted: use bfs() "
                         "for hop counts, or preprocess with --weights file|random:LO,HI")
    config = config or make_config(**options)
    s = _source_index(g, source)
    values, stats, trace = execute(g, SSSP, s, config)
    preds = None
    if predecessors:
        preds = _input_ids(g, tight_predecessors(g, values, s, SSSP.weight_mode))
    return SSSPResult(values, preds, stats, trace)


def connected_components(graph, *, config: EngineConfig | None = None,
                         **options) -> CCResult:
    """Connected components of a symmetric graph by min-label propagation: each vertex is
    labelled by the smallest vertex id of its component. When pages move, the highest
    out-degree vertex's component is reached first (see Run.components_from_hub)."""
    g = _as_graph(graph)
    if not g.symmetric:
        raise InputError("connected components need an undirected (symmetric) graph but this "
                         "store is directed: preprocess it with --symmetrize (or build it with "
                         "symmetrize=True) to get its weakly connected components")
    config = config or make_config(**options)
    values, stats, trace = execute(g, CC, None, config)
    # Each component is labelled by its smallest vertex, the one vertex that keeps its own id.
    roots = int(np.count_nonzero(values == np.arange(len(values), dtype=values.dtype)))
    return CCResult(_input_ids(g, values.astype(np.int64)), roots, stats, trace)


def run_config(path: str | os.PathLike | None, **overrides) -> EngineConfig:
    """A config file's settings with explicit options on top (the CLI's --config)."""
    base = load_config(path) if path else {}
    base.pop("source", None)
    if "diagram" in base and path:
        diagram = Path(base["diagram"])
        if not diagram.is_absolute() and (Path(path).parent / diagram).exists():
            base["diagram"] = str(Path(path).parent / diagram)
    base.update({k: v for k, v in overrides.items() if v is not None})
    return make_config(**base)
