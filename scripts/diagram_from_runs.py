"""A weak-predictor diagram derived from measured update histories (issue 22's third diagram).

    python scripts/diagram_from_runs.py [--side 1024] [--toml-out FILE] [--json-out FILE]
        [--md-out FILE]

Runs CC by label propagation on the road-like grid (10% of the edges removed, ids
shuffled), the one class where the CPU backend's runs are many dense rounds, with no
predictor and at a quarter budget, and records every pull attempt of every vertex: the
sweep it came in and whether it lowered the value. (It wraps the CPU backend's ``sweep``
to watch the values: a measuring tool, not an API.) From the histories:

- *h(k)*: among the attempts made after exactly k failed attempts in a row (since the
  vertex's last success, or the run's start), the share that succeed;
- for the vertices that reach K failures in a row, how many more attempts each fails
  before its next success (or the run's end).

The diagram (written to ``--toml-out``): attempt while fewer than K failures in a row, K
the smallest k with h(k) at most ``--max-success``; then sleep S sweeps, S the median of
those further failures (at most ``--max-sleep``), attempt once, and sleep S again after a
failure. Any success returns to state 0. Like every diagram it only skips work: the
re-check keeps the answers exact (docs/design.md, section 8).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import bench_gpu
import benchlib
import numpy as np

TOML_DEFAULT = benchlib.DOCS.parents[1] / "configs" / "weak-measured.toml"
MD_DEFAULT = benchlib.DOCS / "diagram-measured.md"
#: Failures in a row told apart; longer runs count as this many.
MAX_RUN = 32


@dataclass
class Histories:
    """Attempts and successes by the failures in a row before them, and the further
    failures of each vertex past ``K`` (filled by :meth:`record` and :meth:`finish`)."""

    num_vertices: int

    def __post_init__(self) -> None:
        self.fails = np.zeros(self.num_vertices, dtype=np.int64)  # failures in a row now
        self.attempts = np.zeros(MAX_RUN + 1, dtype=np.int64)
        self.successes = np.zeros(MAX_RUN + 1, dtype=np.int64)
        self.runs: list[np.ndarray] = []  # failure runs, each ended by a success or the end
        self.sweeps = 0

    def record(self, vertices: np.ndarray, lowered: np.ndarray) -> None:
        """One sweep's attempts: ``vertices`` attempted, ``lowered`` which succeeded."""
        self.sweeps += 1
        k = self.fails[vertices]
        np.add.at(self.attempts, np.minimum(k, MAX_RUN), 1)
        np.add.at(self.successes, np.minimum(k[lowered], MAX_RUN), 1)
        self.runs.append(k[lowered])
        self.fails[vertices] = np.where(lowered, 0, k + 1)

    def finish(self) -> None:
        self.runs.append(self.fails[self.fails > 0])  # cut off by the run's end

    def hazard(self) -> np.ndarray:
        """h(k) for k = 0 .. MAX_RUN (nan where no attempt came after k failures)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.successes / self.attempts

    def further_failures(self, k: int) -> np.ndarray:
        """For each failure run of length at least ``k``: its length past ``k``."""
        runs = np.concatenate(self.runs) if self.runs else np.zeros(0, dtype=np.int64)
        return runs[runs >= k] - k


def record_histories(graph, budget: int, histories: Histories) -> object:
    """CC by propagation with no predictor on the CPU backend, every sweep's attempts
    recorded into ``histories``; returns the result."""
    import seraph
    from seraph.backends.cpu.backend import CpuBackend

    original = CpuBackend.sweep
    first, last = graph.page_first_vertex, graph.page_last_vertex
    indptr = graph.csc()[0]

    def recording(backend, slots, pages, predictor, threshold, epoch):
        ranges = [np.arange(first[p], last[p] + 1) for p in pages]
        vertices = np.unique(np.concatenate(ranges)) if ranges else np.zeros(0, np.int64)
        vertices = vertices[indptr[vertices + 1] > indptr[vertices]]  # with in-edges
        before = backend.values[vertices].copy()
        result = original(backend, slots, pages, predictor, threshold, epoch)
        histories.record(vertices, backend.values[vertices] < before)
        return result

    CpuBackend.sweep = recording
    try:
        return seraph.connected_components(graph, device="cpu", device_memory=budget,
                                           components="propagation", predictor="none")
    finally:
        CpuBackend.sweep = original
        histories.finish()


def choose(histories: Histories, max_success: float, max_sleep: int) -> tuple[int, int]:
    """(K, S): see the module docstring."""
    h = histories.hazard()
    below = [k for k in range(1, MAX_RUN + 1) if h[k] <= max_success]
    k = below[0] if below else MAX_RUN
    further = histories.further_failures(k)
    sleep = int(np.median(further)) if len(further) else 1
    return k, max(1, min(max_sleep, sleep))


def diagram_toml(k: int, sleep: int, h: np.ndarray, max_success: float) -> str:
    """States 0 .. k-1 attempt (k-1 failures so far at most); k .. k+sleep-1 sleep, counting
    down to the wake-up state k+sleep, which attempts once."""
    wake = k + sleep
    lines = [
        "# A weak-predictor diagram derived from measured update histories, written by",
        "# scripts/diagram_from_runs.py (the data: docs/benchmarks/diagram-measured.md).",
        "#",
        f"# Attempt while fewer than {k} failures in a row: after {k}, under one attempt in",
        f"# {round(1 / max(h[k], 1e-9)) if h[k] > 0 else 'many'} succeeded (h({k}) = "
        f"{h[k]:.3f}, at most {max_success}). Then sleep {sleep} sweeps (the median",
        "# number of further failures), attempt once, and sleep again after a failure. Any",
        "# success returns to state 0. The re-check keeps the answers exact.",
        "",
        'name = "weak-measured"',
        f'description = "from measured histories: sleep {sleep} after {k} failures in a row"',
        "initial = 0",
    ]
    for s in range(k):
        lines += ["", f"[states.{s}]", "attempt = true", "on_success = 0",
                  f"on_failure = {s + 1 if s + 1 < k else wake - 1}"]
    for s in range(k, wake):
        lines += ["", f"[states.{s}]", "attempt = false", f"next = {s - 1 if s > k else wake}"]
    lines += ["", f"[states.{wake}]", "attempt = true", "on_success = 0",
              f"on_failure = {wake - 1}"]
    return "\n".join(lines) + "\n"


def report(info: dict, histories: Histories, k: int, sleep: int, args, command: str,
           seconds: float) -> str:
    h = histories.hazard()
    rows = [[str(j) if j < MAX_RUN else f"{MAX_RUN}+", f"{histories.attempts[j]:,}",
             f"{histories.successes[j]:,}", f"{h[j]:.4f}"]
            for j in range(MAX_RUN + 1) if histories.attempts[j]]
    further = histories.further_failures(k)
    return "\n".join([
        "# A weak-predictor diagram from measured histories (issue 22)", "",
        f"Command: `{command}`", "", benchlib.machine_markdown(info), "",
        f"CC by label propagation on the road-like grid {args.side} (10% of the edges "
        "removed, ids shuffled), no predictor, a quarter budget, CPU backend: every pull "
        f"attempt of every vertex in {histories.sweeps} sweeps ({seconds:.2f} s). *after k "
        "failures*: the attempts made after exactly k failed attempts in a row; *h(k)*: the "
        "share of them that lowered the value.", "",
        benchlib.markdown_table(["after k failures", "attempts", "succeeded", "h(k)"], rows,
                                [True] * 4), "",
        f"Chosen: K = {k}, the smallest k with h(k) at most {args.max_success}; S = {sleep}, "
        f"the median of the {len(further):,} failure runs' lengths past K (mean "
        f"{further.mean() if len(further) else 0:.1f}, capped at {args.max_sleep}). "
        f"Written to `configs/{TOML_DEFAULT.name}`.", ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--side", type=int, default=1024, help="of the road-like grid")
    p.add_argument("--budget-fraction", type=float, default=0.25)
    p.add_argument("--max-success", type=float, default=0.1,
                   help="h(k) at or below which a vertex goes to sleep")
    p.add_argument("--max-sleep", type=int, default=8)
    p.add_argument("--toml-out", default=str(TOML_DEFAULT))
    p.add_argument("--json-out", default=None)
    p.add_argument("--md-out", default=None, help=f"default {MD_DEFAULT}; '' for none")
    args = p.parse_args(argv)
    from partitioner.generators import gap_weights

    benchlib.quiet()
    info = benchlib.machine()
    graph = benchlib.shuffled_grid(args.side, gap_weights())
    budget = bench_gpu.paged_budget(graph, "cc", "pipelined", args.budget_fraction,
                                    predictor="none")
    histories = Histories(graph.num_vertices)
    seconds, _ = benchlib.timed(lambda: record_histories(graph, budget, histories))
    k, sleep = choose(histories, args.max_success, args.max_sleep)
    h = histories.hazard()
    with open(args.toml_out, "w") as f:
        f.write(diagram_toml(k, sleep, h, args.max_success))
    benchlib.finish_machine(info)
    command = "python scripts/diagram_from_runs.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    md_out = MD_DEFAULT if args.md_out is None else (args.md_out or None)
    benchlib.write_outputs(
        {"machine": info, "command": command.strip(), "args": vars(args), "K": k,
         "S": sleep, "attempts": histories.attempts.tolist(),
         "successes": histories.successes.tolist(), "sweeps": histories.sweeps},
        args.json_out, report(info, histories, k, sleep, args, command.strip(), seconds),
        md_out)
    print(f"K = {k}, S = {sleep}; wrote {args.toml_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
