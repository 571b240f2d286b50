"""The Seraph graph store (zarr v3, format version 1): writing, opening and validating.

The layout is the contract between the partitioner and the engine (docs/design.md, "Store
format"; docs/store.md)::

    G.zarr/
      zarr.json            group attrs (see ``StoreAttrs``), complete=true once finished
      csc/indptr           int64 [n+1]
      csc/indices          int32 [m], chunk = one page of ``page_edges`` edges
      csc/weights          float32 [m] (weighted only), chunk = one page
      csc/sample           int32 [SAMPLE n] (weighted, symmetric): each row's smallest ids
      csr/...              the same for out-edges; absent when the graph is symmetric
      pages/first_vertex   int64 [P]
      pages/last_vertex    int64 [P]
      vertices/original_id int64 [n] (only when input ids were relabelled)
      vertices/by_input_id int64 [n] (renumbered stores: the vertices by input id)

Pages are chunks: reading page p of an uncompressed store is one read of one chunk file
straight into the caller's buffer (a pinned slot on the GPU path), with no zarr overhead.
Compressed stores (blosc-lz4) go through zarr.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zarr
import zarr.codecs
from zarr.storage import LocalStore

from seraph import temporaries
from seraph.errors import StoreError

FORMAT = "seraph-graph"
VERSION = 1

#: Chunk length of the per-vertex arrays (indptr, original ids); these are read whole.
VERTEX_CHUNK = 1 << 24
#: Neighbours a vertex keeps in ``csc/sample``: the sample of union-find's first step
#: (Afforest's), whose smallest-id neighbours keep its hooks near the low ids.
SAMPLE = 2


@dataclass
class StoreAttrs:
    """The group attributes of a store: everything needed to interpret its arrays."""

    num_vertices: int
    num_edges: int
    directed: bool
    symmetric: bool
    weighted: bool
    page_edges: int
    num_pages: int
    compression: str | None = None
    relabelled: bool = False
    #: ``input``: vertices in input-id order; otherwise (partitioner.order) renumbered,
    #: with ``vertices/by_input_id``
    vertex_order: str = "input"
    #: ``source``: each CSC row sorted by source; ``weight`` (weighted stores): by weight,
    #: the lightest in-edge first, ties by source (and ``csc/sample`` holds what a row
    #: sorted by source would begin with)
    row_order: str = "source"
    weight_dtype: str | None = None
    self_loops_removed: int = 0
    duplicates_removed: int = 0
    source: dict = field(default_factory=dict)
    format: str = FORMAT
    version: int = VERSION
    complete: bool = False


def _compressors(compression: str | None) -> Any:
    if compression is None:
        return None
    if compression == "blosc-lz4":
        return zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")
    raise StoreError(f"unknown compression {compression!r} (expected blosc-lz4 or none)")


def _chunk_file(root: Path, array: str, chunk: int) -> Path:
    # zarr v3 default chunk key encoding with "/" separator: <array>/c/<index>
    return root / array / "c" / str(chunk)


class StoreWriter:
    """Builds a store in a temporary sibling directory and renames it into place on commit.

    Until :meth:`commit` the directory is named ``NAME.tmp-<pid>-<hex>`` and its attrs say
    ``complete=false``, so a crash, Ctrl-C or full disk never leaves a store that opens as
    valid. Use as a context manager, which makes the directory: leaving the block with an
    exception removes it (see :mod:`seraph.temporaries` for what a killed run leaves).
    ``force`` allows replacing an existing Seraph store, and nothing else. Signals are held
    inside zarr's calls, which an exception raised there leaves with a coroutine never
    awaited.

    Chunk files are fsynced by a background thread as soon as they are written, so the
    disk catches up while the next pages are computed and :meth:`commit` waits only for
    the last of them.
    """

    def __init__(self, path: str | os.PathLike, attrs: StoreAttrs, *, force: bool = False):
        self.path = Path(path)
        temporaries.check_output(self.path, force)
        self.attrs = attrs
        self.tmp: Path | None = None  # made by __enter__
        self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seraph-fsync")
        self._fsyncs: list[Future] = []
        self._raw = attrs.compression is None

    # -- arrays ---------------------------------------------------------------------------
    def create(self, name: str, length: int, dtype: str, chunk: int) -> zarr.Array:
        with temporaries.signals_deferred():
            return self.group.create_array(
                name, shape=(length,), chunks=(max(1, chunk),), dtype=dtype,
                compressors=_compressors(self.attrs.compression), fill_value=0)

    def resize(self, arr: zarr.Array, length: int) -> None:
        with temporaries.signals_deferred():
            arr.resize((length,))

    def write_array(self, name: str, data: np.ndarray, chunk: int = VERTEX_CHUNK) -> None:
        """Writes a whole (per-vertex or per-page) array."""
        arr = self.create(name, len(data), data.dtype.str, min(chunk, max(1, len(data))))
        for index, start in enumerate(range(0, len(data), arr.chunks[0])):
            self.write_chunk(arr, name, index, data[start: start + arr.chunks[0]])

    def write_chunk(self, arr: zarr.Array, name: str, index: int, data: np.ndarray) -> None:
        """Writes chunk ``index`` of an array; ``data`` may be shorter only for the last."""
        chunk = arr.chunks[0]
        if not self._raw:
            with temporaries.signals_deferred():
                arr[index * chunk: index * chunk + len(data)] = data
            return
        # The uncompressed chunk is exactly the little-endian bytes, padded to full size
        # as zarr pads edge chunks; writing it ourselves avoids zarr's copies. The padding
        # (of the last page only, less than a page) is extended, not written: a hole where
        # the file system has them.
        buf = np.ascontiguousarray(data, dtype=arr.dtype.newbyteorder("<"))
        target = _chunk_file(self.tmp, name, index)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as f:
            f.write(buf.data)
            if len(buf) < chunk:
                f.truncate(chunk * buf.itemsize)
        self._fsyncs.append(self._syncer.submit(_fsync, target))

    # -- finishing ------------------------------------------------------------------------
    def commit(self, replace: bool = False) -> Path:
        """Syncs the store to disk, marks it complete and renames it into place.

        The rename is the commit point. A signal before it stops the commit (and leaving
        the block removes the store); one that comes during it is held until the store is
        in place and its folder synced, and raised then."""
        assert self.tmp is not None, "commit() outside the writer's `with` block"
        # result() raises the error of a failed fsync (a full disk, say).
        synced = {str(done.result()) for done in self._fsyncs}
        self.attrs.complete = True
        with temporaries.signals_deferred():
            self.group.attrs.update(asdict(self.attrs))
        (self.tmp / temporaries.MARKER).unlink()
        _fsync_tree(self.tmp, skip=synced)
        with temporaries.signals_deferred():
            temporaries.commit(self.tmp, self.path, replace)
            _fsync(self.path.parent)
            self._syncer.shutdown()
        return self.path

    def abort(self) -> None:
        with temporaries.signals_deferred():  # waiting for the syncer, too
            self._syncer.shutdown(cancel_futures=True)
            if self.tmp is not None:  # made (and not committed, or it is gone already)
                temporaries.remove_tree(self.tmp)

    def __enter__(self) -> StoreWriter:
        # The directory is made here, not in __init__, so that a signal between the two
        # calls leaves nothing; held while it is made, a signal is raised inside the try.
        # It is locked and marked before anything is written in it, and zarr.json is
        # written once, with the attributes that name it a Seraph store.
        try:
            with temporaries.signals_deferred():
                self.tmp = temporaries.make_temp_dir(self.path, "tmp")
                self.group = zarr.create_group(LocalStore(self.tmp),
                                               attributes=asdict(self.attrs))
        except BaseException:
            self.abort()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()


def _fsync(path: str | os.PathLike) -> str | os.PathLike:
    """fsyncs a file or directory; returns its path."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _fsync_tree(root: Path, skip: Collection[str] = ()) -> None:
    """fsyncs every file (except those in ``skip``) and directory under ``root``."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            if path not in skip:
                _fsync(path)
        _fsync(dirpath)


class Store:
    """An opened, validated store. Arrays are read lazily; pages are read by chunk."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.attrs = _read_attrs(self.path)
        self._group = zarr.open_group(LocalStore(self.path, read_only=True), mode="r")
        self._validate()

    # -- validation -----------------------------------------------------------------------
    def _array(self, name: str) -> zarr.Array:
        try:
            return self._group[name]  # type: ignore[return-value]
        except KeyError:
            raise StoreError(f"{self.path}: missing array {name!r}; the store is incomplete "
                             "or corrupt, preprocess the input again") from None

    def _validate(self) -> None:
        a = self.attrs
        n, m = a.num_vertices, a.num_edges
        expect: dict[str, tuple[int, str]] = {
            "csc/indptr": (n + 1, "int64"), "csc/indices": (m, "int32"),
            "pages/first_vertex": (a.num_pages, "int64"),
            "pages/last_vertex": (a.num_pages, "int64")}
        if a.weighted:
            expect["csc/weights"] = (m, "float32")
        if a.row_order == "weight" and self.has("csc/sample"):  # absent in older stores
            expect["csc/sample"] = (SAMPLE * n, "int32")
        if not a.symmetric:
            expect["csr/indptr"] = (n + 1, "int64")
            expect["csr/indices"] = (m, "int32")
            if a.weighted:
                expect["csr/weights"] = (m, "float32")
        if a.relabelled:
            expect["vertices/original_id"] = (n, "int64")
        if a.vertex_order != "input":
            expect["vertices/by_input_id"] = (n, "int64")
        if a.num_pages != -(-m // a.page_edges):
            raise StoreError(f"{self.path}: num_pages={a.num_pages} does not match "
                             f"num_edges={m} with page_edges={a.page_edges}")
        for name, (length, dtype) in expect.items():
            arr = self._array(name)
            if arr.shape != (length,) or arr.dtype != np.dtype(dtype):
                raise StoreError(f"{self.path}: array {name!r} has shape {arr.shape} and dtype "
                                 f"{arr.dtype}, expected ({length},) {dtype}")
            if name.endswith(("indices", "weights")) and arr.chunks != (a.page_edges,):
                raise StoreError(f"{self.path}: {name!r} chunks {arr.chunks} are not pages of "
                                 f"{a.page_edges} edges")
        for prefix in ("csc", "csr") if not a.symmetric else ("csc",):
            last = int(self._array(f"{prefix}/indptr")[n])
            if last != m:
                raise StoreError(f"{self.path}: {prefix}/indptr ends at {last} but num_edges is "
                                 f"{m}; the store is corrupt")
        if a.compression is None:
            self._check_chunk_files([k for k in expect if k.endswith(("indices", "weights"))])

    def _check_chunk_files(self, names: list[str]) -> None:
        """Catches truncated or missing page files up front instead of mid-run."""
        for name in names:
            arr = self._array(name)
            want = arr.chunks[0] * arr.dtype.itemsize
            for p in range(self.attrs.num_pages):
                f = _chunk_file(self.path, name, p)
                size = f.stat().st_size if f.exists() else -1
                if size != want:
                    state = "missing" if size < 0 else f"{size} bytes, expected {want}"
                    raise StoreError(f"{self.path}: page file {name}/c/{p} is {state}; the "
                                     "store is truncated or corrupt, preprocess again")

    # -- reading --------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        return name in self._group

    def read(self, name: str) -> np.ndarray:
        """Reads a whole array into host memory."""
        arr = self._array(name)
        if self.attrs.compression is None and name.endswith(("indices", "weights")):
            out = np.empty(arr.shape[0], dtype=arr.dtype)
            for p in range(self.attrs.num_pages):
                self.read_chunk_into(name, p, out[p * self.attrs.page_edges:])
            return out
        return np.asarray(arr[:])

    def read_chunk_into(self, name: str, page: int, out: np.ndarray) -> int:
        """Reads page ``page`` of a paged array into ``out`` and returns its edge count."""
        pe, m = self.attrs.page_edges, self.attrs.num_edges
        count = min(pe, m - page * pe)
        if self.attrs.compression is None:
            with open(_chunk_file(self.path, name, page), "rb") as f:
                got = f.readinto(memoryview(out[:count]).cast("B"))
            if got != count * out.itemsize:
                raise StoreError(f"{self.path}: page file {name}/c/{page} is truncated")
        else:
            out[:count] = self._array(name)[page * pe: page * pe + count]
        return count

    def disk_bytes(self) -> dict[str, int]:
        """Bytes on disk per array: those of its chunk files, not counting the hole that
        pads a short last page (see StoreWriter.write_chunk)."""
        sizes: dict[str, int] = {}
        for dirpath, _dirs, files in os.walk(self.path):
            rel = Path(dirpath).relative_to(self.path).parts
            if "c" in rel:
                key = "/".join(rel[: rel.index("c")])
                sizes[key] = sizes.get(key, 0) + sum(
                    _occupied(os.path.join(dirpath, f)) for f in files)
        return dict(sorted(sizes.items()))


def _occupied(path: str) -> int:
    """A file's size less its holes (to within one block; the size where holes are
    unknown)."""
    stat = os.stat(path)
    blocks = getattr(stat, "st_blocks", None)
    return stat.st_size if blocks is None else min(stat.st_size, blocks * 512)


def _check_version(path: Path, version: object) -> None:
    """Accepts an integer format version this reader knows; names anything else as it is."""
    if version is None:
        raise StoreError(f"{path}: the store's format version is missing; the store is "
                         "corrupt, preprocess the input again")
    if type(version) is not int:  # bool is an int subclass but no version
        raise StoreError(f"{path}: the store's format version is {version!r} "
                         f"({type(version).__name__}), not an integer; the store is corrupt, "
                         "preprocess the input again")
    if version > VERSION:
        raise StoreError(f"{path}: store format version {version} is newer than this Seraph "
                         f"supports (version {VERSION}); upgrade Seraph")
    if version < 1:
        raise StoreError(f"{path}: store format version {version} is not a valid version; "
                         "the store is corrupt, preprocess the input again")


def _read_attrs(path: Path) -> StoreAttrs:
    meta = path / "zarr.json"
    if not path.exists():
        raise StoreError(f"{path}: no such store")
    if not meta.exists():
        raise StoreError(f"{path}: not a zarr v3 store (no zarr.json); preprocess the input "
                         "with `seraph preprocess`")
    try:
        raw = json.loads(meta.read_text()).get("attributes", {})
    except (json.JSONDecodeError, OSError) as e:
        raise StoreError(f"{path}: unreadable zarr.json ({e})") from None
    if raw.get("format") != FORMAT:
        raise StoreError(f"{path}: not a Seraph graph store (format={raw.get('format')!r})")
    _check_version(path, raw.get("version"))
    if not raw.get("complete"):
        raise StoreError(f"{path}: the store is incomplete (preprocessing did not finish); "
                         "run `seraph preprocess` again")
    known = set(StoreAttrs.__dataclass_fields__)
    try:
        return StoreAttrs(**{k: v for k, v in raw.items() if k in known})
    except TypeError as e:
        raise StoreError(f"{path}: store attributes are incomplete ({e})") from None
