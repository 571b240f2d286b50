"""Union-find connected components (seraph.backends.cpu.union_find) against scipy.sparse.csgraph.

The kernels run on numba's default thread pool, so a lost or torn hook would show up as a
wrong label here."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit, prange
from scipy.sparse import csgraph

from partitioner.csx import smallest_neighbours
from seraph.backends.cpu import union_find
from seraph.backends.cpu.atomics import atomic_cas, atomic_load, atomic_store
from seraph.backends.cpu.union_find import (
    NO_ROOT,
    components,
    compress,
    link_edges,
    link_parents,
    link_sample,
    most_frequent_root,
    new_forest,
    trusted_components,
)
from seraph.errors import InputError

EXAMPLES = settings(max_examples=60, deadline=None)


@pytest.fixture(scope="module", autouse=True)
def split_every_call():
    """Small inputs would stay on the calling thread: split them over all threads, so that
    racing hooks get the chance to go wrong."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(union_find, "_CHUNK_ITEMS", 1)
        patch.setattr(union_find, "_EDGE_CHUNK_ITEMS", 1)
        yield

# --- graphs and the oracle ------------------------------------------------------------------


def symmetric_csc(n: int, src, dst) -> tuple[np.ndarray, np.ndarray]:
    """The CSC (int64 indptr, int32 indices) of edges ``src -> dst`` plus their reverses,
    keeping self-loops and duplicates (scipy's conversions would merge duplicates)."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    rows, cols = np.concatenate([src, dst]), np.concatenate([dst, src])
    order = np.argsort(cols, kind="stable")
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(cols, minlength=n), out=indptr[1:])
    return indptr, rows[order].astype(np.int32)


def smallest_ids(indptr: np.ndarray, indices: np.ndarray, n: int) -> np.ndarray:
    """scipy's components, each labelled by its smallest vertex id."""
    adj = sp.csc_array((np.ones(len(indices)), indices, indptr), shape=(n, n))
    count, labels = csgraph.connected_components(adj, directed=False)
    smallest = np.full(count, n, np.int64)
    np.minimum.at(smallest, labels, np.arange(n))
    return smallest[labels]


def check(n: int, src, dst, **options) -> np.ndarray:
    indptr, indices = symmetric_csc(n, src, dst)
    labels = components(indptr, indices, n, **options)
    assert labels.dtype == np.int32 and labels.shape == (n,)
    np.testing.assert_array_equal(labels, smallest_ids(indptr, indices, n))
    return labels


def relabelled(n: int, src, dst, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The same edges with vertex ids shuffled, as real road networks' are."""
    perm = np.random.default_rng(seed).permutation(n)
    return perm[np.asarray(src, np.int64)], perm[np.asarray(dst, np.int64)]


def path(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n - 1), np.arange(1, n)


def grid(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.arange(rows * cols).reshape(rows, cols)
    right = (ids[:, :-1].ravel(), ids[:, 1:].ravel())
    down = (ids[:-1, :].ravel(), ids[1:, :].ravel())
    return np.concatenate([right[0], down[0]]), np.concatenate([right[1], down[1]])


# --- answers against scipy ------------------------------------------------------------------


@st.composite
def random_graphs(draw):
    n = draw(st.integers(1, 80))
    m = draw(st.integers(0, 3 * n))
    ends = st.lists(st.integers(0, n - 1), min_size=m, max_size=m)
    return n, draw(ends), draw(ends)


@EXAMPLES
@given(random_graphs(), st.integers(0, 4))
def test_random_graphs_with_loops_and_duplicates(graph, sample_rounds):
    n, src, dst = graph
    check(n, src, dst, sample_rounds=sample_rounds)


@EXAMPLES
@given(random_graphs(), st.integers(0, 3), st.data())
def test_a_sample_in_place_of_the_first_neighbours(graph, per, data):
    """The first step links a given sample (csc/sample: each row's smallest neighbours, or
    any of its neighbours, -1 for none) instead of the rows' first positions; the finish
    then links every position: the labels are scipy's."""
    n, src, dst = graph
    indptr, indices = symmetric_csc(n, src, dst)
    sample = np.full((n, per), -1, np.int32)
    out = np.full(n * per, -1, np.int32)
    smallest_neighbours(indptr, indices, per, out)
    if data.draw(st.booleans(), label="the smallest"):
        sample = out.reshape(n, per)
    else:
        for v in range(n):
            row = indices[indptr[v]:indptr[v + 1]]
            k = data.draw(st.integers(0, min(per, len(row))), label="sampled")
            sample[v, :k] = row[len(row) - k:]
    labels = trusted_components(indptr, indices, n, sample=sample.ravel())
    np.testing.assert_array_equal(labels, smallest_ids(indptr, indices, n))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 50), max_size=12), max_size=20),
       st.integers(1, 4))
def test_smallest_neighbours_are_each_rows_smallest(lists, count):
    indptr = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(r) for r in lists], out=indptr[1:])
    indices = np.array([x for r in lists for x in r], np.int32)
    out = np.empty(len(lists) * count, np.int32)
    smallest_neighbours(indptr, indices, count, out)
    for v, row in enumerate(lists):
        want = sorted(row)[:count]
        assert out[v * count:(v + 1) * count].tolist() == want + [-1] * (count - len(want))


def test_a_sample_that_does_not_fit_the_vertices_is_refused():
    with pytest.raises(InputError, match="does not give each of 3 vertices as many"):
        link_sample(new_forest(3), np.zeros(4, np.int32))


@EXAMPLES
@given(st.integers(1, 3000), st.integers(0, 2**32 - 1), st.booleans())
def test_paths_ordered_and_shuffled(n, seed, shuffle):
    src, dst = path(n)
    if shuffle:
        src, dst = relabelled(n, src, dst, seed)
    labels = check(n, src, dst)
    assert (labels == 0).all()


@EXAMPLES
@given(st.integers(1, 40), st.integers(1, 40), st.floats(0.0, 0.6), st.integers(0, 2**32 - 1))
def test_shuffled_grids_with_edges_removed(rows, cols, remove, seed):
    rng = np.random.default_rng(seed)
    src, dst = grid(rows, cols)
    kept = rng.random(len(src)) >= remove
    check(rows * cols, *relabelled(rows * cols, src[kept], dst[kept], seed))


@EXAMPLES
@given(st.integers(1, 2000), st.data())
def test_stars(n, data):
    centre = data.draw(st.integers(0, n - 1))
    leaves = np.delete(np.arange(n), centre)
    labels = check(n, np.full(len(leaves), centre), leaves)
    assert (labels == 0).all()


@EXAMPLES
@given(st.lists(st.integers(1, 200), min_size=1, max_size=8), st.integers(0, 2**32 - 1))
def test_disjoint_chains_and_isolated_vertices(sizes, seed):
    """Several chains side by side, some of one vertex (isolated), ids shuffled."""
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    pieces = [path(size) for size in sizes]
    src = np.concatenate([p[0] + lo for p, lo in zip(pieces, offsets, strict=False)])
    dst = np.concatenate([p[1] + lo for p, lo in zip(pieces, offsets, strict=False)])
    n = int(offsets[-1])
    labels = check(n, *relabelled(n, src, dst, seed))
    assert len(np.unique(labels)) == len(sizes)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_graphs_without_edges_label_every_vertex_itself(n):
    labels = components(np.zeros(n + 1, np.int64), np.zeros(0, np.int32), n)
    np.testing.assert_array_equal(labels, np.arange(n, dtype=np.int32))


def test_self_loops_alone_join_nothing():
    np.testing.assert_array_equal(check(4, [0, 2, 2], [0, 2, 2]), [0, 1, 2, 3])


def test_large_random_graph_under_contention(all_threads):
    """Enough edges per thread that hooks race on the same roots many times."""
    rng = np.random.default_rng(7)
    n = 200_000
    for m in (n // 2, n, 4 * n):  # below, at and above the giant component's threshold
        check(n, rng.integers(0, n, m), rng.integers(0, n, m))


def test_hub_split_over_many_pieces(all_threads):
    """One hub's edges are cut into many parallel pieces that all hook into it at once."""
    n = 300_000
    leaves = np.random.default_rng(3).permutation(n)[1:]
    check(n, np.full(n - 1, 0), leaves, sample_rounds=0)


@pytest.mark.parametrize("chunk_items", [1, 1 << 14, 1 << 40])
def test_one_thread_and_all_threads_agree(chunk_items, monkeypatch, all_threads):
    monkeypatch.setattr(union_find, "_CHUNK_ITEMS", chunk_items)
    monkeypatch.setattr(union_find, "_EDGE_CHUNK_ITEMS", chunk_items)
    rng = np.random.default_rng(4)
    src, dst = grid(150, 150)
    kept = rng.random(len(src)) >= 0.3
    check(150 * 150, *relabelled(150 * 150, src[kept], dst[kept], seed=4))


# --- page by page ---------------------------------------------------------------------------


def paged_components(indptr, indices, n, page_edges, sample_rounds, *, one_pass=False,
                     backwards=False):
    """components() as a caller streaming pages of ``page_edges`` edges runs it; with
    ``one_pass``, all sampling rounds in one pass, and with ``backwards``, last page first."""
    starts = range(0, len(indices), page_edges)
    starts = starts[::-1] if backwards else starts

    def each_page(**which):
        for start in starts:
            link_edges(parent, indptr, indices[start:start + page_edges].copy(), start,
                       **which)
            # What makes roots the smallest ids: every vertex points at a smaller one.
            assert (parent <= np.arange(n)).all()

    parent = new_forest(n)
    if one_pass:
        each_page(first_neighbour=0, neighbour_count=sample_rounds)
        compress(parent)
    else:
        for r in range(sample_rounds):
            each_page(first_neighbour=r, neighbour_count=1)
            compress(parent)
    giant = most_frequent_root(parent)
    each_page(first_neighbour=sample_rounds, skip_root=giant)
    compress(parent)
    return parent


@EXAMPLES
@given(random_graphs(), st.sampled_from([1, 3, 16, 1 << 20]), st.integers(0, 3),
       st.booleans(), st.booleans())
def test_page_by_page_gives_the_same_labels(graph, page_edges, sample_rounds, one_pass,
                                            backwards):
    n, src, dst = graph
    indptr, indices = symmetric_csc(n, src, dst)
    labels = paged_components(indptr, indices, n, page_edges, sample_rounds,
                              one_pass=one_pass, backwards=backwards)
    np.testing.assert_array_equal(labels, components(indptr, indices, n))
    np.testing.assert_array_equal(labels, smallest_ids(indptr, indices, n))


@pytest.mark.parametrize("page_edges", [100, 4096, 1 << 16])
def test_page_by_page_on_a_shuffled_grid(page_edges):
    src, dst = relabelled(200 * 200, *grid(200, 200), seed=5)
    indptr, indices = symmetric_csc(200 * 200, src, dst)
    labels = paged_components(indptr, indices, 200 * 200, page_edges, 2)
    assert (labels == 0).all()


def test_link_edges_links_only_the_positions_asked_for():
    # Only vertex 0 has neighbours (1, 2, 3), so nothing links from the other side.
    indptr, indices = np.array([0, 3, 3, 3, 3], np.int64), np.array([1, 2, 3], np.int32)
    parent = new_forest(4)
    # A one-edge page holding edge 1 (vertex 0's second neighbour).
    link_edges(parent, indptr, indices[1:2], 1, first_neighbour=1, neighbour_count=1)
    np.testing.assert_array_equal(parent, [0, 1, 0, 3])
    link_edges(parent, indptr, indices, skip_root=0)  # vertex 0 is under root 0: skipped
    np.testing.assert_array_equal(parent, [0, 1, 0, 3])
    link_edges(parent, indptr, indices, first_neighbour=2)
    np.testing.assert_array_equal(parent, [0, 1, 0, 0])


@EXAMPLES
@given(random_graphs(), st.integers(0, 4))
def test_linked_parents_are_the_forest_of_both_edge_sets(graph, split):
    """Two forests, each of some of the edges (a partitioned run's workers'), linked into
    one: the components of all the edges, each labelled by its smallest id."""
    n, src, dst = graph
    cut = len(src) * split // 4
    one = components(*symmetric_csc(n, src[:cut], dst[:cut]), n)
    other = components(*symmetric_csc(n, src[cut:], dst[cut:]), n)
    link_parents(one, other)
    np.testing.assert_array_equal(one, smallest_ids(*symmetric_csc(n, src, dst), n))


def test_most_frequent_root():
    parent = np.array([0, 0, 0, 3, 3, 3, 3, 7], np.int32)
    assert most_frequent_root(parent) == 3
    assert most_frequent_root(new_forest(0)) == NO_ROOT


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("indptr, indices, n, match", [
    (np.array([0, 1], np.int32), np.array([0], np.int32), 1, "int64 indptr"),
    (np.array([0, 1], np.int64), np.array([0], np.int64), 1, "int32 indices"),
    (np.array([0, 1], np.int64), np.array([0], np.int32), 2, "num_vertices \\+ 1"),
    (np.array([0, 2], np.int64), np.array([0], np.int32), 1, "to len\\(indices\\)"),
    (np.array([0, 2, 1, 2], np.int64), np.array([0, 1], np.int32), 3, "non-decreasing"),
    (np.array([0, 1], np.int64), np.array([1], np.int32), 1, "vertex ids in"),
    (np.array([0, 1], np.int64), np.array([-1], np.int32), 1, "vertex ids in"),
    ([0, 1], np.array([0], np.int32), 1, "numpy arrays"),
])
def test_bad_csc_is_refused(indptr, indices, n, match):
    with pytest.raises(InputError, match=match):
        components(indptr, indices, n)


@pytest.mark.parametrize("rounds", [-1, 1.5, True])
def test_bad_sample_rounds_are_refused(rounds):
    with pytest.raises(InputError, match="sample_rounds"):
        components(np.zeros(2, np.int64), np.zeros(0, np.int32), 1, sample_rounds=rounds)


def test_link_edges_refuses_edges_outside_the_graph():
    indptr, indices = symmetric_csc(3, [0], [1])
    parent = new_forest(3)
    with pytest.raises(InputError, match="not within"):
        link_edges(parent, indptr, indices, 1)
    with pytest.raises(InputError, match="int32 parent"):
        link_edges(new_forest(2), indptr, indices)
    with pytest.raises(InputError, match="integer indices"):
        link_edges(parent, indptr, indices.astype(np.float64))
    with pytest.raises(InputError, match="non-negative"):
        link_edges(parent, indptr, indices, first_neighbour=-1)
    np.testing.assert_array_equal(parent, [0, 1, 2])  # nothing linked before refusing


# --- the atomics it adds --------------------------------------------------------------------


@njit(parallel=True, cache=True)
def _count_by_cas(cell, times):
    """Each of ``times`` iterations adds one to cell[0] by a compare-and-swap retry loop."""
    for _ in prange(times):
        seen = atomic_load(cell, 0)
        while True:
            old = atomic_cas(cell, 0, seen, seen + 1)
            if old == seen:
                break
            seen = old


@njit(cache=True)
def _store(arr, i, val):
    atomic_store(arr, i, val)


@njit(cache=True)
def _cas(arr, i, expected, new):
    return atomic_cas(arr, i, expected, new)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_atomic_cas_swaps_only_the_expected_value(dtype):
    arr = np.array([3, 7], dtype)
    assert _cas(arr, 0, 5, 9) == 3  # not what was expected: nothing written
    np.testing.assert_array_equal(arr, [3, 7])
    assert _cas(arr, 0, 3, 9) == 3
    np.testing.assert_array_equal(arr, [9, 7])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_atomic_cas_loses_no_increment_under_contention(dtype):
    cell = np.zeros(1, dtype)
    _count_by_cas(cell, 500_000)
    assert cell[0] == 500_000


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_atomic_store_writes_the_cell(dtype):
    arr = np.zeros(3, dtype)
    _store(arr, 1, 42)
    np.testing.assert_array_equal(arr, [0, 42, 0])
