"""The graph users hold: an opened store, or one built in memory from arrays.

Both kinds expose the same things the engine needs: the CSC row pointers, the pages (one
chunk of ``csc/indices`` and ``csc/weights`` each), the CSR for the push engine, and the
mapping between the store's vertex numbers and the input's ids.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from seraph.errors import InputError
from seraph.store import Store, StoreAttrs


class Graph:
    """A directed (or symmetric) graph in Seraph's paged CSC layout.

    Vertices are numbered ``0..num_vertices-1``. When the input's ids were relabelled,
    ``vertex_ids[i]`` is the input id of vertex i; otherwise it is ``i``.
    """

    def __init__(self, attrs: StoreAttrs, store: Store | None = None,
                 arrays: dict[str, np.ndarray] | None = None):
        self.attrs = attrs
        self._store = store
        self._arrays = dict(arrays or {})

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike) -> Graph:
        """Opens and validates a store written by ``seraph preprocess``."""
        store = Store(path)
        return cls(store.attrs, store=store)

    @classmethod
    def from_edges(cls, src, dst, weight=None, num_vertices: int | None = None, *,
                   symmetrize: bool = False, page_edges: int | None = None,
                   keep_duplicates: bool = False, keep_self_loops: bool = False,
                   order: str = "input") -> Graph:
        """Builds an in-memory graph from edge arrays ``src[i] -> dst[i]`` (weights optional).

        Self-loops and duplicate edges are dropped (a duplicate keeps its minimum weight)
        unless asked to keep them, exactly as ``seraph preprocess`` does. ``order="rcm"``
        (road networks, meshes) or ``order="degree"`` (power-law graphs) renumbers the
        vertices for locality (:mod:`partitioner.order`); results are then per store
        vertex, named by :attr:`vertex_ids`.
        """
        from partitioner.readers import edges_from_arrays

        return cls._build(edges_from_arrays(src, dst, weight, num_vertices), symmetrize,
                          page_edges, keep_duplicates, keep_self_loops, order)

    @classmethod
    def from_scipy(cls, matrix, *, symmetrize: bool = False, page_edges: int | None = None,
                   keep_self_loops: bool = False) -> Graph:
        """Builds an in-memory graph from a square scipy sparse matrix (entry (u, v) is the
        edge u -> v with its value as weight), as scipy.sparse.csgraph reads it."""
        from partitioner.readers import edges_from_scipy

        return cls._build(edges_from_scipy(matrix), symmetrize, page_edges, False,
                          keep_self_loops, "input")

    @classmethod
    def _build(cls, source, symmetrize, page_edges, keep_duplicates, keep_self_loops,
               order) -> Graph:
        from partitioner.writer import DEFAULT_PAGE_EDGES, Options, build_in_memory

        attrs, arrays = build_in_memory(source, Options(
            symmetrize=symmetrize, page_edges=page_edges or DEFAULT_PAGE_EDGES,
            keep_duplicates=keep_duplicates, keep_self_loops=keep_self_loops, order=order))
        return cls(attrs, arrays=arrays)

    # -- metadata -------------------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        return None if self._store is None else self._store.path

    @property
    def num_vertices(self) -> int:
        return self.attrs.num_vertices

    @property
    def num_edges(self) -> int:
        return self.attrs.num_edges

    @property
    def directed(self) -> bool:
        return self.attrs.directed

    @property
    def symmetric(self) -> bool:
        return self.attrs.symmetric

    @property
    def weighted(self) -> bool:
        return self.attrs.weighted

    @property
    def rows_by_weight(self) -> bool:
        """Whether each CSC row lists its in-edges lightest first (weighted stores since
        the row order was recorded; older ones are sorted by source)."""
        return self.attrs.row_order == "weight"

    def sample(self) -> np.ndarray | None:
        """``csc/sample`` (docs/store.md): each vertex's smallest in-neighbours, where its
        row does not begin with them (rows by weight); None where the rows do, or where the
        store was written before it."""
        stored = "csc/sample" in self._arrays or \
            (self._store is not None and self._store.has("csc/sample"))
        return self.array("csc/sample") if self.rows_by_weight and stored else None

    @property
    def page_edges(self) -> int:
        return self.attrs.page_edges

    @property
    def num_pages(self) -> int:
        return self.attrs.num_pages

    def __repr__(self) -> str:
        kind = "symmetric" if self.symmetric else "directed"
        where = f" at {self.path}" if self.path else " in memory"
        return (f"<seraph.Graph {kind}, {self.num_vertices} vertices, {self.num_edges} edges, "
                f"{'weighted' if self.weighted else 'unweighted'}, {self.num_pages} pages"
                f"{where}>")

    # -- arrays ---------------------------------------------------------------------------
    def array(self, name: str) -> np.ndarray:
        """A whole store array in host memory (read once, then cached)."""
        if name not in self._arrays:
            if self._store is None:
                raise KeyError(name)
            self._arrays[name] = self._store.read(name)
        return self._arrays[name]

    @cached_property
    def vertex_ids(self) -> np.ndarray:
        if self.attrs.relabelled:
            return self.array("vertices/original_id")
        return np.arange(self.num_vertices, dtype=np.int64)

    def csc(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(indptr, indices, weights) of the in-edges, whole, in host memory."""
        return (self.array("csc/indptr"), self.array("csc/indices"),
                self.array("csc/weights") if self.weighted else None)

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(indptr, indices, weights) of the out-edges (the CSC itself when symmetric)."""
        if self.symmetric:
            return self.csc()
        return (self.array("csr/indptr"), self.array("csr/indices"),
                self.array("csr/weights") if self.weighted else None)

    @property
    def page_first_vertex(self) -> np.ndarray:
        return self.array("pages/first_vertex")

    @property
    def page_last_vertex(self) -> np.ndarray:
        return self.array("pages/last_vertex")

    def page_range(self, page: int) -> tuple[int, int]:
        """Edge offsets [start, end) of a page within ``csc/indices``."""
        start = page * self.page_edges
        return start, min(start + self.page_edges, self.num_edges)

    def read_page(self, page: int, out_indices: np.ndarray,
                  out_weights: np.ndarray | None = None) -> int:
        """Copies page ``page`` into the given buffers (e.g. pinned slots); returns its length.

        Arrays already in host memory are copied from there; otherwise the page's chunk is
        read straight from the store.
        """
        start, end = self.page_range(page)
        for name, out in (("csc/indices", out_indices), ("csc/weights", out_weights)):
            if out is None:
                continue
            if name in self._arrays or self._store is None:
                out[: end - start] = self.array(name)[start:end]
            else:
                self._store.read_chunk_into(name, page, out)
        return end - start

    def page(self, page: int, out_indices: np.ndarray, out_weights: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray | None]:
        """Page ``page``'s in-edges (and weights, where ``out_weights`` is given): views of
        the arrays already in host memory, else the page read into the given buffers."""
        start, end = self.page_range(page)
        if "csc/indices" in self._arrays and (out_weights is None or
                                              "csc/weights" in self._arrays):
            weights = None if out_weights is None else self._arrays["csc/weights"][start:end]
            return self._arrays["csc/indices"][start:end], weights
        count = self.read_page(page, out_indices, out_weights)
        return out_indices[:count], None if out_weights is None else out_weights[:count]

    def in_degrees(self) -> np.ndarray:
        return np.diff(self.csc()[0])

    def out_indptr(self) -> np.ndarray:
        """The CSR's ``indptr`` alone (the CSC's when symmetric): the out-degrees without
        reading the out-edges."""
        return self.array("csc/indptr" if self.symmetric else "csr/indptr")

    def out_degrees(self) -> np.ndarray:
        return np.diff(self.out_indptr())

    def release_device_memory(self) -> None:
        """Frees what GPU runs keep on the device for this graph between runs (its CSC
        index and, while it fits, every page); the next GPU run uploads them again. They
        are freed with the graph too."""
        cache = self.__dict__.get("_engine_cache", {})
        held = cache.pop("device", None)
        if held is not None:
            held.release()
        for part in cache.values():  # a part of it (several workers) holds its own
            if isinstance(part, Graph):
                part.release_device_memory()

    def to_scipy(self) -> sp.csr_array:
        """The adjacency matrix (row u, column v for edge u -> v), as csgraph expects."""
        indptr, indices, weights = self.csc()
        data = np.ones(self.num_edges, np.float64) if weights is None else weights.astype(
            np.float64)
        n = self.num_vertices
        # CSC of the adjacency matrix is exactly our in-edge layout.
        return sp.csc_array((data, indices, indptr), shape=(n, n)).tocsr()

    # -- ids ------------------------------------------------------------------------------
    def vertex_index(self, vertex_id: int) -> int:
        """The store's vertex number of an input id (raises InputError if absent)."""
        try:
            vid = int(vertex_id)
        except (TypeError, ValueError):
            raise InputError(f"vertex id must be an integer, got {vertex_id!r}") from None
        if not self.attrs.relabelled:
            if not 0 <= vid < self.num_vertices:
                raise InputError(f"source vertex {vid} is out of range: the graph has "
                                 f"vertices 0..{self.num_vertices - 1}")
            return vid
        ids = self._sorted_vertex_ids
        i = int(np.searchsorted(ids, vid))
        if i >= len(ids) or ids[i] != vid:
            raise InputError(f"source vertex {vid} is not a vertex of this graph (its input "
                             "ids were relabelled; see Graph.vertex_ids)")
        return i if self.attrs.vertex_order == "input" else int(self._by_input_id[i])

    @cached_property
    def _by_input_id(self) -> np.ndarray:
        """The store's vertices by input id (a renumbered store's, partitioner.order)."""
        return self.array("vertices/by_input_id")

    @cached_property
    def _sorted_vertex_ids(self) -> np.ndarray:
        """The input ids in ascending order: :attr:`vertex_ids` itself unless renumbered."""
        if self.attrs.vertex_order == "input":
            return self.vertex_ids
        return self.vertex_ids[self._by_input_id]


def open_graph(path: str | os.PathLike) -> Graph:
    """Opens and validates a store written by ``seraph preprocess`` or ``seraph generate``."""
    return Graph.open(path)
