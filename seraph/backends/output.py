"""The values as a public result holds them (:class:`seraph.spec.Output`), made in one
pass over every thread: the public call should cost what the engine costs, and a
single-threaded NumPy pass over a large graph's values (a comparison, then a ``putmask``
or an ``astype``) can take longer than the run it follows (docs/engine.md, "The public call").
A run that touched few vertices is read back from those alone: the rest are unreached, and
one fill writes them (:func:`seraph.kernels.fill`)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from seraph.kernels import fill, kernel
from seraph.spec import Output

#: Values per chunk of a parallel pass, at least, and the most chunks.
_CHUNK = 1 << 16
_MAX_CHUNKS = 1024
#: A readback from the touched vertices pays while they are at most one in this many of
#: all: each costs a random read and write, where a pass over all reads and writes in order.
SPARSE_SHARE = 8


@njit(cache=True, inline="always")
def _chunks(n):
    return max(1, min(n // _CHUNK, _MAX_CHUNKS))


@kernel(cache=True, parallel=True)
def _convert(dst, src, inf, unreached, clear):
    """``dst[i] = unreached if src[i] == inf else src[i]``, on every thread (dst may be
    src), and ``src[i] = inf`` where ``clear``. Into fresh pageable memory a copy is bound
    by first-touch page faults, which many threads take in parallel, where np.copyto takes
    them on one."""
    chunks = _chunks(len(src))
    for c in prange(chunks):
        for i in range(len(src) * c // chunks, len(src) * (c + 1) // chunks):
            x = src[i]
            dst[i] = unreached if x == inf else x
            if clear:
                src[i] = inf


@kernel(cache=True, parallel=True)
def _decode(dst, src, inf, unreached, base, clear):
    """As :func:`_convert`, with ``base - src[i]`` for the reached: ``dst`` holds the bits
    of the public values of codes (``Output.code_base``)."""
    chunks = _chunks(len(src))
    for c in prange(chunks):
        for i in range(len(src) * c // chunks, len(src) * (c + 1) // chunks):
            x = src[i]
            dst[i] = unreached if x == inf else base - x
            if clear:
                src[i] = inf


def output_values(values: np.ndarray, inf, output: Output, fresh: bool,
                  touched: np.ndarray | None = None, clear: bool = False) -> np.ndarray:
    """``values`` as ``output`` says: its dtype (None: their own), ``output.unreached`` in
    place of ``inf`` (None: inf kept), decoded where they are codes: in place where the
    dtype's width stays and ``fresh`` is false (the caller owns ``values``), else in a new
    array, and with ``clear`` (and ``fresh``) ``values`` set back to ``inf`` in the same
    pass. ``touched`` (None: unknown) holds every vertex whose value may not be ``inf``
    (for a run that touched few, :data:`SPARSE_SHARE`): a new array is then filled with the
    unreached value, and only they are converted into it."""
    dtype = values.dtype if output.dtype is None else np.dtype(output.dtype)
    if touched is not None:
        return _from_touched(values, inf, output, dtype, touched)
    clear = clear and fresh
    if output.code_base is not None:
        out = values if not fresh else np.empty(len(values), values.dtype)
        bits = np.array(output.unreached, dtype).view(values.dtype)[()]
        _decode.over(len(values))(out, values, values.dtype.type(inf), bits,
                                  values.dtype.type(output.code_base), clear)
        return out.view(dtype)
    if not fresh and dtype == values.dtype and output.unreached is None:
        return values
    out = values if not fresh and dtype == values.dtype else np.empty(len(values), dtype)
    unreached = inf if output.unreached is None else output.unreached
    _convert.over(len(values))(out, values, values.dtype.type(inf), dtype.type(unreached),
                               clear)
    return out


def _from_touched(values: np.ndarray, inf, output: Output, dtype: np.dtype,
                  touched: np.ndarray) -> np.ndarray:
    """:func:`output_values` into a new array, where only ``touched`` may differ from
    ``inf``."""
    # Codes are decoded into the bits of the public values, in the codes' own dtype.
    decode = output.code_base is not None
    stored = values.dtype if decode else dtype
    unreached = inf if output.unreached is None else output.unreached
    unreached = np.array(unreached, dtype).view(stored)[()]
    out = np.empty(len(values), stored)
    fill(out, unreached)
    _convert_touched(out, values, touched, values.dtype.type(inf), unreached,
                     values.dtype.type(output.code_base if decode else 0), decode)
    return out.view(dtype)


@njit(cache=True)
def _convert_touched(out, values, touched, inf, unreached, base, decode):
    """``out[v]`` of each touched ``v``: ``unreached`` where ``values[v]`` is ``inf``, else
    the value (``base`` minus it where ``decode``)."""
    for v in touched:
        x = values[v]
        out[v] = unreached if x == inf else (base - x if decode else x)
