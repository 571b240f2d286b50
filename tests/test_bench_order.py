"""scripts/bench_order.py on the CPU at tiny sizes: a cell per graph, algorithm and vertex
order, every call's answer checked by the verifiers; a wrong one fails the script."""

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
    assert all(c["checks"]["ok"] and 0 < c["median"] <= c["max"] for c in cells)
    assert {c["checks"]["line"] for c in cells} == {"checked 3 of 3"}  # first call, 2 sources
    assert {c["order"] for c in cells} == {"input", "degree", "rcm"}
    assert "| RMAT-9 | sssp | degree |" in capsys.readouterr().out


def test_a_wrong_answer_fails_the_script(tmp_path, monkeypatch, capsys):
    """Every CC answer of the degree order with two components merged: those cells fail,
    the others pass, and the script exits 1."""
    import seraph

    def merged(graph, algorithm, source=None, **options):
        result = run(graph, algorithm, source, **options)
        if algorithm == "cc" and graph.attrs.vertex_order == "degree":
            result.labels[result.labels == result.labels.max()] = result.labels.min()
        return result

    run = seraph.run
    monkeypatch.setattr(seraph, "run", merged)
    out_json = tmp_path / "o.json"
    assert bench_order.main(["--scale", "8", "--kinds", "road", "--side", "12", "--sources",
                             "1", "--repeat", "1", "--json-out", str(out_json),
                             "--md-out", ""]) == 1
    cells = json.loads(out_json.read_text())["cells"]
    failed = {(c["algorithm"], c["order"]) for c in cells if not c["checks"]["ok"]}
    assert failed == {("cc", "degree")}
    assert "the id of no vertex of its component" in capsys.readouterr().err
