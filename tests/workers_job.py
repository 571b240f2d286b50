"""One MPI job of tests/test_workers.py: Hypothesis graphs through every registered
algorithm over the job's processes as workers, against the single-process engine and the
algorithm's oracle (scipy, networkx's conventions for PageRank).

Run as ``mpiexec -n W python tests/workers_job.py EXAMPLES [cuda]`` (cuda: the workers are
GPUs, one each, and the single-process runs too). Launching a job per example
would cost a second each, so one job runs them all: rank 0 draws each example with
Hypothesis and broadcasts it, every rank makes the multi-worker call on it collectively,
and rank 0 checks the answer (and shrinks a failure, broadcasting as it goes). Each example
also draws how the pages are split (balanced, or any cut, empty parts included). Rank 0
prints a line per algorithm and exits 1 on a failure; the others follow its broadcasts.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from dataclasses import dataclass
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from mpi4py import MPI
from test_engine import WHOLE, Edges, expected, inputs

import seraph
from seraph.algorithms import ALGORITHMS
from seraph.backends.layout import Layout
from seraph.distributed import parts
from seraph.distributed.exchange import device_bytes
from seraph.errors import SeraphError

COMM = MPI.COMM_WORLD
WORKERS = COMM.size
DEVICE = sys.argv[2] if len(sys.argv) > 2 else "cpu"
#: How the call asks for the job's processes as its workers.
OVER_WORKERS = {"devices": WORKERS} if DEVICE == "cuda" else {"workers": WORKERS}


@dataclass(frozen=True)
class Example:
    """An algorithm's call on a graph, as every rank makes it."""

    algorithm: str
    edges: Edges
    source: int | None
    page_edges: int
    options: dict
    slots: int | None
    cuts: tuple[int, ...] | None  # the parts' page boundaries (None: balanced)
    predecessors: bool

    def graph(self):
        return self.edges.graph(self.page_edges)

    def call(self, graph, **more):
        entry = ALGORITHMS[self.algorithm]
        options = {**self.options, **more}
        if entry.needs_source:
            options["predecessors"] = self.predecessors
        return seraph.run(graph, self.algorithm, entry.source_for(self.source), **options)


def budget(graph, spec, slots: int, parts_of: int | None) -> int:
    """State and ``slots`` page slots for the whole graph (``parts_of`` None), or for its
    largest part's state plus the exchange's room."""
    layouts = [Layout.for_run(graph, spec, "strong", None)]
    if parts_of:
        layouts = [Layout.for_run(parts.part_of(graph, parts_of, k), spec, "strong", None)
                   for k in range(parts_of)]
    state = max(la.state_bytes for la in layouts)
    reserve = device_bytes(graph.num_vertices, spec.dtype.itemsize) if parts_of else 0
    return state + reserve + slots * layouts[0].slot_bytes


def multi(example: Example):
    """The call over the job's workers, on every rank, its parts cut as drawn."""
    graph = example.graph()
    options = dict(OVER_WORKERS)
    if example.slots is not None:
        options["device_memory"] = budget(graph, ALGORITHMS[example.algorithm].spec,
                                          example.slots, WORKERS)
    cut = (lambda g, n: np.array(example.cuts, np.int64)) if example.cuts else \
        parts.split_pages
    with mock.patch.object(parts, "split_pages", cut):
        return example.call(graph, **options)


@st.composite
def examples(draw, algorithm: str) -> Example:
    entry = ALGORITHMS[algorithm]
    spec = entry.spec
    # CC also on weighted stores, whose rows go by weight and whose sample it links first.
    weighted = spec.operator.weighted or (algorithm == "cc" and draw(st.booleans()))
    edges, source = draw(inputs(weighted=weighted,
                                symmetric=True if algorithm == "cc" else None))
    page_edges = draw(st.sampled_from([1, 2, 4, 16, WHOLE]))
    pages = edges.graph(page_edges).num_pages
    assume(pages >= WORKERS)
    options = {"device": DEVICE, "schedule": draw(st.sampled_from(["pipelined", "reentry",
                                                                    "single"])),
               "push_alpha": draw(st.sampled_from([None, 0.0, 8.0, 1e9, 1e-3]))}
    if spec.strong_rule is not None:
        options["predictor"] = draw(st.sampled_from(["auto", "strong", "none"]))
    if algorithm == "cc":
        options["components"] = draw(st.sampled_from(["union-find", "propagation"]))
    cuts = None
    if draw(st.booleans()):
        inner = sorted(draw(st.lists(st.integers(0, 10**6), min_size=WORKERS - 1,
                                     max_size=WORKERS - 1)))
        cuts = (0, *(c % (pages + 1) for c in inner), pages)
        cuts = tuple(sorted(cuts))
    return Example(algorithm, edges, source if entry.needs_source else None, page_edges,
                   options, draw(st.sampled_from([None, 2, 3, 5])), cuts, draw(st.booleans()))


def check(example: Example, got) -> None:
    """The workers' answer is the single-process engine's (within float64 rounding for a
    summing program) and the oracle's."""
    graph = example.graph()
    spec = ALGORITHMS[example.algorithm].spec
    options = dict(example.options)
    if example.slots is not None:
        options["device_memory"] = budget(graph, spec, example.slots, None)
    single = example.call(graph, **{k: v for k, v in options.items()
                                    if k not in example.options})
    if spec.combine == "sum":
        np.testing.assert_allclose(got.values, single.values, rtol=1e-9, atol=1e-12)
        assert ALGORITHMS[example.algorithm].check(graph, got.values, None) is None
    else:
        np.testing.assert_array_equal(got.values, single.values)
        want = expected(example.algorithm, example.edges, example.source)
        if example.algorithm == "sssp" and not example.edges.integral:
            np.testing.assert_allclose(got.values, want, rtol=1e-5)
        else:
            np.testing.assert_array_equal(got.values, want.astype(got.values.dtype))
    if example.predecessors and ALGORITHMS[example.algorithm].needs_source:
        np.testing.assert_array_equal(got.predecessors, single.predecessors)
    assert len(got.stats.workers) == WORKERS
    assert sum(w["pages"] for w in got.stats.workers) == graph.num_pages
    assert sum(w["edges"] for w in got.stats.workers) == graph.num_edges


def lead(count: int) -> int:
    """Rank 0: draws, broadcasts and checks; returns the exit status."""
    status = 0
    for algorithm in ALGORITHMS:
        runs = 0

        @settings(max_examples=count, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(example=examples(algorithm))
        def test(example):
            nonlocal runs
            COMM.bcast(example, root=0)
            runs += 1
            check(example, multi(example))

        try:
            test()
            print(f"{algorithm}: {runs} examples on {WORKERS} workers ok", flush=True)
        except Exception:
            traceback.print_exc()
            print(f"{algorithm}: FAILED on {WORKERS} workers", flush=True)
            status = 1
    COMM.bcast(None, root=0)
    return status


def follow() -> int:
    """The other ranks: each broadcast example's call, until the end."""
    while (example := COMM.bcast(None, root=0)) is not None:
        with contextlib.suppress(SeraphError):  # every worker raised it; rank 0 reports it
            multi(example)
    return 0


if __name__ == "__main__":
    sys.exit(lead(int(sys.argv[1])) if COMM.rank == 0 else follow())
