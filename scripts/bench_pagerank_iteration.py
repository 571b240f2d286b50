"""What one PageRank power iteration costs on a paged graph, in pass-equivalents of its
index bytes (issue 33, item 5: at most 1.1).

    python scripts/bench_pagerank_iteration.py --device cuda [--graphs grid rmat uniform]
        [--grid-side 4096] [--rmat-scale 26] [--uniform-scale 25] [--iterations 10 50]
        [--repeat 3] [--budget-fraction 0.25] [--json-out FILE] [--md-out FILE]

An iteration's cost is the slope of the public call's time over its iterations: the same
``seraph.pagerank`` call stopped after ``a`` and after ``b`` iterations (``--iterations
a b``; the tolerance is too small for either to converge), each the median of
``--repeat`` calls after a first call reported apart, gives ``(T_b - T_a) / (b - a)``. What
a call pays once (its start, the readback of the ranks) cancels; the whole call's time
over its iterations is printed beside it. ``device_memory`` is the vertex state plus
``--budget-fraction`` of the page bytes (bench_gpu.paged_budget), so most pages are copied
every iteration.

One pass is the graph's index bytes (4 an edge: a PageRank reads no weights) over the
pinned host-to-device copy bandwidth measured in the same process
(bench_gpu.measure_bandwidth), and over 55 GB/s beside it.

Every timed call's ranks are checked against a float64 power iteration of the same number
of steps computed here (bench_peers.reference_pagerank, which shares no code with the
engine), in L1, and every call's device peak against its budget.

A CPU smoke run: ``--device cpu --graphs grid --grid-side 64 --md-out ''``.
"""

from __future__ import annotations

import argparse
import statistics

import bench_gpu
import bench_matrix
import bench_peers
import benchlib
import numpy as np

MD_DEFAULT = benchlib.DOCS / "pagerank-iteration-gpu.md"
LINK = 55e9  #: a PCIe 5 x16 link's pinned copies, bytes per second
DAMPING = 0.85
#: Small enough that no call converges before its iteration count (and that the shares are
#: float64, so the reference's iterations are the engine's to rounding).
TOLERANCE = 1e-15
#: The most a call's ranks may differ in L1 from the reference's same iterations.
AGREE = 1e-9


def measure(graph, label: str, args, bandwidth: float) -> dict:
    """The calls at both iteration counts, their checks, and the slope."""
    import seraph

    budget = bench_gpu.paged_budget(graph, "pagerank", "pipelined", args.budget_fraction)
    index_bytes = 4 * graph.num_edges
    cell = {"graph": label, "vertices": graph.num_vertices, "edges": graph.num_edges,
            "index_bytes": index_bytes, "budget": budget, "problems": [], "counts": {}}
    for count in args.iterations:
        want = bench_peers.reference_pagerank(graph, DAMPING, 0.0, args.device, count)["ranks"]
        times = []
        for i in range(args.repeat + 1):
            res = seraph.pagerank(graph, DAMPING, TOLERANCE, count, device=args.device,
                                  device_memory=budget)
            s = res.stats
            error = float(np.abs(res.ranks - want).sum())
            if (res.iterations != count or error > AGREE) and not cell["problems"]:
                cell["problems"].append(f"{label}, {count} iterations: ran {res.iterations}, "
                                        f"L1 {error:.3g} from the reference's")
            if (s.peak_device_memory or 0) > budget and not cell["problems"]:
                cell["problems"].append(f"{label}: peak {s.peak_device_memory} over {budget}")
            if i == 0:
                cell["counts"][count] = {"first_call": s.call_time}
            else:
                times.append(s.call_time)
        cell["counts"][count].update(median=statistics.median(times), times=times,
                                     bytes_h2d=s.bytes_h2d, peak=s.peak_device_memory)
    a, b = args.iterations
    slope = (cell["counts"][b]["median"] - cell["counts"][a]["median"]) / (b - a)
    cell.update(iteration=slope, pass_measured=slope / (index_bytes / bandwidth),
                pass_link=slope / (index_bytes / LINK),
                whole_call=cell["counts"][b]["median"] / b)
    return cell


def peak(nbytes: int | None) -> str:
    """A device peak as the table shows it (none on the CPU)."""
    return "—" if nbytes is None else benchlib.size(nbytes)


def report(results: dict, info: dict, command: str) -> str:
    bw = results["bandwidth"]
    a, b = results["iterations"]
    rows = []
    for c in results["cells"]:
        ta, tb = c["counts"][a], c["counts"][b]
        rows.append([c["graph"], f"{c['edges']:,}", benchlib.size(c["index_bytes"]),
                     f"{ta['median']:.4f}", f"{tb['median']:.4f}",
                     f"{1e3 * c['iteration']:.2f}", f"{c['pass_measured']:.2f}",
                     f"{c['pass_link']:.2f}", f"{1e3 * c['whole_call']:.2f}",
                     ("ok" if not c["problems"] else "; ".join(c["problems"]))
                     + f"; peak {peak(tb['peak'])} of {benchlib.size(c['budget'])}"])
    return "\n".join([
        "# A PageRank iteration on a paged graph", "",
        f"Command: `{command}`", "", benchlib.machine_markdown(info), "",
        f"- Pinned host-to-device copies measured here: {bw['pinned_h2d'] / 1e9:.1f} GB/s.",
        f"- Budget: the vertex state plus {results['budget_fraction']} of the page bytes; "
        f"damping {DAMPING}, tolerance {TOLERANCE} (no call converges).", "",
        f"Seconds: the median of {results['repeat']} public calls (`stats.call_time`) after "
        f"a first call, stopped after {a} and after {b} iterations. *iteration*: the slope "
        f"(T{b} - T{a}) / {b - a}, in ms; *pass-eq*: over the index bytes' copy time at the "
        f"measured bandwidth and at 55 GB/s; *call / {b}*: the whole call over its "
        f"iterations, in ms. *answers*: every call's ranks within {AGREE} in L1 of a "
        f"float64 iteration of as many steps, and its device peak within the budget (the "
        f"last call's peak beside it).", "",
        benchlib.markdown_table(
            ["graph", "stored edges", "index bytes", f"T{a}", f"T{b}", "iteration",
             "pass-eq (measured)", "pass-eq (55 GB/s)", f"call / {b}", "answers"], rows),
    ])


def run(args, _work) -> dict:
    bench_peers.require_device(args.device)
    bandwidth = bench_gpu.measure_bandwidth(args.device, benchlib.GiB, 5)
    graphs = {key: (label, build) for key, label, _size, build in
              bench_matrix.graph_builders(args)}
    cells = []
    for key in args.graphs:
        label, build = graphs[key]
        cells.append(measure(build(), label, args, bandwidth["pinned_h2d"]))
        bench_gpu.free_device_memory(args.device)
    return {"bandwidth": bandwidth, "iterations": args.iterations, "repeat": args.repeat,
            "budget_fraction": args.budget_fraction, "cells": cells}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--graphs", nargs="+", default=["grid"], choices=("grid", "rmat", "uniform"))
    p.add_argument("--grid-side", type=int, default=4096)
    p.add_argument("--rmat-scale", type=int, default=26)
    p.add_argument("--uniform-scale", type=int, default=25)
    p.add_argument("--iterations", nargs=2, type=int, default=[10, 50])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--budget-fraction", type=float, default=0.25)
    benchlib.common_arguments(p, MD_DEFAULT)
    p.set_defaults(page_edges=None, order="input")  # the graphs bench_matrix.py builds
    args = p.parse_args(argv)
    a, b = args.iterations
    if not 1 <= a < b:
        p.error("--iterations takes two counts, the first at least 1 and below the second")
    results = {}

    def collect(args, work):
        results.update(run(args, work))
        return results

    code = benchlib.run_and_report("bench_pagerank_iteration.py", args, argv, ["cupy"],
                                   collect, report, MD_DEFAULT)
    failed = [p for c in results["cells"] for p in c["problems"]]
    for problem in failed:
        print(f"bench_pagerank_iteration.py: {problem}")
    return code or (1 if failed else 0)


if __name__ == "__main__":
    raise SystemExit(main())
