"""What ``mpiexec`` starts on Linux for each worker of a job that seraph launched
(:mod:`seraph.distributed.launch`): it runs the worker as its child and says how it ended.

A worker that a signal kills (SIGKILL: out of memory, or a user) cannot say so itself, and
the launcher kills the others the moment it sees one end, so none of them can either: its
guard, which the launcher sees alive until then, prints one line naming the worker and
the signal first, then ends itself by SIGKILL, which makes the launcher stop the whole
job. A worker that a signal stopped (status 130 or 143) is named the same way. One that
ends with an error of its own (status 1) has printed its line; its guard ends the job the
same way. Status 0 (done) and 2 (an error every worker met and reported alike) end the
guard normally.

The worker gets the launcher's connection (``PMI_FD``) and SIGINT and SIGTERM as they
come, and dies with its guard (``PR_SET_PDEATHSIG``), as the guard dies with the
launcher's proxy. This module imports nothing of seraph: it costs a bare interpreter.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys

#: prctl's option that sends the calling process a signal when its parent ends.
PR_SET_PDEATHSIG = 1
#: Set for the worker: it ends by exiting, and leaves ending the job to its guard.
GUARDED = "SERAPH_GUARDED"
#: The statuses of a worker that a signal stopped (seraph's own: 128 + the signal).
STOPPED = {130: "SIGINT", 143: "SIGTERM"}


def die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def main(argv: list[str]) -> int:
    die_with_parent()
    fd = os.environ.get("PMI_FD")
    child = subprocess.Popen([sys.executable, *argv], preexec_fn=die_with_parent,
                             env={**os.environ, GUARDED: "1"},
                             pass_fds=(int(fd),) if fd and fd.isdigit() else ())
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda s, _frame: child.send_signal(s))
    code = child.wait()
    how = None
    if code < 0:
        how = f"was killed by {signal.Signals(-code).name}" + \
            (" (out of memory, or killed)" if -code == signal.SIGKILL else "")
    elif code in STOPPED:
        how = f"was stopped by {STOPPED[code]}"
    if how:
        rank, size = os.environ.get("PMI_RANK", "?"), os.environ.get("PMI_SIZE", "?")
        print(f"seraph: error: worker {rank} of {size} (pid {child.pid} on "
              f"{socket.gethostname()}) {how}; the query was stopped on every worker",
              file=sys.stderr, flush=True)
    if code not in (0, 2):
        os.kill(os.getpid(), signal.SIGKILL)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
