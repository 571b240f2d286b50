"""Kernels that run on every thread for large work and on the calling thread for small work.

A numba kernel with ``prange`` loops, or a compiled function that calls one, is declared
with :func:`kernel` and exists twice, each compiled on first use and cached on disk:

- ``.parallel``: as written (numba's ``parallel=True`` where the kernel asks for it);
- ``.serial``: its ``prange`` loops run as plain loops on the calling thread, and the
  kernels it calls are their serial twins. Within it the global :data:`PARALLEL` is False,
  so a branch only large work takes (``if PARALLEL and ...``) is not compiled at all.

Callers pick a twin by the work of the call (:meth:`Kernel.over`). Small work then never
wakes the thread pool, whose threads, on a busy machine, may each be descheduled for a
scheduler quantum; and a small graph compiles only serial twins, which compile in a
fraction of a parallel kernel's time: numba lowers each ``prange`` loop into a function of
its own. A first run on a small graph (``seraph demo``) is mostly compiling.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable

import numpy as np
from numba import njit, prange

#: Within a twin: True in ``.parallel``, False in ``.serial`` (a compile-time constant).
PARALLEL = True
#: A call touching fewer edges or vertices runs serially: waking the pool costs as much as
#: pushing about 10^5 edges on a busy machine (docs/engine.md, "Dense and sparse phases").
SERIAL_WORK = 1 << 16
#: On a graph of fewer edges every call runs serially: its largest pass (a round over every
#: edge, the setup of its summaries) is about a millisecond on one thread.
SERIAL_GRAPH = 1 << 20
#: A fill of fewer values runs serially: it writes at memory speed, so below this size
#: sharing it out saves less than one descheduled thread of the pool costs on a busy
#: machine (a scheduler quantum).
SERIAL_FILL = 1 << 23

_lock = threading.RLock()  # a twin makes the twins of the kernels it calls


def serial(work: int, graph_edges: int | None = None, below: int | None = None) -> bool:
    """Whether a call touching ``work`` edges or vertices, on a graph of ``graph_edges``
    edges (None: not known), runs on the calling thread: below ``below`` (a kernel's own
    limit; default SERIAL_WORK), or on a small graph."""
    return (work < (SERIAL_WORK if below is None else below)
            or (graph_edges is not None and graph_edges < SERIAL_GRAPH))


class Kernel:
    """A function compiled as a parallel and as a serial twin (module docstring)."""

    def __init__(self, py_func: Callable, parallel: bool, options: dict) -> None:
        self.py_func = py_func
        self._parallel = parallel
        self._options = options
        self._twins: dict[bool, Callable] = {}
        self.__doc__ = py_func.__doc__
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__module__ = py_func.__module__

    @property
    def parallel(self) -> Callable:
        """The kernel as written: its ``prange`` loops on every thread."""
        return self.twin(True)

    @property
    def serial(self) -> Callable:
        """The kernel on the calling thread."""
        return self.twin(False)

    def over(self, work: int, graph_edges: int | None = None,
             below: int | None = None) -> Callable:
        """The twin for a call touching ``work`` edges or vertices (:func:`serial`)."""
        return self.twin(not serial(work, graph_edges, below))

    def __call__(self, *args):
        """The parallel twin's call: the kernel as written."""
        return self.parallel(*args)

    def twin(self, parallel: bool) -> Callable:
        """``.parallel`` or ``.serial``."""
        twin = self._twins.get(parallel)
        if twin is None:
            with _lock:
                twin = self._twins.get(parallel)
                if twin is None:
                    twin = self._twins[parallel] = self._compiled(parallel)
        return twin

    def _compiled(self, parallel: bool) -> Callable:
        f = self.py_func
        # The twin's globals, taken once the module is loaded: the kernels it calls are
        # their twins of the same kind, and PARALLEL says which kind it is.
        scope = dict(f.__globals__)
        for name in f.__code__.co_names:
            if isinstance(scope.get(name), Kernel):
                scope[name] = scope[name].twin(parallel)
        scope["PARALLEL"] = parallel
        twin = types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__,
                                  f.__closure__)
        # numba files a kernel's cache by its qualified name: the twins need two.
        twin.__qualname__ = f.__qualname__ if parallel else f"{f.__qualname__}_serial"
        twin.__doc__, twin.__kwdefaults__ = f.__doc__, f.__kwdefaults__
        options = dict(self._options)
        if self._parallel and not parallel:
            # numba runs prange bodies with numpy's float semantics (x / 0 is inf, not an
            # exception): so do their plain loops in the serial twin.
            options.setdefault("error_model", "numpy")
        return njit(parallel=parallel and self._parallel, **options)(twin)


@njit(cache=True, inline="always")
def zeros(n, dtype):
    """``np.zeros(n, dtype)`` for a kernel's few counters, cleared on the calling thread:
    in a parallel kernel numba makes np.zeros a parallel region of its own, which wakes the
    pool (on a busy machine, a wait for a descheduled thread) to clear a few words."""
    a = np.empty(n, dtype=dtype)
    for i in range(n):
        a[i] = 0
    return a


def kernel(parallel: bool = False, **options) -> Callable[[Callable], Kernel]:
    """``@njit(parallel=parallel, **options)``, compiled as two twins (module docstring).
    A kernel that calls a twinned one is declared so too, with ``parallel`` False: its
    twins call the callee's twins of their own kind."""
    return lambda py_func: Kernel(py_func, parallel, options)


def fill(a, value) -> None:
    """``a[:] = value``: numpy's fill on the calling thread, on every thread past
    :data:`SERIAL_FILL` values."""
    if len(a) < SERIAL_FILL:
        a.fill(value)
    else:
        _fill.parallel(a, a.dtype.type(value))


@kernel(cache=True, parallel=True)
def _fill(a, value):
    chunks = max(1, min(len(a) >> 16, 1024))
    for c in prange(chunks):
        a[len(a) * c // chunks:len(a) * (c + 1) // chunks] = value


def fill_ids(a) -> None:
    """``a[:] = np.arange(len(a))``, without the temporary: on the calling thread, on
    every thread past :data:`SERIAL_FILL` values (as :func:`fill`)."""
    _fill_ids.twin(len(a) >= SERIAL_FILL)(a)


@kernel(cache=True, parallel=True)
def _fill_ids(a):
    chunks = max(1, min(len(a) >> 16, 1024))
    for c in prange(chunks):
        for i in range(len(a) * c // chunks, len(a) * (c + 1) // chunks):
            a[i] = i
