"""The ``seraph`` command line: preprocess, generate, info, run, demo, plot."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence

from seraph import progress
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


# -- parser -------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from partitioner.readers import FORMATS

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

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.command_line = _command_line(argv)
    progress.set_verbosity(0 if args.quiet else 2 if args.verbose else 1)
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
