"""Graph generators and hash weights: determinism, shape, degree statistics, validation."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from partitioner import generators as gen
from partitioner.edges import EdgeSource
from partitioner.generators import GENERATORS, gap_weights, grid, rmat, uniform
from partitioner.weights import draw, hash_weights, parse_weight_spec, stream_key
from seraph.errors import InputError

#: Small instances of every generator, with randomness in each (grid removes edges).
SMALL = {
    "rmat": lambda **kw: rmat(10, 8, **kw),
    "uniform": lambda **kw: uniform(10, 8, **kw),
    "grid": lambda **kw: grid(30, 40, 0.3, **kw),
}
#: Tiny ones, for tests that make many sources.
TINY = {
    "rmat": lambda **kw: rmat(6, 4, **kw),
    "uniform": lambda **kw: uniform(6, 4, **kw),
    "grid": lambda **kw: grid(9, 11, 0.3, **kw),
}


def edges(source: EdgeSource) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """All edges of ``source``, the chunks concatenated."""
    chunks = list(source.chunks())
    src = np.concatenate([c.src for c in chunks])
    dst = np.concatenate([c.dst for c in chunks])
    w = np.concatenate([c.weight for c in chunks]) if source.weighted else None
    return src, dst, w


def assert_same_edges(x: EdgeSource, y: EdgeSource) -> None:
    for a, b in zip(edges(x), edges(y), strict=True):
        np.testing.assert_array_equal(a, b)


def mix_reference(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser in plain numpy (uint64 arrays wrap silently)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def rmat_reference(scale: int, edge_factor: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """R-MAT as the spec reads, one level at a time: level l of edge e uses bits
    16 (l % 4) .. 16 (l % 4) + 15 of draw e * D + l // 4 and picks quadrant a, b, c or d."""
    m, draws = edge_factor << scale, -(-scale // 4)
    key = stream_key(seed, gen._EDGE_STREAM)
    counters = np.arange(m * draws, dtype=np.uint64)
    words = mix_reference(key + counters * np.uint64(0x9E3779B97F4A7C15)).reshape(m, draws)
    t = np.round(np.cumsum([0.57, 0.19, 0.19]) * 65536).astype(np.uint64)
    u = np.zeros(m, np.uint32)
    v = np.zeros(m, np.uint32)
    for level in range(scale):
        r = (words[:, level // 4] >> np.uint64(16 * (level % 4))) & np.uint64(0xFFFF)
        quadrant = (r >= t[0]).astype(np.uint32) + (r >= t[1]) + (r >= t[2])
        u = 2 * u + quadrant // 2
        v = 2 * v + quadrant % 2
    relabel = gen._Relabel(scale, seed)
    for ids in (u, v):
        gen._relabel(ids, relabel.mult, relabel.add, relabel.mask, relabel.shift)
    return u.astype(np.int64), v.astype(np.int64)


# --------------------------------------------------------------------------------------
# Hash RNG
# --------------------------------------------------------------------------------------
def test_draws_are_splitmix64():
    # The reference sequence of splitmix64 seeded with 1234567.
    words = [int(draw(np.uint64(1234567), np.uint64(i))) for i in (1, 2, 3)]
    assert words == [6457827717110365317, 3203168211198807973, 9817491932198370423]


# --------------------------------------------------------------------------------------
# Every generator
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SMALL)
def test_same_seed_same_edges_other_seed_other_edges(name):
    make = SMALL[name]
    assert_same_edges(make(seed=7), make(seed=7))
    a, b = edges(make(seed=7)), edges(make(seed=8))
    assert not np.array_equal(a[0], b[0])


@pytest.mark.parametrize("name", SMALL)
def test_chunks_can_be_iterated_again(name):
    source = SMALL[name](weights=(1, 255))
    first, second = list(source.chunks()), list(source.chunks())
    assert len(first) == len(second)
    for x, y in zip(first, second, strict=True):
        np.testing.assert_array_equal(x.src, y.src)
        np.testing.assert_array_equal(x.dst, y.dst)
        np.testing.assert_array_equal(x.weight, y.weight)


@pytest.mark.parametrize("name", TINY)
@pytest.mark.parametrize("chunk_edges", [1, 3, 100, 257])
def test_edges_do_not_depend_on_chunk_size(name, chunk_edges):
    make = TINY[name]
    small = make(weights=(0.5, 2.0), chunk_edges=chunk_edges)
    assert all(len(c) <= chunk_edges or chunk_edges == 1 and len(c) == 2
               for c in small.chunks())
    assert_same_edges(small, make(weights=(0.5, 2.0)))


@pytest.mark.parametrize("name", SMALL)
def test_edges_do_not_depend_on_thread_count(name, all_threads):
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one_thread = SMALL[name](weights=(1, 255))
        single = edges(one_thread)
    finally:
        numba.set_num_threads(threads)
    for a, b in zip(single, edges(SMALL[name](weights=(1, 255))), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", SMALL)
def test_ids_dtypes_counts_and_metadata(name):
    source = SMALL[name](weights=gap_weights())
    src, dst, w = edges(source)
    n = source.num_vertices
    assert src.dtype == dst.dtype == np.int64 and w.dtype == np.float32
    assert min(src.min(), dst.min()) >= 0 and max(src.max(), dst.max()) < n
    assert len(src) == len(dst) == len(w) == source.num_edges_hint
    assert source.weighted and source.provenance["generator"] == name
    assert source.provenance["weights"] == [1.0, 255.0]
    assert source.symmetric == (name == "grid")


def test_registry_and_gap_weights():
    assert {"rmat": rmat, "uniform": uniform, "grid": grid} == GENERATORS
    assert gap_weights() == (1.0, 255.0)


def test_unweighted_sources_carry_no_weights():
    source = uniform(6, 2)
    assert not source.weighted
    assert all(c.weight is None for c in source.chunks())


# --------------------------------------------------------------------------------------
# R-MAT
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1, 7, 10, 13])  # all remainders of scale / 4
def test_rmat_matches_level_by_level_reference(scale):
    src, dst, _ = edges(rmat(scale, 4, seed=3))
    ref_src, ref_dst = rmat_reference(scale, 4, seed=3)
    np.testing.assert_array_equal(src, ref_src)
    np.testing.assert_array_equal(dst, ref_dst)


@pytest.mark.parametrize("scale", [1, 2, 7, 16])
def test_relabel_is_a_permutation(scale):
    relabel = gen._Relabel(scale, seed=5)
    ids = np.arange(1 << scale, dtype=np.uint32)
    gen._relabel(ids, relabel.mult, relabel.add, relabel.mask, relabel.shift)
    np.testing.assert_array_equal(np.sort(ids), np.arange(1 << scale))


def test_rmat_is_skewed_and_hubs_are_spread():
    scale = 14
    source = rmat(scale, 16, seed=1)
    src, dst, _ = edges(source)
    assert source.num_vertices == 1 << scale and len(src) == 16 << scale
    in_degree = np.bincount(dst, minlength=1 << scale)
    assert in_degree.max() > 10 * in_degree.mean()
    # Unrelabelled R-MAT hubs have few one bits (quadrant a is most likely); relabelled,
    # the top 1% look like any ids.
    hubs = np.argsort(in_degree)[-(1 << scale) // 100:]
    one_bits = np.unpackbits(hubs.astype(">u2").view(np.uint8)).sum() / len(hubs)
    assert abs(one_bits - scale / 2) < 1.0


def test_rmat_with_equal_quadrants_has_no_hubs():
    # a = b = c = d makes every bit of either end a fair coin: a uniform graph.
    src, dst, _ = edges(rmat(8, 64, seed=2, a=0.25, b=0.25, c=0.25))
    in_degree = np.bincount(dst, minlength=256)
    assert in_degree.max() < 2 * in_degree.mean()


# --------------------------------------------------------------------------------------
# Uniform
# --------------------------------------------------------------------------------------
def test_uniform_degrees_are_poisson_like():
    scale = 14
    src, dst, _ = edges(uniform(scale, 16, seed=4))
    assert len(src) == 16 << scale
    for ends in (src, dst):
        degree = np.bincount(ends, minlength=1 << scale)
        # Poisson(16): the maximum over 16K vertices is about 35, the minimum about 2.
        assert degree.max() < 4 * degree.mean()
        assert abs(degree.var() / degree.mean() - 1) < 0.1


# --------------------------------------------------------------------------------------
# Grid
# --------------------------------------------------------------------------------------
def test_full_grid_is_the_lattice_both_ways():
    rows, cols = 7, 5
    src, dst, _ = edges(grid(rows, cols))
    got = set(zip(src.tolist(), dst.tolist(), strict=True))
    lattice = set()
    for r in range(rows):
        for c in range(cols):
            u = r * cols + c
            lattice |= {(u, u + 1), (u + 1, u)} if c < cols - 1 else set()
            lattice |= {(u, u + cols), (u + cols, u)} if r < rows - 1 else set()
    assert got == lattice and len(src) == len(lattice)


def test_grid_with_removal_is_symmetric_with_symmetric_weights():
    rows, cols, fraction = 100, 100, 0.3
    source = grid(rows, cols, fraction, seed=9, weights=gap_weights())
    src, dst, w = edges(source)
    assert source.symmetric and source.num_vertices == rows * cols
    degree = np.bincount(src, minlength=rows * cols)
    assert degree.max() <= 4
    forward = np.lexsort((dst, src))
    backward = np.lexsort((src, dst))
    np.testing.assert_array_equal(src[forward], dst[backward])
    np.testing.assert_array_equal(dst[forward], src[backward])
    np.testing.assert_array_equal(w[forward], w[backward])
    lattice_edges = rows * (cols - 1) + (rows - 1) * cols
    kept = len(src) / 2 / lattice_edges
    assert abs(kept - (1 - fraction)) < 0.02  # 6 standard deviations


def test_grid_of_one_vertex_has_no_edges():
    source = grid(1, 1)
    assert source.num_vertices == 1 and source.num_edges_hint == 0
    assert list(source.chunks()) == []


# --------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------
def random_pairs(count: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, count), rng.integers(0, n, count)


def test_generated_weights_are_hash_weights_of_final_ids():
    src, dst, w = edges(rmat(10, 4, seed=6, weights=gap_weights()))
    np.testing.assert_array_equal(w, hash_weights(src, dst, 1, 255, 6))


def test_gap_weights_are_integers_covering_1_to_255():
    src, dst = random_pairs(20000, 1 << 20)
    w = hash_weights(src, dst, *gap_weights(), seed=0)
    assert w.dtype == np.float32
    assert np.array_equal(w, np.round(w))
    assert set(np.unique(w).tolist()) == set(range(1, 256))


def test_hash_weights_are_symmetric_and_depend_on_seed():
    src, dst = random_pairs(5000, 100)
    w = hash_weights(src, dst, 0.5, 2.0, seed=1)
    np.testing.assert_array_equal(w, hash_weights(dst, src, 0.5, 2.0, seed=1))
    np.testing.assert_array_equal(w, hash_weights(src.astype(np.int32), dst, 0.5, 2.0, 1))
    assert not np.array_equal(w, hash_weights(src, dst, 0.5, 2.0, seed=2))
    # The same vertex pair always gets the same weight (duplicates agree).
    pair = np.minimum(src, dst) * 100 + np.maximum(src, dst)
    order = np.argsort(pair, kind="stable")
    same = pair[order][1:] == pair[order][:-1]
    np.testing.assert_array_equal(w[order][1:][same], w[order][:-1][same])


def test_real_weights_stay_in_half_open_range_after_float32_rounding():
    src, dst = random_pairs(20000, 1 << 20)
    w = hash_weights(src, dst, 0.5, 1.5, seed=0)
    assert w.min() >= 0.5 and w.max() < 1.5 and abs(w.mean() - 1.0) < 0.01
    # A range a few float32 steps wide: rounding to float32 would hit both ends often.
    lo, hi = 1.0 + 2.0**-30, 1.0 + 2.0**-20
    w = hash_weights(src, dst, lo, hi, seed=0).astype(np.float64)
    assert w.min() >= lo and w.max() < hi


def test_degenerate_weight_ranges():
    src, dst = random_pairs(100, 10)
    assert set(hash_weights(src, dst, 3, 3, 0).tolist()) == {3.0}
    assert set(hash_weights(src, dst, 2.5, 2.5, 0).tolist()) == {2.5}
    assert set(hash_weights(src, dst, 0, 1, 0).tolist()) == {0.0, 1.0}


@pytest.mark.parametrize("lo, hi", [(-1, 2), (3, 2), (0, np.inf), (np.nan, 1), ("a", 1)])
def test_hash_weights_rejects_bad_ranges(lo, hi):
    with pytest.raises(InputError, match="weight range"):
        hash_weights(np.arange(3), np.arange(3), lo, hi, 0)


def test_hash_weights_rejects_bad_arrays():
    with pytest.raises(InputError, match="one length"):
        hash_weights(np.arange(3), np.arange(4), 1, 2, 0)
    with pytest.raises(InputError, match="integers"):
        hash_weights(np.ones(3), np.ones(3), 1, 2, 0)
    with pytest.raises(InputError, match="seed"):
        hash_weights(np.arange(3), np.arange(3), 1, 2, -1)


@pytest.mark.parametrize("spec, expected", [("none", None), ("random:1,255", (1.0, 255.0)),
                                            (" Random:0.5,2 ", (0.5, 2.0)),
                                            ("random:0,0", (0.0, 0.0))])
def test_parse_weight_spec(spec, expected):
    assert parse_weight_spec(spec) == expected


@pytest.mark.parametrize("spec", ["", "file", "random", "random:1", "random:1,2,3",
                                  "random:a,b", "random:5,1", "random:-1,2", "random:0,inf"])
def test_parse_weight_spec_rejects_malformed_specs(spec):
    with pytest.raises(InputError, match="random:LO,HI"):
        parse_weight_spec(spec)


# --------------------------------------------------------------------------------------
# Argument validation
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda: rmat(0), "scale"),
    (lambda: rmat(31), "scale"),
    (lambda: uniform(40), "scale"),
    (lambda: rmat(2.5), "scale"),
    (lambda: rmat(True), "scale"),
    (lambda: uniform(4, edge_factor=0), "edge_factor"),
    (lambda: rmat(4, a=0.0), "probability a"),
    (lambda: rmat(4, b=1.5), "probability b"),
    (lambda: rmat(4, c="x"), "probability c"),
    (lambda: rmat(4, a=0.5, b=0.3, c=0.3), "d = 1 - a - b - c"),
    (lambda: rmat(4, seed=-1), "seed"),
    (lambda: uniform(4, seed=1.5), "seed"),
    (lambda: rmat(4, weights=(5, 1)), "weight range"),
    (lambda: uniform(4, chunk_edges=0), "chunk_edges"),
    (lambda: grid(0, 5), "rows"),
    (lambda: grid(5, 0), "cols"),
    (lambda: grid(5, 5, 1.0), "remove_fraction"),
    (lambda: grid(5, 5, -0.1), "remove_fraction"),
    (lambda: grid(1 << 16, 1 << 15), "store can hold"),
])
def test_bad_arguments_raise_input_error(call, message):
    with pytest.raises(InputError, match=message):
        call()
