"""Connected components by union-find beside scipy.sparse.csgraph and the engine's min-label
propagation, timed as a user calls them: ``seraph.connected_components(graph,
components=...)``, on the CPU or a GPU, resident or under a budget.

    python scripts/bench_union_find.py [--scale 20] [--side 1024] [--repeat 5]

Graphs, all symmetric: a ``side x side`` grid with 10% of its edges removed and its vertex
ids shuffled by a fixed permutation (as real road networks' are), and RMAT and uniform
graphs of ``2^scale`` vertices and edge factor 16. Each cell is the median of ``--repeat``
timed calls after one untimed warm-up call (numba compiled, arrays in memory), in wall time
and in the process's CPU time (all threads), which a loaded machine inflates less. Every
answer is checked equal to scipy's, with each component labelled by its smallest vertex id.
The figures are printed, not written anywhere: on a shared machine they are indicative only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import NamedTuple

import benchlib
import numpy as np
import scipy.sparse.csgraph as csgraph


class Timing(NamedTuple):
    wall: float  # median seconds
    cpu: float  # median CPU seconds of the process, all threads: what the load does not add


def median_time(fn: Callable[[], np.ndarray], repeat: int) -> tuple[Timing, np.ndarray]:
    """The median wall and CPU time of ``repeat`` calls after one untimed warm-up, and the
    answer."""
    result = fn()
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return Timing(statistics.median(wall), statistics.median(cpu)), result


def smallest_id_labels(labels: np.ndarray) -> np.ndarray:
    """scipy's component numbers replaced by each component's smallest vertex id."""
    smallest = np.full(labels.max() + 1, len(labels), np.int64)
    np.minimum.at(smallest, labels, np.arange(len(labels)))
    return smallest[labels]


def budget(graph, fraction: float) -> int | None:
    """The vertex state plus ``fraction`` of the pages (at least two slots), or None (no
    limit) for a fraction of 0."""
    if not fraction:
        return None
    from seraph.algorithms import cc
    from seraph.backends.layout import Layout

    layout = Layout.for_run(graph, cc.SPEC, "strong", None)
    return layout.state_bytes + max(2, int(graph.num_pages * fraction)) * layout.slot_bytes


def measure(name: str, graph, repeat: int, device: str, fraction: float) -> list[object]:
    import seraph

    if graph.attrs.relabelled:
        sys.exit(f"{name}: the store relabelled its ids, so labels are not comparable")
    memory = budget(graph, fraction)

    def call(method: str):
        return lambda: seraph.connected_components(graph, device=device, device_memory=memory,
                                                   components=method).labels

    first = time.perf_counter()
    call("union-find")()  # pins or uploads what the graph keeps for later calls
    first = time.perf_counter() - first
    t_uf, uf = median_time(call("union-find"), repeat)
    t_lp, lp = median_time(call("propagation"), repeat)
    t_scipy, (_, labels) = median_time(
        lambda: csgraph.connected_components(graph.to_scipy(), directed=False), repeat)
    expect = smallest_id_labels(labels)
    for who, got in (("union-find", uf), ("label propagation", lp)):
        if not np.array_equal(got, expect):
            sys.exit(f"{name}: {who} disagrees with scipy")
    cells = [f"{benchlib.seconds(t.wall)} ({benchlib.seconds(t.cpu)})"
             for t in (t_scipy, t_uf, t_lp)]
    return [name, f"{graph.num_vertices:,}", f"{graph.num_edges:,}", *cells,
            benchlib.seconds(first), benchlib.ratio(t_uf.wall, t_scipy.wall),
            benchlib.ratio(t_uf.wall, t_lp.wall)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=int, default=20, help="RMAT and uniform: 2^scale vertices")
    p.add_argument("--side", type=int, default=1024, help="grid: side x side vertices")
    p.add_argument("--repeat", type=int, default=5, help="timed calls per cell (median)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--budget-fraction", type=float, default=0.0,
                   help="device memory: the vertex state and this share of the pages "
                        "(default 0: no limit)")
    args = p.parse_args(argv)
    info = benchlib.machine()
    graphs = [(f"grid {args.side}x{args.side}, 10% removed, shuffled",
               lambda: benchlib.shuffled_grid(args.side)),
              (f"RMAT-{args.scale} ef16", lambda: benchlib.generated("rmat", args.scale)),
              (f"uniform-{args.scale} ef16", lambda: benchlib.generated("uniform", args.scale))]
    rows = []
    for name, build in graphs:
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        rows.append(measure(name, build(), args.repeat, args.device, args.budget_fraction))
    print(f"seraph.connected_components(...) on {args.device}, budget fraction "
          f"{args.budget_fraction}. Seconds: median wall time (median CPU time of all "
          "threads) after one untimed call, timed apart (first call); ratios of wall times.")
    print(benchlib.markdown_table(
        ["graph", "vertices", "stored edges", "scipy", "union-find", "label propagation",
         "first call (UF)", "UF / scipy", "UF / label prop."],
        rows, [False] + [True] * 8))
    print()
    print(benchlib.machine_markdown(benchlib.finish_machine(info)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
