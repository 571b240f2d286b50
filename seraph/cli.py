"""The ``seraph`` command line: preprocess, generate, info, run, demo, plot."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence

from seraph import progress
from seraph.algorithms import ALGORITHMS
from seraph.compiling import announce_compiling, compile_seconds
from seraph.errors import SeraphError
from seraph.units import format_size, parse_size


def _command_line(argv: Sequence[str] | None) -> str:
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["seraph", *args])


# -- preprocess / generate / info ---------------------------------------------------------
def _add_store_options(p: argparse.ArgumentParser) -> None:
    from partitioner.writer import DEFAULT_PAGE_EDGES

    p.add_argument("-o", "--output", required=True, help="the store to write (a directory)")
    p.add_argument("--symmetrize", action="store_true", help="add the reverse of every edge")
    p.add_argument("--page-edges", type=int, default=DEFAULT_PAGE_EDGES,
                   help="edges per page, a power of two (default 2^22)")
    p.add_argument("--memory", default=None,
                   help="host memory budget for partitioning, e.g. 4GiB (default: RAM/4)")
    p.add_argument("--compress", action="store_true", help="blosc-lz4 compression (cold storage)")
    p.add_argument("--keep-duplicates", action="store_true", help="keep duplicate edges")
    p.add_argument("--keep-self-loops", action="store_true", help="keep self-loops")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    p.add_argument("--seed", type=int, default=0, help="seed for generated graphs and weights")


def cmd_preprocess(args: argparse.Namespace) -> int:
    from partitioner.preprocess import preprocess

    path = preprocess(args.input, args.output, format=args.format, weights=args.weights,
                      symmetrize=args.symmetrize, keep_duplicates=args.keep_duplicates,
                      keep_self_loops=args.keep_self_loops, page_edges=args.page_edges,
                      memory=args.memory, compress=args.compress, force=args.force,
                      seed=args.seed, command=args.command_line)
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
                      memory=None if args.memory is None else parse_size(args.memory),
                      compress=args.compress)
    path = write_store(source, args.output, options, force=args.force,
                       command=args.command_line)
    _print_summary(path)
    return 0


def _print_summary(path) -> None:
    from partitioner.preprocess import store_info

    info = store_info(path)
    progress.note(f"wrote {path}: {info['num_vertices']:,} vertices, {info['num_edges']:,} "
                  f"edges in {info['num_pages']} pages; removed "
                  f"{info['self_loops_removed']:,} self-loops and "
                  f"{info['duplicates_removed']:,} duplicates")


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
        f"vertices     {info['num_vertices']:,}" + ("  (input ids relabelled)"
                                                   if info["relabelled"] else ""),
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
def run_algorithm(graph, algorithm: str, source, config, predecessors: bool = False):
    """Runs one algorithm through the API; returns (result, main array)."""
    import seraph

    if algorithm == "bfs":
        res = seraph.bfs(graph, source, predecessors=predecessors, config=config)
        return res, res.levels
    if algorithm == "sssp":
        res = seraph.sssp(graph, source, predecessors=predecessors, config=config)
        return res, res.distances
    res = seraph.connected_components(graph, config=config)
    return res, res.labels


def _summary(algorithm: str, values) -> str:
    import numpy as np

    if algorithm == "cc":
        return f"{len(np.unique(values)):,} components"
    reached = int((values >= 0).sum() if algorithm == "bfs" else np.isfinite(values).sum())
    return f"{reached:,} reached"


def _save(path: str, graph, values, preds) -> None:
    import numpy as np

    from seraph.errors import ConfigError

    if path.endswith(".npy"):
        np.save(path, values)
    elif path.endswith(".npz"):
        extra = {} if preds is None else {"predecessors": preds}
        np.savez(path, vertex_id=graph.vertex_ids, value=values, **extra)
    elif path.endswith(".parquet"):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ConfigError("--output .parquet needs pyarrow (pip install pyarrow); "
                              "or write .npy / .npz") from None
        cols = {"vertex_id": graph.vertex_ids, "value": values}
        if preds is not None:
            cols["predecessor"] = preds
        pq.write_table(pa.table(cols), path)
    else:
        raise ConfigError(f"--output {path}: use a .npy, .npz or .parquet file name")


def _engine_options(args: argparse.Namespace) -> dict:
    return {"schedule": args.schedule, "predictor": args.predictor, "diagram": args.diagram,
            "device": args.device, "device_memory": args.gpu_memory,
            "push_alpha": args.push_alpha, "push_on": args.push_on,
            "trace": bool(args.trace) or None}


def cmd_run(args: argparse.Namespace) -> int:
    import seraph
    from seraph.api import load_config, run_config
    from seraph.validate import check

    graph = seraph.open_graph(args.store)
    source = args.source
    if source is None and args.config:
        source = load_config(args.config).get("source")
    if source is None and args.algorithm != "cc":
        source = int(graph.vertex_ids[0])
    config = run_config(args.config, **_engine_options(args))
    res, values = run_algorithm(graph, args.algorithm, source, config, args.predecessors)
    preds = getattr(res, "predecessors", None)
    if args.output:
        _save(args.output, graph, values, preds)
    if args.trace:
        res.trace.write(args.trace, res.stats)
    verdict = None
    if args.validate:
        src = None if args.algorithm == "cc" else graph.vertex_index(source)
        verdict = check(graph, args.algorithm, values, src) or "ok"
    st = res.stats
    if args.json:
        out = {"algorithm": args.algorithm, "store": str(args.store), "source": source,
               "summary": _summary(args.algorithm, values), "stats": st.to_dict()}
        if verdict:
            out["validation"] = verdict
        print(json.dumps(out, indent=2, default=float))
    else:
        print(f"{args.algorithm} on {args.store}: {_summary(args.algorithm, values)} in "
              f"{st.wall_time:.3f} s ({st.device}, {st.schedule}, predictor {st.predictor})")
        print(f"  rounds {st.rounds} (dense {st.dense_rounds}, sparse "
              f"{st.sparse_rounds}: bottom-up {st.bottom_up_rounds}), "
              f"sweeps {st.sweeps}, pages moved {st.pages_transferred}, "
              f"skipped {st.pages_skipped}")
        print(f"  updates attempted {st.updates_attempted:,}, succeeded "
              f"{st.updates_succeeded:,}, skipped by predictor "
              f"{st.skipped_strong + st.skipped_weak:,}, edges pushed {st.edges_pushed:,}, "
              f"pulled bottom-up {st.edges_pulled_bottom_up:,}")
        if verdict:
            print(f"  validation against scipy: {verdict}")
    return 1 if verdict not in (None, "ok") else 0


def _without_compiling(start: float, compiled_before: float) -> str:
    """The time since ``start``, with the kernel compiling since then shown apart."""
    compiled = compile_seconds() - compiled_before
    text = f"{time.perf_counter() - start - compiled:.2f} s"
    return f"{text} (+{compiled:.1f} s compiling kernels)" if compiled >= 0.05 else text


def cmd_demo(args: argparse.Namespace) -> int:
    import tempfile
    from pathlib import Path

    import numpy as np

    import seraph
    from partitioner.generators import gap_weights, rmat
    from partitioner.writer import Options, write_store
    from seraph.api import make_config, resolve_device
    from seraph.validate import check

    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory(prefix="seraph-demo-") as tmp:
        store = Path(tmp) / "rmat.zarr"
        t, c = time.perf_counter(), compile_seconds()
        write_store(rmat(args.scale, 16, seed=1, weights=gap_weights()), store,
                    Options(symmetrize=True, page_edges=args.page_edges), command="seraph demo")
        graph = seraph.open_graph(store)
        progress.note(f"generated a symmetric weighted RMAT (scale {args.scale}): "
                      f"{graph.num_vertices:,} vertices, {graph.num_edges:,} edges in "
                      f"{graph.num_pages} pages, {_without_compiling(t, c)}")
        # A budget of a quarter of the pages (plus the vertex state) makes the graph page
        # through the slots, as a graph larger than GPU memory would.
        from seraph.backends.base import Layout

        layout = Layout.plan(graph, weak=True, budget=None)
        budget = layout.state_bytes + max(2, graph.num_pages // 4) * layout.slot_bytes
        source = int(np.argmax(graph.out_degrees()))
        config = make_config(device=device, device_memory=budget)
        # On a fresh install each algorithm's first call compiles its kernels (numba, and
        # NVRTC on a GPU; both cached on disk after), which would swamp the table's times.
        t, c = time.perf_counter(), compile_seconds()
        for alg in ALGORITHMS:
            run_algorithm(graph, alg, source, config)
        progress.note(f"first runs, untimed below: {_without_compiling(t, c)}")
        rows, failed = [], False
        for alg in ALGORITHMS:
            res, values = run_algorithm(graph, alg, source, config)
            verdict = check(graph, alg, values, None if alg == "cc" else source)
            failed |= verdict is not None
            st = res.stats
            rows.append((alg.upper(), f"{st.wall_time:.3f}", str(st.rounds),
                         str(st.pages_transferred), f"{st.skipped_strong + st.skipped_weak:,}",
                         _summary(alg, values), "ok" if verdict is None else "FAILED"))
            if verdict:
                print(f"seraph demo: {alg} does not match scipy: {verdict}", file=sys.stderr)
    head = ("algorithm", "time s", "rounds", "pages moved", "skipped by predictor", "result",
            "vs scipy")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    print(f"Seraph demo on the {device} backend, budget {format_size(budget)} "
          f"({graph.num_pages} pages, source {source})")
    for row in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return 1 if failed else 0


# -- plot ---------------------------------------------------------------------------------
def cmd_plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from seraph.plot import plot

    output = args.output or str(Path(args.trace).with_suffix(".png"))
    path, tl = plot(args.trace, output)
    progress.note(f"wrote {path}: {len(tl.pages)} page lanes, "
                  f"{sum(map(len, tl.copies.values()))} copies, "
                  f"{len(tl.sparse_spans)} sparse rounds, "
                  f"{len(tl.predictor_states)} rounds of predictor states")
    return 0


# -- parser -------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from partitioner.readers import FORMATS
    from seraph.scheduler import PUSH_ON, SCHEDULES

    parser = argparse.ArgumentParser(
        prog="seraph", description="Graph analytics for graphs larger than GPU memory.")
    verbosity = argparse.ArgumentParser(add_help=False)
    verbosity.add_argument("-q", "--quiet", action="store_true", help="no progress or notes")
    verbosity.add_argument("-v", "--verbose", action="store_true", help="more detail")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("preprocess", parents=[verbosity], help="turn an input into a store")
    p.add_argument("input", help="edge list (.txt/.el/.wel), .mtx or .npz; .gz/.bz2/.xz ok")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS))
    p.add_argument("--weights", default="auto",
                   help="auto | none | file | random:LO,HI (default auto)")
    _add_store_options(p)
    p.set_defaults(func=cmd_preprocess)

    p = sub.add_parser("generate", parents=[verbosity], help="generate a graph into a store")
    p.add_argument("kind", choices=("rmat", "uniform", "grid"))
    p.add_argument("--scale", type=int, default=16, help="log2 of the vertex count")
    p.add_argument("--edge-factor", type=int, default=16, help="edges per vertex (rmat, uniform)")
    p.add_argument("--rows", type=int, help="grid rows (default from --scale)")
    p.add_argument("--cols", type=int, help="grid columns (default from --scale)")
    p.add_argument("--remove", type=float, default=0.0,
                   help="grid: fraction of lattice edges removed")
    p.add_argument("--weighted", action="store_true",
                   help="integer weights uniform in [1, 255] (the GAP convention)")
    p.add_argument("--weights", default="none", help="none | random:LO,HI")
    _add_store_options(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("info", parents=[verbosity], help="describe a store")
    p.add_argument("store")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("run", parents=[verbosity], help="run bfs, cc or sssp on a store")
    p.add_argument("algorithm", choices=tuple(ALGORITHMS))
    p.add_argument("store")
    p.add_argument("--source", type=int, help="source vertex (input id; default: the first)")
    p.add_argument("--device", default=None, choices=("auto", "cuda", "cpu"))
    p.add_argument("--gpu-memory", "--device-memory", dest="gpu_memory", default=None,
                   help="device memory budget, e.g. 4GiB (forces paging when smaller than "
                        "the graph)")
    p.add_argument("--schedule", default=None, choices=SCHEDULES)
    p.add_argument("--predictor", default=None, choices=("auto", "strong", "weak", "none"))
    p.add_argument("--diagram", default=None, help="weak-predictor diagram: name or TOML file")
    p.add_argument("--push-alpha", type=float, default=None,
                   help="push engine when frontier out-edges < m/alpha (0 disables)")
    p.add_argument("--push-on", default=None, choices=PUSH_ON,
                   help="where a GPU run's push rounds run (default: device)")
    p.add_argument("--config", default=None, help="run settings from a TOML file")
    p.add_argument("--predecessors", action="store_true", help="also compute predecessors")
    p.add_argument("--output", help="write the result to .npy, .npz or .parquet")
    p.add_argument("--validate", action="store_true", help="check the result against scipy")
    p.add_argument("--json", action="store_true", help="print stats as JSON")
    p.add_argument("--trace", help="write a JSON timeline of copies and sweeps")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", parents=[verbosity], help="the quickstart: generate, run, check")
    p.add_argument("--scale", type=int, default=14, help="RMAT scale of the demo graph")
    p.add_argument("--page-edges", type=int, default=1 << 14)
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("plot", parents=[verbosity],
                       help="draw a trace (from run --trace) as a timeline picture")
    p.add_argument("trace", help="the JSON file written by `seraph run ... --trace FILE`")
    p.add_argument("-o", "--output", default=None,
                   help="the picture to write, .png, .svg or .pdf (default: the trace's "
                        "name with .png)")
    p.set_defaults(func=cmd_plot)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.command_line = _command_line(argv)
    progress.set_verbosity(0 if args.quiet else 2 if args.verbose else 1)
    announce_compiling(progress.note)
    try:
        return args.func(args)
    except SeraphError as e:
        print(f"seraph: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("seraph: interrupted; no partial output was left behind", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
