"""The store format: atomic writes, and validation with clear messages when a store is opened.

A write that fails part-way (full disk, Ctrl-C, a failed fsync) must leave neither a store
nor a temporary directory behind, and a forced rewrite that fails must keep the old store.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
from pathlib import Path

import numpy as np
import pytest
import zarr

import seraph
from partitioner.edges import EdgeChunk, EdgeSource
from partitioner.readers import edges_from_arrays
from partitioner.writer import Options, write_store
from seraph import progress, temporaries
from seraph import store as store_module
from seraph.errors import StoreError
from seraph.graph import Graph
from seraph.store import SAMPLE, Store, StoreWriter

SRC = np.array([0, 1, 2, 3, 4, 5, 6, 7, 0, 2, 4])
DST = np.array([1, 2, 3, 4, 5, 6, 7, 0, 4, 6, 0])
W = np.arange(len(SRC), dtype=np.float32)


def make_store(path: Path, force: bool = False, **options) -> Path:
    """A weighted directed store of 11 edges in 3 pages of 4."""
    opts = {"page_edges": 4, **options}
    return write_store(edges_from_arrays(SRC, DST, W), path, Options(**opts), force=force)


@pytest.fixture
def good(tmp_path) -> Path:
    return make_store(tmp_path / "g.zarr")


def leftovers(directory: Path) -> list[str]:
    """Temporary stores or spill directories left in ``directory``."""
    return sorted(p.name for p in directory.iterdir() if ".tmp-" in p.name
                  or ".spill-" in p.name or ".old-" in p.name)


def set_attr(path: Path, **changes) -> None:
    meta = path / "zarr.json"
    doc = json.loads(meta.read_text())
    doc["attributes"].update(changes)
    meta.write_text(json.dumps(doc))


# --------------------------------------------------------------------------- atomic writes
class Boom(Exception):
    pass


def fail_on_call(fn, n: int, exc: BaseException):
    """``fn`` that raises ``exc`` on its n-th call."""
    calls = {"n": 0}

    def wrapped(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == n:
            raise exc
        return fn(*args, **kwargs)

    return wrapped


@pytest.mark.parametrize("call", [1, 3])
def test_disk_full_mid_write_leaves_nothing(tmp_path, monkeypatch, call):
    enospc = OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(StoreWriter, "write_chunk",
                        fail_on_call(StoreWriter.write_chunk, call, enospc))
    with pytest.raises(StoreError, match="disk full while writing .*g.zarr"):
        make_store(tmp_path / "g.zarr")
    assert not (tmp_path / "g.zarr").exists()
    assert leftovers(tmp_path) == []


def test_disk_full_while_spilling_parsed_edges(tmp_path, monkeypatch):
    # A 1 MiB budget makes pass 1 spill its parsed chunks with np.save.
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 10**6, 60_000), rng.integers(0, 10**6, 60_000)
    monkeypatch.setattr(np, "save", fail_on_call(np.save, 1, OSError(errno.ENOSPC, "full")))
    with pytest.raises(StoreError, match="disk full"):
        write_store(edges_from_arrays(src, dst), tmp_path / "g.zarr", Options(memory=1 << 20))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_disk_full_before_the_first_edge_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(Path, "write_text", fail_on_call(Path.write_text, 1,
                                                         OSError(errno.ENOSPC, "full")))
    with pytest.raises(StoreError, match="disk full"):
        make_store(tmp_path / "g.zarr")
    assert list(tmp_path.iterdir()) == []


def test_interrupt_mid_write_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(StoreWriter, "write_chunk",
                        fail_on_call(StoreWriter.write_chunk, 2, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        make_store(tmp_path / "g.zarr")
    assert not (tmp_path / "g.zarr").exists()
    assert leftovers(tmp_path) == []


def test_failed_write_removes_the_folders_it_made(tmp_path, monkeypatch):
    monkeypatch.setattr(StoreWriter, "write_chunk",
                        fail_on_call(StoreWriter.write_chunk, 2, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        make_store(tmp_path / "new" / "deeper" / "g.zarr")
    assert list(tmp_path.iterdir()) == []


def test_interrupt_while_reading_leaves_nothing(tmp_path):
    def chunks():
        yield EdgeChunk(np.arange(1000) % 7, np.arange(1000) % 5)
        raise KeyboardInterrupt

    source = EdgeSource(chunks=chunks, weighted=False)  # unknown size: pass 1 reads
    with pytest.raises(KeyboardInterrupt):
        write_store(source, tmp_path / "g.zarr", Options(memory=1 << 20))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_failed_fsync_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "_fsync",
                        fail_on_call(store_module._fsync, 2, OSError(errno.EIO, "I/O error")))
    with pytest.raises(StoreError, match="writing .*g.zarr failed: .*I/O error"):
        make_store(tmp_path / "g.zarr")
    assert not (tmp_path / "g.zarr").exists()
    assert leftovers(tmp_path) == []


def test_existing_output_is_refused_unless_forced(tmp_path, good):
    before = {p.name: p.stat().st_mtime_ns for p in good.rglob("*")}
    with pytest.raises(StoreError, match="already exists.*force"):
        make_store(good)
    assert {p.name: p.stat().st_mtime_ns for p in good.rglob("*")} == before
    replaced = make_store(good, force=True, symmetrize=True)
    assert Store(replaced).attrs.symmetric
    assert leftovers(tmp_path) == []


def test_failed_forced_write_keeps_the_old_store(tmp_path, monkeypatch, good):
    monkeypatch.setattr(StoreWriter, "write_chunk",
                        fail_on_call(StoreWriter.write_chunk, 2, OSError(errno.ENOSPC, "full")))
    with pytest.raises(StoreError, match="disk full"):
        make_store(good, force=True, symmetrize=True)
    assert not Store(good).attrs.symmetric  # still the old, valid store
    assert leftovers(tmp_path) == []


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (or ``path`` itself) with its contents."""
    if path.is_file():
        return {path.name: path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def user_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "g.zarr"
    folder.mkdir()
    (folder / "keep.txt").write_text("the user's notes")
    return folder


def user_file(tmp_path: Path) -> Path:
    target = tmp_path / "g.zarr"
    target.write_text("not a store")
    return target


def store_with_a_user_file(tmp_path: Path) -> Path:
    store = make_store(tmp_path / "g.zarr")
    (store / "csc" / "notes.txt").write_text("mine")
    return store


def folder_with_a_foreign_zarr_group(tmp_path: Path) -> Path:
    group = zarr.open_group(tmp_path / "g.zarr", mode="w")
    group.create_array("data", shape=(4,), dtype="int32")[:] = 7
    return tmp_path / "g.zarr"


@pytest.mark.parametrize("make, reason", [
    (user_file, "is a file"),
    (user_folder, "is a folder that is not a Seraph store"),
    (folder_with_a_foreign_zarr_group, "is a folder that is not a Seraph store"),
    (store_with_a_user_file, r"also holds other files \(csc/notes.txt\)")])
def test_force_refuses_what_is_not_a_store_and_keeps_it(tmp_path, make, reason):
    target = make(tmp_path)
    before = snapshot(target)
    with pytest.raises(StoreError, match=f"{reason}; --force replaces only a Seraph store"):
        make_store(target, force=True)
    assert snapshot(target) == before
    assert leftovers(tmp_path) == []


def test_force_refuses_a_symlink_and_keeps_its_target(tmp_path, good):
    link = tmp_path / "link.zarr"
    link.symlink_to(good)
    with pytest.raises(StoreError, match="is a symbolic link"):
        make_store(link, force=True)
    assert link.is_symlink() and Store(good).attrs.num_edges == len(SRC)


def test_force_replaces_an_incomplete_store(tmp_path, good):
    set_attr(good, complete=False)
    make_store(good, force=True, symmetrize=True)
    assert Store(good).attrs.symmetric
    assert leftovers(tmp_path) == []


def test_writer_context_removes_its_directory(tmp_path, good):
    attrs = Store(good).attrs
    with pytest.raises(Boom), StoreWriter(tmp_path / "new.zarr", attrs) as writer:
        writer.write_array("csc/indptr", np.zeros(3, np.int64))
        raise Boom
    assert list(tmp_path.iterdir()) == [good]


def test_commit_refuses_an_output_that_appeared(tmp_path, good):
    attrs = Store(good).attrs
    with pytest.raises(StoreError, match="appeared"), StoreWriter(tmp_path / "x.zarr",
                                                                 attrs) as writer:
        (tmp_path / "x.zarr").mkdir()
        writer.commit()
    assert leftovers(tmp_path) == []


def marked_dir(path: Path, host: str, pid: int) -> Path:
    path.mkdir()
    (path / temporaries.MARKER).write_text(json.dumps({"host": host, "pid": pid}))
    (path / "by-source-0.keys").write_bytes(b"spilled")
    return path


def test_leftovers_of_a_killed_run_are_removed_and_nothing_else(tmp_path, monkeypatch,
                                                                capsys):
    monkeypatch.setattr(progress, "_verbosity", 1)
    here, pid = socket.gethostname(), os.getpid()  # a live process, but none holds a lock
    spill = marked_dir(tmp_path / f".g.zarr.spill-{pid}-0123abcd", here, pid)
    # a store renamed aside by a commit, and one built to the end: neither has a marker
    old = make_store(tmp_path / "old.zarr").rename(tmp_path / f"g.zarr.old-{pid}-89abcdef")
    built = make_store(tmp_path / "tmp.zarr").rename(tmp_path / f"g.zarr.tmp-{pid}-01234567")
    empty = tmp_path / f"g.zarr.tmp-{pid}-fedcba98"
    empty.mkdir()
    # a store whose run was killed before its attributes or marker were written
    bare = tmp_path / f"g.zarr.tmp-{pid}-abcdef01"
    zarr.open_group(bare, mode="w")
    cut_short = marked_dir(tmp_path / f"g.zarr.tmp-{pid}-abcdef02", here, pid)
    (cut_short / temporaries.MARKER).write_text('{"host": ')
    live = temporaries.make_temp_dir(tmp_path / "g.zarr", "tmp")  # locked by this process
    kept = [live, marked_dir(tmp_path / f"g.zarr.tmp-{pid}-22222222", "another-host", pid),
            marked_dir(tmp_path / f"h.zarr.tmp-{pid}-33333333", here, pid),
            marked_dir(tmp_path / f"g.zarr.tmp-{pid}-4444444", here, pid),  # not our name
            user_folder(tmp_path).rename(tmp_path / f"g.zarr.tmp-{pid}-44444444")]
    try:
        make_store(tmp_path / "g.zarr")
    finally:
        temporaries.release(live)
    assert Store(tmp_path / "g.zarr").attrs.num_edges == len(SRC)
    assert not any(p.exists() for p in (spill, old, built, empty, bare, cut_short))
    assert all(p.exists() for p in kept)
    assert (kept[-1] / "keep.txt").read_text() == "the user's notes"
    err = capsys.readouterr().err.strip()
    assert err.startswith("removed what an interrupted earlier run left: ") and "\n" not in err
    assert spill.name in err and built.name in err and bare.name in err


def test_a_temporary_is_locked_while_it_lives(tmp_path):
    spill = temporaries.make_temp_dir(tmp_path / "g.zarr", "spill")
    assert temporaries.remove_leftovers(tmp_path / "g.zarr") == []
    temporaries.release(spill)  # as a killed process's locks go with it
    assert temporaries.remove_leftovers(tmp_path / "g.zarr") == [spill]
    assert list(tmp_path.iterdir()) == []


def test_a_second_interrupt_waits_for_the_cleanup(tmp_path):
    spill = temporaries.make_temp_dir(tmp_path / "g.zarr", "spill")
    with pytest.raises(KeyboardInterrupt), temporaries.signals_deferred():
        signal.raise_signal(signal.SIGINT)  # would interrupt the next line, if not held
        temporaries.remove_tree(spill)
    assert list(tmp_path.iterdir()) == []


def apparent_size(path: Path) -> int:
    """What a copy of the store takes: its files' sizes, holes and all."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def test_a_graph_smaller_than_a_page_takes_about_its_own_size(tmp_path):
    rng = np.random.default_rng(0)
    m, n = 312_000, 100_000
    source = edges_from_arrays(rng.integers(0, n, m), rng.integers(0, n, m),
                               rng.random(m, dtype=np.float32), num_vertices=n)
    path = write_store(source, tmp_path / "s.zarr")  # pages of up to 2^22 edges: one
    store = Store(path)
    a = store.attrs
    assert a.num_pages == 1 and a.page_edges == 1 << 19  # the power of two that holds it
    needed = 2 * a.num_edges * (4 + 4) + 2 * (n + 1) * 8 + 2 * a.num_pages * 8
    assert needed <= apparent_size(path) < 2 * needed
    group = zarr.open_group(path, mode="r")  # zarr still reads the padded page
    for name in ("csc/indices", "csc/weights", "csr/indices", "csr/weights"):
        np.testing.assert_array_equal(store.read(name), group[name][:], err_msg=name)


def test_a_small_grid_store_is_small(tmp_path):
    from partitioner.generators import grid

    path = write_store(grid(64, 64), tmp_path / "g.zarr")
    assert Store(path).attrs.page_edges == 1 << 14  # 16,128 edges
    assert apparent_size(path) < 1 << 20


def test_a_store_of_many_pages_pads_only_its_last(tmp_path):
    rng = np.random.default_rng(1)
    m = 5000
    path = write_store(edges_from_arrays(rng.integers(0, 1000, m), rng.integers(0, 1000, m)),
                       tmp_path / "many.zarr", Options(page_edges=1 << 10))
    a = Store(path).attrs
    assert a.page_edges == 1 << 10 and a.num_pages == -(-a.num_edges // a.page_edges) > 1
    chunks = path / "csc/indices/c"
    assert sum(f.stat().st_size for f in chunks.iterdir()) == a.num_pages * a.page_edges * 4


def test_a_store_with_a_page_larger_than_its_graph_still_opens(tmp_path, monkeypatch):
    """Stores written before pages were fitted to small graphs: one page of 2^16 edges,
    padded, holds 11."""
    from partitioner import writer

    monkeypatch.setattr(writer, "fitted_page_edges", lambda requested, edges: requested)
    path = make_store(tmp_path / "old.zarr", page_edges=1 << 16)
    assert (path / "csc/indices/c/0").stat().st_size == 4 << 16
    graph = Graph.open(path)
    assert graph.page_edges == 1 << 16 and graph.num_pages == 1
    slot = np.full(1 << 16, -1, np.int32)
    assert graph.read_page(0, slot) == len(SRC)
    np.testing.assert_array_equal(np.sort(slot[:len(SRC)]), np.sort(SRC))
    levels = seraph.bfs(graph, 0, device="cpu").levels
    assert levels.tolist() == [0, 1, 2, 3, 1, 2, 3, 4]


# --------------------------------------------------------------------------- validation
def test_valid_store_opens(good):
    store = Store(good)
    a = store.attrs
    assert a.complete and a.format == "seraph-graph" and a.version == 1
    assert (a.num_vertices, a.num_edges, a.num_pages, a.page_edges) == (8, 11, 3, 4)


def test_missing_store(tmp_path):
    with pytest.raises(StoreError, match="no such store"):
        Store(tmp_path / "nothing.zarr")


def test_missing_zarr_json(good):
    (good / "zarr.json").unlink()
    with pytest.raises(StoreError, match=r"no zarr.json.*seraph preprocess"):
        Store(good)


def test_unreadable_zarr_json(good):
    (good / "zarr.json").write_text("{not json")
    with pytest.raises(StoreError, match="unreadable zarr.json"):
        Store(good)


def test_wrong_format(good):
    set_attr(good, format="something-else")
    with pytest.raises(StoreError, match="not a Seraph graph store.*something-else"):
        Store(good)


@pytest.mark.parametrize("version, message", [
    ("1", r"format version is '1' \(str\), not an integer"),
    (1.0, r"format version is 1.0 \(float\), not an integer"),
    (True, r"format version is True \(bool\), not an integer"),
    (None, "format version is missing"),
    (0, "format version 0 is not a valid version")])
def test_a_version_that_is_not_a_known_integer_is_named_as_it_is(good, version, message):
    set_attr(good, version=version)
    with pytest.raises(StoreError, match=message) as err:
        Store(good)
    assert "newer" not in str(err.value)


def test_a_missing_version_says_missing(good):
    doc = json.loads((good / "zarr.json").read_text())
    del doc["attributes"]["version"]
    (good / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(StoreError, match="format version is missing") as err:
        Store(good)
    assert "None" not in str(err.value) and "newer" not in str(err.value)


def test_newer_version_names_both_versions(good):
    set_attr(good, version=2)
    with pytest.raises(StoreError, match=r"version 2 is newer.*\(version 1\).*upgrade"):
        Store(good)


def test_incomplete_store(good):
    set_attr(good, complete=False)
    with pytest.raises(StoreError, match="incomplete"):
        Store(good)
    with pytest.raises(StoreError, match="incomplete"):
        Graph.open(good)


def test_missing_attribute(good):
    doc = json.loads((good / "zarr.json").read_text())
    del doc["attributes"]["num_edges"]
    (good / "zarr.json").write_text(json.dumps(doc))
    with pytest.raises(StoreError, match="attributes are incomplete"):
        Store(good)


@pytest.mark.parametrize("name", ["csc/indptr", "csc/indices", "csc/weights", "csr/indptr",
                                  "pages/first_vertex"])
def test_missing_array(good, name):
    shutil.rmtree(good / name)
    with pytest.raises(StoreError, match=f"missing array '{name}'"):
        Store(good)


def test_wrong_shape(good):
    set_attr(good, num_vertices=9)
    with pytest.raises(StoreError, match=r"'csc/indptr' has shape \(9,\).*expected \(10,\)"):
        Store(good)


def test_a_weighted_store_keeps_its_sample_or_opens_without_one(good):
    """csc/sample is checked where present, and a store written before it opens without
    (its CC samples the rows)."""
    assert Graph.open(good).sample() is None  # directed: no components asked for
    good = make_store(good.parent / "s.zarr", symmetrize=True)
    group = zarr.open_group(good, mode="r+")
    n = Store(good).attrs.num_vertices
    assert Graph.open(good).sample().shape == (SAMPLE * n,)
    del group["csc/sample"]
    assert Graph.open(good).sample() is None
    group.create_array("csc/sample", shape=(SAMPLE * n - 1,), chunks=(4,), dtype="int32")
    with pytest.raises(StoreError, match=r"'csc/sample' has shape"):
        Store(good)


def test_wrong_dtype(good):
    group = zarr.open_group(good, mode="r+")
    del group["csc/indices"]
    group.create_array("csc/indices", shape=(11,), chunks=(4,), dtype="int64")
    with pytest.raises(StoreError, match="'csc/indices' has .*dtype int64, expected .*int32"):
        Store(good)


def test_pages_that_are_not_chunks(good):
    group = zarr.open_group(good, mode="r+")
    del group["csc/weights"]
    group.create_array("csc/weights", shape=(11,), chunks=(8,), dtype="float32")
    with pytest.raises(StoreError, match="chunks .* are not pages of 4 edges"):
        Store(good)


def test_page_count_mismatch(good):
    set_attr(good, num_pages=4)
    with pytest.raises(StoreError, match="num_pages=4 does not match"):
        Store(good)


def test_last_indptr_must_equal_num_edges(good):
    chunk = good / "csr/indptr/c/0"  # uncompressed: the raw little-endian int64s
    indptr = np.fromfile(chunk, "<i8")
    indptr[-1] -= 1
    indptr.tofile(chunk)
    with pytest.raises(StoreError, match="csr/indptr ends at 10 but num_edges is 11"):
        Store(good)


def test_truncated_page_file(good):
    page = good / "csc/indices/c/1"
    page.write_bytes(page.read_bytes()[:10])
    with pytest.raises(StoreError, match=r"page file csc/indices/c/1 is 10 bytes, expected 16"):
        Store(good)


def test_missing_page_file(good):
    (good / "csc/weights/c/2").unlink()
    with pytest.raises(StoreError, match="page file csc/weights/c/2 is missing"):
        Store(good)


def test_page_truncated_after_opening(good):
    store = Store(good)
    page = good / "csc/indices/c/0"
    page.write_bytes(page.read_bytes()[:4])
    with pytest.raises(StoreError, match="csc/indices/c/0 is truncated"):
        store.read_chunk_into("csc/indices", 0, np.empty(4, np.int32))


# --------------------------------------------------------------------------- reading
def test_raw_page_reads_match_zarr(good):
    store = Store(good)
    group = zarr.open_group(good, mode="r")
    for name in ("csc/indices", "csc/weights", "csr/indices", "csr/weights"):
        np.testing.assert_array_equal(store.read(name), group[name][:], err_msg=name)
    slot = np.full(4, -1, np.int32)
    assert store.read_chunk_into("csc/indices", 2, slot) == 3  # the last, partial page
    np.testing.assert_array_equal(slot[:3], group["csc/indices"][8:11])


def test_disk_bytes_counts_chunk_files(good):
    sizes = Store(good).disk_bytes()
    assert sizes["csc/indices"] == sizes["csc/weights"] == 3 * 4 * 4
    assert sizes["csc/indptr"] == sizes["csr/indptr"] == 9 * 8
    assert sizes["pages/first_vertex"] == 3 * 8


def test_compressed_store_skips_the_raw_checks(tmp_path):
    path = make_store(tmp_path / "c.zarr", compress=True)
    store = Store(path)
    np.testing.assert_array_equal(store.read("csc/weights"),
                                  zarr.open_group(path, mode="r")["csc/weights"][:])
    with pytest.raises(StoreError, match="unknown compression"):
        store_module._compressors("zstd")
