"""Connected components by parallel union-find: Afforest's sampling over lock-free hooking.

The method is Afforest (M. Sutton, T. Ben-Nun, A. Barak, "Optimizing Parallel Graph
Connectivity Computation via Subgraph Sampling", IPDPS 2018), as the GAP benchmark suite
runs it, with ECL-CC's rule of hooking the higher root under the lower one (J. Jaiganesh,
M. Burtscher, "A High-Performance Connected Components Implementation for GPUs", HPDC 2018).
On a symmetric graph (whose CSC is its CSR):

1. **Sample.** Link every vertex to its first ``sample_rounds`` neighbours, in one pass
   over the vertices, and compress the forest. On most graphs this already joins nearly
   all of the largest component. (GAP links one neighbour a pass, compressing after
   each; one pass reads each row's first cache line once, where each pass read it again.)
   The first neighbours of a row sorted by id are its smallest, whose parents lie near the
   start of ``parent``: the hooks stay in cache. A weighted store's rows are sorted by
   weight, and its ``csc/sample`` keeps each vertex's smallest neighbours instead
   (docs/store.md), which this step then links; the finish step links every position.
2. **Find the giant.** The root that most of ~1,000 vertices (a fixed seed) point to.
3. **Finish.** Every vertex not yet under that root links its remaining neighbours. Edges
   of vertices already in the giant are skipped: each such edge is also stored the other
   way round, where it is linked unless its other end is in the giant as well.
4. **Compress** every vertex onto its root.

Each edge is read at most once, and the work does not depend on the diameter.

**The labels are minimum ids.** ``parent`` starts as the identity, and a root is only ever
hooked, by compare-and-swap while it is still a root, under a *smaller* root; compression
and the path halving of every find only shortcut a vertex to one of its ancestors. So
``parent[v] <= v`` always, a tree's smallest vertex can never be hooked (no smaller root
shares its set), and each tree's root is its smallest vertex. After step 4, ``parent[v]``
is the smallest vertex id of ``v``'s component: the label the engine reports.

**Pages.** The linking kernel, :func:`link_edges`, takes any contiguous run of the CSC's
edges (a page buffer of ``page_edges`` edges, whose first and last vertex may have edges in
neighbouring pages) and links only the neighbour positions asked for. A caller streaming
pages calls :func:`new_forest`, then :func:`link_edges` on every page with
``first_neighbour=0, neighbour_count=sample_rounds`` and :func:`compress`; then
:func:`most_frequent_root`, :func:`link_edges` on every page with
``first_neighbour=sample_rounds, skip_root=giant``, and :func:`compress`. The pages may
come in any order, and the sampling may go a neighbour a pass, compressing after each, as
GAP's does: the answer is the same as long as the sampled positions are all linked before
the finish step, which skips them.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from seraph.backends.cpu.atomics import atomic_add, atomic_cas, atomic_load, atomic_store
from seraph.errors import InputError
from seraph.interrupts import STOP
from seraph.kernels import serial, zeros

#: ``skip_root`` value that skips no vertex.
NO_ROOT = -1
#: Vertices sampled to find the giant component's root, and the seed that picks them.
#: Neighbours of every vertex linked before the largest component is looked for.
SAMPLE_ROUNDS = 2
GIANT_SAMPLES = 1024
GIANT_SEED = 0
#: Vertices per chunk of a parallel pass over the vertices; a pass over the edges takes
#: _EDGE_CHUNK_ITEMS edges a chunk. The threads take the chunks in turn, as GAP's
#: dynamically scheduled loops take theirs: one thread slowed by long finds, or
#: descheduled, leaves the rest to the others. Below two chunks, as on a small graph
#: (seraph.kernels), a pass stays on the calling thread: waking the pool costs more than
#: it spreads.
_CHUNK_ITEMS = 1 << 14
_EDGE_CHUNK_ITEMS = 1 << 18


def components(indptr: np.ndarray, indices: np.ndarray, num_vertices: int, *,
               sample_rounds: int = SAMPLE_ROUNDS) -> np.ndarray:
    """Connected components of a symmetric graph given as its CSC (``indptr`` int64 of
    ``num_vertices + 1``, ``indices`` int32): int32 labels, ``label[v]`` the smallest
    vertex id in ``v``'s component. The input is checked first (:func:`trusted_components`
    skips that, for a store's CSC, which was checked when it was opened)."""
    _check_csc(indptr, indices, num_vertices)
    integer = isinstance(sample_rounds, int | np.integer) and not isinstance(sample_rounds, bool)
    if not (integer and sample_rounds >= 0):
        raise InputError(f"sample_rounds must be a non-negative integer, got {sample_rounds!r}")
    return trusted_components(indptr, indices, num_vertices, sample_rounds)


def trusted_components(indptr: np.ndarray, indices: np.ndarray, num_vertices: int,
                       sample_rounds: int = SAMPLE_ROUNDS, merge=None,
                       parent: np.ndarray | None = None,
                       sample: np.ndarray | None = None) -> np.ndarray:
    """:func:`components` of a CSC known to be well formed: its check reads every edge,
    a sizeable share of the run. ``merge``, where given, is called with the compressed
    forest after the sampling and after the finish (a partitioned run's workers unite
    their parts' forests there: :meth:`seraph.backends.base.Backend.union_find`). It grows
    ``parent`` where given (int32, every vertex its own root: a backend's CC values).
    ``sample``, where given, holds the neighbours the first step links in place of each
    row's first ``sample_rounds`` (int32, as many a vertex, -1 for none: ``csc/sample``)."""
    parent = new_forest(num_vertices) if parent is None else parent
    if sample is None:
        link_edges(parent, indptr, indices, first_neighbour=0, neighbour_count=sample_rounds)
        rest = sample_rounds
    else:
        link_sample(parent, sample)
        rest = 0  # the rows do not begin with the sampled neighbours
    compress(parent, len(indices))
    if merge is not None:
        merge(parent)
    giant = most_frequent_root(parent)
    link_edges(parent, indptr, indices, first_neighbour=rest, skip_root=giant)
    compress(parent, len(indices))
    if merge is not None:
        merge(parent)
    return parent


def new_forest(num_vertices: int) -> np.ndarray:
    """Every vertex its own root: the ``parent`` array the other functions update."""
    if not 0 <= num_vertices <= np.iinfo(np.int32).max:
        raise InputError(f"num_vertices must be in [0, 2^31 - 1], got {num_vertices}")
    return np.arange(num_vertices, dtype=np.int32)


def link_edges(parent: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
               edge_start: int = 0, *, first_neighbour: int = 0,
               neighbour_count: int | None = None, skip_root: int = NO_ROOT) -> None:
    """Unites, in ``parent``, the two ends of the edges held in ``indices``, in parallel.

    ``indices`` holds the CSC's edges ``[edge_start, edge_start + len(indices))``: the
    whole ``csc/indices`` (``edge_start=0``) or one page. Of each vertex's neighbour list
    only positions ``[first_neighbour, first_neighbour + neighbour_count)`` are linked (all
    from ``first_neighbour`` on when ``neighbour_count`` is None), and vertices whose parent
    is ``skip_root`` are skipped (Afforest's finish step; only sound on a symmetric graph).
    """
    edge_end = edge_start + len(indices)
    if not (parent.dtype == np.int32 and indptr.dtype == np.int64
            and len(indptr) == len(parent) + 1 and indices.dtype in (np.int32, np.int64)):
        raise InputError("link_edges needs an int32 parent array, an int64 indptr of one "
                         "more entry and integer indices")
    if not (0 <= edge_start <= edge_end <= indptr[-1]):
        raise InputError(f"edges [{edge_start}, {edge_end}) are not within the graph's "
                         f"{indptr[-1]} edges")
    if first_neighbour < 0 or (neighbour_count is not None and neighbour_count < 0):
        raise InputError("neighbour positions must be non-negative")
    count = np.iinfo(np.int64).max if neighbour_count is None else neighbour_count
    chunks = _chunks(len(indices), int(indptr[-1]), _EDGE_CHUNK_ITEMS)
    if chunks == 1:
        _link_piece(parent, indptr, indices, edge_start, edge_start, edge_end,
                    first_neighbour, count, skip_root, STOP)
    else:
        _link_chunks(parent, indptr, indices, edge_start, first_neighbour, count, skip_root,
                     chunks, _workers(chunks), STOP)


def link_sample(parent: np.ndarray, sample: np.ndarray) -> None:
    """Unites, in ``parent``, each vertex with its neighbours in ``sample`` (int32, the
    same number a vertex, -1 for none), in parallel."""
    if len(parent) == 0 or len(sample) % len(parent):
        if len(sample):
            raise InputError(f"a sample of {len(sample)} entries does not give each of "
                             f"{len(parent)} vertices as many")
        return
    chunks = _chunks(len(parent), None, _CHUNK_ITEMS)
    if chunks == 1:
        _link_sample_range(parent, sample, 0, len(parent), STOP)
    else:
        _link_sample_chunks(parent, sample, chunks, _workers(chunks), STOP)


def compress(parent: np.ndarray, num_edges: int | None = None) -> None:
    """Points every vertex straight at its root (call it while nothing links;
    ``num_edges``: the graph's, where known)."""
    chunks = _chunks(len(parent), num_edges, _CHUNK_ITEMS)
    if chunks == 1:
        _compress_vertices(parent, 0, len(parent), STOP)
    else:
        _compress_chunks(parent, chunks, _workers(chunks), STOP)


def link_parents(parent: np.ndarray, other: np.ndarray) -> None:
    """Unites, in ``parent``, each vertex with its parent in ``other`` (another forest of
    the same vertices), then compresses: ``parent`` becomes the forest of both."""
    link_sample(parent, other)  # a sample of one a vertex (a root's own id links nothing)
    compress(parent)


def most_frequent_root(parent: np.ndarray, samples: int = GIANT_SAMPLES,
                       seed: int = GIANT_SEED) -> int:
    """The root most of ``samples`` random vertices (fixed ``seed``) belong to, the
    smallest such root on a tie; :data:`NO_ROOT` on an empty graph."""
    if len(parent) == 0:
        return NO_ROOT
    return most_common(_roots(parent, giant_sample(len(parent), samples, seed)))


def giant_sample(num_vertices: int, samples: int = GIANT_SAMPLES,
                 seed: int = GIANT_SEED) -> np.ndarray:
    """The vertices whose roots vote for the largest component (``samples`` of them, drawn
    with a fixed ``seed``)."""
    return np.random.default_rng(seed).integers(0, num_vertices, size=samples)


def most_common(roots: np.ndarray) -> int:
    """The root named most often, the smallest on a tie."""
    values, counts = np.unique(roots, return_counts=True)
    return int(values[np.argmax(counts)])


def _chunks(items: int, num_edges: int | None, chunk_items: int) -> int:
    """How many equal chunks of about ``chunk_items`` to split ``items`` into: one where
    :func:`seraph.kernels.serial` says so (of a graph of ``num_edges`` edges)."""
    if serial(items, num_edges, 2 * chunk_items):
        return 1
    return items // chunk_items


def _workers(chunks: int) -> int:
    """The threads that take ``chunks`` chunks in turn."""
    return max(1, min(chunks, numba.get_num_threads()))


def _check_csc(indptr: np.ndarray, indices: np.ndarray, num_vertices: int) -> None:
    if not (isinstance(indptr, np.ndarray) and isinstance(indices, np.ndarray)
            and indptr.ndim == 1 and indices.ndim == 1):
        raise InputError("indptr and indices must be 1-d numpy arrays")
    if indptr.dtype != np.int64 or indices.dtype != np.int32:
        raise InputError(f"expected an int64 indptr and int32 indices, got {indptr.dtype} "
                         f"and {indices.dtype}")
    if len(indptr) != num_vertices + 1 or indptr[0] != 0 or indptr[-1] != len(indices):
        raise InputError(f"indptr must have num_vertices + 1 = {num_vertices + 1} entries "
                         f"from 0 to len(indices) = {len(indices)}")
    if np.any(np.diff(indptr) < 0):
        raise InputError("indptr must be non-decreasing")
    if len(indices) and (indices.min() < 0 or indices.max() >= num_vertices):
        raise InputError(f"indices must be vertex ids in [0, {num_vertices})")


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def _find(parent, v):
    """The root of ``v``'s tree, of ``parent``'s dtype whatever the type of ``v``.

    Halves the path on the way (each node on it is pointed at its grandparent), which is
    safe while other threads hook: it writes only to nodes that are not roots, which no
    hook touches again, and only an ancestor of the node, so a smaller id in its set."""
    node = atomic_load(parent, v)
    up = atomic_load(parent, node)
    while up != node:
        grand = atomic_load(parent, up)
        if grand != up:
            atomic_store(parent, node, grand)
        node = up
        up = grand
    return node


@njit(inline="always", cache=True)
def _link(parent, u, v):
    """Unites the trees of ``u`` and ``v``, hooking the higher root under the lower."""
    ru = _find(parent, u)
    rv = _find(parent, v)
    while ru != rv:
        high, low = max(ru, rv), min(ru, rv)
        # Succeeds only while `high` is still a root; otherwise another thread hooked it
        # first, and we go on from both roots as they are now.
        if atomic_cas(parent, high, high, low) == high:
            return
        ru = _find(parent, high)
        rv = _find(parent, low)


@njit(cache=True, nogil=True)
def _link_piece(parent, indptr, indices, edge_start, lo, hi, first, count, skip_root, halt):
    """Links the wanted neighbour positions among global edges [lo, hi), a vertex's at a
    time, until ``halt[0]`` is set (:mod:`seraph.interrupts`)."""
    v = np.searchsorted(indptr, lo, side="right") - 1  # the vertex owning edge lo
    e = lo
    while e < hi and not atomic_load(halt, 0):
        begin = indptr[v]
        end = indptr[v + 1]
        start = max(begin + first, e)
        stop = min(begin + first + min(end - begin - first, count), hi)  # no overflow
        if start < stop and atomic_load(parent, v) != skip_root:
            for k in range(start, stop):
                _link(parent, v, indices[k - edge_start])
        e = end
        v += 1


@njit(inline="always", cache=True)
def _next_chunk(ticket, chunks):
    """The next of ``chunks`` chunks to take, or -1 when none is left."""
    c = atomic_add(ticket, 0, 1)
    return c if c < chunks else -1


@njit(parallel=True, cache=True, nogil=True)
def _link_chunks(parent, indptr, indices, edge_start, first, count, skip_root, chunks,
                 workers, halt):
    """Links the edges in ``chunks`` equal runs (equal edge counts, not vertex counts, so
    a hub's edges are shared out too), which ``workers`` threads take in turn."""
    total = len(indices)
    ticket = zeros(1, np.int64)
    for _ in prange(workers):
        c = _next_chunk(ticket, chunks)
        while c >= 0:
            _link_piece(parent, indptr, indices, edge_start,
                        edge_start + total * c // chunks,
                        edge_start + total * (c + 1) // chunks, first, count, skip_root, halt)
            c = _next_chunk(ticket, chunks)


@njit(cache=True, nogil=True)
def _compress_vertices(parent, lo, hi, halt):
    """Points vertices [lo, hi) at their roots, looking at ``halt[0]`` every
    ``_CHUNK_ITEMS`` of them."""
    for v in range(lo, hi):
        if ((v - lo) & (_CHUNK_ITEMS - 1)) == 0 and atomic_load(halt, 0):
            return
        root = _find(parent, v)
        if atomic_load(parent, v) != root:
            atomic_store(parent, v, root)


@njit(parallel=True, cache=True, nogil=True)
def _compress_chunks(parent, chunks, workers, halt):
    n = len(parent)
    ticket = zeros(1, np.int64)
    for _ in prange(workers):
        c = _next_chunk(ticket, chunks)
        while c >= 0:
            _compress_vertices(parent, n * c // chunks, n * (c + 1) // chunks, halt)
            c = _next_chunk(ticket, chunks)


@njit(cache=True, nogil=True)
def _link_sample_range(parent, sample, lo, hi, halt):
    per = len(sample) // len(parent)
    for v in range(lo, hi):
        if ((v - lo) & (_CHUNK_ITEMS - 1)) == 0 and atomic_load(halt, 0):
            return
        for j in range(v * per, (v + 1) * per):
            if sample[j] >= 0:
                _link(parent, v, sample[j])


@njit(parallel=True, cache=True, nogil=True)
def _link_sample_chunks(parent, sample, chunks, workers, halt):
    n = len(parent)
    ticket = zeros(1, np.int64)
    for _ in prange(workers):
        c = _next_chunk(ticket, chunks)
        while c >= 0:
            _link_sample_range(parent, sample, n * c // chunks, n * (c + 1) // chunks, halt)
            c = _next_chunk(ticket, chunks)


@njit(cache=True)
def _roots(parent, vertices):
    out = np.empty(len(vertices), parent.dtype)
    for i in range(len(vertices)):
        out[i] = _find(parent, vertices[i])
    return out
