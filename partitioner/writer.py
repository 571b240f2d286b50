"""Out-of-core partitioning: an edge stream in, a paged Seraph store out.

The pipeline has three passes, each bounded by the host-memory budget:

1. **Ids** (only when the vertex count is unknown): stream the input once, note which ids
   occur, and keep the parsed edges (in memory while they fit the budget, on disk past it)
   so text is parsed only once. Dense ids are kept; sparse or huge ids are relabelled.
2. **Bucketing**: map ids, drop self-loops, add reverse edges for ``symmetrize``, and put
   every edge into a bucket by source range. Everything stays in one bucket in memory when
   it fits the budget; otherwise buckets are appended to temporary files.
3. **Rows**, in sweeps over groups of buckets that fit the budget. Each sweep is a stable
   counting sort by key; the rows come out sorted by neighbour when the edges went in
   ordered by neighbour (see :mod:`partitioner.csx`), so no row is ever comparison-sorted:

   a. order the edges by source (re-bucketed by destination range);
   b. counting-sort by destination: CSC rows sorted by source. Drop duplicates (keeping
      the minimum weight), order a weighted graph's rows by weight (the lightest in-edge
      first, ties by source) and stream the rows into fixed-size pages of ``csc/``. For a
      directed graph, re-bucket the rows by source range;
   c. (directed only) counting-sort by source: CSR rows sorted by destination, into
      pages of ``csr/``.
"""

from __future__ import annotations

import datetime
import errno
import os
import platform
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit, prange

from partitioner.csx import (
    compact_edges,
    dedup_rows,
    expand_rows,
    partition,
    smallest_neighbours,
    sort_by_key,
    sort_rows_by_weight,
)
from partitioner.edges import EdgeChunk, EdgeSource
from partitioner.order import check_order, degree_order, permute_rows, rcm_order
from seraph import progress, temporaries
from seraph.errors import InputError, StoreError
from seraph.store import SAMPLE, StoreAttrs, StoreWriter

DEFAULT_PAGE_EDGES = 1 << 22
#: The smallest page a graph smaller than its requested page gets: 4 KiB of indices.
MIN_PAGE_EDGES = 1 << 10
MAX_VERTICES = (1 << 31) - 1  # csc/indices is int32
_INT32_MAX = np.iinfo(np.int32).max
#: Most buckets per sweep; more would mean many small appends to many files.
_MAX_BUCKETS = 1024
_NO_WEIGHTS = np.empty(0, np.uint32)  # an unweighted edge list's weight bits (see csx)


def default_memory() -> int:
    """A quarter of physical RAM, the default ``--memory``."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError):
        return 4 << 30


def _sweep_bytes(edges: int, keys: int, weighted: bool) -> int:
    """Peak bytes of sorting ``edges`` edges over ``keys`` rows in one sweep of pass 3.

    Per edge and int32 column: the loaded edges (sorted in place) and their partitioned
    copy. Per row: the row offsets, here and in the whole-graph ``indptr``.
    """
    columns = 3 if weighted else 2
    return edges * 8 * columns + keys * 16


@dataclass
class IdSpace:
    """The final vertex numbering: n vertices, and the input id of each when relabelled."""

    num_vertices: int
    original_ids: np.ndarray | None = None

    def map(self, ids: np.ndarray) -> np.ndarray:
        """Input ids to vertex numbers (pass 2, while ``original_ids`` ascend)."""
        if self.original_ids is None:
            return ids
        return np.searchsorted(self.original_ids, ids)

    def renumbered(self, old: np.ndarray) -> IdSpace:
        """The same vertices numbered so that vertex i is this numbering's ``old[i]``; the
        input ids are then a permutation, which :meth:`map` cannot search."""
        return IdSpace(self.num_vertices,
                       old if self.original_ids is None else self.original_ids[old])


# --------------------------------------------------------------------------------------
# Pass 1: ids
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _mark_ids(bits, ids):
    for x in ids:
        bits[x >> 3] |= np.uint8(1 << (x & 7))


class _ChunkCache:
    """Parsed chunks kept for the next pass: in memory up to a budget, then on disk.

    Ids are stored as int32 when they fit. Iterating hands the chunks over (and frees
    them), so the cache can be read once.
    """

    def __init__(self, spill_dir: Path, budget: int):
        self.spill_dir, self.budget, self.used = spill_dir, budget, 0
        self.items: list[EdgeChunk | Path] = []

    def add(self, chunk: EdgeChunk, max_id: int) -> None:
        # astype copies: the source may reuse its buffers for the next chunk.
        dtype = np.int32 if max_id <= _INT32_MAX else np.int64
        kept = EdgeChunk(chunk.src.astype(dtype), chunk.dst.astype(dtype),
                         None if chunk.weight is None else chunk.weight.astype(np.float32))
        size = kept.src.nbytes + kept.dst.nbytes + (0 if kept.weight is None
                                                    else kept.weight.nbytes)
        if self.used + size <= self.budget:
            self.items.append(kept)
            self.used += size
            return
        path = self.spill_dir / f"parsed-{len(self.items)}.npy"
        with open(path, "wb") as f:
            for a in (kept.src, kept.dst) + (() if kept.weight is None else (kept.weight,)):
                np.save(f, a)
        self.items.append(path)

    def __iter__(self) -> Iterator[EdgeChunk]:
        while self.items:
            item = self.items.pop(0)
            if isinstance(item, EdgeChunk):
                yield item
                continue
            with open(item, "rb") as f:
                src, dst = np.load(f), np.load(f)
                weight = np.load(f) if f.peek(1) else None
            item.unlink()
            yield EdgeChunk(src, dst, weight)


@njit(cache=True)
def _bitmap_ids(bits):
    """The positions of the set bits of a bitmap, ascending."""
    count = 0
    for byte in bits:
        for k in range(8):
            count += (byte >> k) & 1
    ids = np.empty(count, dtype=np.int64)
    count = 0
    for i in range(len(bits)):
        if bits[i]:
            for k in range(8):
                if (bits[i] >> k) & 1:
                    ids[count] = 8 * i + k
                    count += 1
    return ids


class _IdSet:
    """The distinct ids of the input: a bitmap while they fit a store's int32 ids, then a
    sorted array, merged with the new ids in batches so that adding stays O(n log n)."""

    def __init__(self) -> None:
        self.bits: np.ndarray | None = np.zeros(0, dtype=np.uint8)
        self.sorted = np.zeros(0, dtype=np.int64)
        self.pending: list[np.ndarray] = []
        self.max_id = -1

    def add(self, ids: np.ndarray) -> None:
        self.max_id = max(self.max_id, int(ids.max()))
        if self.bits is not None and self.max_id > MAX_VERTICES:
            self.sorted, self.bits = _bitmap_ids(self.bits), None
        if self.bits is None:
            self.pending.append(np.unique(ids))
            if sum(map(len, self.pending)) > len(self.sorted):
                self.ids()
            return
        need = (self.max_id >> 3) + 1
        if need > len(self.bits):  # grow geometrically: ids usually rise chunk by chunk
            grown = np.zeros(max(need, 2 * len(self.bits)), dtype=np.uint8)
            grown[: len(self.bits)] = self.bits
            self.bits = grown
        _mark_ids(self.bits, ids)

    def ids(self) -> np.ndarray:
        """All ids seen, ascending."""
        if self.bits is not None:
            return _bitmap_ids(self.bits)
        if self.pending:
            self.sorted = np.unique(np.concatenate([self.sorted, *self.pending]))
            self.pending = []
        return self.sorted


def scan_ids(source: EdgeSource, cache: _ChunkCache) -> tuple[IdSpace, int]:
    """Pass 1: decides the vertex numbering and caches the parsed edges."""
    seen = _IdSet()
    count = 0
    by_bytes = source.input_size is not None  # a file: its size is the bar's total
    with progress.bar(source.input_size if by_bytes else source.num_edges_hint, "reading",
                      "B" if by_bytes else "edges") as bar:
        for chunk in source.chunks():
            count += len(chunk)
            bar.update(chunk.input_bytes if by_bytes else len(chunk))
            if not len(chunk):
                continue
            seen.add(chunk.src)
            seen.add(chunk.dst)
            cache.add(chunk, seen.max_id)
    if count == 0:
        raise InputError(f"{source.provenance.get('input', 'input')}: no edges found "
                         "(empty input)")
    present = seen.ids()
    if seen.max_id <= MAX_VERTICES and 2 * len(present) >= seen.max_id + 1:
        return IdSpace(seen.max_id + 1), count
    if len(present) > MAX_VERTICES:
        raise InputError(f"{len(present)} distinct vertex ids: more than the {MAX_VERTICES} "
                         "a store can hold")
    progress.info(f"relabelling {len(present)} distinct ids (max id {seen.max_id})")
    return IdSpace(len(present), present), count


# --------------------------------------------------------------------------------------
# Pass 2: buckets
# --------------------------------------------------------------------------------------
class Buckets:
    """Edges ``(key, other, wbits)`` grouped by the vertex range of their key.

    In memory there is a single bucket: a list of int32 column arrays. Spilled, the keys
    are cut into ranges of ``width`` (a power of two) vertices, each with one file per
    column. Either way a bucket keeps its edges in the order they were added, which the
    sweeps of pass 3 rely on.
    """

    def __init__(self, name: str, num_vertices: int, num_buckets: int, weighted: bool,
                 spill_dir: Path | None):
        self.name, self.num_vertices, self.weighted = name, num_vertices, weighted
        self.shift = (max(1, -(-num_vertices // num_buckets)) - 1).bit_length()
        self.width = 1 << self.shift
        self.num_buckets = max(1, -(-num_vertices // self.width))
        self.spill_dir = spill_dir
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.reserved: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.filled = 0  # edges in the reservation
        self.sizes = np.zeros(self.num_buckets, dtype=np.int64)

    def like(self, name: str) -> Buckets:
        """Empty buckets of the same geometry, for the next sweep."""
        return Buckets(name, self.num_vertices, self.num_buckets, self.weighted,
                       self.spill_dir)

    @property
    def num_edges(self) -> int:
        return int(self.sizes.sum())

    def reserve(self, edges: int) -> None:
        """Preallocates the in-memory bucket for ``edges`` edges: chunks added are then
        copied into it, instead of being kept for a concatenation that would need all the
        memory twice."""
        if self.spill_dir is None:
            self.reserved = (np.empty(edges, np.int32), np.empty(edges, np.int32),
                             np.empty(edges if self.weighted else 0, np.uint32))

    def add(self, keys: np.ndarray, others: np.ndarray, wbits: np.ndarray) -> None:
        """Adds edges. In memory, arrays that do not fit the reservation are kept, not
        copied, so they must be fresh; the sweeps sort them in place."""
        if self.spill_dir is None:
            end = self.filled + len(keys)
            if self.reserved is not None and not self.parts and end <= len(self.reserved[0]):
                for column, data in zip(self.reserved, (keys, others, wbits), strict=True):
                    column[self.filled:end] = data  # the empty wbits of unweighted edges too
                self.filled = end
            else:
                self.parts.append((keys, others, wbits))
            self.sizes[0] += len(keys)
            return
        starts, *columns = partition(keys, others, wbits, 0, self.shift, self.num_buckets)
        self.sizes += np.diff(starts)
        for b in np.flatnonzero(np.diff(starts)):
            for column, data in zip(self._columns(), columns, strict=False):
                with open(self._file(b, column), "ab") as f:
                    f.write(data[starts[b]: starts[b + 1]].data)

    def drain(self, budget: int) -> Iterator[tuple[int, int, tuple]]:
        """Yields ``(lo, hi, (keys, others, wbits))`` for runs of consecutive buckets whose
        sort fits ``budget`` (at least one bucket each): their edges, keys in [lo, hi).
        Each run is removed from the buckets as it is yielded."""
        b = 0
        while b < self.num_buckets:
            end = b + 1
            while end < self.num_buckets and _sweep_bytes(
                    int(self.sizes[b:end + 1].sum()), (end + 1 - b) * self.width,
                    self.weighted) <= budget:
                end += 1
            lo, hi = b * self.width, min(self.num_vertices, end * self.width)
            yield lo, hi, self._load(b, end)
            b = end

    def _load(self, first: int, end: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.spill_dir is None:
            parts, self.parts = self.parts, []
            if self.reserved is not None:
                parts.insert(0, tuple(column[:self.filled] for column in self.reserved))
                self.reserved, self.filled = None, 0
            if not parts:
                return np.empty(0, np.int32), np.empty(0, np.int32), _NO_WEIGHTS
            if len(parts) == 1:
                return parts[0]
            keys, others, wbits = (np.concatenate(column) for column in zip(*parts, strict=True))
            return keys, others, wbits
        total = int(self.sizes[first:end].sum())
        columns = [np.empty(total, np.int32), np.empty(total, np.int32),
                   np.empty(total, np.uint32) if self.weighted else _NO_WEIGHTS]
        for column, data in zip(self._columns(), columns, strict=False):
            pos = 0
            for b in range(first, end):
                size = int(self.sizes[b])
                if size:
                    path = self._file(b, column)
                    with open(path, "rb") as f:
                        f.readinto(memoryview(data[pos: pos + size]).cast("B"))
                    path.unlink()
                    pos += size
        keys, others, wbits = columns
        return keys, others, wbits

    def _columns(self) -> tuple[str, ...]:
        return ("keys", "others", "wbits") if self.weighted else ("keys", "others")

    def _file(self, b: int, column: str) -> Path:
        assert self.spill_dir is not None
        return self.spill_dir / f"{self.name}-{b}.{column}"


def _bucket(source: EdgeSource, options: Options, spill: Path
            ) -> tuple[StoreAttrs, IdSpace, Buckets]:
    """Passes 1 and 2: the id space, and every edge in its bucket by source range."""
    memory = options.budget()
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

    # Keep everything in one bucket in memory when a sweep over all of it fits the budget;
    # otherwise cut the vertices into enough buckets that a few of them fit.
    expected = (input_edges or 0) * (2 if symmetrize else 1)
    need = _sweep_bytes(expected, n, weighted)
    num_buckets = 1 if need <= memory else min(_MAX_BUCKETS, 4 * -(-need // memory))
    by_source = Buckets("by-source", n, num_buckets, weighted,
                        None if num_buckets == 1 else spill)
    by_source.reserve(expected)
    # --order degree numbers the vertices by the out-edges they get here: before duplicates
    # go, so the order needs no second pass over the input.
    degrees = np.zeros(n if options.order == "degree" else 0, dtype=np.int64)
    total = loops = 0
    with progress.bar(input_edges, "bucketing", "edges") as bar:
        for chunk in chunks:
            src, dst, wbits, dropped = _checked_edges(chunk, ids, source, options)
            loops += dropped
            if symmetrize:
                # A self-loop's reverse is itself: adding it would only make a duplicate.
                rev = src != dst if options.keep_self_loops else slice(None)
                src, dst = np.concatenate([src, dst[rev]]), np.concatenate([dst, src[rev]])
                if weighted:
                    wbits = np.concatenate([wbits, wbits[rev]])
            if len(degrees):
                _count_keys(degrees, src)
            by_source.add(src, dst, wbits)
            total += len(chunk)
            bar.update(len(chunk))
    if total == 0 and source.num_vertices is None:
        raise InputError(f"{source.provenance.get('input', 'input')}: no edges found "
                         "(empty input)")
    if len(degrees):
        old = degree_order(degrees)
        by_source = _renumbered(by_source, old, memory)
        ids = ids.renumbered(old)
    attrs = StoreAttrs(num_vertices=n, num_edges=0, directed=not symmetric,
                       symmetric=symmetric, weighted=weighted, page_edges=options.page_edges,
                       num_pages=0, compression="blosc-lz4" if options.compress else None,
                       relabelled=ids.original_ids is not None,
                       # rcm renumbers only after pass 3 (_emit_renumbered)
                       vertex_order="degree" if len(degrees) else "input",
                       weight_dtype="float32" if weighted else None, self_loops_removed=loops,
                       source=_provenance(source, input_edges=total, symmetrize=symmetrize,
                                          random_weights=options.random_weights,
                                          weight_seed=None if options.random_weights is None
                                          else options.seed))
    return attrs, ids, by_source


@njit(cache=True)
def _count_keys(counts, keys):
    for k in keys:
        counts[k] += 1


@njit(cache=True, parallel=True)
def _rename(ids, new_of_old):
    for i in prange(len(ids)):
        ids[i] = new_of_old[ids[i]]


def _renumbered(by_source: Buckets, old: np.ndarray, budget: int) -> Buckets:
    """The edges of ``by_source`` with vertex ``old[i]`` renamed i, bucketed again by their
    new source: one more pass over the edges, in the same budget, so a graph too large to
    renumber in memory still gets the order."""
    new_of_old = np.empty(len(old), dtype=np.int32)
    new_of_old[old] = np.arange(len(old), dtype=np.int32)
    out = by_source.like("renumbered")
    with progress.bar(by_source.num_edges, "renumbering", "edges") as bar:
        for _lo, _hi, (keys, others, wbits) in by_source.drain(budget):
            _rename(keys, new_of_old)
            _rename(others, new_of_old)
            out.add(keys, others, wbits)  # fresh arrays: kept as they are in memory
            bar.update(len(keys))
    return out


def _checked_edges(chunk: EdgeChunk, ids: IdSpace, source: EdgeSource, options: Options
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """A chunk as fresh int32 ``(src, dst, wbits)`` in the final numbering, without
    self-loops unless they are kept; also returns the number of self-loops dropped."""
    src, dst = ids.map(chunk.src), ids.map(chunk.dst)
    weighted = chunk.weight is not None and options.random_weights is None
    wbits = (np.ascontiguousarray(chunk.weight, np.float32).view(np.uint32) if weighted
             else _NO_WEIGHTS)
    src, dst, wbits, bad = compact_edges(src, dst, wbits, ids.num_vertices,
                                         options.keep_self_loops)
    if bad >= 0:
        vid = chunk.dst[bad] if 0 <= chunk.src[bad] < ids.num_vertices else chunk.src[bad]
        raise InputError(f"{source.provenance.get('input', 'input')}: vertex id {vid} is out "
                         f"of range for {ids.num_vertices} vertices")
    if options.random_weights is not None:
        from partitioner.weights import hash_weights

        lo, hi = options.random_weights
        wbits = hash_weights(src, dst, lo, hi, options.seed).view(np.uint32)
    return src, dst, wbits, len(chunk) - len(src)


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
        self.w_buf = np.empty(page_edges, np.uint32) if weighted else None
        self.fill, self.page = 0, 0

    def append(self, idx: np.ndarray, wbits: np.ndarray) -> None:
        pos = 0
        while pos < len(idx):
            take = min(self.pe - self.fill, len(idx) - pos)
            if self.fill == 0 and take == self.pe:  # a whole page: no need to buffer it
                self._write(idx[pos: pos + take], wbits[pos: pos + take])
            else:
                self.idx_buf[self.fill: self.fill + take] = idx[pos: pos + take]
                if self.w_buf is not None:
                    self.w_buf[self.fill: self.fill + take] = wbits[pos: pos + take]
                self.fill += take
                if self.fill == self.pe:
                    self.flush()
            pos += take

    def flush(self) -> None:
        if self.fill:
            self._write(self.idx_buf[: self.fill],
                        None if self.w_buf is None else self.w_buf[: self.fill])
            self.fill = 0

    def _write(self, idx: np.ndarray, wbits: np.ndarray | None) -> None:
        weights = None if self.w_buf is None else wbits.view(np.float32)
        self.sink.write_page(self.prefix, self.page, idx, weights)
        self.page += 1


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
                self.writer.resize(arr, num_edges)

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


def _sweep(buckets: Buckets, budget: int, desc: str, *, dedup: bool = False,
           by_weight: bool = False, pages: PagedArrays | None = None,
           then: Buckets | None = None, sample: np.ndarray | None = None
           ) -> tuple[np.ndarray, int]:
    """One sweep of pass 3: counting-sorts each group of buckets into rows by key.

    With ``dedup`` repeated neighbours are dropped (rows must come out sorted); with
    ``by_weight`` the rows are then ordered by weight; with ``pages`` the rows are written
    out; with ``then`` the edges are added to those buckets, keyed by their neighbour, in
    row order; into ``sample`` go each row's ``SAMPLE`` smallest neighbours
    (:func:`smallest_neighbours`). Returns the row offsets over all vertices and the number
    of duplicates dropped.
    """
    indptr = np.zeros(buckets.num_vertices + 1, dtype=np.int64)
    duplicates = 0
    with progress.bar(buckets.num_edges, desc, "edges") as bar:
        for lo, hi, (keys, others, wbits) in buckets.drain(budget):
            rows = sort_by_key(keys, others, wbits, lo, hi - lo)  # others, wbits in place
            bar.update(len(others))
            if dedup:
                kept = dedup_rows(rows, others, wbits)
                duplicates += len(others) - kept
                keys, others, wbits = keys[:kept], others[:kept], wbits[:kept]
            if sample is not None:
                smallest_neighbours(rows, others, SAMPLE, sample[SAMPLE * lo:SAMPLE * hi])
            if by_weight:
                sort_rows_by_weight(rows, others, wbits)
            indptr[lo + 1: hi + 1] = rows[1:] + indptr[lo]
            if pages is not None:
                pages.append(others, wbits)
            if then is not None:
                expand_rows(rows, lo, out=keys)  # the keys are spent: reuse their memory
                then.add(others, keys, wbits)
    if pages is not None:
        pages.flush()
    return indptr, duplicates


def fitted_page_edges(requested: int, edges: int) -> int:
    """The page size of a graph of at most ``edges`` edges: ``requested``, or the power of
    two that holds them all where that is smaller (and no smaller than MIN_PAGE_EDGES), so
    that a small graph's one page is not mostly padding (docs/store.md)."""
    return min(requested, max(MIN_PAGE_EDGES, 1 << max(0, edges - 1).bit_length()))


def page_bounds(indptr: np.ndarray, num_edges: int, page_edges: int) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """First and last destination vertex of every page."""
    starts = np.arange(0, num_edges, page_edges, dtype=np.int64)
    ends = np.minimum(starts + page_edges, num_edges) - 1
    first = np.searchsorted(indptr, starts, side="right") - 1
    last = np.searchsorted(indptr, ends, side="right") - 1
    return first.astype(np.int64), last.astype(np.int64)


def _emit_rows(sink: Sink, attrs: StoreAttrs, ids: IdSpace, by_source: Buckets,
               options: Options) -> None:
    """Pass 3: the sweeps into pages, then the per-vertex and per-page arrays; fills
    ``attrs``."""
    budget = options.budget()
    upper = by_source.num_edges
    attrs.page_edges = pe = fitted_page_edges(attrs.page_edges, upper)
    by_destination = by_source.like("by-destination")
    _sweep(by_source, budget, "ordering by source", then=by_destination)

    csr_input = None if attrs.symmetric else by_source.like("by-source-sorted")
    # Union-find's sample, for the symmetric graphs it runs on, whose rows go by weight.
    sample = np.empty(SAMPLE * attrs.num_vertices, np.int32) \
        if attrs.weighted and attrs.symmetric else None
    indptr, duplicates = _sweep(by_destination, budget, "sorting CSC",
                                dedup=not options.keep_duplicates, by_weight=attrs.weighted,
                                pages=PagedArrays(sink, "csc", upper, attrs.weighted, pe),
                                then=csr_input, sample=sample)
    attrs.row_order = "weight" if attrs.weighted else "source"
    m = int(indptr[-1])
    sink.finish_paged("csc", m)
    sink.write_array("csc/indptr", indptr)
    if sample is not None:
        sink.write_array("csc/sample", sample)
    if csr_input is not None:
        pages = PagedArrays(sink, "csr", m, attrs.weighted, pe)
        rindptr, _ = _sweep(csr_input, budget, "sorting CSR", pages=pages)
        sink.finish_paged("csr", m)
        sink.write_array("csr/indptr", rindptr)
    first, last = page_bounds(indptr, m, pe)
    sink.write_array("pages/first_vertex", first)
    sink.write_array("pages/last_vertex", last)
    if ids.original_ids is not None:
        sink.write_array("vertices/original_id", ids.original_ids)
    attrs.num_edges, attrs.num_pages = m, len(first)
    attrs.duplicates_removed = duplicates


def _emit(sink: Sink, attrs: StoreAttrs, ids: IdSpace, by_source: Buckets,
          options: Options) -> None:
    """Pass 3 into ``sink``; under ``--order rcm``, into memory first, then renumbered
    into ``sink``."""
    if options.order in ("input", "degree"):  # degree: renumbered in pass 2
        _emit_rows(sink, attrs, ids, by_source, options)
        if options.order == "degree":
            _write_lookup(sink, ids.original_ids)
        return
    # The rows, twice over while renumbered, and the order's own arrays.
    need = 3 * _sweep_bytes(by_source.num_edges, attrs.num_vertices, attrs.weighted)
    if need > options.budget():
        raise InputError(f"--order {options.order} renumbers the graph in memory: that needs "
                         f"about {need >> 20} MiB, more than the {options.budget() >> 20} MiB "
                         "memory budget; raise --memory or leave the input's order")
    staged = MemorySink()
    _emit_rows(staged, attrs, ids, by_source, options)
    _emit_renumbered(sink, attrs, staged.arrays, ids.original_ids, options)


def _emit_renumbered(sink: Sink, attrs: StoreAttrs, arrays: dict[str, np.ndarray],
                     input_ids: np.ndarray | None, options: Options) -> None:
    """The graph in ``arrays`` (pass 3's output) written to ``sink`` with its vertices in
    reverse Cuthill-McKee order; each keeps its input id (``vertices/original_id``)."""
    n, m, pe = attrs.num_vertices, attrs.num_edges, attrs.page_edges
    progress.info(f"ordering {n} vertices ({options.order})")
    old = rcm_order(arrays["csc/indptr"], arrays["csc/indices"], n, attrs.symmetric)
    new_of_old = np.empty(n, dtype=np.int64)
    new_of_old[old] = np.arange(n)
    for prefix in ("csc",) if attrs.symmetric else ("csc", "csr"):
        indptr, indices, weights = permute_rows(
            arrays[f"{prefix}/indptr"], arrays[f"{prefix}/indices"],
            arrays.get(f"{prefix}/weights"), old, new_of_old)
        if prefix == "csc" and weights is not None:  # as pass 3 left them
            if attrs.symmetric:
                sample = np.empty(SAMPLE * n, np.int32)
                smallest_neighbours(indptr, indices, SAMPLE, sample)
                sink.write_array("csc/sample", sample)
            sort_rows_by_weight(indptr, indices, weights.view(np.uint32))
        pages = PagedArrays(sink, prefix, m, attrs.weighted, pe)
        pages.append(indices, _NO_WEIGHTS if weights is None else weights.view(np.uint32))
        pages.flush()
        sink.finish_paged(prefix, m)
        sink.write_array(f"{prefix}/indptr", indptr)
        if prefix == "csc":
            first, last = page_bounds(indptr, m, pe)
    sink.write_array("pages/first_vertex", first)
    sink.write_array("pages/last_vertex", last)
    original = old if input_ids is None else input_ids[old]
    sink.write_array("vertices/original_id", original)
    _write_lookup(sink, original)
    attrs.relabelled, attrs.vertex_order = True, options.order


def _write_lookup(sink: Sink, original: np.ndarray) -> None:
    """``vertices/by_input_id`` of a renumbered store: its vertices by input id, which
    ``Graph.vertex_index`` searches."""
    sink.write_array("vertices/by_input_id", np.argsort(original, kind="stable"))


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
    order: str = "input"  #: the store's vertex order (:mod:`partitioner.order`)

    def check(self) -> None:
        check_order(self.order)
        pe = self.page_edges
        if pe < 1 or pe & (pe - 1):
            raise InputError(f"page_edges must be a power of two, got {pe}")
        if self.memory is not None and self.memory < (1 << 20):
            raise InputError(f"memory budget of {self.memory} bytes is too small "
                             "(at least 1 MiB)")

    def budget(self) -> int:
        """The host-memory budget in bytes."""
        return default_memory() if self.memory is None else int(self.memory)


def write_store(source: EdgeSource, output: str | os.PathLike, options: Options | None = None,
                *, force: bool = False, command: str | None = None) -> Path:
    """Partitions ``source`` into a store at ``output`` (see the module docstring).

    The store is built beside ``output`` and renamed into place only when complete.
    ``force`` replaces an existing Seraph store and nothing else (see
    :mod:`seraph.temporaries`, which also says what is removed of earlier killed runs).
    """
    options = options or Options()
    options.check()
    output = Path(output)
    temporaries.check_output(output, force)
    try:
        with temporaries.folder_for(output), temporaries.temp_dir(output, "spill") as spill:
            removed = temporaries.remove_leftovers(output)
            if removed:
                progress.note(f"removed what an interrupted earlier run left: "
                              f"{', '.join(p.name for p in removed)}")
            attrs, ids, by_source = _bucket(source, options, spill)
            with StoreWriter(output, attrs, force=force) as writer:
                attrs.source["command"] = command or " ".join(sys.argv)
                _emit(StoreSink(writer), attrs, ids, by_source, options)
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
        attrs, ids, by_source = _bucket(source, options, Path(spill))
        sink = MemorySink()
        _emit(sink, attrs, ids, by_source, options)
    attrs.complete = True
    return attrs, sink.arrays


def _provenance(source: EdgeSource, **extra) -> dict:
    import numba
    import scipy
    import zarr

    from seraph.version import __version__

    return {**source.provenance, **{k: v for k, v in extra.items() if v is not None},
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "versions": {"seraph": __version__, "python": platform.python_version(),
                         "numpy": np.__version__, "scipy": scipy.__version__,
                         "numba": numba.__version__, "zarr": zarr.__version__}}
