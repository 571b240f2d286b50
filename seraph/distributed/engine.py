"""The partitioned run: one query over the workers of an MPI job, each running the engine
on its own part of the pages (docs/design.md, "Many workers").

Every worker runs the engine (:func:`seraph.api.run_engine`) on its part (:class:`~seraph.
distributed.parts.PartGraph`) with its own backend, slots and budget, holding every
vertex's value. :class:`PartRun` replaces the main loop (:meth:`seraph.scheduler.Run.
execute`) by steps the workers take together, each followed by an exchange
(:mod:`seraph.distributed.exchange`):

- a *dense step*: each worker sweeps its active pages (a dense round), or pulls its
  unsettled vertices (a bottom-up round) where their in-edges are few; a worker with no
  active page does nothing;
- a *push step*: each worker pushes the frontier, the same on all of them, over its own
  out-edges, one round (SSSP's the nearest bucket of it, delta-stepping across workers).

After the exchange every worker holds the same values, the same changed vertices and the
same figures, so they prove the same strong threshold (the smallest value any of them
wrote, or the rounds done, or the smallest value still waiting) and take the same next
step; the run ends when a step changed nothing anywhere, or nothing waits to push. A
summing program's iterations add up the workers' sums (:meth:`PartRun.sums_gathered`).

Union-find (connected components) takes no steps: each worker links its own part's
edges, and the workers unite their forests after the sampling and after the finish
(:meth:`PartRun.forests_linked`), so that all of them skip the same largest component.
The weak predictor (whose re-check is one process's) is refused.

Faults: an error that every worker meets before the run (a budget too small, a bad
option) is raised on all of them alike. Any other failure of a worker during the run ends
the job at once (``MPI_Abort``), after a line naming the worker: the others would
otherwise wait for it in the next exchange.
"""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
from dataclasses import replace
from functools import partial

import numpy as np

from seraph import interrupts, progress
from seraph.backends.caches import graph_cached, out_degrees
from seraph.backends.cpu.push import default_delta
from seraph.distributed import mpi
from seraph.distributed.exchange import Exchange, Step, device_bytes, on_host, out_edges
from seraph.distributed.guard import GUARDED
from seraph.distributed.parts import PartGraph, check_parts, part_of
from seraph.errors import ConfigError, SeraphError
from seraph.predictors import WITH_DIAGRAM
from seraph.scheduler import Run
from seraph.spec import MIN
from seraph.stats import RunStats

#: A push step takes the next buckets of what waits after the nearest while their
#: out-edges stay within the last step's (the buckets no longer grow), under STEP_EDGES and
#: a STEP_SHARE of the push limit: every step costs an exchange and the host's decisions
#: whatever its work, and the long tail of small buckets (a grid's every bucket) would
#: leave the devices idle meanwhile. While the buckets grow, a wider step would lower more
#: vertices from values not yet final, which the bottom-up rounds after pay for.
STEP_EDGES = 1 << 20
STEP_SHARE = 16
#: RunStats counters that add up over the workers.
SUMMED = ("num_slots", "pages_transferred", "pages_skipped", "bytes_h2d", "bytes_d2h",
          "sweeps", "reentries", "updates_attempted", "updates_succeeded", "skipped_strong",
          "skipped_weak", "edges_pushed", "edges_pulled_bottom_up", "edges_swept",
          "exchange_bytes")
#: RunStats figures where the workers' largest stands for the run.
LARGEST = ("wall_time", "setup_time", "readback_time", "exchange_time",
           "peak_device_memory", "peak_host_memory")


class Waiting:
    """The vertices waiting to push in a partitioned run, in delta-stepping's buckets of
    width ``delta`` (one bucket where it is None), so that a push step costs the vertices
    it takes and those it lowered, not all that wait. A vertex lowered again is filed
    again, in its new bucket; its earlier entry, in a farther bucket, is stale, and is
    dropped when that bucket comes up (values only go down, and a push from the nearest
    bucket writes no value below it). A vertex without out-edges is never filed: its push
    would lower nothing.

    The entries are the backend's arrays (``xp``: numpy, or cupy on the backend's stream),
    as are ``values`` and ``degrees`` (the whole graph's out-degrees): only a step's
    figures cross to the host. Each bucket's entries and their out-edges are counted on
    the host as they are filed (stale ones until dropped), so that a step chooses its
    buckets without reading the device."""

    def __init__(self, xp, delta: float | None, values, degrees):
        self.xp, self.delta, self.values, self.degrees = xp, delta, values, degrees
        self.buckets: dict[int, list] = {}
        self.held: dict[int, list[int]] = {}  # a bucket's entries and their out-edges
        #: Buckets of one entry, none of it stale: taken as they are, their edges as counted.
        self.clean: set[int] = set()
        self.edges = 0  # the entries' out-edges, stale ones counted until dropped
        self.count = 0  # the entries, stale ones counted until dropped

    @property
    def empty(self) -> bool:
        return not len(self._nearest()[1])  # what is left may all be stale

    def add(self, vertices) -> None:
        """Files ``vertices`` (unique, ascending) by their values."""
        xp = self.xp
        degrees = self.degrees[vertices]
        # One read of the device: the vertices with out-edges, and those edges (sums of
        # int64, as in out_edges: cupy compiles a widening sum anew for each size class).
        count, edges = (int(x) for x in on_host(xp.stack((
            (degrees > 0).astype(xp.int64).sum(), degrees.astype(xp.int64).sum()))))
        if count < len(vertices):
            keep = degrees > 0
            vertices, degrees = vertices[keep], degrees[keep]
        if not count:
            return
        if self.delta is None:
            self._file(0, vertices, edges)
            return
        keys = self._keys(vertices)
        low, high = (int(k) for k in on_host(xp.stack((keys.min(), keys.max()))))
        # A vertex filed here may have an entry in a farther bucket, stale from now on.
        self.clean = {key for key in self.clean if key < low}
        if low == high:
            self._file(low, vertices, edges)
            return
        # A stable sort by bucket keys keeps each bucket's vertices ascending: numpy radix
        # sorts 16-bit keys (cupy's sorts are radix sorts, always stable).
        keys -= low
        if high - low < 1 << 16:
            keys = keys.astype(xp.uint16)
        order = keys.argsort(kind="stable") if xp is np else keys.argsort()
        keys, vertices = keys[order], vertices[order]
        starts = xp.flatnonzero(xp.diff(keys)) + 1
        # Each bucket's first key, where it starts and the out-edges before its end.
        edges = xp.cumsum(degrees[order].astype(xp.int64))
        firsts, ends, through = on_host(xp.stack((
            xp.concatenate((keys[:1].astype(xp.int64), keys[starts].astype(xp.int64))),
            xp.concatenate((starts, xp.full(1, len(vertices), starts.dtype))),
            edges[xp.concatenate((starts - 1, xp.full(1, len(vertices) - 1, starts.dtype)))],
        ))).tolist()
        for key, start, end, before, upto in zip(firsts, [0, *ends[:-1]], ends,
                                                 [0, *through[:-1]], through, strict=True):
            self._file(key + low, vertices[start:end], upto - before)

    def _file(self, key: int, vertices, edges: int) -> None:
        """Files ``vertices`` (unique, ascending, their values in bucket ``key``)."""
        entries = self.buckets.setdefault(key, [])
        entries.append(vertices)
        held = self.held.setdefault(key, [0, 0])
        held[0] += len(vertices)
        held[1] += edges
        self.count += len(vertices)
        self.edges += edges
        if len(entries) == 1:
            self.clean.add(key)
        else:
            self.clean.discard(key)

    def _drop(self, key: int) -> list:
        """Bucket ``key``'s entries, no longer counted."""
        count, edges = self.held.pop(key)
        self.count -= count
        self.edges -= edges
        self.clean.discard(key)
        return self.buckets.pop(key)

    def _keys(self, vertices):
        return self.xp.floor(self.values[vertices] / self.delta).astype(np.int64)

    def _fresh(self, keys: list[int]) -> tuple[object, int]:
        """The vertices of buckets ``keys`` (the nearest, ascending), unique, none stale,
        ascending, and their out-edges; the buckets are dropped."""
        xp = self.xp
        if all(key in self.clean for key in keys):
            edges = sum(self.held[key][1] for key in keys)
            taken = [self._drop(key)[0] for key in keys]
            return (taken[0] if len(taken) == 1 else xp.sort(xp.concatenate(taken))), edges
        entries = [(key, entry) for key in keys for entry in self._drop(key) if len(entry)]
        if not entries:
            return xp.empty(0, xp.int64), 0
        both = xp.concatenate([entry for _, entry in entries])
        if self.delta is not None:
            # Stale where its vertex's value moved to a nearer bucket than its entry's
            # (whose entry may have been taken already).
            both = both[self._keys(both) >= self._entry_keys(entries)]
        both = xp.unique(both)
        return both, out_edges(self.degrees, both)

    def _entry_keys(self, entries: list[tuple[int, object]]):
        """The bucket key of each entry's every vertex, in the entries' order: a running
        sum of the key steps, set where each entry starts."""
        xp = self.xp
        lengths = np.array([len(entry) for _, entry in entries])
        keys = np.array([key for key, _ in entries], dtype=np.int64)
        steps = xp.zeros(int(lengths.sum()), dtype=xp.int64)
        steps[xp.asarray(np.cumsum(lengths) - lengths)] = xp.asarray(np.diff(keys, prepend=0))
        return xp.cumsum(steps)

    def _nearest(self) -> tuple[int, object]:
        """The nearest bucket's key and its vertices (ascending, unique, none stale), kept
        as one entry; empty buckets are dropped on the way."""
        while self.buckets:
            key = min(self.buckets)
            if key in self.clean:
                return key, self.buckets[key][0]
            vertices, edges = self._fresh([key])
            if len(vertices):
                self._file(key, vertices, edges)
                return key, vertices
        return 0, self.xp.empty(0, self.xp.int64)

    def take(self, edges: float = 0, unless_over: float = math.inf) -> tuple[object, int]:
        """The nearest bucket's vertices, and the next buckets' while those taken have
        fewer than ``edges`` out-edges and at most ``unless_over``; ascending, no longer
        waiting. Returns them and their out-edges. (No vertex is in two buckets taken: its
        entry in the farther one is stale.)

        The buckets go in batches: the nearest, and those after it while the counted
        out-edges before them (at least those that are fresh) stay within the limits, all
        of which the rule takes."""
        taken, held = [], 0
        while self.buckets and (not held or (held < edges and held <= unless_over)):
            keys = sorted(self.buckets)
            batch, bound = keys[:1], held + self.held[keys[0]][1]
            for key in keys[1:]:
                if not (bound < edges and bound <= unless_over):
                    break
                batch.append(key)
                bound += self.held[key][1]
            vertices, out = self._fresh(batch)
            if len(vertices):
                taken.append(vertices)
                held += out
        if len(taken) <= 1:
            return (taken[0] if taken else self.xp.empty(0, self.xp.int64)), held
        return self.xp.sort(self.xp.concatenate(taken)), held

    def compact(self) -> None:
        """Drops every stale entry, so that :attr:`count` and :attr:`edges` count each
        waiting vertex once: a vertex lowered in several steps has an entry from each."""
        if self.buckets:
            self.add(self._fresh(sorted(self.buckets))[0])

    def nearest_minimum(self) -> float:
        """The smallest value waiting (a bound on every later update's value)."""
        return float(self.values[self._nearest()[1]].min())

    def drain(self):
        """Every vertex waiting (stale entries too), in the backend's memory; none waiting
        after."""
        every = [part for entries in self.buckets.values() for part in entries]
        self.buckets, self.held, self.edges, self.count = {}, {}, 0, 0
        self.clean.clear()
        return self.xp.concatenate(every) if every else self.xp.empty(0, self.xp.int64)


#: The waiting sets' kinds whose device kernels this process has compiled (see :func:`warm`).
_warmed: set[tuple] = set()


def warm(xp, delta: float | None, value_dtype, degree_dtype) -> None:
    """Takes each of a waiting set's paths once, on three vertices, where this process has
    not yet: on a device cupy compiles a kernel where a path first meets it, which would
    otherwise be in whichever later call first takes that path (a vertex without out-edges,
    a bucket filed twice, entries gone stale)."""
    kind = (delta is None, np.dtype(value_dtype), np.dtype(degree_dtype))  # not delta's value
    if xp is np or kind in _warmed:
        return
    _warmed.add(kind)
    far = 0.0 if delta is None else 2.0 * delta
    values = xp.asarray([far, 0.0, 0.0]).astype(value_dtype)
    waiting = Waiting(xp, delta, values, xp.asarray([1, 1, 0]).astype(degree_dtype))
    waiting.add(xp.arange(3))  # two buckets where there are several; one vertex dropped
    values[0] = 0
    waiting.add(xp.arange(1))  # a bucket filed twice, and a stale entry
    waiting.take(math.inf)
    waiting.add(xp.arange(2))
    waiting.compact()


class PartRun(Run):
    """A run on one worker's part: the steps of the workers together (see the module
    docstring)."""

    def __init__(self, comm, graph: PartGraph, algorithm, backend, config, predictor,
                 stats, trace, weak_after=None):
        super().__init__(graph, algorithm, backend, config, predictor, stats, trace,
                         weak_after)
        self.comm = comm
        # The workers order the pushes (delta-stepping) themselves: a backend pushes plain
        # rounds of the frontier it is given.
        backend.push_in_bins = False
        self.x = Exchange(comm, backend, graph.vertices)
        whole = graph.whole
        self.degrees = backend.walk_degrees = whole_out_degrees(graph, backend)
        # A push step's frontier and the vertices waiting fit the backend's push lists.
        self.capacity = backend.push_capacity
        # One push limit and one delta for all, from the whole graph's edges.
        alpha = backend.default_push_alpha() if config.push_alpha is None else \
            config.push_alpha
        delta = math.inf
        if algorithm.operator.binned and graph.weighted and graph.num_edges:
            indptr, _indices, weights = graph.csc()
            delta = default_delta(indptr, weights) * graph.num_edges / whole.num_edges
        alpha, delta = comm.rows([alpha, delta]).min(axis=0)
        use_push = self.schedule.uses_sparse_rounds and alpha > 0 and whole.num_edges > 0
        self.push_limit = whole.num_edges / alpha if use_push else 0.0
        self.delta = delta if math.isfinite(delta) else None
        self._own_round = (0, algorithm.inf)
        self._step_edges = 0  # the out-edges of the phase's last push step

    # -- the steps ------------------------------------------------------------------------
    def execute(self, frontier, max_dense_rounds: int | None = None) -> bool:
        """Runs to convergence from ``frontier``, the vertices whose values start changed
        (None: every vertex); the workers' frontiers are joined. Only minimising programs
        run rounds here, and none of them limits its rounds (``max_dense_rounds``: a
        summing one's, refused), so it returns True, converged."""
        if self.alg.combine != MIN:
            # The exchange takes minima: a program of another combine that runs rounds
            # would be summed wrongly. Every worker raises it here alike.
            refused = ConfigError(f"{self.alg.name}'s rounds do not run over several "
                                  "workers: run it in one process")
            refused.collective = True
            raise refused
        self.x.restart()
        frontiers = self.comm.objects(frontier)
        if any(f is None for f in frontiers):
            frontier = None
        else:
            frontier = np.unique(np.concatenate([np.asarray(f, np.int64) for f in frontiers]))
        with self.be.vector_steps():  # the waiting vertices are the backend's arrays
            return self._steps(frontier)

    def _steps(self, frontier) -> bool:
        waiting = self._waiting()
        if frontier is None:
            shift = self.layout.block_shift
            self.be.mark_blocks(np.arange(self.layout.num_blocks, dtype=np.int64) << shift,
                                self.epoch)
            sparse = self.g.whole.num_edges < self.push_limit and \
                self.g.num_vertices <= self.capacity
            if sparse:
                waiting.add(self.be.xp.arange(self.g.num_vertices))
        else:
            self.be.mark_blocks(frontier, self.epoch)
            waiting.add(self.be.xp.asarray(frontier))
            sparse = self._pushes(waiting)
        while True:
            interrupts.check()
            if sparse:
                filed = self._push_step(waiting)
                if filed and waiting.empty:
                    return True
                if not filed or not self._pushes(waiting):
                    # The dense rounds take what still waits: its blocks cross, not its ids.
                    self._mark(on_host(waiting.drain()))
                    sparse = False
                    self.stats.switches_to_dense += 1
                continue
            step = self._dense_step()
            if not step.changes.count:
                return True  # nothing changed anywhere: no page is active
            if self.push_limit and step.changes.count <= self.capacity and \
                    step.changes.edges(self.degrees) < self.push_limit:
                waiting = self._waiting()
                waiting.add(step.changes.vertices())
                sparse = True
                self.stats.switches_to_sparse += 1

    def _waiting(self) -> Waiting:
        """An empty waiting set, for a phase of push steps whose first takes one bucket."""
        self._step_edges = 0
        values = self.be.vector("values")
        warm(self.be.xp, self.delta, values.dtype, self.degrees.dtype)
        return Waiting(self.be.xp, self.delta, values, self.degrees)

    def _pushes(self, waiting: Waiting) -> bool:
        """Whether what waits goes on in push steps: few enough out-edges (the push limit)
        and vertices (the backend's push lists), counted once each where the counts with
        stale entries say no."""
        def fits() -> bool:
            return waiting.edges < self.push_limit and waiting.count <= self.capacity
        if not self.push_limit:
            return False
        if fits():
            return True
        waiting.compact()
        return fits()

    def _dense_step(self) -> Step:
        """A bottom-up or dense round on this worker's active pages (nothing where none is
        active), then the exchange and the round's end on the workers' figures."""
        self._own_round = (0, self.alg.inf)
        if self.activity.active().any() and not self.sparse.bottom_up():
            progress.working("dense", self.stats)
            changed_min, succeeded = self.dense.round()
            self._own_round = (succeeded, changed_min)
            self.stats.log_round("dense")
            progress.round_done("dense", self.stats)
        if self.push_limit:
            self.be.take_changed(0)  # clears the changed flags, which a push phase claims
        step = self._exchange(*self._own_round)
        super().end_round(step.succeeded, self.alg.dtype.type(step.minimum))
        return step

    def end_round(self, succeeded: int, changed_min) -> None:
        """This worker's bottom-up round: its figures wait for the exchange, and the round
        ends on all the workers' (:meth:`_dense_step`)."""
        self._own_round = (succeeded, changed_min)

    def _push_step(self, waiting: Waiting) -> bool:
        """One push round of ``waiting``'s nearest buckets (:meth:`Waiting.take`; all that
        waits where pushes are not by delta-stepping) over every worker's out-edges; what
        it lowered, on any worker, waits in its turn (the same on every worker). Returns
        False where it lowered more vertices than a device's push lists hold: they wait for
        a dense round (their blocks marked by the push and the exchange)."""
        stats = self.stats
        frontier, self._step_edges = waiting.take(
            min(self.push_limit / STEP_SHARE, STEP_EDGES), self._step_edges)
        start = time.perf_counter()
        progress.working("push", stats)
        self.epoch += 1
        res = self.be.push(frontier, 0, self.epoch)
        stats.sparse_rounds += 1
        stats.rounds += 1
        stats.edges_pushed += res.edges
        stats.updates_succeeded += res.succeeded
        stats.sparse_time += time.perf_counter() - start
        # The round's next frontier is every vertex it lowered, unless a device's list of
        # them ran out of room.
        listed = len(res.frontier) < self.capacity
        step = self._exchange(res.succeeded, self.alg.inf, res.frontier if listed else None)
        filed = step.changes.count <= self.capacity
        if filed:
            waiting.add(step.changes.vertices())
        if self.alg.strong_rule.counts_rounds:
            self.prove(self.rounds_bound())
        elif filed and not waiting.empty:
            # Every later update descends from a vertex still waiting to push.
            self.prove(waiting.nearest_minimum())
        stats.log_round("push")
        self.trace.add("push", start - self.t0, time.perf_counter() - self.t0, rounds=1,
                       edges=res.edges)
        progress.round_done("push", stats, waiting.count)
        return filed

    def _exchange(self, succeeded: int, minimum, lowered=None) -> Step:
        step = self.x.step(succeeded, minimum, lowered)
        self.stats.exchange_time = self.x.time
        if len(step.marks):
            self.epoch += 1  # pages swept before another worker's changes are active
            self.be.mark_blocks(step.marks, self.epoch)
        return step

    def _mark(self, vertices: np.ndarray) -> None:  # host ids
        self.epoch += 1
        self.be.mark_blocks(vertices, self.epoch)

    def forests_linked(self, parent) -> None:
        """Union-find's forest of this worker's edges: united with the other workers'."""
        self.x.unite(parent)
        self.stats.exchange_time = self.x.time

    def sums_gathered(self, sums) -> None:
        """A summing iteration's sums over this worker's pages: added up over the workers."""
        self.x.sum(sums)
        self.stats.exchange_time = self.x.time


def whole_out_degrees(part: PartGraph, backend):
    """The whole graph's out-degrees in the backend's memory (int32 on a device, where
    :func:`~seraph.distributed.exchange.device_bytes` counts them), made once a part."""
    degrees = out_degrees(part.whole)
    if backend.xp is np:
        return degrees

    def upload():
        with backend.vector_steps():
            return backend.xp.asarray(degrees.astype(np.int32))

    return graph_cached(part, ("whole out-degrees", backend.name), upload)


# -- the call ---------------------------------------------------------------------------------
def agree(comm, error: BaseException | None = None, resident: bool = True) -> bool:
    """The workers' first collective: each says whether it got ready to run (and whether
    its part is resident); if one did not, every worker raises its error, so that all end
    alike and none waits. Returns whether every part is resident."""
    said = comm.objects(("ready", resident) if error is None else
                        ("error", type(error), str(error)))
    errors = [(w, s[1:]) for w, s in enumerate(said) if s[0] == "error"]
    if errors:
        worker, (kind, message) = errors[0]
        prefix = "" if len(errors) == comm.size and all(e == errors[0][1] for _, e in errors) \
            else f"worker {worker}: "
        raised = kind(prefix + message)
        raised.collective = True
        raise raised
    comm.agreed = True
    return all(s[1] for s in said)


def ready(comm, layout):
    """:func:`seraph.api.run_engine`'s ``ready``: the workers agree (:func:`agree`), and
    the plan is chosen as for pages that move where any worker's do."""
    return replace(layout, resident=agree(comm, resident=layout.resident))


def job_size(config) -> int:
    """The workers the config asks for, where the job itself does not say (1: one)."""
    return config.workers or 1


def execute_partitioned(graph, algorithm, source, config, run_engine):
    """:func:`seraph.api.execute` over the workers of this process's MPI job, which must
    be as many as ``config`` asks for; the values on every worker. ``run_engine`` is
    :func:`seraph.api.run_engine`, which each worker runs on its part."""
    world = mpi.world()
    if config.workers is not None and config.workers != world.size:
        raise ConfigError(f"workers={config.workers} but this MPI job has {world.size} "
                          f"process(es); start it with mpiexec -n {config.workers}")
    run_config = partitioned_config(config, algorithm)
    check_parts(graph, world.size)
    comm = workers_comm(config, world)
    comm.agreed, comm.bytes = False, 0
    try:
        part = part_of(graph, comm.size, comm.rank)
        reserve = device_bytes(graph.num_vertices, algorithm.dtype.itemsize)
        values, stats, trace = run_engine(part, algorithm, source, run_config,
                                          make_run=partial(PartRun, comm), reserve=reserve,
                                          ready=partial(ready, comm))
        stats = merged(comm, stats, part)
    except BaseException as error:
        if not comm.agreed and isinstance(error, SeraphError):
            agree(comm, error)  # raises it on every worker
        if mpi.alone(error):
            stop(comm, error)
        raise
    return values, stats, trace


def workers_comm(config, world):
    """The workers' communicator: over MPI, or over NCCL between GPUs (each worker's GPU
    chosen first: :func:`select_gpu`)."""
    comm = mpi.HostComm(world)
    if config.devices is None:
        return comm
    try:
        mpi.check_nccl()
        gpu = select_gpu(config.devices, world)
    except SeraphError as error:
        agree(comm, error)  # raises it on every worker
    except BaseException as error:
        stop(comm, error)
    agree(comm)
    return mpi.device_comm(gpu)


def partitioned_config(config, algorithm):
    """The run's config on each worker: its device, and the predictor resolved (auto's
    weak half is one process's)."""
    device = "cuda" if config.devices is not None else "cpu"
    predictor = config.resolved_predictor(algorithm)
    if predictor in WITH_DIAGRAM and config.predictor == "auto" and config.diagram is None:
        predictor = "none"  # auto's own choice: the weak predictor is one process's
    if predictor in WITH_DIAGRAM:
        raise ConfigError(f"predictor {predictor!r} runs on one worker only (its re-check "
                          "is one process's): use predictor strong or none with several "
                          "workers")
    return replace(config, device=device, workers=None, devices=None, predictor=predictor)


def end_alone(error: BaseException) -> None:
    """Where ``error`` ends this worker alone (:func:`seraph.distributed.mpi.alone`) in an
    MPI job, ends the job (:func:`stop`); else returns, for the error to be raised."""
    if mpi.in_job() and mpi.alone(error):
        stop(mpi.HostComm(mpi.world()), error)


def stop(comm, error: BaseException) -> None:
    """Ends the whole job for ``error`` on this worker: a line naming the worker and the
    error (for a signal, its guard's line, where it has one), then, under seraph's guard
    (:mod:`seraph.distributed.guard`), its exit, which the guard turns into the job's end,
    else ``MPI_Abort``."""
    interrupted = isinstance(error, KeyboardInterrupt) or type(error).__name__ == "Terminated"
    if comm.size == 1:
        raise error  # no other worker waits for this one
    code = (143 if type(error).__name__ == "Terminated" else 130) if interrupted else 1
    if not interrupted:
        if progress.verbosity() >= 2:  # -v: where it came from
            traceback.print_exception(error)
        print(f"seraph: error: worker {comm.rank} of {comm.size} (pid {os.getpid()} on "
              f"{mpi.host_name()}): {type(error).__name__}: {error}", file=sys.stderr,
              flush=True)
    if os.environ.get(GUARDED):
        sys.stderr.flush()
        os._exit(code)  # without MPI_Finalize, which would wait for the others
    comm.abort(code)


def select_gpu(devices, world) -> int:
    """This worker's GPU: the one at its rank among the job's processes on its host, of the
    ``devices`` named (ids, a count of the first ones, or "all"); made current."""
    import cupy as cp

    local = world.Split_type(mpi.mpi().COMM_TYPE_SHARED)
    rank, size = local.rank, local.size
    local.Free()
    ids = gpu_ids(devices, cp.cuda.runtime.getDeviceCount())
    if size > len(ids):
        raise ConfigError(f"{size} workers on {mpi.host_name()} but {len(ids)} GPU(s) for "
                          "them: one worker a GPU")
    cp.cuda.Device(ids[rank]).use()
    return ids[rank]


def gpu_ids(devices, visible: int) -> tuple[int, ...]:
    """The GPU ids ``devices`` names (ids, a count of the first ones, or "all") among the
    ``visible`` ones (``CUDA_VISIBLE_DEVICES`` decides which those are)."""
    if devices == "all":
        ids = tuple(range(visible))
    elif isinstance(devices, int):
        ids = tuple(range(devices))
    else:
        ids = tuple(devices)
    missing = [i for i in ids if i >= visible]
    if not ids or missing:
        raise ConfigError(f"GPUs {devices!r}: {visible} GPU(s) are visible here "
                          f"(ids 0 to {visible - 1})" if visible else "no GPU is visible here")
    return ids


def merged(comm, stats: RunStats, part: PartGraph) -> RunStats:
    """The run's stats on every worker: counters added up, times and peaks the largest
    worker's, and each worker's own figures in ``workers``."""
    lo, hi = part.vertices
    own = {"worker": comm.rank, "host": mpi.host_name(), "device": stats.device,
           "first_page": part.first_page, "pages": part.num_pages, "edges": part.num_edges,
           "vertices": [lo, hi],
           **{k: getattr(stats, k) for k in ("num_slots", "resident", "pages_transferred",
                                             "bytes_h2d", "edges_pushed",
                                             "edges_pulled_bottom_up", "edges_swept",
                                             "kernel_time", "sparse_time",
                                             "exchange_time", "wall_time",
                                             "peak_device_memory", "peak_host_memory")},
           "exchange_bytes": comm.bytes}
    stats.exchange_bytes = comm.bytes
    everyone = comm.objects((own, {k: getattr(stats, k) for k in SUMMED + LARGEST}))
    for name in SUMMED:
        setattr(stats, name, sum(figures[name] for _, figures in everyone))
    for name in LARGEST:
        setattr(stats, name, max(figures[name] for _, figures in everyone))
    whole = part.whole
    stats.num_edges, stats.num_pages = whole.num_edges, whole.num_pages
    stats.resident = all(worker["resident"] for worker, _ in everyone)
    stats.gteps = whole.num_edges / stats.wall_time / 1e9 if stats.wall_time > 0 else 0.0
    stats.workers = [worker for worker, _ in everyone]
    return stats
