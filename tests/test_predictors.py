"""Weak predictor diagrams: the shipped TOML files, validation, and the kernel step rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit
from scipy.sparse import csgraph

import seraph.predictors
from seraph.errors import ConfigError
from seraph.predictors import (
    ATTEMPT,
    MAX_STATES,
    NEXT,
    ON_FAILURE,
    ON_SUCCESS,
    OWES,
    STATE_MASK,
    builtin_diagrams,
    load_diagram,
    parse_diagram,
    weak_record,
    weak_skip,
)

#: Valid but deliberately bad: after a single failure a vertex sleeps for 20 rounds, so it
#: misses most updates. Only the engine's final re-check of dormant vertices can keep
#: results exact with it; engine tests use it for exactly that.
SLEEPY_TOML = "\n".join(
    ['name = "sleepy"', 'description = "sleeps 20 rounds after any failure"', "initial = 0",
     "[states.0]", "attempt = true", "on_success = 0", "on_failure = 1"]
    + [f"[states.{s}]\nattempt = false\nnext = {(s + 1) % 21}" for s in range(1, 21)])

VALID = """
name = "tiny"
initial = 0
[states.0]
attempt = true
on_success = 0
on_failure = 1
[states.1]
attempt = false
next = 0
"""


def test_weak_seraph_is_figure_6():
    d = load_diagram("weak-seraph")
    assert d.initial == 0 and d.num_states == 6
    assert list(np.flatnonzero(d.attempt)) == [0, 1, 5]
    assert list(d.dormant_states()) == [2, 3, 4]
    for s in (0, 1, 5):
        assert d.on_success[s] == 0
    assert {s: int(d.on_failure[s]) for s in (0, 5, 1)} == {0: 5, 5: 3, 1: 4}
    assert {s: int(d.next_dormant[s]) for s in (3, 2, 4)} == {3: 2, 2: 1, 4: 3}
    # Rows that do not apply hold the state itself (the documented packed layout).
    table = d.table
    assert table.shape == (4, 6) and table.dtype == np.uint8
    np.testing.assert_array_equal(table[NEXT, [0, 1, 5]], [0, 1, 5])
    np.testing.assert_array_equal(table[ON_SUCCESS, [2, 3, 4]], [2, 3, 4])
    np.testing.assert_array_equal(table[ON_FAILURE, [2, 3, 4]], [2, 3, 4])
    np.testing.assert_array_equal(table[ATTEMPT], d.attempt)


def test_builtin_names_and_alias():
    assert {"weak-seraph", "weak-patient"} <= set(builtin_diagrams())
    np.testing.assert_array_equal(load_diagram("seraph").table, load_diagram("weak-seraph").table)
    for name in builtin_diagrams():
        d = load_diagram(name)
        assert d.name == name and d.description
        np.testing.assert_array_equal(parse_diagram(d.to_toml()).table, d.table)


CHECKOUT_CONFIGS = Path(seraph.predictors.__file__).resolve().parent.parent / "configs"


@pytest.mark.skipif(not CHECKOUT_CONFIGS.is_dir(),
                    reason="seraph is installed from a wheel here, not run from a checkout")
def test_shipped_diagrams_load_from_a_checkout_too(monkeypatch):
    """Without an installed build there is no ``seraph.configs`` package; the diagrams then
    come from the checkout's ``configs/``."""
    from importlib import resources

    files = resources.files

    def uninstalled(package):
        if package == "seraph.configs":
            raise ModuleNotFoundError("No module named 'seraph.configs'")
        return files(package)

    installed = {name: load_diagram(name).table for name in builtin_diagrams()}
    monkeypatch.setattr(resources, "files", uninstalled)
    assert set(builtin_diagrams()) == set(installed)
    for name, table in installed.items():
        np.testing.assert_array_equal(load_diagram(name).table, table)


def test_custom_diagram_round_trips_through_a_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(SLEEPY_TOML)
    d = load_diagram(path)
    assert (d.name, d.initial, d.num_states) == ("sleepy", 0, 21)
    assert list(d.dormant_states()) == list(range(1, 21))
    again = tmp_path / "again.toml"
    again.write_text(d.to_toml())
    e = load_diagram(str(again))
    assert (e.name, e.description, e.initial) == (d.name, d.description, d.initial)
    np.testing.assert_array_equal(e.table, d.table)
    assert not d.attempt.flags.writeable  # a frozen diagram cannot be edited in place


def test_name_defaults_to_the_file_stem(tmp_path):
    path = tmp_path / "unnamed.toml"
    path.write_text(VALID.replace('name = "tiny"', ""))
    assert load_diagram(path).name == "unnamed"


def _states(*specs: str) -> str:
    return "initial = 0\n" + "\n".join(f"[states.{i}]\n{s}" for i, s in enumerate(specs))


ATT = "attempt = true\non_success = 0\non_failure = 0"
DOZE = "attempt = false\nnext = 0"


@pytest.mark.parametrize("text, message", [
    ("initial = \n", "invalid TOML: .*line 1"),
    ("initial = 0\n[states.0]\nattempt = true\non_success = 0\non_failure = 9\n",
     r"state 0: on_failure = 9 refers to an unknown state \(states are 0..0\)"),
    (_states("attempt = true\non_success = 0"), "state 0: missing transition 'on_failure'"),
    (_states("attempt = true\non_failure = 0"), "state 0: missing transition 'on_success'"),
    (_states(ATT, "attempt = false"), "state 1: missing transition 'next'"),
    (_states(ATT + "\nnext = 0"), "state 0: 'next' not allowed: an attempting state"),
    (_states(ATT, DOZE + "\non_failure = 0"), "state 1: 'on_failure' not allowed: a dormant"),
    (_states("on_success = 0\non_failure = 0"), "state 0: missing 'attempt'"),
    (_states('attempt = "yes"\non_success = 0\non_failure = 0'), "'attempt' must be true or"),
    (_states(ATT + "\nsleep = 3"), r"unknown key\(s\) 'sleep' in state 0"),
    ("colour = 1\n" + _states(ATT), r"unknown key\(s\) 'colour' in the top level"),
    (_states(ATT).replace("initial = 0", ""), "missing 'initial'"),
    (_states(ATT).replace("initial = 0", "initial = 3"), "initial = 3 refers to an unknown"),
    (_states(ATT, DOZE).replace("initial = 0", "initial = 1"), "initial state 1 is dormant"),
    (_states(*[ATT] * (MAX_STATES + 1)), "too many states: 129 .at most 128;"),
    ("initial = 0\n[states.0]\n" + ATT + "\n[states.2]\n" + DOZE, "without gaps; missing 1"),
    ("initial = 0\n[states.a]\n" + ATT, "state id 'a' is not a non-negative integer"),
    ("initial = 0\n", "no states"),
    (_states(ATT.replace("on_success = 0", "on_success = 1.5"), DOZE),
     "on_success must be a state id"),
    (_states(ATT, "attempt = false\nnext = 2", "attempt = false\nnext = 3",
             "attempt = false\nnext = 2"),
     "dormant states 2 -> 3 -> 2 form a cycle that never reaches an attempting state"),
    (_states(ATT, "attempt = false\nnext = 1"), "dormant states 1 -> 1 form a cycle"),
])
def test_invalid_diagrams_name_the_file_and_the_problem(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=f"^{path}: .*{message}"):
        load_diagram(path)


def test_unknown_builtin_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="unknown predictor diagram 'nope'; built-in.*weak-"):
        load_diagram("nope")
    with pytest.raises(ConfigError, match="cannot read predictor diagram .*absent.toml"):
        load_diagram(tmp_path / "absent.toml")


@njit(cache=True)
def _trajectory(table, outcomes):
    """State bytes one vertex has before each round when its attempts have the given
    outcomes; a skipped round is recorded as -1 - state byte."""
    states = np.zeros(1, dtype=np.uint8)
    seen = np.empty(len(outcomes), dtype=np.int64)
    for r in range(len(outcomes)):
        seen[r] = states[0]
        if weak_skip(table, states, 0):
            seen[r] = -1 - seen[r]
        else:
            weak_record(table, states, 0, outcomes[r])
    return seen


def test_step_rule_follows_figure_6_and_marks_skipped_vertices():
    table = load_diagram("weak-seraph").table
    o = int(OWES)  # set by a skip until the next attempt, whatever the state
    # failing forever: 0 F, 5 F, sleep 3 2, 1 F, sleep 4 3 2, 1 F, ...
    fails = _trajectory(table, np.zeros(12, dtype=np.bool_))
    assert list(fails) == [0, 5, -4, -1 - (o | 2), o | 1, -5, -1 - (o | 3), -1 - (o | 2),
                           o | 1, -5, -1 - (o | 3), -1 - (o | 2)]
    # a success anywhere returns to 0
    mixed = _trajectory(table, np.array([0, 0, 0, 0, 1, 0, 1, 1], dtype=np.bool_))
    ids = [x & int(STATE_MASK) if x >= 0 else -1 - ((-1 - x) & int(STATE_MASK)) for x in mixed]
    assert ids == [0, 5, -4, -3, 1, 0, 5, 0]


@njit(cache=True)
def _attempt(indptr, indices, weights, dist, new, table, states, v):
    """Pull v over its in-edges into new[v] and record the outcome; True if it lowered."""
    best = dist[v]
    for e in range(indptr[v], indptr[v + 1]):
        best = min(best, dist[indices[e]] + weights[e])
    lowered = best < dist[v]
    new[v] = best
    weak_record(table, states, v, lowered)
    return lowered


@njit(cache=True)
def _sssp_with_weak_predictor(indptr, indices, weights, source, table, initial, in_place):
    """A minimal sequential pull SSSP (rounds in place, or synchronous like a BSP engine)
    driven by a weak diagram, with the engine's rule: a round that changes nothing is
    followed by the final re-check, and only a re-check that changes nothing converges.
    Returns the distances and the number of attempts the predictor skipped."""
    n = len(indptr) - 1
    dist = np.full(n, np.inf, dtype=np.float32)
    dist[source] = 0
    new = dist if in_place else dist.copy()
    states = np.full(n, initial, dtype=np.uint8)
    skipped = 0
    changed = True
    while changed:
        changed = False
        for v in range(n):
            if weak_skip(table, states, v):
                skipped += 1
                continue
            changed |= _attempt(indptr, indices, weights, dist, new, table, states, v)
        if not changed:  # converged unless a vertex skipped since its last attempt disagrees
            for v in range(n):
                if states[v] & OWES:
                    states[v] = initial
                    changed |= _attempt(indptr, indices, weights, dist, new, table, states, v)
        dist[:] = new
    return dist, skipped


#: Sleeps one round after every failure: every other round, the vertices that have stopped
#: changing wake up (1 -> 0) without attempting, so re-checking only the vertices in dormant
#: states would miss them (in synchronous rounds it does); OWES catches them.
ALTERNATE_TOML = VALID


@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("diagram", [SLEEPY_TOML, ALTERNATE_TOML])
def test_bad_diagrams_stay_exact_through_the_final_recheck(diagram, in_place):
    rng = np.random.default_rng(5)
    n, m = 300, 1500
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(1, 20, m).astype(np.float32)
    csc = sp.csr_matrix((w, (dst, src)), shape=(n, n))  # rows = destinations: in-edges
    csc.sum_duplicates()
    dist, skipped = _sssp_with_weak_predictor(
        csc.indptr.astype(np.int64), csc.indices, csc.data.astype(np.float32), 0,
        parse_diagram(diagram).table, 0, in_place)
    assert skipped > n  # the diagram really did skip work
    expected = csgraph.dijkstra(csc.T.tocsr(), indices=0)
    np.testing.assert_array_equal(dist, expected.astype(np.float32))
