"""A graph's pages split among workers: each part is a contiguous run of pages, balanced
by edges (docs/design.md, "Many workers").

A store's pages are contiguous destination-vertex ranges of the CSC, so a part holds the
in-edges of a contiguous range of vertices. :class:`PartGraph` is that part as a graph of
its own that the engine runs unchanged: every vertex of the whole graph, and of the edges
only those of its pages. Its CSR (for the push rounds) is the transpose of its CSC: the
out-edges whose heads it holds. It reads only its own pages from the store.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numba import prange

from seraph.backends.caches import graph_cached, out_degrees
from seraph.errors import ConfigError
from seraph.graph import Graph
from seraph.kernels import kernel
from seraph.store import SAMPLE

#: A transpose files the edges into about this many ranges of tails first (a bucket
#: pass), then sorts each range by tail with counts that fit a core's cache.
_TAIL_RANGES = 1 << 12


def check_parts(graph, workers: int, what: str = "workers") -> None:
    """Refuses more workers than the graph has pages (a worker holds at least one)."""
    if workers > graph.num_pages:
        raise ConfigError(f"{what}: {workers} workers for a graph of {graph.num_pages} "
                          f"page(s); a worker holds at least one page, so use at most "
                          f"{graph.num_pages} (or pages of fewer edges: seraph preprocess "
                          "--page-edges)")


def split_pages(graph, parts: int) -> np.ndarray:
    """Page boundaries of ``parts`` contiguous parts balanced by edges: part k holds pages
    ``bounds[k]`` to ``bounds[k + 1] - 1``. Every part gets a page while there are pages
    for all (more parts than pages leave the last ones empty)."""
    pages, pe, m = graph.num_pages, graph.page_edges, graph.num_edges
    # Edges before page b are min(b * pe, m): the boundary nearest each part's share.
    targets = np.arange(parts + 1, dtype=np.float64) * m / max(parts, 1)
    bounds = np.minimum(np.rint(targets / pe), pages).astype(np.int64)
    bounds[0], bounds[-1] = 0, pages
    for k in range(1, parts):  # at least a page each, where there are enough
        bounds[k] = min(max(bounds[k], bounds[k - 1] + 1), max(pages - (parts - k), 0))
    return np.maximum.accumulate(bounds)


def part_of(graph, parts: int, part: int) -> PartGraph:
    """Part ``part`` of ``parts`` (:func:`split_pages`), kept with the graph: its arrays and
    everything the engine caches for it serve the graph's later runs."""
    def make() -> PartGraph:
        bounds = split_pages(graph, parts)
        return PartGraph(graph, int(bounds[part]), int(bounds[part + 1]))
    return graph_cached(graph, ("part", parts, part), make)


class PartGraph(Graph):
    """Pages ``first_page`` to ``end_page - 1`` of ``whole``, as a graph over all of its
    vertices: the in-edges of the vertices those pages hold (page p here is page
    ``first_page + p`` there).

    Directed whatever the whole graph is: its out-edges (its CSR) are the whole graph's
    out-edges whose heads lie in its pages. Its out-degrees are the whole graph's, which
    the programs (PageRank's shares) and the decisions between rounds read."""

    def __init__(self, whole: Graph, first_page: int, end_page: int):
        pe, m = whole.page_edges, whole.num_edges
        self.whole, self.first_page, self.end_page = whole, first_page, end_page
        self.edge_base = min(first_page * pe, m)
        edges = min(end_page * pe, m) - self.edge_base
        super().__init__(replace(whole.attrs, num_edges=edges, num_pages=end_page - first_page,
                                 directed=True, symmetric=False))

    @property
    def path(self):
        return self.whole.path

    @property
    def vertices(self) -> tuple[int, int]:
        """The range [lo, hi) of the vertices whose in-edges this part holds (empty when
        it holds none): the only values a run on it writes."""
        if self.num_pages == 0:
            return 0, 0
        return int(self.page_first_vertex[0]), int(self.page_last_vertex[-1]) + 1

    def array(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            self._arrays[name] = self._part_array(name)
        return self._arrays[name]

    def _part_array(self, name: str) -> np.ndarray:
        whole, lo, hi = self.whole, self.first_page, self.end_page
        if name in ("pages/first_vertex", "pages/last_vertex"):
            return whole.array(name)[lo:hi]
        if name == "csc/indptr":
            return np.clip(whole.array(name) - self.edge_base, 0, self.num_edges)
        if name in ("csc/indices", "csc/weights"):
            return self._pages(name)
        if name.startswith("csr/"):
            self._transpose()
            return self._arrays[name]
        if name == "csc/sample":  # this part's vertices' alone, as its rows
            own, (first, end) = np.full(len(whole.array(name)), -1, np.int32), self.vertices
            own[SAMPLE * first:SAMPLE * end] = whole.array(name)[SAMPLE * first:SAMPLE * end]
            return own
        return whole.array(name)  # per-vertex arrays: the whole graph's ids

    def sample(self) -> np.ndarray | None:
        return None if self.whole.sample() is None else self.array("csc/sample")

    def _pages(self, name: str) -> np.ndarray:
        """This part's pages of a paged array: a slice where the whole graph holds it in
        memory, else its pages read from the store, and nothing else."""
        whole = self.whole
        if name in whole._arrays or whole._store is None:
            return whole.array(name)[self.edge_base:self.edge_base + self.num_edges]
        dtype = np.int32 if name.endswith("indices") else np.float32
        out = np.empty(self.num_edges, dtype=dtype)
        for p in range(self.num_pages):
            whole._store.read_chunk_into(name, self.first_page + p, out[p * self.page_edges:])
        return out

    def _transpose(self) -> None:
        """The CSR of this part's edges: rows by tail, each row's heads ascending
        (:func:`csr_of`)."""
        indptr, indices, weights = self.csc()
        out = csr_of(indptr, indices, weights, self.num_vertices)
        self._arrays["csr/indptr"], self._arrays["csr/indices"] = out[:2]
        if weights is not None:
            self._arrays["csr/weights"] = out[2]

    def read_page(self, page: int, out_indices: np.ndarray,
                  out_weights: np.ndarray | None = None) -> int:
        start, end = self.page_range(page)
        for name, out in (("csc/indices", out_indices), ("csc/weights", out_weights)):
            if out is None:
                continue
            if name in self._arrays or self.whole._store is None:
                out[:end - start] = self.array(name)[start:end]
            else:
                self.whole._store.read_chunk_into(name, self.first_page + page, out)
        return end - start

    def out_degrees(self) -> np.ndarray:
        return out_degrees(self.whole)

    @property
    def vertex_ids(self) -> np.ndarray:
        return self.whole.vertex_ids

    def vertex_index(self, vertex_id: int) -> int:
        return self.whole.vertex_index(vertex_id)

    def __repr__(self) -> str:
        return (f"<seraph part: pages {self.first_page}..{self.end_page - 1} of "
                f"{self.whole!r}>")


def csr_of(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray | None, n: int):
    """The transpose of a CSC of ``n`` vertices (``indptr``, ``indices``: each in-edge's
    tail, ``weights`` or None): ``(indptr, heads, weights)`` with rows by tail and each
    row's heads ascending. Two passes over the edges on every thread, as a radix sort by
    the tails' high bits and then their low bits, with 4 bytes an edge beside the output:
    numpy's single-threaded stable argsort of a billion tails is minutes of a worker's
    first call."""
    m = len(indices)
    shift = max(0, (max(n, 1) - 1).bit_length() - _TAIL_RANGES.bit_length() + 1)
    out_indptr = np.zeros(n + 1, dtype=np.int64)
    heads = np.empty(m, dtype=np.int32)
    out_weights = np.empty(m if weights is not None else 0,
                           dtype=np.float32 if weights is None else weights.dtype)
    chunks = max(1, min(m >> 16, 256))
    weighted = weights is not None
    _transpose.over(m)(indptr, indices, weights if weighted else out_weights, weighted, n,
                       shift, chunks, out_indptr, heads, out_weights)
    return out_indptr, heads, (out_weights if weighted else None)


@kernel(cache=True, parallel=True)
def _transpose(indptr, indices, weights, weighted, n, shift, chunks, out_indptr, heads,
               out_weights):
    """:func:`csr_of`'s passes. The edges are cut into ``chunks`` runs of heads; each run
    counts its tails by range (``tail >> shift``) and files its edges into the ranges,
    runs in order, so a range lists its edges by ascending head. A range's edges then
    take the places of its rows' edges in the CSR, so each range, on its own, sorts them
    there by tail (stable) with counts its width long: a copy of one range at a time,
    not of every edge, beside the output."""
    m = len(indices)
    ranges = ((max(n, 1) - 1) >> shift) + 1
    first = np.empty(chunks + 1, dtype=np.int64)
    for c in range(chunks + 1):
        first[c] = m * c // chunks
    counts = np.zeros((chunks, ranges), dtype=np.int64)
    for c in prange(chunks):
        for e in range(first[c], first[c + 1]):
            counts[c, indices[e] >> shift] += 1
    start = np.empty(ranges + 1, dtype=np.int64)  # where each range's edges begin
    cursor = np.empty((chunks, ranges), dtype=np.int64)
    at = 0
    for r in range(ranges):
        start[r] = at
        for c in range(chunks):
            cursor[c, r] = at
            at += counts[c, r]
    start[ranges] = at
    filed_tails = np.empty(m, dtype=np.int32)
    for c in prange(chunks):
        if first[c] == first[c + 1]:
            continue
        head = np.searchsorted(indptr, first[c], side="right") - 1
        for e in range(first[c], first[c + 1]):
            while indptr[head + 1] <= e:
                head += 1
            r = indices[e] >> shift
            at = cursor[c, r]
            cursor[c, r] = at + 1
            filed_tails[at] = indices[e]
            heads[at] = head
            if weighted:
                out_weights[at] = weights[e]
    for r in prange(ranges):
        low, lo, hi = r << shift, start[r], start[r + 1]
        width = min(n - low, 1 << shift)
        if width <= 0:
            continue
        place = np.zeros(width + 1, dtype=np.int64)
        for i in range(lo, hi):
            place[filed_tails[i] - low + 1] += 1
        place[0] = lo
        for t in range(width):
            place[t + 1] += place[t]
            out_indptr[low + t + 1] = place[t + 1]
        filed_heads = heads[lo:hi].copy()
        filed_weights = out_weights[lo:hi].copy()
        for i in range(lo, hi):
            t = filed_tails[i] - low
            at = place[t]
            place[t] = at + 1
            heads[at] = filed_heads[i - lo]
            if weighted:
                out_weights[at] = filed_weights[i - lo]
