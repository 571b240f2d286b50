"""scripts/diagram_from_runs.py on a small road-like grid: it records the histories, picks K
and S from them, and writes a diagram that loads and behaves as its comments say."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import diagram_from_runs  # noqa: E402

from seraph.predictors import ATTEMPT, NEXT, ON_FAILURE, ON_SUCCESS, load_diagram  # noqa: E402


def test_a_diagram_from_a_small_grid(tmp_path):
    toml, out = tmp_path / "measured.toml", tmp_path / "measured.json"
    assert diagram_from_runs.main(["--side", "48", "--toml-out", str(toml), "--json-out",
                                   str(out), "--md-out", ""]) == 0
    data = json.loads(out.read_text())
    k, sleep = data["K"], data["S"]
    attempts, successes = np.array(data["attempts"]), np.array(data["successes"])
    assert attempts[0] > 0 and (successes <= attempts).all()
    # K is the first run length whose attempts succeed at most max-success (10%) of the time.
    share = successes / np.maximum(attempts, 1)
    assert share[k] <= 0.1 or k == diagram_from_runs.MAX_RUN
    assert all(share[j] > 0.1 for j in range(1, k) if attempts[j])
    table = load_diagram(toml).table
    wake = k + sleep
    assert table.shape[1] == wake + 1
    assert table[ATTEMPT, :k].all() and table[ATTEMPT, wake] and not table[ATTEMPT, k:wake].any()
    assert (table[ON_SUCCESS, list(range(k)) + [wake]] == 0).all()
    # k failures in a row reach the sleep, which counts down to the wake-up state.
    state = 0
    for _ in range(k):
        state = table[ON_FAILURE, state]
    for _ in range(sleep):
        assert not table[ATTEMPT, state]
        state = table[NEXT, state]
    assert state == wake and table[ON_FAILURE, wake] == wake - 1


def test_the_histories_count_failures_in_a_row():
    h = diagram_from_runs.Histories(3)
    h.record(np.array([0, 1, 2]), np.array([False, True, False]))
    h.record(np.array([0, 2]), np.array([False, True]))
    h.record(np.array([0]), np.array([True]))
    h.finish()
    # Attempts after 0 failures: 3 (1 success); after 1: 2 (1); after 2: 1 (1).
    assert h.attempts[:3].tolist() == [3, 2, 1] and h.successes[:3].tolist() == [1, 1, 1]
    assert sorted(h.further_failures(1).tolist()) == [0, 1]
