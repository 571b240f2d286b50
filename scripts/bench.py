"""Seraph's CPU backend beside scipy.sparse.csgraph and networkit, plus an ablation of
schedules and predictors (docs/benchmarks/engine-cpu.md; the paper's Figures 9 and 10).
docs/benchmarks/cpu-vs-scipy.md is its comparison alone (``--ablation`` with no graphs).

    python scripts/bench.py [--quick] [--json-out FILE] [--md-out FILE] [--sources N]
        [--graphs road road-rcm grid rmat uniform] [--ablation [rmat uniform grid]]
        [--loaded]

Graphs (``--graphs``): a road-like 1024 x 1024 grid (10% of its edges removed, its vertex
ids shuffled, as real road networks' are), the same graph preprocessed with ``--order rcm``
(Seraph runs on the renumbered graph, scipy and networkit on the input as it came), the full
1024 x 1024 grid, and a symmetrized RMAT and uniform graph (scale 20, edge factor 16), all
with GAP weights 1..255, so BFS, CC and SSSP run on the same graphs. Targets on 2 cores
(:data:`TARGETS`): on the road-like grid all three at most 0.5x scipy's time (issue 21);
elsewhere BFS and CC at most 0.5x, SSSP at most 1.0x scipy's Dijkstra; networkit's time
beside them.

Every library runs from the same ``--sources`` random non-isolated sources (``--seed``; CC
takes none and runs as many times). Seraph's time is ``stats.call_time`` of the public call
(``seraph.bfs(...)`` etc., device "cpu", default options), reported as the median and the
maximum over the sources; each graph's first call of an algorithm (numba kernels loaded from
the cache, the store's arrays read, the engine's per-graph setup) is shown apart and is not
in them. The other libraries report their median over the same sources. The one-off compile
time is measured once, in a child process given an empty numba cache. Every Seraph answer is
checked against scipy in the same run. With ``--loaded`` every comparison runs twice: on
the machine as it is (*quiet*), then with one other process spinning on a core (*loaded*),
as another program on a developer's laptop would.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import benchlib
import numpy as np
import scipy.sparse.csgraph as csgraph

MARKDOWN = benchlib.DOCS / "engine-cpu.md"
#: Seraph's median time over scipy's, at most, by graph kind (issue 21 sets the road grid's).
TARGETS = {"road": {"bfs": 0.5, "cc": 0.5, "sssp": 0.5},
           "road-rcm": {"bfs": 0.5, "cc": 0.5, "sssp": 0.5}}
DEFAULT_TARGETS = {"bfs": 0.5, "cc": 0.5, "sssp": 1.0}
GRAPH_KINDS = ("road", "road-rcm", "grid", "rmat", "uniform")
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

    @property
    def side(self) -> int:
        return 1 << (self.scale // 2)

    def source(self):
        from partitioner import generators

        w = generators.gap_weights()
        if self.kind == "grid":
            return generators.grid(self.side, self.side, weights=w)
        return generators.GENERATORS[self.kind](self.scale, 16, seed=1, weights=w)

    def targets(self) -> dict[str, float]:
        return TARGETS.get(self.kind, DEFAULT_TARGETS)


def graph_specs(quick: bool, kinds: list[str]) -> list[GraphSpec]:
    scale = 14 if quick else 20
    side = 1 << (scale // 2)
    names = {"road": f"grid {side}x{side}, 10% removed, shuffled",
             "road-rcm": f"grid {side}x{side}, 10% removed, shuffled, --order rcm",
             "grid": f"grid {side}x{side}", "rmat": f"RMAT scale {scale}",
             "uniform": f"uniform scale {scale}"}
    return [GraphSpec(names[kind], kind, scale) for kind in GRAPH_KINDS if kind in kinds]


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


def load_graph(spec: GraphSpec, work: Path):
    """(graph, build seconds or None when reused). The road-like grid is built in memory:
    its ids are permuted after generation, which a store's edge source does not do."""
    if spec.kind in ("road", "road-rcm"):
        from partitioner.generators import gap_weights

        order = "rcm" if spec.kind == "road-rcm" else "input"
        seconds, graph = benchlib.timed(lambda: benchlib.shuffled_grid(spec.side, gap_weights(),
                                                                       order=order))
        return graph, seconds
    return build_store(spec, work / f"{spec.kind}{spec.scale}.zarr")


def input_graph(spec: GraphSpec, graph):
    """The graph as the user has it, which scipy and networkit run on: the road-like grid
    before renumbering for ``road-rcm``, else ``graph`` itself."""
    if spec.kind != "road-rcm":
        return graph
    from partitioner.generators import gap_weights

    return benchlib.shuffled_grid(spec.side, gap_weights())


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
#: The RunStats fields kept for each timed run (their medians go in the report).
RUN_FIELDS = ("call_time", "wall_time", "setup_time", "readback_time", "kernel_time",
              "sparse_time", "rounds", "dense_rounds")


def median_of(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def compare(spec: GraphSpec, graph, sources: list[int], networkit: bool, given,
            condition: str = "quiet") -> list[dict]:
    """BFS, CC and SSSP on one graph by every library, from the same sources; one row per
    algorithm. Seraph runs on ``graph``, the other libraries on ``given`` (the input as it
    came: the same graph, or the one ``graph`` renumbered); with one busy process beside
    where ``condition`` is "loaded"."""
    adj = given.to_scipy()
    nk_build, nkg = benchlib.timed(lambda: networkit_graph(adj)) if networkit else (None, None)
    rows = []
    with benchlib.busy_beside(condition == "loaded"):
        for alg in ALGORITHMS:
            print(f"[bench] {spec.name} ({condition}): {alg}", file=sys.stderr, flush=True)
            row = compare_algorithm(graph, given, adj, nkg, alg, sources)
            rows.append({"graph": spec.name, "kind": spec.kind, "algorithm": alg,
                         "condition": condition, "target": spec.targets()[alg],
                         "networkit_build_seconds": nk_build, **row})
    return rows


def compare_algorithm(graph, given, adj, nkg, alg: str, sources: list[int]) -> dict:
    """One algorithm from every source: Seraph's first call apart, then per source Seraph's
    public call on ``graph`` (checked against scipy on it), scipy's and networkit's calls on
    ``given``'s adjacency ``adj``."""
    from seraph.algorithms import get
    from seraph.validate import check, reference

    runs = [get(alg).source_for(s) for s in sources]  # CC: None, as many runs
    _, first = run_seraph(graph, alg, runs[0])
    seraph, problems, scipy_times, nk_times, nk_problems = [], [], {}, [], []
    for source in runs:
        index = None if source is None else given.vertex_index(source)  # scipy's numbering
        values, stats = run_seraph(graph, alg, source)
        seraph.append({"source": source, **{k: getattr(stats, k) for k in RUN_FIELDS}})
        problems.append(check(graph, alg, values,
                              None if source is None else graph.vertex_index(source)))
        for name, fn in scipy_runs(adj, alg, index).items():
            scipy_times.setdefault(name, []).append(benchlib.timed(fn)[0])
        if nkg is not None:
            seconds, run = benchlib.timed(lambda i=index: networkit_run(nkg, alg, i))
            nk_times.append(seconds)
            nk_problems.append(networkit_check(run, alg, reference(given, alg, index)))
    scipy_median = {name: statistics.median(t) for name, t in scipy_times.items()}
    fastest = min(scipy_median, key=scipy_median.get)
    problem = next((p for p in problems if p), None)
    return {"sources": runs, "first_call": first.call_time, "first_compile": first.compile_time,
            "seraph_median": median_of(seraph, "call_time"),
            "seraph_max": max(r["call_time"] for r in seraph), "seraph_runs": seraph,
            "seraph_ok": problem is None, "seraph_check": problem,
            "scipy": scipy_median, "scipy_times": scipy_times, "scipy_best": fastest,
            "scipy_seconds": scipy_median[fastest],
            "networkit_seconds": statistics.median(nk_times) if nk_times else None,
            "networkit_check": next((p for p in nk_problems if p), None)}


# --------------------------------------------------------------------------- the ablation
def warm_up(graph, source: int) -> None:
    """One untimed run of each algorithm: the store's arrays and the engine's per-graph
    page summary are then in memory and the kernels loaded."""
    for alg in ALGORITHMS:
        run_seraph(graph, alg, source)


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
    headers = ["graph", "vertices", "edges (symmetric)", "pages", "isolated vertices",
               "build s"]
    body = [[g["name"], f"{g['num_vertices']:,}", f"{g['num_edges']:,}", g["num_pages"],
             f"{g['isolated']:,}", benchlib.seconds(g["build_seconds"])] for g in graphs]
    return benchlib.markdown_table(headers, body, [False] + [True] * 5)


def comparison_table(rows: list[dict]) -> str:
    headers = ["graph", "condition", "alg", "sources", "seraph first call s",
               "seraph median s", "seraph max s", "(setup / pull / sparse s)", "rounds", "checked",
               "scipy median s", "scipy call", "seraph / scipy", "target", "networkit s",
               "seraph / networkit"]
    body = []
    for r in rows:
        runs, target = r["seraph_runs"], r["target"]
        ratio = r["seraph_median"] / r["scipy_seconds"]
        body.append([
            r["graph"], r["condition"], r["algorithm"].upper(), len(runs),
            benchlib.seconds(r["first_call"]),
            benchlib.seconds(r["seraph_median"]), benchlib.seconds(r["seraph_max"]),
            " / ".join(f"{median_of(runs, k):.3f}"
                       for k in ("setup_time", "kernel_time", "sparse_time")),
            f"{median_of(runs, 'rounds'):.0f} ({median_of(runs, 'dense_rounds'):.0f} dense)",
            "ok" if r["seraph_ok"] else f"**FAILED**: {r['seraph_check']}",
            benchlib.seconds(r["scipy_seconds"]), f"`{r['scipy_best']}`",
            f"{ratio:.2f}x",
            f"≤ {target}x " + ("met" if ratio <= target else
                               f"**not met** ({ratio / target:.1f}x over)"),
            benchlib.seconds(r["networkit_seconds"]),
            _speed(r["seraph_median"], r["networkit_seconds"])
            + ("" if not r.get("networkit_check") else " (nk: " + r["networkit_check"] + ")")])
    return benchlib.markdown_table(headers, body, [False] * 3 + [True] * 6 + [False, True,
                                                   False, True, False, True, True])


def cell_name(r: dict) -> str:
    return f"{r['graph']} {r['algorithm'].upper()} ({r['condition']})"


def scipy_alternatives(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        if len(r["scipy"]) > 1:
            lines.append(f"{cell_name(r)}: " + ", ".join(
                f"`{k}` {v:.3f} s" for k, v in r["scipy"].items()))
    return "\n".join(f"- {x}" for x in lines)


def targets_missed(rows: list[dict]) -> str:
    """A sentence per target not met, by how much."""
    missed = [f"{cell_name(r)}: {ratio:.2f}x scipy against at most "
              f"{r['target']}x ({ratio / r['target']:.1f}x over the target)"
              for r in rows if (ratio := r["seraph_median"] / r["scipy_seconds"]) > r["target"]]
    if not missed:
        return "Every target is met."
    return "Targets not met:\n\n" + "\n".join(f"- {x}" for x in missed)


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
    return "\n".join([
        "# Engine on the CPU: Seraph beside scipy and networkit",
        "",
        f"Generated by `{command}`.",
        "",
        benchlib.machine_markdown(info),
        "",
        f"Seraph runs its CPU backend through the public call (`seraph.bfs(...)` etc.) with "
        f"default options (all pages resident, pipelined schedule, default predictors, push "
        f"engine on) on {info['numba_threads']} numba threads; its times are "
        "`stats.call_time`, the whole public call. Every library runs from the same "
        f"{results['sources']} random non-isolated sources (seed {results['seed']}; CC runs "
        "as many times); Seraph's median and maximum over them are given, and its *first "
        "call* on each graph and algorithm (kernels loaded from the numba cache, arrays "
        "read, per-graph setup) is shown apart and is in neither. scipy is single-threaded; "
        "its figure is its median over the same sources; "
        + (f"networkit {info['versions'].get('networkit')} ran on "
           f"{results['networkit_threads']} threads." if nk else
           "networkit is not installed (`pip install networkit`), so its columns are empty.")
        + " *setup / pull / sparse* are Seraph's medians of `setup_time` (from the call to "
        "the first round), `kernel_time` (the dense pull kernel) and `sparse_time` (push "
        "and bottom-up rounds); the call's remainder is the scheduler, the readback and the "
        "result's conversions.",
        "",
        benchlib.compile_line(results["compile"], "a tiny graph built, then every algorithm "
                              "under every schedule, predictor and memory mode of the "
                              "ablation"),
        "",
        "## Graphs",
        "",
        "Symmetrized, GAP weights 1..255 (hash of the edge), self-loops and duplicates "
        "removed, default page size.",
        "",
        graphs_table(results["graphs"]),
        "",
        "## Seraph, scipy.sparse.csgraph and networkit",
        "",
        "Targets: on the road-like grid BFS, CC and SSSP at most 0.5x scipy's median "
        "(issue 21); elsewhere BFS and CC at most 0.5x scipy, SSSP at most 1.0x scipy's "
        "Dijkstra. The scipy column is the faster of the calls tried:",
        "",
        scipy_alternatives(results["comparison"]),
        "",
        comparison_table(results["comparison"]),
        "",
        targets_missed(results["comparison"]),
        "",
        ("networkit graph construction (not in its times): " + ", ".join(
            f"{r['graph']} {r['networkit_build_seconds']:.1f} s"
            for r in results["comparison"] if r["algorithm"] == "bfs") + "." if nk else ""),
        "",
        ablation_section(results) if results["ablation"] else "",
    ])


def ablation_section(results: dict) -> str:
    ablation_graphs = ", ".join(f"{g['name']} ({g['num_pages']} pages of "
                                f"{g['page_edges']:,} edges)" for g in results["ablation_graphs"])
    return "\n".join([
        "## Ablation: schedules x predictors (cf. the paper's Figures 9 and 10)",
        "",
        f"Stores rebuilt with smaller pages so that paging has pages to move: "
        f"{ablation_graphs}. Each runs from the vertex of highest out-degree; times are the "
        f"fastest of {results['ablation_repeat']} runs, data warm in memory. *Resident* gives "
        f"the engine all pages; *paged* a budget of the "
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
    isolated = (graph.out_degrees() == 0) & (graph.in_degrees() == 0)
    return {"name": spec.name, "kind": spec.kind, "num_vertices": graph.num_vertices,
            "num_edges": graph.num_edges, "num_pages": graph.num_pages,
            "page_edges": graph.page_edges, "isolated": int(isolated.sum()),
            "build_seconds": build_seconds}


def run(args: argparse.Namespace, work: Path) -> dict:
    script = Path(__file__).resolve()
    with benchlib.fresh_numba_cache() as cache:
        cold = benchlib.run_case(script, "compile", {}, env={"NUMBA_CACHE_DIR": cache})
    warm = benchlib.run_case(script, "compile", {})
    networkit = has_networkit() and not args.no_networkit
    out = {"quick": args.quick, "sources": args.sources, "seed": args.seed,
           "ablation_repeat": args.ablation_repeat, "networkit": networkit,
           "compile": {"cold": cold, "cached": warm}, "graphs": [], "comparison": [],
           "ablation_graphs": [], "ablation": []}
    if networkit:
        import networkit as nk

        out["networkit_threads"] = nk.getMaxNumberOfThreads()
    from seraph.sources import random_sources

    specs = graph_specs(args.quick, args.graphs)
    for spec in specs:
        graph, built = load_graph(spec, work)
        out["graphs"].append(describe(spec, graph, built))
        given = input_graph(spec, graph)
        sources = random_sources(given, args.sources, args.seed)
        for condition in ("quiet", "loaded") if args.loaded else ("quiet",):
            out["comparison"] += compare(spec, graph, sources, networkit, given, condition)
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
    p.add_argument("--graphs", nargs="+", default=list(GRAPH_KINDS), choices=GRAPH_KINDS,
                   help="graphs of the comparison with scipy")
    p.add_argument("--sources", type=int, default=8,
                   help="random sources per graph (CC runs as many times)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random sources")
    p.add_argument("--ablation-repeat", type=int, default=1, help="runs per ablation timing")
    p.add_argument("--ablation", nargs="*", default=["rmat", "grid"],
                   choices=["rmat", "uniform", "grid"],
                   help="graphs of the ablation (among --graphs; none: no ablation)")
    p.add_argument("--no-networkit", action="store_true", help="leave networkit out")
    p.add_argument("--loaded", action="store_true",
                   help="run the comparison again beside one busy process")
    return benchlib.run_and_report("bench.py", p.parse_args(argv), argv, ["networkit"], run,
                                   report, MARKDOWN)


if __name__ == "__main__":
    sys.exit(main())
