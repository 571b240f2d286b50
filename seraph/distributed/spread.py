"""Several sources over the workers of an MPI job, source-parallel: each worker holds the
whole graph (paged within its own budget, on its own GPU or its share of the CPU cores)
and runs its share of the sources one after another, as one process runs them all; the
first worker gathers the results in source order (docs/design.md, "Many workers").

The rule (:func:`source_parallel`): a run of at least as many sources as workers is
source-parallel; one of fewer (a single source among them) runs each source partitioned
over all the workers, one after another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from seraph.distributed import mpi
from seraph.distributed.engine import agree, select_gpu, stop
from seraph.errors import SeraphError


def source_parallel(sources: int, workers: int) -> bool:
    """Whether ``sources`` sources over ``workers`` workers run source-parallel: when
    every worker gets one at least. Otherwise each source runs partitioned."""
    return workers > 1 and sources >= workers


def share(sources: int, workers: int, worker: int) -> range:
    """The positions of ``worker``'s sources among ``sources``: every ``workers``-th, so
    that each worker's share is as long and as mixed as the others'."""
    return range(worker, sources, workers)


def one_process_config(config):
    """The config each worker runs its sources with: one process's, on its own GPU (made
    current by :func:`run_sources`) or on the CPU."""
    device = "cuda" if config.devices is not None else "cpu"
    return replace(config, device=device, workers=None, devices=None)


def run_sources(sources: list, run_one: Callable[[object], object], config) -> Iterator:
    """Runs ``run_one(source)`` for every source over this process's MPI job, each worker
    its share (:func:`share`). On the first worker: yields the results in source order,
    each as soon as it and those before it are in; on the others: sends its results to
    the first and yields nothing. Collective over the job.

    The workers agree twice: once they are ready (each on its GPU), and once each ran its
    first source, so that an error every worker meets there (a budget too small for the
    graph) ends them all alike, with one line. An error of one worker after that ends the
    job (:func:`seraph.distributed.engine.stop`)."""
    comm = mpi.HostComm(mpi.world())
    comm.agreed = False
    try:
        if config.devices is not None:
            select_gpu(config.devices, comm.comm)
    except SeraphError as error:
        agree(comm, error)  # raises it on every worker
    except BaseException as error:
        stop(comm, error)
    agree(comm)
    mine = share(len(sources), comm.size, comm.rank)
    try:
        first = run_one(sources[mine[0]])
    except SeraphError as error:
        agree(comm, error)
    agree(comm)
    if comm.rank != 0:
        requests = [comm.comm.isend(first, dest=0)]
        for i in mine[1:]:
            requests.append(comm.comm.isend(run_one(sources[i]), dest=0))
        mpi.mpi().Request.waitall(requests)
        return
    for i, source in enumerate(sources):
        owner = i % comm.size
        if i == 0:
            yield first
        elif owner == 0:
            yield run_one(source)
        else:
            # Messages from one worker arrive in the order it sent them.
            yield comm.comm.recv(source=owner)

