"""Stores renumbered for locality (``order="rcm"`` or ``"degree"``, partitioner/order.py):
every algorithm's answer, read through ``Graph.vertex_ids``, is the input-order graph's
answer, and scipy's; sources are input ids; CC labels are each component's smallest input
id."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine import Edges, expected
from test_writer import check_sample

import seraph
from partitioner import writer
from partitioner.order import permute_rows, rcm_order
from partitioner.readers import edges_from_arrays
from partitioner.writer import Options, build_in_memory, write_store
from seraph.errors import InputError
from seraph.graph import Graph


def by_input_id(graph: Graph, values: np.ndarray) -> np.ndarray:
    """A result per store vertex, reindexed by input id (dense input ids)."""
    out = np.empty_like(values)
    out[graph.vertex_ids] = values
    return out


@st.composite
def graphs(draw):
    """Up to 40 vertices: a path through a random order (a long diameter), random edges
    (self-loops and duplicates among them), small integer weights with zeros."""
    n = draw(st.integers(1, 40))
    order = draw(st.permutations(range(n)))
    path = order[:draw(st.integers(0, n))]
    vertex = st.integers(0, n - 1)
    pairs = [*zip(path, path[1:], strict=False),
             *draw(st.lists(st.tuples(vertex, vertex), max_size=80))]
    weight = draw(st.lists(st.integers(0, 4).map(float), min_size=len(pairs),
                           max_size=len(pairs)))
    edges = Edges(n, tuple(u for u, _ in pairs), tuple(v for _, v in pairs), tuple(weight),
                  draw(st.booleans()), keep=False)
    return edges, draw(vertex), draw(st.sampled_from([1, 4, 64])), draw(st.sampled_from(
        ["rcm", "degree"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=graphs())
def test_renumbered_graphs_give_scipys_answers(case, device):
    edges, source, page_edges, order = case
    g = Graph.from_edges(np.array(edges.src, dtype=np.int64),
                         np.array(edges.dst, dtype=np.int64),
                         np.array(edges.weight, dtype=np.float32), num_vertices=edges.n,
                         symmetrize=edges.symmetric, page_edges=page_edges, order=order)
    assert g.attrs.vertex_order == order and sorted(g.vertex_ids) == list(range(edges.n))
    indptr, _indices, weights = g.csc()
    assert g.rows_by_weight and all((np.diff(weights[a:b]) >= 0).all()
                                    for a, b in zip(indptr[:-1], indptr[1:], strict=True))
    # Renumbered too, each vertex's smallest in-neighbours are kept apart.
    arrays = {name: g.array(name) for name in ("csc/indptr", "csc/indices")}
    if g.sample() is not None:
        arrays["csc/sample"] = g.sample()
    check_sample(arrays, g.attrs)
    levels = seraph.bfs(g, source, device=device).levels
    np.testing.assert_array_equal(by_input_id(g, levels), expected("bfs", edges, source))
    distances = seraph.sssp(g, source, device=device).distances
    np.testing.assert_array_equal(by_input_id(g, distances),
                                  expected("sssp", edges, source).astype(np.float32))
    if edges.symmetric:
        for method in ("union-find", "propagation"):
            labels = seraph.connected_components(g, device=device, components=method).labels
            np.testing.assert_array_equal(by_input_id(g, labels), expected("cc", edges, 0))


def test_a_shuffled_grid_gets_neighbours_at_nearby_ids():
    side = 30
    rows, cols = np.divmod(np.arange(side * side), side)
    right = (cols + 1 < side)
    down = (rows + 1 < side)
    v = np.arange(side * side)
    src = np.concatenate([v[right], v[down]])
    dst = np.concatenate([v[right] + 1, v[down] + side])
    shuffle = np.random.default_rng(0).permutation(side * side)
    a = sp.csr_array((np.ones(len(src), np.int8), (shuffle[src], shuffle[dst])),
                     shape=(side * side, side * side))
    a = (a + a.T).tocsr()
    old = rcm_order(a.indptr, a.indices, side * side, symmetric=True)
    new_of_old = np.empty_like(old)
    new_of_old[old] = np.arange(len(old))
    indptr, indices, _ = permute_rows(a.indptr.astype(np.int64), a.indices, None, old,
                                      new_of_old)
    rows_of = np.repeat(np.arange(side * side), np.diff(indptr))
    assert np.abs(indices - rows_of).max() <= 2 * side  # the bandwidth of a grid's order
    assert np.abs(a.indices - np.repeat(np.arange(side * side), np.diff(a.indptr))).max() \
        > 10 * side  # the shuffled ids' bandwidth


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=graphs())
def test_the_degree_order_is_written_out_of_core(case):
    """Spilled into many buckets, as a graph larger than the memory budget is (each edge
    pretends to cost 100 KiB): the renumbering pass reads and rewrites them a group of
    buckets at a time, and the answers stay scipy's."""
    edges, source, page_edges, _ = case
    options = Options(symmetrize=edges.symmetric, page_edges=page_edges, memory=1 << 20,
                      order="degree")
    with mock.patch.object(writer, "_sweep_bytes", lambda e, k, weighted: (e + k) * 100 << 10):
        attrs, arrays = build_in_memory(edges_from_arrays(
            np.array(edges.src, dtype=np.int64), np.array(edges.dst, dtype=np.int64),
            np.array(edges.weight, dtype=np.float32), edges.n), options)
    g = Graph(attrs, arrays=arrays)
    assert g.attrs.vertex_order == "degree" and sorted(g.vertex_ids) == list(range(edges.n))
    np.testing.assert_array_equal(by_input_id(g, seraph.bfs(g, source, device="cpu").levels),
                                  expected("bfs", edges, source))
    np.testing.assert_array_equal(
        by_input_id(g, seraph.sssp(g, source, device="cpu").distances),
        expected("sssp", edges, source).astype(np.float32))


def test_the_degree_order_numbers_hubs_first():
    # Out-degrees: vertex 0 -> 1, 1 -> 3, 2 -> 0, 3 -> 3 (directed); ties keep input order.
    src = np.array([0, 1, 1, 1, 3, 3, 3])
    dst = np.array([1, 0, 2, 3, 0, 1, 2])
    g = Graph.from_edges(src, dst, num_vertices=4, order="degree")
    assert g.vertex_ids.tolist() == [1, 3, 0, 2]
    np.testing.assert_array_equal(g.out_degrees(), [3, 3, 1, 0])
    levels = seraph.bfs(g, 0, device="cpu").levels
    np.testing.assert_array_equal(by_input_id(g, levels), [0, 1, 2, 2])


@pytest.mark.parametrize("order", ["rcm", "degree"])
def test_renumbered_store_round_trips_with_sparse_ids(tmp_path, device, order):
    ids = np.array([10, 10**6, 2**40, 77, 5])
    src, dst = ids[[0, 1, 2, 3, 4]], ids[[1, 2, 3, 4, 0]]  # a cycle through sparse ids
    path = write_store(edges_from_arrays(src, dst, [1.0, 2.0, 3.0, 4.0, 5.0]),
                       tmp_path / "g.zarr", Options(symmetrize=True, order=order))
    g = seraph.open_graph(path)
    assert g.attrs.relabelled and g.attrs.vertex_order == order
    assert sorted(g.vertex_ids) == sorted(ids)
    for vid in ids:
        assert g.vertex_ids[g.vertex_index(vid)] == vid
    with pytest.raises(InputError, match="not a vertex"):
        g.vertex_index(11)
    result = seraph.sssp(g, 2**40, device=device, predecessors=True)
    got = dict(zip(g.vertex_ids.tolist(), result.distances.tolist(), strict=True))
    assert got == {2**40: 0.0, 10**6: 2.0, 77: 3.0, 5: 7.0, 10: 3.0}
    labels = seraph.connected_components(g, device=device).labels
    assert set(labels.tolist()) == {5}  # the smallest input id of the one component
    parents = dict(zip(g.vertex_ids.tolist(), result.predecessors.tolist(), strict=True))
    assert (parents[10**6], parents[10], parents[5], parents[2**40]) == (2**40, 10**6, 77, -1)


def test_an_order_that_does_not_fit_the_memory_budget_is_refused(tmp_path):
    from partitioner.generators import grid

    with pytest.raises(InputError, match="--order rcm renumbers the graph in memory"):
        write_store(grid(256, 256), tmp_path / "g.zarr",
                    Options(symmetrize=True, order="rcm", memory=1 << 20))
    assert not (tmp_path / "g.zarr").exists()
    with pytest.raises(InputError, match="unknown vertex order"):
        write_store(grid(4, 4), tmp_path / "h.zarr", Options(order="bfs"))
