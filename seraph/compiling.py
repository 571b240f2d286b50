"""How long numba spends compiling kernels, so runs can leave it out of their times and the
CLI can say why a first run is slow.

numba compiles a kernel on its first call with new argument types (once per install: the
result is cached on disk, see :mod:`seraph.numba_cache`). It announces every compile as a
``numba:compile`` event; one listener, registered on first use, adds up the time of the
outermost ones (a compile triggers nested compiles of the kernels it calls), counting as
compiling the time spent waiting for another process to compile a kernel
(:data:`~seraph.numba_cache.WAITING`). numba compiles under one global lock, so the
outermost events never overlap. On a terminal the CLI also has it say, every few seconds
while kernels compile, how many have compiled so far.

A first run can have a second process compile ahead (:func:`compiled_beside`): where a
core is idle (:func:`a_core_is_idle`), the kernels of work the run comes to later compile
there while the run compiles its own, and the run loads them from the shared cache. On a
busy machine the second process would only take the run's share of the cores.

While numba holds that lock, llvmlite calls back into Python to hand LLVM the machine code
of cached kernels (and to take that of new ones). A signal handler raising there is dropped
with the callback's answer: LLVM is left without the kernel's code, and the kernel's first
call jumps to nothing (a segfault). So a run holds SIGINT and SIGTERM while the lock is
held (:func:`interrupts_held_while_compiling`) and takes them once it is released.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from numba.core import event

from seraph.numba_cache import PACKAGES, WAITING, fcntl
from seraph.temporaries import signals_deferred

#: Compiling for longer than this (in total) gets the one-time note ...
NOTE_AFTER = 1.0
NOTE = "compiling kernels (once per install)..."
#: ... and then, where the CLI asks for it, a line this often while kernels compile.
TICK_EVERY = 4.0


def _ours(ev: event.Event) -> bool:
    """Whether the compiled function is one of our kernels (not one of numba's helpers)."""
    module = getattr(ev.data["dispatcher"].py_func, "__module__", None) or ""
    return module.split(".")[0] in PACKAGES


class _Watch(event.Listener):
    """Adds up outermost compile time and counts our kernels compiled; calls ``announce``
    once compiling passes NOTE_AFTER, then every ``every`` seconds while it goes on."""

    def __init__(self) -> None:
        self.total = 0.0
        self.depth = 0
        self.started = 0.0
        self.kernels = 0
        self.announce: Callable[[str], None] | None = None
        self.every: float | None = None
        self.announced = False
        self.timer: threading.Timer | None = None
        self.lock = threading.Lock()
        self.told = 0  # kernels compiled at the last tick
        self.first = 0.0  # when compiling first passed NOTE_AFTER

    def on_start(self, ev: event.Event) -> None:
        self.depth += 1
        if self.depth > 1:
            return
        self.started = time.perf_counter()
        if self.announce is not None and not self.announced:
            # Fires during a long compile; a run of short ones is caught in on_end.
            self.timer = threading.Timer(max(0.0, NOTE_AFTER - self.total), self._note)
            self.timer.daemon = True
            self.timer.start()

    def on_end(self, ev: event.Event) -> None:
        self.kernels += ev.kind == "numba:compile" and _ours(ev)
        self.depth -= 1
        if self.depth > 0:
            return
        self.total += time.perf_counter() - self.started
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.total > NOTE_AFTER:
            self._note()

    def _note(self) -> None:
        with self.lock:
            if self.announce is None or self.announced:
                return
            self.announced = True
        self.first = time.perf_counter()
        self.announce(NOTE)
        if self.every is not None:
            threading.Thread(target=self._ticking, args=(self.every,), daemon=True).start()

    def _ticking(self, every: float) -> None:
        while True:
            time.sleep(every)
            self.tick(time.perf_counter())

    def tick(self, now: float) -> None:
        """Says how many kernels have compiled, if any compiled since the last tick or one
        is compiling now."""
        kernels = self.kernels
        if self.announce is None or (self.depth == 0 and kernels == self.told):
            return
        self.told = kernels
        self.announce(f"compiled {kernels} kernels so far ({now - self.first:.0f} s)")


_watch: _Watch | None = None


def _watcher() -> _Watch:
    global _watch
    if _watch is None:
        _watch = _Watch()
        event.register("numba:compile", _watch)
        event.register(WAITING, _watch)
    return _watch


def compile_seconds() -> float:
    """Seconds this process has spent compiling kernels since the first call here."""
    return _watcher().total


def announce_compiling(say: Callable[[str], None], every: float | None = None) -> None:
    """Calls ``say(NOTE)`` once, as soon as compiling has taken more than NOTE_AFTER; then,
    with ``every``, says the count of kernels compiled so far every ``every`` seconds while
    kernels compile (so that a first run is never long silent on a terminal)."""
    watch = _watcher()
    watch.announce, watch.every = say, every


class _HoldInterrupts(event.Listener):
    """Holds SIGINT and SIGTERM from the main thread's outermost acquiring of numba's
    compiler lock to its release (the lock is re-entrant: its events nest)."""

    def __init__(self) -> None:
        self.depth = 0
        self.held = contextlib.ExitStack()

    def on_start(self, ev: event.Event) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread handles signals
        self.depth += 1
        if self.depth == 1:
            self.held.enter_context(signals_deferred())

    def on_end(self, ev: event.Event) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self.depth -= 1
        if self.depth == 0:
            self.held.close()  # a signal that came meanwhile is raised here, lock released


@contextlib.contextmanager
def interrupts_held_while_compiling() -> Iterator[None]:
    """Within the block, a Ctrl-C or SIGTERM that comes while numba compiles or loads a
    kernel is taken once it is done, where it can unwind (see the module docstring)."""
    with event.install_listener("numba:compiler_lock", _HoldInterrupts()):
        yield


#: What the process beside runs: a signal ends it at once (its cache writes replace files
#: whole, and its locks go with it), as does its parent's end where the system can say so
#: (Linux's PR_SET_PDEATHSIG).
_BESIDE = """
import signal, sys
for signum in (signal.SIGINT, signal.SIGTERM):
    signal.signal(signum, signal.SIG_DFL)
try:
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)
except (AttributeError, OSError):
    pass
import importlib
module, name, *args = sys.argv[1:]
getattr(importlib.import_module(module), name)(*args)
"""


def a_core_is_idle() -> bool:
    """Whether a process beside would have a core to itself: there are two cores or more,
    and the load average over the last minute, this process's own share included, is
    below the cores less a half."""
    cores = os.cpu_count() or 1
    try:
        return cores >= 2 and os.getloadavg()[0] < cores - 0.5
    except (AttributeError, OSError):  # no load average here
        return False


@contextlib.contextmanager
def compiled_beside(module: str, function: str, *args: str) -> Iterator[None]:
    """Runs ``module.function(*args)`` (strings) in a second Python process while the block
    runs, to compile ahead: given work the block comes to later, it compiles that work's
    kernels into the shared cache meanwhile, and the block loads them (one still compiling
    there, the block waits for: seraph.numba_cache). Its output is dropped; a signal ends
    it at once, and so does the block's end, whatever it had left (the block compiled that
    itself). Where processes cannot lock the cache (no fcntl), nothing runs beside."""
    if fcntl is None:
        yield
        return
    root = str(Path(__file__).resolve().parent.parent)  # this copy of the package, first
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])]))
    process = subprocess.Popen([sys.executable, "-c", _BESIDE, module, function, *args],
                               cwd=root, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        process.kill()
        process.wait()
