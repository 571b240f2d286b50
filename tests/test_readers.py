"""Tests of the input readers: every format, compression, weight mode and malformed input."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import tempfile
from pathlib import Path
from unittest import mock

import numba
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner import readers
from partitioner.edges import EdgeSource
from partitioner.readers import FORMATS, edges_from_arrays, edges_from_scipy, open_edge_file
from seraph.errors import ConfigError, InputError

COMPRESSORS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


def write(path: Path, text: str | bytes, compression: str = "") -> Path:
    """Writes ``text`` to ``path`` + ``compression`` (compressed accordingly)."""
    data = text.encode() if isinstance(text, str) else text
    path = path.with_name(path.name + compression)
    path.write_bytes(COMPRESSORS[compression](data) if compression else data)
    return path


def edges(source: EdgeSource) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """All edges of a source, concatenated, after checking the chunk invariants."""
    chunks = list(source.chunks())
    for c in chunks:
        assert c.src.dtype == np.int64 and c.dst.dtype == np.int64
        assert (c.weight is not None) == source.weighted
        assert c.weight is None or c.weight.dtype == np.float32
    src = np.concatenate([c.src for c in chunks]) if chunks else np.zeros(0, np.int64)
    dst = np.concatenate([c.dst for c in chunks]) if chunks else np.zeros(0, np.int64)
    weight = np.concatenate([c.weight for c in chunks]) if source.weighted and chunks else None
    return src, dst, weight


def edge_set(source: EdgeSource) -> list[tuple]:
    src, dst, weight = edges(source)
    if weight is None:
        return sorted(zip(src.tolist(), dst.tolist(), strict=True))
    return sorted(zip(src.tolist(), dst.tolist(), weight.tolist(), strict=True))


def raises(message: str):
    """pytest.raises(InputError) matching ``message`` literally."""
    return pytest.raises(InputError, match=re.escape(message))


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request, monkeypatch):
    """Runs a test with the block parser on one and on two threads, even for small blocks."""
    if request.param > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("needs two numba threads")
    monkeypatch.setattr(readers, "_PARALLEL_BYTES", 0)
    before = numba.get_num_threads()
    numba.set_num_threads(request.param)
    yield request.param
    numba.set_num_threads(before)


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of 16 bytes, so lines are carried across blocks and long lines grow them."""
    monkeypatch.setattr(readers, "_BLOCK_BYTES", 16)


# --------------------------------------------------------------------------- edge lists

MESSY = ("# SNAP-style header\n% another comment\n\n"
         "0\t1\n  2   3  \r\n\t4 \t5\t\n   \n   # indented comment\n6 7")


@pytest.mark.parametrize("ext, fmt", [(".txt", "snap"), (".snap", "snap"), (".tsv", "snap"),
                                      (".el", "el")])
def test_unweighted_formats_and_whitespace(tmp_path, ext, fmt):
    source = open_edge_file(write(tmp_path / f"g{ext}", MESSY))
    assert not source.weighted and source.num_vertices is None and not source.symmetric
    assert source.provenance["format"] == fmt
    src, dst, weight = edges(source)
    assert src.tolist() == [0, 2, 4, 6] and dst.tolist() == [1, 3, 5, 7] and weight is None


def test_weighted_edge_list(tmp_path):
    text = ("0 1 0.5\n1\t2\t3\r\n2 0 1e-3\n3 3 +2.5E2\n4 0 7\n5 0 -0\n6 0 .25\n7 0 4.\n"
            "8 0 3.4028235e38\n")
    source = open_edge_file(write(tmp_path / "g.wel", text))
    assert source.weighted
    src, dst, weight = edges(source)
    assert src.tolist() == list(range(9))
    np.testing.assert_array_equal(weight, np.array(
        [0.5, 3, 1e-3, 250, 7, 0, 0.25, 4, np.finfo(np.float32).max], dtype=np.float32))
    assert np.signbit(weight[5]) == 0  # "-0" becomes +0.0: the writer sorts weight bits


def test_third_column_is_ignored_unless_asked_for(tmp_path):
    path = write(tmp_path / "g.txt", "0 1 9\n1 2 x\n")
    assert edge_set(open_edge_file(path)) == [(0, 1), (1, 2)]
    with raises(f"{path}:2: malformed weight in line '1 2 x'"):
        edges(open_edge_file(path, weights="file"))
    path = write(tmp_path / "g.wel", "0 1 9\n1 2 8\n")
    assert edge_set(open_edge_file(path, weights="none")) == [(0, 1), (1, 2)]
    assert edge_set(open_edge_file(path, weights="file")) == [(0, 1, 9.0), (1, 2, 8.0)]


def test_explicit_format_overrides_extension(tmp_path):
    path = write(tmp_path / "edges.dat", "0 1 2\n")
    with raises("--format"):
        open_edge_file(path)
    assert edge_set(open_edge_file(path, format="wel")) == [(0, 1, 2.0)]


def test_largest_id(tmp_path):
    big = (1 << 63) - 1
    path = write(tmp_path / "g.el", f"{big} 0\n00000000000000000000001 {big}\n")
    assert edge_set(open_edge_file(path)) == [(1, big), (big, 0)]


@pytest.mark.parametrize("line, what", [
    ("1.5 2", "non-integer vertex id"),
    ("abc 2", "non-integer vertex id"),
    ("1 2x", "non-integer vertex id"),
    ("1 -", "non-integer vertex id"),
    ("-1 2", "negative vertex id"),
    ("1 -2", "negative vertex id"),
    ("9223372036854775808 1", "vertex id larger than 2^63-1"),
    ("99999999999999999999 1", "vertex id larger than 2^63-1"),
    ("7", "missing destination vertex id"),
    ("1 2 3 4", "too many columns (expected at most 3)"),
    ("1 2 3 # trailing comment", "too many columns (expected at most 3)"),
])
def test_bad_edge_list_lines(tmp_path, threads, line, what):
    path = write(tmp_path / "g.el", "# header\n0 1\n\n" + line + "\n5 6\n")
    with raises(f"{path}:4: {what} in line {line!r}"):
        edges(open_edge_file(path))


@pytest.mark.parametrize("token, what", [
    ("nan", "NaN weight"), ("-NaN", "NaN weight"), ("inf", "infinite weight"),
    ("Infinity", "infinite weight"), ("-inf", "infinite weight"), ("-1", "negative weight"),
    ("-0.5e-3", "negative weight"), ("1e39", "weight too large for float32"),
    ("1.2.3", "malformed weight"), ("1e", "malformed weight"), ("e5", "malformed weight"),
    (".", "malformed weight"), ("infinit", "malformed weight"), ("0x10", "malformed weight"),
])
def test_bad_weights(tmp_path, token, what):
    path = write(tmp_path / "g.wel", f"0 1 1\r\n2 3 {token}\r\n")
    with raises(f"{path}:2: {what} in line '2 3 {token}'"):
        edges(open_edge_file(path))


def test_missing_weight_column(tmp_path):
    path = write(tmp_path / "g.wel", "0 1 1\n2 3\n")
    with raises(f"{path}:2: missing weight column in line '2 3'"):
        edges(open_edge_file(path))
    path = write(tmp_path / "g.el", "0 1\n")
    with raises(f"{path}:1: missing weight column"):
        edges(open_edge_file(path, weights="file"))


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n% and another\n  \n"])
def test_empty_input(tmp_path, text):
    path = write(tmp_path / "g.txt", text)
    with raises(f"{path}: no edges found (empty input)"):
        edges(open_edge_file(path))


def test_error_line_numbers_across_blocks_and_threads(tmp_path, threads, monkeypatch):
    lines = [f"{i} {i + 1}" for i in range(150)]
    lines[116] = "116 bad"
    path = write(tmp_path / "g.el", "\n".join(lines) + "\n")
    for block in (24, 100, 1 << 20):
        monkeypatch.setattr(readers, "_BLOCK_BYTES", block)
        with raises(f"{path}:117: non-integer vertex id in line '116 bad'"):
            edges(open_edge_file(path))


def test_tiny_blocks_and_chunks(tmp_path, tiny_blocks, threads):
    """Lines straddle 16-byte blocks, a 60-byte comment outgrows one; chunks hold <= 3 edges."""
    lines = [f"{i}\t{2 * i}\t{i / 4}" for i in range(50)]
    lines.insert(7, "# " + "x" * 60)
    path = write(tmp_path / "g.wel", "\r\n".join(lines))
    source = open_edge_file(path, chunk_edges=3)
    assert all(0 < len(c) <= 3 for c in source.chunks())
    src, dst, weight = edges(source)
    np.testing.assert_array_equal(src, np.arange(50))
    np.testing.assert_array_equal(dst, 2 * np.arange(50))
    np.testing.assert_array_equal(weight, (np.arange(50) / 4).astype(np.float32))


def test_chunks_restart_on_every_call(tmp_path):
    path = write(tmp_path / "g.wel", "".join(f"{i} {i + 1} {i}\n" for i in range(100)), ".gz")
    source = open_edge_file(path, chunk_edges=7)
    first = [(c.src.copy(), c.dst.copy(), c.weight.copy()) for c in source.chunks()]
    second = list(source.chunks())
    assert len(first) == len(second) == 15
    for (s, d, w), c in zip(first, second, strict=True):
        np.testing.assert_array_equal(s, c.src)
        np.testing.assert_array_equal(d, c.dst)
        np.testing.assert_array_equal(w, c.weight)


# --------------------------------------------------------------------------- compression

TEXTS = {
    "g.txt": ("# c\n0 1\n1 2\n", [(0, 1), (1, 2)]),
    "g.el": ("0\t1\r\n1\t2\r\n", [(0, 1), (1, 2)]),
    "g.wel": ("0 1 1.5\n1 2 2.5\n", [(0, 1, 1.5), (1, 2, 2.5)]),
    "g.mtx": ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.5\n2 3 2.5\n",
              [(0, 1, 1.5), (1, 2, 2.5)]),
}


@pytest.mark.parametrize("compression", sorted(COMPRESSORS))
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_compressed(tmp_path, name, compression):
    text, expected = TEXTS[name]
    path = write(tmp_path / name, text, compression)
    source = open_edge_file(path)
    assert source.provenance == {"input": str(path), "format": readers._detect_format(path),
                                 "bytes": path.stat().st_size}
    assert edge_set(source) == expected


@pytest.mark.parametrize("compression", sorted(COMPRESSORS))
@pytest.mark.parametrize("name", ["g.el", "g.mtx"])
def test_truncated_compressed(tmp_path, name, compression):
    whole = COMPRESSORS[compression]((TEXTS[name][0] + "1 2 1\n" * 3000).encode())
    path = write(tmp_path / (name + compression), whole[: len(whole) // 2])
    with raises(f"{path}: truncated or corrupt compressed file"):
        edges(open_edge_file(path))


def test_not_compressed_at_all(tmp_path):
    path = write(tmp_path / "g.el", "0 1\n")
    path = path.rename(path.with_name("g.el.gz"))
    with raises(f"{path}: truncated or corrupt compressed file"):
        edges(open_edge_file(path))


# --------------------------------------------------------------------------- Matrix Market

MTX_ENTRIES = "1 2 {}\n3 1 {}\n2 2 {}\n"


@pytest.mark.parametrize("field", ["pattern", "integer", "real"])
@pytest.mark.parametrize("symmetry", ["general", "symmetric"])
def test_matrix_market(tmp_path, field, symmetry):
    values = {"pattern": ("", "", ""), "integer": ("5", "7", "9"), "real": ("0.5", "7e0", "9")}
    entries = MTX_ENTRIES.format(*values[field]).replace(" \n", "\n")
    text = (f"%%MatrixMarket matrix coordinate {field} {symmetry}\n% comment\n%\n\n"
            f"  4 4 3\n{entries}")
    source = open_edge_file(write(tmp_path / "m.mtx", text))
    assert source.num_vertices == 4 and source.symmetric == (symmetry == "symmetric")
    assert source.weighted == (field != "pattern")
    expected = [(0, 1), (2, 0), (1, 1)]  # 1-based file ids
    if symmetry == "symmetric":
        expected += [(1, 0), (0, 2)]  # the diagonal entry appears once
    if field != "pattern":
        w = {(0, 1): values[field][0], (2, 0): values[field][1], (1, 1): values[field][2]}
        expected = [(s, d, float(w.get((s, d)) or w[(d, s)])) for s, d in expected]
    assert edge_set(source) == sorted(expected)


def test_matrix_market_agrees_with_scipy(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "_BLOCK_BYTES", 256)
    rng = np.random.default_rng(5)
    a = sp.random_array((40, 40), density=0.1, format="coo", rng=rng)
    for symmetry in ("general", "symmetric"):
        m = a + a.T if symmetry == "symmetric" else a
        path = tmp_path / f"{symmetry}.mtx"
        scipy.io.mmwrite(path, m, symmetry=symmetry)
        got = edges(open_edge_file(path, chunk_edges=5))
        want = sp.coo_array(scipy.io.mmread(path))
        assert edge_set(open_edge_file(path)) == sorted(zip(
            want.row.tolist(), want.col.tolist(),
            want.data.astype(np.float32).tolist(), strict=True))
        assert len(got[0]) == want.nnz


def test_matrix_market_weights_modes(tmp_path):
    path = write(tmp_path / "m.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n"
                                     "1 2 -3.5\n")
    assert edge_set(open_edge_file(path, weights="none")) == [(0, 1)]
    with raises(f"{path}:3: negative weight in line '1 2 -3.5'"):
        edges(open_edge_file(path))
    pattern = write(tmp_path / "p.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                                        "2 2 1\n1 2\n")
    with raises("weights='file' but the matrix is a pattern"):
        open_edge_file(pattern, weights="file")


def test_matrix_market_without_entries(tmp_path):
    path = write(tmp_path / "m.mtx", "%%MatrixMarket matrix coordinate pattern general\n5 5 0\n")
    source = open_edge_file(path)
    assert source.num_vertices == 5 and edge_set(source) == []


MTX_HEADER_ERRORS = [
    ("1 2 3\n", "not a Matrix Market file"),
    ("%%MatrixMarket matrix coordinate\n", "not a Matrix Market file"),
    ("%%MatrixMarket tensor coordinate real general\n", "not a Matrix Market file"),
    ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
     "only coordinate format is supported"),
    ("%%MatrixMarket matrix coordinate complex general\n", "complex matrices are not supported"),
    ("%%MatrixMarket matrix coordinate double general\n", "unknown Matrix Market field"),
    ("%%MatrixMarket matrix coordinate real skew-symmetric\n",
     "Matrix Market symmetry 'skew-symmetric' is not supported"),
    ("%%MatrixMarket matrix coordinate integer hermitian\n",
     "Matrix Market symmetry 'hermitian' is not supported"),
    ("%%MatrixMarket matrix coordinate pattern general\n% only comments\n",
     "missing size line"),
    ("%%MatrixMarket matrix coordinate pattern general\n%\n3 3\n", ":3: malformed size line"),
    ("%%MatrixMarket matrix coordinate pattern general\n-3 -3 1\n", ":2: malformed size line"),
    ("%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 1\n", "the matrix is 3 x 4"),
]


@pytest.mark.parametrize("text, message", MTX_HEADER_ERRORS)
def test_matrix_market_header_errors(tmp_path, text, message):
    path = write(tmp_path / "m.mtx", text)
    with raises(f"{path}{'' if message.startswith(':') else ': '}{message}"):
        open_edge_file(path)


@pytest.mark.parametrize("body, message", [
    ("1 2\n0 1\n", ":4: entry index out of range 1..3 in line '0 1'"),
    ("1 2\n1 4\n", ":4: entry index out of range 1..3 in line '1 4'"),
    ("1 2\n1 2 1\n", ":4: too many columns (expected at most 2) in line '1 2 1'"),
    ("1 2\n", ": the size line says 2 entries but the file has 1"),
    ("1 2\n2 3\n% trailing comment\n3 1\n", ": the size line says 2 entries but the file has 3"),
])
def test_matrix_market_entry_errors(tmp_path, tiny_blocks, body, message):
    path = write(tmp_path / "m.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                                     "3 3 2\n" + body)
    with raises(f"{path}{message}"):
        edges(open_edge_file(path))


def test_matrix_market_missing_value(tmp_path):
    path = write(tmp_path / "m.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n"
                                     "%\n3 3 2\n1 2 4\n3 1\n")
    with raises(f"{path}:5: missing weight column in line '3 1'"):
        edges(open_edge_file(path))


# --------------------------------------------------------------------------- npz


def test_npz(tmp_path):
    path = tmp_path / "g.npz"
    np.savez(path, src=np.array([0, 1], np.int32), dst=np.array([1, 2], np.uint16),
             weight=np.array([0.5, 2.0]))
    source = open_edge_file(path)
    assert source.weighted and source.num_edges_hint == 2
    assert source.provenance["format"] == "npz"
    assert edge_set(source) == [(0, 1, 0.5), (1, 2, 2.0)]
    assert edge_set(open_edge_file(path, weights="none")) == [(0, 1), (1, 2)]
    np.savez(path, src=np.array([0, 1]), dst=np.array([1, 2]))
    assert edge_set(open_edge_file(path)) == [(0, 1), (1, 2)]
    with raises(f"{path}: weights='file' but the .npz has no 'weight' array"):
        open_edge_file(path, weights="file")


@pytest.mark.parametrize("arrays, message", [
    ({"src": [0, 1]}, "missing array 'dst'"),
    ({"a": [0]}, "missing array 'src'"),
    ({"src": [0, 1], "dst": [1]}, "arrays differ in length (src 2, dst 1)"),
    ({"src": [0.0], "dst": [1]}, "src must be an integer array, got float64"),
    ({"src": [0], "dst": [-1]}, "dst[0] = -1 is a negative vertex id"),
    ({"src": [0], "dst": [1], "weight": [np.nan]}, "weight[0] = nan is NaN"),
    ({"src": [], "dst": []}, "no edges (empty input)"),
])
def test_bad_npz(tmp_path, arrays, message):
    path = tmp_path / "g.npz"
    np.savez(path, **{k: np.array(v, dtype=np.int64 if v == [] else None)
                      for k, v in arrays.items()})
    with raises(f"{path}: {message}"):
        open_edge_file(path)


def test_not_an_npz(tmp_path):
    path = tmp_path / "g.npz"
    np.save(path.with_suffix(".npy"), np.arange(3))
    path.with_suffix(".npy").rename(path)
    with raises(f"{path}: not an .npz archive"):
        open_edge_file(path)
    path.write_text("0 1\n")
    with raises(f"{path}: not a readable .npz file"):
        open_edge_file(path)


# --------------------------------------------------------------------------- opening


def test_opening_errors(tmp_path):
    with raises(f"{tmp_path / 'none.el'}: no such file"):
        open_edge_file(tmp_path / "none.el")
    with raises(f"{tmp_path}: not a regular file"):
        open_edge_file(tmp_path)
    path = write(tmp_path / "g.csv.gz", "0 1\n")
    with raises("one of snap, el, wel, mtx, npz"):
        open_edge_file(path)
    with pytest.raises(ConfigError, match="unknown format 'csv'"):
        open_edge_file(path, format="csv")
    with pytest.raises(ConfigError, match="unknown weights mode 'random'"):
        open_edge_file(path, format="el", weights="random")
    assert FORMATS == ("snap", "el", "wel", "mtx", "npz")


# --------------------------------------------------------------------------- round trip

SEPARATORS = st.sampled_from([" ", "\t", "  ", " \t ", "\t\t"])
FILLER = st.sampled_from(["", "   ", "\t", "# a comment 1 2 3", "% 1 2", "  # 4 5", "#"])


def weight_text(w: float, style: int) -> str:
    return (repr(w), str(np.float32(w)), f"{w:.9E}")[style]


@st.composite
def edge_list_files(draw):
    """A random edge list and a text rendering of it with random layout."""
    n = draw(st.integers(1, 40))
    ids = st.integers(0, (1 << 63) - 1) | st.integers(0, 20)
    src = draw(st.lists(ids, min_size=n, max_size=n))
    dst = draw(st.lists(ids, min_size=n, max_size=n))
    weighted = draw(st.booleans())
    finite32 = st.floats(0, float(np.finfo(np.float32).max), width=32)
    weights = draw(st.lists(finite32, min_size=n, max_size=n))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = []
    for s, d, w in zip(src, dst, weights, strict=True):
        lines += draw(st.lists(FILLER, max_size=2))
        cols = [str(s), str(d)]
        if weighted:
            cols.append(weight_text(w, draw(st.integers(0, 2))))
        line = "".join(c + draw(SEPARATORS) for c in cols[:-1]) + cols[-1]
        lines.append(draw(st.sampled_from(["", " ", "\t"])) + line + draw(st.sampled_from(
            ["", " ", "\t "])))
    text = newline.join(lines) + draw(st.sampled_from(["", newline]))
    return src, dst, (np.array(weights, np.float32) if weighted else None), text


@settings(max_examples=50, deadline=None)
@given(case=edge_list_files(), block=st.sampled_from([32, 200, 1 << 20]),
       chunk=st.integers(1, 50))
def test_round_trip(case, block, chunk):
    src, dst, weight, text = case
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(readers, "_BLOCK_BYTES", block):
        path = write(Path(tmp) / ("g.wel" if weight is not None else "g.el"), text)
        got_src, got_dst, got_weight = edges(open_edge_file(path, chunk_edges=chunk))
    assert got_src.tolist() == src and got_dst.tolist() == dst
    if weight is not None:
        np.testing.assert_array_equal(got_weight, weight)


# --------------------------------------------------------------------------- arrays


def test_edges_from_arrays():
    src = np.array([0, 1, 2], np.int32)
    dst = np.array([1, 2, 0], np.uint8)
    source = edges_from_arrays(src, dst, weight=[1, 2.5, -0.0])
    assert source.weighted and source.num_vertices is None and source.num_edges_hint == 3
    got_src, got_dst, weight = edges(source)
    assert got_src.tolist() == [0, 1, 2] and got_dst.tolist() == [1, 2, 0]
    assert weight.tolist() == [1.0, 2.5, 0.0] and not np.signbit(weight).any()
    assert edges(source)[0].tolist() == [0, 1, 2]  # re-iterable
    assert not edges_from_arrays([3], [4]).weighted


def test_edges_from_arrays_chunks_are_views(monkeypatch):
    monkeypatch.setattr(readers, "DEFAULT_CHUNK_EDGES", 4)
    src = np.arange(10)
    chunks = list(edges_from_arrays(src, src).chunks())
    assert [len(c) for c in chunks] == [4, 4, 2]
    assert all(np.shares_memory(c.src, src) for c in chunks)


def test_isolated_vertices():
    source = edges_from_arrays(np.zeros(0, np.int64), np.zeros(0, np.int64), num_vertices=5)
    assert source.num_vertices == 5 and edge_set(source) == []
    with raises("no edges (empty input)"):
        edges_from_arrays(np.zeros(0, np.int64), np.zeros(0, np.int64))


@pytest.mark.parametrize("kwargs, message", [
    ({"src": [0.0, 1.0]}, "src must be an integer array, got float64"),
    ({"dst": [True, False]}, "dst must be an integer array, got bool"),
    ({"src": np.array([0, 1], dtype=object)}, "src must be an integer array, got object"),
    ({"src": [[0, 1]]}, "src must be one-dimensional"),
    ({"dst": [1, 2, 3]}, "arrays differ in length (src 2, dst 3)"),
    ({"weight": [1.0]}, "arrays differ in length (src 2, dst 2, weight 1)"),
    ({"src": [0, -4]}, "src[1] = -4 is a negative vertex id"),
    ({"src": np.array([0, 2**63], np.uint64)}, "src[1] = 9223372036854775808 is larger"),
    ({"num_vertices": 2}, "dst[1] = 2 is out of range for num_vertices=2"),
    ({"num_vertices": -1}, "num_vertices must be a non-negative integer"),
    ({"weight": [1.0, np.nan]}, "weight[1] = nan is NaN"),
    ({"weight": [np.inf, 1.0]}, "weight[0] = inf is infinite"),
    ({"weight": [0.0, -2.0]}, "weight[1] = -2.0 is negative"),
    ({"weight": [0, -2]}, "weight[1] = -2 is negative"),
    ({"weight": [1e300, 1.0]}, "weight[0] = 1e+300 is too large for float32"),
    ({"weight": [1j, 1j]}, "weight must be a real-valued array, got complex128"),
])
def test_bad_arrays(kwargs, message):
    args = {"src": [0, 1], "dst": [1, 2], **kwargs}
    with raises(message):
        edges_from_arrays(**args)


# --------------------------------------------------------------------------- scipy


@pytest.mark.parametrize("kind", [sp.csr_array, sp.csc_matrix, sp.coo_array, sp.lil_matrix])
def test_edges_from_scipy(kind):
    source = edges_from_scipy(kind(np.array([[0, 2, 0], [0, 0, 3.5], [1, 0, 0]])))
    assert source.weighted and source.num_vertices == 3 and not source.symmetric
    assert edge_set(source) == [(0, 1, 2.0), (1, 2, 3.5), (2, 0, 1.0)]


def test_explicit_zeros_are_edges():
    matrix = sp.csr_array((np.array([0.0, 4.0]), np.array([1, 0]), np.array([0, 1, 2])))
    assert edge_set(edges_from_scipy(matrix)) == [(0, 1, 0.0), (1, 0, 4.0)]


def test_bad_scipy():
    with raises("the matrix is 2 x 3; a graph needs a square adjacency matrix"):
        edges_from_scipy(sp.csr_array(np.ones((2, 3))))
    with raises("got a dense array; convert it with scipy.sparse.csr_array"):
        edges_from_scipy(np.ones((2, 2)))
    with raises("weight[0] = -1.0 is negative"):
        edges_from_scipy(sp.csr_array(-np.eye(2)))


# --------------------------------------------------------------------------- progress

@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2", ".xz"])
@pytest.mark.parametrize("name, text", [
    ("g.el", "".join(f"{i} {i + 1}\n" for i in range(200))),
    ("g.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n201 201 200\n"
              + "".join(f"{i + 2} {i + 1}\n" for i in range(200))),
])
def test_chunks_count_the_file_bytes_they_read(tmp_path, tiny_blocks, suffix, name, text):
    """The reading bar's total is the file's size, and the chunks' counts add up to it,
    in compressed bytes for a compressed file."""
    data = text.encode()
    compress = {"": bytes, ".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}
    path = tmp_path / f"{name}{suffix}"
    path.write_bytes(compress[suffix](data))
    source = open_edge_file(path)
    assert source.input_size == path.stat().st_size
    counts = [chunk.input_bytes for chunk in source.chunks()]
    assert sum(counts) == path.stat().st_size
    assert len(counts) > 1 and all(c >= 0 for c in counts)
