"""Profiles paged runs (the budget a fraction of the pages) round by round, to find where
the time above the copy floor goes. The questions it answers, one per subcommand:

    python scripts/profile_paged.py rounds [--store PATH | --scale 26] [--device cuda]
    python scripts/profile_paged.py gaps   ... [--trace-dir DIR]
    python scripts/profile_paged.py share  ... [--shares 0.5,0.6,0.7]
    python scripts/profile_paged.py final  ... [--final-sweeps 1,2,8]
    python scripts/profile_paged.py once   ... [--alg sssp]
    python scripts/profile_paged.py kernels ... [--kind uniform]

- ``rounds``: after every round of paged SSSP, the share of all in-edges whose heads the
  strong rule leaves open, with and without the lightest in-edge (seraph/lightest.py),
  and whose heads do not hold their final distance yet (no certificate does better).
  The bottom-up round starts once the open share is below the backend's limit.
- ``gaps``: paged BFS, CC and SSSP with a trace; the copy engine's idle gaps above
  0.5 ms, and the sparse rounds (optionally the traces, for ``seraph plot``).
- ``share``: paged SSSP under several bottom-up limits, each a share of all edges (as
  the CUDA backend's BOTTOM_UP_SHARE is).
- ``final``: paged BFS, CC and SSSP with the last window of each dense round swept at
  most so many times (schedules.LAST_WINDOW_SWEEPS; with ``max_reentries`` the copy
  engine can idle at the end of a dense round while that window is re-swept).
- ``once``: one paged run of ``--alg``, for a profiler to wrap (scripts/profile_ncu.sh
  runs Nsight Compute over it).
- ``kernels``: paged BFS, CC and SSSP, each kernel's device time (CUDA events around every
  launch of kernels/, summed per kernel) beside the run's time and its phases (the trace):
  where a run's time goes when no profiler is at hand. On the CPU, the phases only.

The store is the one bench_gpu.py builds (same name, so a machine that ran the bench
reuses it), or with ``--kind uniform`` a uniform random graph of the same scale. Timed
rows are the faster of two runs after a first one that pins the pages. It patches engine
internals to observe them (``rounds``, ``kernels``) or to vary a constant: a profiling
tool, not an API.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import bench_gpu
import numpy as np

import seraph
from seraph import scheduler, schedules
from seraph.algorithms import get
from seraph.backends.activity import PUSH_ALPHA

ALGORITHMS = ("sssp", "bfs", "cc")


def open_store(args) -> seraph.Graph:
    """The store at ``--store``, or bench_gpu.py's RMAT (or a uniform graph, ``--kind``)
    at ``--scale`` (built if missing)."""
    from partitioner.generators import GENERATORS, gap_weights
    from partitioner.writer import Options, write_store

    path = Path(args.store or Path(args.workdir) /
                f"{args.kind}{args.scale}-ef16-s0-p"
                f"{bench_gpu.page_edges_for(args.scale, 16, None)}.zarr")
    if not path.exists():
        start = time.perf_counter()
        write_store(GENERATORS[args.kind](args.scale, 16, seed=0, weights=gap_weights()), path,
                    Options(symmetrize=True, seed=0,
                            page_edges=bench_gpu.page_edges_for(args.scale, 16, None),
                            memory=bench_gpu.preprocess_memory(None)), force=True)
        print(f"preprocessed {path} in {time.perf_counter() - start:.1f} s", flush=True)
    graph = seraph.open_graph(path)
    graph.csc()
    return graph


def runner(graph: seraph.Graph, alg: str, args) -> Callable[..., object]:
    """A paged run of ``alg`` from the highest out-degree vertex (keyword options extra)."""
    budget = bench_gpu.paged_budget(graph, alg, "pipelined", args.fraction)
    source = int(np.argmax(graph.out_degrees()))

    def run(**options):
        return seraph.run(graph, alg, get(alg).source_for(source), device=args.device,
                          device_memory=budget, **options)
    return run


def answer(result) -> np.ndarray:
    return result.values


def best_of_two(run: Callable[..., object], **options):
    first, second = run(**options), run(**options)
    return min(first, second, key=lambda r: r.stats.wall_time)


def row(result) -> str:
    s = result.stats
    return (f"{s.wall_time:7.3f} s  pages {s.pages_transferred:5}  rounds {s.dense_rounds} "
            f"dense / {s.sparse_rounds} sparse ({s.bottom_up_rounds} bottom-up)  kernels "
            f"{s.kernel_time:.3f} s  sparse {s.sparse_time:.3f} s")


@contextlib.contextmanager
def patched(owner, name: str, value) -> Iterator[None]:
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


# --------------------------------------------------------------------------- subcommands
def rounds(graph: seraph.Graph, args) -> None:
    from seraph.lightest import NO_BOUND
    from seraph.rounds import SparseRounds

    indptr = graph.csc()[0]
    in_degrees = np.diff(indptr)
    run = runner(graph, "sssp", args)
    final = answer(seraph.sssp(graph, int(np.argmax(graph.out_degrees())),
                               device=args.device)).astype(np.float32)
    m = float(graph.num_edges)
    print("after              threshold  plain rule  lightest in-edge  not yet final")

    def report(run_: scheduler.Run, what: str) -> None:
        # The open vertices as the engine's strong rule finds them (lightest.proven).
        values = run_.be.host_values().astype(np.float32)
        threshold = run_.proven  # what the engine's bottom-up rounds stand on

        def unsettled(bound):
            codes, unit = bound
            added = codes.astype(np.float32) * unit if unit > 0 else np.float32(0)
            return np.flatnonzero((in_degrees > 0) & (values > np.float32(threshold) + added))

        plain = unsettled(NO_BOUND)
        lightest = unsettled(run_.be.strong_bound(threshold))
        not_final = np.flatnonzero((in_degrees > 0) & (values != final))
        print(f"{what:18} {float(threshold):9.1f}  " + "  ".join(
            f"{in_degrees[vertices].sum() / m:10.1%}" for vertices in (plain, lightest,
                                                                       not_final)),
              flush=True)

    end_round, push = scheduler.Run.end_round, SparseRounds.push
    bottom_ups = [0]  # seen so far: a bottom-up round counts itself before it ends

    def observed_end(self, succeeded, changed_min):
        end_round(self, succeeded, changed_min)
        if self.stats.bottom_up_rounds > bottom_ups[0]:
            bottom_ups[0] = self.stats.bottom_up_rounds
            report(self, f"bottom-up round {bottom_ups[0]}")
        else:
            report(self, f"dense round {self.stats.dense_rounds}")

    def observed_push(self, frontier):
        waiting = push(self, frontier)
        report(self.run, f"push ({len(frontier):,})")
        return waiting

    # The GPU's push limit on either device: the CPU's SSSP default (ORDERED_PUSH_ALPHA)
    # pushes so far that a small graph has no dense round left to observe.
    with patched(scheduler.Run, "end_round", observed_end), \
            patched(SparseRounds, "push", observed_push):
        result = run(push_alpha=PUSH_ALPHA)
    assert np.array_equal(answer(result).astype(np.float32), final), "answers differ"


def gaps(graph: seraph.Graph, args) -> None:
    for alg in ALGORITHMS:
        run = runner(graph, alg, args)
        run()  # pins the pages
        result = best_of_two(run, trace=True)
        events = sorted(result.trace.events, key=lambda e: e["start"])
        print(f"{alg}: {row(result)}")
        copies = [e for e in events if e["kind"] == "copy"]
        for before, after in zip(copies, copies[1:], strict=False):
            if after["start"] - before["end"] > 5e-4:
                print(f"  copy engine idle {1e3 * (after['start'] - before['end']):6.1f} ms at "
                      f"{before['end']:.3f} s, between pages {before['page']} and "
                      f"{after['page']}")
        for e in events:
            if e["kind"] not in ("copy", "compute"):
                print(f"  {e['kind']:9} {1e3 * (e['end'] - e['start']):6.1f} ms at "
                      f"{e['start']:.3f} s, {e.get('edges', 0):,} edges")
        if args.trace_dir:
            result.trace.write(Path(args.trace_dir) / f"trace-{alg}.json", result.stats)


def share(graph: seraph.Graph, args) -> None:
    from seraph.backends import backend_class

    run = runner(graph, "sssp", args)
    run()
    for value in (float(x) for x in args.shares.split(",")):
        limit = lambda backend, push_limit, num_edges, v=value: v * num_edges  # noqa: E731
        with patched(backend_class(args.device), "bottom_up_edge_limit", limit):
            print(f"share {value:4}: {row(best_of_two(run))}", flush=True)


def final(graph: seraph.Graph, args) -> None:
    for alg in ALGORITHMS:
        run = runner(graph, alg, args)
        want = answer(run())
        for cap in (int(x) for x in args.final_sweeps.split(",")):
            with patched(schedules, "LAST_WINDOW_SWEEPS", cap):
                result = best_of_two(run)
            assert np.array_equal(answer(result), want), "answers differ"
            print(f"{alg} final sweeps {cap}: {row(result)}", flush=True)


def once(graph: seraph.Graph, args) -> None:
    print(f"{args.alg}: {row(runner(graph, args.alg, args)())}", flush=True)


def kernels(graph: seraph.Graph, args) -> None:
    launches: list[tuple[str, object, object]] = []
    if args.device == "cuda":
        import cupy as cp

        from seraph.backends.cuda import backend as cuda_backend

        def timed(kernel, blocks: int, **params) -> None:
            stream = cp.cuda.get_current_stream()
            begin, end = cp.cuda.Event(), cp.cuda.Event()
            begin.record(stream)
            launch(kernel, blocks, **params)
            end.record(stream)
            launches.append((kernel.name, begin, end))

        launch = cuda_backend._Kernel.__call__
        timing = lambda: patched(cuda_backend._Kernel, "__call__", timed)  # noqa: E731
    else:
        timing = contextlib.nullcontext
    for alg in ALGORITHMS:
        run = runner(graph, alg, args)
        run()  # pins the pages, compiles
        with timing():
            launches.clear()
            result = run(trace=True)
        print(f"{alg}: {row(result)}  call {result.stats.call_time:.3f} s")
        per_kernel: dict[str, list[float]] = {}
        for name, begin, end in launches:
            end.synchronize()
            per_kernel.setdefault(name, []).append(cp.cuda.get_elapsed_time(begin, end))
        for name, times in sorted(per_kernel.items(), key=lambda kv: -sum(kv[1])):
            print(f"  kernel {name:16} x{len(times):<5} {sum(times):8.2f} ms")
        for kind in sorted({e["kind"] for e in result.trace.events}):
            spans = [e["end"] - e["start"] for e in result.trace.events if e["kind"] == kind]
            print(f"  phase  {kind:9} x{len(spans):<5} {1e3 * sum(spans):8.2f} ms")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("rounds", "gaps", "share", "final", "once", "kernels"))
    p.add_argument("--store", help="a preprocessed store (default: bench_gpu.py's RMAT)")
    p.add_argument("--scale", type=int, default=26)
    p.add_argument("--kind", default="rmat", choices=("rmat", "uniform"),
                   help="the generated graph, without --store")
    p.add_argument("--workdir", default="build", help="where the default store lives")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--fraction", type=float, default=0.25, help="of the page bytes")
    p.add_argument("--trace-dir", help="gaps: write each run's trace here")
    p.add_argument("--shares", default="0.5,0.6,0.7,0.8")
    p.add_argument("--final-sweeps", default="1,2,8")
    p.add_argument("--alg", default="sssp", choices=ALGORITHMS, help="once: which run")
    args = p.parse_args(argv)
    if args.device == "cuda":
        from seraph.api import cuda_status

        usable, why = cuda_status()
        if not usable:
            p.error(f"--device cuda, but no usable GPU: {why} (or try --device cpu)")
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    graph = open_store(args)
    print(f"{graph.num_vertices:,} vertices, {graph.num_edges:,} edges, {graph.num_pages} "
          f"pages; {args.device}, {args.fraction:.0%} of the page bytes", flush=True)
    {"rounds": rounds, "gaps": gaps, "share": share, "final": final,
     "once": once, "kernels": kernels}[args.what](graph, args)


if __name__ == "__main__":
    sys.exit(main())
