"""Shortest-path predecessors, derived after convergence.

Many predecessor trees are valid; we pick one deterministically and independently of how
the values were computed: a breadth-first walk from the source over *tight* out-edges
(``value[u] + w == value[v]``), taking for each vertex the first tight in-neighbour the
walk reaches. Walking from the source, rather than choosing any tight in-neighbour,
keeps the tree acyclic when zero-weight edges make ties.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from seraph.backends.caches import graph_operands
from seraph.backends.cpu.pull import offer
from seraph.operators import HOP, LABEL


@njit(cache=True)
def _tight_walk(indptr, indices, weights, values, source, op):
    n = len(values)
    pred = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=np.bool_)
    queue = np.empty(n, dtype=np.int64)
    queue[0] = source
    seen[source] = True
    head, tail = 0, 1
    while head < tail:
        u = queue[head]
        head += 1
        for i in range(indptr[u], indptr[u + 1]):
            v = indices[i]
            if seen[v]:
                continue
            if op == HOP:
                tight = values[u] + 1 == values[v]
            elif op == LABEL:
                tight = values[u] == values[v]
            else:
                tight = offer(op, values[u], weights[i]) == values[v]
            if tight:
                seen[v] = True
                pred[v] = u
                queue[tail] = v
                tail += 1
    return pred


def predecessors(graph, values: np.ndarray, source: int, op: int) -> np.ndarray:
    """A predecessor for every reached vertex (-1 for the source and unreached ones)."""
    indptr, indices, _weights = graph.csr()
    w = graph_operands(graph, op, "csr")
    w = w if w is not None else np.zeros(0, np.float32)
    return _tight_walk(indptr, indices, w, values, source, op)
