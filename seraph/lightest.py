"""Each vertex's lightest in-edge, which tightens SSSP's strong rule.

SSSP's strong rule proves a vertex final when its distance is at most ``l``, the smallest
distance written in the last round. The IN criterion of Crauser, Mehlhorn, Meyer and
Sanders ("A parallelization of Dijkstra's shortest path algorithm", MFCS 1998) adds the
vertex's lightest in-edge: ``v`` is final when ``dist[v] <= l + w_in(v)`` (docs/engine.md
has the argument for rounds and push phases). On an R-MAT, where most vertices have few
in-edges and so a heavy lightest one, this proves most of the final vertices that the
plain rule leaves open, so fewer are pulled and bottom-up rounds start a round earlier.

The bound is kept in one byte a vertex, for the GPU's sake: ``codes[v] * unit`` (float32
arithmetic, as the kernels compute it) is at most ``w_in(v)``. Integer weights up to 255,
such as GAP's, are kept exactly (``unit`` 1); others in 255 steps of the largest. Any
lower bound keeps the rule exact, and float32 rounding is monotone, so the kernels'
``l + codes[v] * unit`` stays below every distance the proof needs it below.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from seraph.kernels import kernel


class LightestIn(NamedTuple):
    codes: np.ndarray  # uint8 per vertex: codes[v] * unit <= the weight of v's lightest in-edge
    unit: np.float32  # 0: no bound (no weights, or all of them 0)


#: What an algorithm without the rule passes to the kernels (``unit`` 0 turns it off).
NO_BOUND = LightestIn(np.zeros(1, dtype=np.uint8), np.float32(0))


def lightest_in(indptr: np.ndarray, weights: np.ndarray) -> LightestIn:
    """The bound for a CSC (``weights`` float32, one per in-edge)."""
    lightest = _lightest.over(len(weights), len(weights))(indptr, weights)
    finite = lightest[np.isfinite(lightest)]
    top = float(finite.max()) if len(finite) else 0.0
    if top <= 0:
        return LightestIn(np.zeros(len(lightest), dtype=np.uint8), np.float32(0))
    integral = top <= 255 and bool(np.all(finite == np.floor(finite)))
    unit = np.float32(1 if integral else top / 255)
    return LightestIn(_codes.over(len(lightest), len(weights))(lightest, unit), unit)


@njit(cache=True, inline="always")
def proven(value, threshold, codes, unit, v) -> bool:
    """The strong rule's test: ``value <= threshold``, plus ``v``'s lightest in-edge when
    ``unit`` is set. The sum is float32, as a distance is."""
    if unit > 0:
        return value <= threshold + np.float32(codes[v]) * unit
    return value <= threshold


@kernel(cache=True, parallel=True)
def _lightest(indptr, weights):
    n = len(indptr) - 1
    out = np.full(n, np.inf, dtype=np.float32)
    for v in prange(n):
        for i in range(indptr[v], indptr[v + 1]):
            if weights[i] < out[v]:
                out[v] = weights[i]
    return out


@kernel(cache=True, parallel=True)
def _codes(lightest, unit):
    codes = np.zeros(len(lightest), dtype=np.uint8)
    for v in prange(len(lightest)):
        w = lightest[v]
        if not np.isfinite(w):
            continue  # no in-edges: never pulled
        q = np.floor(w / unit)
        c = 255 if q >= 255 else int(q)
        # The quotient can round up: step down until the product is a lower bound.
        while c > 0 and np.float32(c) * unit > w:
            c -= 1
        codes[v] = c
    return codes
