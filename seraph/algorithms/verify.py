"""What the verifiers share.

Each algorithm module owns a verifier, ``verify(graph, values, source, predecessors)``: an
O(m) check of an answer, GAP's way, that shares no code with the engine and runs at any
size (``seraph run --validate``, ``seraph demo``, the benchmarks). It reads the store's CSC
page by page (:func:`pages`), one numba call a page (on every thread where the work is
large: :mod:`seraph.kernels`), so that Ctrl-C lands between pages, and holds only O(n)
vertex arrays besides the page being read and the next. Here are the pages, the path check
BFS, SSSP and SSWP share (:func:`verify_paths`) and the report of what is wrong
(:func:`wrong`). docs/design.md, "Verifiers", says why each check is sufficient.

The tests keep scipy.sparse.csgraph as their oracle: each module's ``reference`` and
``check`` (:func:`compare`), for graphs whose adjacency matrix fits in host memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, prange

from seraph.kernels import kernel
from seraph.prefetch import prefetch

#: Larger graphs are not compared with scipy: it would need several times their size in RAM.
MAX_SCIPY_EDGES = 200_000_000
#: Edges a parallel task of a page's check takes: a hub's long row is shared out too.
EDGE_CHUNK = 1 << 15
#: How many edges ahead a check asks for the value of an edge's tail: a page names its
#: tails in no order, so on a large graph nearly every such read misses the cache, and
#: asked for ahead the misses overlap. (A hint: it reads nothing the check sees.)
AHEAD = 64


# -- scipy, the tests' oracle -------------------------------------------------------------
def compare(graph, values: np.ndarray, expected: Callable[[], np.ndarray],
            close: bool = False, oracle: str = "scipy") -> str | None:
    """None if ``values`` equal ``expected()`` (the ``oracle``'s answer, computed only for a
    graph small enough), else what differs. ``close``: float32 sums against scipy's
    float64, equal to a relative 1e-5 (infinities equal)."""
    if graph.num_edges > MAX_SCIPY_EDGES:
        return f"graph too large to compare with {oracle} ({graph.num_edges} edges)"
    expect = expected()
    if close:
        bad = ~np.isclose(values, expect, rtol=1e-5, atol=0) & ~(np.isinf(values) &
                                                                  np.isinf(expect))
    else:
        bad = values != expect
    if not bad.any():
        return None
    v = int(np.flatnonzero(bad)[0])
    return (f"{int(bad.sum())} of {len(values)} vertices differ from {oracle}; first: vertex "
            f"{v} has {values[v]}, {oracle} says {expect[v]}")


# -- reading the CSC ------------------------------------------------------------------------
def pages(graph, weights: bool = False) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
    """(first edge, in-edge sources, weights or None) of each page in turn: views of the
    arrays where the graph holds them in host memory, else read from the store, the next
    page on a thread while the caller checks this one (the check's kernels release the
    GIL)."""
    pe = graph.page_edges
    buffers = [(np.empty(pe, np.int32), np.empty(pe, np.float32) if weights else None)
               for _ in range(2)]
    with ThreadPoolExecutor(1) as reader:
        coming = reader.submit(graph.page, 0, *buffers[0]) if graph.num_pages else None
        for p in range(graph.num_pages):
            indices, w = coming.result()
            if p + 1 < graph.num_pages:
                coming = reader.submit(graph.page, p + 1, *buffers[(p + 1) % 2])
            yield p * pe, indices, w


def in_edges(graph, v: int, weights: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Vertex ``v``'s in-edges (sources, weights or None), read from its pages: what a
    report names as the witness of a wrong vertex."""
    lo, hi = (int(x) for x in graph.array("csc/indptr")[v:v + 2])
    pe, parts = graph.page_edges, []
    for p in range(lo // pe, (hi - 1) // pe + 1 if hi > lo else lo // pe):
        src, w = graph.page(p, np.empty(pe, np.int32),
                            np.empty(pe, np.float32) if weights else None)
        a, b = max(lo, p * pe) - p * pe, min(hi, (p + 1) * pe) - p * pe
        parts.append((src[a:b].copy(), None if w is None else w[a:b].copy()))
    if not parts:
        return np.zeros(0, np.int32), np.zeros(0, np.float32) if weights else None
    return (np.concatenate([s for s, _ in parts]),
            np.concatenate([w for _, w in parts]) if weights else None)


@njit(inline="always", cache=True)
def row_of(indptr, edge):
    """The vertex whose in-edges hold ``edge``."""
    return np.searchsorted(indptr, edge, side="right") - 1


@njit(cache=True)
def row_from(indptr, v, edge):
    """The vertex whose in-edges hold ``edge``, vertex ``v``'s or a later one's: a task
    walks its edges in order, the row with them."""
    while indptr[v + 1] <= edge:
        v += 1
    return v


@njit(inline="always", cache=True)
def input_id(ids, v):
    """Vertex ``v``'s input id: ``ids[v]``, or ``v`` itself where ``ids`` is empty (a store
    that keeps the input's ids)."""
    return ids[v] if len(ids) else v


def id_table(graph) -> np.ndarray:
    """What :func:`input_id` looks ids up in: empty when the store keeps the input's ids
    (no n-long identity array)."""
    return graph.vertex_ids if graph.attrs.relabelled else np.zeros(0, np.int64)


def name(graph, v: int) -> int:
    """Store vertex ``v``'s input id, as a report names it."""
    return int(graph.vertex_ids[v]) if graph.attrs.relabelled else int(v)


def wrong(graph, bad: np.ndarray, describe: Callable[[int, int], str]) -> str | None:
    """None if no vertex is marked in ``bad`` (a reason code a vertex, 0 for none), else
    how many are and the first: ``describe(v, code)`` says what is wrong with it."""
    count = int(np.count_nonzero(bad))
    if count == 0:
        return None
    v = int(np.argmax(bad != 0))
    return (f"{count:,} of {len(bad):,} vertices wrong; first: vertex {name(graph, v)} "
            f"{describe(v, int(bad[v]))}")


# -- BFS, SSSP and SSWP ---------------------------------------------------------------------
# Why a vertex is wrong (``bad``): what :func:`_describe_path` says of each.
SOURCE, ABOVE, UNREACHED, NO_TIGHT, FLOATING, PRED_NONE, PRED_SET, PRED_WRONG = range(1, 9)


@njit(cache=True)
def _reach(values, weights, u, i, widest):
    """What in-edge ``i`` from ``u`` offers its head: ``values[u] + w``, in float32 as the
    engine adds (w = 1 where ``weights`` is None, BFS), or ``min(values[u], w)`` where
    ``widest`` (widths)."""
    if weights is None:
        return values[u] + 1
    if widest:
        return min(values[u], weights[i])
    return np.float32(values[u] + weights[i])


@njit(inline="always", cache=True)
def _better(a, b, widest):
    """Whether value ``a`` is strictly better than ``b``: smaller, or wider."""
    return a > b if widest else a < b


@njit(inline="always", cache=True)
def _within(value, reach, widest):
    """Whether ``value`` is at least as good as an in-edge's ``reach`` (False for NaN)."""
    return value >= reach if widest else value <= reach


@kernel(parallel=True, nogil=True, cache=True)
def _path_edges(indptr, start, indices, weights, values, unreached, widest, preds, ids,
                grounded, level, pred_grounded, pred_level, bad):
    """One page's in-edges (u, v): ``values[v]`` no more than ``values[u] + w`` (no less
    than ``min(values[u], w)`` where ``widest``; an unreached v that a reached u offers a
    value is wrong), and which v have a tight in-edge from a better value (``grounded``),
    or only from an equal one (``level``: zero weights, a weight too small to change a
    float32 sum, or a width no narrower than the tail's); ``pred_*`` the same of the
    predecessor's edge, where ``preds`` (input ids) are given."""
    count = len(indices)
    for c in prange((count + EDGE_CHUNK - 1) // EDGE_CHUNK):
        lo = c * EDGE_CHUNK
        last = min(lo + EDGE_CHUNK, count) - 1
        v = row_of(indptr, start + lo)
        for i in range(lo, last + 1):
            prefetch(values, indices[min(i + AHEAD, last)])
            v = row_from(indptr, v, start + i)
            u = indices[i]
            du = values[u]
            if du == unreached:
                continue
            reach = _reach(values, weights, u, i, widest)
            dv = values[v]
            if dv == unreached and reach != unreached:
                bad[v] = UNREACHED
            elif not _within(dv, reach, widest):  # NaN too
                bad[v] = ABOVE
            elif dv == reach:
                if _better(du, dv, widest):
                    grounded[v] = 1
                else:
                    level[v] = 1
                if preds is not None and preds[v] == input_id(ids, u):
                    if _better(du, dv, widest):
                        pred_grounded[v] = 1
                    else:
                        pred_level[v] = 1


@kernel(parallel=True, nogil=True, cache=True)
def _path_vertices(values, unreached, source, origin, preds, grounded, level,
                   pred_grounded, pred_level, bad):
    """Each vertex: the source holds ``origin`` and names no predecessor, an unreached
    vertex names none, and every other reached vertex has a tight in-edge (its
    predecessor's, where given). Returns how many of them have tight in-edges only from
    equal values, not yet traced to the source."""
    pending = 0
    for v in prange(len(values)):
        named = preds is not None and preds[v] != -1
        if bad[v] != 0:
            continue  # its in-edges said why already
        if v == source:
            if values[v] != origin:
                bad[v] = SOURCE
            elif named:
                bad[v] = PRED_SET
        elif values[v] == unreached:
            if named:
                bad[v] = PRED_SET
        elif grounded[v] == 0 and level[v] == 0:
            bad[v] = NO_TIGHT
        elif preds is not None:
            if not named:
                bad[v] = PRED_NONE
            elif pred_grounded[v] == 0 and pred_level[v] == 0:
                bad[v] = PRED_WRONG
            elif grounded[v] == 0 or pred_grounded[v] == 0:
                pending += 1
        elif grounded[v] == 0:
            pending += 1
    return pending


@kernel(parallel=True, nogil=True, cache=True)
def _path_spread(indptr, start, indices, weights, values, widest, preds, ids, grounded,
                 pred_grounded):
    """One page's tight in-edges between equal values: a vertex reached so from a grounded
    one is grounded (through its predecessor's edge alone for ``pred_grounded``). Returns
    how many marks it set."""
    count, marked = len(indices), 0
    for c in prange((count + EDGE_CHUNK - 1) // EDGE_CHUNK):
        lo = c * EDGE_CHUNK
        v = row_of(indptr, start + lo)
        for i in range(lo, min(lo + EDGE_CHUNK, count)):
            v = row_from(indptr, v, start + i)
            if grounded[v] and (preds is None or pred_grounded[v]):
                continue
            u = indices[i]
            if values[u] != values[v] or _reach(values, weights, u, i, widest) != values[v]:
                continue
            if grounded[v] == 0 and grounded[u]:
                grounded[v] = 1
                marked += 1
            if (preds is not None and pred_grounded[v] == 0 and pred_grounded[u]
                    and preds[v] == input_id(ids, u)):
                pred_grounded[v] = 1
                marked += 1
    return marked


@kernel(parallel=True, nogil=True, cache=True)
def _path_floating(values, unreached, preds, grounded, pred_grounded, bad):
    """After the spreading: a reached vertex still not grounded is wrong."""
    for v in prange(len(values)):
        if bad[v] == 0 and values[v] != unreached:
            if grounded[v] == 0:
                bad[v] = FLOATING
            elif preds is not None and pred_grounded[v] == 0:
                bad[v] = PRED_WRONG


def verify_paths(graph, values: np.ndarray, source: int, predecessors: np.ndarray | None,
                 unreached, weighted: bool, widest: bool = False) -> str | None:
    """None if ``values`` are the distances from ``source`` (a store vertex) with each
    edge weighing 1 (``weighted`` False: BFS levels) or its stored weight (float32 sums),
    or with ``widest`` the widths (the largest over paths of their narrowest weight),
    ``unreached`` marking the vertices the source does not reach, and ``predecessors``
    (input ids, -1 none; None: not checked) name a tight in-edge on a path from the
    source; else what is wrong.

    Every edge (u, v) with u reached has ``values[v] <= values[u] + w`` (widths:
    ``values[v] >= min(values[u], w)``); the source holds 0 (widths: inf); every other
    reached vertex is joined to the source by tight edges (equality). The inequalities
    bound every value by its true one, the tight paths by a path's, so both hold only for
    the exact answer. A tight in-edge from a better value settles its head at once; one
    from an equal value (a zero weight, a float32 sum the weight did not change, a width
    no narrower than the tail's) only once its tail is settled, by passes that spread the
    marks until none is set (needed only where such edges are; a pass per link of the
    longest such chain at worst)."""
    n, m = graph.num_vertices, graph.num_edges
    indptr, ids = graph.array("csc/indptr"), id_table(graph)
    values, unreached = np.ascontiguousarray(values), values.dtype.type(unreached)
    origin = values.dtype.type(np.inf if widest else 0)
    preds = None if predecessors is None else np.ascontiguousarray(predecessors, np.int64)
    flags = [np.zeros(n, np.uint8) for _ in range(5 if preds is not None else 3)]
    grounded, level, bad = flags[:3]
    pred_grounded, pred_level = flags[3:] if preds is not None else (grounded, level)
    for start, indices, w in pages(graph, weighted):
        _path_edges.over(len(indices), m)(indptr, start, indices, w, values, unreached,
                                          widest, preds, ids, grounded, level, pred_grounded,
                                          pred_level, bad)
    pending = _path_vertices.over(n, m)(values, unreached, source, origin, preds, grounded,
                                        level, pred_grounded, pred_level, bad)
    if 0 <= source < n:
        grounded[source] = pred_grounded[source] = 1
    while pending and sum(_path_spread.over(len(indices), m)(indptr, start, indices, w,
                                                             values, widest, preds, ids,
                                                             grounded, pred_grounded)
                          for start, indices, w in pages(graph, weighted)):
        pass  # every page of a pass runs: a mark set late in one is seen in the next
    if pending:
        _path_floating.over(n, m)(values, unreached, preds, grounded, pred_grounded, bad)
    return wrong(graph, bad, lambda v, code: _describe_path(
        graph, values, unreached, origin, preds, weighted, widest, v, code))


def _describe_path(graph, values, unreached, origin, preds, weighted: bool, widest: bool,
                   v: int, code: int) -> str:
    """What is wrong with vertex ``v`` (``code``), naming an in-edge where one shows it."""
    has = "is unreached" if values[v] == unreached else f"has {values[v]}"
    if code == SOURCE:
        return f"is the source but has {values[v]}, not {origin}"
    if code in (ABOVE, UNREACHED):
        src, w = in_edges(graph, v, weighted)
        du = values[src]
        if w is None:
            reach = du + np.int64(1)
        else:
            reach = np.minimum(du, w) if widest else (du + w).astype(np.float32)
        within = values[v] >= reach if widest else values[v] <= reach
        over = np.flatnonzero((du != unreached) & (~within | (values[v] == unreached) &
                                                   (reach != unreached)))
        u = int(src[over[0]])
        weight = "" if w is None else f" over an edge of weight {w[over[0]]}"
        return (f"{has} but in-neighbour {name(graph, u)} has {values[u]}{weight}")
    if code == NO_TIGHT:
        return f"{has} but no in-edge is tight (reaches it with exactly that)"
    if code == FLOATING:
        return (f"{has} but its tight in-edges come only from vertices of equal value that "
                "no tight path from the source reaches")
    if code == PRED_NONE:
        return f"{has} but names no predecessor"
    if code == PRED_SET:
        return f"{has} but names predecessor {preds[v]}"
    return (f"{has} but its predecessor {preds[v]} is not a tight in-neighbour on a tight "
            "path from the source")
