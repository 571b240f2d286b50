"""Synthetic graphs as edge streams: Graph500 R-MAT (Kronecker), uniform G(n, m) and 2-D grids.

Each generator returns an :class:`EdgeSource` whose edges are a pure function of the
arguments: edge number ``e`` is computed from counter-based hashes of ``(seed, e)``
(see :mod:`partitioner.weights`), so the stream is identical on every ``chunks()`` call and
for any chunk size or thread count. Duplicates and self-loops are left in; the writer
removes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from numbers import Real

import numpy as np
from numba import njit, prange

from partitioner.edges import DEFAULT_CHUNK_EDGES, EdgeChunk, EdgeSource
from partitioner.weights import (
    GAP_WEIGHTS,
    check_seed,
    check_weight_range,
    draw,
    hash_weights,
    stream_key,
)
from partitioner.writer import MAX_VERTICES
from seraph.errors import InputError
from seraph.kernels import kernel

#: Largest scale: a store holds fewer than 2^31 vertices (csc/indices is int32).
MAX_SCALE = 30

# Streams of random draws (WEIGHT_STREAM = 1 is taken by the weights).
_EDGE_STREAM = 2
_RELABEL_STREAM = 3
_REMOVE_STREAM = 4

# R-MAT draws 16 bits per level, four levels per 64-bit draw: quadrant probabilities are
# then exact to 2^-16, far below the sampling noise of any graph that fits a store.
_LEVEL_BITS = 16
_LEVELS_PER_DRAW = 64 // _LEVEL_BITS
_RELABEL_ROUNDS = 3
_BLOCK = 1024  # edges per vectorised block: its work arrays stay in L1 cache

_NIBBLE = np.uint32(0x40201008)  # 2^30 + 2^21 + 2^12 + 2^3: see _append_levels
_U4, _U15, _U27 = np.uint32(4), np.uint32(15), np.uint32(27)
_HALF_WORD = np.uint64(32)


def gap_weights() -> tuple[float, float]:
    """The weight range of ``--weighted``: integers 1..255, as in the GAP benchmark suite."""
    return GAP_WEIGHTS


# --------------------------------------------------------------------------------------
# Public generators
# --------------------------------------------------------------------------------------
def rmat(scale: int, edge_factor: int = 16, seed: int = 0,
         weights: tuple[float, float] | None = None, a: float = 0.57, b: float = 0.19,
         c: float = 0.19, chunk_edges: int = DEFAULT_CHUNK_EDGES) -> EdgeSource:
    """The Graph500 Kronecker (R-MAT) graph: ``2^scale`` vertices, ``edge_factor * 2^scale``
    directed edges, each placed by choosing a quadrant of the adjacency matrix per bit
    level with probabilities a, b, c and d = 1 - a - b - c.

    Each level draws 16 random bits, so the probabilities act as multiples of 2^-16. Vertex
    ids are then relabelled by a seed-determined bijection so that the high-degree
    vertices, which R-MAT puts at ids with few one bits, are spread over the id range.
    """
    n, m = _scale_size(scale, edge_factor)
    seed = check_seed(seed)
    thresholds = _quadrant_thresholds(a, b, c)
    key = stream_key(seed, _EDGE_STREAM)
    relabel = _Relabel(scale, seed)

    def make(start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        src, dst = np.empty(count, np.int64), np.empty(count, np.int64)
        _rmat_edges.over(count, m)(start, scale, key, thresholds, relabel.mult, relabel.add,
                                   relabel.mask, relabel.shift, src, dst)
        return src, dst

    provenance = {"generator": "rmat", "scale": scale, "edge_factor": edge_factor,
                  "seed": seed, "a": a, "b": b, "c": c}
    return _source(make, m, chunk_edges, n, False, m, weights, seed, provenance)


def uniform(scale: int, edge_factor: int = 16, seed: int = 0,
            weights: tuple[float, float] | None = None,
            chunk_edges: int = DEFAULT_CHUNK_EDGES) -> EdgeSource:
    """An Erdős–Rényi G(n, m) style graph: ``n = 2^scale`` vertices and
    ``m = edge_factor * n`` directed edges with both ends uniform in [0, n)."""
    n, m = _scale_size(scale, edge_factor)
    seed = check_seed(seed)
    key = stream_key(seed, _EDGE_STREAM)

    def make(start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        src, dst = np.empty(count, np.int64), np.empty(count, np.int64)
        _uniform_edges.over(count, m)(start, key, np.uint64(n - 1), src, dst)
        return src, dst

    provenance = {"generator": "uniform", "scale": scale, "edge_factor": edge_factor,
                  "seed": seed}
    return _source(make, m, chunk_edges, n, False, m, weights, seed, provenance)


def grid(rows: int, cols: int, remove_fraction: float = 0.0, seed: int = 0,
         weights: tuple[float, float] | None = None,
         chunk_edges: int = DEFAULT_CHUNK_EDGES) -> EdgeSource:
    """A ``rows x cols`` lattice (vertex ``r * cols + c``) whose undirected edges join right
    and lower neighbours, emitted in both directions. Each undirected edge is dropped, both
    directions together, with probability ``remove_fraction``: a road-like graph of high
    diameter.

    Edges are numbered by slot ``2 * u`` (right of u) and ``2 * u + 1`` (below u); slots on
    the border or removed yield nothing, so chunks hold at most ``chunk_edges`` edges.
    """
    rows = _int_arg("rows", rows, 1)
    cols = _int_arg("cols", cols, 1)
    n = rows * cols
    if n > MAX_VERTICES:
        raise InputError(f"a {rows} x {cols} grid has {n} vertices: more than the "
                         f"{MAX_VERTICES} a store can hold")
    if not (_is_real(remove_fraction) and 0.0 <= remove_fraction < 1.0):
        raise InputError(f"remove_fraction must be in [0, 1), got {remove_fraction!r}")
    seed = check_seed(seed)
    key = stream_key(seed, _REMOVE_STREAM)
    # An edge is removed when the top 53 bits of its draw fall below this.
    cut = np.uint64(round(remove_fraction * 2.0**53))
    slots = 2 * n

    def make(start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        kept = np.empty(count, np.bool_)
        _grid_keep(start, rows, cols, key, cut, kept)
        u = np.flatnonzero(kept)
        src, dst = np.empty(2 * len(u), np.int64), np.empty(2 * len(u), np.int64)
        _grid_edges(start, u, cols, src, dst)
        return src, dst

    num_edges = 2 * _grid_count(slots, rows, cols, key, cut)
    provenance = {"generator": "grid", "rows": rows, "cols": cols,
                  "remove_fraction": remove_fraction, "seed": seed}
    return _source(make, slots, max(1, chunk_edges // 2), n, True, num_edges, weights, seed,
                   provenance)


GENERATORS: dict[str, Callable[..., EdgeSource]] = {"rmat": rmat, "uniform": uniform,
                                                    "grid": grid}


# --------------------------------------------------------------------------------------
# Shared plumbing
# --------------------------------------------------------------------------------------
def _source(make: Callable[[int, int], tuple[np.ndarray, np.ndarray]], total: int,
            chunk: int, num_vertices: int, symmetric: bool, num_edges: int,
            weights: tuple[float, float] | None, seed: int, provenance: dict) -> EdgeSource:
    """An EdgeSource whose chunks are ``make(start, count)`` over counters [0, total),
    with hash weights on the final ids when ``weights`` is given."""
    chunk = _int_arg("chunk_edges", chunk, 1)
    if weights is not None:
        weights = check_weight_range(*weights)
    provenance["weights"] = None if weights is None else list(weights)

    def chunks() -> Iterator[EdgeChunk]:
        for start in range(0, total, chunk):
            src, dst = make(start, min(chunk, total - start))
            if not len(src):
                continue
            w = None if weights is None else hash_weights(src, dst, *weights, seed)
            yield EdgeChunk(src, dst, w)

    return EdgeSource(chunks=chunks, weighted=weights is not None, num_vertices=num_vertices,
                      symmetric=symmetric, num_edges_hint=num_edges, provenance=provenance)


def _int_arg(name: str, value: int, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lo:
        raise InputError(f"{name} must be an integer >= {lo}, got {value!r}")
    return int(value)


def _is_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _scale_size(scale: int, edge_factor: int) -> tuple[int, int]:
    """``(n, m)`` of a graph of ``2^scale`` vertices and ``edge_factor`` edges per vertex."""
    scale = _int_arg("scale", scale, 1)
    if scale > MAX_SCALE:
        raise InputError(f"scale must be at most {MAX_SCALE} (a store holds fewer than 2^31 "
                         f"vertices), got {scale}")
    n = 1 << scale
    return n, _int_arg("edge_factor", edge_factor, 1) * n


# --------------------------------------------------------------------------------------
# R-MAT
# --------------------------------------------------------------------------------------
def _quadrant_thresholds(a: float, b: float, c: float) -> np.ndarray:
    """Cumulative quadrant probabilities a, a+b, a+b+c as 16-bit thresholds: a level's
    16-bit draw r picks quadrant ``(r >= t0) + (r >= t1) + (r >= t2)``."""
    for name, p in (("a", a), ("b", b), ("c", c)):
        if not (_is_real(p) and 0.0 < p < 1.0):
            raise InputError(f"R-MAT probability {name} must be in (0, 1), got {p!r}")
    if a + b + c >= 1.0:
        raise InputError(f"R-MAT probabilities must leave d = 1 - a - b - c > 0, got "
                         f"a + b + c = {a + b + c:g}")
    cumulative = np.round(np.cumsum([a, b, c]) * (1 << _LEVEL_BITS))
    # A threshold of 2^16 (a + b + c within 2^-17 of 1) does not fit 16 bits; 2^16 - 1
    # gives d its smallest non-zero share instead.
    return np.minimum(cumulative, (1 << _LEVEL_BITS) - 1).astype(np.uint16)


class _Relabel:
    """A seed-determined bijection of [0, 2^scale): rounds of an affine map with an odd
    factor modulo 2^scale (spreads low bits up) and an xorshift (spreads high bits down).
    Unlike a permutation table it needs no memory and no random gathers."""

    def __init__(self, scale: int, seed: int) -> None:
        key = stream_key(seed, _RELABEL_STREAM)
        words = np.array([draw(key, np.uint64(i)) for i in range(2 * _RELABEL_ROUNDS)],
                         np.uint64)
        self.mask = np.uint32((1 << scale) - 1)
        self.mult = words[:_RELABEL_ROUNDS].astype(np.uint32) & self.mask | np.uint32(1)
        self.add = words[_RELABEL_ROUNDS:].astype(np.uint32) & self.mask
        self.shift = np.uint32((scale + 1) // 2)


@njit(cache=True)
def _relabel(ids, mult, add, mask, shift):
    """Applies the bijection of :class:`_Relabel` to ``ids`` (uint32) in place."""
    for k in range(len(mult)):
        for i in range(len(ids)):
            x = (ids[i] * mult[k] + add[k]) & mask
            ids[i] = x ^ (x >> shift)


@njit(cache=True)
def _level_bits(words, t0, t1, t2, row, col):
    """Four levels per 64-bit draw: for each 16-bit lane r, the quadrant's row bit
    ``r >= t1`` and column bit (set for quadrants b and d) as bytes ``row`` and ``col``."""
    r = words.view(np.uint16)
    for k in range(len(r)):
        g0 = r[k] >= t0
        g1 = r[k] >= t1
        g2 = r[k] >= t2
        row[k] = g1
        col[k] = g0 ^ g1 ^ g2


@njit(cache=True)
def _append_levels(ids, bits):
    """Shifts the four level bits held in bytes ``bits[4i:4i+4]`` (the first one most
    significant) into ``ids[i]``."""
    quads = bits.view(np.uint32)
    for i in range(len(ids)):
        # One multiply moves the low bit of bytes 0..3 to bits 30..27 of the product.
        ids[i] = (ids[i] << _U4) | (((quads[i] * _NIBBLE) >> _U27) & _U15)


@kernel(cache=True, parallel=True)
def _rmat_edges(start, scale, key, thresholds, mult, add, mask, shift, src, dst):
    """Edges ``start .. start + len(src)``; edge e uses draws ``e * D .. e * D + D - 1``
    (D = draws per edge), the first one for the four most significant levels.

    Works in blocks, level group by level group, so that every inner loop runs over the
    block's edges and vectorises.
    """
    t0, t1, t2 = thresholds[0], thresholds[1], thresholds[2]
    draws = (scale + _LEVELS_PER_DRAW - 1) // _LEVELS_PER_DRAW
    surplus = np.uint32(draws * _LEVELS_PER_DRAW - scale)
    for block in prange((len(src) + _BLOCK - 1) // _BLOCK):
        lo = block * _BLOCK
        count = min(_BLOCK, len(src) - lo)
        first = np.uint64(start + lo) * np.uint64(draws)
        words = np.empty(count, np.uint64)
        row = np.empty(_LEVELS_PER_DRAW * count, np.uint8)
        col = np.empty(_LEVELS_PER_DRAW * count, np.uint8)
        u = np.zeros(count, np.uint32)
        v = np.zeros(count, np.uint32)
        for d in range(draws):
            for i in range(count):
                words[i] = draw(key, first + np.uint64(i * draws + d))
            _level_bits(words, t0, t1, t2, row, col)
            _append_levels(u, row)
            _append_levels(v, col)
        # Levels past ``scale`` (of the last draw) are dropped: they are the lowest bits.
        # (Loops, not array expressions and slice copies: they compile in less time.)
        for i in range(count):
            u[i] >>= surplus
            v[i] >>= surplus
        _relabel(u, mult, add, mask, shift)
        _relabel(v, mult, add, mask, shift)
        for i in range(count):
            src[lo + i] = u[i]
            dst[lo + i] = v[i]


# --------------------------------------------------------------------------------------
# Uniform
# --------------------------------------------------------------------------------------
@kernel(cache=True, parallel=True)
def _uniform_edges(start, key, mask, src, dst):
    # One draw per edge: n <= 2^30, so its low and high halves give both ends.
    for i in prange(len(src)):
        bits = draw(key, np.uint64(start + i))
        src[i] = bits & mask
        dst[i] = (bits >> _HALF_WORD) & mask


# --------------------------------------------------------------------------------------
# Grid
# --------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _slot_kept(s, rows, cols, key, cut):
    """Whether slot s (edge right of u = s // 2 if s is even, below u if odd) is an edge."""
    u = s >> 1
    exists = u // cols < rows - 1 if s & 1 else u % cols < cols - 1
    return exists and (draw(key, np.uint64(s)) >> np.uint64(11)) >= cut


@njit(cache=True, parallel=True)
def _grid_keep(start, rows, cols, key, cut, kept):
    for i in prange(len(kept)):
        kept[i] = _slot_kept(start + i, rows, cols, key, cut)


@njit(cache=True, parallel=True)
def _grid_count(slots, rows, cols, key, cut):
    total = 0
    for s in prange(slots):
        total += _slot_kept(s, rows, cols, key, cut)
    return total


@njit(cache=True, parallel=True)
def _grid_edges(start, offsets, cols, src, dst):
    # Both directions of a kept edge are adjacent, so the stream does not depend on where
    # the chunks start and end.
    for j in prange(len(offsets)):
        s = start + offsets[j]
        u = s >> 1
        v = u + cols if s & 1 else u + 1
        src[2 * j], dst[2 * j] = u, v
        src[2 * j + 1], dst[2 * j + 1] = v, u
