"""One query over 1, 2 and 4 GPUs (issues 34 and 36): BFS, CC and SSSP (and PageRank)
through the public API on one graph under the same total device budget, every answer
checked; and the throughput of ``seraph run --random-sources K --gpus all``.

    python scripts/bench_multi_gpu.py --graph rmat --scale 27 --workdir DIR --generate-only
    python scripts/bench_multi_gpu.py --graph rmat --scale 27 --workdir DIR --gpus 1,2 \\
        --json-out FILE
    python scripts/bench_multi_gpu.py --store PATH --gpus 1,2,4 --throughput-only

The graph: a weighted (GAP weights, integers 1..255), symmetrized R-MAT or uniform graph
of ``2^--scale`` vertices (edge factor 16), or a ``--grid-side`` square grid, generated
into a store under ``--workdir`` (kept there and reused by a later call; a temporary one
otherwise), or an existing ``--store``. ``--generate-only`` builds the store and stops:
generating R-MAT-27 takes a device call of its own.

Each GPU count G of ``--gpus`` (those above the visible GPUs are left out), or of
``--workers`` with ``--device cpu``, runs in an MPI job of its own (``mpiexec -n G``, as
seraph starts its workers), whose processes open the store and make every call together
(``seraph.run(..., devices=G)``; G = 1 is the one-GPU engine, ``device="cuda"``). Per
algorithm (a *cell*):

- the budget: a quarter (``--budget-fraction``) of the algorithm's page bytes, split over
  the GPUs, on each GPU beside what it holds whatever its share of the pages: the vertex
  state (every worker holds every vertex's value) and, with several, the exchange's room
  (at least two page slots);
- one first call (it loads and pins the worker's pages, compiles), not in the median;
- ``--sources`` random non-isolated sources (``--seed``); CC and PageRank take none and run
  ``--unsourced-runs`` times: the median and the maximum of ``stats.call_time``;
- each GPU's bytes copied (``bytes_h2d``), its peak beside its budget, and the exchange's
  share of the engine's time (``exchange_time`` over ``wall_time``, the workers' largest);
- every call's answer checked by its algorithm's O(m) verifier (outside the timed call,
  the calls shared out over the job's processes) and every GPU's peak set beside its
  budget: "checked N of N". A wrong answer or a peak over budget fails the cell, and the
  script exits 1 after the report.

Then, for each of ``--throughput-algorithms``, ``seraph run ALG --random-sources K
--validate --json`` (K = ``--throughput-sources``) on one GPU and with ``--gpus all``
(``--workers`` the largest count on the CPU), each GPU's budget the same split: its sources
per second of busy time (each worker's summed ``call_time``s, the busiest one's), also
without each worker's first call (the one that loads and pins), and per second of the
whole run's wall time.

The whole script keeps within ``--total-limit`` seconds (below the device command's 600 s):
a job still running then is stopped, and the report shows what was measured. A CPU run of
the script itself:

    python scripts/bench_multi_gpu.py --device cpu --workers 1,2,3 --graph rmat --scale 10 \\
        --page-edges 1024 --sources 2
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_gpu
import benchlib

SCRIPT = Path(__file__).resolve()
#: Seconds a stopped job gets to end after SIGTERM, before SIGKILL.
STOP_SECONDS = 5.0


def log(message: str) -> None:
    bench_gpu.log(message)


class Clock(bench_gpu.Clock):
    """The script's time budget, counted from its making (not from the import)."""

    def __init__(self, total: float | None):
        super().__init__(total)
        self.start = time.perf_counter()

    def left(self) -> float | None:
        return None if self.total is None else \
            self.total - (time.perf_counter() - self.start)


# --------------------------------------------------------------------------- the graph
def store_name(args) -> str:
    what = f"grid{args.grid_side}" if args.graph == "grid" else \
        f"{args.graph}{args.scale}-ef{args.edge_factor}"
    return f"{what}-s{args.seed}-p{page_edges(args)}.zarr"


def page_edges(args) -> int:
    """--page-edges, else the default page size halved until the graph has 32 pages."""
    if args.graph == "grid":
        scale = max(1, (2 * args.grid_side * args.grid_side).bit_length() - 6)
        return bench_gpu.page_edges_for(scale, 16, args.page_edges)
    return bench_gpu.page_edges_for(args.scale, args.edge_factor, args.page_edges)


def the_store(ws: bench_gpu.Workspace, args, clock: Clock) -> tuple[Path, dict]:
    """The store to run on: ``--store``, or the generated graph's (reused where a complete
    one is there already); and how it came to be."""
    import seraph
    from partitioner.generators import GENERATORS, gap_weights
    from partitioner.writer import Options, write_store
    from seraph.errors import StoreError

    if args.store:
        return Path(args.store), {"name": Path(args.store).name, "generated": False}
    path = ws.store(store_name(args))
    name = f"grid {args.grid_side}x{args.grid_side}" if args.graph == "grid" else \
        f"{'RMAT' if args.graph == 'rmat' else 'uniform'}-{args.scale} ef{args.edge_factor}"
    desc = {"name": name, "generated": True, "reused": False, "preprocess_seconds": None}
    with contextlib.suppress(StoreError):
        if path.exists():
            seraph.open_graph(path)
            desc["reused"] = True
            log(f"{name}: reusing {path}")
            return path, desc
    if args.graph == "grid":
        source = GENERATORS["grid"](args.grid_side, args.grid_side, seed=args.seed,
                                    weights=gap_weights())
    else:
        source = GENERATORS[args.graph](args.scale, args.edge_factor, seed=args.seed,
                                        weights=gap_weights())
    options = Options(symmetrize=True, seed=args.seed, page_edges=page_edges(args),
                      memory=bench_gpu.preprocess_memory(args.preprocess_memory))
    log(f"{name}: generating into {path} (pages of {options.page_edges:,} edges)")
    start = time.perf_counter()
    with bench_gpu.time_limit(clock.limit(None), f"generating {name}"):
        write_store(source, path, options, force=True,
                    command=f"scripts/bench_multi_gpu.py ({name})")
    desc["preprocess_seconds"] = time.perf_counter() - start
    log(f"{name}: generated in {desc['preprocess_seconds']:.1f} s")
    return path, desc


def describe(graph, desc: dict, path: Path) -> dict:
    return {**desc, "store": str(path), "num_vertices": graph.num_vertices,
            "num_edges": graph.num_edges, "num_pages": graph.num_pages,
            "page_edges": graph.page_edges, "weighted": graph.weighted}


# --------------------------------------------------------------------------- budgets
def budget(graph, alg: str, workers: int, fraction: float, partitioned: bool) -> int:
    """Each worker's device budget: ``fraction`` of the algorithm's page bytes split over
    ``workers`` (at least two slots), beside its vertex state (its largest part's, where
    the run is ``partitioned``) and, over several partitioned workers, the exchange's
    room."""
    from seraph.algorithms import get
    from seraph.distributed.exchange import device_bytes
    from seraph.distributed.parts import part_of

    parts = [part_of(graph, workers, k) for k in range(workers)] \
        if partitioned and workers > 1 else [graph]
    layouts = [bench_gpu.resident_layout(part, alg, "pipelined") for part in parts]
    state = max(layout.state_bytes for layout in layouts)
    if partitioned and workers > 1:
        state += device_bytes(graph.num_vertices, get(alg).spec.dtype.itemsize)
    pages = max(2 * layouts[0].slot_bytes,
                fraction * bench_gpu.pass_bytes(graph, alg) / workers)
    return int(state + pages)


# --------------------------------------------------------------------------- in each job
def job(params_path: Path) -> int:
    """One MPI job's calls, made by every process together; the first writes the results
    after each cell, so that a job stopped at the limit leaves what it measured."""
    import seraph
    from seraph.algorithms import get
    from seraph.distributed.mpi import world

    benchlib.quiet()
    params = json.loads(params_path.read_text())
    comm = world()
    workers, rank = comm.size, comm.rank
    graph = seraph.open_graph(params["store"])
    over = {} if workers == 1 else \
        {"devices" if params["device"] == "cuda" else "workers": workers}
    out = {"workers": workers, "cells": [], "device": None}
    if rank == 0:
        out["device"] = bench_gpu.device_description(params["device"]) \
            if params["device"] == "cuda" else {"kind": "cpu"}
    for alg in params["algorithms"]:
        sources = params["sources"] if get(alg).needs_source else \
            [None] * params["unsourced_runs"]
        cell = job_cell(comm, graph, alg, sources, params["budgets"][alg][str(workers)],
                        params, over)
        if rank == 0:
            out["cells"].append(cell)
            write_json(Path(params["result"]), out)
        if cell.get("stopped"):
            break
    return 0


def job_cell(comm, graph, alg: str, sources: list, budget_: int, params: dict,
             over: dict) -> dict:
    """A cell's first call and timed calls over the job, each answer checked by one of
    the processes (the values are on all); the checks gathered on the first."""
    import seraph
    from seraph.algorithms import get
    from seraph.errors import SeraphError

    checks, runs, calls = benchlib.Checks(), [], [sources[0], *sources]
    cell = {"algorithm": alg, "workers": comm.size, "budget": budget_,
            "sources_requested": len(sources), "stopped": None, "error": None}
    last = 0.0
    for i, source in enumerate(calls):
        # The first process decides for all whether the next call fits before the limit.
        go = comm.bcast(time.time() + last < params["deadline"] if comm.rank == 0 else None)
        if not go:
            cell["stopped"] = f"the total limit, after {max(0, i - 1)} of {len(sources)}"
            break
        comm.barrier()  # the last call's checker is not waited for inside this call
        start = time.time()
        try:
            result = seraph.run(graph, alg, get(alg).source_for(source),
                                device=params["device"], device_memory=budget_, **over)
        except SeraphError as e:  # every process raises it alike (a budget too small)
            cell["error"] = f"{type(e).__name__}: {e}"
            break
        if i % comm.size == comm.rank:
            checks.call(graph, alg, source, result, budget_)
        if i == 0:
            cell["first_call"] = result.stats.call_time
        else:
            runs.append({"source": source, **figures(result.stats)})
        last = time.time() - start
    gathered = comm.gather(checks, root=0)
    if comm.rank != 0:
        return cell
    merged = benchlib.Checks()
    for part in gathered:
        merged.checked += part.checked
        merged.seconds = max(merged.seconds, part.seconds)
        merged.wrong += part.wrong
        merged.over_budget += part.over_budget
        merged.peaks += part.peaks
    made = min(len(calls), len(runs) + ("first_call" in cell))
    cell["checks"] = merged.to_dict(made)
    if cell["error"]:
        cell["checks"]["ok"] = False
        cell["checks"]["problems"].append(cell["error"])
        cell["checks"]["line"] += f"; {cell['error']}"
    if runs:
        cell["random"] = summarize(runs)
    return cell


#: Each worker's figures a call keeps: its bytes of pages copied, the edges it read in
#: place (pushes and bottom-up pulls), its peak and times (dense, sparse, exchange), and
#: its part's size.
PER_WORKER = ("worker", "bytes_h2d", "edges_pushed", "edges_pulled_bottom_up",
              "peak_device_memory", "wall_time", "kernel_time", "sparse_time",
              "exchange_time", "pages", "edges")


def figures(stats) -> dict:
    """One call's figures, and each worker's (one: the run's own)."""
    own = stats.workers or [{"worker": 0, **{k: getattr(stats, k) for k in PER_WORKER
                                             if k not in ("worker", "pages", "edges")}}]
    return {"call_time": stats.call_time, "wall_time": stats.wall_time,
            "setup_time": stats.setup_time, "readback_time": stats.readback_time,
            "exchange_time": stats.exchange_time, "exchange_bytes": stats.exchange_bytes,
            "bytes_h2d": stats.bytes_h2d, "peak_device_memory": stats.peak_device_memory,
            "rounds": stats.rounds, "resident": stats.resident,
            "per_worker": [{k: w.get(k) for k in PER_WORKER} for w in own]}


def summarize(runs: list[dict]) -> dict:
    times = [r["call_time"] for r in runs]
    workers = len(runs[0]["per_worker"])
    return {"n": len(runs), "median": statistics.median(times), "max": max(times),
            "engine_median": statistics.median(r["wall_time"] for r in runs),
            "exchange_share_median": statistics.median(
                r["exchange_time"] / r["wall_time"] if r["wall_time"] else 0.0 for r in runs),
            "bytes_per_worker_median": [statistics.median(
                r["per_worker"][k]["bytes_h2d"] for r in runs) for k in range(workers)],
            "in_place_per_worker_median": [statistics.median(
                (r["per_worker"][k]["edges_pushed"] or 0)
                + (r["per_worker"][k]["edges_pulled_bottom_up"] or 0) for r in runs)
                for k in range(workers)],
            "peak_per_worker": [max(r["per_worker"][k]["peak_device_memory"] or 0
                                    for r in runs) for k in range(workers)],
            "runs": runs}


def write_json(path: Path, payload: dict) -> None:
    """``payload`` at ``path``, whole once it has that name."""
    part = path.with_name(f".{path.name}.{os.getpid()}")
    part.write_text(json.dumps(payload, default=str))
    os.replace(part, path)


# --------------------------------------------------------------------------- the driver
def run_in_job(workers: int, params: dict, clock: Clock, reserve: float) -> dict:
    """One job of ``workers`` processes (started as seraph starts its workers), stopped at
    the limit; what it measured."""
    from seraph.distributed import launch

    with tempfile.TemporaryDirectory(prefix="bench-multi-gpu-") as tmp:
        left = clock.left()
        deadline = None if left is None else left - reserve
        result = Path(tmp) / "result.json"
        params = {**params, "result": str(result),
                  "deadline": time.time() + (deadline if deadline is not None else 1e9)}
        (Path(tmp) / "params.json").write_text(json.dumps(params))
        argv = launch.command(workers, [str(SCRIPT), "--job", str(Path(tmp) / "params.json")])
        status, stopped, _ = run_stoppable(argv, launch.environment(workers), None
                                           if deadline is None else deadline + reserve / 2)
        out = json.loads(result.read_text()) if result.exists() else \
            {"workers": workers, "cells": []}
        out["status"], out["stopped"] = status, stopped
        return out


def run_stoppable(argv: list[str], env: dict | None, timeout: float | None,
                  capture: bool = False) -> tuple[int | None, bool, bytes | None]:
    """Runs ``argv`` in a session of its own; past ``timeout`` seconds, SIGTERM to its
    process group, then SIGKILL. Returns its status, whether it was stopped, and its
    output where ``capture``."""
    proc = subprocess.Popen(argv, env=env, start_new_session=True,
                            stdout=subprocess.PIPE if capture else None)
    try:
        out, _ = proc.communicate(timeout=max(1.0, timeout) if timeout is not None else None)
        return proc.returncode, False, out
    except subprocess.TimeoutExpired:
        for signum in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)
            try:
                out, _ = proc.communicate(timeout=STOP_SECONDS)
                break
            except subprocess.TimeoutExpired:
                out = None
        return proc.returncode, True, out


def throughput(graph, path: Path, alg: str, workers: int, over: list[str], args,
               clock) -> dict:
    """``seraph run ALG --random-sources K --validate --json`` with the options ``over``
    (one worker, or ``workers`` source-parallel), each worker's budget the split one;
    its sources per second."""
    from seraph.distributed.spread import source_parallel

    k = args.throughput_sources
    memory = budget(graph, alg, workers, args.budget_fraction, partitioned=False)
    argv = [sys.executable, "-m", "seraph", "run", alg, str(path), "--random-sources",
            str(k), "--seed", str(args.seed), "--gpu-memory", str(memory), "--validate",
            "--json", "-q", *over]
    row = {"algorithm": alg, "workers": workers, "sources": k, "budget": memory,
           "command": "seraph " + shlex.join(argv[3:]),
           "source_parallel": source_parallel(k, workers), "stopped": None}
    left = clock.left()
    status, stopped, out = run_stoppable(
        argv, None, None if left is None else left - args.reserve / 2, capture=True)
    if stopped or not out:
        row["stopped"] = "the total limit" if stopped else f"exit status {status}"
        return row
    runs = json.loads(out)["runs"]
    busy: dict[int, list[float]] = {}
    for run in runs:
        busy.setdefault(run.get("worker", 0), []).append(run["time"])
    busiest = max(sum(t) for t in busy.values())
    after_first = max(sum(t[1:]) for t in busy.values())
    row.update(seconds=json.loads(out)["summary"]["seconds"], busy=busiest,
               per_second=len(runs) / busiest,
               per_second_after_first=(len(runs) - len(busy)) / after_first
               if after_first else None,
               per_second_wall=len(runs) / json.loads(out)["summary"]["seconds"],
               workers_used=len(busy), checks=cli_checks(runs, memory),
               runs=[{k: v for k, v in r.items() if k != "stats"} |
                     {"peak_device_memory": r["stats"]["peak_device_memory"]} for r in runs])
    return row


def cli_checks(runs: list[dict], memory: int) -> dict:
    """The checks of a command's runs: each validated by the command (``--validate``) and
    its peak within the budget."""
    checks = benchlib.Checks()
    for run in runs:
        where = f"from {run['source']}"
        if "validation" in run:
            checks.checked += 1
            if run["validation"] != "ok":
                checks.wrong.append(f"{where}: {run['validation']}")
        peak = run["stats"]["peak_device_memory"] or None
        checks.peaks.append((peak, memory))
        if peak is not None and peak > memory:
            checks.over_budget.append(f"{where}: device peak {benchlib.size(peak)} over "
                                      f"the budget {benchlib.size(memory)}")
    return checks.to_dict(len(runs))


def worker_counts(args) -> tuple[list[int], list[str], int | None]:
    """The worker counts to run, those left out (more GPUs than are visible), and the
    GPUs visible (None on the CPU)."""
    counts = args.workers if args.device == "cpu" else args.gpus
    if args.device == "cpu":
        return counts, [], None
    import cupy

    visible = cupy.cuda.runtime.getDeviceCount()
    return ([c for c in counts if c <= visible],
            [f"{c} GPUs: {visible} visible here" for c in counts if c > visible], visible)


def throughput_runs(args, counts: list[int]) -> list[tuple[int, list[str]]]:
    """(workers, the command's options) of the throughput rows: one worker, and
    ``--gpus all`` (or ``--throughput-workers``; on the CPU, the largest of ``--workers``)."""
    one = (1, ["--device", args.device])
    if args.device == "cpu":
        most = args.throughput_workers or max(counts, default=1)
        return [one] + ([(most, ["--workers", str(most)])] if most > 1 else [])
    if args.throughput_workers:
        most, flag = args.throughput_workers, str(args.throughput_workers)
    else:
        import cupy

        most, flag = cupy.cuda.runtime.getDeviceCount(), "all"
    return [one] + ([(most, ["--gpus", flag])] if most > 1 else [])


def run_all(args, clock: Clock) -> dict:
    import seraph
    from seraph.algorithms import get
    from seraph.sources import random_sources

    results: dict = {"graph": None, "sources": None, "jobs": [], "throughput": [],
                     "skipped": [], "failed": []}
    ws = bench_gpu.Workspace(args.workdir, keep=bool(args.workdir))
    try:
        try:
            path, desc = the_store(ws, args, clock)
        except bench_gpu.TimeLimit as e:
            results["skipped"].append(str(e))
            return results
        graph = seraph.open_graph(path)
        results["graph"] = describe(graph, desc, path)
        log(f"{results['graph']['name']}: {graph.num_vertices:,} vertices, "
            f"{graph.num_edges:,} stored edges, {graph.num_pages} pages")
        if args.generate_only:
            return results
        counts, left_out, results["visible"] = worker_counts(args)
        results["skipped"] += left_out
        sources = random_sources(graph, args.sources, args.seed)
        results["sources"] = sources
        budgets = {alg: {str(w): budget(graph, alg, w, args.budget_fraction, True)
                         for w in counts} for alg in args.algorithms}
        results["budgets"] = budgets
        params = {"store": str(path), "device": args.device, "algorithms": args.algorithms,
                  "sources": sources, "unsourced_runs": args.unsourced_runs,
                  "budgets": budgets}
        for workers in [] if args.throughput_only else counts:
            if clock.exhausted(args.reserve):
                results["skipped"].append(f"{workers} worker(s): the total limit was reached")
                continue
            log(f"{workers} worker(s)")
            done = run_in_job(workers, params, clock, args.reserve)
            results["jobs"].append(done)
            for cell in done["cells"]:
                if cell["stopped"]:
                    results["skipped"].append(f"{workers} worker(s) {cell['algorithm']}: "
                                              f"stopped by {cell['stopped']} sources")
                results["failed"] += [f"{workers} worker(s) {cell['algorithm']}: {p}"
                                      for p in cell.get("checks", {}).get("problems", [])]
            if done["stopped"] or done["status"]:
                why = "the total limit" if done["stopped"] else f"exit status {done['status']}"
                results["skipped"].append(f"{workers} worker(s): stopped ({why}) after "
                                          f"{len(done['cells'])} cell(s)")
        for alg in args.throughput_algorithms if args.throughput_sources else ():
            if not get(alg).needs_source:
                continue
            for workers, over in throughput_runs(args, counts):
                if clock.exhausted(args.reserve):
                    results["skipped"].append(f"throughput {alg} on {workers}: the total "
                                              "limit was reached")
                    continue
                log(f"throughput: {alg}, {args.throughput_sources} sources on {workers}")
                row = throughput(graph, path, alg, workers, over, args, clock)
                results["throughput"].append(row)
                results["failed"] += [f"throughput {alg} on {workers}: {p}"
                                      for p in row.get("checks", {}).get("problems", [])]
    finally:
        ws.close()
    return results


# --------------------------------------------------------------------------- report
def report(results: dict, info: dict, command: str, args) -> str:
    g = results["graph"] or {}
    unit = "GPUs" if args.device == "cuda" else "workers"
    device = next((job["device"] for job in results["jobs"] if job.get("device")), None)
    lines = ["# One query over several GPUs (issues 34 and 36)", "", f"Command: `{command}`",
             "", f"- Device: {device['name'] if device and 'name' in device else args.device}"
             + (f", {results['visible']} visible" if results.get("visible") else ""),
             benchlib.machine_markdown(info)]
    if g:
        lines += [f"- Graph: {g['name']} ({g['store']}): {g.get('num_vertices', 0):,} "
                  f"vertices, {g.get('num_edges', 0):,} stored edges, "
                  f"{g.get('num_pages', 0)} pages of {g.get('page_edges', 0):,} edges"
                  + (f"; generated in {g['preprocess_seconds']:.1f} s"
                     if g.get("preprocess_seconds") else "")]
    if results["jobs"]:  # a --throughput-only run has none
        lines += ["", f"Each of the {unit}: the vertex state (and, with several, the exchange's "
                  f"room) plus {args.budget_fraction:g} of the algorithm's page bytes split "
                  f"over them. Seconds of `stats.call_time` over {args.sources} random sources "
                  f"(CC and PageRank, which take none: {args.unsourced_runs} run(s)); "
                  "*speedup*: the median on one over this median; *pages copied*: each one's "
                  "median bytes of pages copied to its device; *edges in place*: each one's "
                  "median of the edges its pushes and bottom-up pulls read in place (at most: "
                  "a pull stops a row early); *peaks of budget*: each one's "
                  "largest peak, beside its budget; *exchange*: the median share of the "
                  "engine's time in the exchange.", ""]
        rows, single = [], {}
        for done in results["jobs"]:
            for cell in done["cells"]:
                s = cell.get("random")
                if done["workers"] == 1 and s:
                    single[cell["algorithm"]] = s["median"]
                rows.append(query_row(cell, s, single.get(cell["algorithm"])))
        lines.append(benchlib.markdown_table(
            ["alg", unit, "budget each", "sources", "first call", "median", "max", "speedup",
             "pages copied", "edges in place", "peaks of budget", "exchange", "checked"], rows,
            [False, True, True, False] + [True] * 8 + [False]))
    if results["throughput"]:
        lines += ["", f"`seraph run ALG --random-sources K --validate` on one and over all "
                  f"{unit}, source-parallel: sources a second of the busiest one's summed "
                  "call times, the same without each one's first call (it loads and pins "
                  "the graph), and of the command's wall time for the sources.", ""]
        one = {r["algorithm"]: r.get("per_second") for r in results["throughput"]
               if r["workers"] == 1}
        trows = [throughput_row(r, one.get(r["algorithm"])) for r in results["throughput"]]
        lines.append(benchlib.markdown_table(
            ["alg", unit, "sources", "budget each", "sources/s", "after first", "wall",
             "vs one", "checked"], trows, [False, True, True, True, True, True, True, True,
                                           False]))
    if results["skipped"]:
        lines += ["", "Skipped: " + "; ".join(results["skipped"]) + "."]
    if results["failed"]:
        lines += ["", "**Failed checks:** " + "; ".join(results["failed"])]
    return "\n".join(lines + [""])


def query_row(cell: dict, s: dict | None, single: float | None) -> list:
    checks = cell.get("checks", {})
    label = "—" if not s else f"{s['n']}" + (f" of {cell['sources_requested']}"
                                             if s["n"] < cell["sources_requested"] else "")
    if not s:
        return [cell["algorithm"], cell["workers"], benchlib.size(cell["budget"]), label,
                benchlib.seconds(cell.get("first_call")), "—", "—", "—", "—", "—", "—", "—",
                checks.get("line", f"stopped: {cell['stopped']}")]
    bytes_each = " / ".join(benchlib.size(b) for b in s["bytes_per_worker_median"])
    in_place = " / ".join(f"{e / 1e6:,.1f} M" if e >= 1e6 else f"{e:,.0f}"
                          for e in s["in_place_per_worker_median"])
    peaks = " / ".join(benchlib.size(p or None) for p in s["peak_per_worker"])
    share = f"{s['exchange_share_median']:.0%}" if cell["workers"] > 1 else "—"
    return [cell["algorithm"], cell["workers"], benchlib.size(cell["budget"]), label,
            benchlib.seconds(cell.get("first_call")), benchlib.seconds(s["median"]),
            benchlib.seconds(s["max"]), benchlib.ratio(single, s["median"]), bytes_each,
            in_place, f"{peaks} of {benchlib.size(cell['budget'])}", share,
            checks.get("line", "—")]


def throughput_row(row: dict, one: float | None) -> list:
    if row.get("stopped"):
        return [row["algorithm"], row["workers"], row["sources"],
                benchlib.size(row["budget"]), "—", "—", "—", "—", f"stopped: {row['stopped']}"]
    after = row["per_second_after_first"]
    return [row["algorithm"], row["workers"], row["sources"], benchlib.size(row["budget"]),
            f"{row['per_second']:.2f}", "—" if after is None else f"{after:.2f}",
            f"{row['per_second_wall']:.2f}", benchlib.ratio(row["per_second"], one),
            row["checks"]["line"]]


# --------------------------------------------------------------------------- main
def counts(text: str) -> list[int]:
    try:
        found = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give counts such as 1,2,4") from None
    if not found or min(found) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: counts of at least 1")
    return sorted(set(found))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from seraph.algorithms import ALGORITHMS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--job", default=None, help=argparse.SUPPRESS)  # in each job's process
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--gpus", type=counts, default=[1, 2, 4],
                   help="GPU counts to compare (those above the visible GPUs are left out)")
    p.add_argument("--workers", type=counts, default=[1, 2],
                   help="with --device cpu: CPU worker counts to compare")
    p.add_argument("--graph", default="rmat", choices=("rmat", "uniform", "grid"))
    p.add_argument("--scale", type=int, default=27)
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--grid-side", type=int, default=4096)
    p.add_argument("--store", default=None, help="an existing store instead of a generated "
                   "graph")
    p.add_argument("--workdir", default=None, help="where the generated store goes, kept and "
                   "reused (default: a temporary directory under build/, removed)")
    p.add_argument("--generate-only", action="store_true",
                   help="generate the store (under --workdir) and stop")
    p.add_argument("--page-edges", type=int, default=None,
                   help="edges a page (default 2^22, halved until there are 32 pages)")
    p.add_argument("--preprocess-memory", default=None,
                   help="the partitioner's host memory (default half the RAM, at most 64 GiB)")
    p.add_argument("--algorithms", nargs="+", default=["bfs", "cc", "sssp"],
                   choices=tuple(ALGORITHMS))
    p.add_argument("--sources", type=int, default=8, help="random sources a cell")
    p.add_argument("--unsourced-runs", type=int, default=3,
                   help="runs of an algorithm that takes no source (CC, PageRank)")
    p.add_argument("--seed", type=int, default=1, help="of the generator and the sources")
    p.add_argument("--budget-fraction", type=float, default=0.25,
                   help="the page bytes the budgets hold in all, split over the workers")
    p.add_argument("--throughput-algorithms", nargs="+", default=["sssp"],
                   choices=tuple(ALGORITHMS))
    p.add_argument("--throughput-sources", type=int, default=16,
                   help="K of the --random-sources row (0: none)")
    p.add_argument("--throughput-only", action="store_true",
                   help="only the --random-sources rows (a device call of their own, where "
                        "the checks of both would not fit one)")
    p.add_argument("--throughput-workers", type=int, default=None,
                   help="workers of that row (default: every visible GPU, --gpus all; on "
                        "the CPU the largest --workers)")
    p.add_argument("--total-limit", type=float, default=540.0,
                   help="seconds for the whole script; a job still running then is stopped")
    p.add_argument("--reserve", type=float, default=10.0,
                   help="seconds kept back for stopping a job and the report")
    p.add_argument("--json-out", default=None, help="write the raw figures here as JSON")
    p.add_argument("--md-out", default="", help="also write the markdown report here")
    args = p.parse_args(argv)
    if args.sources < 1 or args.unsourced_runs < 1:
        p.error("--sources and --unsourced-runs must be at least 1")
    if not 0 < args.budget_fraction <= 1:
        p.error("--budget-fraction must be in (0, 1]")
    if args.generate_only and not args.workdir:
        p.error("--generate-only keeps the store under --workdir: give one")
    if args.throughput_only and not args.throughput_sources:
        p.error("--throughput-only needs --throughput-sources")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.job:
        return job(Path(args.job))
    bench_gpu.require_device(args.device)
    benchlib.quiet()
    command = "python scripts/bench_multi_gpu.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    info = benchlib.machine(["mpi4py", *(["cupy"] if args.device == "cuda" else [])])
    clock = Clock(args.total_limit)
    results = run_all(args, clock)
    benchlib.finish_machine(info)
    payload = {"machine": info, "command": command, "args": vars(args), **results}
    benchlib.write_outputs(payload, args.json_out, report(results, info, command, args),
                           args.md_out or None)
    for problem in results["failed"]:
        print(f"bench_multi_gpu: {problem}", file=sys.stderr)
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
