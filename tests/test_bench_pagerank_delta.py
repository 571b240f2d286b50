"""scripts/bench_pagerank_delta.py on the CPU at tiny sizes: a row per graph, budget,
schedule and variant, every call's answer checked by PageRank's verifier, the edges read
set against the same run's without a predictor, traces with the weak predictor's state
counts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_pagerank_delta  # noqa: E402


def test_the_pagerank_delta_study_on_the_cpu(tmp_path, capsys):
    out_json, traces = tmp_path / "d.json", tmp_path / "traces"
    rc = bench_pagerank_delta.main([
        "--scale", "8", "--page-edges", "512", "--repeat", "1", "--budget-fraction", "0",
        "--budget-fraction", "0.25", "--schedule", "pipelined", "--schedule", "reentry",
        "--diagram", "weak-patient", "--json-out", str(out_json), "--md-out", "",
        "--trace-dir", str(traces)])
    assert rc == 0
    cells = json.loads(out_json.read_text())["cells"]
    rows = 6  # power, none, auto, weak-delta, weak-seraph, weak-patient
    assert len(cells) == 2 * 2 * 2 * rows
    for c in cells:
        assert c["checks"]["ok"] and c["checks"]["line"] == "checked 2 of 2"
        assert c["converged"] and c["edges_read"] > 0 and c["totals"]["rounds"] > 0
        if c["variant"] == bench_pagerank_delta.BASELINE:
            assert c["edges_ratio"] == 1 and c["meets_bar"] is None
        if "weak" in c["variant"]:  # auto's weak predictor joins once attempts mostly fail
            assert c["meets_bar"] in (True, False)
        else:
            assert c["totals"]["skipped_weak"] == 0
    # A diagram skips a handful of vertices a run at this size, and a paged or parallel
    # run's rounds vary with timing: each skips somewhere, not in every row.
    for variant in {c["variant"] for c in cells if "weak (" in c["variant"]}:
        assert sum(c["totals"]["skipped_weak"] for c in cells if c["variant"] == variant)
    assert {c["variant"] for c in cells} >= {"power", "delta, auto (weak)"}
    written = sorted(traces.glob("*.json"))
    assert len(written) == len(cells)
    weak = json.loads(next(t for t in written if "weak-delta" in t.name).read_text())
    assert weak["stats"]["predictor_states"]  # what seraph plot draws per round
    assert "| RMAT-8 | resident | pipelined | delta, none |" in capsys.readouterr().out
