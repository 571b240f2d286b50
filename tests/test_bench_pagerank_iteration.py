"""scripts/bench_pagerank_iteration.py on the CPU at tiny sizes: both iteration counts run,
every call checked against a float64 iteration of as many steps, and a wrong answer
fails the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_pagerank_iteration  # noqa: E402
import bench_peers  # noqa: E402

SMALL = ["--device", "cpu", "--grid-side", "32", "--uniform-scale", "8",
         "--iterations", "3", "8", "--repeat", "2", "--md-out", ""]


def test_an_iteration_is_the_slope_of_two_checked_calls(tmp_path):
    out = tmp_path / "i.json"
    assert bench_pagerank_iteration.main([*SMALL, "--graphs", "grid", "uniform",
                                          "--json-out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [c["graph"] for c in data["cells"]] == ["grid 32x32", "uniform-8 ef16"]
    for c in data["cells"]:
        assert c["problems"] == [] and sorted(c["counts"]) == ["3", "8"]
        t3, t8 = c["counts"]["3"], c["counts"]["8"]
        assert len(t3["times"]) == len(t8["times"]) == 2
        assert c["iteration"] == (t8["median"] - t3["median"]) / 5
        assert c["pass_link"] == pytest.approx(
            c["iteration"] * bench_pagerank_iteration.LINK / c["index_bytes"])


def test_a_call_far_from_the_reference_fails_the_run(monkeypatch, capsys):
    right = bench_peers.reference_pagerank

    def off(graph, *args):
        ref = right(graph, *args)
        ref["ranks"] = ref["ranks"] * 1.5
        return ref

    monkeypatch.setattr(bench_peers, "reference_pagerank", off)
    assert bench_pagerank_iteration.main([*SMALL, "--graphs", "grid"]) == 1
    assert "from the reference's" in capsys.readouterr().out
