"""The partitioner's writer: edge lists into paged CSC/CSR stores.

Every store is checked against the writer's rules done the slow way (numpy lexsort): each
input edge once in CSC and once in CSR, duplicates keeping the minimum weight, self-loops
dropped, rows sorted, pages exactly the chunks of ``csc/indices``.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from partitioner import writer
from partitioner.edges import EdgeChunk, EdgeSource
from partitioner.generators import grid, rmat
from partitioner.preprocess import preprocess, store_info
from partitioner.readers import edges_from_arrays
from partitioner.writer import Options, build_in_memory, write_store
from seraph.errors import InputError
from seraph.graph import Graph
from seraph.store import SAMPLE, Store

ARRAYS = ("csc/indptr", "csc/indices", "csc/weights", "csc/sample", "csr/indptr",
          "csr/indices", "csr/weights", "pages/first_vertex", "pages/last_vertex",
          "vertices/original_id")


# --------------------------------------------------------------------------- helpers
def expected_edges(src, dst, w=None, *, symmetrize=False, keep_duplicates=False,
                   keep_self_loops=False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges a store must hold as (src, dst, weight), sorted by (dst, src, weight)."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    w = np.zeros(len(src), np.float32) if w is None else np.asarray(w, np.float32)
    if not keep_self_loops:
        keep = src != dst
        src, dst, w = src[keep], dst[keep], w[keep]
    if symmetrize:
        rev = src != dst
        src, dst = np.concatenate([src, dst[rev]]), np.concatenate([dst, src[rev]])
        w = np.concatenate([w, w[rev]])
    order = np.lexsort((w, src, dst))
    src, dst, w = src[order], dst[order], w[order]
    if not keep_duplicates:  # the first of each (dst, src) run has the minimum weight
        first = np.ones(len(src), bool)
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        src, dst, w = src[first], dst[first], w[first]
    return src, dst, w


def rows(arrays: dict, prefix: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, neighbour, weight) of every stored edge of ``prefix`` (csc or csr), in order."""
    indptr = arrays[f"{prefix}/indptr"]
    keys = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    idx = arrays[f"{prefix}/indices"]
    w = arrays.get(f"{prefix}/weights", np.zeros(len(idx), np.float32))
    return keys, idx.astype(np.int64), w


def as_sorted(src, dst, w) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.lexsort((w, src, dst))
    return src[order], dst[order], w[order]


def read_all(path: Path) -> dict[str, np.ndarray]:
    store = Store(path)
    return {name: store.read(name) for name in ARRAYS if store.has(name)}


def check_store(arrays: dict, attrs, src, dst, w=None, **rules) -> None:
    """The arrays hold exactly the expected edges, in sorted rows, in both orientations."""
    exp = expected_edges(src, dst, w, **rules)
    csc_dst, csc_src, csc_w = rows(arrays, "csc")
    assert attrs.num_edges == len(csc_src) == len(exp[0])
    for got, want in zip(as_sorted(csc_src, csc_dst, csc_w), exp, strict=True):
        np.testing.assert_array_equal(got, want)
    if attrs.symmetric:
        assert "csr/indptr" not in arrays and "csr/indices" not in arrays
    else:
        csr_src, csr_dst, csr_w = rows(arrays, "csr")
        for got, want in zip(as_sorted(csr_src, csr_dst, csr_w), exp, strict=True):
            np.testing.assert_array_equal(got, want)
        assert_rows_sorted(arrays, "csr", strict=not rules.get("keep_duplicates"))
    assert attrs.row_order == ("weight" if attrs.weighted else "source")
    assert_rows_sorted(arrays, "csc", strict=not rules.get("keep_duplicates"),
                       by_weight=attrs.weighted)
    check_sample(arrays, attrs)
    check_pages(arrays, attrs)


def check_sample(arrays: dict, attrs) -> None:
    """A weighted symmetric store's csc/sample holds each row's SAMPLE smallest neighbours,
    -1 past a shorter row; an unweighted store, whose rows begin with them, has none, nor
    a directed one, whose components are not asked for."""
    if not (attrs.weighted and attrs.symmetric):
        assert "csc/sample" not in arrays
        return
    indptr, indices = arrays["csc/indptr"], arrays["csc/indices"]
    want = np.full((attrs.num_vertices, SAMPLE), -1, np.int32)
    for v in range(attrs.num_vertices):
        smallest = np.sort(indices[indptr[v]:indptr[v + 1]])[:SAMPLE]
        want[v, :len(smallest)] = smallest
    np.testing.assert_array_equal(arrays["csc/sample"], want.ravel())


def assert_rows_sorted(arrays: dict, prefix: str, strict: bool, by_weight: bool = False
                       ) -> None:
    """Each row ascends by neighbour, or with ``by_weight`` by weight and then neighbour."""
    keys, nbrs, weights = rows(arrays, prefix)
    same_row = keys[1:] == keys[:-1]
    step = np.diff(nbrs)[same_row]
    if by_weight:
        rise = np.diff(weights)[same_row]
        assert (rise >= 0).all()
        step = step[rise == 0]  # ties by neighbour
    assert (step > 0).all() if strict else (step >= 0).all()


def check_pages(arrays: dict, attrs) -> None:
    """pages/first_vertex and last_vertex name the destinations of each page's ends."""
    pe, m = attrs.page_edges, attrs.num_edges
    assert attrs.num_pages == -(-m // pe)
    dst = rows(arrays, "csc")[0]
    starts = np.arange(attrs.num_pages) * pe
    np.testing.assert_array_equal(arrays["pages/first_vertex"], dst[starts])
    np.testing.assert_array_equal(arrays["pages/last_vertex"],
                                  dst[np.minimum(starts + pe, m) - 1])


def random_edges(rng, n: int, m: int, weighted: bool):
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    # Few distinct weights, so duplicates often differ in weight (and sometimes tie).
    w = rng.integers(0, 4, m).astype(np.float32) * 0.5 if weighted else None
    return src, dst, w


def chunked(src, dst, w=None, chunk: int = 1000, num_vertices: int | None = None
            ) -> EdgeSource:
    """An EdgeSource over arrays in small chunks (readers use one chunk of 4M edges)."""

    def chunks():
        for lo in range(0, len(src), chunk):
            part = slice(lo, lo + chunk)
            yield EdgeChunk(np.asarray(src[part], np.int64), np.asarray(dst[part], np.int64),
                            None if w is None else np.asarray(w[part], np.float32))

    return EdgeSource(chunks=chunks, weighted=w is not None, num_vertices=num_vertices,
                      num_edges_hint=len(src), provenance={"input": "test"})


def comparable(attrs) -> dict:
    d = asdict(attrs)
    d["source"] = {k: v for k, v in d["source"].items() if k not in ("created", "command")}
    return d


# --------------------------------------------------------------------------- round trip
@pytest.mark.parametrize("weighted", [False, True])
def test_round_trip_directed(tmp_path, weighted):
    rng = np.random.default_rng(1)
    src, dst, w = random_edges(rng, 60, 900, weighted)
    path = write_store(edges_from_arrays(src, dst, w, 60), tmp_path / "g.zarr",
                       Options(page_edges=64))
    store = Store(path)
    arrays = read_all(path)
    check_store(arrays, store.attrs, src, dst, w)
    assert store.attrs.directed and not store.attrs.symmetric
    assert store.attrs.self_loops_removed == int((src == dst).sum())
    exp = expected_edges(src, dst, keep_duplicates=True)
    assert store.attrs.duplicates_removed == len(exp[0]) - store.attrs.num_edges
    # CSC is the transpose of CSR, entry for entry (scipy's transpose sorts its rows).
    n = store.attrs.num_vertices
    data = "csc/weights" if weighted else "csc/indices"
    csc = sp.csc_array((arrays[data], arrays["csc/indices"], arrays["csc/indptr"]), (n, n))
    rdata = "csr/weights" if weighted else "csr/indices"
    csr = sp.csr_array((arrays[rdata], arrays["csr/indices"], arrays["csr/indptr"]), (n, n))
    if weighted:
        assert (csc != csr).nnz == 0
    else:
        np.testing.assert_array_equal(csc.tocsr().indices, csr.indices)
        np.testing.assert_array_equal(csc.tocsr().indptr, csr.indptr)


def test_duplicates_keep_the_minimum_weight():
    src, dst = [0, 0, 0, 1, 1], [1, 1, 1, 0, 0]
    w = [3.0, 1.5, 2.0, 0.0, 7.0]
    attrs, arrays = build_in_memory(edges_from_arrays(src, dst, w))
    np.testing.assert_array_equal(arrays["csc/weights"], [0.0, 1.5])  # rows 0 <- 1, 1 <- 0
    np.testing.assert_array_equal(arrays["csr/weights"], [1.5, 0.0])
    assert attrs.duplicates_removed == 3


@pytest.mark.parametrize("keep_duplicates", [False, True])
@pytest.mark.parametrize("keep_self_loops", [False, True])
def test_keep_duplicates_and_self_loops(keep_duplicates, keep_self_loops):
    rng = np.random.default_rng(2)
    src, dst, w = random_edges(rng, 12, 200, True)
    rules = {"keep_duplicates": keep_duplicates, "keep_self_loops": keep_self_loops}
    attrs, arrays = build_in_memory(edges_from_arrays(src, dst, w, 12),
                                    Options(page_edges=16, **rules))
    check_store(arrays, attrs, src, dst, w, **rules)
    assert attrs.self_loops_removed == (0 if keep_self_loops else int((src == dst).sum()))
    assert (attrs.duplicates_removed == 0) == keep_duplicates


@pytest.mark.parametrize("weighted", [False, True])
def test_symmetrize_stores_csr_once(tmp_path, weighted):
    rng = np.random.default_rng(3)
    src, dst, w = random_edges(rng, 40, 300, weighted)
    path = write_store(edges_from_arrays(src, dst, w, 40), tmp_path / "g.zarr",
                       Options(symmetrize=True, page_edges=32))
    store = Store(path)
    assert store.attrs.symmetric and not store.attrs.directed
    assert not (path / "csr").exists()
    arrays = read_all(path)
    check_store(arrays, store.attrs, src, dst, w, symmetrize=True)
    g = Graph.open(path)
    for got, want in zip(g.csr(), g.csc(), strict=True):
        np.testing.assert_array_equal(got, want)


def test_symmetric_matrix_market_is_stored_once(tmp_path):
    mtx = tmp_path / "g.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real symmetric\n"
                   "4 4 4\n2 1 1.5\n3 1 2.5\n4 3 0.5\n3 3 9\n")
    path = preprocess(mtx, tmp_path / "g.zarr")
    store = Store(path)
    assert store.attrs.symmetric and store.attrs.weighted and not (path / "csr").exists()
    src, dst, w = [1, 2, 3, 2], [0, 0, 2, 2], [1.5, 2.5, 0.5, 9]  # 0-based, lower triangle
    check_store(read_all(path), store.attrs, src, dst, w, symmetrize=True)
    assert store.attrs.self_loops_removed == 1


def test_grid_generator_is_stored_once(tmp_path):
    source = grid(5, 7, 0.2, seed=3)
    path = write_store(source, tmp_path / "g.zarr", Options(page_edges=16))
    store = Store(path)
    assert store.attrs.symmetric and not (path / "csr").exists()
    chunks = list(source.chunks())
    src = np.concatenate([c.src for c in chunks])
    dst = np.concatenate([c.dst for c in chunks])
    check_store(read_all(path), store.attrs, src, dst)


def test_in_memory_graph_equals_store(tmp_path):
    rng = np.random.default_rng(4)
    src, dst, w = random_edges(rng, 30, 400, True)
    path = write_store(edges_from_arrays(src, dst, w), tmp_path / "g.zarr",
                       Options(page_edges=64))
    attrs, arrays = build_in_memory(edges_from_arrays(src, dst, w), Options(page_edges=64))
    on_disk = read_all(path)
    assert set(arrays) == set(on_disk)
    for name, data in on_disk.items():
        np.testing.assert_array_equal(arrays[name], data, err_msg=name)
    assert comparable(attrs) == comparable(Store(path).attrs)


def test_preprocess_accepts_matrix_tuple_and_path(tmp_path):
    matrix = sp.random_array((20, 20), density=0.2, rng=5, format="csr",
                             dtype=np.float32)
    coo = matrix.tocoo()
    np.savetxt(tmp_path / "g.wel", np.c_[coo.row, coo.col, coo.data], fmt="%d %d %.9g")
    stores = [preprocess(matrix, tmp_path / "a.zarr"),
              preprocess((coo.row, coo.col, coo.data), tmp_path / "b.zarr"),
              preprocess(tmp_path / "g.wel", tmp_path / "c.zarr")]
    for path in stores:
        check_store(read_all(path), Store(path).attrs, coo.row, coo.col, coo.data)


def test_random_weights_are_symmetric_and_seeded():
    src, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0])
    spec = Options(symmetrize=True, random_weights=(1, 255), seed=7)
    attrs, arrays = build_in_memory(edges_from_arrays(src, dst), spec)
    assert attrs.weighted
    n = attrs.num_vertices
    a = sp.csc_array((arrays["csc/weights"], arrays["csc/indices"], arrays["csc/indptr"]),
                     (n, n))
    assert (a != a.T).nnz == 0
    w = arrays["csc/weights"]
    assert ((w >= 1) & (w <= 255) & (w == np.round(w))).all()
    _, again = build_in_memory(edges_from_arrays(src, dst), spec)
    np.testing.assert_array_equal(again["csc/weights"], w)


# --------------------------------------------------------------------------- pages
def test_page_boundaries(tmp_path):
    # In-degrees: v0 3 (crosses into page 1), v1 0, v2 10 (more than a page), v3 2,
    # v4 0, v5 1; four pages of 4 edges.
    dst = np.repeat([0, 2, 3, 5], [3, 10, 2, 1])
    src = np.r_[1, 2, 3, np.arange(10) + 3, 0, 1, 4] % 16
    src[dst == src] = 15
    w = np.arange(len(src), dtype=np.float32)
    path = write_store(edges_from_arrays(src, dst, w, 16), tmp_path / "g.zarr",
                       Options(page_edges=4))
    store = Store(path)
    arrays = read_all(path)
    check_store(arrays, store.attrs, src, dst, w)
    assert store.attrs.num_pages == 4
    np.testing.assert_array_equal(arrays["pages/first_vertex"], [0, 2, 2, 2])
    np.testing.assert_array_equal(arrays["pages/last_vertex"], [2, 2, 2, 5])
    in_deg = np.diff(arrays["csc/indptr"])
    assert in_deg[[1, 4]].tolist() == [0, 0] and len(in_deg) == 16
    assert_pages_are_chunks(path, store, arrays)


def test_graph_smaller_than_one_page(tmp_path):
    path = write_store(edges_from_arrays([0, 1, 2], [1, 2, 0], [1.0, 2.0, 3.0]),
                       tmp_path / "g.zarr", Options(page_edges=1024))
    store = Store(path)
    assert store.attrs.num_pages == 1 and store.attrs.num_edges == 3
    arrays = read_all(path)
    np.testing.assert_array_equal(arrays["pages/first_vertex"], [0])
    np.testing.assert_array_equal(arrays["pages/last_vertex"], [2])
    assert_pages_are_chunks(path, store, arrays)
    slot = np.full(1024, -1, np.int32)
    assert Graph.open(path).read_page(0, slot) == 3
    np.testing.assert_array_equal(slot[:3], [2, 0, 1])


def assert_pages_are_chunks(path: Path, store: Store, arrays: dict) -> None:
    """Page p is exactly chunk file p of csc/indices and csc/weights, zero-padded."""
    pe, m = store.attrs.page_edges, store.attrs.num_edges
    for name, dtype in (("csc/indices", "<i4"), ("csc/weights", "<f4")):
        if name not in arrays:
            continue
        padded = np.zeros(store.attrs.num_pages * pe, dtype)
        padded[:m] = arrays[name]
        for p in range(store.attrs.num_pages):
            raw = np.fromfile(path / name / "c" / str(p), dtype=dtype)
            np.testing.assert_array_equal(raw, padded[p * pe:(p + 1) * pe], err_msg=name)


@pytest.mark.parametrize("symmetrize", [False, True])
def test_compressed_store_round_trips(tmp_path, symmetrize):
    rng = np.random.default_rng(6)
    src, dst, w = random_edges(rng, 50, 600, True)
    opts = {"page_edges": 128, "symmetrize": symmetrize}
    plain = write_store(edges_from_arrays(src, dst, w, 50), tmp_path / "p.zarr",
                        Options(**opts))
    packed = write_store(edges_from_arrays(src, dst, w, 50), tmp_path / "c.zarr",
                         Options(compress=True, **opts))
    store = Store(packed)
    assert store.attrs.compression == "blosc-lz4"
    assert zarr_codecs(packed / "csc/indices") == ["bytes", "blosc"]
    a, b = read_all(plain), read_all(packed)
    assert set(a) == set(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    slot = np.empty(128, np.int32)
    count = store.read_chunk_into("csc/indices", 1, slot)
    np.testing.assert_array_equal(slot[:count], a["csc/indices"][128:256])


def zarr_codecs(array_dir: Path) -> list[str]:
    import json

    meta = json.loads((array_dir / "zarr.json").read_text())
    return [c["name"] for c in meta["codecs"]]


# --------------------------------------------------------------------------- relabelling
def test_sparse_ids_are_relabelled(tmp_path):
    ids = np.array([10, 10**6, 2**40])
    src, dst = ids[[0, 1, 2, 2]], ids[[1, 2, 0, 1]]
    path = write_store(edges_from_arrays(src, dst, [1.0, 2.0, 3.0, 4.0]), tmp_path / "g.zarr")
    store = Store(path)
    assert store.attrs.relabelled and store.attrs.num_vertices == 3
    arrays = read_all(path)
    np.testing.assert_array_equal(arrays["vertices/original_id"], ids)
    check_store(arrays, store.attrs, [0, 1, 2, 2], [1, 2, 0, 1], [1.0, 2.0, 3.0, 4.0])
    g = Graph.open(path)
    np.testing.assert_array_equal(g.vertex_ids, ids)
    assert g.vertex_index(2**40) == 2
    with pytest.raises(InputError, match="not a vertex"):
        g.vertex_index(11)


@pytest.mark.parametrize(("ids", "relabelled"), [([0, 2, 4, 5], False), ([0, 3], False),
                                                 ([0, 4], True), ([7], True)])
def test_dense_ids_are_kept(ids, relabelled):
    # Kept when at least half of 0..max occur; then the missing ids are isolated vertices.
    ids = np.array(ids)
    src, dst = ids, np.roll(ids, 1)
    attrs, arrays = build_in_memory(edges_from_arrays(src, dst), Options(keep_self_loops=True))
    assert attrs.relabelled == relabelled
    if relabelled:
        assert attrs.num_vertices == len(ids)
        np.testing.assert_array_equal(arrays["vertices/original_id"], ids)
    else:
        assert attrs.num_vertices == ids.max() + 1 and "vertices/original_id" not in arrays
        in_deg = np.diff(arrays["csc/indptr"])
        missing = np.setdiff1d(np.arange(ids.max() + 1), ids)
        assert (in_deg[missing] == 0).all() and (in_deg[ids] == 1).all()


def test_known_vertex_count_keeps_isolated_vertices():
    attrs, arrays = build_in_memory(edges_from_arrays([0], [1], num_vertices=1000))
    assert attrs.num_vertices == 1000 and not attrs.relabelled
    assert len(arrays["csc/indptr"]) == 1001 and len(arrays["csr/indptr"]) == 1001


def test_edgeless_graph_of_known_size():
    attrs, arrays = build_in_memory(edges_from_arrays(np.array([], int), np.array([], int),
                                                      num_vertices=5))
    assert (attrs.num_vertices, attrs.num_edges, attrs.num_pages) == (5, 0, 0)
    np.testing.assert_array_equal(arrays["csc/indptr"], np.zeros(6))


# --------------------------------------------------------------------------- out of core
@pytest.mark.parametrize(("weighted", "symmetrize"), [(False, False), (True, True)])
def test_out_of_core_store_is_identical(tmp_path, monkeypatch, weighted, symmetrize):
    rng = np.random.default_rng(7)
    src, dst, w = random_edges(rng, 3000, 100_000, weighted)
    src[:50] = 10**9  # sparse ids: relabelled, through the cached parsed chunks
    spills = {"buckets": 0, "parsed": 0}
    # The writer partitions edges itself only to spill them into bucket files.
    monkeypatch.setattr(writer, "partition", counting(writer.partition, spills, "buckets"))
    monkeypatch.setattr(np, "save", counting(np.save, spills, "parsed"))
    opts = {"page_edges": 4096, "symmetrize": symmetrize}
    small = write_store(chunked(src, dst, w, chunk=10_000), tmp_path / "small.zarr",
                        Options(memory=1 << 20, **opts))
    assert spills["buckets"] > 0 and spills["parsed"] > 0
    spills.update(buckets=0, parsed=0)
    big = write_store(chunked(src, dst, w, chunk=10_000), tmp_path / "big.zarr",
                      Options(**opts))
    assert spills == {"buckets": 0, "parsed": 0}
    a, b = read_all(small), read_all(big)
    assert set(a) == set(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert comparable(Store(small).attrs) == comparable(Store(big).attrs)
    check_store(a, Store(small).attrs, *relabel(src, dst), w, symmetrize=symmetrize)
    assert sorted(os.listdir(tmp_path)) == ["big.zarr", "small.zarr"]  # no spill left


def relabel(src, dst) -> tuple[np.ndarray, np.ndarray]:
    _, inverse = np.unique(np.r_[src, dst], return_inverse=True)
    return inverse[: len(src)], inverse[len(src):]


def counting(fn, counts: dict, key: str):
    def wrapped(*args, **kwargs):
        counts[key] += 1
        return fn(*args, **kwargs)

    return wrapped


# --------------------------------------------------------------------------- hypothesis
@st.composite
def edge_lists(draw):
    n = draw(st.integers(1, 12))
    m = draw(st.integers(0 if draw(st.booleans()) else 1, 40))
    ids = st.lists(st.integers(0, n - 1), min_size=m, max_size=m)
    src, dst = np.array(draw(ids), np.int64), np.array(draw(ids), np.int64)
    weights = draw(st.one_of(st.none(), st.lists(
        st.sampled_from([0.0, 0.5, 1.0, 2.5, 1e30]), min_size=m, max_size=m)))
    return src, dst, None if weights is None else np.array(weights, np.float32), n


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(edges=edge_lists(), symmetrize=st.booleans(), keep_duplicates=st.booleans(),
       keep_self_loops=st.booleans(), log_page=st.integers(0, 4), spill=st.booleans())
def test_hypothesis_round_trip(edges, symmetrize, keep_duplicates, keep_self_loops, log_page,
                               spill):
    src, dst, w, n = edges
    rules = {"symmetrize": symmetrize, "keep_duplicates": keep_duplicates,
             "keep_self_loops": keep_self_loops}
    opts = Options(page_edges=1 << log_page, memory=1 << 20, **rules)
    # Pretend each edge costs 100 KiB so that even these tiny graphs spill into many
    # buckets and sort in many groups.
    cost = (lambda e, k, weighted: (e + k) * 100 << 10) if spill else writer._sweep_bytes
    with mock.patch.object(writer, "_sweep_bytes", cost):
        attrs, arrays = build_in_memory(edges_from_arrays(src, dst, w, n), opts)
    assert attrs.num_vertices == n and attrs.weighted == (w is not None)
    check_store(arrays, attrs, src, dst, w, **rules)


# --------------------------------------------------------------------------- errors
def test_options_are_checked():
    source = edges_from_arrays([0], [1])
    with pytest.raises(InputError, match="power of two"):
        build_in_memory(source, Options(page_edges=1000))
    with pytest.raises(InputError, match="too small"):
        build_in_memory(source, Options(memory=1000))


def test_out_of_range_id_names_the_id():
    source = chunked(np.array([0, 1]), np.array([1, 7]), num_vertices=5)
    with pytest.raises(InputError, match=r"vertex id 7 is out of range for 5 vertices"):
        build_in_memory(source)


def test_empty_input_is_refused():
    source = chunked(np.zeros(0, np.int64), np.zeros(0, np.int64))
    with pytest.raises(InputError, match="no edges"):
        build_in_memory(source)


# --------------------------------------------------------------------------- store_info
def test_store_info(tmp_path):
    src = np.array([0, 0, 0, 1, 2, 2, 3])
    dst = np.array([1, 1, 2, 2, 0, 2, 0])  # one duplicate, one self-loop
    path = preprocess((src, dst), tmp_path / "g.zarr", page_edges=2,
                      command="seraph preprocess edges")
    info = store_info(path)
    assert (info["num_vertices"], info["num_edges"], info["num_pages"]) == (4, 5, 3)
    assert info["directed"] and not info["weighted"] and info["compression"] == "none"
    assert info["in_degree"] == {"max": 2, "mean": 1.25, "zero": 1}  # 0:2 1:1 2:2 3:0
    assert info["out_degree"] == {"max": 2, "mean": 1.25, "zero": 0}  # 0:2 1:1 2:1 3:1
    assert info["self_loops_removed"] == 1 and info["duplicates_removed"] == 1
    assert info["format_version"] == 1 and not info["relabelled"]
    disk = info["bytes_on_disk"]
    assert disk["csc/indices"] == disk["csr/indices"] == 3 * 2 * 4  # 3 pages of 2 int32
    assert disk["csc/indptr"] == 5 * 8
    source = info["source"]
    assert source["command"] == "seraph preprocess edges"
    assert source["input_edges"] == 7 and source["input"] == "arrays"
    assert source["created"][:4].isdigit() and "T" in source["created"]
    assert {"seraph", "numpy", "numba", "zarr", "python"} <= set(source["versions"])


def test_generator_provenance(tmp_path):
    path = write_store(rmat(6, 4, seed=3), tmp_path / "g.zarr", command="seraph generate")
    source = store_info(path)["source"]
    assert source["generator"] == "rmat" and source["scale"] == 6 and source["seed"] == 3
    assert source["command"] == "seraph generate"
