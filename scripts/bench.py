"""Seraph's CPU backend beside scipy.sparse.csgraph and networkit, plus an ablation of
schedules and predictors (docs/benchmarks/engine-cpu.md; the paper's Figures 9 and 10).

    python scripts/bench.py [--quick] [--json-out FILE] [--md-out FILE] [--repeat N]

Graphs: a symmetrized RMAT and a symmetrized uniform graph (scale 20, edge factor 16) and a
1024 x 1024 grid, all with GAP weights 1..255, so BFS, CC and SSSP run on the same stores.
Every library starts from the same source, the vertex of highest out-degree. Targets on 2
cores: BFS and CC at most 0.5x scipy's time, SSSP at most 1.0x scipy's Dijkstra; networkit's
time beside them.

Timings are the fastest of ``--repeat`` runs on warm data: numba is compiled (or loaded from
its cache) and the store's arrays are in memory before anything is timed. The one-off compile
time is measured once, in a child process given an empty numba cache. Every Seraph answer is
checked against scipy in the same run.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import benchlib
import numpy as np
import scipy.sparse.csgraph as csgraph

MARKDOWN = benchlib.DOCS / "engine-cpu.md"
TARGETS = {"bfs": 0.5, "cc": 0.5, "sssp": 1.0}  # Seraph's time over scipy's, at most
ALGORITHMS = ("bfs", "cc", "sssp")
SCHEDULES = ("pipelined", "reentry", "single")
PREDICTORS = ("none", "strong", "weak")
#: The paged ablation gives the engine room for this fraction of the pages (at least 2).
PAGED_FRACTION = 0.25
#: Pages of the ablation stores: enough of them that a quarter still makes a window.
ABLATION_PAGES = 64


@dataclass
class GraphSpec:
    name: str
    kind: str
    scale: int  # rows = cols = 2^(scale/2) for the grid

    def source(self):
        from partitioner import generators

        w = generators.gap_weights()
        if self.kind == "grid":
            side = 1 << (self.scale // 2)
            return generators.grid(side, side, weights=w)
        return generators.GENERATORS[self.kind](self.scale, 16, seed=1, weights=w)


def graph_specs(quick: bool) -> list[GraphSpec]:
    scale = 14 if quick else 20
    return [GraphSpec(f"RMAT scale {scale}", "rmat", scale),
            GraphSpec(f"uniform scale {scale}", "uniform", scale),
            GraphSpec(f"grid {1 << (scale // 2)}x{1 << (scale // 2)}", "grid", scale)]


# --------------------------------------------------------------------------- stores
def build_store(spec: GraphSpec, path: Path, page_edges: int | None = None):
    """Opens the store at ``path``, writing it first unless a valid one is there."""
    import seraph
    from partitioner.writer import DEFAULT_PAGE_EDGES, Options, write_store
    from seraph.errors import StoreError

    page_edges = page_edges or DEFAULT_PAGE_EDGES
    try:
        graph = seraph.open_graph(path)
        if graph.page_edges == page_edges:
            return graph, None
    except StoreError:
        pass
    seconds, _ = benchlib.timed(lambda: write_store(
        spec.source(), path, Options(symmetrize=True, page_edges=page_edges), force=True))
    return seraph.open_graph(path), seconds


def high_degree_source(graph) -> int:
    return int(np.argmax(graph.out_degrees()))


# --------------------------------------------------------------------------- runners
def run_seraph(graph, alg: str, source: int, **options):
    """One Seraph run; returns (result array in the API's conventions, stats)."""
    import seraph
    from seraph.algorithms import get

    res = seraph.run(graph, alg, get(alg).source_for(source), device="cpu", **options)
    return res.values, res.stats


def scipy_runs(adj, alg: str, source: int) -> dict:
    """The scipy calls for an algorithm: name -> thunk. The report uses the fastest."""
    if alg == "bfs":
        return {"breadth_first_order": lambda: csgraph.breadth_first_order(
                    adj, source, directed=True, return_predecessors=False),
                "shortest_path(unweighted)": lambda: csgraph.shortest_path(
                    adj, unweighted=True, indices=source)}
    if alg == "cc":
        return {"connected_components(directed=False)": lambda: csgraph.connected_components(
                    adj, directed=False),
                "connected_components(weak)": lambda: csgraph.connected_components(
                    adj, directed=True, connection="weak")}
    return {"dijkstra": lambda: csgraph.dijkstra(adj, indices=source)}


def networkit_graph(adj):
    """An undirected weighted networkit graph of a symmetric adjacency matrix (each edge
    once, from its upper triangle)."""
    import networkit as nk

    coo = adj.tocoo()
    upper = coo.row < coo.col
    return nk.GraphFromCoo((coo.data[upper], (coo.row[upper], coo.col[upper])), adj.shape[0],
                           weighted=True, directed=False)


def networkit_run(nkg, alg: str, source: int):
    """One networkit run, returning its answer in scipy's conventions (for checking)."""
    import networkit as nk

    if alg == "cc":
        cc = nk.components.ConnectedComponents(nkg)
        cc.run()
        return cc
    algo = (nk.distance.BFS if alg == "bfs" else nk.distance.Dijkstra)(nkg, source,
                                                                       storePaths=False)
    algo.run()
    return algo


def networkit_check(run, alg: str, expect: np.ndarray) -> str | None:
    """None if networkit's answer matches scipy's ``expect`` (levels, distances or labels)."""
    if alg == "cc":
        got = run.numberOfComponents()
        want = len(np.unique(expect))
        return None if got == want else f"{got} components, scipy has {want}"
    dist = np.asarray(run.getDistances(), dtype=np.float64)
    dist[dist >= np.finfo(np.float64).max] = np.inf
    if alg == "bfs":
        dist = np.where(np.isinf(dist), -1, dist)
    bad = ~np.isclose(dist, expect, rtol=1e-9) & ~(np.isinf(dist) & np.isinf(expect))
    return None if not bad.any() else f"{int(bad.sum())} vertices differ from scipy"


def has_networkit() -> bool:
    try:
        import networkit  # noqa: F401
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------- the comparison
def warm_up(graph, source: int) -> None:
    """One untimed run of each algorithm: the store's arrays and the engine's per-graph
    page summary are then in memory and the kernels loaded."""
    for alg in ALGORITHMS:
        run_seraph(graph, alg, source)


def compare(spec: GraphSpec, graph, repeat: int, networkit: bool) -> list[dict]:
    """BFS, CC and SSSP on one graph by every library; one row per algorithm."""
    from seraph.algorithms import get
    from seraph.validate import check, reference

    source = high_degree_source(graph)
    warm_up(graph, source)
    adj = graph.to_scipy()
    nk_build, nkg = benchlib.timed(lambda: networkit_graph(adj)) if networkit else (None, None)
    rows = []
    for alg in ALGORITHMS:
        src = get(alg).source_for(source)
        print(f"[bench] {spec.name}: {alg}", file=sys.stderr, flush=True)
        seconds, (values, stats) = benchlib.best_time(
            lambda a=alg: run_seraph(graph, a, source), repeat)
        verdict = check(graph, alg, values, src)
        scipy_times = {name: benchlib.best_time(fn, repeat)[0]
                       for name, fn in scipy_runs(adj, alg, source).items()}
        fastest = min(scipy_times, key=scipy_times.get)
        row = {"graph": spec.name, "algorithm": alg, "source": src,
               "seraph_seconds": seconds, "seraph_ok": verdict is None, "seraph_check": verdict,
               "stats": stats.to_dict(), "scipy": scipy_times, "scipy_best": fastest,
               "scipy_seconds": scipy_times[fastest], "networkit_seconds": None,
               "networkit_build_seconds": nk_build}
        if networkit:
            row["networkit_seconds"], run = benchlib.best_time(
                lambda a=alg: networkit_run(nkg, a, source), repeat)
            row["networkit_check"] = networkit_check(run, alg, reference(graph, alg, src))
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- the ablation
def paged_budget(graph, predictor: str, alg: str) -> int:
    """A device budget holding the vertex state and a quarter of the pages (at least 2);
    only SSSP's pages carry weights."""
    from seraph.algorithms import get
    from seraph.backends.layout import Layout

    layout = Layout.for_run(graph, get(alg).spec, predictor, None)
    slots = max(2, math.ceil(PAGED_FRACTION * graph.num_pages))
    return layout.state_bytes + slots * layout.slot_bytes


def ablation_configs(paged: bool) -> list[tuple[str, str]]:
    """(schedule, predictor) pairs. When resident every window holds the whole graph, so
    pipelined and reentry are the same run: only pipelined is measured."""
    windowed = SCHEDULES[:2] if paged else SCHEDULES[:1]
    return [(s, p) for s in windowed for p in PREDICTORS] + [("single", "none")]


def ablation(spec: GraphSpec, graph, repeat: int) -> list[dict]:
    from seraph.algorithms import get
    from seraph.validate import check

    source = high_degree_source(graph)
    warm_up(graph, source)
    rows = []
    for alg in ALGORITHMS:
        src = get(alg).source_for(source)
        verified = None  # the first answer, checked against scipy; the rest must equal it
        for paged in (False, True):
            for schedule, predictor in ablation_configs(paged):
                budget = paged_budget(graph, predictor, alg) if paged else None
                print(f"[bench] ablation {spec.name}: {alg} {schedule} {predictor} "
                      f"{'paged' if paged else 'resident'}", file=sys.stderr, flush=True)
                seconds, (values, stats) = benchlib.best_time(
                    lambda a=alg, s=schedule, p=predictor, b=budget: run_seraph(
                        graph, a, source, schedule=s, predictor=p, device_memory=b), repeat)
                if verified is None:
                    problem = check(graph, alg, values, src)
                    verified = values if problem is None else None
                else:
                    problem = None if np.array_equal(values, verified) else \
                        "differs from the verified answer"
                rows.append({"graph": spec.name, "algorithm": alg, "paged": paged,
                             "budget": budget, "schedule": schedule, "predictor": predictor,
                             "seconds": seconds, "ok": problem is None, "check": problem,
                             "stats": stats.to_dict()})
    return rows


# --------------------------------------------------------------------------- compile (child)
def case_compile() -> dict:
    """Every engine path once on a tiny graph: with an empty numba cache this is the one-off
    compile; with a warm cache, the cost of loading the kernels."""
    import seraph
    from partitioner.generators import gap_weights, rmat

    def tiny_graph():
        src = rmat(8, 8, seed=1, weights=gap_weights())
        chunk = next(iter(src.chunks()))
        return seraph.Graph.from_edges(chunk.src, chunk.dst, chunk.weight, src.num_vertices,
                                       symmetrize=True, page_edges=256)

    build, graph = benchlib.timed(tiny_graph)
    times = {"build": build}
    for alg in ALGORITHMS:
        times[alg], _ = benchlib.timed(lambda a=alg: [
            run_seraph(graph, a, 0, schedule=s, predictor=p,
                       device_memory=paged_budget(graph, p, a) if paged else None)
            for paged in (False, True) for s, p in ablation_configs(paged)])
    return {"seconds": sum(times.values()), "parts": times}


# --------------------------------------------------------------------------- the report
def _speed(x: float | None, y: float | None) -> str:
    return benchlib.ratio(x, y)


def graphs_table(graphs: list[dict]) -> str:
    headers = ["graph", "vertices", "edges (symmetric)", "pages", "source", "source degree",
               "build s"]
    body = [[g["name"], f"{g['num_vertices']:,}", f"{g['num_edges']:,}", g["num_pages"],
             g["source"], f"{g['source_degree']:,}", benchlib.seconds(g["build_seconds"])]
            for g in graphs]
    return benchlib.markdown_table(headers, body, [False] + [True] * 6)


def comparison_table(rows: list[dict]) -> str:
    headers = ["graph", "alg", "seraph s", "(pull / sparse s)", "rounds", "checked", "scipy s",
               "scipy call", "seraph / scipy", "target", "networkit s", "seraph / networkit"]
    body = []
    for r in rows:
        st = r["stats"]
        ratio = r["seraph_seconds"] / r["scipy_seconds"]
        target = TARGETS[r["algorithm"]]
        body.append([
            r["graph"], r["algorithm"].upper(), benchlib.seconds(r["seraph_seconds"]),
            f"{st['kernel_time']:.3f} / {st['sparse_time']:.3f}",
            f"{st['rounds']} ({st['dense_rounds']} dense)",
            "ok" if r["seraph_ok"] else f"**FAILED**: {r['seraph_check']}",
            benchlib.seconds(r["scipy_seconds"]), f"`{r['scipy_best']}`",
            f"{ratio:.2f}x", f"≤ {target}x " + ("meets" if ratio <= target else "**misses**"),
            benchlib.seconds(r["networkit_seconds"]),
            _speed(r["seraph_seconds"], r["networkit_seconds"])
            + ("" if not r.get("networkit_check") else " (nk: " + r["networkit_check"] + ")")])
    return benchlib.markdown_table(headers, body, [False, False, True, True, True, False, True,
                                                   False, True, False, True, True])


def scipy_alternatives(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        if len(r["scipy"]) > 1:
            lines.append(f"{r['graph']} {r['algorithm'].upper()}: " + ", ".join(
                f"`{k}` {v:.3f} s" for k, v in r["scipy"].items()))
    return "\n".join(f"- {x}" for x in lines)


def ablation_table(rows: list[dict]) -> str:
    headers = ["graph", "alg", "memory", "schedule", "predictor", "rounds", "sweeps",
               "reentries", "updates attempted", "skipped strong", "skipped weak",
               "pages moved", "pass-eq.", "time s", "checked"]
    body = []
    for r in rows:
        st = r["stats"]
        mem = (f"paged, {st['num_slots']} of {st['num_pages']} slots" if r["paged"]
               else "resident")
        pe = st.get("pass_equivalents")
        body.append([r["graph"], r["algorithm"].upper(), mem, r["schedule"], r["predictor"],
                     st["rounds"], st["sweeps"], st["reentries"],
                     f"{st['updates_attempted']:,}", f"{st['skipped_strong']:,}",
                     f"{st['skipped_weak']:,}", st["pages_transferred"],
                     "—" if pe is None else f"{pe:.1f}", benchlib.seconds(r["seconds"]),
                     "ok" if r["ok"] else f"**FAILED**: {r['check']}"])
    return benchlib.markdown_table(headers, body, [False] * 5 + [True] * 9 + [False])


def report(results: dict, info: dict, command: str) -> str:
    nk = results["networkit"]
    ablation_graphs = ", ".join(f"{g['name']} ({g['num_pages']} pages of "
                                f"{g['page_edges']:,} edges)" for g in results["ablation_graphs"])
    return "\n".join([
        "# Engine on the CPU: Seraph beside scipy and networkit",
        "",
        f"Generated by `{command}`.",
        "",
        benchlib.machine_markdown(info),
        "",
        f"Times are the fastest of {results['repeat']} runs, data warm in memory. Seraph runs "
        f"its CPU backend with default options (all pages resident, pipelined schedule, "
        f"default predictors, push engine on) on {info['numba_threads']} numba threads; scipy "
        "is single-threaded; "
        + (f"networkit {info['versions'].get('networkit')} ran on "
           f"{results['networkit_threads']} threads." if nk else
           "networkit is not installed (`pip install networkit`), so its columns are empty.")
        + " *pull / sparse* splits Seraph's time between the dense pull kernel and the "
        "sparse rounds (push engine and bottom-up pulls); the rest is the scheduler.",
        "",
        benchlib.compile_line(results["compile"], "a tiny graph built, then every algorithm "
                              "under every schedule, predictor and memory mode of the "
                              "ablation"),
        "",
        "## Graphs",
        "",
        "Symmetrized, GAP weights 1..255 (hash of the edge), self-loops and duplicates "
        "removed, default page size. The source is the vertex of highest out-degree.",
        "",
        graphs_table(results["graphs"]),
        "",
        "## Seraph, scipy.sparse.csgraph and networkit",
        "",
        "Targets: BFS and CC at most 0.5x scipy, SSSP at most 1.0x scipy's Dijkstra. The "
        "scipy column is the faster of the calls tried:",
        "",
        scipy_alternatives(results["comparison"]),
        "",
        comparison_table(results["comparison"]),
        "",
        ("networkit graph construction (not in its times): " + ", ".join(
            f"{r['graph']} {r['networkit_build_seconds']:.1f} s"
            for r in results["comparison"] if r["algorithm"] == "bfs") + "." if nk else ""),
        "",
        "## Ablation: schedules x predictors (cf. the paper's Figures 9 and 10)",
        "",
        f"Stores rebuilt with smaller pages so that paging has pages to move: "
        f"{ablation_graphs}. *Resident* gives the engine all pages; *paged* a budget of the "
        f"vertex state plus {PAGED_FRACTION:.0%} of the pages (`device_memory`, see "
        "`Layout.plan`), so pages stream through the slots. When resident, pipelined and "
        "reentry are the same run, so only pipelined is listed. `single` is the full-pass "
        "baseline (every page once per round, no predictor, no push engine). *pass-eq.* is "
        "the time over one pass of the indices at the measured copy bandwidth. Each answer "
        "is checked: the first of each algorithm against scipy, the rest against it.",
        "",
        ablation_table(results["ablation"]),
        "",
    ])


# --------------------------------------------------------------------------- main
def ablation_page_edges(num_edges: int) -> int:
    """The largest power of two giving at least ABLATION_PAGES pages."""
    return 1 << max(8, (num_edges // ABLATION_PAGES).bit_length() - 1)


def describe(spec: GraphSpec, graph, build_seconds: float | None) -> dict:
    source = high_degree_source(graph)
    return {"name": spec.name, "num_vertices": graph.num_vertices,
            "num_edges": graph.num_edges, "num_pages": graph.num_pages,
            "page_edges": graph.page_edges, "source": source,
            "source_degree": int(graph.out_degrees()[source]),
            "build_seconds": build_seconds}


def run(args: argparse.Namespace, work: Path) -> dict:
    script = Path(__file__).resolve()
    with benchlib.fresh_numba_cache() as cache:
        cold = benchlib.run_case(script, "compile", {}, env={"NUMBA_CACHE_DIR": cache})
    warm = benchlib.run_case(script, "compile", {})
    networkit = has_networkit() and not args.no_networkit
    out = {"quick": args.quick, "repeat": args.repeat, "networkit": networkit,
           "compile": {"cold": cold, "cached": warm}, "graphs": [], "comparison": [],
           "ablation_graphs": [], "ablation": []}
    if networkit:
        import networkit as nk

        out["networkit_threads"] = nk.getMaxNumberOfThreads()
    specs = graph_specs(args.quick)
    for spec in specs:
        graph, built = build_store(spec, work / f"{spec.kind}{spec.scale}.zarr")
        out["graphs"].append(describe(spec, graph, built))
        out["comparison"] += compare(spec, graph, args.repeat, networkit)
    for spec in specs:
        if spec.kind not in args.ablation:
            continue
        m = next(g["num_edges"] for g in out["graphs"] if g["name"] == spec.name)
        page_edges = ablation_page_edges(m)
        graph, built = build_store(spec, work / f"{spec.kind}{spec.scale}-p{page_edges}.zarr",
                                   page_edges)
        out["ablation_graphs"].append(describe(spec, graph, built))
        out["ablation"] += ablation(spec, graph, args.ablation_repeat)
    return out


def main(argv: list[str] | None = None) -> int:
    if benchlib.dispatch_case({"compile": case_compile}, argv):
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.common_arguments(p, MARKDOWN)
    p.add_argument("--repeat", type=int, default=3, help="runs per timing (the fastest counts)")
    p.add_argument("--ablation-repeat", type=int, default=1, help="runs per ablation timing")
    p.add_argument("--ablation", nargs="*", default=["rmat", "grid"],
                   choices=["rmat", "uniform", "grid"], help="graphs of the ablation")
    p.add_argument("--no-networkit", action="store_true", help="leave networkit out")
    return benchlib.run_and_report("bench.py", p.parse_args(argv), argv, ["networkit"], run,
                                   report, MARKDOWN)


if __name__ == "__main__":
    sys.exit(main())
