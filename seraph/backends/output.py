"""The values as a public result holds them (:class:`seraph.spec.Output`), made in one
pass over every thread: the public call should cost what the engine costs, and a
single-threaded NumPy pass over a large graph's values (a comparison, then a ``putmask``
or an ``astype``) can take longer than the run it follows (docs/engine.md, "The public call")."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

#: Values per chunk of a parallel pass, at least, and the most chunks.
_CHUNK = 1 << 16
_MAX_CHUNKS = 1024


@njit(cache=True, parallel=True)
def _convert(dst, src, inf, unreached):
    """``dst[i] = unreached if src[i] == inf else src[i]``, on every thread (dst may be
    src). Into fresh pageable memory a copy is bound by first-touch page faults, which
    many threads take in parallel, where np.copyto takes them on one."""
    chunks = max(1, min(len(src) // _CHUNK, _MAX_CHUNKS))
    for c in prange(chunks):
        for i in range(len(src) * c // chunks, len(src) * (c + 1) // chunks):
            x = src[i]
            dst[i] = unreached if x == inf else x


def output_values(values: np.ndarray, inf, dtype: np.dtype | None, unreached,
                  fresh: bool) -> np.ndarray:
    """``values`` as ``dtype`` (None: their own) with ``unreached`` in place of ``inf``
    (None: inf kept): in place where the dtype stays and ``fresh`` is false (the caller
    owns ``values``), else in a new array."""
    dtype = values.dtype if dtype is None else np.dtype(dtype)
    if not fresh and dtype == values.dtype and unreached is None:
        return values
    out = values if not fresh and dtype == values.dtype else np.empty(len(values), dtype)
    _convert(out, values, values.dtype.type(inf),
             dtype.type(inf if unreached is None else unreached))
    return out
