"""Atomic array operations for ``@njit(parallel=True)`` code, built as numba intrinsics.

numba has no atomics of its own, so these emit LLVM ``atomicrmw`` and atomic loads
directly. Each takes a 1-d array, an integer index (no bounds check, no negative
wrap-around) and, where relevant, a value that is cast to the array's dtype.

- :func:`atomic_min` -- ``arr[idx] = min(arr[idx], val)``, returns the previous value.
  Integer arrays use LLVM's signed ``min``. Float arrays reinterpret the bits as a
  signed integer of the same width and use the same signed ``min``: for non-negative
  IEEE floats (``+0.0`` up to ``+inf``) the bit patterns are ordered exactly like the
  values, so the result is exact. Negative values, ``-0.0`` and NaN are NOT supported
  (``-0.0`` would count as smaller than everything). The engine's distances are sums of
  non-negative weights starting from ``+0.0``, which never produce any of these.
- :func:`atomic_load` -- reads ``arr[idx]`` atomically, so a read racing with an
  :func:`atomic_min` on another thread is well defined (a plain load would formally be
  a data race in LLVM's memory model). It compiles to an ordinary load on x86 and ARM.
- :func:`atomic_add` -- ``arr[idx] += val`` on an integer array, returns the previous
  value: on a one-cell counter, a ticket that no two threads draw alike.
- :func:`atomic_xchg` -- stores ``val`` and returns the previous value; on a uint8 flag
  array ``atomic_xchg(flags, v, 1) == 0`` is a test-and-set that exactly one thread wins.
- :func:`atomic_cas` -- compare-and-swap on an integer array: stores ``new`` only where
  ``arr[idx] == expected``, and returns the previous value either way (the swap happened
  exactly when it equals ``expected``).
- :func:`atomic_store` -- writes ``arr[idx]`` atomically, the counterpart of
  :func:`atomic_load` for a cell that other threads read meanwhile.
- :func:`fence` -- orders every read and write around it, for a barrier between threads
  that share plain arrays.

All operations use ``monotonic`` (relaxed) ordering: each is atomic on its own cell, and
the end of a ``prange`` loop orders everything for the code that follows; threads that
meet within one loop order their other writes with :func:`fence`.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_ORDERING = "monotonic"
_MIN_DTYPES = (types.int32, types.int64, types.float32, types.float64)
_INT_DTYPES = (types.int32, types.int64)


def _is_array(arr: types.Type, dtypes: tuple[types.Type, ...] | None = None) -> bool:
    return (isinstance(arr, types.Array) and arr.ndim == 1
            and (dtypes is None or arr.dtype in dtypes))


def _element_pointer(context, builder, aryty, ary, idxty, idx) -> ir.Value:
    array = context.make_array(aryty)(context, builder, value=ary)
    index = context.cast(builder, idx, idxty, types.intp)
    return cgutils.get_item_pointer(context, builder, aryty, array, [index])


def _as_integer(builder, dtype: types.Type, ptr: ir.Value, val: ir.Value | None = None):
    """Reinterpret a float element pointer (and value) as a same-width integer one."""
    if not isinstance(dtype, types.Float):
        return ptr, val
    int_type = ir.IntType(dtype.bitwidth)
    return (builder.bitcast(ptr, int_type.as_pointer()),
            None if val is None else builder.bitcast(val, int_type))


def _from_integer(builder, dtype: types.Type, bits: ir.Value) -> ir.Value:
    if not isinstance(dtype, types.Float):
        return bits
    return builder.bitcast(bits, ir.FloatType() if dtype.bitwidth == 32 else ir.DoubleType())


def _rmw_codegen(op: str):
    def codegen(context, builder, sig, args):
        aryty, idxty, valty = sig.args
        dtype = aryty.dtype
        ptr = _element_pointer(context, builder, aryty, args[0], idxty, args[1])
        val = context.cast(builder, args[2], valty, dtype)
        ptr, val = _as_integer(builder, dtype, ptr, val)
        old = builder.atomic_rmw(op, ptr, val, _ORDERING)
        return _from_integer(builder, dtype, old)

    return codegen


@intrinsic
def atomic_min(typingctx, arr, idx, val):
    """``old = arr[idx]; arr[idx] = min(old, val); return old``, atomically.

    Supports int32, int64, float32 and float64 arrays; floats must be non-negative
    (see the module docstring)."""
    if not (_is_array(arr, _MIN_DTYPES) and isinstance(idx, types.Integer)
            and isinstance(val, types.Number)):
        return None
    return arr.dtype(arr, idx, val), _rmw_codegen("min")


@intrinsic
def atomic_add(typingctx, arr, idx, val):
    """``old = arr[idx]; arr[idx] = old + val; return old``, atomically, on an int32 or
    int64 array."""
    if not (_is_array(arr, _INT_DTYPES) and isinstance(idx, types.Integer)
            and isinstance(val, types.Integer)):
        return None
    return arr.dtype(arr, idx, val), _rmw_codegen("add")


@intrinsic
def atomic_xchg(typingctx, arr, idx, val):
    """``old = arr[idx]; arr[idx] = val; return old``, atomically, on an integer array."""
    if not (_is_array(arr) and isinstance(arr.dtype, types.Integer)
            and isinstance(idx, types.Integer) and isinstance(val, types.Integer)):
        return None
    return arr.dtype(arr, idx, val), _rmw_codegen("xchg")


@intrinsic
def atomic_cas(typingctx, arr, idx, expected, new):
    """``old = arr[idx]; if old == expected: arr[idx] = new; return old``, atomically, on an
    int32 or int64 array."""
    if not (_is_array(arr, _INT_DTYPES) and isinstance(idx, types.Integer)
            and isinstance(expected, types.Integer) and isinstance(new, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty, expty, newty = sig.args
        dtype = aryty.dtype
        ptr = _element_pointer(context, builder, aryty, args[0], idxty, args[1])
        cmp = context.cast(builder, args[2], expty, dtype)
        val = context.cast(builder, args[3], newty, dtype)
        pair = builder.cmpxchg(ptr, cmp, val, _ORDERING, _ORDERING)
        return builder.extract_value(pair, 0)

    return arr.dtype(arr, idx, expected, new), codegen


@intrinsic
def atomic_store(typingctx, arr, idx, val):
    """``arr[idx] = val``, written atomically (never torn, never a formal data race), on an
    int32 or int64 array."""
    if not (_is_array(arr, _INT_DTYPES) and isinstance(idx, types.Integer)
            and isinstance(val, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty, valty = sig.args
        dtype = aryty.dtype
        ptr = _element_pointer(context, builder, aryty, args[0], idxty, args[1])
        builder.store_atomic(context.cast(builder, args[2], valty, dtype), ptr, _ORDERING,
                             dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.none(arr, idx, val), codegen


@intrinsic
def atomic_load(typingctx, arr, idx):
    """``arr[idx]``, read atomically (never torn, never a formal data race)."""
    if not (_is_array(arr, _MIN_DTYPES) and isinstance(idx, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty = sig.args
        dtype = aryty.dtype
        ptr = _element_pointer(context, builder, aryty, args[0], idxty, args[1])
        ptr, _ = _as_integer(builder, dtype, ptr)
        bits = builder.load_atomic(ptr, _ORDERING, dtype.bitwidth // 8)
        return _from_integer(builder, dtype, bits)

    return arr.dtype(arr, idx), codegen


@intrinsic
def fence(typingctx):
    """A sequentially consistent fence: what a thread wrote before its fence is seen by a
    thread that read, before its own fence, a cell the first wrote after its fence."""
    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.none(), codegen
