"""Starting the workers of a query under ``mpiexec`` when this process is not in an MPI job
already, and saying how the job ended (docs/design.md, "Many workers").

- The command line runs itself: ``seraph run ... --workers 3`` runs ``mpiexec -n 3`` over
  the same command, whose processes find themselves in a job and run as its workers
  (:func:`run_command`).
- The API runs the call: ``seraph.bfs(graph, 0, workers=3)`` pickles the call into a
  temporary folder it makes and removes, ``mpiexec`` runs it on every worker
  (:mod:`seraph.distributed.job`), and the first one pickles the result there
  (:func:`call_in_job`).

``mpiexec`` is the one installed beside this Python (the ``mpich`` wheel's), else the
first on the PATH. With the wheel's, on Linux, each worker runs under a guard
(:mod:`seraph.distributed.guard`) that names a worker a signal killed. The job's output
passes through, without the launcher's own report of an abnormal end (the worker's line
says it). Ctrl-C and SIGTERM are passed on to ``mpiexec``, which passes them to every
worker.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from seraph.distributed.mpi import INSTALL
from seraph.errors import ConfigError, DeviceError, WorkerError

#: How long the workers have to stop after a signal is passed on, before it is passed on
#: again (``mpiexec`` then stops them by force), and again after that.
STOP_SECONDS = 2.0
#: The start of the line a worker (or its guard) prints about its own failure.
WORKER_LINE = b"seraph: error: worker "
#: Lines of the launcher's own (MPICH's Hydra) report of an abnormal end, by their start.
LAUNCHER_LINES = (b"=====", b"=   ", b"YOUR APPLICATION TERMINATED", b"This typically refers",
                  b"Please see the FAQ", b"[mpiexec@", b"[proxy:", b"Abort(")
EXIT_STRING = b"YOUR APPLICATION TERMINATED WITH THE EXIT STRING: "


def mpiexec() -> str:
    """The ``mpiexec`` beside this Python (the mpich wheel's), else the PATH's."""
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        raise ConfigError(f"several workers need mpiexec, which is not installed: {INSTALL}")
    return found


def processes(config) -> int:
    """The worker processes ``config`` asks for: its workers, or one a GPU."""
    if config.devices is None:
        return config.workers or 1
    from seraph.distributed.engine import gpu_ids

    try:
        import cupy

        visible = cupy.cuda.runtime.getDeviceCount()
    except ImportError:
        raise DeviceError("several GPUs need cupy: pip install 'seraph-graph[cuda13]' or "
                          "'[cuda12]'") from None
    except Exception as e:  # cupy's own runtime errors, where no driver is present
        raise DeviceError(f"no usable GPU ({e})") from None
    count = len(gpu_ids(config.devices, visible))
    if count > 1:
        from seraph.distributed.mpi import check_nccl

        check_nccl()
    return count


def command(count: int, argv: list[str]) -> list[str]:
    """``mpiexec`` running ``python argv`` in ``count`` processes, each under its guard
    where that ``mpiexec`` is the mpich wheel's (Hydra's, whose connection the guard hands
    on) on Linux."""
    launcher = mpiexec()
    guarded = sys.platform.startswith("linux") and \
        Path(launcher) == Path(sys.executable).parent / "mpiexec"
    guard = ["-m", "seraph.distributed.guard"] if guarded else []
    return [launcher, "-n", str(count), sys.executable, *guard, *argv]


def environment(count: int, threads: int | None = None) -> dict[str, str]:
    """The job's environment: this one, with numba's thread pool of each worker as large
    as ``threads`` where the run asks for that many, else the cores shared out among the
    ``count`` workers unless the caller chose a number."""
    env = dict(os.environ)
    if threads is not None:
        env["NUMBA_NUM_THREADS"] = str(threads)
    elif "NUMBA_NUM_THREADS" not in env:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            os.cpu_count() or 1
        env["NUMBA_NUM_THREADS"] = str(max(1, cores // count))
    return env


@dataclass
class Ending:
    """How a job ended: ``mpiexec``'s status, the line a failed worker printed (if one
    did), and the launcher's word on it."""

    status: int
    worker_line: str | None = None
    launcher: str | None = None
    #: Set once a signal to this process is passed on: the job's output is dropped from
    #: then on (this process says how it ended).
    stopping: bool = False

    def failure(self) -> str:
        """One line on a failed job."""
        if self.worker_line:
            return self.worker_line
        why = self.launcher or f"mpiexec's exit status {self.status}"
        return f"seraph: error: a worker ended abnormally ({why}); the query was stopped on " \
               "every worker"


def run_job(count: int, argv: list[str], threads: int | None = None) -> Ending:
    """Runs ``python argv`` over ``count`` workers (each with ``threads`` threads: see
    :func:`environment`) to its end, its output passing through;
    a signal that stops this process (KeyboardInterrupt, or another BaseException its
    handler raises) is passed on to the job, which gets :data:`STOP_SECONDS` to end."""
    ending = Ending(0)
    # A session of its own: a terminal's Ctrl-C reaches this process, which passes it on.
    # No input: mpiexec would pass this process's input on to the first worker.
    job = subprocess.Popen(command(count, argv), env=environment(count, threads),
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, start_new_session=True)
    pumps = [threading.Thread(target=_pump, args=(job.stdout, sys.stdout, ending), daemon=True),
             threading.Thread(target=_pump, args=(job.stderr, sys.stderr, ending), daemon=True)]
    for pump in pumps:
        pump.start()
    try:
        ending.status = job.wait()
    except BaseException as stop:
        ending.stopping = True
        _stop(job, signal.SIGINT if isinstance(stop, KeyboardInterrupt) else signal.SIGTERM)
        raise
    finally:
        for pump in pumps:
            pump.join(timeout=STOP_SECONDS)
    return ending


def _stop(job: subprocess.Popen, signum: int) -> None:
    """Passes ``signum`` on to the job and waits for its end; passed on again (Hydra then
    stops the workers by force) and, last, SIGKILL, should it not come."""
    for sent in (signum, signum, signal.SIGKILL):
        try:
            job.send_signal(sent)
            job.wait(timeout=STOP_SECONDS)
            return
        except subprocess.TimeoutExpired:
            continue
        except BaseException:  # another signal while waiting: on to the next step
            continue


def _pump(source, target, ending: Ending) -> None:
    """Copies the job's lines to ``target`` as they come, but for the launcher's own report
    of an abnormal end (whose exit string it keeps); remembers a worker's failure line.
    A blank line is held until the next one shows it is not the report's first."""
    binary = getattr(target, "buffer", None)  # a text stream's bytes, where it has them
    held = b""
    for line in iter(source.readline, b""):
        if ending.stopping:
            continue
        bare = line.strip()
        if bare.startswith(EXIT_STRING):
            ending.launcher = bare[len(EXIT_STRING):].decode(errors="replace")
        if bare.startswith(LAUNCHER_LINES):
            held = b""
            continue
        if not bare:
            held += line
            continue
        if line.startswith(WORKER_LINE) and ending.worker_line is None:
            ending.worker_line = bare.decode(errors="replace")
        try:
            if binary is not None:
                binary.write(held + line)
                binary.flush()
            else:
                target.write((held + line).decode(errors="replace"))
                target.flush()
        except (OSError, ValueError):  # the reader went away; the job still runs out
            pass
        held = b""


# -- the command line ----------------------------------------------------------------------
def run_command(argv: list[str], count: int, threads: int | None = None) -> int:
    """``seraph ARGV`` over ``count`` workers of ``threads`` threads each; its exit status:
    the job's when it ended by itself (0, or 2 for an error every worker met, which the
    first one printed), else 1 after one line on what ended it."""
    ending = run_job(count, ["-m", "seraph", *argv], threads)
    if ending.status in (0, 2) and ending.worker_line is None:
        return ending.status
    if ending.worker_line is None:
        print(ending.failure(), file=sys.stderr, flush=True)
    return 1


# -- the API ---------------------------------------------------------------------------------
def call_in_job(function, args: tuple, kwargs: dict, count: int, threads: int | None = None):
    """``function(*args, **kwargs)`` over ``count`` workers of ``threads`` threads each; its
    result, or the error every worker met, or :class:`WorkerError` for a worker's
    failure."""
    with tempfile.TemporaryDirectory(prefix="seraph-job-") as folder:
        folder = Path(folder)
        args, kwargs = _shared_graph(args, kwargs, folder)
        with open(folder / "call.pickle", "wb") as f:
            pickle.dump((function, args, kwargs), f)
        ending = run_job(count, ["-m", "seraph.distributed.job", str(folder)], threads)
        for name in ("result", "error"):
            path = folder / f"{name}.pickle"
            if ending.status in (0, 2) and ending.worker_line is None and path.exists():
                with open(path, "rb") as f:
                    found = pickle.load(f)
                if name == "error":
                    raise found
                return found
        raise WorkerError(ending.failure().removeprefix("seraph: error: "))


def _shared_graph(args: tuple, kwargs: dict, folder: Path) -> tuple[tuple, dict]:
    """The call with its graph as a store path every worker can open: a path as it is
    (absolute), an opened store's path, or an in-memory graph written to a store in
    ``folder``."""
    from seraph.graph import Graph

    def shared(graph):
        if isinstance(graph, Graph):
            return str(graph.path) if graph.path is not None else \
                str(write_store(graph, folder / "graph.zarr"))
        if isinstance(graph, (str, os.PathLike)):
            return str(Path(graph).absolute())
        return graph  # the call refuses it, on every worker

    if "graph" in kwargs:
        return args, {**kwargs, "graph": shared(kwargs["graph"])}
    if args:
        return (shared(args[0]), *args[1:]), kwargs
    return args, kwargs


def write_store(graph, path: Path) -> Path:
    """An in-memory graph's arrays written as a store at ``path``."""
    from seraph.store import StoreWriter

    with StoreWriter(path, replace(graph.attrs, complete=False)) as writer:
        for name, data in graph._arrays.items():
            if name.endswith(("indices", "weights")):
                pe = graph.page_edges
                array = writer.create(name, len(data), data.dtype.str, pe)
                for page in range(graph.num_pages):
                    writer.write_chunk(array, name, page, data[page * pe:(page + 1) * pe])
            else:
                writer.write_array(name, data)
        return writer.commit()
