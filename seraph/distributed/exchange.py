"""What the workers of a partitioned run exchange after each step (docs/design.md, "Many
workers").

Every worker holds every vertex's value and writes only those of its own part's vertices
(a vertex whose in-edges span two parts is written by both). After each step (a dense or
bottom-up round, or a push round) the workers exchange the values they lowered, and the
figures of their rounds, so that all of them hold the same values again and agree on what
changed, on the strong threshold and on the next step:

- *sparse*, when few changed: each worker's lowered vertices and their values are gathered
  by every worker, which takes the smaller of each;
- *dense*, when many did: the value vectors are reduced by an elementwise min.

A worker tells which of its values it lowered by comparing them with a copy of the values
as they were after the last exchange (the same on every worker): the same test whatever
lowered them (a sweep, a bottom-up pull, a push); a push round, which lists the vertices
it lowered (its next frontier), passes them instead. A summing program's sums are added up
over the workers (:meth:`Exchange.sum`).

The collectives are :mod:`seraph.distributed.mpi`'s, on the backend's arrays (``be.xp``:
numpy, or cupy on the backend's stream), so that CPU and GPU workers exchange alike.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from seraph.backends.layout import frontier_capacity

#: A sparse exchange is chosen while the gathered ids and values take at most this share of
#: one value vector's bytes (a dense one moves the whole vector), so that its buffers (the
#: gathered ids and values, and their copies on the way) take less room on a device than a
#: second value vector.
SPARSE_SHARE = 0.25


def on_host(array) -> np.ndarray:
    """A device array's copy in host memory (a host array itself)."""
    return array.get() if hasattr(array, "get") else array


def device_bytes(num_vertices: int, value_bytes: int) -> int:
    """The most device memory a partitioned run holds besides the backend's own: the
    exchange's copy of the values, and either a sparse exchange's buffers (less than a
    value vector) or a dense one's three flags a vertex; the whole graph's out-degrees
    (int32); the vertices waiting to push (at most a push list's worth, twice over, with
    stale entries) and the temporaries of filing them (sorts, keys), 48 bytes an entry."""
    return num_vertices * (2 * value_bytes + 3 + 4) + 48 * frontier_capacity(num_vertices) \
        + (1 << 16)


def out_edges(degrees, vertices) -> int:
    """The out-edges of ``vertices`` (``degrees``: out-degrees, in the same memory). The
    gathered degrees are widened before the sum: cupy compiles a sum that widens as it
    goes anew for each size class of its input, inside whichever call first meets it."""
    return int(degrees[vertices].astype(np.int64, copy=False).sum())


@dataclass
class Changes:
    """The vertices a step lowered on any worker: their ids (ascending, int64), or, after a
    dense exchange, a flag per vertex; in the backend's memory (read on the backend's
    stream, ``steps``: :meth:`Backend.vector_steps`)."""

    count: int
    ids: np.ndarray | None = None
    mask: object | None = None
    steps: object = None

    def vertices(self):
        """The ids, in the backend's memory."""
        if self.ids is not None:
            return self.ids
        with self.steps():
            return self.mask.nonzero()[0]

    def edges(self, degrees) -> float:
        """Their out-edges (``degrees``: the whole graph's out-degrees, in the backend's
        memory); inf where they are flags on a device: more vertices than a device's push
        lists hold."""
        if self.ids is not None:
            return float(out_edges(degrees, self.ids))
        if isinstance(self.mask, np.ndarray):
            return float(degrees[self.mask].sum())
        return math.inf


@dataclass
class Step:
    """What the workers agreed on after a step."""

    changes: Changes
    succeeded: int  # the updates that succeeded, on all workers
    minimum: float  # the smallest value any worker's round wrote (inf: none)
    marks: np.ndarray  # vertices lowered here by another worker, whose blocks to mark (host)


class Exchange:
    """The exchange of one worker (``comm``, :mod:`seraph.distributed.mpi`) whose backend
    ``be`` writes the values of the vertices ``written`` (a range [lo, hi))."""

    def __init__(self, comm, be, written: tuple[int, int]):
        self.comm, self.be, self.xp = comm, be, be.xp
        self.lo, self.hi = written
        with be.vector_steps():
            self.snapshot = self.xp.empty_like(be.vector("values"))
        self.time = 0.0

    def restart(self) -> None:
        """The values changed alike on every worker outside a step (a run's start, a plan's
        own step): they are the common values from here."""
        with self.be.vector_steps():
            self.xp.copyto(self.snapshot, self.be.vector("values"))

    def step(self, succeeded: int, minimum, lowered=None) -> Step:
        """The exchange after a step in which this worker's round succeeded ``succeeded``
        times, writing no value below ``minimum``; ``lowered``, where the step knows them
        (a push round's next frontier), are the vertices it lowered, so that a step of a
        few changes costs no pass over the part's values."""
        start = time.perf_counter()
        be, comm = self.be, self.comm
        values = be.vector("values")
        with be.vector_steps():
            if lowered is None:
                own = values[self.lo:self.hi] < self.snapshot[self.lo:self.hi]
                count = int(own.sum())
            else:
                own, count = self.xp.asarray(lowered), len(lowered)
        rows = comm.rows([count, succeeded, float(minimum)])
        counts = rows[:, 0].astype(np.int64).tolist()
        item = values.itemsize
        if sum(counts) == 0:
            changes, marks = Changes(0, ids=self.xp.empty(0, np.int64)), np.empty(0, np.int64)
        elif comm.size * max(counts) * (4 + item) <= SPARSE_SHARE * len(values) * item:
            changes, marks = self._sparse(own, counts, lowered is not None)
        else:
            changes, marks = self._dense(own, lowered is not None)
        del own
        self.time += time.perf_counter() - start
        return Step(changes, int(rows[:, 1].sum()), float(rows[:, 2].min()), marks)

    def _sparse(self, own, counts: list[int], listed: bool) -> tuple[Changes, np.ndarray]:
        """Each worker's lowered vertices and values (``own``: their ids where ``listed``,
        else a flag for each of its part's vertices), gathered by all; each takes the
        smallest value offered for every vertex. A worker's own offers are its values, so
        only another's can lower one here: those are the marks."""
        be, xp, comm = self.be, self.xp, self.comm
        values = be.vector("values")
        with be.vector_steps():
            ids = (own if listed else xp.flatnonzero(own) + self.lo).astype(xp.int32)
            gathered = comm.allgatherv(ids, counts)
            offered = comm.allgatherv(values[ids], counts)
            lowered = gathered[offered < values[gathered]]
            xp.minimum.at(values, gathered, offered)  # ids repeat: the smallest offer wins
            changed = xp.unique(gathered)
            self.snapshot[changed] = values[changed]
            return Changes(len(changed), ids=changed.astype(xp.int64)), \
                on_host(lowered).astype(np.int64)

    def _dense(self, own, listed: bool) -> tuple[Changes, np.ndarray]:
        """The value vectors reduced by an elementwise min; the changed flags are this
        worker's own (``own``: their ids where ``listed``, else a flag for each of its
        part's vertices) and those where another worker's value was smaller."""
        be, xp, comm = self.be, self.xp, self.comm
        values = be.vector("values")
        with be.vector_steps():
            changed = xp.zeros(len(values), dtype=xp.bool_)
            if listed:
                changed[own] = True
            else:
                changed[self.lo:self.hi] = own
            xp.copyto(self.snapshot, values)
            comm.allreduce(self.snapshot, "min")
            lowered = self.snapshot < values
            xp.copyto(values, self.snapshot)
            changed |= lowered
            marks = on_host(self._flagged_blocks(lowered))
            count = int(changed.sum())
        return Changes(count, mask=changed, steps=be.vector_steps), marks

    def _flagged_blocks(self, flags):
        """A vertex of each source block where ``flags`` has one set."""
        xp, shift = self.xp, self.be.layout.block_shift
        size, n = 1 << shift, len(flags)
        padded = xp.zeros(-(-n // size) * size, dtype=xp.bool_)
        padded[:n] = flags
        return xp.flatnonzero(padded.reshape(-1, size).any(axis=1)).astype(xp.int64) << shift

    def unite(self, parent) -> None:
        """Union-find's forests (``parent``: this worker's, of its own part's edges),
        united on every worker: each worker's in turn is sent to all, received in the room
        of the values' copy, and linked into theirs (:meth:`Backend.link_parents`). Each
        worker's roots are its components' smallest ids, so all end with the same forest."""
        start = time.perf_counter()
        be, comm = self.be, self.comm
        theirs = self.snapshot.view(parent.dtype)[:len(parent)]
        with be.vector_steps():
            for root in range(comm.size):
                if root == comm.rank:
                    comm.broadcast(parent, root)
                else:
                    comm.broadcast(theirs, root)
                    be.link_parents(parent, theirs)
        self.time += time.perf_counter() - start

    def sum(self, array) -> None:
        """A summing program's sums: each worker's, over its own pages, added up over all
        of them (a vertex whose in-edges span two parts gets both partial sums)."""
        start = time.perf_counter()
        with self.be.vector_steps():
            self.comm.allreduce(array, "sum")
        self.time += time.perf_counter() - start
