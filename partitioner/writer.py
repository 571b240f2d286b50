"""Out-of-core partitioning: an edge stream in, a paged Seraph store out.

The pipeline has three passes, each bounded by the host-memory budget:

1. **Ids** (only when the vertex count is unknown): stream the input once, note which ids
   occur, and keep the parsed edges (in memory while they fit the budget, on disk past it)
   so text is parsed only once. Dense ids are kept; sparse or huge ids are relabelled.
2. **Bucketing**: map ids, add reverse edges for ``symmetrize``, and scatter every edge
   into a bucket by destination range (for CSC) and by source range (for CSR). Buckets
   stay in memory when everything fits, else they are appended to temporary files.
3. **Rows**: load consecutive buckets up to the budget, counting-sort them into rows,
   drop self-loops and duplicates (keeping the minimum weight), and stream the rows into
   fixed-size pages of the store.
"""

from __future__ import annotations

import datetime
import errno
import os
import platform
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from numba import njit

from partitioner.csx import build_rows
from partitioner.edges import EdgeChunk, EdgeSource
from seraph import progress
from seraph.errors import InputError, StoreError
from seraph.store import StoreAttrs, StoreWriter

DEFAULT_PAGE_EDGES = 1 << 22
MAX_VERTICES = (1 << 31) - 1  # csc/indices is int32
# Peak bytes per edge while a group of buckets is being sorted into rows (keys, neighbours,
# weights, the counting-sort copies, packed pairs and the gathered output).
_SORT_BYTES_PER_EDGE = 48
_RECORD = np.dtype([("k", "<i4"), ("o", "<i4"), ("w", "<f4")])


def default_memory() -> int:
    """A quarter of physical RAM, the default ``--memory``."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError):
        return 4 << 30


@dataclass
class IdSpace:
    """The final vertex numbering: n vertices, and the input id of each when relabelled."""

    num_vertices: int
    original_ids: np.ndarray | None = None

    def map(self, ids: np.ndarray) -> np.ndarray:
        if self.original_ids is None:
            return ids
        return np.searchsorted(self.original_ids, ids)


# --------------------------------------------------------------------------------------
# Pass 1: ids
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _mark_ids(bits, ids):
    for x in ids:
        bits[x >> 3] |= np.uint8(1 << (x & 7))


class _ChunkCache:
    """Parsed chunks kept for the next pass: in memory up to a budget, then on disk."""

    def __init__(self, spill_dir: Path, budget: int):
        self.spill_dir, self.budget, self.used = spill_dir, budget, 0
        self.items: list[EdgeChunk | Path] = []

    def add(self, chunk: EdgeChunk) -> None:
        size = chunk.src.nbytes + chunk.dst.nbytes + (0 if chunk.weight is None
                                                      else chunk.weight.nbytes)
        if self.used + size <= self.budget:
            self.items.append(EdgeChunk(chunk.src.copy(), chunk.dst.copy(),
                                        None if chunk.weight is None else chunk.weight.copy()))
            self.used += size
            return
        path = self.spill_dir / f"parsed-{len(self.items)}.npz"
        arrays = {"src": chunk.src, "dst": chunk.dst}
        if chunk.weight is not None:
            arrays["weight"] = chunk.weight
        np.savez(path, **arrays)
        self.items.append(path)

    def __iter__(self) -> Iterator[EdgeChunk]:
        for item in self.items:
            if isinstance(item, Path):
                with np.load(item) as z:
                    yield EdgeChunk(z["src"], z["dst"], z.get("weight"))
            else:
                yield item


def scan_ids(source: EdgeSource, cache: _ChunkCache) -> tuple[IdSpace, int]:
    """Pass 1: decides the vertex numbering and caches the parsed edges."""
    bits = np.zeros(0, dtype=np.uint8)
    huge: np.ndarray | None = None  # sorted unique ids once some id exceeds int32
    max_id, count = -1, 0
    with progress.bar(source.num_edges_hint, "reading", "edges") as bar:
        for chunk in source.chunks():
            cache.add(chunk)
            count += len(chunk)
            bar.update(len(chunk))
            if not len(chunk):
                continue
            max_id = max(max_id, int(chunk.src.max()), int(chunk.dst.max()))
            if huge is None and max_id > MAX_VERTICES:
                huge = _present_ids(bits)
            if huge is not None:
                huge = np.union1d(huge, np.concatenate([chunk.src, chunk.dst]))
                continue
            if (max_id >> 3) + 1 > len(bits):
                bits = np.concatenate([bits, np.zeros(max(len(bits), (max_id >> 3) + 1 - len(bits)),
                                                      np.uint8)])
            _mark_ids(bits, chunk.src)
            _mark_ids(bits, chunk.dst)
    if count == 0:
        raise InputError(f"{source.provenance.get('input', 'input')}: no edges found "
                         "(empty input)")
    present = huge if huge is not None else _present_ids(bits)
    if huge is None and 2 * len(present) >= max_id + 1:
        return IdSpace(max_id + 1), count
    if len(present) > MAX_VERTICES:
        raise InputError(f"{len(present)} distinct vertex ids: more than the {MAX_VERTICES} "
                         "a store can hold")
    progress.info(f"relabelling {len(present)} distinct ids (max id {max_id})")
    return IdSpace(len(present), present.astype(np.int64)), count


def _present_ids(bits: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(bits, bitorder="little")).astype(np.int64)


# --------------------------------------------------------------------------------------
# Pass 2: buckets
# --------------------------------------------------------------------------------------
class Buckets:
    """Edges grouped by the vertex range of their key, in memory or in files."""

    def __init__(self, num_vertices: int, num_buckets: int, spill_dir: Path | None):
        self.width = max(1, -(-num_vertices // num_buckets))
        self.num_buckets = -(-num_vertices // self.width) if num_vertices else 1
        self.spill_dir = spill_dir
        self.memory: list[list[np.ndarray]] = [[] for _ in range(self.num_buckets)]
        self.sizes = np.zeros(self.num_buckets, dtype=np.int64)

    def add(self, keys: np.ndarray, others: np.ndarray, weights: np.ndarray | None) -> None:
        rec = np.empty(len(keys), dtype=_RECORD)
        rec["k"], rec["o"] = keys, others
        rec["w"] = 0 if weights is None else weights
        if self.num_buckets == 1:
            self._append(0, rec)
            return
        bucket = keys // self.width
        order = np.argsort(bucket, kind="stable")
        bounds = np.searchsorted(bucket[order], np.arange(self.num_buckets + 1))
        rec = rec[order]
        for b in np.flatnonzero(np.diff(bounds)):
            self._append(int(b), rec[bounds[b]: bounds[b + 1]])

    def _append(self, b: int, rec: np.ndarray) -> None:
        self.sizes[b] += len(rec)
        if self.spill_dir is None:
            self.memory[b].append(rec)
        else:
            with open(self.spill_dir / f"bucket-{id(self)}-{b}", "ab") as f:
                f.write(rec.data)

    def load(self, b: int) -> np.ndarray:
        if self.spill_dir is None:
            parts, self.memory[b] = self.memory[b], []
            return np.concatenate(parts) if parts else np.empty(0, _RECORD)
        path = self.spill_dir / f"bucket-{id(self)}-{b}"
        if not path.exists():
            return np.empty(0, _RECORD)
        rec = np.fromfile(path, dtype=_RECORD)
        path.unlink()
        return rec

    def groups(self, capacity: int) -> Iterator[tuple[int, int]]:
        """Runs of consecutive buckets whose edges fit ``capacity`` (at least one bucket)."""
        b = 0
        while b < self.num_buckets:
            end, total = b + 1, int(self.sizes[b])
            while end < self.num_buckets and total + self.sizes[end] <= capacity:
                total += int(self.sizes[end])
                end += 1
            yield b, end
            b = end


# --------------------------------------------------------------------------------------
# Pass 3: rows into pages
# --------------------------------------------------------------------------------------
class PagedArrays:
    """Streams rows into fixed-size pages of ``<prefix>/indices`` (and ``/weights``).

    Full pages go to ``write_page`` as soon as they fill, so memory holds one page.
    """

    def __init__(self, sink: Sink, prefix: str, upper: int, weighted: bool, page_edges: int):
        self.sink, self.prefix, self.pe = sink, prefix, page_edges
        sink.create_paged(prefix, upper, weighted)
        self.idx_buf = np.empty(page_edges, np.int32)
        self.w_buf = np.empty(page_edges, np.float32) if weighted else None
        self.fill, self.page = 0, 0

    def append(self, idx: np.ndarray, w: np.ndarray | None) -> None:
        pos = 0
        while pos < len(idx):
            take = min(self.pe - self.fill, len(idx) - pos)
            self.idx_buf[self.fill: self.fill + take] = idx[pos: pos + take]
            if self.w_buf is not None:
                self.w_buf[self.fill: self.fill + take] = w[pos: pos + take]
            self.fill += take
            pos += take
            if self.fill == self.pe:
                self.flush()

    def flush(self) -> None:
        if self.fill == 0:
            return
        self.sink.write_page(self.prefix, self.page, self.idx_buf[: self.fill],
                             None if self.w_buf is None else self.w_buf[: self.fill])
        self.page += 1
        self.fill = 0


class Sink:
    """Where pass 3 puts the store's arrays: a store on disk or arrays in memory."""

    def create_paged(self, prefix: str, upper: int, weighted: bool) -> None:
        raise NotImplementedError

    def write_page(self, prefix: str, page: int, idx: np.ndarray, w: np.ndarray | None) -> None:
        raise NotImplementedError

    def finish_paged(self, prefix: str, num_edges: int) -> None:
        raise NotImplementedError

    def write_array(self, name: str, data: np.ndarray) -> None:
        raise NotImplementedError


class StoreSink(Sink):
    """Pages become chunk files of a store being built by a :class:`StoreWriter`."""

    def __init__(self, writer: StoreWriter):
        self.writer = writer
        self.arrays: dict[str, object] = {}

    def create_paged(self, prefix: str, upper: int, weighted: bool) -> None:
        pe = self.writer.attrs.page_edges
        names = [f"{prefix}/indices"] + ([f"{prefix}/weights"] if weighted else [])
        for name in names:
            self.arrays[name] = self.writer.create(name, upper, "int32" if name.endswith(
                "indices") else "float32", pe)

    def write_page(self, prefix: str, page: int, idx: np.ndarray, w: np.ndarray | None) -> None:
        for kind, data in (("indices", idx), ("weights", w)):
            if data is not None:
                name = f"{prefix}/{kind}"
                self.writer.write_chunk(self.arrays[name], name, page, data)

    def finish_paged(self, prefix: str, num_edges: int) -> None:
        # Arrays are created with the pre-deduplication edge count; shrink to the real one.
        for name, arr in self.arrays.items():
            if name.startswith(prefix + "/"):
                arr.resize((num_edges,))

    def write_array(self, name: str, data: np.ndarray) -> None:
        self.writer.write_array(name, data)


class MemorySink(Sink):
    """Pages are kept as whole in-memory arrays (for ``Graph.from_edges``)."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._parts: dict[str, list[np.ndarray]] = {}

    def create_paged(self, prefix: str, upper: int, weighted: bool) -> None:
        self._parts[f"{prefix}/indices"] = []
        if weighted:
            self._parts[f"{prefix}/weights"] = []

    def write_page(self, prefix: str, page: int, idx: np.ndarray, w: np.ndarray | None) -> None:
        self._parts[f"{prefix}/indices"].append(idx.copy())
        if w is not None:
            self._parts[f"{prefix}/weights"].append(w.copy())

    def finish_paged(self, prefix: str, num_edges: int) -> None:
        for name in [k for k in self._parts if k.startswith(prefix + "/")]:
            parts = self._parts.pop(name)
            dtype = np.int32 if name.endswith("indices") else np.float32
            self.arrays[name] = np.concatenate(parts) if parts else np.empty(0, dtype)

    def write_array(self, name: str, data: np.ndarray) -> None:
        self.arrays[name] = data


def _rows_to_pages(buckets: Buckets, capacity: int, num_vertices: int, out: PagedArrays,
                   opts: dict, desc: str) -> tuple[np.ndarray, int, int]:
    """Pass 3 for one orientation; returns (indptr, self-loops removed, duplicates removed)."""
    degrees = np.zeros(num_vertices, dtype=np.int64)
    loops = dups = 0
    with progress.bar(int(buckets.sizes.sum()), desc, "edges") as bar:
        for first, end in buckets.groups(capacity):
            rec = np.concatenate([buckets.load(b) for b in range(first, end)])
            lo = first * buckets.width
            hi = min(num_vertices, end * buckets.width)
            weights = rec["w"] if out.w_buf is not None else None
            deg, idx, w, nl, nd = build_rows(rec["k"], rec["o"], weights, lo, hi - lo, **opts)
            del rec
            degrees[lo:hi] = deg
            out.append(idx, w)
            loops += nl
            dups += nd
            bar.update(len(idx) + nl + nd)
    out.flush()
    indptr = np.zeros(num_vertices + 1, dtype=np.int64)
    np.cumsum(degrees, out=indptr[1:])
    return indptr, loops, dups


def page_bounds(indptr: np.ndarray, num_edges: int, page_edges: int) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """First and last destination vertex of every page."""
    starts = np.arange(0, num_edges, page_edges, dtype=np.int64)
    ends = np.minimum(starts + page_edges, num_edges) - 1
    first = np.searchsorted(indptr, starts, side="right") - 1
    last = np.searchsorted(indptr, ends, side="right") - 1
    return first.astype(np.int64), last.astype(np.int64)


# --------------------------------------------------------------------------------------
# The whole pipeline
# --------------------------------------------------------------------------------------
@dataclass
class Options:
    """How an edge stream becomes a graph (the knobs of ``seraph preprocess``)."""

    symmetrize: bool = False
    random_weights: tuple[float, float] | None = None
    seed: int = 0
    keep_duplicates: bool = False
    keep_self_loops: bool = False
    page_edges: int = DEFAULT_PAGE_EDGES
    memory: int | None = None
    compress: bool = False

    def check(self) -> None:
        pe = self.page_edges
        if pe < 1 or pe & (pe - 1):
            raise InputError(f"page_edges must be a power of two, got {pe}")
        if self.memory is not None and self.memory < (1 << 20):
            raise InputError(f"memory budget of {self.memory} bytes is too small "
                             "(at least 1 MiB)")


def write_store(source: EdgeSource, output: str | os.PathLike, options: Options | None = None,
                *, force: bool = False, command: str | None = None) -> Path:
    """Partitions ``source`` into a store at ``output`` (see the module docstring).

    The store is built beside ``output`` and renamed into place only when complete.
    """
    options = options or Options()
    options.check()
    output = Path(output)
    if output.exists() and not force:
        raise StoreError(f"{output} already exists (use --force / force=True to replace it)")
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix=f".{output.name}.spill-",
                                         dir=output.parent) as spill:
            attrs, ids, csc, csr = _bucket(source, options, Path(spill))
            with StoreWriter(output, attrs, force=force) as writer:
                attrs.source["command"] = command or " ".join(sys.argv)
                _emit_rows(StoreSink(writer), attrs, ids, csc, csr, options)
                writer.group.attrs.update(asdict(attrs))
                path = writer.commit(replace=force)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise StoreError(f"disk full while writing {output}; nothing was written "
                             "(free some space and run again)") from None
        raise StoreError(f"writing {output} failed: {e}; nothing was written") from None
    progress.info(f"wrote {path}: {attrs.num_vertices} vertices, {attrs.num_edges} edges, "
                  f"{attrs.num_pages} pages; removed {attrs.self_loops_removed} self-loops and "
                  f"{attrs.duplicates_removed} duplicates")
    return path


def build_in_memory(source: EdgeSource, options: Options | None = None
                    ) -> tuple[StoreAttrs, dict[str, np.ndarray]]:
    """The same partitioning into in-memory arrays, named as in a store."""
    options = options or Options()
    options.check()
    with tempfile.TemporaryDirectory(prefix="seraph-spill-") as spill:
        attrs, ids, csc, csr = _bucket(source, options, Path(spill))
        sink = MemorySink()
        _emit_rows(sink, attrs, ids, csc, csr, options)
    attrs.complete = True
    return attrs, sink.arrays


def _bucket(source: EdgeSource, options: Options, spill: Path
            ) -> tuple[StoreAttrs, IdSpace, Buckets, Buckets | None]:
    """Passes 1 and 2: the id space, and every edge in its CSC (and CSR) bucket."""
    memory = default_memory() if options.memory is None else int(options.memory)
    symmetrize = options.symmetrize and not source.symmetric
    symmetric = source.symmetric or options.symmetrize
    weighted = source.weighted or options.random_weights is not None
    if source.num_vertices is None:
        cache = _ChunkCache(spill, memory // 3)
        ids, input_edges = scan_ids(source, cache)
        chunks: Iterator[EdgeChunk] = iter(cache)
    else:
        if source.num_vertices > MAX_VERTICES:
            raise InputError(f"{source.num_vertices} vertices: more than the {MAX_VERTICES} "
                             "a store can hold")
        ids, input_edges = IdSpace(source.num_vertices), source.num_edges_hint
        chunks = source.chunks()
    n = ids.num_vertices

    # Size buckets so that a group of them sorts within the budget; keep them in memory
    # when all of them, plus one sort, fit.
    expected = (input_edges or 0) * (2 if symmetrize else 1)
    in_memory = expected * (_RECORD.itemsize * (1 if symmetric else 2)
                            + _SORT_BYTES_PER_EDGE) <= memory
    num_buckets = 1 if in_memory else min(4096, max(2, 4 * -(-expected // _capacity(memory))))
    spill_dir = None if in_memory else spill
    csc = Buckets(n, num_buckets, spill_dir)
    csr = None if symmetric else Buckets(n, num_buckets, spill_dir)
    total = 0
    with progress.bar(input_edges, "bucketing", "edges") as bar:
        for chunk in chunks:
            src, dst = ids.map(chunk.src), ids.map(chunk.dst)
            if source.num_vertices is not None and len(src):
                _check_range(src, dst, n, source)
            w = chunk.weight
            if options.random_weights is not None:
                from partitioner.weights import hash_weights

                lo, hi = options.random_weights
                w = hash_weights(src, dst, lo, hi, options.seed)
            if symmetrize:
                # A self-loop's reverse is itself: adding it would only make a duplicate.
                rev = src != dst
                src, dst = np.concatenate([src, dst[rev]]), np.concatenate([dst, src[rev]])
                if w is not None:
                    w = np.concatenate([w, w[rev]])
            total += len(chunk)
            csc.add(dst, src, w)
            if csr is not None:
                csr.add(src, dst, w)
            bar.update(len(chunk))
    if total == 0 and source.num_vertices is None:
        raise InputError(f"{source.provenance.get('input', 'input')}: no edges found "
                         "(empty input)")
    attrs = StoreAttrs(num_vertices=n, num_edges=0, directed=not symmetric,
                       symmetric=symmetric, weighted=weighted, page_edges=options.page_edges,
                       num_pages=0, compression="blosc-lz4" if options.compress else None,
                       relabelled=ids.original_ids is not None,
                       weight_dtype="float32" if weighted else None,
                       source=_provenance(source, input_edges=total, symmetrize=symmetrize,
                                          random_weights=options.random_weights,
                                          seed=options.seed))
    return attrs, ids, csc, csr


def _capacity(memory: int) -> int:
    return max(1, memory // _SORT_BYTES_PER_EDGE)


def _emit_rows(sink: Sink, attrs: StoreAttrs, ids: IdSpace, csc: Buckets,
               csr: Buckets | None, options: Options) -> None:
    """Pass 3: rows into pages, then the per-vertex and per-page arrays; fills ``attrs``."""
    memory = default_memory() if options.memory is None else int(options.memory)
    opts = {"keep_duplicates": options.keep_duplicates,
            "keep_self_loops": options.keep_self_loops}
    n, pe, upper = attrs.num_vertices, attrs.page_edges, int(csc.sizes.sum())
    pages = PagedArrays(sink, "csc", upper, attrs.weighted, pe)
    indptr, loops, dups = _rows_to_pages(csc, _capacity(memory), n, pages, opts, "sorting CSC")
    m = int(indptr[-1])
    sink.finish_paged("csc", m)
    sink.write_array("csc/indptr", indptr)
    if csr is not None:
        rpages = PagedArrays(sink, "csr", upper, attrs.weighted, pe)
        rindptr, _, _ = _rows_to_pages(csr, _capacity(memory), n, rpages, opts, "sorting CSR")
        sink.finish_paged("csr", m)
        sink.write_array("csr/indptr", rindptr)
    first, last = page_bounds(indptr, m, pe)
    sink.write_array("pages/first_vertex", first)
    sink.write_array("pages/last_vertex", last)
    if ids.original_ids is not None:
        sink.write_array("vertices/original_id", ids.original_ids)
    attrs.num_edges, attrs.num_pages = m, len(first)
    attrs.self_loops_removed, attrs.duplicates_removed = loops, dups


def _check_range(src: np.ndarray, dst: np.ndarray, n: int, source: EdgeSource) -> None:
    hi = max(int(src.max()), int(dst.max()))
    if hi >= n or min(int(src.min()), int(dst.min())) < 0:
        raise InputError(f"{source.provenance.get('input', 'input')}: vertex id {hi} is out "
                         f"of range for {n} vertices")


def _provenance(source: EdgeSource, **extra) -> dict:
    import numba
    import scipy
    import zarr

    from seraph import __version__

    return {**source.provenance, **{k: v for k, v in extra.items() if v is not None},
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "versions": {"seraph": __version__, "python": platform.python_version(),
                         "numpy": np.__version__, "scipy": scipy.__version__,
                         "numba": numba.__version__, "zarr": zarr.__version__}}
