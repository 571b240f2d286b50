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
The thread and its socket are made once a process. Every signal of a call is read before
the flag is cleared at its end: where a byte is still unread, or the thread is reading one,
the call waits for a byte of its own to come round through it; otherwise (no signal came,
as in nearly every call) it waits for nothing.

The handler itself must not raise where a kernel's wrapper calls back into Python
(numba.core.serialize._numba_unpickle, while it boxes the kernel's results): the wrapper
does not check that call for an error, and the caller would unpack a NULL. A signal that
came while the kernel ran is handled exactly there, so within :func:`stoppable` the
handlers hold it instead (:func:`holding_in_compiled_code`), and :func:`check` runs the
handler once the kernel has returned (the engine checks between rounds, and at the end).
"""

from __future__ import annotations

import _signal
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
#: What the watcher thread reads the signals' numbers from, and the socket they are written
#: to (made by the first stoppable call: :func:`_watcher`).
_wakeup: tuple[socket.socket, socket.socket] | None = None
#: The wakeup fd that was there before the current stoppable call (-1: none, or no call):
#: the watcher passes every number on to it.
_forward = -1
#: Set by the watcher once it has read :data:`_READ_UP`, written after the last signal of a
#: call could come.
_caught_up = threading.Event()
_READ_UP = 0  # no signal has the number 0
#: True while the watcher reads and handles what came (from before it takes the bytes).
_reading = False


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
    global _forward
    # _signal's functions, not signal's: those wrap every number in an enum, which costs a
    # small call more than the rest of this.
    handlers = {signum: _signal.getsignal(signum) for signum in STOPPING}
    for signum, handler in handlers.items():
        if callable(handler):
            _signal.signal(signum, holding_in_compiled_code(handler))
    writer = _watcher()
    _forward = signal.set_wakeup_fd(writer.fileno())
    _depth += 1
    try:
        yield
        check()
    finally:
        _depth -= 1
        for signum, handler in handlers.items():
            if callable(handler):
                _signal.signal(signum, handler)
        signal.set_wakeup_fd(_forward)
        # No signal reaches the socket from here on. Where a byte is unread, or the watcher
        # took some and is still handling them (looked at after the socket: it says so
        # before it takes them), it reads what is left of this call's, then the marker.
        if _unread(_wakeup[0]) or _reading:
            _caught_up.clear()
            writer.send(bytes([_READ_UP]))
            _caught_up.wait()
        _forward = -1
        STOP[0] = 0
        _held.clear()


def _watcher() -> socket.socket:
    """The socket the signals' numbers go to, its reading thread started on first use (a
    forked child, which has no such thread, starts its own)."""
    global _wakeup
    if _wakeup is None:
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        threading.Thread(target=_watch, args=(reader,), daemon=True,
                         name="seraph-interrupts").start()
        _wakeup = reader, writer
    return _wakeup[1]


def _unread(reader: socket.socket) -> bool:
    """Whether a byte waits in the watcher's socket (looked at, not taken)."""
    try:
        return bool(reader.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False


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


def _watch(reader: socket.socket) -> None:
    """Sets :data:`STOP` on each stopping signal's number read, passes every number on to
    the wakeup fd that was there before the call (an event loop's, say), and says when it
    has read a call's last (:data:`_READ_UP`). It says it is reading (:data:`_reading`)
    before it takes the bytes that came, and until it has handled them."""
    global _reading
    while reader.recv(1, socket.MSG_PEEK):  # wait for a byte, taking none
        _reading = True
        data = reader.recv(64)
        signals = bytes(b for b in data if b != _READ_UP)
        for signum in signals:
            if signum in STOPPING:
                STOP[0] = signum
        if signals and _forward >= 0:
            with contextlib.suppress(OSError):
                os.write(_forward, signals)
        _reading = False
        if len(signals) < len(data):
            _caught_up.set()


def _forget_watcher() -> None:
    global _wakeup, _reading
    _wakeup, _reading = None, False


os.register_at_fork(after_in_child=_forget_watcher)
