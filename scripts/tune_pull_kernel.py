"""Tunes the CUDA pull kernel's load balance on an R-MAT graph (needs a GPU).

    python scripts/tune_pull_kernel.py [--scale 24] [--variants 32:0,8:64,4:32,16:128,8:256]

Each variant is ``light_lanes:heavy_edges`` (:class:`seraph.backends.cuda.CudaBackend`): the
lanes that pull one light vertex, and the in-page degree above which a vertex gets a whole
warp (0: never). Every variant runs BFS, CC and SSSP fully resident, and paged at 25% of
the page bytes under the ``pipelined`` and ``single`` schedules; each row is the faster of
two runs after a warm-up run, from ``RunStats``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import seraph
from partitioner import generators
from partitioner.writer import Options, write_store
from seraph.algorithms import ALGORITHMS
from seraph.backends.cuda.backend import CudaBackend
from seraph.backends.layout import Layout


def parse_variants(text: str) -> list[tuple[int, int]]:
    variants = []
    for part in text.split(","):
        lanes, heavy = (int(x) for x in part.split(":"))
        variants.append((lanes, heavy or 1 << 62))
    return variants


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=24)
    p.add_argument("--variants", default="32:0,8:64,4:32,16:128,8:256")
    p.add_argument("--workdir", default=None, help="where the store goes (default: a tmpdir)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        start = time.perf_counter()
        source = generators.rmat(args.scale, 16, seed=0, weights=generators.gap_weights())
        path = Path(tmp) / f"rmat{args.scale}.zarr"
        write_store(source, path, Options(symmetrize=True, page_edges=1 << 22))
        graph = seraph.open_graph(path)
        print(f"RMAT-{args.scale}: {graph.num_vertices:,} vertices, {graph.num_edges:,} edges, "
              f"{graph.num_pages} pages ({time.perf_counter() - start:.1f} s)", flush=True)
        hub = int(np.argmax(graph.out_degrees()))
        runs = {name: lambda n=name, e=entry, **o: seraph.run(graph, n, e.source_for(hub),
                                                               **o).stats
                for name, entry in ALGORITHMS.items()}
        configs = []
        for name in runs:
            layout = Layout.for_run(graph, ALGORITHMS[name].spec, "strong", None)  # the default
            quarter = layout.state_bytes + graph.num_pages // 4 * layout.slot_bytes
            configs += [(name, "resident", {}), (name, "paged", {"device_memory": quarter}),
                        (name, "single", {"device_memory": quarter, "schedule": "single"})]
        print("lanes  heavy alg  config      wall s  kernel s  pages  sweeps")
        for lanes, heavy in parse_variants(args.variants):
            CudaBackend.light_lanes, CudaBackend.heavy_edges = lanes, heavy
            for name, label, opts in configs:
                runs[name](device="cuda", **opts)
                s = min((runs[name](device="cuda", **opts) for _ in range(2)),
                        key=lambda s: s.wall_time)
                shown = "-" if heavy >= 1 << 62 else heavy
                print(f"{lanes:5} {shown:>6} {name:4} {label:9} {s.wall_time:8.3f} "
                      f"{s.kernel_time:9.3f} {s.pages_transferred:6} {s.sweeps:7}", flush=True)


if __name__ == "__main__":
    main()
