"""Small queries through the public call (issue 35, item 1): BFS and SSSP from sources in
small components of a large road-like graph, beside scipy's ``breadth_first_order`` and
``dijkstra`` from the same sources, on a quiet machine and with one busy process beside.

    python scripts/bench_small_calls.py [--side 750] [--remove 0.3] [--sources 8]
        [--repeat 5] [--json-out FILE] [--md-out FILE]

The graph: a ``--side`` square grid with ``--remove`` of its edges removed and its ids
shuffled (benchlib.shuffled_grid; GAP's weights), whose removed edges cut off many small
components. Sources: ``--sources`` random vertices (seed 0) of components of 2 to 999
vertices. A query there touches a few hundred vertices, so what it costs is the call's
fixed cost: checks, vertex state, the output array. Each source runs ``--repeat`` times per
system, the systems alternated, and each system's fastest is kept: Seraph's
``stats.call_time`` (its setup and readback beside it), scipy's wall time on a CSR matrix
built once (the graph is stored symmetric, so scipy reads it as directed and converts
nothing per call). *loaded*: the same with one process spinning on a core, as another
program on a developer's laptop would. Every Seraph answer is compared with scipy's (the
reached vertices, and SSSP's distances).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import benchlib
import numpy as np

ALGORITHMS = ("bfs", "sssp")
#: A component counts as small from 2 vertices (not isolated) to this many.
SMALL = 1000


def small_sources(graph, count: int) -> tuple[list[int], np.ndarray]:
    """``count`` random vertices of small components (input ids), and the components'
    sizes."""
    import scipy.sparse as sp
    from scipy.sparse import csgraph

    indptr, indices, _ = graph.csr()
    n = graph.num_vertices
    a = sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(n, n))
    _, labels = csgraph.connected_components(a, directed=True, connection="weak")
    sizes = np.bincount(labels)
    small = np.flatnonzero((sizes[labels] > 1) & (sizes[labels] < SMALL))
    picked = np.random.default_rng(0).choice(small, min(count, len(small)), replace=False)
    return [int(graph.vertex_ids[v]) for v in picked], sizes[labels[picked]]


def scipy_calls(graph) -> dict:
    """scipy's call for each algorithm, from a store vertex, on matrices built once."""
    import scipy.sparse as sp
    from scipy.sparse import csgraph

    indptr, indices, weights = graph.csr()
    n = graph.num_vertices
    hops = sp.csr_matrix((np.ones(len(indices)), indices, indptr), shape=(n, n))
    lengths = sp.csr_matrix((weights.astype(np.float64), indices, indptr), shape=(n, n))
    return {"bfs": lambda s: csgraph.breadth_first_order(hops, s, directed=True,
                                                         return_predecessors=False),
            "sssp": lambda s: csgraph.dijkstra(lengths, directed=True, indices=s)}


def agrees(alg: str, values: np.ndarray, theirs) -> bool:
    """Seraph's values (store order) against scipy's answer: the same reached vertices
    (BFS's order lists them), and SSSP's distances equal (inf where unreached)."""
    if alg == "bfs":
        return set(np.flatnonzero(values >= 0).tolist()) == set(theirs.tolist())
    return bool(np.array_equal(values.astype(np.float64), theirs))


def measure(graph, sources: list[int], repeat: int) -> list[dict]:
    """Each algorithm's runs from ``sources``, both systems alternated, fastest kept."""
    import seraph

    calls = scipy_calls(graph)
    rows = []
    for alg in ALGORITHMS:
        seraph.run(graph, alg, sources[0], device="cpu")  # kernels loaded, not timed
        ours, parts, theirs, wrong = [], [], [], []
        for source in sources:
            v = graph.vertex_index(source)
            best, best_scipy = None, None
            for _ in range(repeat):
                start = time.perf_counter()
                answer = calls[alg](v)
                took = time.perf_counter() - start
                best_scipy = took if best_scipy is None else min(best_scipy, took)
                result = seraph.run(graph, alg, source, device="cpu")
                if best is None or result.stats.call_time < best.stats.call_time:
                    best = result
            ours.append(best.stats.call_time)
            parts.append((best.stats.setup_time, best.stats.readback_time))
            theirs.append(best_scipy)
            if not agrees(alg, best.values, answer):
                wrong.append(source)
        rows.append({"algorithm": alg, "seraph": ours, "scipy": theirs,
                     "seraph_median": statistics.median(ours),
                     "scipy_median": statistics.median(theirs),
                     "setup_median": statistics.median(p[0] for p in parts),
                     "readback_median": statistics.median(p[1] for p in parts),
                     "wrong": wrong})
    return rows



def ms(x: float) -> str:
    return f"{x * 1e3:.3f}"


def report(data: dict, info: dict, command: str) -> str:
    g = data["graph"]
    rows = [[c["condition"], c["algorithm"].upper(),
             f"{ms(c['seraph_median'])} / {ms(max(c['seraph']))}",
             ms(c["setup_median"]), ms(c["readback_median"]),
             f"{ms(c['scipy_median'])} / {ms(max(c['scipy']))}",
             benchlib.ratio(c["seraph_median"], c["scipy_median"]),
             "agree" if not c["wrong"] else f"**{len(c['wrong'])} differ**"]
            for c in data["cells"]]
    return "\n".join([
        "# Small queries: the public call's fixed cost", "", f"Command: `{command}`", "",
        benchlib.machine_markdown(info), "",
        f"Graph: {g['name']}, {g['vertices']:,} vertices, {g['edges']:,} stored edges; "
        f"sources in components of {min(g['source_components'])} to "
        f"{max(g['source_components'])} vertices.", "",
        "Milliseconds: median / max over the sources of each system's fastest call per source, "
        "the two alternated. *setup*, *readback*: the medians of Seraph's `setup_time` and "
        "`readback_time`. *ratio*: Seraph's median over scipy's.", "",
        benchlib.markdown_table(["condition", "alg", "Seraph", "setup", "readback", "scipy",
                                 "ratio", "answers"], rows,
                                [False] * 2 + [True] * 5 + [False]), ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--side", type=int, default=750)
    p.add_argument("--remove", type=float, default=0.3)
    p.add_argument("--sources", type=int, default=8)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json-out", default=None)
    p.add_argument("--md-out", default=None, help="a markdown report here (default: none)")
    args = p.parse_args(argv)
    if args.side < 2 or not 0 < args.remove < 1 or args.sources < 1 or args.repeat < 1:
        p.error("--side must be at least 2, --remove in (0, 1), --sources and --repeat at "
                "least 1")
    from partitioner.generators import gap_weights

    benchlib.quiet()
    info = benchlib.machine()
    graph = benchlib.shuffled_grid(args.side, gap_weights(), remove_fraction=args.remove)
    sources, sizes = small_sources(graph, args.sources)
    if not sources:
        p.error("the graph has no component of 2 to 999 vertices: remove more edges")
    cells = [dict(cell, condition="quiet") for cell in measure(graph, sources, args.repeat)]
    with benchlib.busy_beside():
        cells += [dict(cell, condition="loaded") for cell in measure(graph, sources,
                                                                     args.repeat)]
    benchlib.finish_machine(info)
    command = ("python scripts/bench_small_calls.py "
               + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    data = {"graph": {"name": f"grid {args.side}x{args.side}, {args.remove:.0%} removed, "
                              "shuffled", "vertices": graph.num_vertices,
                      "edges": graph.num_edges, "sources": sources,
                      "source_components": [int(s) for s in sizes]},
            "cells": cells}
    benchlib.write_outputs({"machine": info, "command": command, "args": vars(args), **data},
                           args.json_out, report(data, info, command), args.md_out)
    return 1 if any(c["wrong"] for c in cells) else 0


if __name__ == "__main__":
    raise SystemExit(main())
