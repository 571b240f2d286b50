"""How long the O(m) verifiers take (issue 31: an R-MAT-26 answer, 2.1 B edges, checked
in under 10 s on 16 cores).

    python scripts/bench_verify.py --scale 26 [--device cuda] [--store PATH] [--workdir DIR]
        [--repeat 2] [--predecessors] [--json-out FILE] [--md-out FILE]

Generates a weighted, symmetrized R-MAT of 2^``--scale`` vertices (edge factor 16) with
``seraph generate`` (or opens ``--store``), runs BFS, CC and SSSP once each from the
highest out-degree vertex on ``--device``, and times each answer's verifier
(:func:`seraph.validate.verify`), the fastest of ``--repeat``: *from the store*, on a
freshly opened graph whose pages are read from their chunk files (what ``seraph run
--validate`` does on a graph paged through the GPU), and *held*, with the CSC in host
memory (what it does after a CPU run). Each verdict must be "right". With
``--predecessors`` BFS and SSSP also return and check predecessors (deriving them is a
serial walk: slow at this size). Compiling is left out: every verifier first checks a
tiny graph's answer.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bench_gpu
import benchlib
import numpy as np

MD_DEFAULT = benchlib.DOCS / "verify.md"


def store_of(args, work: Path) -> Path:
    """``--store``, or an R-MAT generated into the work folder (kept there when given)."""
    if args.store:
        return Path(args.store)
    path = work / f"rmat-{args.scale}-weighted-sym.zarr"
    if not path.exists():
        from seraph.cli import main as seraph

        if seraph(["generate", "rmat", "--scale", str(args.scale), "--weighted",
                   "--symmetrize", "-o", str(path), "-q"]) != 0:
            sys.exit("bench_verify: seraph generate failed")
    return path


def compile_verifier(alg: str, result) -> None:
    """The algorithm's verifier once on a tiny graph and an answer of ``result``'s types,
    so that no timing below compiles (scipy's answer: no engine kernel compiles either)."""
    import seraph
    from seraph.algorithms import get
    from seraph.validate import verify

    tiny = seraph.Graph.from_edges(np.array([0, 1]), np.array([1, 2]),
                                   np.ones(2, np.float32), symmetrize=True, page_edges=2)
    source = get(alg).source_for(0)
    values = get(alg).reference(tiny, source).astype(result.values.dtype)
    preds = None if getattr(result, "predecessors", None) is None else np.full(3, -1)
    verify(tiny, alg, values, source, preds)


def time_verifier(store: Path, alg: str, result, source: int | None, held: bool,
                  repeat: int) -> tuple[float, str | None]:
    """The fastest of ``repeat`` checks of ``result`` and the verdict: on a freshly opened
    graph each time, its CSC read into host memory first (untimed) where ``held``."""
    import seraph
    from seraph.validate import verify

    best, verdict = float("inf"), None
    for _ in range(repeat):
        graph = seraph.open_graph(store)
        if held:
            graph.csc()
        start = time.perf_counter()
        verdict = verify(graph, alg, result.values, source,
                         getattr(result, "predecessors", None))
        best = min(best, time.perf_counter() - start)
    return best, verdict


def run(args, work: Path) -> dict:
    import seraph
    from seraph.algorithms import ALGORITHMS

    store = store_of(args, work)
    graph = seraph.open_graph(store)
    hub = int(np.argmax(graph.out_degrees()))
    desc = {"store": str(store), "num_vertices": graph.num_vertices,
            "num_edges": graph.num_edges, "num_pages": graph.num_pages,
            "page_edges": graph.page_edges, "hub": hub}
    rows = []
    for alg, entry in ALGORITHMS.items():
        source = entry.source_for(hub)
        options = {"predecessors": args.predecessors} if entry.needs_source else {}
        result = seraph.run(graph, alg, None if source is None else int(graph.vertex_ids[hub]),
                            device=args.device, **options)
        compile_verifier(alg, result)
        row = {"algorithm": alg, "call_time": result.stats.call_time,
               "predecessors": getattr(result, "predecessors", None) is not None}
        for where, held in (("store", False), ("held", True)):
            seconds, verdict = time_verifier(store, alg, result, source, held, args.repeat)
            row[where] = {"seconds": seconds, "verdict": verdict or "right",
                          "edges_per_second": graph.num_edges / seconds}
        bench_gpu.log(f"{alg}: from the store {row['store']['seconds']:.2f} s, held "
                     f"{row['held']['seconds']:.2f} s; {row['store']['verdict']}")
        rows.append(row)
        del result
    return {"graph": desc, "rows": rows}


def report(results: dict, info: dict, command: str) -> str:
    g = results["graph"]
    rows = [[r["algorithm"], "yes" if r["predecessors"] else "no",
             benchlib.seconds(r["call_time"]), benchlib.seconds(r["store"]["seconds"]),
             benchlib.seconds(r["held"]["seconds"]),
             f"{r['held']['edges_per_second'] / 1e9:.2f}",
             r["store"]["verdict"] if r["store"]["verdict"] == r["held"]["verdict"]
             else f"{r['store']['verdict']} / {r['held']['verdict']}"] for r in results["rows"]]
    return "\n".join([
        "# The verifiers' time", "", f"Command: `{command}`", "",
        benchlib.machine_markdown(info), "",
        f"Graph: `{g['store']}`, {g['num_vertices']:,} vertices, {g['num_edges']:,} stored "
        f"edges in {g['num_pages']} pages of {g['page_edges']:,}; source {g['hub']} (the "
        "highest out-degree).", "",
        "Seconds. *call*: the algorithm's public call. *from the store*: the verifier on a "
        "freshly opened graph, its pages read from their chunk files; *held*: with the CSC "
        "in host memory; both the fastest of the repeats, compiling left out. *G edges/s*: "
        "stored edges over the held time.", "",
        benchlib.markdown_table(["alg", "predecessors", "call", "from the store", "held",
                                 "G edges/s", "verdict"], rows,
                                [False, False, True, True, True, True, False]), ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=int, default=26)
    p.add_argument("--store", default=None, help="check answers on this store instead")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="where the answers are computed (the verifiers run on the CPU)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--predecessors", action="store_true")
    p.add_argument("--workdir", default=None,
                   help="where the generated store goes (kept; default a temporary folder)")
    p.add_argument("--json-out", default=None)
    p.add_argument("--md-out", default=None, help=f"default {MD_DEFAULT}; '' for none")
    args = p.parse_args(argv)
    md_out = MD_DEFAULT if args.md_out is None else (Path(args.md_out) if args.md_out else None)
    benchlib.quiet()
    command = "python scripts/bench_verify.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    info = benchlib.machine(["cupy"] if args.device == "cuda" else [])
    with benchlib.workdir(args.workdir) as work:
        results = run(args, work)
    benchlib.finish_machine(info)
    benchlib.write_outputs({"machine": info, "command": command.strip(), **results},
                           args.json_out, report(results, info, command.strip()), md_out)
    wrong = [r["algorithm"] for r in results["rows"]
             if r["store"]["verdict"] != "right" or r["held"]["verdict"] != "right"]
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
