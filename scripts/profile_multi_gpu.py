"""Where a partitioned call's time goes, step by step: run by every worker of an MPI job
(one process a GPU, or CPU workers), on a store that bench_multi_gpu.py generated.

    mpiexec -n 2 python scripts/profile_multi_gpu.py --store PATH [--alg bfs]
        [--device cuda] [--sources 8] [--budget-fraction 0.25]

First the call times as a user gets them (``stats.call_time``, medians and max over
``--sources`` random sources, after a first call), with the steps' figures. Then the same
calls again with the engine's steps and the backend's methods timed one by one, the device
synchronised before and after each, so that a GPU's queued work is counted where it was
queued: per call, how often each ran and its inclusive milliseconds, and the steps of the
first of them in order (``step``: a push or dense step, ``sparse``/``dense``: its
exchange). With one process the engine is one process's and only the backend's methods
are timed. The budgets are bench_multi_gpu.py's. Rank 0 prints. It patches engine
internals to observe them: a profiling tool, not an API.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

import bench_multi_gpu

import seraph
from seraph.algorithms import get
from seraph.backends import backend_class
from seraph.distributed import engine, exchange
from seraph.distributed.mpi import world
from seraph.sources import random_sources

#: What is timed: the partitioned engine's steps, its waiting set and exchange, and the
#: backend's methods that a step calls.
ENGINE = {engine.PartRun: ("execute", "_dense_step", "_push_step", "_exchange", "_pushes"),
          engine.Waiting: ("add", "take", "compact", "nearest_minimum", "drain"),
          exchange.Exchange: ("step", "_sparse", "_dense", "restart", "unite")}
BACKEND = ("push", "bottom_up", "sweep", "sweep_until", "mark_blocks", "take_changed",
           "init_values", "result", "union_find", "link_parents")
#: The methods whose every call is listed in order, as the step's kind.
SEQUENCE = {"_push_step": "push step", "_dense_step": "dense step", "_sparse": "sparse",
            "_dense": "dense"}


class Timings:
    """Inclusive seconds and calls of the wrapped methods, and the order of the steps."""

    def __init__(self, synchronize):
        self.synchronize = synchronize
        self.spent: dict[str, list] = defaultdict(lambda: [0, 0.0])
        self.steps: list[tuple[str, float]] = []

    def wrap(self, owner, name: str) -> None:
        method, label = getattr(owner, name), f"{owner.__name__}.{name}"

        def timed(*args, **kwargs):
            self.synchronize()
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.synchronize()
                took = time.perf_counter() - start
                self.spent[label][0] += 1
                self.spent[label][1] += took
                if name in SEQUENCE:
                    self.steps.append((SEQUENCE[name], took))

        setattr(owner, name, timed)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--store", required=True)
    p.add_argument("--alg", default="bfs", choices=("bfs", "cc", "sssp"))
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--sources", type=int, default=8)
    p.add_argument("--budget-fraction", type=float, default=0.25)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    comm = world()
    workers, rank = comm.size, comm.rank
    graph = seraph.open_graph(args.store)
    algorithm = get(args.alg)
    if args.device == "cuda":
        import cupy as cp

        budget = bench_multi_gpu.budget(graph, args.alg, workers, args.budget_fraction, True)
        options = {"device": "cuda", "device_memory": budget}
        if workers > 1:
            options["devices"] = workers

        def synchronize():
            cp.cuda.Device().synchronize()
    else:
        options = {"device": "cpu"}
        if workers > 1:
            options["workers"] = workers

        def synchronize():
            pass
    sources = random_sources(graph, args.sources, args.seed) if algorithm.needs_source \
        else [None] * args.sources

    def call(source):
        comm.barrier()
        return seraph.run(graph, args.alg, algorithm.source_for(source)
                          if source is not None else None, **options).stats

    first = time.perf_counter()
    call(sources[0])
    first = time.perf_counter() - first
    plain = [call(source) for source in sources]

    timings = Timings(synchronize)
    if workers > 1:
        for owner, names in ENGINE.items():
            for name in names:
                timings.wrap(owner, name)
    backend = backend_class(args.device)
    for name in BACKEND:
        if hasattr(backend, name):
            timings.wrap(backend, name)
    timed, listed = [], None
    for source in sources:
        start = time.perf_counter()
        call(source)
        timed.append(time.perf_counter() - start)
        listed = list(timings.steps) if listed is None else listed
    if rank:
        return 0

    def median(name: str) -> float:
        return statistics.median(getattr(stats, name) for stats in plain)

    calls = [stats.call_time for stats in plain]
    print(f"{args.alg} on {workers} {'GPU' if args.device == 'cuda' else 'CPU worker'}(s), "
          f"{graph.num_vertices:,} vertices, {graph.num_edges:,} edges: first call "
          f"{first:.3f} s; call median {statistics.median(calls):.4f} s, max "
          f"{max(calls):.4f} s; setup {median('setup_time'):.4f}, readback "
          f"{median('readback_time'):.4f}, exchange {median('exchange_time'):.4f} s; "
          f"rounds {median('rounds')}: push {median('sparse_rounds') - median('bottom_up_rounds')}"
          f", bottom-up {median('bottom_up_rounds')}, dense {median('dense_rounds')}")
    print(f"synchronised calls: median {statistics.median(timed):.4f} s")
    print(f"{'method':32s} {'calls/call':>10s} {'ms/call':>9s}")
    for label, (count, spent) in sorted(timings.spent.items(), key=lambda kv: -kv[1][1]):
        print(f"{label:32s} {count / len(sources):10.1f} {spent / len(sources) * 1e3:9.2f}")
    if workers > 1:
        print("steps of the first synchronised call (ms):",
              ", ".join(f"{kind} {took * 1e3:.2f}" for kind, took in listed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
