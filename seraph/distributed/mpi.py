"""The MPI job a process belongs to, and the collectives the partitioned engine uses.

The workers of a query are the processes of an MPI job (MPI_COMM_WORLD), started by an MPI
launcher: ``mpiexec`` from the ``mpich`` wheel when seraph starts them
(:mod:`seraph.distributed.launch`), or the user's own ``mpiexec -f hosts``. Small figures
(a round's counts and minima) always travel over MPI, between host memory. The vertex
values travel over MPI as well between CPU workers (:class:`HostComm`), and over NCCL,
device to device, between GPU workers (:class:`DeviceComm`, its unique id broadcast over
MPI). Both offer the same collectives on the backend's arrays, so the exchange
(:mod:`seraph.distributed.exchange`) is written once.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from seraph.errors import ConfigError, DeviceError

#: Variables an MPI launcher sets in each process it starts: MPICH's Hydra (and Intel
#: MPI, MVAPICH), Open MPI, and PMIx launchers (Slurm's srun among them).
JOB_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
#: What to install for workers.
INSTALL = "pip install 'seraph-graph[mpi]' (mpi4py and the mpich wheel)"


#: Whether this process has taken part in a collective of the workers: an error it meets
#: from then on may be its own alone (see :func:`alone`).
_collective_ran = False


def alone(error: BaseException) -> bool:
    """Whether ``error`` ends this worker alone, so that the others would wait for it: an
    error met after the workers' first collective that the workers did not raise together
    (those :func:`seraph.distributed.engine.agree` raises are marked ``collective``). One
    met before is the same on every worker: it comes of the same options and graph."""
    return _collective_ran and not getattr(error, "collective", False)


def _ran() -> None:
    global _collective_ran
    _collective_ran = True


def in_job() -> bool:
    """Whether an MPI launcher started this process (so that it is one of a job's ranks)."""
    return any(name in os.environ for name in JOB_VARIABLES)


def job_rank() -> int | None:
    """This process's rank in its MPI job, as the launcher's variables say (None: in none)."""
    for name in JOB_VARIABLES:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return None


def mpi():
    """mpi4py's ``MPI`` module; importing it initialises MPI, as one process of its own
    outside a job."""
    try:
        import mpi4py
    except ImportError:
        raise ConfigError(f"several workers need MPI: {INSTALL}") from None
    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.thread_level = "funneled"  # only the main thread calls MPI
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError) as e:
        raise ConfigError(f"MPI does not load ({e}); {INSTALL}") from None
    return MPI


def world():
    """MPI_COMM_WORLD of this process's job."""
    return mpi().COMM_WORLD


def host_name() -> str:
    return os.uname().nodename if hasattr(os, "uname") else "localhost"


class HostComm:
    """The collectives between the workers, over MPI, on host (numpy) arrays."""

    xp = np

    def __init__(self, comm):
        self.comm, self.rank, self.size = comm, comm.rank, comm.size
        #: Bytes of values this worker received through the collectives.
        self.bytes = 0

    # -- small figures and objects, always over MPI between host memory --------------------
    def rows(self, row) -> np.ndarray:
        """Every worker's ``row`` (numbers, as float64: exact for the int32 and float32
        values and counts they carry), one row a worker, in rank order."""
        _ran()
        mine = np.asarray(row, dtype=np.float64)
        out = np.empty((self.size, len(mine)), dtype=np.float64)
        self.comm.Allgather(mine, out)
        return out

    def objects(self, obj) -> list:
        """Every worker's ``obj`` (pickled), in rank order."""
        _ran()
        return self.comm.allgather(obj)

    def abort(self, code: int) -> None:
        """Ends every process of the job at once (the launcher kills the others)."""
        self.comm.Abort(code)

    # -- values ----------------------------------------------------------------------------
    def allgatherv(self, send, counts: list[int]):
        """Every worker's ``send`` (``counts[r]`` items from worker r) concatenated in rank
        order."""
        out = np.empty(int(sum(counts)), dtype=send.dtype)
        self.comm.Allgatherv(np.ascontiguousarray(send), [out, list(counts)])
        self.bytes += (len(out) - len(send)) * out.itemsize
        return out

    def allreduce(self, array, op: str) -> None:
        """``array`` (each worker's) becomes the elementwise min or sum (``op``) of them all,
        in place."""
        MPI = mpi()
        self.comm.Allreduce(MPI.IN_PLACE, array, op={"min": MPI.MIN, "sum": MPI.SUM}[op])
        self.bytes += array.nbytes

    def broadcast(self, array, root: int) -> None:
        """``array`` becomes worker ``root``'s, on every worker, in place."""
        self.comm.Bcast(array, root=root)
        self.bytes += array.nbytes if root != self.rank else 0


class DeviceComm(HostComm):
    """The collectives between GPU workers: values over NCCL, device to device, on the
    current CUDA stream (the backend's, inside ``Backend.vector_steps``); small figures
    over MPI."""

    def __init__(self, comm):
        super().__init__(comm)
        import cupy as cp
        from cupy.cuda import nccl

        self.cp, self.nccl = cp, nccl
        uid = comm.bcast(nccl.get_unique_id() if comm.rank == 0 else None, root=0)
        self.communicator = nccl.NcclCommunicator(comm.size, uid, comm.rank)
        self.xp = cp
        self._types = {np.dtype(np.int32): nccl.NCCL_INT32, np.dtype(np.int64): nccl.NCCL_INT64,
                       np.dtype(np.float32): nccl.NCCL_FLOAT32,
                       np.dtype(np.float64): nccl.NCCL_FLOAT64}

    def _stream(self) -> int:
        return self.cp.cuda.get_current_stream().ptr

    def allgatherv(self, send, counts: list[int]):
        # NCCL gathers equal counts: each worker's part padded to the largest.
        cp, most = self.cp, int(max(counts))
        if most == 0:
            return cp.empty(0, dtype=send.dtype)
        padded = cp.empty(most, dtype=send.dtype)
        padded[:len(send)] = send
        gathered = cp.empty(self.size * most, dtype=send.dtype)
        self.communicator.allGather(padded.data.ptr, gathered.data.ptr, most,
                                    self._types[send.dtype], self._stream())
        self.bytes += (len(gathered) - most) * gathered.itemsize
        if all(c == most for c in counts):
            return gathered
        return cp.concatenate([gathered[r * most:r * most + c] for r, c in enumerate(counts)])

    def broadcast(self, array, root: int) -> None:
        self.communicator.bcast(array.data.ptr, array.size, self._types[array.dtype], root,
                                self._stream())
        self.bytes += array.nbytes if root != self.rank else 0

    def allreduce(self, array, op: str) -> None:
        nccl = self.nccl
        self.communicator.allReduce(array.data.ptr, array.data.ptr, array.size,
                                    self._types[array.dtype],
                                    {"min": nccl.NCCL_MIN, "sum": nccl.NCCL_SUM}[op],
                                    self._stream())
        self.bytes += array.nbytes


def check_nccl() -> None:
    """Refuses GPUs as workers where cupy finds no NCCL."""
    try:
        from cupy.cuda import nccl
    except ImportError:
        nccl = None
    if nccl is None or not nccl.available:
        raise DeviceError("several GPUs exchange their values over NCCL, which cupy does not "
                          "find: pip install nvidia-nccl-cu12 (or -cu13, as your cupy)")


_device_comms: dict[int, DeviceComm] = {}


def device_comm(device: int) -> DeviceComm:
    """The job's NCCL communicator for this process's GPU, made once (making one costs
    more than most queries) and kept for its later calls."""
    if device not in _device_comms:
        _device_comms[device] = DeviceComm(world())
    return _device_comms[device]
