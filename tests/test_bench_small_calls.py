"""scripts/bench_small_calls.py at a small size: sources in small components, both
systems' rows quiet and loaded, every answer agreeing with scipy's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_small_calls  # noqa: E402


def test_small_queries_quiet_and_loaded(tmp_path):
    out = tmp_path / "s.json"
    assert bench_small_calls.main(["--side", "60", "--sources", "3", "--repeat", "1",
                                   "--json-out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert all(2 <= size < bench_small_calls.SMALL for size in data["graph"]["source_components"])
    assert [(c["condition"], c["algorithm"]) for c in data["cells"]] == [
        ("quiet", "bfs"), ("quiet", "sssp"), ("loaded", "bfs"), ("loaded", "sssp")]
    assert all(c["wrong"] == [] and len(c["seraph"]) == len(c["scipy"]) == 3
               for c in data["cells"])


def test_a_graph_without_small_components_is_refused(capsys):
    with pytest.raises(SystemExit) as stop:
        bench_small_calls.main(["--side", "40", "--remove", "0.0001"])
    assert stop.value.code == 2 and "remove more edges" in capsys.readouterr().err
