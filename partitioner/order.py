"""Vertex orders for locality: which store vertex each input vertex becomes.

Real road networks and meshes come with ids in no useful order, so a BFS or SSSP over
them touches a new cache line for nearly every edge. Numbering the vertices in reverse
Cuthill-McKee order (Cuthill and McKee 1969; George 1971), a BFS order from a
peripheral vertex, puts each vertex's neighbours at nearby ids: on a road-like
grid with shuffled ids the CPU push loop of a BFS runs faster
(docs/benchmarks/orders-cpu.md). The order comes from scipy
(``scipy.sparse.csgraph.reverse_cuthill_mckee``).

Power-law graphs (R-MAT, social and web graphs) come with their hubs at random ids.
Numbering the vertices by decreasing out-degree, as GAP and Ligra relabel, puts the hubs'
values in a few cache lines, which most edges read, and their in-edges in the first pages,
which a dense round pulls first, so the vertices after them pull final hub values (R-MAT
figures: docs/benchmarks/degree-order.md).

The reverse Cuthill-McKee order is applied to a graph built in memory; the degree order
while the edges are bucketed, out of core. The store keeps each vertex's input id, so
results still name input vertices.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange
from scipy.sparse.csgraph import reverse_cuthill_mckee

from seraph.errors import InputError

#: ``input``: store vertices in input-id order; ``rcm``: reverse Cuthill-McKee;
#: ``degree``: by decreasing out-degree.
ORDERS = ("input", "rcm", "degree")


def check_order(order: str) -> None:
    if order not in ORDERS:
        raise InputError(f"unknown vertex order {order!r}; expected one of {', '.join(ORDERS)}")


def degree_order(out_degrees: np.ndarray) -> np.ndarray:
    """``old[i]``: the vertex that becomes vertex i, by decreasing out-degree (ties keep
    the input order). The writer counts the out-edges as it buckets them, duplicates
    included, so the order costs one more pass over the edges and no in-memory copy of
    the graph."""
    return np.argsort(-out_degrees.astype(np.int64), kind="stable")


def rcm_order(indptr: np.ndarray, indices: np.ndarray, num_vertices: int,
              symmetric: bool) -> np.ndarray:
    """``old[i]``: the vertex that becomes vertex i, in reverse Cuthill-McKee order of the
    graph's structure (made symmetric first when it is not)."""
    a = sp.csr_array((np.ones(len(indices), dtype=np.int8), indices, indptr),
                     shape=(num_vertices, num_vertices))
    if not symmetric:
        a = (a + a.T).tocsr()
    return reverse_cuthill_mckee(a, symmetric_mode=True).astype(np.int64)


def permute_rows(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray | None,
                 old: np.ndarray, new_of_old: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The compressed rows of the same graph with vertex ``old[i]`` renamed ``i``: row i is
    old row ``old[i]`` with each neighbour renamed by ``new_of_old``, sorted again."""
    degrees = np.diff(indptr)[old]
    new_indptr = np.zeros(len(old) + 1, dtype=np.int64)
    np.cumsum(degrees, out=new_indptr[1:])
    new_indices = np.empty_like(indices)
    new_weights = None if weights is None else np.empty_like(weights)
    _permute_rows(indptr, indices, weights if weights is not None else np.empty(0, np.float32),
                  old, new_of_old, new_indptr, new_indices,
                  new_weights if new_weights is not None else np.empty(0, np.float32))
    return new_indptr, new_indices, new_weights


@njit(cache=True, parallel=True)
def _permute_rows(indptr, indices, weights, old, new_of_old, new_indptr, new_indices,
                  new_weights):
    weighted = len(weights) > 0
    for i in prange(len(old)):
        lo, start, end = indptr[old[i]], new_indptr[i], new_indptr[i + 1]
        row = new_of_old[indices[lo:lo + end - start]]
        by = np.argsort(row, kind="mergesort")  # stable: equal neighbours keep their order
        for j in range(end - start):
            new_indices[start + j] = row[by[j]]
            if weighted:
                new_weights[start + j] = weights[lo + by[j]]
