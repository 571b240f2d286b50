"""What ``mpiexec`` runs for an API call that asked for workers from outside an MPI job
(:func:`seraph.distributed.launch.call_in_job`): ``python -m seraph.distributed.job FOLDER``.

Every worker loads the call from ``FOLDER/call.pickle`` and makes it, collectively; the
first one pickles the result into ``FOLDER/result.pickle``, or, where every worker met the
same error, that error into ``FOLDER/error.pickle`` (status 2). A failure of one worker
alone ends the job (``MPI_Abort``) after a line naming it.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

from seraph.distributed.engine import end_alone
from seraph.distributed.mpi import HostComm, world


def _write(folder: Path, name: str, found) -> None:
    """``found`` pickled as ``folder/name.pickle``, whole once it has that name."""
    part = folder / f".{name}.pickle.{os.getpid()}"
    with open(part, "wb") as f:
        pickle.dump(found, f)
    os.replace(part, folder / f"{name}.pickle")


def main(folder: Path) -> int:
    comm = HostComm(world())
    try:
        with open(folder / "call.pickle", "rb") as f:
            function, args, kwargs = pickle.load(f)
        result = function(*args, **kwargs)
    except BaseException as error:
        end_alone(error)
        # Met by every worker alike (an error of the call's own options or graph).
        if comm.rank == 0:
            _write(folder, "error", error)
        return 2
    if comm.rank == 0:
        _write(folder, "result", result)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
