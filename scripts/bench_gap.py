"""Seraph's CPU backend beside the GAP benchmark suite on the same graphs, from the same
sources, the two alternated source by source so that both see the same load.

    python scripts/bench_gap.py --gap-dir DIR [--kinds rmat uniform road] [--scale 20]
        [--algorithms bfs cc sssp pagerank] [--tolerance 1e-4]
        [--pagerank-method power|delta|gauss-seidel] [--gap-deltas 2] [--sources 8] [--repeat 2]
        [--threads 1 2 4 8 16] [--plot FILE] [--workdir DIR] [--json-out FILE]
        [--md-out FILE]
    python scripts/bench_gap.py --plot-from RUN.json [RUN.json ...] --plot FILE

GAP (github.com/sbeamer/gapbs) is not part of Seraph: build it in ``--gap-dir`` first
(``make bfs cc sssp pr converter``). Each graph has GAP's weights (integers 1..255) and is
not relabelled, so a store vertex is GAP's ``-r``: ``rmat`` and ``uniform`` are
``benchlib.generated(kind, scale, gap_weights())`` (edge factor 16, seed 1, symmetrized),
``road`` is ``benchlib.shuffled_grid`` of side about 2^(scale/2) (a road-like grid: 10% of
its edges removed, its ids shuffled; GAP's SSSP suits it at deltas near the weights' mean
of 128 and above, so give ``--gap-deltas`` there: cpu-vs-gap.md). It is written as a GAP
weighted edge list with each undirected edge once, and GAP's converter symmetrizes it back
(``-s``) into ``.sg`` (BFS, CC) and ``.wsg`` (SSSP) files, kept in ``--workdir``.

Sources: ``--sources`` random non-isolated vertices (seed 0); CC and PageRank, which take
none, run as many times. PageRank: both stop once an iteration's L1 change is below
``--tolerance`` (GAP's ``-t``; its default, 1e-4, is this one's), at most 100 iterations;
GAP's ``pr`` is a float32 Gauss-Seidel pull that leaves dangling rank out, Seraph's a
float64 iteration with networkx's conventions (``--pagerank-method``: the power iteration
by default, or Gauss-Seidel sweeps as GAP's), so their answers differ by more than the
tolerance and each is checked on its own terms.

Each source runs ``--repeat`` times, GAP then Seraph in turn, and each system's fastest
is kept: GAP's "Trial Time" (one process a source, ``-n 1``, the graph loaded before the
trial; SSSP with each of ``--gap-deltas`` as ``-d``, by default 2, the delta of GAP's own
benchmark for kron and urand, and GAP's figure is the delta of the lowest median), Seraph's
public call (``stats.call_time``) after a first call reported apart. Both run on each
``--threads`` count in turn (Seraph's ``threads=``, GAP's ``OMP_NUM_THREADS``), by default
on as many as numba's pool has; ``--plot`` draws the scaling curve. Every Seraph answer
is checked by its verifier (outside the timed call), GAP's first answer by its own ``-v``,
and the two first answers against each other where GAP's ``-a`` prints figures of its
answer (BFS and SSSP: the vertices reached; CC: the components and the largest one's
size): a difference fails the cell. Beside each cell, where Seraph's fastest calls went
(:data:`WORK`: their phases and the edges they pushed, pulled bottom-up and swept), and
the page faults each took (``getrusage``'s minor faults over the call: fresh memory
that its threads wrote).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import benchlib
import numba
import numpy as np

from seraph.algorithms.pagerank import METHODS

KINDS = ("rmat", "uniform", "road")
#: GAP's kernel, graph file and extra options per algorithm.
GAP = {"bfs": ("bfs", "sg", []), "cc": ("cc", "sg", []), "sssp": ("sssp", "wsg", []),
       "pagerank": ("pr", "sg", ["-i", "100"])}
TRIAL = re.compile(r"^Trial Time:\s+([0-9.]+)", re.M)
GRAPH = re.compile(r"^Graph has (\d+) nodes", re.M)
#: What GAP's ``-a`` prints of its last answer, per algorithm: each figure's name and its
#: pattern, set beside the same figure of Seraph's answer (:func:`answer_figures`).
ANALYSIS = {"bfs": (("reached", r"BFS Tree has (\d+) nodes"),
                    ("reached out-edges", r"nodes and (\d+) edges")),
            "cc": (("components", r"There are (\d+) components"),
                   ("largest", r"biggest clusters\s+\d+:(\d+)")),
            "sssp": (("reached", r"SSSP Tree reaches (\d+) nodes"),)}


def gap_files(graph, name: str, gap_dir: Path, work: Path) -> dict[str, Path]:
    """The graph in GAP's serialized forms (made once per ``work``)."""
    out = {"sg": work / f"{name}.sg", "wsg": work / f"{name}.wsg"}
    if all(p.exists() for p in out.values()):
        return out
    indptr, indices, weights = graph.csr()
    src = np.repeat(np.arange(graph.num_vertices), np.diff(indptr))
    half = src < indices
    edges = work / f"{name}.wel"
    edges.write_bytes(edge_lines(src[half], indices[half], weights[half]))
    for flag, path in (("-b", out["sg"]), ("-wb", out["wsg"])):
        subprocess.run([str(gap_dir / "converter"), "-sf", str(edges), flag, str(path)],
                       check=True, capture_output=True)
    edges.unlink()
    return out


def edge_lines(src: np.ndarray, dst: np.ndarray, weights: np.ndarray) -> bytes:
    """GAP's weighted edge list, ``"src dst weight\\n"`` a line (as ``np.savetxt`` writes
    with ``%d``, which formats in Python, a line at a time: minutes on a scale-22 graph)."""
    columns = np.stack([src, dst, weights]).astype(np.int64)  # GAP's weights are integers
    buffer = np.empty(33 * len(src), np.uint8)  # three non-negative int32s and separators
    return buffer[:_format_lines(buffer, columns)].tobytes()


@numba.njit(cache=True)
def _format_lines(out, columns):
    at = 0
    for i in range(columns.shape[1]):
        for k in range(3):
            x = columns[k, i]
            digits, rest = 1, x // 10
            while rest:
                digits, rest = digits + 1, rest // 10
            for d in range(digits - 1, -1, -1):  # the last digit first
                out[at + d] = 48 + x % 10
                x //= 10
            out[at + digits] = 32 if k < 2 else 10
            at += digits + 1
    return at


#: Seraph's figures of where a call went, each cell's median over its sources' fastest
#: calls: its phases (seconds) and the edges each kind of round read.
WORK = ("setup_time", "kernel_time", "sparse_time", "readback_time", "rounds",
        "bottom_up_rounds", "edges_swept", "edges_pushed", "edges_pulled_bottom_up")


class GapRun(NamedTuple):
    """One run of a GAP kernel: its trial time; where verified, its own ``-v`` verdict,
    the figures its ``-a`` prints of the answer (:data:`ANALYSIS`; those it printed) and
    its graph's vertices (the largest id in the edge list, plus one)."""

    time: float
    verified: bool | None = None
    figures: dict | None = None
    vertices: int | None = None


def minor_faults() -> int:
    """This process's minor page faults so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def gap_call(gap_dir: Path, files: dict, alg: str, source: int | None, threads: int,
             tolerance: float, verify: bool = False, delta: float = 2.0) -> GapRun:
    """GAP's kernel for one source (:class:`GapRun`; SSSP with ``-d delta``), verified if
    asked."""
    kernel, form, extra = GAP[alg]
    cmd = [str(gap_dir / kernel), "-f", str(files[form]), "-n", "1", *extra]
    cmd += ["-t", repr(tolerance)] if alg == "pagerank" else []
    cmd += ["-d", f"{delta:g}"] if alg == "sssp" else []
    cmd += ["-r", str(source)] if source is not None else []
    cmd += ["-v", "-a"] if verify else []
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": str(threads)}).stdout
    time = float(TRIAL.search(out).group(1))
    if not verify:
        return GapRun(time)
    found = ((name, re.search(pattern, out)) for name, pattern in ANALYSIS.get(alg, ()))
    graph = GRAPH.search(out)
    return GapRun(time, "Verification:" in out and "PASS" in out,
                  {name: int(m.group(1)) for name, m in found if m},
                  int(graph.group(1)) if graph else None)


def answer_figures(graph, alg: str, values: np.ndarray, vertices: int | None) -> dict:
    """The figures GAP's ``-a`` prints (:data:`ANALYSIS`), of Seraph's answer over GAP's
    ``vertices`` (None: all; GAP's graph ends at the largest id its edge list names, and
    the isolated vertices after it are each unreached and a component of their own): BFS's
    reached vertices and their out-edges, CC's components and the largest one's size,
    SSSP's reached vertices."""
    values = values[:vertices]
    if alg == "bfs":
        reached = values >= 0
        return {"reached": int(reached.sum()),
                "reached out-edges": int(graph.out_degrees()[:vertices][reached].sum())}
    if alg == "cc":
        sizes = np.unique(values, return_counts=True)[1]
        return {"components": len(sizes), "largest": int(sizes.max(initial=0))}
    if alg == "sssp":
        return {"reached": int(np.isfinite(values).sum())}
    return {}


def graph_of(kind: str, scale: int):
    """A class's graph of about 2^``scale`` vertices, with GAP's weights, and its name."""
    from partitioner.generators import gap_weights

    if kind == "road":
        return benchlib.shuffled_grid(round(2 ** (scale / 2)), gap_weights()), f"road-{scale}"
    name = f"{'kron' if kind == 'rmat' else 'uniform'}-{scale}"
    return benchlib.generated(kind, scale, gap_weights()), name


def cells_of(kind: str, args) -> list[dict]:
    """``--algorithms`` on one graph class, both systems."""
    import seraph
    from seraph.algorithms import get
    from seraph.sources import random_sources

    graph, name = graph_of(kind, args.scale)
    files = gap_files(graph, name, Path(args.gap_dir), Path(args.work))
    picked = random_sources(graph, args.sources, 0)
    cells = []
    for alg in args.algorithms:
        sources = picked if get(alg).needs_source else [None] * args.sources
        options = {"tolerance": args.tolerance, "method": args.pagerank_method} \
            if alg == "pagerank" else {}
        first = seraph.run(graph, alg, sources[0], device="cpu", **options)
        for threads in args.threads or [numba.config.NUMBA_NUM_THREADS]:
            checks = benchlib.Checks()
            checks.call(graph, alg, sources[0], first, None, **options)
            verified = gap_call(Path(args.gap_dir), files, alg, sources[0], threads,
                                args.tolerance, True)
            gap_ok, gap_figures = verified.verified, verified.figures
            figures = answer_figures(graph, alg, first.values, verified.vertices)
            differ = {name: (gap, figures[name]) for name, gap in gap_figures.items()
                      if gap != figures[name]}
            deltas = args.gap_deltas if alg == "sssp" else [2.0]
            by_delta, fastest = {d: [] for d in deltas}, []
            for source in sources:
                gap, ours = {d: [] for d in deltas}, []
                for _ in range(args.repeat):
                    for d in deltas:
                        gap[d].append(gap_call(Path(args.gap_dir), files, alg, source,
                                               threads, args.tolerance, delta=d).time)
                    faults = minor_faults()
                    result = seraph.run(graph, alg, source, device="cpu", threads=threads,
                                        **options)
                    faults = minor_faults() - faults
                    checks.call(graph, alg, source, result, None, **options)  # not timed
                    ours.append((result.stats, faults))
                for d in deltas:
                    by_delta[d].append(min(gap[d]))
                fastest.append(min(ours, key=lambda run: run[0].call_time))
            seraph_times = [stats.call_time for stats, _ in fastest]
            # GAP at its best delta for the graph: the one of the lowest median.
            best = min(deltas, key=lambda d: statistics.median(by_delta[d]))
            gap_times = by_delta[best]
            checked = checks.to_dict(1 + len(sources) * args.repeat)
            if not gap_ok:
                checked["ok"] = False
                checked["problems"].append(f"{name} {alg}: GAP's own -v failed")
            if differ:
                checked["ok"] = False
                checked["problems"].append(f"{name} {alg}: GAP's -a and Seraph's answer "
                                           f"differ (GAP, Seraph): {differ}")
            cells.append({"graph": name, "vertices": graph.num_vertices,
                          "stored_edges": graph.num_edges, "algorithm": alg,
                          "method": options.get("method"),
                          "threads": threads,
                          "sources": [int(s) for s in sources if s is not None],
                          "seraph_first_call": first.stats.call_time,
                          "seraph": seraph_times, "gap": gap_times,
                          "seraph_median": statistics.median(seraph_times),
                          "seraph_work": {k: statistics.median(getattr(stats, k)
                                                               for stats, _ in fastest)
                                          for k in WORK},
                          "seraph_page_faults": statistics.median(f for _, f in fastest),
                          "gap_median": statistics.median(gap_times),
                          "gap_delta": best if alg == "sssp" else None,
                          "gap_medians_by_delta": {f"{d:g}": statistics.median(t)
                                                   for d, t in by_delta.items()}
                          if alg == "sssp" else None,
                          "gap_verified": bool(gap_ok), "gap_figures": gap_figures,
                          "seraph_figures": {k: figures[k] for k in gap_figures},
                          "checks": checked})
            # Each cell as it ends: a run cut short still shows what it measured.
            print(f"{name} {alg} {threads} threads: Seraph {cells[-1]['seraph_median']:.4f} s, "
                  f"GAP {cells[-1]['gap_median']:.4f} s", file=sys.stderr, flush=True)
    return cells


def plot_scaling(cells: list[dict], path: str) -> None:
    """Each graph and algorithm's median against the threads, Seraph's and GAP's, on log
    axes (the scaling curve of issue 35)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = sorted({(c["graph"], c["algorithm"]) for c in cells})
    fig, axes = plt.subplots(1, len(series), figsize=(4 * len(series), 3.5), squeeze=False)
    for ax, (graph, alg) in zip(axes[0], series, strict=True):
        mine = sorted((c for c in cells if (c["graph"], c["algorithm"]) == (graph, alg)),
                      key=lambda c: c["threads"])
        threads = [c["threads"] for c in mine]
        for key, label in (("seraph_median", "Seraph"), ("gap_median", "GAP")):
            ax.plot(threads, [c[key] for c in mine], marker="o", label=label)
        ax.set(xscale="log", yscale="log", xlabel="threads", ylabel="median seconds",
               title=f"{alg.upper()} on {graph}")
        ax.set_xticks(threads, [str(t) for t in threads])
        ax.minorticks_off()  # a log axis's minor labels would overlap the thread counts
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def agreement(cell: dict) -> str:
    """What the answers column says of GAP's ``-a`` figures against Seraph's."""
    gap, ours = cell.get("gap_figures") or {}, cell.get("seraph_figures") or {}
    if not gap:
        return ""
    if gap == ours:
        return "; GAP's -a agrees (" + ", ".join(f"{k} {v:,}" for k, v in gap.items()) + ")"
    return "; GAP's -a **differs**: " + ", ".join(f"{k} {gap[k]:,} against {ours[k]:,}"
                                                   for k in gap if gap[k] != ours[k])


def report(cells: list[dict], info: dict, command: str) -> str:
    rows = [[c["graph"], c["algorithm"].upper() + (f" ({c['method']})" if c.get("method")
                                                   else ""), str(c["threads"]),
             f"{benchlib.seconds(c['seraph_median'])} / {benchlib.seconds(max(c['seraph']))}",
             f"{benchlib.seconds(c['gap_median'])} / {benchlib.seconds(max(c['gap']))}"
             + (f" (-d {c['gap_delta']:g})" if c.get("gap_delta") is not None else ""),
             benchlib.ratio(c["seraph_median"], c["gap_median"]),
             benchlib.seconds(c["seraph_first_call"]),
             " / ".join(f"{c['seraph_work'][k] / 1e6:.1f}"
                        for k in ("edges_pushed", "edges_pulled_bottom_up", "edges_swept")),
             f"{c['seraph_page_faults']:,.0f}" if "seraph_page_faults" in c else "",
             c["checks"]["line"] + ("" if c["gap_verified"] else "; GAP's -v **FAILED**")
             + agreement(c)]
            for c in cells]
    return "\n".join([
        "# CPU backend against the GAP benchmark suite", "", f"Command: `{command}`", "",
        benchlib.machine_markdown(info), "",
        "Seconds: median / max over the sources of each system's fastest run per source, "
        "the two alternated source by source. *ratio*: Seraph's median over GAP's. "
        "*first call*: Seraph's first call, not in the median. *Seraph's edges*: the millions "
        "of edges its calls pushed, pulled bottom-up and swept in dense rounds (medians of "
        "the fastest calls). *page faults*: the minor faults of Seraph's fastest calls "
        "(median): fresh memory that a call wrote. *answers*: every Seraph "
        "answer by its verifier, outside the timed call; GAP's first by its own `-v`, and "
        "what GAP's `-a` prints of it beside the same figures of Seraph's first answer.", "",
        benchlib.markdown_table(["graph", "alg", "threads", "Seraph", "GAP", "ratio",
                                 "first call", "Seraph's edges (M)", "page faults",
                                 "answers"], rows,
                                [False] * 2 + [True] * 7 + [False]), ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gap-dir", help="where GAP's bfs, cc, sssp and converter are")
    p.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    p.add_argument("--algorithms", nargs="+", default=list(GAP), choices=list(GAP))
    p.add_argument("--pagerank-method", default="power",
                   choices=METHODS,
                   help="Seraph's PageRank method (GAP's pr is Gauss-Seidel)")
    p.add_argument("--gap-deltas", nargs="+", type=float, default=[2.0],
                   help="SSSP: GAP's -d values to run, each on every source; GAP's figure "
                        "is the one of the lowest median (default: 2, GAP's own benchmark's)")
    p.add_argument("--tolerance", type=float, default=1e-4,
                   help="PageRank's L1 change to stop at, both systems (GAP's default)")
    p.add_argument("--scale", type=int, default=20)
    p.add_argument("--sources", type=int, default=8)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--threads", nargs="+", type=int, default=None,
                   help="thread counts to run both systems on, each in turn (Seraph's "
                        "threads=, GAP's OMP_NUM_THREADS); at most numba's pool "
                        "(NUMBA_NUM_THREADS) (default: the pool's size)")
    p.add_argument("--plot", default=None,
                   help="draw each graph and algorithm's median against the threads here")
    p.add_argument("--plot-from", nargs="+", default=None, metavar="JSON",
                   help="measure nothing: draw --plot from earlier runs' --json-out (a "
                        "curve whose thread counts took several runs)")
    p.add_argument("--workdir", default=None, help="where GAP's graph files go (kept)")
    p.add_argument("--json-out", default=None)
    p.add_argument("--md-out", default=None,
                   help="default docs/benchmarks/cpu-vs-gap.md; '' for none")
    p.set_defaults(device="cpu")  # GAP's side is CPU-only, and so is this comparison
    args = p.parse_args(argv)
    if args.plot_from:
        if not args.plot:
            p.error("--plot-from draws into --plot: give it")
        plot_scaling([c for path in args.plot_from
                      for c in json.loads(Path(path).read_text())["cells"]], args.plot)
        return 0
    if not args.gap_dir:
        p.error("--gap-dir is required (where GAP's binaries are)")
    needed = [GAP[a][0] for a in args.algorithms] + ["converter"]
    missing = [k for k in needed if not (Path(args.gap_dir) / k).is_file()]
    if missing:
        p.error(f"--gap-dir {args.gap_dir} lacks GAP's {', '.join(missing)}: build them there "
                f"with `make {' '.join(needed)}`")
    pool = numba.config.NUMBA_NUM_THREADS
    if args.threads and not all(1 <= t <= pool for t in args.threads):
        p.error(f"--threads must each be from 1 to numba's pool of {pool} (NUMBA_NUM_THREADS)")
    md_out = benchlib.DOCS / "cpu-vs-gap.md" if args.md_out is None else (args.md_out or None)
    cells: list[dict] = []

    def run() -> list[dict]:
        cells.extend(cell for kind in args.kinds for cell in cells_of(kind, args))
        return cells

    with benchlib.workdir(args.workdir) as work:
        args.work = str(work)
        status = benchlib.run_cells("bench_gap.py", args, argv, run, report, md_out)
    if args.plot:
        plot_scaling(cells, args.plot)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
