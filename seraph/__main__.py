"""The ``seraph`` command (and ``python -m seraph``): the CLI of :mod:`seraph.cli`.

A signal that comes while the CLI's modules load (a second or more) ends the command with
one line, as it does once the CLI runs, rather than a traceback. Once the CLI returns, the
command has said how it ended, and the exit status says the same: SIGINT and SIGTERM are
ignored while the interpreter shuts down (most of a second, after a preprocess), where
they would end the process by the signal instead. A command a signal ended exits at once,
its output flushed, without that shutdown: a Ctrl-C should not wait for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


class _Terminated(BaseException):
    """SIGTERM while the CLI loads."""


def _terminate(_signum, _frame) -> None:
    raise _Terminated


def main() -> int:
    # A signal the caller ignores (nohup, a background job) stays ignored. SIGINT raises
    # KeyboardInterrupt already.
    ours = signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    if ours:
        signal.signal(signal.SIGTERM, _terminate)
    try:
        from seraph.cli import main as cli
    except (KeyboardInterrupt, _Terminated) as e:
        what, code = ("terminated", 143) if isinstance(e, _Terminated) else ("interrupted", 130)
        print(f"seraph: {what}; no partial output was left behind", file=sys.stderr)
        return code
    finally:
        if ours:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        code = cli()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
    if code in (130, 143):  # the statuses of a run SIGINT and SIGTERM ended
        with contextlib.suppress(OSError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
