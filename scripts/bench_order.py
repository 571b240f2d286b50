"""Vertex orders side by side: each graph built in its input order and renumbered
(``--order degree``, hubs first; ``--order rcm``, neighbours near), timed on the same work.

    python scripts/bench_order.py [--device cpu|cuda] [--kinds rmat uniform road]
        [--orders input degree rcm] [--scale 20] [--side 1024] [--sources 8]
        [--repeat 2] [--json-out FILE] [--md-out FILE]

BFS, CC and SSSP through the public call from ``--sources`` random non-isolated sources
(seed 0, input ids: every order of a graph draws the same ones), the orders alternated
source by source, each source ``--repeat`` times with the fastest kept. On the CPU
everything is resident; on cuda each call gets the matrix's budget, the vertex state plus
``--budget-fraction`` of the algorithm's pages. Every call's answer is checked by its
algorithm's verifier (outside the timed call) and its device peak set beside its budget;
a wrong answer or a peak over budget fails the cell and the script. Graphs: R-MAT and
uniform of 2^``--scale`` vertices (edge factor 16) and the road-like ``--side`` grid with
shuffled ids, GAP weights.
"""

from __future__ import annotations

import argparse
import statistics
import time

import bench_gpu
import benchlib

#: The report's default place, per device.
MD_DEFAULT = {"cpu": benchlib.DOCS / "orders-cpu.md", "cuda": benchlib.DOCS / "orders-gpu.md"}
KINDS = ("rmat", "uniform", "road")
ALGORITHMS = ("bfs", "cc", "sssp")


def build(kind: str, order: str, args):
    """(name, graph, seconds to build) of one graph class in ``order``."""
    from partitioner.generators import gap_weights

    start = time.perf_counter()
    if kind == "road":
        name = f"road-like grid {args.side}"
        graph = benchlib.shuffled_grid(args.side, gap_weights(), args.page_edges, order)
    else:
        name = f"{'RMAT' if kind == 'rmat' else 'uniform'}-{args.scale}"
        graph = benchlib.generated(kind, args.scale, gap_weights(), args.page_edges, order)
    return name, graph, time.perf_counter() - start


def call(graph, alg: str, source: int | None, args, checks: benchlib.Checks) -> float:
    """One public call's time; its answer and device peak then go to ``checks``."""
    import seraph

    budget = (bench_gpu.paged_budget(graph, alg, "pipelined", args.budget_fraction)
              if args.device == "cuda" else None)
    result = seraph.run(graph, alg, source, device=args.device, device_memory=budget)
    checks.call(graph, alg, source, result, budget)
    return result.stats.call_time


def cells_of(kind: str, args) -> list[dict]:
    """Every algorithm and order of one graph class."""
    from seraph.algorithms import get
    from seraph.sources import random_sources

    built = {order: build(kind, order, args) for order in args.orders}
    name, first, _ = built[args.orders[0]]
    picked = random_sources(first, args.sources, 0)
    cells = []
    for alg in ALGORITHMS:
        sources = picked if get(alg).needs_source else [None] * args.sources
        checks = {order: benchlib.Checks() for order in args.orders}
        for order, (_, graph, _) in built.items():  # first calls, apart
            call(graph, alg, sources[0], args, checks[order])
        times = {order: [] for order in args.orders}
        for source in sources:
            for order in args.orders:
                graph = built[order][1]
                times[order].append(min(call(graph, alg, source, args, checks[order])
                                        for _ in range(args.repeat)))
        for order in args.orders:
            calls = 1 + len(times[order]) * args.repeat
            cell = {"graph": name, "algorithm": alg, "order": order,
                    "build_seconds": built[order][2],
                    "median": statistics.median(times[order]), "max": max(times[order]),
                    "times": times[order], "checks": checks[order].to_dict(calls)}
            bench_gpu.log(f"{name} {alg} {order}: {cell['checks']['line']}")
            cells.append(cell)
    return cells


def report(cells: list[dict], info: dict, command: str) -> str:
    base = {(c["graph"], c["algorithm"]): c["median"] for c in cells
            if c["order"] == cells[0]["order"]}
    rows = [[c["graph"], c["algorithm"], c["order"], f"{c['build_seconds']:.2f}",
             benchlib.seconds(c["median"]), benchlib.seconds(c["max"]),
             benchlib.ratio(c["median"], base[c["graph"], c["algorithm"]]),
             c["checks"]["peak_over_budget"], c["checks"]["line"]] for c in cells]
    return "\n".join([
        "# Vertex orders side by side", "", f"Command: `{command}`", "",
        benchlib.machine_markdown(info), "",
        "Seconds of the public call (`stats.call_time`): median and max over the sources of "
        "the fastest call per source. *built*: seconds to build the graph in that order (in "
        f"memory, as `Graph.from_edges` does). *ratio*: the median over the {cells[0]['order']}"
        " order's. *answer*: by input id, against that order's.", "",
        benchlib.markdown_table(["graph", "alg", "order", "built", "median", "max", "ratio",
                                 "answer"], rows, [False] * 3 + [True] * 4 + [False]), ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    p.add_argument("--orders", nargs="+", default=["input", "degree", "rcm"],
                   choices=("input", "degree", "rcm"))
    p.add_argument("--scale", type=int, default=20, help="of the R-MAT and uniform graphs")
    p.add_argument("--side", type=int, default=1024, help="of the road-like grid")
    p.add_argument("--page-edges", type=int, default=None)
    p.add_argument("--sources", type=int, default=8)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--budget-fraction", type=float, default=0.25, help="cuda only")
    p.add_argument("--json-out", default=None)
    p.add_argument("--md-out", default=None,
                   help="default docs/benchmarks/orders-cpu.md (orders-gpu.md on cuda); '' "
                        "for none")
    args = p.parse_args(argv)
    md_out = MD_DEFAULT[args.device] if args.md_out is None else (args.md_out or None)
    return benchlib.run_cells(
        "bench_order.py", args, argv,
        lambda: [cell for kind in args.kinds for cell in cells_of(kind, args)], report, md_out)

if __name__ == "__main__":
    raise SystemExit(main())
