"""Public entry points of the partitioner: preprocess, generate, describe a store."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from partitioner.edges import EdgeSource
from partitioner.writer import DEFAULT_PAGE_EDGES, Options, write_store
from seraph.errors import InputError
from seraph.store import Store
from seraph.units import parse_size


def to_edge_source(data, format: str = "auto", weights: str = "auto") -> EdgeSource:
    """Any supported input as an edge stream: a path, a scipy sparse matrix, a tuple
    ``(src, dst)`` or ``(src, dst, weight)`` of arrays, or an EdgeSource."""
    from partitioner.readers import edges_from_arrays, edges_from_scipy, open_edge_file

    if isinstance(data, EdgeSource):
        return data
    if isinstance(data, (str, os.PathLike)):
        return open_edge_file(data, format=format, weights=weights)
    if sp.issparse(data):
        return edges_from_scipy(data)
    if isinstance(data, tuple) and len(data) in (2, 3):
        return edges_from_arrays(*data)
    raise InputError(f"cannot read a graph from {type(data).__name__}: pass a file path, a "
                     "scipy sparse matrix or a (src, dst[, weight]) tuple of arrays")


def preprocess(data, output: str | os.PathLike, *, format: str = "auto", weights: str = "auto",
               symmetrize: bool = False, keep_duplicates: bool = False,
               keep_self_loops: bool = False, page_edges: int = DEFAULT_PAGE_EDGES,
               memory: int | str | None = None, compress: bool = False, order: str = "input",
               force: bool = False, seed: int = 0, command: str | None = None) -> Path:
    """Preprocesses an input graph into a Seraph store at ``output``.

    ``order`` is the store's vertex order (:mod:`partitioner.order`): ``input``, ``rcm``
    or ``degree``.

    ``weights`` is ``auto`` (weights from the input when it has them), ``none``, ``file``
    (the input must carry weights) or ``random:LO,HI`` (deterministic by ``seed``).
    """
    from partitioner.weights import parse_weight_spec

    random_weights = None
    if weights.startswith("random"):
        random_weights = parse_weight_spec(weights)
        weights = "none"
    source = to_edge_source(data, format, weights)
    options = Options(symmetrize=symmetrize, random_weights=random_weights, seed=seed,
                      keep_duplicates=keep_duplicates, keep_self_loops=keep_self_loops,
                      page_edges=page_edges,
                      memory=None if memory is None else parse_size(memory), compress=compress,
                      order=order)
    return write_store(source, output, options, force=force, command=command)


def store_info(path: str | os.PathLike) -> dict:
    """Everything ``seraph info`` shows about a store."""
    store = Store(path)
    a = store.attrs
    indptr = store.read("csc/indptr")
    in_deg = np.diff(indptr)
    out_deg = in_deg if a.symmetric else np.diff(store.read("csr/indptr"))

    def stats(deg: np.ndarray) -> dict:
        return {"max": int(deg.max()) if len(deg) else 0,
                "mean": float(deg.mean()) if len(deg) else 0.0,
                "zero": int((deg == 0).sum())}

    return {"path": str(Path(path)), "num_vertices": a.num_vertices, "num_edges": a.num_edges,
            "directed": a.directed, "symmetric": a.symmetric, "weighted": a.weighted,
            "weight_dtype": a.weight_dtype, "page_edges": a.page_edges,
            "num_pages": a.num_pages, "compression": a.compression or "none",
            "relabelled": a.relabelled, "vertex_order": a.vertex_order, "row_order": a.row_order,
            "in_degree": stats(in_deg),
            "out_degree": stats(out_deg), "self_loops_removed": a.self_loops_removed,
            "duplicates_removed": a.duplicates_removed, "format_version": a.version,
            "bytes_on_disk": store.disk_bytes(), "source": a.source}
