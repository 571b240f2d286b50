"""SSSP's strong rule with each vertex's lightest in-edge (seraph/lightest.py): the bound
is a lower bound in one byte, and the rule proves more vertices without changing an
answer, on both backends."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seraph
from seraph.algorithms import get
from seraph.backends import base, caches
from seraph.backends.layout import Layout
from seraph.lightest import NO_BOUND, lightest_in, proven
from seraph.validate import check


def csc(in_weights: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    """A CSC's indptr and weights from each vertex's in-edge weights."""
    indptr = np.zeros(len(in_weights) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(w) for w in in_weights])
    weights = np.array([x for w in in_weights for x in w], dtype=np.float32)
    return indptr, weights


def test_integer_weights_are_kept_exactly():
    indptr, weights = csc([[3, 7, 5], [], [255, 200], [0, 9], [12]])
    bound = lightest_in(indptr, weights)
    assert bound.unit == 1
    # No in-edges: code 0 (such a vertex is never pulled); a zero weight bounds nothing.
    assert bound.codes.tolist() == [3, 0, 200, 0, 12]


def test_zero_weights_turn_the_bound_off():
    indptr, weights = csc([[0, 0], [0], []])
    assert lightest_in(indptr, weights).unit == 0


WEIGHTS = st.floats(0, float(np.float32(1e30)), width=32)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(WEIGHTS, max_size=4), min_size=1, max_size=30))
def test_the_bound_is_a_float32_lower_bound_within_one_unit(in_weights):
    indptr, weights = csc(in_weights)
    bound = lightest_in(indptr, weights)
    for v, w in enumerate(in_weights):
        if not w or bound.unit == 0:
            continue
        product = np.float32(bound.codes[v]) * bound.unit  # as the kernels compute it
        assert product <= min(w)
        if bound.codes[v] < 255:
            assert min(w) - float(product) <= 2 * float(bound.unit)


def test_proven_adds_the_bound_only_when_set():
    codes, unit = np.array([0, 4], dtype=np.uint8), np.float32(1)
    assert proven(np.float32(5), np.float32(1), codes, unit, 1)
    assert not proven(np.float32(5.5), np.float32(1), codes, unit, 1)
    assert not proven(np.float32(5), np.float32(1), codes, unit, 0)
    assert not proven(np.float32(5), np.float32(1), *NO_BOUND, 0)


def heavy_graph() -> seraph.Graph:
    """Every edge weighs 5 to 9, so a vertex is proven up to 5 above the plain threshold."""
    rng = np.random.default_rng(3)
    m = 12_000
    return seraph.Graph.from_edges(rng.integers(0, 2000, m), rng.integers(0, 2000, m),
                                   rng.integers(5, 10, m).astype(np.float32),
                                   num_vertices=2000, symmetrize=True, page_edges=512)


@pytest.mark.parametrize("paged", [False, True])
def test_the_rule_proves_more_and_changes_nothing(paged, device, monkeypatch):
    graph = heavy_graph()
    layout = Layout.for_run(graph, get("sssp").spec, "strong", None)
    # The reentry schedule sweeps a fixed number of times whatever the copies do; under the
    # pipelined one, how often a window is re-swept depends on when copies land, so counts
    # of attempts differ from run to run (a first run slowed by compiling re-sweeps more).
    opts = dict(device=device, predictor="strong", push_alpha=0, schedule="reentry",
                device_memory=layout.state_bytes + 2 * layout.slot_bytes if paged else None)
    with_rule = seraph.sssp(graph, 0, **opts)
    assert check(graph, "sssp", with_rule.distances, 0) is None
    monkeypatch.setattr(base, "graph_lightest_in", lambda graph: NO_BOUND)
    plain = seraph.sssp(graph, 0, **opts)
    np.testing.assert_array_equal(with_rule.distances, plain.distances)
    assert with_rule.stats.resident is not paged
    assert with_rule.stats.skipped_strong > plain.stats.skipped_strong
    assert with_rule.stats.updates_attempted < plain.stats.updates_attempted


@pytest.mark.parametrize("paged", [False, True])
def test_fractional_weights_keep_answers_exact(paged, device):
    """Weights that are not small integers: the bound steps in 255ths of the heaviest
    lightest in-edge, rounded as float32 on both backends."""
    rng = np.random.default_rng(5)
    m, n = 20_000, 3000
    graph = seraph.Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m),
                                    rng.uniform(0.1, 3.0, m).astype(np.float32),
                                    num_vertices=n, symmetrize=True, page_edges=1024)
    assert caches.graph_lightest_in(graph).unit not in (0, 1)
    layout = Layout.for_run(graph, get("sssp").spec, "strong", None)
    for alpha in (0, 20):  # dense rounds only, or with push and bottom-up rounds
        result = seraph.sssp(graph, 7, device=device, push_alpha=alpha, device_memory=(
            layout.state_bytes + 3 * layout.slot_bytes if paged else None))
        assert check(graph, "sssp", result.distances, 7) is None
        # The strong rule skips vertices in dense sweeps. A paged SSSP that may push pulls
        # bottom-up in their place on a device (CudaBackend.bottom_up_edge_limit).
        assert result.stats.sweeps > 0 or alpha
        assert (result.stats.skipped_strong > 0) == (result.stats.sweeps > 0)
