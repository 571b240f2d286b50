"""seraph.sources.random_sources: the sources of many-source runs and benchmarks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seraph
import seraph.cli
from seraph.errors import InputError
from seraph.sources import random_sources


@st.composite
def graphs_with_isolated_vertices(draw):
    n = draw(st.integers(2, 40))
    m = draw(st.integers(1, 60))
    src = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)))
    dst = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)))
    return seraph.Graph.from_edges(src, dst, num_vertices=n)


@settings(max_examples=60, deadline=None)
@given(graphs_with_isolated_vertices(), st.integers(1, 50), st.integers(0, 2**32))
def test_sources_are_distinct_non_isolated_and_fixed_by_the_seed(g, k, seed):
    connected = set(np.flatnonzero((g.out_degrees() > 0) | (g.in_degrees() > 0)).tolist())
    if k > len(connected):
        with pytest.raises(InputError, match=f"asked for {k} random sources but the graph "
                                             f"has only {len(connected)} non-isolated"):
            random_sources(g, k, seed)
        return
    sources = random_sources(g, k, seed)
    assert len(sources) == k == len(set(sources))
    assert set(sources) <= connected
    assert random_sources(g, k, seed) == sources


@settings(max_examples=30, deadline=None)
@given(graphs_with_isolated_vertices(), st.integers(0, 2**32))
def test_every_vertex_order_draws_the_same_sources(g, seed):
    src, dst = np.repeat(np.arange(g.num_vertices), np.diff(g.csr()[0])), g.csr()[1]
    k = min(3, int(((g.out_degrees() > 0) | (g.in_degrees() > 0)).sum()))
    if k == 0:
        return  # no edge left (self-loops only): nothing to draw
    for order in ("rcm", "degree"):
        renumbered = seraph.Graph.from_edges(src, dst, num_vertices=g.num_vertices,
                                             order=order)
        assert random_sources(renumbered, k, seed) == random_sources(g, k, seed)


def test_sources_are_input_ids_of_a_relabelled_graph(tmp_path):
    edges = tmp_path / "g.el"
    edges.write_text("1000 2000\n2000 3000\n")
    store = tmp_path / "g.zarr"
    assert seraph.cli.main(["preprocess", str(edges), "-o", str(store), "-q"]) == 0
    assert sorted(random_sources(seraph.open_graph(store), 3)) == [1000, 2000, 3000]


def test_at_least_one_source():
    g = seraph.Graph.from_edges(np.array([0]), np.array([1]))
    with pytest.raises(InputError, match="at least 1"):
        random_sources(g, 0)
