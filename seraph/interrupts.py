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

The handler itself must not raise where a kernel's wrapper calls back into Python
(numba.core.serialize._numba_unpickle, while it boxes the kernel's results): the wrapper
does not check that call for an error, and the caller would unpack a NULL. A signal that
came while the kernel ran is handled exactly there, so within :func:`stoppable` the
handlers hold it instead (:func:`holding_in_compiled_code`), and :func:`check` runs the
handler once the kernel has returned (the engine checks between rounds, and at the end).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import numpy as np

#: Nonzero (the signal's number) once SIGINT or SIGTERM came during a stoppable call.
STOP = np.zeros(1, dtype=np.int32)
#: The signals that stop a call.
STOPPING = (signal.SIGINT, signal.SIGTERM)

_depth = 0  # stoppable blocks entered in the main thread and not left
#: (handler, signal) of the signals held where a kernel's wrapper called back into Python.
_held: list[tuple[Callable, int]] = []


def stopping() -> bool:
    """Whether a signal has asked the current call to stop."""
    return bool(STOP[0])


def check() -> None:
    """If a signal asked the call to stop: runs the handler of a signal that was held (see
    the module docstring), and raises KeyboardInterrupt if it did not raise (a handler of
    the caller's own), since the compiled work returned early and its results are not the
    answer."""
    if _held:
        handler, signum = _held[0]
        _held.clear()
        handler(signum, sys._getframe(1))
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
    handlers = {signum: signal.getsignal(signum) for signum in STOPPING}
    for signum, handler in handlers.items():
        if callable(handler):
            signal.signal(signum, holding_in_compiled_code(handler))
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno())
    watcher = threading.Thread(target=_watch, args=(reader, previous), daemon=True,
                               name="seraph-interrupts")
    watcher.start()
    _depth += 1
    try:
        yield
        check()
    finally:
        _depth -= 1
        for signum, handler in handlers.items():
            if callable(handler):
                signal.signal(signum, handler)
        signal.set_wakeup_fd(previous)
        writer.shutdown(socket.SHUT_WR)  # the watcher reads what is left, then the end
        watcher.join()
        reader.close()
        writer.close()
        STOP[0] = 0
        _held.clear()


def holding_in_compiled_code(handler: Callable) -> Callable:
    """``handler``, but where a kernel's wrapper called back into Python (see the module
    docstring) the signal is held for :func:`check`."""
    def handle(signum: int, frame: FrameType | None) -> None:
        if called_from_compiled_code(frame):
            _held.append((handler, signum))
        else:
            handler(signum, frame)
    return handle


def called_from_compiled_code(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside numba's callback from a kernel's wrapper."""
    serialize = sys.modules.get("numba.core.serialize")
    if serialize is None:  # numba is not loaded: no kernel has run
        return False
    callback = getattr(serialize, "_numba_unpickle", None)
    while frame is not None and callback is not None:
        if frame.f_code is callback.__code__:
            return True
        frame = frame.f_back
    return False


def send_again(signum: int) -> None:
    """Sends ``signum`` to the main thread a moment from now (to the thread itself, so
    that a blocking call there is interrupted)."""
    threading.Timer(0.01, signal.pthread_kill,
                    (threading.main_thread().ident, signum)).start()


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
