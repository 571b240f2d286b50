"""Stopping compiled work when SIGINT or SIGTERM comes.

Python runs a signal handler only in the main thread, between bytecodes: a numba kernel
running a push phase or a union-find for a minute would hold the signal that long. So the
engine's long kernels take :data:`STOP`, a flag they read between rounds and every few
thousand vertices or edges within one, and return early once it is set; the handler then
raises as soon as they are back in Python. Kernels on a GPU read a host-mapped copy of it
(seraph.backends.cuda).

The flag is set from a thread of our own: within :func:`stoppable`, CPython's C-level
handler writes each signal's number to a socket (``signal.set_wakeup_fd``) as the signal
comes, whatever the main thread is doing, and the thread reading it sets the flag. It can
do that while a kernel runs because the long kernels release the GIL (``nogil=True``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Iterator

import numpy as np

#: Nonzero (the signal's number) once SIGINT or SIGTERM came during a stoppable call.
STOP = np.zeros(1, dtype=np.int32)
#: The signals that stop a call.
STOPPING = (signal.SIGINT, signal.SIGTERM)

_depth = 0  # stoppable blocks entered in the main thread and not left


def stopping() -> bool:
    """Whether a signal has asked the current call to stop."""
    return bool(STOP[0])


def check() -> None:
    """Raises KeyboardInterrupt if a signal asked the call to stop: for where a handler
    did not raise (one of the caller's own), since the compiled work returned early and
    its results are not the answer."""
    if STOP[0]:
        raise KeyboardInterrupt(f"stopped by signal {int(STOP[0])}")


@contextlib.contextmanager
def stoppable() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM set :data:`STOP` as they come (see the module
    docstring); at its end the flag is cleared, and KeyboardInterrupt raised if a signal
    came and no handler raised. Outside the main thread, and nested, it does nothing more."""
    global _depth
    if threading.current_thread() is not threading.main_thread() or _depth:
        yield
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno())
    watcher = threading.Thread(target=_watch, args=(reader, previous), daemon=True,
                               name="seraph-interrupts")
    watcher.start()
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        signal.set_wakeup_fd(previous)
        writer.shutdown(socket.SHUT_WR)  # the watcher reads what is left, then the end
        watcher.join()
        reader.close()
        writer.close()
        stopped, STOP[0] = int(STOP[0]), 0
    if stopped:
        raise KeyboardInterrupt(f"stopped by signal {stopped}")


def _watch(reader: socket.socket, previous: int) -> None:
    """Sets :data:`STOP` on each stopping signal's number read, and passes every number on
    to the wakeup fd that was there before (an event loop's, say)."""
    while data := reader.recv(64):
        for signum in data:
            if signum in STOPPING:
                STOP[0] = signum
        if previous >= 0:
            with contextlib.suppress(OSError):
                os.write(previous, data)
