"""The engine's entry: configuration, device choice, and :func:`execute`, which runs an
algorithm's spec to convergence on a graph. The public functions over it (``bfs``,
``sssp``, ``connected_components``, ``seraph.run``) are :mod:`seraph.algorithms`.

Results are NumPy arrays indexed by vertex (position i is the input vertex
``graph.vertex_ids[i]``), with the conventional sentinels: -1 for unreached levels and
predecessors, inf for unreached distances. Ids in results (predecessors, labels) are the
input's ids (:func:`input_ids`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import time
import tomllib
import warnings
from dataclasses import fields
from pathlib import Path

import numba
import numpy as np

from seraph import interrupts
from seraph.backends import backend_class
from seraph.backends.layout import Layout
from seraph.compiling import compile_seconds
from seraph.errors import ConfigError, DeviceError, DeviceWarning, InputError
from seraph.graph import Graph, open_graph
from seraph.paths import predecessors as tight_predecessors
from seraph.predictors import LATE_WEAK_DIAGRAM, WITH_DIAGRAM
from seraph.scheduler import EngineConfig, Run
from seraph.spec import Algorithm
from seraph.stats import RunStats, Trace
from seraph.units import parse_size


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
        opts["device_memory"] = parse_size(opts["device_memory"], "device_memory")
    try:
        cfg = EngineConfig(**opts)
    except TypeError as e:
        raise ConfigError(f"unknown engine option: {e}") from None
    cfg.check()
    return cfg


# -- devices --------------------------------------------------------------------------------
@functools.cache
def cuda_status() -> tuple[bool, str]:
    """Whether the CUDA backend can run here, and why not: asked once a process, since a
    failed import is not cached and would cost every CPU call a search of the path."""
    try:
        import cupy
    except ImportError:
        return False, "cupy is not installed (pip install 'seraph-graph[cuda13]' or '[cuda12]')"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # cupy raises its own runtime errors when no driver is present
        return False, f"no CUDA driver or device ({e})"
    if count == 0:
        return False, "no CUDA device is visible"
    try:
        backend_class("cuda")
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
    warnings.warn(f"no usable GPU ({why}); running on the CPU backend", DeviceWarning,
                  stacklevel=3)
    return "cpu"


# -- running ---------------------------------------------------------------------------------
def as_graph(graph) -> Graph:
    """A :class:`Graph`, or the store at a path opened as one."""
    if isinstance(graph, Graph):
        return graph
    if isinstance(graph, (str, os.PathLike)):
        return open_graph(graph)
    raise InputError(f"expected a seraph.Graph or a store path, got {type(graph).__name__}")


def execute(graph: Graph, algorithm: Algorithm, source: int | None, config: EngineConfig
            ) -> tuple[np.ndarray, RunStats, Trace]:
    """Runs an algorithm's plan (:class:`~seraph.spec.Plan`) to convergence; returns the
    values as the algorithm's :class:`~seraph.spec.Output` says. With several workers
    (``config.workers``, ``config.devices``) this process is one of them, and the call is
    collective over its MPI job (:mod:`seraph.distributed.engine`)."""
    with threads(config.threads):
        if config.partitioned:
            from seraph.distributed.engine import execute_partitioned

            return execute_partitioned(graph, algorithm, source, config, run_engine)
        return run_engine(graph, algorithm, source, config)


def threads(count: int | None) -> contextlib.AbstractContextManager:
    """Within: numba's kernels run on ``count`` threads (None: as many as before); the
    caller's count is restored after."""
    return contextlib.nullcontext() if count is None else _threads(count)


@contextlib.contextmanager
def _threads(count: int):
    before = numba.get_num_threads()
    numba.set_num_threads(count)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def run_engine(graph: Graph, algorithm: Algorithm, source: int | None, config: EngineConfig,
               make_run=Run, reserve: int = 0, ready=None) -> tuple[np.ndarray, RunStats, Trace]:
    """:func:`execute` in this process. A partitioned run's worker runs it on its part with
    three hooks: ``make_run`` makes the :class:`~seraph.scheduler.Run`, ``reserve`` bytes
    of the memory budget are left to what the run holds besides the backend (the
    exchange), and ``ready(layout)``, once the layout is known, returns the layout the
    plan is chosen by (the workers must all choose the same)."""
    start, compiled_before = time.perf_counter(), compile_seconds()
    device = resolve_device(config.device)
    backend_cls = backend_class(device)
    budget = config.device_memory
    if budget is None:
        budget = backend_cls.default_budget(graph)
    if budget is not None:
        budget -= reserve
    predictor, weak_after, layout = predictor_and_layout(graph, algorithm, config,
                                                         backend_cls, budget)
    table, initial_state = None, 0
    if predictor in WITH_DIAGRAM:
        from seraph.predictors import load_diagram

        diagram = load_diagram(config.diagram or (LATE_WEAK_DIAGRAM if weak_after else
                                                  algorithm.default_diagram))
        table, initial_state = diagram.table, diagram.initial
    stats = RunStats(algorithm=algorithm.name, device=device, schedule=config.schedule,
                     predictor="strong" if weak_after else predictor,
                     num_vertices=graph.num_vertices,
                     num_edges=graph.num_edges, num_pages=graph.num_pages,
                     num_slots=layout.num_slots, resident=layout.resident)
    trace = Trace(enabled=config.trace)
    plan_layout = layout if ready is None else ready(layout)
    plan = algorithm.plan(graph, plan_layout, config) if algorithm.plan else None
    plan = plan or algorithm.simple_plan(source)
    backend_cls.make_room(graph, layout)
    # Ctrl-C and SIGTERM stop the compiled work within a round (seraph.interrupts); the
    # backend is closed, its device and pinned memory given back, whatever ended the run.
    with interrupts.stoppable(), backend_cls.measuring_memory() as memory:
        backend = backend_cls.create(config, graph, plan.algorithm, layout, table,
                                     initial_state)
        try:
            backend.init_values(plan.source)
            run = make_run(graph, plan.algorithm, backend, config, predictor, stats, trace,
                           weak_after=weak_after)
            stats.setup_time = time.perf_counter() - start - \
                (compile_seconds() - compiled_before)
            plan.drive(run)
            done = time.perf_counter()
            values = backend.result(algorithm.output)
            stats.readback_time = time.perf_counter() - done
            if backend.upload_bytes:  # a resident graph's one upload
                stats.bytes_h2d += backend.upload_bytes
                stats.pages_transferred += graph.num_pages
        finally:
            backend.close()
            if compile_seconds() > compiled_before:
                # numba's type resolution keeps the exceptions it tried and discarded in
                # reference cycles, whose tracebacks hold this call's frames, and so the
                # device arrays among their locals, until the collector runs: the next
                # call would find less room than its budget says. Only a compiling call
                # makes them, and its compile dwarfs the collection.
                gc.collect()
    stats.peak_device_memory = memory.peak
    # A first call compiles kernels (once per install); the run's times leave that out.
    stats.compile_time = compile_seconds() - compiled_before
    stats.finish(time.perf_counter() - start - stats.compile_time,
                 graph.num_edges * layout.slot_bytes // max(1, graph.page_edges))
    return values, stats, trace


def predictor_and_layout(graph: Graph, algorithm: Algorithm, config: EngineConfig,
                         backend_cls, budget: int | None) -> tuple[str, int | None, Layout]:
    """The run's predictor, the dense rounds it runs before auto's weak half joins (None:
    it never does) and the run's layout.

    auto adds the weak history (:data:`~seraph.predictors.LATE_WEAK_DIAGRAM`) to the strong
    rule after :attr:`~seraph.spec.Algorithm.weak_after` dense rounds where the algorithm
    names that and the backend says it pays (``Backend.weak_pays``), and where the
    budget holds the weak state, a byte a vertex; otherwise auto is the algorithm's default,
    or no predictor where that is the weak one and the backend says it does not pay or
    the budget does not hold its state.
    """
    predictor = config.resolved_predictor(algorithm)
    if (config.predictor == "auto" and config.diagram is None and predictor == "strong"
            and algorithm.weak_after is not None and backend_cls.weak_pays(algorithm)):
        try:
            return ("combined", algorithm.weak_after,
                    Layout.for_run(graph, algorithm, "combined", budget))
        except DeviceError:
            pass  # no room for the weak state: the strong rule alone
    if config.predictor == "auto" and config.diagram is None and predictor == "weak":
        if not backend_cls.weak_pays(algorithm):
            return "none", None, Layout.for_run(graph, algorithm, "none", budget)
        try:
            return predictor, None, Layout.for_run(graph, algorithm, predictor, budget)
        except DeviceError:
            predictor = "none"  # no room for the weak state: no predictor
    return predictor, None, Layout.for_run(graph, algorithm, predictor, budget)


def execute_from(graph: Graph, algorithm: Algorithm, source, config: EngineConfig,
                 predecessors: bool) -> tuple[np.ndarray, np.ndarray | None, RunStats, Trace]:
    """Runs a single-source algorithm from ``source`` (an input vertex id); returns its
    values (as :func:`execute` does), the predecessors (input ids, when asked for), the
    stats and the trace."""
    s = source_index(graph, source)
    values, stats, trace = execute(graph, algorithm, s, config)
    preds = None
    if predecessors:
        engine_values = algorithm.output.engine_values(values, algorithm.inf)
        preds = input_ids(graph, tight_predecessors(graph, engine_values, s, algorithm.op))
    return values, preds, stats, trace


def source_index(graph: Graph, source) -> int:
    """The store's vertex number of ``source``, an input vertex id (checked)."""
    if source is None:
        raise InputError("a source vertex is required")
    # int() would silently truncate 1.5 or parse "1"; a vertex id is an integer.
    if isinstance(source, bool) or not isinstance(source, int | np.integer):
        raise InputError(f"the source must be an integer vertex id, got {source!r}")
    return graph.vertex_index(source)


def input_ids(graph: Graph, internal: np.ndarray) -> np.ndarray:
    """Maps internal vertex numbers (-1 kept) to the input's ids."""
    if not graph.attrs.relabelled:
        return internal
    out = np.full(len(internal), -1, dtype=np.int64)
    ok = internal >= 0
    out[ok] = graph.vertex_ids[internal[ok]]
    return out


def public_call(function):
    """Marks an algorithm's public function: its result's ``stats.call_time`` is then the
    whole call, what the user waits for, compiling left out as in ``wall_time``. A call
    that asks for several workers (``workers``, ``devices``, in its options or config)
    from outside an MPI job runs over them under ``mpiexec``
    (:func:`seraph.distributed.launch.call_in_job`); inside one, it is collective."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        start, compiled_before = time.perf_counter(), compile_seconds()
        count = _workers_to_start(kwargs)
        if count:
            from seraph.distributed.launch import call_in_job

            # pickled by its name
            result = call_in_job(call, args, kwargs, count, _job_threads(kwargs))
        else:
            result = function(*args, **kwargs)
        compiling = compile_seconds() - compiled_before
        result.stats.call_time = time.perf_counter() - start - compiling
        return result
    return call


def _workers_to_start(options: dict) -> int:
    """The worker processes to start for a call with these options: none where it asks for
    one process, or where this process is in an MPI job already (whose processes are the
    workers)."""
    config = options.get("config")
    workers = options.get("workers", getattr(config, "workers", None))
    devices = options.get("devices", getattr(config, "devices", None))
    if (workers or 1) <= 1 and devices is None:
        return 0
    from seraph.distributed import launch
    from seraph.distributed.mpi import in_job

    if in_job():
        return 0
    return launch.processes(config or make_config(workers=workers, devices=devices))


def _job_threads(options: dict) -> int | None:
    """The threads each worker of a call's job runs on (None: its share of the cores)."""
    return options.get("threads", getattr(options.get("config"), "threads", None))


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
