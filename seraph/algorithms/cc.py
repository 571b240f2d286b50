"""Connected components of a symmetric graph: each vertex is labelled by the smallest
vertex id of its component.

Method (``components="union-find"``, the default): union-find, as Afforest runs it: link
every vertex to its first neighbours, find the largest component from a sample, then link
the other vertices' remaining edges, hooking the higher root under the lower so that each
root is its component's smallest id (:mod:`seraph.backends.cpu.union_find`;
``kernels/union_find.cu`` on the GPU). Each edge is read about once and the work does not
grow with the diameter. With ``components="propagation"`` (the predictors' subject):

Method: min-label propagation (the label-propagation member of the Shiloach-Vishkin
family) of the edge operator ``d``: every vertex starts with its own id
and each round pulls ``min(label[u])`` over its in-edges. Strong rule ``SMALLEST_WRITTEN``: the
smallest label a round wrote is the smallest label whose component changed, so the labels
below it form closed, settled components.

When pages move, the largest component is found first, as GAP's Afforest does: a reach from
the highest out-degree vertex (the hub) labels its component in one BFS-like pass with
push and bottom-up rounds, and the other components' labels spread from there
(:func:`components_from_hub`).

- J. Jaiganesh, M. Burtscher. A high-performance connected components implementation for
  GPUs (ECL-CC). HPDC 2018.
- Y. Shiloach, U. Vishkin. An O(log n) parallel connectivity algorithm. J. Algorithms
  1982.
- M. Sutton, T. Ben-Nun, A. Barak. Optimizing parallel graph connectivity computation via
  subgraph sampling (Afforest). IPDPS 2018.
- Seraph: "Scaling Up Large-Scale Graph Processing for GPU-Accelerated Heterogeneous
  Systems".

See docs/design.md, "Union-find CC", "CC from the hub" and "Strong predictors: the
proofs".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse.csgraph as csgraph
from numba import njit, prange

from seraph import progress
from seraph.algorithms.entry import Entry
from seraph.algorithms.verify import (
    AHEAD,
    EDGE_CHUNK,
    compare,
    id_table,
    in_edges,
    input_id,
    name,
    pages,
    row_from,
    row_of,
    wrong,
)
from seraph.api import as_graph, execute, input_ids, make_config, public_call
from seraph.backends.caches import graph_cached, out_degrees
from seraph.errors import InputError
from seraph.kernels import kernel
from seraph.operators import LABEL, OPERATORS
from seraph.predictors import LATE_WEAK_DENSE_ROUNDS
from seraph.prefetch import prefetch
from seraph.scheduler import EngineConfig, Run
from seraph.spec import SMALLEST_WRITTEN, Algorithm, Output, Plan
from seraph.stats import RunStats, Trace

#: CC's first phase when pages move: the hub's component, found as BFS finds its levels.
#: CC's kernels and strong rule, but the values start at infinity with 0 at the hub, so a
#: reached vertex holds 0, provably final.
REACH = Algorithm("cc", OPERATORS[LABEL], SMALLEST_WRITTEN, "strong", needs_source=True)


def components_from_hub(run: Run, hub: int) -> None:
    """Connected components with the largest one found first, as GAP's Afforest does:
    min-label propagation from every vertex moves 1.75 passes of pages on an R-MAT, most of
    them to spread labels through the giant component, which a reach from its hub covers
    in one BFS-like pass with push and bottom-up rounds.

    The backend runs :data:`REACH` from ``hub`` (values start at infinity, 0 at the hub).
    Then every reached vertex takes the smallest reached id, its component's label, and
    every other vertex its own id; from there the other components' labels spread as plain
    CC's do, starting from the unreached vertices with out-edges (on an R-MAT, small
    components: push rounds). The answer is plain CC's: the hub's component is closed and
    holds its smallest id, and no other label can enter or leave it."""
    run.execute(np.array([hub], dtype=np.int64))
    spreading = run.be.label_unreached()
    run.values_changed_outside()
    run.execute(spreading)


def hub_plan(graph, layout, config: EngineConfig) -> Plan | None:
    """CC's plan: from the hub (its highest out-degree vertex) when pages move, or None for
    plain min-label propagation: when no page moves a dense round costs little and spreads
    every label at once, and a schedule without sparse rounds (``single``, the plain
    full-pass baseline) would reach the hub's component with dense rounds only."""
    if layout.resident or not config.policy.uses_sparse_rounds or graph.num_vertices == 0:
        return None
    # Kept with the graph: the argmax reads every vertex's degree, too much to redo per run.
    hub = graph_cached(graph, "cc hub", lambda: int(np.argmax(out_degrees(graph))))
    return Plan(REACH, hub, lambda run: components_from_hub(run, hub))


def union_find(run: Run) -> None:
    """The whole run: the backend's union-find (``Backend.union_find``)."""
    start = time.perf_counter()
    progress.working("union-find", run.stats)
    run.be.union_find(merge=run.forests_linked)
    run.stats.kernel_time += time.perf_counter() - start


def plan(graph, layout, config: EngineConfig) -> Plan | None:
    """CC's plan: union-find, or label propagation (:func:`hub_plan`) when asked for."""
    if config.components == "union-find":
        return Plan(SPEC, None, union_find)
    return hub_plan(graph, layout, config)


SPEC = Algorithm("cc", OPERATORS[LABEL], SMALLEST_WRITTEN, "strong", needs_source=False,
                 output=Output(dtype=np.dtype(np.int64)), plan=plan)
#: CC by label propagation: on a high-diameter graph it runs many dense rounds, where the
#: weak history pays on the CPU (docs/benchmarks/predictors-cpu.md).
PROPAGATION = replace(SPEC, weak_after=LATE_WEAK_DENSE_ROUNDS)


@dataclass
class CCResult:
    labels: np.ndarray  #: input id of the smallest vertex in each vertex's component
    num_components: int
    stats: RunStats
    trace: Trace

    @property
    def values(self) -> np.ndarray:
        return self.labels


@public_call
def connected_components(graph, *, config: EngineConfig | None = None,
                         **options) -> CCResult:
    """Connected components of a symmetric graph: each vertex is labelled by the smallest
    vertex id of its component. By union-find; by min-label propagation with
    ``components="propagation"``, where, when pages move, the highest out-degree vertex's
    component is reached first (:func:`components_from_hub`)."""
    g = as_graph(graph)
    if not g.symmetric:
        remedy = ("this in-memory graph is directed: build it with symmetrize=True"
                  if g.path is None else
                  f"the store {g.path} is directed: preprocess it with --symmetrize")
        raise InputError(f"connected components need an undirected (symmetric) graph but "
                         f"{remedy} to get its weakly connected components")
    config = config or make_config(**options)
    spec = SPEC if config.components == "union-find" else PROPAGATION
    labels, stats, trace = execute(g, spec, None, config)
    count = own_labels.over(len(labels), g.num_edges)(labels)
    return CCResult(component_labels(g, labels), count, stats, trace)


def component_labels(graph, labels: np.ndarray) -> np.ndarray:
    """Each vertex's label as an input id, the smallest of its component, from ``labels``
    that name one store vertex of each component. In a store that keeps the input's order
    the smallest store vertex has the smallest input id; a renumbered store's
    (partitioner.order) is looked up."""
    if graph.attrs.vertex_order == "input":
        return input_ids(graph, labels)
    return _smallest_input_ids(labels, graph.vertex_ids)


@njit(cache=True)
def _smallest_input_ids(labels, ids):
    smallest = np.full(len(labels), np.iinfo(np.int64).max, dtype=np.int64)
    for v in range(len(labels)):
        smallest[labels[v]] = min(smallest[labels[v]], ids[v])
    out = np.empty(len(labels), dtype=np.int64)
    for v in range(len(labels)):
        out[v] = smallest[labels[v]]
    return out


@kernel(cache=True, parallel=True)
def own_labels(labels: np.ndarray) -> int:
    """The components: each is labelled by its smallest vertex, the one vertex that keeps
    its own id (counted on every thread, as the labels were made)."""
    count = 0
    for v in prange(len(labels)):
        if labels[v] == v:
            count += 1
    return count



def reference(graph, source: int | None = None) -> np.ndarray:
    """scipy's components, each labelled by its smallest vertex (a store vertex number)."""
    _, labels = csgraph.connected_components(graph.to_scipy(), directed=False)
    # scipy numbers components arbitrarily; Seraph labels each by its smallest vertex.
    smallest = np.full(labels.max() + 1, len(labels), dtype=np.int64)
    np.minimum.at(smallest, labels, np.arange(len(labels)))
    return smallest[labels]


def check(graph, labels: np.ndarray, source: int | None = None) -> str | None:
    # Labels are reported as input ids.
    return compare(graph, labels, lambda: component_labels(graph, reference(graph)))


# Why a vertex is wrong: its label differs from an in-neighbour's, is above its own id, or
# is not the id of a vertex of its component.
SPLIT, ABOVE_OWN, NOT_IN_COMPONENT = 1, 2, 3
#: In-edges a vertex hooks before the full pass (Afforest's neighbour rounds).
SAMPLED = 2
#: Edges across two trees a task of the full pass keeps for joining; more send the check
#: round once more.
ROOM = 256


def verify(graph, labels: np.ndarray, source: int | None = None,
           predecessors: np.ndarray | None = None) -> str | None:
    """None if ``labels`` (input ids) label each vertex by the smallest id of its
    component, else what is wrong.

    Both ends of every edge carry the same label, so each label's vertices are whole
    components; no vertex's label is above its own id; and each vertex's component, found
    by a union-find of its own, holds the vertex whose id is its label. So each label's
    vertices are one component, labelled by one of its ids, the smallest.

    The union-find: each vertex's first in-edges hooked in parallel with plain writes
    (:func:`_hook_first`; a write lost to a race only leaves two trees apart), then a pass
    over every edge, reading the trees only, keeps the edges whose ends lie in two trees
    and joins them after each page on one thread (:func:`_join`). Every link ever written
    joins two vertices of one component, so when that pass kept every such edge it found
    (a task had room for them all), every edge's ends share a tree and the trees are the
    components; else the pass runs again, having joined at least one pair of trees."""
    n, m = graph.num_vertices, graph.num_edges
    indptr, ids = graph.array("csc/indptr"), id_table(graph)
    labels = np.ascontiguousarray(labels, np.int64)
    parent = np.arange(n, dtype=np.int32)
    bad = np.zeros(n, np.uint8)
    first_vertex, last_vertex = graph.page_first_vertex, graph.page_last_vertex
    for start, indices, _ in pages(graph):
        page = start // graph.page_edges
        _hook_first.over(len(indices), m)(indptr, start, indices, first_vertex[page],
                                          last_vertex[page], parent)
    _compress.over(n, m)(parent)
    tasks = -(-graph.page_edges // EDGE_CHUNK)
    found, counts = np.empty((tasks, ROOM, 2), np.int32), np.zeros(tasks, np.int64)
    check_labels, missed = True, True
    while missed:
        missed = False
        for start, indices, _ in pages(graph):
            _find_apart.over(len(indices), m)(indptr, start, indices, labels, parent,
                                              not graph.symmetric, check_labels, bad, found,
                                              counts)
            missed |= _join(parent, found, counts[:-(-len(indices) // EDGE_CHUNK)])
        check_labels = False
    _compress.over(n, m)(parent)
    owner = np.full(n, -1, np.int32)
    _claim_roots.over(n, m)(labels, ids, parent, owner)
    _check_roots.over(n, m)(labels, ids, parent, owner, bad)
    return wrong(graph, bad, lambda v, code: _describe(graph, labels, v, code))


@njit(cache=True)
def _find(parent, vertex):
    """The vertex's root, halving the path on the way with plain writes: each sets a
    parent to one of its ancestors, so ``parent[x] <= x`` holds whatever the races."""
    x = np.int64(vertex)
    while True:
        p = parent[x]
        if p == x:
            return x
        g = parent[p]
        if g != p:
            parent[x] = g
        x = g


@njit(cache=True)
def _union(parent, u, v):
    """Hooks the higher of u's and v's roots under the lower (so ``parent[x] <= x``)."""
    if parent[u] == parent[v]:  # after a compression, most edges' ends: one read
        return
    ru, rv = _find(parent, u), _find(parent, v)
    if ru < rv:
        parent[rv] = ru
    elif rv < ru:
        parent[ru] = rv


@kernel(parallel=True, nogil=True, cache=True)
def _hook_first(indptr, start, indices, first, last, parent):
    """The page's part of each vertex's first :data:`SAMPLED` in-edges, hooked in
    parallel: as in Afforest, these few edges join most of a large component, so that the
    full pass after them finds few edges across two trees."""
    end = start + len(indices)
    for v in prange(first, last + 1):
        for i in range(max(indptr[v], start), min(indptr[v] + SAMPLED, indptr[v + 1], end)):
            _union(parent, indices[i - start], v)


@kernel(parallel=True, nogil=True, cache=True)
def _find_apart(indptr, start, indices, labels, parent, both, check_labels, bad, found,
                counts):
    """One page's edges (u, v), each pair once (u < v: a symmetric store holds both
    directions; every u != v where ``both``): task c keeps the first :data:`ROOM` whose
    ends lie in two trees in ``found[c]`` and counts them all in ``counts[c]``; with
    ``check_labels``, the larger end of an edge whose ends' labels differ is marked."""
    count = len(indices)
    for c in prange((count + EDGE_CHUNK - 1) // EDGE_CHUNK):
        lo, kept = c * EDGE_CHUNK, 0
        last = min(lo + EDGE_CHUNK, count) - 1
        v = row_of(indptr, start + lo)
        for i in range(lo, last + 1):
            ahead = indices[min(i + AHEAD, last)]
            prefetch(labels, ahead)
            prefetch(parent, ahead)
            v = row_from(indptr, v, start + i)
            u = indices[i]
            if not (u < v or (both and u != v)):
                continue
            if check_labels and labels[u] != labels[v]:
                bad[v] = SPLIT
            if parent[u] != parent[v] and _find(parent, u) != _find(parent, v):
                if kept < ROOM:
                    found[c, kept, 0], found[c, kept, 1] = u, v
                kept += 1
        counts[c] = kept


@njit(nogil=True, cache=True)
def _join(parent, found, counts):
    """Joins the trees of the edges :func:`_find_apart` kept, one at a time; returns
    whether a task found more than it kept."""
    for c in range(len(counts)):
        for k in range(min(counts[c], ROOM)):
            _union(parent, found[c, k, 0], found[c, k, 1])
    return bool((counts > ROOM).any())


@kernel(parallel=True, nogil=True, cache=True)
def _compress(parent):
    for v in prange(len(parent)):
        parent[v] = _find(parent, v)


@kernel(parallel=True, nogil=True, cache=True)
def _claim_roots(labels, ids, parent, owner):
    """``owner[root]``: a vertex of the root's component whose label is its own id."""
    for v in prange(len(labels)):
        if labels[v] == input_id(ids, v):
            owner[_find(parent, v)] = v


@kernel(parallel=True, nogil=True, cache=True)
def _check_roots(labels, ids, parent, owner, bad):
    """Each vertex's label is no more than its own id and is the id of a vertex of its
    component (:func:`_claim_roots`)."""
    for v in prange(len(labels)):
        held = owner[_find(parent, v)]
        if bad[v] != 0:
            continue  # its edge check said why already
        if labels[v] > input_id(ids, v):
            bad[v] = ABOVE_OWN
        elif held < 0 or labels[v] != input_id(ids, held):
            bad[v] = NOT_IN_COMPONENT


def _describe(graph, labels: np.ndarray, v: int, code: int) -> str:
    if code == SPLIT:
        src, _ = in_edges(graph, v)
        u = int(src[np.flatnonzero(labels[src] != labels[v])[0]])
        return f"has label {labels[v]} but its neighbour {name(graph, u)} has {labels[u]}"
    if code == ABOVE_OWN:
        return f"has label {labels[v]}, above its own id"
    return f"has label {labels[v]}, the id of no vertex of its component"


def summary(labels: np.ndarray) -> str:
    return f"{len(np.unique(labels)):,} components"


ENTRY = Entry(SPEC, connected_components, CCResult, reference, check, verify, summary)
