"""Deterministic random edge weights, and the counter-based hash RNG that generators share.

Every random draw in the partitioner is a pure function of (seed, purpose, counter): a
splitmix64 finaliser applied to a seed-derived key plus the counter. Results therefore do not
depend on chunk sizes, thread counts or iteration order, and an edge stream can be replayed.
"""

from __future__ import annotations

import math
import re

import numpy as np
from numba import njit, prange

from seraph.errors import InputError
from seraph.kernels import kernel

#: The weight range of the GAP benchmark suite (integers 1..255), used by ``--weighted``.
GAP_WEIGHTS = (1.0, 255.0)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # splitmix64's counter increment
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_TWO_M53 = 2.0 ** -53

# Purposes (streams) of random draws: a distinct key per purpose keeps, say, the weights of
# a generated graph independent of the draws that placed its edges.
WEIGHT_STREAM = 1


@njit(cache=True, inline="always")
def mix64(z: np.uint64) -> np.uint64:
    """The splitmix64 finaliser: a bijection of 64-bit words with full avalanche."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def draw(key: np.uint64, counter: np.uint64) -> np.uint64:
    """Draw number ``counter`` of the stream ``key``: 64 random bits."""
    return mix64(key + counter * _GOLDEN)


@njit(cache=True, inline="always")
def unit(bits: np.uint64) -> float:
    """The top 53 bits of a draw as a float64 uniform in [0, 1)."""
    return float(bits >> _S11) * _TWO_M53


def stream_key(seed: int, stream: int) -> np.uint64:
    """The key of one purpose's stream of draws under ``seed``."""
    return np.uint64(draw(np.uint64(seed), np.uint64(stream)))


def check_seed(seed: int) -> int:
    """``seed`` as a Python int, or InputError."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 2**64:
        raise InputError(f"seed must be an integer in [0, 2^64), got {seed!r}")
    return int(seed)


def check_weight_range(lo: float, hi: float) -> tuple[float, float]:
    """``(lo, hi)`` as floats if they make a valid weight range, or InputError."""
    try:
        lo, hi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise InputError(f"weight range must be two numbers, got {lo!r}, {hi!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo < 0 or lo > hi:
        raise InputError(f"invalid weight range {lo:g}..{hi:g}: need finite 0 <= LO <= HI")
    return lo, hi


def _float32_bounds(lo: float, hi: float, integral: bool) -> tuple[np.float32, np.float32]:
    """The smallest and largest float32 a weight may take, so that rounding the float64
    draw to float32 can never leave [lo, hi] (integers) or [lo, hi) (reals)."""
    lo32, hi32 = np.float32(lo), np.float32(hi)
    # Compare as float64: numpy would compare a float32 with a Python float in float32.
    if float(lo32) < lo:
        lo32 = np.nextafter(lo32, np.float32(np.inf))
    if integral:
        return lo32, hi32
    if float(hi32) >= hi:
        hi32 = np.nextafter(hi32, np.float32(-np.inf))
    return lo32, max(lo32, hi32)  # lo == hi: the empty range [lo, lo) degenerates to lo


def hash_weights(src: np.ndarray, dst: np.ndarray, lo: float, hi: float,
                 seed: int) -> np.ndarray:
    """A float32 weight for every edge ``src[i] -> dst[i]``, drawn in [lo, hi] by hashing
    ``(min(u, v), max(u, v), seed)``: both directions of an undirected edge, and every
    duplicate of it, get the same weight.

    If lo and hi are both integers the weights are integers uniform in [lo, hi] (the GAP
    convention, e.g. 1..255); otherwise they are reals uniform in [lo, hi).
    """
    lo, hi = check_weight_range(lo, hi)
    src, dst = np.asarray(src), np.asarray(dst)
    if src.shape != dst.shape or src.ndim != 1:
        raise InputError(f"src and dst must be 1-D arrays of one length, got shapes "
                         f"{src.shape} and {dst.shape}")
    if not (np.issubdtype(src.dtype, np.integer) and np.issubdtype(dst.dtype, np.integer)):
        raise InputError(f"vertex ids must be integers, got {src.dtype} and {dst.dtype}")
    integral = lo.is_integer() and hi.is_integer()
    # Integers: floor(u * (hi - lo + 1)) picks one of the hi - lo + 1 values.
    span = hi - lo + 1.0 if integral else hi - lo
    lo32, hi32 = _float32_bounds(lo, hi, integral)
    out = np.empty(len(src), dtype=np.float32)
    _hash_weights.over(len(src), len(src))(src, dst, stream_key(check_seed(seed), WEIGHT_STREAM),
                                           lo, span, integral, lo32, hi32, out)
    return out


@kernel(cache=True, parallel=True)
def _hash_weights(src, dst, key, lo, span, integral, lo32, hi32, out):
    for i in prange(len(src)):
        u, v = np.uint64(src[i]), np.uint64(dst[i])
        a, b = min(u, v), max(u, v)
        x = unit(mix64(mix64(key ^ a) ^ b)) * span
        w = np.float32(lo + (math.floor(x) if integral else x))
        out[i] = min(max(w, lo32), hi32)


_RANDOM_SPEC = re.compile(r"random:([^,]+),([^,]+)")


def parse_weight_spec(spec: str) -> tuple[float, float] | None:
    """Parses a ``--weights`` value that asks for no or random weights: ``none`` -> None,
    ``random:LO,HI`` -> (LO, HI). ``file`` and ``auto`` are the readers' business."""
    text = spec.strip().lower()
    if text == "none":
        return None
    m = _RANDOM_SPEC.fullmatch(text)
    if m is not None:
        try:
            return check_weight_range(float(m[1]), float(m[2]))
        except ValueError:  # not numbers, or not a valid range (InputError)
            pass
    raise InputError(f"invalid weight spec {spec!r}: expected 'none' or 'random:LO,HI' "
                     "with finite 0 <= LO <= HI (e.g. random:1,255)")
