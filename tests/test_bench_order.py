"""scripts/bench_order.py on the CPU at tiny sizes: a cell per graph, algorithm and vertex
order, every answer equal to the input order's by input id."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_order  # noqa: E402


def test_the_orders_side_by_side_on_the_cpu(tmp_path, capsys):
    out_json = tmp_path / "o.json"
    assert bench_order.main(["--scale", "9", "--side", "24", "--sources", "2",
                             "--repeat", "1", "--json-out", str(out_json),
                             "--md-out", ""]) == 0
    cells = json.loads(out_json.read_text())["cells"]
    assert len(cells) == 3 * 3 * 3  # graphs, algorithms, orders
    assert all(c["equal"] and 0 < c["median"] <= c["max"] for c in cells)
    assert {c["order"] for c in cells} == {"input", "degree", "rcm"}
    assert "| RMAT-9 | sssp | degree |" in capsys.readouterr().out
