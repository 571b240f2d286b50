"""Hub chunks: the in-edges of the highest in-degree vertices, cut into pieces that the
GPU pull kernels spread over many warps.

A pull sweep gives each vertex to one group of lanes, so a hub's in-edges (a million on
an R-MAT of scale 26) are read one warp-width at a time while the rest of the grid waits
at the sweep's end. A window of a hundred pages hides that tail; one page does not, and
the persistent kernel sweeps one page at a time (docs/engine.md). So the in-edges
of every vertex with more than ``HUB_EDGES`` of them are listed as chunks of at most
``CHUNK_EDGES`` edges, each within one page, and each chunk is pulled by its own warp;
the chunks of a vertex combine through the atomic min that already joins a vertex split
across pages.

The list is built once per graph on the host and costs 24 bytes a chunk (a few MB for a
billion edges), which :meth:`seraph.backends.layout.Layout.plan` counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

#: A vertex with more in-edges than this is a hub: its in-edges go to chunks.
HUB_EDGES = 4096
#: The most in-edges in one chunk (one warp's share).
CHUNK_EDGES = 4096


@dataclass(frozen=True)
class HubChunks:
    """``chunks[i] = (vertex, first edge, end edge)`` (CSC edge ids, ascending), and the
    chunks of page ``p`` are ``chunks[page_chunks[p]:page_chunks[p + 1]]``."""

    hub_edges: int
    chunks: np.ndarray  # int64 (count, 3)
    page_chunks: np.ndarray  # int64 (num_pages + 1)

    @property
    def nbytes(self) -> int:
        return self.chunks.nbytes


@njit(cache=True)
def _hubs(indptr: np.ndarray, hub_edges: int) -> np.ndarray:
    """The vertices with more than ``hub_edges`` in-edges, ascending. One pass that
    allocates only its answer: numpy's ``diff`` would page-fault a temporary of 8 bytes a
    vertex."""
    count = 0
    for v in range(len(indptr) - 1):
        count += indptr[v + 1] - indptr[v] > hub_edges
    hubs = np.empty(count, dtype=np.int64)
    count = 0
    for v in range(len(indptr) - 1):
        if indptr[v + 1] - indptr[v] > hub_edges:
            hubs[count] = v
            count += 1
    return hubs


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., c - 1 for each count c in turn: the position of each repeated item
    within its own group after ``np.repeat(..., counts)``."""
    starts = np.cumsum(counts) - counts
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)


def hub_chunks(indptr: np.ndarray, page_edges: int, num_pages: int,
               hub_edges: int = HUB_EDGES, chunk_edges: int = CHUNK_EDGES) -> HubChunks:
    """The chunks of a CSC whose page ``p`` holds edges ``[p * page_edges, (p + 1) *
    page_edges)``: each hub's in-edges are cut at page boundaries, then into pieces of
    ``chunk_edges``."""
    indptr = np.asarray(indptr, dtype=np.int64)
    hubs = _hubs(indptr, hub_edges)
    lo, hi = indptr[hubs], indptr[hubs + 1]
    # One slice per (hub, page it has in-edges in).
    first_page = lo // page_edges
    per_hub = (hi - 1) // page_edges - first_page + 1
    page = np.repeat(first_page, per_hub) + _ranks(per_hub)
    vertex = np.repeat(hubs, per_hub)
    start = np.maximum(np.repeat(lo, per_hub), page * page_edges)
    end = np.minimum(np.repeat(hi, per_hub), (page + 1) * page_edges)
    # Then one chunk per chunk_edges of each slice.
    per_slice = -(-(end - start) // chunk_edges)
    chunk_start = np.repeat(start, per_slice) + _ranks(per_slice) * chunk_edges
    chunks = np.stack((np.repeat(vertex, per_slice), chunk_start,
                       np.minimum(chunk_start + chunk_edges, np.repeat(end, per_slice))),
                      axis=1)
    # Edge ids ascend, so the chunks are in page order.
    page_chunks = np.searchsorted(np.repeat(page, per_slice),
                                  np.arange(num_pages + 1), side="left").astype(np.int64)
    return HubChunks(hub_edges, np.ascontiguousarray(chunks, dtype=np.int64), page_chunks)

