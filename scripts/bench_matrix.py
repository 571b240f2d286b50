"""The benchmark matrix of issue 21: BFS, CC and SSSP through the public API on four graph
classes under a quarter budget, from random sources, every answer checked.

    python scripts/bench_matrix.py --device cuda [--json-out FILE] [--md-out FILE]

Graphs, all weighted (GAP weights, integers 1..255), symmetrized and built in memory:
RMAT-``--rmat-scale`` and uniform-``--uniform-scale`` (edge factor 16), a
``--grid-side`` square grid, and a road-like grid of the same side with 10% of its edges
removed and its vertex ids shuffled. ``--order degree`` or ``rcm`` builds them renumbered
(as ``seraph preprocess --order``); sources and the hub are then named by input id, as
the API takes them, and random sources are the same input ids in every order.

Per graph and algorithm (a *cell*), with ``device_memory`` = the vertex state plus
``--budget-fraction`` of the algorithm's page bytes (at least two slots):

- one untimed-in-the-median *first call* (it pins the pages, uploads, compiles), shown apart;
- ``--sources`` random non-isolated sources (``--seed``; CC takes none and runs as many
  times): the median and the maximum of ``stats.call_time``, the whole public call without
  compiling; fewer (the row says how many) once the cell's runs took ``--cell-seconds``;
  BFS and SSSP also from the top-degree vertex, as one more row;
- PCIe traffic, an estimate: the bytes copied (``stats.bytes_h2d``) plus the edges read in
  place (pushed and pulled bottom-up, 4 bytes each, 8 for SSSP) where pages move; in passes
  over the algorithm's page bytes, and, on cuda, the median time in pass-equivalents at the
  measured pinned copy bandwidth;
- the device peak (``stats.peak_device_memory``) beside the budget, and the edges read
  (in swept pages, pushed, pulled bottom-up) over the stored edges: the engine's edges
  relaxed over m;
- every call's answer checked by its algorithm's verifier (:func:`seraph.validate.verify`,
  outside the timed call) and every call's device peak set beside the budget: "checked N
  of N". A wrong answer or a peak over budget fails the cell, and the script exits 1 after
  the report is written.

The whole run keeps within ``--total-limit`` seconds: what no longer fits is skipped and the
report says so. A CPU smoke run of the script itself:

    python scripts/bench_matrix.py --device cpu --rmat-scale 10 --uniform-scale 10 \\
        --grid-side 32 --sources 2 --md-out ''
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import bench_gpu
import benchlib
import numpy as np

MD_DEFAULT = benchlib.DOCS / "matrix-gpu.md"
GB = 1e9
#: The sizes the issue's reference figures and targets are for.
ISSUE_SIZES = {"rmat": 26, "uniform": 25, "grid": 4096}
REFERENCE_SOURCE = ("published-code measurements on the same graphs, H100, 2026-11-24, "
                    "from the issue (issue 21); we do not ship the peers")
#: Issue 21's table, seconds: Seraph's engine time, Seraph's public call, EMOGI, Subway
#: (hub / random source where the issue gave both).
REFERENCE = {
    ("rmat", "bfs"): ("0.128 / 0.064", "0.66 / 0.59", "0.267 / 0.261", "1.46 / 1.55"),
    ("rmat", "cc"): ("0.137", "0.39-0.44", "0.40", "2.77"),
    ("rmat", "sssp"): ("0.79 / 0.94", "0.79 / 0.94", "0.87 / 0.98", "3.60 / 5.58"),
    ("uniform", "bfs"): ("0.118 / 0.092", "0.154 / 0.139", "0.119 / 0.119", "0.69 / 0.73"),
    ("uniform", "cc"): ("0.116", "0.25", "0.223", "0.19"),
    ("uniform", "sssp"): ("1.97 / 2.10", "1.97 / 2.10", "1.47 / 1.49", "3.46 / 3.49"),
    ("grid", "bfs"): ("1.76", "1.78", "3.35", "0.296"),
    ("grid", "cc"): ("1.40", "1.47", "4.60", "1.51"),
    ("grid", "sssp"): ("20.7", "20.7", "9.21", "2.29"),
}
#: Issue 21's targets (must, aim) in seconds: the median public call from random sources.
TARGETS = {
    ("rmat", "bfs"): (0.17, 0.08), ("rmat", "cc"): (0.25, 0.08),
    ("rmat", "sssp"): (0.58, 0.40),
    ("uniform", "bfs"): (0.08, 0.05), ("uniform", "cc"): (0.12, 0.05),
    ("uniform", "sssp"): (0.98, 0.40),
    ("grid", "bfs"): (0.20, 0.06), ("grid", "cc"): (0.10, 0.02), ("grid", "sssp"): (1.5, 0.5),
}


# --------------------------------------------------------------------------- graphs
def graph_builders(args) -> list[tuple[str, str, int, Callable[[], object]]]:
    """(key, name, size, build) of each graph; key names the issue's graph class."""
    from partitioner.generators import gap_weights, grid

    w, pe, order = gap_weights(), args.page_edges, args.order
    side = args.grid_side
    suffix = "" if order == "input" else f", --order {order}"
    return [
        ("rmat", f"RMAT-{args.rmat_scale} ef16{suffix}", args.rmat_scale,
         lambda: benchlib.generated("rmat", args.rmat_scale, w, pe, order)),
        ("uniform", f"uniform-{args.uniform_scale} ef16{suffix}", args.uniform_scale,
         lambda: benchlib.generated("uniform", args.uniform_scale, w, pe, order)),
        ("grid", f"grid {side}x{side}{suffix}", side,
         lambda: benchlib.in_memory(grid(side, side, seed=1, weights=w), pe, order)),
        ("road", f"grid {side}x{side}, 10% removed, shuffled{suffix}", side,
         lambda: benchlib.shuffled_grid(side, w, pe, order)),
    ]


def describe(graph, name: str, key: str, size: int, seconds: float) -> dict:
    degrees = graph.out_degrees()
    top = int(np.argmax(degrees))
    return {"key": key, "name": name, "size": size, "issue_size": ISSUE_SIZES.get(key) == size,
            "num_vertices": graph.num_vertices, "num_edges": graph.num_edges,
            "num_pages": graph.num_pages, "weighted": graph.weighted,
            "build_seconds": seconds, "hub": int(graph.vertex_ids[top]),  # an input id
            "hub_degree": int(degrees[top])}


# --------------------------------------------------------------------------- one cell
def run_once(graph, alg: str, source: int | None, device: str, budget: int | None):
    import seraph
    from seraph.algorithms import get

    return seraph.run(graph, alg, get(alg).source_for(source), device=device,
                      device_memory=budget)


def pcie_bytes(stats, alg: str) -> int | None:
    """Bytes copied plus bytes read in place, an estimate: where the pages move, pushed and
    bottom-up-pulled edges are read from the host's pinned CSC (4 bytes an edge, 8 with the
    weights of an algorithm whose operator reads them); on a resident run those reads stay
    on the device. None where a paged run counted nothing: union-find reads the CSC in place
    without counting its edges."""
    from seraph.algorithms import get

    if stats.resident:
        return stats.bytes_h2d
    in_place = stats.edges_pushed + stats.edges_pulled_bottom_up
    if not stats.bytes_h2d and not in_place:
        return None
    return stats.bytes_h2d + in_place * (8 if get(alg).spec.operator.weighted else 4)


def run_figures(stats, alg: str) -> dict:
    edges_read = stats.edges_swept + stats.edges_pushed + stats.edges_pulled_bottom_up
    return {"call_time": stats.call_time, "wall_time": stats.wall_time,
            "pcie_bytes": pcie_bytes(stats, alg), "bytes_h2d": stats.bytes_h2d,
            "edges_pushed": stats.edges_pushed,
            "edges_pulled_bottom_up": stats.edges_pulled_bottom_up,
            "peak_device_memory": stats.peak_device_memory,
            # Union-find counts no edges read: None, not a ratio of 0.
            "edges_over_m": edges_read / max(1, stats.num_edges) if edges_read else None,
            "rounds": stats.rounds, "resident": stats.resident}


def median_of(runs: list[dict], key: str) -> float | None:
    """The median of a figure over the runs, None where the stats did not count it."""
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else None


def summarize(runs: list[dict]) -> dict:
    times = [r["call_time"] for r in runs]
    return {"n": len(runs), "median": statistics.median(times), "max": max(times),
            "engine_median": statistics.median(r["wall_time"] for r in runs),
            "pcie_bytes_median": median_of(runs, "pcie_bytes"),
            "peak_device_memory": max(r["peak_device_memory"] for r in runs),
            "edges_over_m_median": median_of(runs, "edges_over_m"),
            "runs": runs}


def measure_cell(graph, desc: dict, alg: str, sources: list[int | None], args,
                 clock: bench_gpu.Clock) -> dict:
    """The first call, the random sources' runs and (BFS, SSSP) the hub's run of one cell."""
    budget = bench_gpu.paged_budget(graph, alg, "pipelined", args.budget_fraction)
    cell = {"graph": desc["name"], "key": desc["key"], "algorithm": alg, "budget": budget,
            "pass_bytes": bench_gpu.pass_bytes(graph, alg), "skipped": None}
    with bench_gpu.time_limit(clock.limit(None), f"{desc['name']} {alg}") as alarm:
        try:
            timed_runs(graph, desc, alg, sources, args, budget, cell)
        except bench_gpu.TimeLimit:
            raise
        except Exception as e:  # the alarm landed inside a numba call: its SystemError
            if alarm.fired:
                raise bench_gpu.TimeLimit(f"{desc['name']} {alg} passed its limit") from e
            raise
    return cell


def timed_runs(graph, desc: dict, alg: str, sources: list[int | None], args, budget: int,
               cell: dict) -> None:
    """Fills ``cell`` with the first call, the timed runs and their checks: every call's
    answer verified and its peak set beside the budget, outside its time."""
    from seraph.algorithms import get

    checks = benchlib.Checks()

    def checked(source: int | None):
        result = run_once(graph, alg, source, args.device, budget)
        checks.call(graph, alg, source, result, budget)
        return result.stats

    first = checked(sources[0])
    cell["first_call"] = first.call_time
    cell["first_compile"] = first.compile_time
    runs, start = [], time.perf_counter()
    for source in sources:
        if runs and time.perf_counter() - start > args.cell_seconds:
            break  # a slow cell keeps the sources it had, so later cells still fit
        runs.append({"source": source, **run_figures(checked(source), alg)})
    cell["random"] = summarize(runs)
    cell["sources_requested"] = len(sources)
    if get(alg).needs_source:
        cell["hub"] = summarize([{"source": desc["hub"],
                                  **run_figures(checked(desc["hub"]), alg)}])
    cell["checks"] = checks.to_dict(1 + len(runs) + ("hub" in cell))


# --------------------------------------------------------------------------- verdicts
def verdict(cell: dict, desc: dict, device: str) -> str:
    target = TARGETS.get((cell["key"], cell["algorithm"]))
    if target is None or not desc["issue_size"] or device != "cuda" or "random" not in cell:
        return "not measured"
    must, aim = target
    median = cell["random"]["median"]
    if median <= aim:
        return "met (aim too)"
    return "met" if median <= must else "not met"


# --------------------------------------------------------------------------- the run
def run_matrix(args, clock: bench_gpu.Clock) -> dict:
    from seraph.algorithms import get
    from seraph.sources import random_sources

    results: dict = {"graphs": [], "cells": [], "skipped": [], "bandwidth": None,
                     "failed": []}
    if args.device == "cuda":
        results["bandwidth"] = bench_gpu.measure_bandwidth("cuda", benchlib.GiB, 10)
        bench_gpu.log(f"pinned H2D {results['bandwidth']['pinned_h2d'] / GB:.1f} GB/s")
    for key, name, size, build in graph_builders(args):
        if key not in args.graphs:
            continue
        if clock.exhausted(args.reserve):
            results["skipped"].append(f"{name}: the total limit was reached before it")
            continue
        bench_gpu.log(f"building {name}")
        start = time.perf_counter()
        try:
            with bench_gpu.time_limit(clock.limit(None), f"building {name}"):
                graph = build()
        except bench_gpu.TimeLimit as e:
            results["skipped"].append(f"{name}: {e}")
            continue
        desc = describe(graph, name, key, size, time.perf_counter() - start)
        results["graphs"].append(desc)
        bench_gpu.log(f"{name}: {desc['num_vertices']:,} vertices, {desc['num_edges']:,} "
                      f"stored edges, {desc['num_pages']} pages, built in "
                      f"{desc['build_seconds']:.1f} s")
        picked = random_sources(graph, args.sources, args.seed)
        for alg in args.algorithms:
            sources = picked if get(alg).needs_source else [None] * args.sources
            if clock.exhausted(args.reserve):
                results["skipped"].append(f"{name} {alg}: the total limit was reached")
                continue
            results["cells"].append(one_cell(graph, desc, alg, sources, args, clock,
                                             results))
        del graph
        bench_gpu.free_device_memory(args.device)
    return results


def one_cell(graph, desc: dict, alg: str, sources: list, args, clock, results) -> dict:
    """A cell, or what stopped it (the limit). A cell whose checks fail (a wrong answer, a
    peak over budget) says so in its verdict, and the script exits 1 at the end."""
    bench_gpu.log(f"{desc['name']} {alg}")
    try:
        cell = measure_cell(graph, desc, alg, sources, args, clock)
    except bench_gpu.TimeLimit as e:
        bench_gpu.recover(graph, args.device)
        results["skipped"].append(f"{desc['name']} {alg}: {e}")
        return {"graph": desc["name"], "key": desc["key"], "algorithm": alg,
                "skipped": str(e)}
    checks = cell["checks"]
    cell["verdict"] = verdict(cell, desc, args.device) if checks["ok"] else "FAILED"
    results["failed"] += [f"{desc['name']} {alg}: {p}" for p in checks["problems"]]
    bench_gpu.log(f"  median {cell['random']['median']:.3f} s, max "
                  f"{cell['random']['max']:.3f} s; {checks['line']}; {cell['verdict']}")
    return cell


# --------------------------------------------------------------------------- report
def cell_rows(cell: dict, bandwidth: float | None) -> list[list[object]]:
    alg, target = cell["algorithm"], TARGETS.get((cell["key"], cell["algorithm"]))
    targets = f"{target[0]} / {target[1]}" if target else "—"
    if cell.get("skipped"):
        return [[cell["graph"], alg, "—", "—", "—", "—", "—", "—", "—", "—", "—", "—",
                 targets, f"skipped: {cell['skipped']}"]]
    rows = []
    for kind in ("random", "hub"):
        s = cell.get(kind)
        if s is None:
            continue
        of = f"{s['n']}" + (f" of {cell['sources_requested']}"
                            if s["n"] < cell["sources_requested"] else "")
        label = (f"{of} random" if "hub" in cell else f"{of} calls") \
            if kind == "random" else "hub"
        if all(r["resident"] for r in s["runs"]):
            label += " (resident)"  # the budget held the whole graph: nothing paged
        traffic = s["pcie_bytes_median"]
        traffic = "not counted" if traffic is None else \
            f"{benchlib.size(traffic)} ({traffic / cell['pass_bytes']:.2f})"
        pass_eq = (s["median"] * bandwidth / cell["pass_bytes"]) if bandwidth else None
        rows.append([
            cell["graph"] if kind == "random" else "", alg if kind == "random" else "",
            label, benchlib.seconds(cell["first_call"]) if kind == "random" else "",
            benchlib.seconds(s["median"]), benchlib.seconds(s["max"]),
            benchlib.seconds(s["engine_median"]),
            traffic,
            # The CPU backend reports no device peak: "—", not 0 B.
            bench_gpu.fmt(pass_eq), f"{benchlib.size(s['peak_device_memory'] or None)} / "
            f"{benchlib.size(cell['budget'])}", bench_gpu.fmt(s["edges_over_m_median"]),
            cell["checks"]["line"] if kind == "random" else "",
            targets if kind == "random" else "",
            cell["verdict"] if kind == "random" else ""])
    return rows


def reference_section() -> str:
    rows = [[key, alg, *REFERENCE[(key, alg)], *TARGETS[(key, alg)]]
            for key, alg in REFERENCE]
    return "\n".join([
        "## Reference: the issue's figures and targets", "",
        f"Seconds, {REFERENCE_SOURCE}. Graphs: rmat = RMAT-26 ef16, uniform = uniform-25 "
        "ef16, grid = 4096x4096; budget a quarter of the graph's bytes. Where two figures "
        "are given: hub / random source. Targets are for the median public call from "
        "random sources on an H100 or H200.", "",
        benchlib.markdown_table(
            ["graph", "alg", "Seraph engine then", "Seraph call then", "EMOGI", "Subway",
             "must (s)", "aim (s)"], rows, [False, False] + [True] * 6)])


def report(results: dict, info: dict, command: str, args) -> str:
    bw = (results.get("bandwidth") or {}).get("pinned_h2d")
    rows = [row for cell in results["cells"] for row in cell_rows(cell, bw)]
    graphs = [[g["name"], f"{g['num_vertices']:,}", f"{g['num_edges']:,}", g["num_pages"],
               f"{g['hub']} ({g['hub_degree']:,})", benchlib.seconds(g["build_seconds"])]
              for g in results["graphs"]]
    device = results["device"]["name"]
    lines = [
        "# The benchmark matrix (issue 21)", "",
        f"Command: `{command}`", "",
        f"- Device: {device}",
        benchlib.machine_markdown(info),
        f"- Pinned copy bandwidth: {bw / GB:.1f} GB/s" if bw else
        "- Pinned copy bandwidth: not measured (not a cuda device)", "",
        "## Graphs", "",
        benchlib.markdown_table(["graph", "vertices", "stored edges", "pages",
                                 "hub (degree)", "built (s)"], graphs,
                                [False, True, True, True, True, True]), "",
        "## The matrix", "",
        "Seconds of `stats.call_time` (the whole public call, compiling left out). *first "
        "call*: the cell's first call (pins, uploads, compiles), not in the median. *engine*: "
        "median `stats.wall_time`. *PCIe (passes)*: an estimate of the bytes over PCIe, "
        "copied plus read in place (pushed and bottom-up edges, 4 B, 8 B for SSSP, where "
        "pages move; an upper bound, as bottom-up rows may stop early), median, and in "
        "passes over the algorithm's page bytes; union-find "
        "CC reads the CSC in place without counting it (*not counted*). *pass-eq.*: "
        "median time over one pass at the pinned bandwidth (cuda only). *peak / budget*: "
        "the largest `peak_device_memory` of the runs, and `device_memory`. *edges/m*: "
        "median edges read (in swept pages, pushed, pulled bottom-up) over the stored "
        "edges (— where not counted, as union-find's). "
        "*checked*: the cell's calls (first, random and hub) whose answers the algorithm's "
        "verifier checked and whose device peak kept within the budget, of the calls made. "
        "*verdict*: the median against the must (and aim) target, measured only on cuda at "
        "the issue's sizes; FAILED where a check failed.", "",
        benchlib.markdown_table(
            ["graph", "alg", "sources", "first call", "median", "max", "engine",
             "PCIe (passes)", "pass-eq.", "peak / budget", "edges/m", "checked",
             "must / aim", "verdict"], rows,
            [False, False, False] + [True] * 8 + [False] * 3), "",
        "Checking the answers (outside the timed calls) took "
        f"{sum(c['checks']['seconds'] for c in results['cells'] if 'checks' in c):.1f} s.",
    ]
    if results["skipped"]:
        lines += ["", "Skipped: " + "; ".join(results["skipped"]) + "."]
    if results["failed"]:
        lines += ["", "**Failed checks:** " + "; ".join(results["failed"])]
    return "\n".join(lines + ["", reference_section(), ""])


# --------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from seraph.algorithms import ALGORITHMS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--rmat-scale", type=int, default=26)
    p.add_argument("--uniform-scale", type=int, default=25)
    p.add_argument("--grid-side", type=int, default=4096)
    p.add_argument("--graphs", nargs="+", default=["rmat", "uniform", "grid", "road"],
                   choices=("rmat", "uniform", "grid", "road"))
    p.add_argument("--algorithms", nargs="+", default=["bfs", "cc", "sssp"],
                   choices=tuple(ALGORITHMS), help="the registered algorithms to run "
                   "(default the issue's matrix)")
    p.add_argument("--order", default="input", choices=("input", "degree", "rcm"),
                   help="the graphs' vertex order (as seraph preprocess --order)")
    p.add_argument("--page-edges", type=int, default=None,
                   help="edges per page (default the store's, 2^22: what a user gets)")
    p.add_argument("--sources", type=int, default=8, help="random sources per cell")
    p.add_argument("--seed", type=int, default=0, help="of the random sources")
    p.add_argument("--budget-fraction", type=float, default=0.25,
                   help="device memory: the vertex state plus this share of the page bytes")
    p.add_argument("--cell-seconds", type=float, default=30.0,
                   help="a cell starts no further source once its runs took this long")
    p.add_argument("--total-limit", type=float, default=570.0,
                   help="seconds for the whole script; what no longer fits is skipped")
    p.add_argument("--reserve", type=float, default=5.0,
                   help="seconds kept back for the report: a cell starts only with more left")
    p.add_argument("--json-out", default=None, help="write the raw figures here as JSON")
    p.add_argument("--md-out", default=None,
                   help=f"markdown report (default {MD_DEFAULT} on cuda, none on cpu; '' "
                        "for none)")
    args = p.parse_args(argv)
    if args.sources < 1:
        p.error("--sources must be at least 1")
    if not 0 < args.budget_fraction <= 1:
        p.error("--budget-fraction must be in (0, 1]")
    return args


def require_device(device: str) -> None:
    """Exits (status 1, with why) before any graph is built when ``--device cuda`` has no
    usable GPU."""
    if device != "cuda":
        return
    from seraph.api import cuda_status

    ok, why = cuda_status()
    if not ok:
        sys.exit(f"bench_matrix: --device cuda but no usable GPU: {why}. Run it on a GPU host, "
                 "or smoke-test it on the CPU backend: --device cpu --rmat-scale 10 "
                 "--uniform-scale 10 --grid-side 32 --sources 2")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    require_device(args.device)
    benchlib.quiet()
    command = "python scripts/bench_matrix.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    info = benchlib.machine(["cupy"] if args.device == "cuda" else [])
    clock = bench_gpu.Clock(args.total_limit)
    results = run_matrix(args, clock)
    results["device"] = bench_gpu.device_description(args.device)
    benchlib.finish_machine(info)
    payload = {"machine": info, "command": command.strip(), "args": vars(args),
               "reference": {"source": REFERENCE_SOURCE,
                             "figures": {f"{k} {a}": v for (k, a), v in REFERENCE.items()},
                             "targets": {f"{k} {a}": v for (k, a), v in TARGETS.items()}},
               **results}
    # By default only a GPU run replaces the recorded figures; a CPU run just prints them.
    default = MD_DEFAULT if args.device == "cuda" else None
    md_out = default if args.md_out is None else (Path(args.md_out) if args.md_out else None)
    benchlib.write_outputs(payload, args.json_out, report(results, info, command.strip(), args),
                           md_out)
    for problem in results["failed"]:
        print(f"bench_matrix: {problem}", file=sys.stderr)
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
