"""Where the work goes, round by round, under each predictor (issue 22's first question).

    python scripts/bench_predictors.py [--device cpu|cuda] [--json-out FILE] [--md-out FILE]
        [--trace-dir DIR] [--diagram NAME ...]

SSSP and CC by label propagation (union-find has no rounds) on R-MAT, uniform and
road-like grid graphs, under the predictors auto (the default), none, strong, weak and
combined (and weak and combined with each ``--diagram``, a shipped diagram's name or a
TOML file), at a budget of the vertex state plus ``--budget-fraction`` of the pages (pages
move, so dense rounds sweep them), from ``--sources`` random non-isolated sources (seed 0;
CC runs as many times). Per cell: the public call's median and maximum, and from the first
source's run its per-round log (``stats.round_log``: updates attempted, those that changed
a value, those each predictor skipped, edges read), totalled in the report and kept whole
in the JSON. Every call's answer is checked by its algorithm's verifier (outside the
timed call) and its device peak set beside its budget; a wrong answer or a peak over
budget fails the cell and the script. With
``--trace-dir`` each first run's trace is written there for ``seraph plot``, which draws
the log as its work-per-round panel.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import bench_gpu
import benchlib

MD_DEFAULT = benchlib.DOCS / "predictors-cpu.md"
PREDICTORS = ("auto", "none", "strong", "weak", "combined")
ALGORITHMS = ("sssp", "cc")


def graphs(args) -> dict[str, object]:
    from partitioner.generators import gap_weights

    w = gap_weights()
    return {f"RMAT-{args.scale}": benchlib.generated("rmat", args.scale, w, args.page_edges),
            f"uniform-{args.scale}": benchlib.generated("uniform", args.scale, w,
                                                        args.page_edges),
            f"road-like grid {args.side}": benchlib.shuffled_grid(args.side, w,
                                                                  args.page_edges)}


def variants(args) -> dict[str, dict]:
    """Each row's label and its predictor options."""
    rows = {p: {"predictor": p} for p in PREDICTORS}
    rows.update({f"{p} ({d})": {"predictor": p, "diagram": d}
                 for d in args.diagram for p in ("weak", "combined")})
    return rows


def run_as(alg: str) -> tuple[dict, object]:
    """The options the study runs ``alg`` with and the spec such a run uses: CC by label
    propagation (union-find has no rounds to predict), any other as registered."""
    from seraph.algorithms import cc, get

    special = {"cc": ({"components": "propagation"}, cc.PROPAGATION)}
    return special.get(alg, ({}, get(alg).spec))


def call(graph, alg: str, source: int | None, predictor: dict, budget: int, args,
         checks: benchlib.Checks, **extra):
    """One public call (:func:`run_as`); its answer and device peak then go to
    ``checks``."""
    import seraph
    from seraph.algorithms import get

    options = dict(device=args.device, device_memory=budget, **run_as(alg)[0], **predictor,
                   **extra)
    result = seraph.run(graph, alg, get(alg).source_for(source), **options)
    checks.call(graph, alg, source, result, budget)
    return result


def totals(log: list[dict]) -> dict:
    keys = ("rounds", "attempted", "succeeded", "skipped_strong", "skipped_weak", "edges")
    out = {k: sum(entry[k] for entry in log) for k in keys}
    out["entries"] = {kind: sum(entry["kind"] == kind for entry in log)
                      for kind in ("dense", "push", "bottom-up")}
    return out


def state_of(predictor: str, alg: str, device: str) -> str:
    """The predictor whose vertex state a run keeps: auto keeps the weak one beside the
    strong rule where the run's spec adds the weak history late (CC by propagation) and
    the backend says it pays (api.predictor_and_layout)."""
    from seraph.backends import backend_class

    if (predictor == "auto" and run_as(alg)[1].weak_after is not None
            and backend_class(device).weak_pays(run_as(alg)[1])):
        return "combined"
    return predictor


def cell(graph, name: str, alg: str, label: str, predictor: dict, sources: list,
         args) -> dict:
    # The same room for pages under every predictor, beside its own vertex state.
    room = bench_gpu.paged_budget(graph, alg, "pipelined", args.budget_fraction,
                                  state_of(predictor["predictor"], alg, args.device))
    trace, checks = args.trace_dir is not None, benchlib.Checks()
    first = call(graph, alg, sources[0], predictor, room, args, checks, trace=trace)
    if trace:
        file = f"{name}-{alg}-{label}.json".replace(" ", "_").replace("(", "").replace(")", "")
        first.trace.write(Path(args.trace_dir) / file, first.stats)
    times = [call(graph, alg, s, predictor, room, args, checks).stats.call_time
             for s in sources]
    if label == "auto":  # what it turned out to be
        label = f"auto ({first.stats.predictor})"
    return {"graph": name, "algorithm": alg, "predictor": label, "budget": room,
            "median": statistics.median(times), "max": max(times),
            "checks": checks.to_dict(1 + len(times)),
            "totals": totals(first.stats.round_log), "round_log": first.stats.round_log,
            "predictor_states": first.stats.predictor_states}


def run(args) -> list[dict]:
    from seraph.algorithms import get
    from seraph.sources import random_sources

    cells = []
    for name, graph in graphs(args).items():
        picked = random_sources(graph, args.sources, 0)
        for alg in ALGORITHMS:
            sources = picked if get(alg).needs_source else [None] * args.sources
            for label, predictor in variants(args).items():
                cells.append(cell(graph, name, alg, label, predictor, sources, args))
                bench_gpu.log(f"{name} {alg} {label}: {cells[-1]['checks']['line']}")
        # What this graph keeps on the device would count in the next graph's peaks.
        graph.release_device_memory()
    return cells


def report(cells: list[dict], info: dict, command: str) -> str:
    rows = []
    for c in cells:
        t = c["totals"]
        useful = t["succeeded"] / t["attempted"] if t["attempted"] else None
        rows.append([c["graph"], c["algorithm"], c["predictor"], benchlib.seconds(c["median"]),
                     benchlib.seconds(c["max"]), t["rounds"],
                     " / ".join(str(t["entries"][k]) for k in ("dense", "push", "bottom-up")),
                     f"{t['attempted']:,}", f"{t['succeeded']:,}",
                     "—" if useful is None else f"{useful:.1%}", f"{t['skipped_strong']:,}",
                     f"{t['skipped_weak']:,}", f"{t['edges']:,}",
                     c["checks"]["peak_over_budget"], c["checks"]["line"]])
    return "\n".join([
        "# Where the work goes under each predictor", "",
        f"Command: `{command}`", "", benchlib.machine_markdown(info), "",
        "SSSP and CC (label propagation) at a quarter budget. *median / max*: the public "
        "call over the random sources. The other columns are the first source's run, from "
        "`stats.round_log` (a push phase is one entry): *rounds*; *entries* dense / push "
        "phases / bottom-up; *attempted*: pulls attempted plus edges pushed; *changed*: "
        "updates that lowered a value; *useful*: changed over attempted; *skipped* by the "
        "strong and the weak rule; *edges*: edges read (in swept pages, pushed, pulled "
        "bottom-up). *peak / budget*: the largest device peak of the calls and the budget "
        "(— on the CPU). *checked*: the calls whose answers the algorithm's verifier "
        "checked, of the calls made.", "",
        benchlib.markdown_table(
            ["graph", "alg", "predictor", "median", "max", "rounds", "entries", "attempted",
             "changed", "useful", "skipped strong", "skipped weak", "edges", "peak / budget",
             "checked"], rows, [False] * 3 + [True] * 11 + [False]), ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--scale", type=int, default=20, help="of the R-MAT and uniform graphs")
    p.add_argument("--side", type=int, default=1024, help="of the road-like grid")
    p.add_argument("--page-edges", type=int, default=None)
    p.add_argument("--sources", type=int, default=4)
    p.add_argument("--budget-fraction", type=float, default=0.25)
    p.add_argument("--trace-dir", default=None, help="write each first run's trace here")
    p.add_argument("--diagram", action="append", default=[],
                   help="also run the weak predictor with this diagram (repeatable)")
    p.add_argument("--json-out", default=None)
    p.add_argument("--md-out", default=None, help=f"default {MD_DEFAULT}; '' for none")
    args = p.parse_args(argv)
    if args.trace_dir:
        Path(args.trace_dir).mkdir(parents=True, exist_ok=True)
    md_out = MD_DEFAULT if args.md_out is None else (Path(args.md_out) if args.md_out else None)
    return benchlib.run_cells("bench_predictors.py", args, argv, lambda: run(args), report,
                              md_out)

if __name__ == "__main__":
    raise SystemExit(main())
