"""Seraph beside EMOGI and Subway on the same graphs, from the same sources, the systems
alternated source by source, every answer checked (issue 33, item 5; issue 21's table).

    python scripts/bench_peers.py --device cuda [--graphs rmat uniform grid road]
        [--rmat-scale 12] [--uniform-scale 12] [--grid-side 64]
        [--algorithms bfs cc pagerank sssp sswp] [--peers-dir .peers]
        [--build-dir build/peers] [--json-out FILE] [--md-out FILE]

The peers are not part of Seraph (scripts/peers.py says where to clone them, how they are
built and what their timers include): they are built here into ``--build-dir`` (reused
while their sources and flags are unchanged) and run as subprocesses. A peer that is
absent is skipped, the report says "not built" and why; a peer that fails to build fails
the run (exit 1) after the report.

Graphs: bench_matrix.py's builders, all weighted (GAP weights, integers 1..255),
symmetrized, in memory, in input order: RMAT-``--rmat-scale`` and
uniform-``--uniform-scale`` (edge factor 16), a ``--grid-side`` square grid and the
road-like grid (10% of its edges removed, ids shuffled). Each is written in EMOGI's and
Subway's formats in the work directory; a peer's files are deleted once no later cell
needs them, and the SSSP cell needs the most: about 20 bytes a stored edge of disk
(EMOGI's 8-byte edges and 4-byte weights, Subway's (head, weight) pairs).

Per graph and algorithm (a *cell*): Seraph's public call on ``--device`` with
``device_memory`` = the vertex state plus ``--budget-fraction`` of the algorithm's page
bytes, as bench_matrix.py; its first call (pins, uploads, compiles) is reported apart. Then
for each of ``--sources`` random non-isolated sources (``--seed``; CC and PageRank take
none and run as many times) every system runs once, the order rotated source by source:
Seraph's ``stats.call_time``; EMOGI's and Subway's own printed timers (and their process
wall time, in the JSON). EMOGI runs zero-copy (``-m 2``) with ``-t 2`` and, by default, its
4-byte-edge ``_32`` programs (``--emogi-edges 8``: the plain ones). Subway runs its
``--subway-mode`` (async) programs with its device edge buffer capped to
``--budget-fraction`` of its edges (and at least the largest degree, or it cannot
partition), through the knob peers.py patches in; ``--no-subway-cap`` leaves its own rule
(0.9 of the card). EMOGI is not started where its managed allocation (its edges, SSSP's
weights) would pass 0.9 of the card's free memory: asking for more can hang the GPU.
Before each peer run CuPy's pools give back the blocks Seraph's calls left free (the
graph's device cache, within the budget, stays, as it does between Seraph's calls).

Checks, all outside the timed calls: BFS, CC, SSSP and SSWP answers of every system by the
algorithm's verifier (``Entry.verify``; the peers' CC labels are compared as classes); each
Seraph call's device peak beside its budget. PageRank: every system's answer as its L1
error against a float64 power iteration computed here (same damping, run to
``--tolerance`` / 100), and Seraph's by its own verifier too. The stopping rules differ and
are not made to match: Seraph stops when an iteration's L1 change is below
``--tolerance``; EMOGI when no vertex's residual is above ``-l`` (given ``--tolerance``:
its leftover residual, scaled like Seraph's ranks, is then below ``--tolerance`` in L1);
Subway's ``pr`` has its damping 0.85 and its threshold 0.01 fixed in its code. An
algorithm not registered in ``seraph.algorithms`` is skipped with a note.

A CPU smoke run (no GPU, peers absent or not): ``--device cpu --graphs rmat
--rmat-scale 8 --sources 2 --md-out ''``.
"""

from __future__ import annotations

import argparse
import math
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bench_gpu
import bench_matrix
import benchlib
import numpy as np
import peers
from numba import njit, prange

REPO = Path(__file__).resolve().parent.parent
MD_DEFAULT = benchlib.DOCS / "peers-gpu.md"
#: Cells in this order: the unweighted files serve the first three, then are dropped.
ORDER = ("bfs", "cc", "pagerank", "sssp", "sswp")
WEIGHTED = ("sssp", "sswp")
NAMES = {"seraph": "Seraph", "seraph-delta": "Seraph (delta)", peers.EMOGI: "EMOGI",
         peers.SUBWAY: "Subway"}
#: PageRank's methods, each Seraph's own system in a PageRank cell beside the same peer runs.
METHODS = {"power": "seraph", "delta": "seraph-delta"}


# --------------------------------------------------------------------------- the peers
def build_peers(args) -> dict:
    """``{"programs": {system: {alg: binary}}, "notes": {system: why not built},
    "failed": [build errors], "commits": {system: its sources' commit}}``."""
    out = {"programs": {}, "notes": {}, "failed": [], "commits": {}}
    for system in (peers.EMOGI, peers.SUBWAY):
        try:
            built = peers.build(args.peers_dir, args.build_dir, arch=args.arch,
                                systems=(system,), log=bench_gpu.log)[system]
        except peers.PeerMissing as e:
            out["notes"][system] = f"not built: {e}"
            continue
        except peers.PeerError as e:
            out["notes"][system] = f"not built: the build FAILED: {e}"
            out["failed"].append(f"{NAMES[system]}: {e}")
            continue
        out["programs"][system] = {alg: built[program(system, alg, args)]
                                   for alg in peers.ALGORITHMS[system]}
        out["commits"][system] = source_commit(Path(args.peers_dir) / peers.UPSTREAM[system][0])
    return out


def program(system: str, alg: str, args) -> str:
    if system == peers.EMOGI:
        return alg + ("_32" if args.emogi_edges == 4 else "")
    return f"{peers.SUBWAY_SHORT[alg]}-{args.subway_mode}"


def source_commit(path: Path) -> str | None:
    if not (path / ".git").exists():
        return None  # git would answer with the enclosing repository's commit
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


class Inputs:
    """A graph's files in the peers' formats, written when first asked for and deleted when
    no later cell needs them."""

    def __init__(self, graph, work: Path, emogi_weights: bool):
        self.graph, self.dir, self.emogi_weights = graph, work / "peer-inputs", emogi_weights
        self.dir.mkdir(parents=True, exist_ok=True)
        self.files: dict[tuple[str, bool], Path] = {}
        self.bytes: dict[str, int] = {}

    def get(self, system: str, weighted: bool) -> Path:
        key = (system, weighted if system == peers.SUBWAY else self.emogi_weights)
        if key not in self.files:
            start = time.perf_counter()
            if system == peers.EMOGI:
                self.files[key] = peers.write_emogi(self.graph, self.dir, key[1])
            else:
                self.files[key] = peers.write_subway(self.graph, self.dir, key[1])
            size = sum(p.stat().st_size for p in self._paths(key))
            self.bytes[f"{system}{'-weighted' if key[1] else ''}"] = size
            bench_gpu.log(f"wrote {NAMES[system]}'s input ({benchlib.size(size)}) in "
                          f"{time.perf_counter() - start:.1f} s")
        return self.files[key]

    def drop(self, system: str, weighted: bool | None = None) -> None:
        for key in [k for k in self.files if k[0] == system and weighted in (None, k[1])]:
            for path in self._paths(key):
                path.unlink(missing_ok=True)
            del self.files[key]

    def _paths(self, key) -> list[Path]:
        path = self.files[key]
        if key[0] == peers.SUBWAY:
            return [path]
        return [Path(f"{path}.{s}") for s in ("col", "dst", "val")
                if Path(f"{path}.{s}").exists()]


def subway_cap(graph, fraction: float) -> int:
    """Subway's edge buffer in edges: ``fraction`` of the stored edges, at least the largest
    out-degree (a vertex's edges go to the device in one partition)."""
    return max(math.ceil(fraction * graph.num_edges), int(graph.out_degrees().max(initial=0)), 1)


# --------------------------------------------------------------------------- PageRank's reference
@njit(parallel=True, cache=True)
def _pull(indptr, indices, share, out):
    for v in prange(len(out)):
        total = 0.0
        for i in range(indptr[v], indptr[v + 1]):
            total += share[indices[i]]
        out[v] = total


#: The reference's pull on a GPU: a thread a vertex, in float64 (no code of Seraph's).
_PULL_CUDA = r"""
extern "C" __global__ void pull(const long long* indptr, const int* indices,
                                const double* share, double* out, long long n) {
    long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (v >= n) return;
    double total = 0.0;
    for (long long i = indptr[v]; i < indptr[v + 1]; ++i) total += share[indices[i]];
    out[v] = total;
}
"""


def reference_pagerank(graph, damping: float, tolerance: float, device: str = "cpu",
                       max_iterations: int = 10_000) -> dict:
    """PageRank in float64 by power iteration, networkx's conventions (dangling rank
    spread uniformly), until an iteration's L1 change is below ``tolerance``; on the GPU
    where the cells run on it (a billion-edge graph's hundred iterations take minutes on
    the host's cores)."""
    start = time.perf_counter()
    indptr, indices, _ = graph.csc()
    n = graph.num_vertices
    if device == "cuda":
        import cupy as xp

        kernel = xp.RawKernel(_PULL_CUDA, "pull")
        indptr, indices = xp.asarray(indptr), xp.asarray(indices)

        def pull(share, out):
            kernel(((n + 255) // 256,), (256,), (indptr, indices, share, out, np.int64(n)))
    else:
        xp = np

        def pull(share, out):
            _pull(indptr, indices, share, out)
    degrees = xp.asarray(graph.out_degrees(), dtype=np.float64)
    dangling = degrees == 0
    inverse = xp.where(dangling, 0.0, 1.0 / xp.where(dangling, 1.0, degrees))
    x, sums = xp.full(n, 1.0 / n), xp.empty(n)
    change, iterations = math.inf, 0
    while change >= tolerance and iterations < max_iterations:
        pull(x * inverse, sums)
        new = damping * sums + (1 - damping + damping * float(x[dangling].sum())) / n
        change = float(xp.abs(new - x).sum())
        x, iterations = new, iterations + 1
    ranks = x.get() if device == "cuda" else x
    return {"ranks": ranks, "iterations": iterations, "change": change,
            "seconds": time.perf_counter() - start}


# --------------------------------------------------------------------------- one cell
class Record:
    """One system's runs in a cell: times, checks and (PageRank) L1 errors."""

    def __init__(self):
        self.times: list[float] = []
        self.walls: list[float] = []
        self.rounds: list[int] = []
        self.errors: list[float] = []
        self.peaks: list[int] = []  # Seraph's device peaks
        self.unconverged = 0  # Seraph's PageRank calls that ran out of iterations
        self.calls = self.checked = 0
        self.problems: list[str] = []
        self.failed: list[str] = []

    def summary(self) -> dict:
        t = self.times
        return {"n": len(t), "times": t, "median": statistics.median(t) if t else None,
                "max": max(t) if t else None,
                "wall_median": statistics.median(self.walls) if self.walls else None,
                "rounds_median": statistics.median(self.rounds) if self.rounds else None,
                "l1_errors": self.errors,
                "l1_median": statistics.median(self.errors) if self.errors else None,
                "l1_max": max(self.errors) if self.errors else None,
                "peak_max": max(self.peaks) if self.peaks else None,
                "unconverged": self.unconverged,
                "calls": self.calls, "checked": self.checked, "problems": self.problems,
                "failed": self.failed, "ok": not self.problems and not self.failed}


def check_answer(graph, alg: str, values, s: int | None, record: Record, where: str,
                 reference: dict | None, args) -> None:
    """Checks one answer into ``record``: PageRank's L1 error, else the verifier's verdict."""
    from seraph.algorithms import get

    record.calls += 1
    if values is None:
        return
    if alg == "pagerank":
        record.errors.append(float(np.abs(np.asarray(values, np.float64)
                                          - reference["ranks"]).sum()))
        record.checked += 1
        return
    verdict = get(alg).verify(graph, values, s, None)
    record.checked += 1
    if verdict:
        record.problems.append(f"{where}: {verdict}")


def seraph_call(graph, alg: str, source, budget: int, args, record: Record, reference,
                first: bool = False, method: str = "power") -> float:
    """One public call (PageRank by ``method``), checked; returns its call time (recorded
    unless ``first``)."""
    import seraph
    from seraph.algorithms import get

    entry = get(alg)
    options = {"device": args.device, "device_memory": budget}
    if alg == "pagerank":
        options.update(damping=args.damping, tolerance=args.tolerance,
                       max_iterations=args.max_iterations, method=method)
    result = seraph.run(graph, alg, entry.source_for(source), **options)
    stats = result.stats
    s = graph.vertex_index(source) if entry.needs_source else None
    where = f"Seraph {alg}" + (f" from {source}" if entry.needs_source else "")
    check_answer(graph, alg, result.values, s, record, where, reference, args)
    if alg == "pagerank":  # its own verifier too, with the run's parameters
        record.unconverged += not result.converged
        verdict = entry.verify(graph, result.values, None, None, damping=args.damping,
                               tolerance=args.tolerance)
        if verdict:
            record.problems.append(f"{where}: {verdict}")
    peak = stats.peak_device_memory or None
    if peak is not None:
        record.peaks.append(peak)
    if peak is not None and peak > budget:
        record.problems.append(f"{where}: device peak {benchlib.size(peak)} over the budget "
                               f"{benchlib.size(budget)}")
    if not first:
        record.times.append(stats.call_time)
        if getattr(stats, "rounds", None) is not None:
            record.rounds.append(stats.rounds)
    return stats.call_time


def peer_call(system: str, graph, alg: str, source, args, binaries: dict, inputs: Inputs,
              record: Record, reference, clock, work: Path) -> None:
    from seraph.algorithms import get

    s = graph.vertex_index(source) if get(alg).needs_source else None
    timeout = min(args.peer_timeout, max(1.0, clock.left() or args.peer_timeout))
    bench_gpu.free_device_memory(args.device, collect=False)  # the peer needs the card
    binary = binaries[system][alg]
    where = f"{NAMES[system]} {alg}" + (f" from {source}" if s is not None else "")
    if system == peers.EMOGI and (refused := managed_too_large(graph, alg, args)):
        record.calls += 1
        record.failed.append(f"{where}: not run: {refused}")
        return
    if system == peers.EMOGI:
        run = peers.run_emogi(binary, inputs.get(system, alg in WEIGHTED), alg, s,
                              timeout=timeout, damping=args.damping,
                              threshold=args.tolerance, max_iterations=args.max_iterations,
                              answer_dir=work)
    else:
        cap = None if args.no_subway_cap else subway_cap(graph, args.budget_fraction)
        run = peers.run_subway(binary, inputs.get(system, alg in WEIGHTED), alg, s,
                               timeout=timeout, partition_edges=cap, answer_dir=work)
    if run.failed:
        record.calls += 1
        record.failed.append(f"{where} ({run.program}): {run.failed}")
        return
    record.times.append(run.seconds)
    record.walls.append(run.wall)
    if run.rounds is not None:
        record.rounds.append(run.rounds)
    answer = run.answer
    if alg == "cc" and answer is not None:
        from seraph.algorithms.cc import component_labels

        answer = component_labels(graph, answer)  # smallest member, as input ids
    check_answer(graph, alg, answer, s, record, where, reference, args)


def managed_too_large(graph, alg: str, args) -> str | None:
    """Why EMOGI must not run, or None: it takes its edges (and SSSP's weights) in managed
    memory, and asking for more than the card has free can hang the GPU, not only EMOGI."""
    try:
        import cupy as cp

        free, _ = cp.cuda.runtime.memGetInfo()
    except Exception:  # no CuPy or no GPU: EMOGI fails on its own, harmlessly
        return None
    managed = graph.num_edges * (args.emogi_edges + (4 if alg == "sssp" else 0))
    if managed <= 0.9 * free:
        return None
    return (f"its managed allocation of {benchlib.size(managed)} is over 0.9 of the card's "
            f"free {benchlib.size(free)} (more can hang the GPU)")


def run_cell(graph, name: str, alg: str, sources: list, args, built: dict, inputs: Inputs,
             reference, clock, work: Path) -> dict:
    from seraph.algorithms import get

    budget = bench_gpu.paged_budget(graph, alg, "pipelined", args.budget_fraction)
    methods = {METHODS[m]: m for m in args.pagerank_method} if alg == "pagerank" else \
        {"seraph": "power"}
    systems = list(methods) + [s for s in (peers.EMOGI, peers.SUBWAY)
                               if alg in built["programs"].get(s, {})]
    records = {s: Record() for s in systems}
    cell = {"graph": name, "algorithm": alg, "budget": budget,
            "subway_cap": None if args.no_subway_cap else subway_cap(graph,
                                                                      args.budget_fraction),
            "notes": [f"{NAMES[s]} has no {alg.upper()}" for s in (peers.EMOGI, peers.SUBWAY)
                      if s in built["programs"] and alg not in peers.ALGORITHMS[s]]}
    cell["first_calls"] = {s: seraph_call(graph, alg, sources[0], budget, args, records[s],
                                          reference, first=True, method=m)
                           for s, m in methods.items()}
    done = 0
    for i, source in enumerate(sources):
        if done and clock.exhausted(args.reserve):
            break
        for system in systems[i % len(systems):] + systems[:i % len(systems)]:
            if system in methods:
                seraph_call(graph, alg, source, budget, args, records[system], reference,
                            method=methods[system])
            else:
                peer_call(system, graph, alg, source, args, built["programs"], inputs,
                          records[system], reference, clock, work)
        done += 1
    cell["sources"] = [s for s in sources[:done] if s is not None] if get(alg).needs_source \
        else []
    cell["runs"], cell["sources_requested"] = done, len(sources)
    cell["systems"] = {s: r.summary() for s, r in records.items()}
    cell["programs"] = {s: Path(built["programs"][s][alg]).name for s in systems
                        if s not in methods}
    bench_gpu.log(f"{name} {alg}: " + ", ".join(
        f"{NAMES.get(s, s)} median {r.summary()['median']}, errors {r.errors[:1]}, "
        f"problems {r.problems[:1] + r.failed[:1]}" for s, r in records.items()))
    return cell


# --------------------------------------------------------------------------- the run
def run_all(args, built: dict, work: Path, clock) -> dict:
    from seraph.algorithms import ALGORITHMS
    from seraph.sources import random_sources

    results = {"graphs": [], "cells": [], "skipped": [], "references": []}
    algorithms = [a for a in ORDER if a in args.algorithms]
    for key, name, size, build in bench_matrix.graph_builders(args):
        if key not in args.graphs:
            continue
        if clock.exhausted(args.reserve):
            results["skipped"].append(f"{name}: the total limit was reached before it")
            continue
        bench_gpu.log(f"building {name}")
        start = time.perf_counter()
        graph = build()
        desc = bench_matrix.describe(graph, name, key, size, time.perf_counter() - start)
        results["graphs"].append(desc)
        picked = random_sources(graph, args.sources, args.seed)
        inputs = Inputs(graph, work, "sssp" in algorithms and graph.weighted)
        reference = None
        for alg in algorithms:
            if alg not in ALGORITHMS:
                results["skipped"].append(f"{name} {alg}: not registered in "
                                          "seraph.algorithms (yet)")
                continue
            if alg in WEIGHTED and not graph.weighted:
                results["skipped"].append(f"{name} {alg}: the graph is unweighted")
                continue
            if clock.exhausted(args.reserve):
                results["skipped"].append(f"{name} {alg}: the total limit was reached")
                continue
            if alg in WEIGHTED:
                inputs.drop(peers.SUBWAY, weighted=False)
            if alg == "sswp":
                inputs.drop(peers.EMOGI)
            if alg == "pagerank" and reference is None:
                reference = reference_pagerank(graph, args.damping, args.tolerance / 100,
                                               args.device)
                results["references"].append(
                    {"graph": name, **{k: v for k, v in reference.items() if k != "ranks"}})
                bench_gpu.log(f"float64 PageRank reference: {reference['iterations']} "
                              f"iterations, {reference['seconds']:.1f} s")
            sources = picked if ALGORITHMS[alg].needs_source else [None] * args.sources
            bench_gpu.log(f"{name} {alg}")
            results["cells"].append(run_cell(graph, name, alg, sources, args, built, inputs,
                                             reference, clock, work))
        desc["peer_input_bytes"] = dict(inputs.bytes)
        inputs.drop(peers.EMOGI)
        inputs.drop(peers.SUBWAY)
        del graph
        bench_gpu.free_device_memory(args.device)
    return results


# --------------------------------------------------------------------------- report
def times(s: dict | None) -> str:
    if s is None:
        return "—"
    if not s["n"]:
        return "**failed**" if s["failed"] else "—"
    return f"{benchlib.seconds(s['median'])} / {benchlib.seconds(s['max'])}"


def answers(cell: dict) -> str:
    parts = []
    for system, s in cell["systems"].items():
        if cell["algorithm"] == "pagerank":
            what = (f"L1 {s['l1_median']:.2g} / {s['l1_max']:.2g}" if s["l1_errors"]
                    else "no answer")
        else:
            what = f"checked {s['checked']} of {s['calls']}"
            if s["problems"]:
                what += f", {len(s['problems'])} WRONG"
        if s["failed"]:
            what += f", {len(s['failed'])} FAILED"
        if s.get("unconverged"):
            what += f", {s['unconverged']} unconverged"
        if s["peak_max"] is not None:
            what += f", peak {benchlib.size(s['peak_max'])} / {benchlib.size(cell['budget'])}"
        parts.append(f"{NAMES[system]}: {what}")
    return "; ".join(parts)


def cell_rows(cell: dict) -> list[list]:
    """A row for each of Seraph's systems in the cell, beside the same peer runs."""
    systems, rows = cell["systems"], []
    for key, first in cell["first_calls"].items():
        seraph = systems[key]
        row = [cell["graph"], cell["algorithm"].upper() + NAMES[key][len("Seraph"):],
               f"{cell['runs']}" + (f" of {cell['sources_requested']}"
                                    if cell["runs"] < cell["sources_requested"] else ""),
               benchlib.seconds(first), times(seraph)]
        for system in (peers.EMOGI, peers.SUBWAY):
            s = systems.get(system)
            row += [times(s), benchlib.ratio(s["median"], seraph["median"]) if s else "—"]
        rows.append(row + [answers(cell)])
    return rows


def report(results: dict, info: dict, command: str, args, built: dict) -> str:
    graphs = [[g["name"], f"{g['num_vertices']:,}", f"{g['num_edges']:,}",
               benchlib.seconds(g["build_seconds"]),
               ", ".join(f"{k} {benchlib.size(v)}" for k, v in
                         g.get("peer_input_bytes", {}).items()) or "—"]
              for g in results["graphs"]]
    rows = [row for c in results["cells"] for row in cell_rows(c)]
    peer_lines = []
    for system in (peers.EMOGI, peers.SUBWAY):
        if system in built["programs"]:
            programs = sorted({Path(p).name for p in built["programs"][system].values()})
            peer_lines.append(f"- {NAMES[system]} (sources at "
                              f"{built['commits'].get(system) or 'unknown commit'}): "
                              f"{', '.join(programs)}")
        else:
            peer_lines.append(f"- {NAMES[system]}: {built['notes'].get(system)}")
    cap = ("Subway's device edge buffer: capped to the budget fraction of its edges (at "
           "least the largest degree; `subway cap` in the JSON)" if not args.no_subway_cap
           else "Subway's device edge buffer: its own rule (0.9 of the card), not capped")
    lines = [
        "# Seraph beside EMOGI and Subway", "",
        f"Command: `{command}`", "",
        f"- Device: {results['device']['name']}",
        benchlib.machine_markdown(info),
        *peer_lines,
        *(["- **Peers not built**: only Seraph's side ran (the lines above say why)"]
          if not built["programs"] else []),
        f"- {cap}; EMOGI zero-copy (`-m 2 -t 2`), {args.emogi_edges}-byte edges",
        f"- Budget: vertex state + {args.budget_fraction:g} of the algorithm's page bytes; "
        f"PageRank: damping {args.damping:g}, tolerance {args.tolerance:g}, at most "
        f"{args.max_iterations} iterations"
        + f", Seraph's methods: {', '.join(args.pagerank_method)}"
        + " (Subway's `pr`: 0.85 and its own 0.01 threshold)",
        "", "## Graphs", "",
        benchlib.markdown_table(["graph", "vertices", "stored edges", "built (s)",
                                 "peer inputs"], graphs, [False, True, True, True, False]),
        "", "## Times", "",
        "Seconds, median / max over the sources (CC and PageRank: as many runs), the "
        "systems alternated source by source. Seraph: `stats.call_time` of the public call; "
        "*first call* not in the median. EMOGI, Subway: their own printed timers "
        "(scripts/peers.py says what each includes; the process wall times are in the "
        "JSON). *÷ Seraph*: the peer's median over Seraph's. *answers*: BFS, CC, SSSP, "
        "SSWP checked by the algorithm's verifier (and Seraph's device peak beside its "
        "budget); PageRank: the L1 error against a float64 reference, median / max.", "",
        benchlib.markdown_table(
            ["graph", "alg", "runs", "Seraph first call", "Seraph", "EMOGI", "÷ Seraph",
             "Subway", "÷ Seraph", "answers"], rows,
            [False, False, True, True, True, True, True, True, True, False]),
    ]
    if results["references"]:
        lines += ["", "PageRank's float64 reference: " + "; ".join(
            f"{r['graph']}: {r['iterations']} iterations to an L1 change of "
            f"{r['change']:.2g} in {r['seconds']:.1f} s" for r in results["references"])
            + "."]
    notes = sorted({n for c in results["cells"] for n in c["notes"]})
    if notes:
        lines += ["", "Notes: " + "; ".join(notes) + "."]
    trouble = [p for c in results["cells"] for s in c["systems"].values()
               for p in s["problems"] + s["failed"]]
    if trouble:
        lines += ["", "**Wrong answers and failed runs:**", ""] + [f"- {p}" for p in trouble]
    if results["skipped"]:
        lines += ["", "Skipped: " + "; ".join(results["skipped"]) + "."]
    return "\n".join(lines + [""])


# --------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--graphs", nargs="+", default=["rmat", "uniform", "grid", "road"],
                   choices=("rmat", "uniform", "grid", "road"))
    p.add_argument("--rmat-scale", type=int, default=12)
    p.add_argument("--uniform-scale", type=int, default=12)
    p.add_argument("--grid-side", type=int, default=64)
    p.add_argument("--algorithms", nargs="+", default=list(ORDER), choices=ORDER)
    p.add_argument("--page-edges", type=int, default=None,
                   help="edges per page (default the store's)")
    p.add_argument("--sources", type=int, default=8, help="random sources per cell")
    p.add_argument("--seed", type=int, default=0, help="of the random sources")
    p.add_argument("--budget-fraction", type=float, default=0.25,
                   help="device memory: the vertex state plus this share of the page bytes "
                        "(and Subway's edge buffer: this share of its edges)")
    p.add_argument("--damping", type=float, default=0.85)
    p.add_argument("--tolerance", type=float, default=1e-6,
                   help="PageRank: Seraph's L1 change, EMOGI's residual threshold")
    p.add_argument("--max-iterations", type=int, default=100)
    p.add_argument("--pagerank-method", nargs="+", default=["power"], choices=list(METHODS),
                   help="seraph.pagerank's method= (several: each a row of its own, beside "
                        "the same peer runs)")
    p.add_argument("--peers-dir", default=str(REPO / ".peers"),
                   help="where EMOGI/ and Subway/ are cloned (never committed)")
    p.add_argument("--build-dir", default=str(REPO / "build" / "peers"))
    p.add_argument("--arch", default="sm_90", help="nvcc's -arch for the peers")
    p.add_argument("--emogi-edges", type=int, default=4, choices=(4, 8),
                   help="EMOGI's _32 programs (4) or its plain ones (8)")
    p.add_argument("--subway-mode", default="async", choices=("async", "sync"))
    p.add_argument("--no-subway-cap", action="store_true",
                   help="leave Subway's edge buffer at its own size (0.9 of the card)")
    p.add_argument("--peer-timeout", type=float, default=300.0,
                   help="seconds a peer's run may take before it is marked failed")
    p.add_argument("--total-limit", type=float, default=570.0,
                   help="seconds for the whole script; what no longer fits is skipped")
    p.add_argument("--reserve", type=float, default=5.0,
                   help="seconds kept back for the report")
    p.add_argument("--workdir", default=None, help="where the peers' inputs go (default: a "
                   "temporary directory)")
    p.add_argument("--json-out", default=None, help="write the raw figures here as JSON")
    p.add_argument("--md-out", default=None,
                   help=f"markdown report (default {MD_DEFAULT} on cuda, none on cpu; '' "
                        "for none)")
    args = p.parse_args(argv)
    args.order = "input"  # the peers' files are in the store's numbering: keep the input's
    if args.sources < 1:
        p.error("--sources must be at least 1")
    if not 0 < args.budget_fraction <= 1:
        p.error("--budget-fraction must be in (0, 1]")
    if not 0 <= args.damping <= 1:
        p.error("--damping must be from 0 to 1")
    if not (args.tolerance > 0 and math.isfinite(args.tolerance)):
        p.error("--tolerance must be a positive number")
    if args.max_iterations < 1:
        p.error("--max-iterations must be at least 1")
    if min(args.rmat_scale, args.uniform_scale) < 1 or args.grid_side < 2:
        p.error("--rmat-scale and --uniform-scale must be at least 1, --grid-side at least 2")
    return args


def require_device(device: str) -> None:
    if device != "cuda":
        return
    from seraph.api import cuda_status

    ok, why = cuda_status()
    if not ok:
        sys.exit(f"bench_peers: --device cuda but no usable GPU: {why}. Smoke-test it on the "
                 "CPU backend: --device cpu --graphs rmat --rmat-scale 8 --sources 2")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    require_device(args.device)
    benchlib.quiet()
    command = "python scripts/bench_peers.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    info = benchlib.machine(["cupy"] if args.device == "cuda" else [])
    clock = bench_gpu.Clock(args.total_limit)
    built = build_peers(args)
    with benchlib.workdir(args.workdir) as work:
        results = run_all(args, built, work, clock)
    results["device"] = bench_gpu.device_description(args.device)
    benchlib.finish_machine(info)
    payload = {"machine": info, "command": command.strip(), "args": vars(args),
               "peers": {"programs": {s: {a: str(b) for a, b in p.items()}
                                      for s, p in built["programs"].items()},
                         "notes": built["notes"], "commits": built["commits"],
                         "build_failed": built["failed"]}, **results}
    default = MD_DEFAULT if args.device == "cuda" else None
    md_out = default if args.md_out is None else (Path(args.md_out) if args.md_out else None)
    benchlib.write_outputs(payload, args.json_out,
                           report(results, info, command.strip(), args, built), md_out)
    failed = list(built["failed"]) + [p for c in results["cells"]
                                      for s in c["first_calls"]
                                      for p in c["systems"][s]["problems"]]
    for problem in failed:
        print(f"bench_peers: {problem}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
