"""Hub chunks (seraph/hubs.py) against their definition: every in-edge of every hub in
exactly one chunk, each chunk within one page and at most chunk_edges long."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import seraph
from seraph.backends.layout import Layout
from seraph.hubs import hub_chunks


@given(degrees=st.lists(st.integers(0, 60), min_size=1, max_size=40),
       page_edges=st.integers(1, 70), hub_edges=st.integers(0, 30),
       chunk_edges=st.integers(1, 25))
@settings(max_examples=300, deadline=None)
def test_chunks_cover_the_hubs_in_edges(degrees, page_edges, hub_edges, chunk_edges):
    indptr = np.concatenate(([0], np.cumsum(degrees))).astype(np.int64)
    num_pages = max(1, -(-int(indptr[-1]) // page_edges))
    got = hub_chunks(indptr, page_edges, num_pages, hub_edges, chunk_edges)
    chunks, page_chunks = got.chunks, got.page_chunks
    assert got.hub_edges == hub_edges and chunks.shape[1] == 3
    vertex, lo, hi = chunks.T
    # Every edge of a hub, once, in ascending order; no edge of another vertex.
    want = np.concatenate([np.arange(indptr[v], indptr[v + 1])
                           for v in range(len(degrees)) if degrees[v] > hub_edges] or
                          [np.zeros(0, np.int64)])
    covered = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi, strict=True)] or
                             [np.zeros(0, np.int64)])
    np.testing.assert_array_equal(covered, want)
    assert np.all((indptr[vertex] <= lo) & (hi <= indptr[vertex + 1]))
    assert np.all((hi > lo) & (hi - lo <= chunk_edges))
    # Within one page, and listed under it.
    page = lo // page_edges
    assert np.all((hi - 1) // page_edges == page)
    assert page_chunks[0] == 0 and page_chunks[-1] == len(chunks)
    assert len(page_chunks) == num_pages + 1
    for p in range(num_pages):
        assert np.all(page[page_chunks[p]:page_chunks[p + 1]] == p)


def test_the_budget_counts_the_chunk_list(monkeypatch):
    """Layout.plan's vertex state includes the chunk list, 24 bytes a chunk, and nothing
    for a graph without hubs."""
    from seraph import hubs

    star = seraph.Graph.from_edges(np.zeros(50, np.int64), np.arange(1, 51), num_vertices=51,
                                   symmetrize=True, page_edges=16)
    without = Layout.plan(star, False, None).state_bytes
    monkeypatch.setattr(hubs, "HUB_EDGES", 10)
    monkeypatch.setattr(hubs, "CHUNK_EDGES", 4)
    # Vertex 0 has 50 in-edges over pages of 16: slices 16, 16, 16, 2 -> 4 + 4 + 4 + 1.
    assert Layout.plan(star, False, None).state_bytes == without + 24 * 13
