"""The values as a public result holds them (:class:`seraph.spec.Output`), made in one
pass over every thread: the public call should cost what the engine costs, and a
single-threaded NumPy pass over a large graph's values (a comparison, then a ``putmask``
or an ``astype``) can take longer than the run it follows (docs/engine.md, "The public call")."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from seraph.kernels import kernel
from seraph.spec import Output

#: Values per chunk of a parallel pass, at least, and the most chunks.
_CHUNK = 1 << 16
_MAX_CHUNKS = 1024


@njit(cache=True, inline="always")
def _chunks(n):
    return max(1, min(n // _CHUNK, _MAX_CHUNKS))


@kernel(cache=True, parallel=True)
def _convert(dst, src, inf, unreached):
    """``dst[i] = unreached if src[i] == inf else src[i]``, on every thread (dst may be
    src). Into fresh pageable memory a copy is bound by first-touch page faults, which
    many threads take in parallel, where np.copyto takes them on one."""
    chunks = _chunks(len(src))
    for c in prange(chunks):
        for i in range(len(src) * c // chunks, len(src) * (c + 1) // chunks):
            x = src[i]
            dst[i] = unreached if x == inf else x


@kernel(cache=True, parallel=True)
def _decode(dst, src, inf, unreached, base):
    """As :func:`_convert`, with ``base - src[i]`` for the reached: ``dst`` holds the bits
    of the public values of codes (``Output.code_base``)."""
    chunks = _chunks(len(src))
    for c in prange(chunks):
        for i in range(len(src) * c // chunks, len(src) * (c + 1) // chunks):
            x = src[i]
            dst[i] = unreached if x == inf else base - x


def output_values(values: np.ndarray, inf, output: Output, fresh: bool) -> np.ndarray:
    """``values`` as ``output`` says: its dtype (None: their own), ``output.unreached`` in
    place of ``inf`` (None: inf kept), decoded where they are codes: in place where the
    dtype's width stays and ``fresh`` is false (the caller owns ``values``), else in a new
    array."""
    dtype = values.dtype if output.dtype is None else np.dtype(output.dtype)
    if output.code_base is not None:
        out = values if not fresh else np.empty(len(values), values.dtype)
        bits = np.array(output.unreached, dtype).view(values.dtype)[()]
        _decode.over(len(values))(out, values, values.dtype.type(inf), bits,
                                  values.dtype.type(output.code_base))
        return out.view(dtype)
    if not fresh and dtype == values.dtype and output.unreached is None:
        return values
    out = values if not fresh and dtype == values.dtype else np.empty(len(values), dtype)
    unreached = inf if output.unreached is None else output.unreached
    _convert.over(len(values))(out, values, values.dtype.type(inf), dtype.type(unreached))
    return out
