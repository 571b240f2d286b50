"""The ``seraph`` command line: preprocess, generate, info, run, demo, plot."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from seraph import __version__, progress
from seraph.algorithms import ALGORITHMS
from seraph.algorithms.pagerank import METHODS
from seraph.errors import ConfigError, DeviceWarning, SeraphError
from seraph.interrupts import called_from_compiled_code, send_again
from seraph.units import format_size, parse_size
from seraph.version import DISTRIBUTION


def _command_line(argv: Sequence[str] | None) -> str:
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["seraph", *args])


# -- preprocess / generate / info ---------------------------------------------------------
def _add_store_options(p: argparse.ArgumentParser) -> None:
    from partitioner.order import ORDERS
    from partitioner.writer import DEFAULT_PAGE_EDGES

    p.add_argument("-o", "--output", required=True, help="the store to write (a directory)")
    p.add_argument("--symmetrize", action="store_true", help="add the reverse of every edge")
    p.add_argument("--page-edges", type=int, default=DEFAULT_PAGE_EDGES,
                   help="edges per page, a power of two (default: 2^22); a graph with "
                        "fewer edges gets one page of its own size")
    p.add_argument("--memory", default=None,
                   help="host memory budget for partitioning, e.g. 4GiB (default: a quarter "
                        "of the RAM)")
    p.add_argument("--compress", action="store_true", help="blosc-lz4 compression (cold storage)")
    p.add_argument("--order", choices=ORDERS, default="input",
                   help="vertex order in the store: the input's; rcm (reverse "
                        "Cuthill-McKee), which puts neighbours at nearby ids (road "
                        "networks, meshes; renumbered in memory); or degree, hubs first "
                        "(power-law graphs). Results still name input ids")
    p.add_argument("--keep-duplicates", action="store_true", help="keep duplicate edges")
    p.add_argument("--keep-self-loops", action="store_true", help="keep self-loops")
    p.add_argument("--force", action="store_true",
                   help="replace an existing Seraph store at the output (nothing else)")
    p.add_argument("--seed", type=int, default=0, help="seed for generated graphs and weights")


def cmd_preprocess(args: argparse.Namespace) -> int:
    from partitioner.preprocess import preprocess

    _finish_once_committed()
    path = preprocess(args.input, args.output, format=args.format, weights=args.weights,
                      symmetrize=args.symmetrize, keep_duplicates=args.keep_duplicates,
                      keep_self_loops=args.keep_self_loops, page_edges=args.page_edges,
                      memory=_memory(args), compress=args.compress, order=args.order,
                      force=args.force, seed=args.seed, command=args.command_line)
    _print_summary(path)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from partitioner.generators import GENERATORS, gap_weights
    from partitioner.weights import parse_weight_spec
    from partitioner.writer import Options, write_store

    weights = gap_weights() if args.weighted else parse_weight_spec(args.weights)
    if args.kind == "grid":
        rows, cols = args.rows, args.cols
        if rows is None or cols is None:
            rows, cols = 1 << (args.scale // 2), 1 << (args.scale - args.scale // 2)
        source = GENERATORS["grid"](rows, cols, remove_fraction=args.remove, seed=args.seed,
                                    weights=weights)
    else:
        source = GENERATORS[args.kind](args.scale, args.edge_factor, seed=args.seed,
                                       weights=weights)
    options = Options(symmetrize=args.symmetrize, seed=args.seed,
                      keep_duplicates=args.keep_duplicates, keep_self_loops=args.keep_self_loops,
                      page_edges=args.page_edges,
                      memory=_memory(args), compress=args.compress, order=args.order)
    _finish_once_committed()
    path = write_store(source, args.output, options, force=args.force,
                       command=args.command_line)
    _print_summary(path)
    return 0


def _memory(args: argparse.Namespace) -> int | None:
    return None if args.memory is None else parse_size(args.memory, "--memory")


def _finish_once_committed() -> None:
    """From the moment its store is renamed into place, a signal no longer stops the
    command: the store is whole, and what is left is to say so and exit 0. Before, the
    signal stops it as ever, and nothing is left. (main() restores its handlers.)"""
    if threading.current_thread() is not threading.main_thread():
        return
    from seraph import temporaries

    committed = temporaries.commits()

    def interrupt_until_committed(signum: int, frame: FrameType | None) -> None:
        if temporaries.commits() == committed:
            _raise_interrupt(signum, frame)

    for signum in _INTERRUPTS:
        if signal.getsignal(signum) is _raise_interrupt:  # set by main(), which restores it
            signal.signal(signum, interrupt_until_committed)


def _print_summary(path) -> None:
    from seraph.store import Store

    a = Store(path).attrs
    progress.note(f"wrote {path}: {a.num_vertices:,} vertices, {a.num_edges:,} edges in "
                  f"{a.num_pages} pages; removed {a.self_loops_removed:,} self-loops and "
                  f"{a.duplicates_removed:,} duplicates")


def cmd_info(args: argparse.Namespace) -> int:
    from partitioner.preprocess import store_info

    info = store_info(args.store)
    if args.json:
        print(json.dumps(info, indent=2, default=str))
        return 0
    kind = "symmetric" if info["symmetric"] else "directed"
    weights = f"weighted ({info['weight_dtype']})" if info["weighted"] else "unweighted"
    lines = [
        f"store        {info['path']} (format version {info['format_version']})",
        f"vertices     {info['num_vertices']:,}" + (
            f"  (renumbered: {info['vertex_order']} order)" if info["vertex_order"] != "input"
            else "  (input ids relabelled)" if info["relabelled"] else ""),
        f"edges        {info['num_edges']:,}  {kind}, {weights}",
        f"pages        {info['num_pages']} of {info['page_edges']:,} edges, "
        f"compression {info['compression']}",
        "in-degree    max {max:,}  mean {mean:.2f}  zero {zero:,}".format(**info["in_degree"]),
        "out-degree   max {max:,}  mean {mean:.2f}  zero {zero:,}".format(**info["out_degree"]),
        f"removed      {info['self_loops_removed']:,} self-loops, "
        f"{info['duplicates_removed']:,} duplicates",
        "on disk      " + ", ".join(f"{k} {format_size(v)}"
                                    for k, v in info["bytes_on_disk"].items()),
    ]
    src = info["source"]
    origin = src.get("input") or src.get("generator") or "arrays"
    lines.append(f"source       {origin}")
    if "command" in src:
        lines.append(f"command      {src['command']}")
    if "created" in src:
        versions = ", ".join(f"{k} {v}" for k, v in src.get("versions", {}).items())
        lines.append(f"created      {src['created']} with {versions}")
    print("\n".join(lines))
    return 0


# -- run / demo ---------------------------------------------------------------------------
#: The algorithms' own options that ``run`` has flags for (:attr:`Entry.options`).
ALGORITHM_OPTIONS = ("damping", "tolerance", "max_iterations", "personalization", "method")


def run_algorithm(graph, algorithm: str, source, config, predecessors: bool = False,
                  algorithm_options: dict | None = None):
    """Runs one algorithm through the API (``source`` only where it takes one, and its own
    options, :attr:`Entry.options`); returns (result, main array)."""
    from seraph.algorithms import run

    options = {"predecessors": predecessors} if ALGORITHMS[algorithm].needs_source else {}
    res = run(graph, algorithm, ALGORITHMS[algorithm].source_for(source), config=config,
              **options, **(algorithm_options or {}))
    return res, res.values


def _reached(algorithm: str, values) -> int:
    """Vertices a source reached: those not holding the algorithm's unreached sentinel."""
    import numpy as np

    return int(np.count_nonzero(values != ALGORITHMS[algorithm].spec.unreached))


def _summary(algorithm: str, values) -> str:
    return ALGORITHMS[algorithm].summary(values)


#: What ``--output`` writes, by file name; a many-source run writes an .npz or a folder.
OUTPUT_SUFFIXES = (".npy", ".npz", ".parquet")


def _check_folder(flag: str, path: Path) -> None:
    folder = path.parent
    if not folder.is_dir():
        raise ConfigError(f"{flag} {path}: the directory {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"{flag} {path}: the directory {folder} is not writable")


def _check_output(path: Path) -> None:
    """``--output`` of a one-source run: a known file type in a writable folder, and
    pyarrow present for .parquet."""
    if path.suffix not in OUTPUT_SUFFIXES:
        raise ConfigError(f"--output {path}: use a .npy, .npz or .parquet file name")
    _check_folder("--output", path)
    if path.suffix == ".parquet":
        try:
            importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise ConfigError("--output .parquet needs pyarrow (pip install pyarrow); "
                              "or write .npy / .npz") from None


def _check_many_output(path: Path) -> bool:
    """``--output`` of a many-source run: an .npz, or a folder (an existing one, or a new
    name without a suffix) in a writable folder; returns whether it is a folder."""
    folder = path.is_dir() or (not path.suffix and not path.exists())
    if not folder and path.suffix != ".npz":
        raise ConfigError(f"--output {path}: several sources are written to an .npz file or "
                          "a folder (one .npy per source)")
    if not path.is_dir():
        _check_folder("--output", path)
    return folder


def _check_trace(path: Path) -> None:
    if path.suffix != ".json":
        raise ConfigError(f"--trace {path}: the trace is JSON; use a .json file name")
    _check_folder("--trace", path)


def _save(path: str, graph, values, preds) -> None:
    import numpy as np

    if path.endswith(".npy"):
        np.save(path, values)
    elif path.endswith(".npz"):
        extra = {} if preds is None else {"predecessors": preds}
        np.savez(path, vertex_id=graph.vertex_ids, value=values, **extra)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        cols = {"vertex_id": graph.vertex_ids, "value": values}
        if preds is not None:
            cols["predecessor"] = preds
        pq.write_table(pa.table(cols), path)


class _ManyOutput:
    """A many-source run's arrays (``source_<id>``, ``predecessors_<id>``), written as each
    run finishes so that they need not all be held: into an .npz (built as a temporary
    beside it and renamed into place at the end) or as .npy files in a folder. A run that
    fails or is interrupted removes what it wrote."""

    def __init__(self, path: Path, graph, names: list[str]):
        self.path, self.folder = path, _check_many_output(path)
        taken = [n for n in names if self.folder and (path / f"{n}.npy").exists()]
        if taken:
            raise ConfigError(f"--output {path}: {taken[0]}.npy is already there; choose an "
                              "empty or new folder")
        self.graph, self.written, self.created, self.zip = graph, [], False, None

    def __enter__(self) -> _ManyOutput:
        import zipfile

        if self.folder:
            self.created = not self.path.exists()
            self.path.mkdir(exist_ok=True)
        else:
            self.tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
            self.zip = zipfile.ZipFile(self.tmp, "w", allowZip64=True)
            self.add("vertex_id", self.graph.vertex_ids)
        return self

    def add(self, name: str, array) -> None:
        import numpy as np

        if self.zip is not None:
            with self.zip.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(array))
            return
        target = self.path / f"{name}.npy"
        self.written.append(target)
        np.save(target, array)

    def __exit__(self, kind, *_) -> None:
        if self.zip is not None:
            self.zip.close()
            if kind is None:
                os.replace(self.tmp, self.path)
            else:
                self.tmp.unlink(missing_ok=True)
        elif kind is not None:
            for target in self.written:
                target.unlink(missing_ok=True)
            if self.created:
                self.path.rmdir()


def _engine_options(args: argparse.Namespace, device_memory: int | None) -> dict:
    return {"schedule": args.schedule, "predictor": args.predictor, "diagram": args.diagram,
            "device": args.device, "device_memory": device_memory,
            "push_alpha": args.push_alpha, "push_on": args.push_on,
            "components": args.components, "trace": bool(args.trace) or None,
            "workers": args.workers, "devices": _parse_gpus(args.gpus),
            "threads": args.threads}


def _parse_gpus(text: str | None):
    """``--gpus``: ids separated by commas (0,1), a count (2: the first two) or all."""
    if text is None or text == "all":
        return text
    try:
        return tuple(int(p) for p in text.split(",") if p) if "," in text else int(text)
    except ValueError:
        raise ConfigError(f"--gpus {text}: give GPU ids separated by commas (0,1), a count "
                          "(2: the first two) or all") from None


#: Whether this process is a worker of a multi-worker run (:func:`_join_workers`), and
#: one other than the first, which prints for them all.
_worker = _follower = False


def _join_workers() -> None:
    """In a multi-worker run's MPI job, every worker but the first keeps quiet: no output,
    notes or error lines (the first prints the same). No worker prints that a signal
    stopped it: its guard (or the launcher) names the worker, or the process that started
    them all says it was interrupted."""
    global _worker, _follower
    from seraph.distributed.mpi import job_rank

    _worker = True
    if job_rank() not in (None, 0):
        _follower = True
        progress.set_verbosity(0)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (for the process's life)


def _run_on_workers(args: argparse.Namespace, graph, config, sources: list) -> int:
    """This command over its workers: ``mpiexec`` runs it again in each, where it finds
    itself in an MPI job (docs/design.md, "Many workers"). What the workers would refuse
    alike is refused here first, in one line."""
    from seraph.distributed import launch
    from seraph.distributed.engine import partitioned_config
    from seraph.distributed.parts import check_parts
    from seraph.distributed.spread import source_parallel

    count = launch.processes(config)
    if not source_parallel(len(sources), count):
        check_parts(graph, count, "--gpus" if config.devices is not None else "--workers")
        partitioned_config(config, ALGORITHMS[args.algorithm].spec)
    for source in sources:
        if source is not None:
            graph.vertex_index(source)
    return launch.run_command(args.argv, count, config.threads)


def _parse_sources(text: str) -> list[int]:
    try:
        sources = [int(part) for part in text.split(",")]
    except ValueError:
        raise ConfigError(f"--sources: cannot read {text!r}: give vertex ids separated by "
                          "commas, e.g. 1,5,9") from None
    if len(set(sources)) < len(sources):
        raise ConfigError(f"--sources {text}: a source is listed twice")
    return sources


def _algorithm_options(args: argparse.Namespace) -> dict:
    """The algorithm's own options given on the command line (:attr:`Entry.options`); one
    that the algorithm does not take is refused."""
    entry = ALGORITHMS[args.algorithm]
    given = {name: getattr(args, name) for name in ALGORITHM_OPTIONS
             if getattr(args, name) is not None}
    unknown = [name for name in given if name not in entry.options]
    if unknown:
        raise ConfigError(f"{args.algorithm} takes no --{unknown[0].replace('_', '-')}")
    return given


def _check_run_options(args: argparse.Namespace) -> bool:
    """Everything about ``run``'s options that can be refused before the store is opened;
    returns whether this is a many-source run."""
    many = args.sources is not None or args.random_sources is not None
    entry = ALGORITHMS[args.algorithm]
    if not entry.needs_source and (many or args.source is not None):
        why = entry.source_hint or "it labels every vertex"
        raise ConfigError(f"{args.algorithm} takes no source ({why}); drop "
                          "--source, --sources and --random-sources")
    options = _algorithm_options(args)
    if entry.check_options is not None:
        entry.check_options(**options)
    if many and args.trace:
        raise ConfigError("--trace records one run: give a single --source")
    if args.output and not many:
        _check_output(Path(args.output))
    if args.output and many:
        _check_many_output(Path(args.output))
    if args.trace:
        _check_trace(Path(args.trace))
    return many


def cmd_run(args: argparse.Namespace) -> int:
    try:
        return _cmd_run(args)
    except BaseException as error:
        from seraph.distributed.mpi import in_job

        if in_job():
            from seraph.distributed.engine import end_alone

            end_alone(error)  # a failure of this worker alone ends the whole job
        raise


def _cmd_run(args: argparse.Namespace) -> int:
    import seraph
    from seraph.api import load_config, run_config
    from seraph.distributed.mpi import in_job

    many = _check_run_options(args)
    sources = _parse_sources(args.sources) if args.sources is not None else None
    memory = None if args.gpu_memory is None else parse_size(args.gpu_memory, "--gpu-memory")
    config = run_config(args.config, **_engine_options(args, memory))
    if config.partitioned and in_job():
        _join_workers()
    graph = seraph.open_graph(args.store)
    if many:
        if sources is None:
            from seraph.sources import random_sources

            sources = random_sources(graph, args.random_sources, args.seed)
    else:
        source = args.source
        if source is None and args.config and ALGORITHMS[args.algorithm].needs_source:
            source = load_config(args.config).get("source")
        if source is None and ALGORITHMS[args.algorithm].needs_source:
            source = int(graph.vertex_ids[0])
    if config.partitioned and not in_job():
        return _run_on_workers(args, graph, config, sources if many else [source])
    return _run_many(args, graph, sources, config) if many else \
        _run_one(args, graph, source, config)


def _validate(graph, algorithm: str, values, source, predecessors,
              options: dict | None = None) -> str:
    """"ok", or what is wrong with the answer (the algorithm's O(m) verifier, any size),
    given the algorithm's own ``options`` of the run (vertices as input ids)."""
    from seraph.validate import verify

    src = source if source is None else graph.vertex_index(source)
    options = {name: graph.vertex_index(value)
               if name in ALGORITHMS[algorithm].vertex_options else value
               for name, value in (options or {}).items() if name != "max_iterations"}
    return verify(graph, algorithm, values, src, predecessors, **options) or "ok"


def _run_one(args: argparse.Namespace, graph, source, config) -> int:
    options = _algorithm_options(args)
    with progress.watch_rounds():
        res, values = run_algorithm(graph, args.algorithm, source, config, args.predecessors,
                                    options)
    preds = getattr(res, "predecessors", None)
    if _follower:
        return 0  # the first worker writes and prints
    if args.output:
        _save(args.output, graph, values, preds)
    if args.trace:
        res.trace.write(args.trace, res.stats)
    verdict = _validate(graph, args.algorithm, values, source, preds, options) \
        if args.validate else None
    st = res.stats
    if args.json:
        out = {"algorithm": args.algorithm, "store": str(args.store)}
        if source is not None:
            out["source"] = source
        out |= {"summary": _summary(args.algorithm, values), "stats": st.to_dict()}
        if verdict:
            out["validation"] = verdict
        print(json.dumps(out, indent=2, default=float))
    else:
        print(f"{args.algorithm} on {args.store}: {_summary(args.algorithm, values)} in "
              f"{st.call_time:.3f} s ({st.device}, {st.schedule}, predictor {st.predictor}; "
              f"engine {st.wall_time:.3f} s)")
        print(f"  rounds {st.rounds} (dense {st.dense_rounds}, sparse "
              f"{st.sparse_rounds}: bottom-up {st.bottom_up_rounds}), "
              f"sweeps {st.sweeps}, pages moved {st.pages_transferred}, "
              f"skipped {st.pages_skipped}")
        read = "" if st.edges_read is None else f", edges read {st.edges_read:,}"
        print(f"  updates attempted {st.updates_attempted:,}, succeeded "
              f"{st.updates_succeeded:,}, skipped by predictor "
              f"{st.skipped_strong + st.skipped_weak:,}, edges pushed {st.edges_pushed:,}, "
              f"pulled bottom-up {st.edges_pulled_bottom_up:,}{read}")
        if st.converged is not None:
            ended = "converged" if st.converged else "did not converge"
            print(f"  iterations {st.rounds}, {ended}: last change {st.change:.3g}")
        if verdict:
            print(f"  validation: {verdict}")
    return 1 if verdict not in (None, "ok") else 0


def _run_many(args: argparse.Namespace, graph, sources: list[int], config) -> int:
    """Runs every source on the one opened graph (its device caches kept between runs);
    prints a row per source as it finishes, then the median and the slowest time. Over
    workers, source-parallel where there are sources enough (:func:`_each_source`)."""
    import statistics
    import time

    names = [f"{kind}_{s}" for s in sources
             for kind in ("source", *(("predecessors",) if args.predecessors else ()))]
    # Checked on every worker, so that all refuse it alike; the first one writes it.
    output = _ManyOutput(Path(args.output), graph, names) if args.output else None
    for source in sources:
        graph.vertex_index(source)  # a bad id fails before the first run, not in its own
    runs = []
    table = None if args.json or _follower else _Table(args, graph, sources)
    start = time.perf_counter()
    with output if output is not None and not _follower else contextlib.nullcontext():
        for run, stats, values, preds in _each_source(args, graph, sources, config):
            if output and not _follower:
                output.add(f"source_{run['source']}", values)
                if args.predecessors:
                    output.add(f"predecessors_{run['source']}", preds)
            runs.append((run, stats))
            if table is not None:
                table.row(run)
    if _follower:
        return 0  # the first worker prints
    times = [run["time"] for run, _ in runs]
    summary = {"sources": len(runs), "median_time": statistics.median(times),
               "max_time": max(times), "seconds": time.perf_counter() - start}
    if table is None:
        out = {"algorithm": args.algorithm, "store": str(args.store),
               "runs": [run | {"stats": st.to_dict()} for run, st in runs], "summary": summary}
        print(json.dumps(out, indent=2, default=float))
    else:
        table.summary(summary)
    failed = any(run.get("validation", "ok") != "ok" for run, _ in runs)
    return 1 if failed else 0


def _each_source(args: argparse.Namespace, graph, sources: list[int], config):
    """(run's figures, stats, values, predecessors) of each source in turn, its answer
    validated where asked (the arrays only where ``--output`` keeps them). In one process,
    or partitioned over the workers, the sources run one after another; source-parallel
    (:func:`seraph.distributed.spread.source_parallel`), each worker runs its share on
    the whole graph and validates it, and the first gets them all in order."""
    parallel = False
    if config.partitioned:
        from seraph.distributed import mpi, spread

        parallel = spread.source_parallel(len(sources), mpi.world().size)
    one_config = spread.one_process_config(config) if parallel else config
    position = {source: i for i, source in enumerate(sources, 1)}

    def run_one(source):
        with progress.watch_rounds(f"source {source} ({position[source]}/{len(sources)}): "):
            res, values = run_algorithm(graph, args.algorithm, source, one_config,
                                        args.predecessors)
        run = {"source": source, "time": res.stats.call_time,
               "reached": _reached(args.algorithm, values), "rounds": res.stats.rounds,
               "pages_transferred": res.stats.pages_transferred}
        if parallel:
            run["worker"] = mpi.world().rank
        if args.validate and (parallel or not _follower):
            run["validation"] = _validate(graph, args.algorithm, values, source,
                                          res.predecessors)
        kept = args.output is not None
        return (run, res.stats, values if kept else None,
                res.predecessors if kept else None)

    if parallel:
        return spread.run_sources(sources, run_one, config)
    return map(run_one, sources)


class _Table:
    """A many-source run's table, a row printed as each source finishes: the columns are
    as wide as the largest values the graph allows (a wider one shifts its row)."""

    def __init__(self, args: argparse.Namespace, graph, sources: list[int]):
        self.validate = args.validate
        head = ["source", "time s", "reached", "rounds", "pages moved"]
        if args.validate:
            head.append("checked")
        widest = [max([len("median"), *(len(str(s)) for s in sources)]), len("999.999"),
                  len(f"{graph.num_vertices:,}"), len("99999"),
                  len(f"{99 * graph.num_pages:,}"), len("ok")]
        self.widths = [max(len(h), w) for h, w in zip(head, widest, strict=False)]
        print(f"{args.algorithm} on {args.store}: {len(sources)} sources")
        self.print(head)

    def row(self, run: dict) -> None:
        self.print([str(run["source"]), f"{run['time']:.3f}", f"{run['reached']:,}",
                    str(run["rounds"]), f"{run['pages_transferred']:,}",
                    *([run["validation"]] if self.validate else [])])

    def summary(self, summary: dict) -> None:
        self.print(["median", f"{summary['median_time']:.3f}"])
        self.print(["max", f"{summary['max_time']:.3f}"])

    def print(self, cells: list[str]) -> None:
        print("  ".join(c.ljust(w) for c, w in zip(cells, self.widths, strict=False)).rstrip(),
              flush=True)


def _without_compiling(start: float, compiled_before: float) -> str:
    """The time since ``start``, with the kernel compiling since then shown apart."""
    import time

    from seraph.compiling import compile_seconds

    compiled = compile_seconds() - compiled_before
    text = f"{time.perf_counter() - start - compiled:.2f} s"
    return f"{text} (+{compiled:.1f} s compiling kernels)" if compiled >= 0.05 else text


#: What the demo runs: the first run compiles the kernels of each algorithm it calls, and a
#: newcomer's first run should stay short (the others run by name, ``seraph run``).
DEMO_ALGORITHMS = ("bfs", "cc", "sssp")


def cmd_demo(args: argparse.Namespace) -> int:
    import tempfile
    import time
    from pathlib import Path

    import numpy as np

    import seraph
    from partitioner.generators import gap_weights, rmat
    from partitioner.writer import Options, write_store
    from seraph.api import make_config, resolve_device
    from seraph.compiling import NOTE_AFTER, a_core_is_idle, compile_seconds, compiled_beside
    from seraph.validate import verify

    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory(prefix="seraph-demo-") as tmp:
        store = Path(tmp) / "rmat.zarr"
        t, c = time.perf_counter(), compile_seconds()
        write_store(rmat(args.scale, 16, seed=1, weights=gap_weights()), store,
                    Options(symmetrize=True, page_edges=args.page_edges), command="seraph demo")
        fresh = compile_seconds() - c > NOTE_AFTER  # kernels are compiling: a fresh install
        graph = seraph.open_graph(store)
        progress.note(f"generated a symmetric weighted RMAT (scale {args.scale}): "
                      f"{graph.num_vertices:,} vertices, {graph.num_edges:,} edges in "
                      f"{graph.num_pages} pages, {_without_compiling(t, c)}")
        # A budget of a quarter of the pages (plus the vertex state) makes the graph page
        # through the slots, as a graph larger than GPU memory would.
        from seraph.backends.layout import Layout

        layout = Layout.plan(graph, weak=True, budget=None)
        budget = layout.state_bytes + max(2, graph.num_pages // 4) * layout.slot_bytes
        source = int(np.argmax(graph.out_degrees()))
        config = make_config(device=device, device_memory=budget)
        # On a fresh install each algorithm's first call and check compile their kernels
        # (numba, and NVRTC on a GPU; both cached on disk after), which would swamp the
        # table's times. On the CPU, with a core idle, a second process compiles the last
        # one's meanwhile (seraph.compiling).
        ahead = (compiled_beside("seraph.cli", "_compile_ahead", str(store), str(source),
                                 str(budget), DEMO_ALGORITHMS[-1])
                 if fresh and device == "cpu" and a_core_is_idle()
                 else contextlib.nullcontext())
        with ahead:
            t, c = time.perf_counter(), compile_seconds()
            for alg in DEMO_ALGORITHMS:
                _, values = run_algorithm(graph, alg, source, config)
                verify(graph, alg, values, ALGORITHMS[alg].source_for(source))
            progress.note(f"first runs, untimed below: {_without_compiling(t, c)}")
            rows, failed = [], False
            for alg in DEMO_ALGORITHMS:
                res, values = run_algorithm(graph, alg, source, config)
                verdict = verify(graph, alg, values, ALGORITHMS[alg].source_for(source))
                failed |= verdict is not None
                st = res.stats
                rows.append((alg.upper(), f"{st.call_time:.3f}", str(st.rounds),
                             str(st.pages_transferred),
                             f"{st.skipped_strong + st.skipped_weak:,}", _summary(alg, values),
                             "ok" if verdict is None else "WRONG"))
                if verdict:
                    print(f"seraph demo: {alg}'s answer is wrong: {verdict}", file=sys.stderr)
    head = ("algorithm", "time s", "rounds", "pages moved", "skipped by predictor", "result",
            "checked")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    print(f"Seraph demo on the {device} backend, budget {format_size(budget)} "
          f"({graph.num_pages} pages, source {source})")
    for row in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return 1 if failed else 0


def _compile_ahead(store: str, source: str, budget: str, *algorithms: str) -> None:
    """What a fresh install's ``seraph demo`` runs in a second process
    (seraph.compiling.compiled_beside): the demo's first run and check of ``algorithms``,
    whose kernels it so compiles into the shared cache while the demo compiles those of
    the algorithms before them."""
    import seraph
    from seraph.api import make_config
    from seraph.validate import verify

    graph = seraph.open_graph(store)
    config = make_config(device="cpu", device_memory=int(budget))
    for alg in algorithms:
        _, values = run_algorithm(graph, alg, int(source), config)
        verify(graph, alg, values, ALGORITHMS[alg].source_for(int(source)))


# -- plot ---------------------------------------------------------------------------------
def cmd_plot(args: argparse.Namespace) -> int:
    from seraph.plot import plot

    output = args.output or str(Path(args.trace).with_suffix(".png"))
    path, tl = plot(args.trace, output)
    progress.note(f"wrote {path}: {len(tl.pages)} page lanes, "
                  f"{sum(map(len, tl.copies.values()))} copies, "
                  f"{len(tl.sparse_spans)} sparse rounds, "
                  f"{len(tl.predictor_states)} rounds of predictor states")
    return 0


# -- parser -------------------------------------------------------------------------------
class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples' line breaks, and ends each option's help with its default.

    An option whose default is None (the engine's, a config file's, or computed) says its
    default in its own words, as does one whose default needs explaining."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        # Identity, not ==: a default of 0 is worth stating, a flag's False is not.
        if "(default" in text or not action.option_strings or action.required or \
                any(action.default is d for d in (None, False, argparse.SUPPRESS)):
            return text
        return f"{text} (default: %(default)s)"


#: The examples each subcommand's --help ends with.
EXAMPLES = {
    "preprocess": ["seraph preprocess soc-LiveJournal1.txt.gz -o lj.zarr --symmetrize",
                   "seraph preprocess roads.wel -o roads.zarr --memory 8GiB",
                   "seraph preprocess web.mtx -o web.zarr --weights random:1,255 --force"],
    "generate": ["seraph generate rmat --scale 22 --weighted --symmetrize -o rmat22.zarr",
                 "seraph generate grid --rows 1000 --cols 1000 --remove 0.1 -o grid.zarr"],
    "info": ["seraph info lj.zarr", "seraph info lj.zarr --json"],
    "run": ["seraph run bfs lj.zarr --source 0 --validate",
            "seraph run sssp rmat22.zarr --random-sources 16 --output dists.npz",
            "seraph run cc lj.zarr --gpu-memory 4GiB --trace t.json"],
    "demo": ["seraph demo", "seraph demo --scale 16 --device cpu"],
    "plot": ["seraph run bfs g.zarr --gpu-memory 1GiB --trace t.json",
             "seraph plot t.json -o timeline.svg"],
}


def _subcommand(sub, name: str, help: str, parents: list) -> argparse.ArgumentParser:
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[name])
    return sub.add_parser(name, parents=parents, help=help, epilog=epilog,
                          formatter_class=_HelpFormatter)


def build_parser() -> argparse.ArgumentParser:
    from partitioner.readers import FORMATS
    from seraph.predictors import PREDICTORS
    from seraph.scheduler import COMPONENTS, PUSH_ON, SCHEDULES, EngineConfig

    parser = argparse.ArgumentParser(
        prog="seraph", description="Graph analytics for graphs larger than GPU memory.",
        formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"{DISTRIBUTION} {__version__}")
    verbosity = argparse.ArgumentParser(add_help=False)
    verbosity.add_argument("-q", "--quiet", action="store_true",
                           help="no progress, live status or notes")
    verbosity.add_argument("-v", "--verbose", action="store_true",
                           help="more detail (run: a line per round)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = _subcommand(sub, "preprocess", "turn an input into a store", [verbosity])
    p.add_argument("input", help="edge list (.txt/.el/.wel), .mtx or .npz; .gz/.bz2/.xz ok")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS),
                   help="the input's format; auto tells it from the file name")
    p.add_argument("--weights", default="auto", help="auto | none | file | random:LO,HI")
    _add_store_options(p)
    p.set_defaults(func=cmd_preprocess)

    p = _subcommand(sub, "generate", "generate a graph into a store", [verbosity])
    p.add_argument("kind", choices=("rmat", "uniform", "grid"))
    p.add_argument("--scale", type=int, default=16, help="log2 of the vertex count")
    p.add_argument("--edge-factor", type=int, default=16, help="edges per vertex (rmat, uniform)")
    p.add_argument("--rows", type=int, help="grid rows (default: from --scale)")
    p.add_argument("--cols", type=int, help="grid columns (default: from --scale)")
    p.add_argument("--remove", type=float, default=0.0,
                   help="grid: fraction of lattice edges removed")
    p.add_argument("--weighted", action="store_true",
                   help="integer weights uniform in [1, 255] (the GAP convention)")
    p.add_argument("--weights", default="none", help="none | random:LO,HI")
    _add_store_options(p)
    p.set_defaults(func=cmd_generate)

    p = _subcommand(sub, "info", "describe a store", [verbosity])
    p.add_argument("store")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)

    engine = EngineConfig()
    p = _subcommand(sub, "run", f"run {', '.join(ALGORITHMS)} on a store", [verbosity])
    p.add_argument("algorithm", choices=tuple(ALGORITHMS))
    p.add_argument("store")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--source", type=int,
                       help="source vertex, an input id (default: the config file's source, "
                            "else the first vertex; cc takes none)")
    which.add_argument("--sources", metavar="ID,ID,...",
                       help="run each of these sources on the graph loaded once, and print "
                            "a row per source and the median and max time (default: one "
                            "source)")
    which.add_argument("--random-sources", type=int, metavar="K",
                       help="as --sources, with K distinct random vertices that have an "
                            "edge (default: one source)")
    p.add_argument("--seed", type=int, default=0, help="the seed of --random-sources")
    p.add_argument("--device", default=None, choices=("auto", "cuda", "cpu"),
                   help=f"where to run (default: {engine.device}: the GPU when usable)")
    p.add_argument("--gpu-memory", "--device-memory", dest="gpu_memory", default=None,
                   help="device memory budget, e.g. 4GiB; smaller than the graph forces "
                        "paging (default: most of the GPU's free memory; no cap on the CPU)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="split the graph's pages among N CPU worker processes, started by "
                        "mpiexec (or run as the ranks of your own mpiexec job); needs "
                        "pip install 'seraph-graph[mpi]' (default: this process alone)")
    p.add_argument("--gpus", default=None, metavar="IDS|N|all",
                   help="split the graph's pages among GPUs, one worker process each: ids "
                        "(0,1), a count (2: the first two) or all; --gpu-memory is each "
                        "GPU's (default: one GPU)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads for the run's kernels, at most NUMBA_NUM_THREADS (with "
                        "--workers: each worker's) (default: every core numba has)")
    p.add_argument("--schedule", default=None, choices=SCHEDULES,
                   help=f"how rounds are cut into windows (default: {engine.schedule})")
    p.add_argument("--predictor", default=None, choices=PREDICTORS,
                   help=f"which vertices to skip (default: {engine.predictor}: strong, or "
                        "weak with --diagram; combined: strong, then weak where the strong "
                        "rule cannot decide)")
    p.add_argument("--diagram", default=None,
                   help="weak-predictor diagram, a name or TOML file; refused with --predictor "
                        "strong or none (default, when the predictor is weak or combined: "
                        "seraph; weak-delta for pagerank --method delta)")
    p.add_argument("--push-alpha", type=float, default=None,
                   help="push engine when frontier out-edges < m/alpha; 0 disables (default: "
                        "20; 2 for SSSP on the CPU)")
    p.add_argument("--push-on", default=None, choices=PUSH_ON,
                   help=f"where a GPU run's push rounds run (default: {engine.push_on})")
    p.add_argument("--components", default=None, choices=COMPONENTS,
                   help="how cc runs: union-find, or label propagation over the pages "
                        "(default: union-find)")
    p.add_argument("--config", default=None,
                   help="run settings from a TOML file; options given here win (default: none)")
    p.add_argument("--damping", type=float, default=None,
                   help="pagerank: the probability of following an out-edge (default: 0.85)")
    p.add_argument("--tolerance", type=float, default=None,
                   help="pagerank: stop once an iteration changes the ranks by less than this "
                        "in L1 (default: 1e-6)")
    p.add_argument("--max-iterations", type=int, default=None,
                   help="pagerank: stop after this many iterations, converged or not "
                        "(default: 100)")
    p.add_argument("--personalization", type=int, default=None, metavar="V",
                   help="pagerank: personalised to vertex V (an input id), where every jump "
                        "goes (default: none, jumps are uniform)")
    p.add_argument("--method", default=None, choices=METHODS,
                   help="pagerank: power iteration; PageRank-delta, whose rounds attempt "
                        "only vertices whose in-neighbours moved and take --predictor weak; "
                        "or Gauss-Seidel sweeps, as GAP's pr (default: power)")
    p.add_argument("--predecessors", action="store_true", help="also compute predecessors")
    p.add_argument("--output",
                   help="write the result to .npy, .npz or .parquet; with several sources "
                        "to an .npz or a folder (default: not written)")
    p.add_argument("--validate", action="store_true",
                   help="check the answer (and predecessors) with the algorithm's verifier, "
                        "O(m) at any size; exit 1 if it is wrong")
    p.add_argument("--json", action="store_true", help="print stats as JSON")
    p.add_argument("--trace", help="write a JSON timeline of copies and sweeps to this .json "
                                   "file (default: none)")
    p.set_defaults(func=cmd_run)

    p = _subcommand(sub, "demo", "the quickstart: generate, run, check", [verbosity])
    p.add_argument("--scale", type=int, default=14, help="RMAT scale of the demo graph")
    p.add_argument("--page-edges", type=int, default=1 << 14, help="edges per page")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"),
                   help="where to run")
    p.set_defaults(func=cmd_demo)

    p = _subcommand(sub, "plot", "draw a trace (from run --trace) as a timeline picture",
                    [verbosity])
    p.add_argument("trace", help="the JSON file written by `seraph run ... --trace FILE`")
    p.add_argument("-o", "--output", default=None,
                   help="the picture to write, .png, .svg or .pdf (default: the trace's "
                        "name with .png)")
    p.set_defaults(func=cmd_plot)

    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Shows the engine's device notices as one line of their own; other warnings as
    Python would."""
    if issubclass(category, DeviceWarning):
        progress.note(f"note: {message}")
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


class Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt so that every cleanup runs."""


#: What each signal main() handles raises.
_INTERRUPTS: dict[int, type[BaseException]] = {signal.SIGINT: KeyboardInterrupt,
                                               signal.SIGTERM: Terminated}


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    """Raises the signal's interrupt, unless numba-compiled code is running ``frame``:
    there it is sent again, to land once the kernel has returned (see
    :mod:`seraph.interrupts`: raised there, it would leave a NULL in the result the caller
    unpacks, a segfault)."""
    if called_from_compiled_code(frame):
        _send_again(signum)
        return
    raise _INTERRUPTS[signum]


_send_again = send_again


def _interruption(error: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or Terminated behind ``error``, if any. A signal handled while
    numba-compiled code runs surfaces as a SystemError whose cause is the interrupt."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, (KeyboardInterrupt, Terminated)):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _redeliver_interrupts(hook):
    """An unraisable-exception hook that re-sends an interrupt Python had to drop.

    A signal handled while C code calls back into Python (a finalizer, a ctypes callback)
    raises where the exception cannot propagate: Python prints it and goes on. The signal
    is sent again a moment later, and lands in code that can unwind; other unraisable
    exceptions go to ``hook``. (numba's callbacks are kept out of this: signals wait while
    it compiles, see seraph.compiling.)"""
    def handle(unraisable) -> None:
        error = unraisable.exc_value
        if isinstance(error, (KeyboardInterrupt, Terminated)):
            _send_again(signal.SIGTERM if isinstance(error, Terminated) else signal.SIGINT)
        else:
            hook(unraisable)
    return handle


def main(argv: Sequence[str] | None = None) -> int:
    # Only the main thread may set handlers; main() called from another thread keeps
    # the ones it finds. A signal the caller ignores (nohup, a background job) stays so.
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = ({signum: signal.signal(signum, _raise_interrupt) for signum in _INTERRUPTS
                 if signal.getsignal(signum) is not signal.SIG_IGN} if in_main_thread else {})
    previous_hook, sys.unraisablehook = sys.unraisablehook, _redeliver_interrupts(
        sys.unraisablehook)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)
        args.command_line = _command_line(argv)
        progress.set_verbosity(0 if args.quiet else 2 if args.verbose else 1)
        from seraph.compiling import (
            TICK_EVERY,
            announce_compiling,
            interrupts_held_while_compiling,
        )

        # The count of kernels compiled so far, every few seconds: on a terminal, or with -v.
        ticking = sys.stderr.isatty() or args.verbose
        announce_compiling(progress.note, every=TICK_EVERY if ticking else None)
        with warnings.catch_warnings(), interrupts_held_while_compiling():
            warnings.showwarning = _show_warning
            code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except SeraphError as e:
        if not _follower:
            print(f"seraph: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (e.g. `head`) has what it wanted. Python would still flush stdout at
        # exit and complain about the pipe, so it is pointed at devnull (the Python docs'
        # recipe); 141 is the status of a process SIGPIPE ended, as a shell reports it.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except BaseException as e:
        interrupt = _interruption(e)
        if interrupt is None:
            raise
        what, code = (("terminated", 143) if isinstance(interrupt, Terminated)
                      else ("interrupted", 130))
        if not _worker:
            print(f"seraph: {what}; no partial output was left behind", file=sys.stderr)
        return code
    finally:
        sys.unraisablehook = previous_hook
        for signum, handler in previous.items():  # a handler set outside Python reads as None
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)


if __name__ == "__main__":
    sys.exit(main())
