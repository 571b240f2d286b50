"""scripts/bench_matrix.py on the CPU at tiny sizes: a row per graph and algorithm with
the median and the maximum, every answer checked equal to scipy's, the JSON's fields."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_matrix  # noqa: E402

GRAPHS = ("RMAT-8 ef16", "uniform-8 ef16", "grid 16x16", "grid 16x16, 10% removed, shuffled")


def test_the_matrix_on_the_cpu(tmp_path, capsys):
    out_json, out_md = tmp_path / "m.json", tmp_path / "m.md"
    rc = bench_matrix.main(["--device", "cpu", "--rmat-scale", "8", "--uniform-scale", "8",
                            "--grid-side", "16", "--sources", "2", "--check", "scipy",
                            "--page-edges", "256",
                            "--json-out", str(out_json), "--md-out", str(out_md)])
    assert rc == 0
    data = json.loads(out_json.read_text())
    assert [g["name"] for g in data["graphs"]] == list(GRAPHS)
    cells = {(c["graph"], c["algorithm"]): c for c in data["cells"]}
    assert set(cells) == {(g, a) for g in GRAPHS for a in ("bfs", "cc", "sssp")}
    for (_graph, alg), cell in cells.items():
        assert cell["skipped"] is None and cell["check"] == "equal"
        assert cell["random"]["n"] == 2
        assert 0 < cell["random"]["median"] <= cell["random"]["max"]
        assert ("hub" in cell) == (alg != "cc")
        assert cell["verdict"] == "not measured"  # CPU, not the sizes
        assert cell["budget"] > 0 and cell["first_call"] > 0
        for run in cell["random"]["runs"]:
            assert {"call_time", "pcie_bytes", "bytes_h2d", "peak_device_memory",
                    "edges_over_m"} <= set(run)
        # Pages of 256 edges: a quarter budget holds some of them, so pages move.
        assert not any(r["resident"] for r in cell["random"]["runs"])
        if alg == "cc":  # union-find counts neither its in-place reads nor its updates
            assert cell["random"]["pcie_bytes_median"] is None
            continue
        assert cell["random"]["pcie_bytes_median"] > 0
        assert cell["random"]["edges_over_m_median"] > 0
        for run in cell["random"]["runs"]:
            # Copied pages, or none where every round pushed (SSSP on the CPU may).
            assert run["pcie_bytes"] >= run["bytes_h2d"] >= 0 and run["pcie_bytes"] > 0
        if alg != "cc":
            assert len({r["source"] for r in cell["random"]["runs"]}) == 2
    for key in ("machine", "command", "device", "reference", "check", "skipped"):
        assert key in data
    assert data["machine"]["date"] and "git" in data["machine"]
    assert data["reference"]["targets"]["grid cc"] == [0.1, 0.02]
    md = out_md.read_text()
    table = [line for line in md.splitlines() if line.startswith("| ")]
    for graph in GRAPHS:
        for alg in ("bfs", "cc", "sssp"):
            assert any(line.startswith(f"| {graph} | {alg} |") for line in table)
    assert "published-code measurements on the same graphs" in md
    assert "Checking the answers (scipy) took" in md


def test_a_slow_cell_keeps_the_sources_it_had(tmp_path, capsys):
    out_json = tmp_path / "m.json"
    bench_matrix.main(["--device", "cpu", "--rmat-scale", "8", "--graphs", "rmat",
                       "--algorithms", "bfs", "--sources", "3", "--cell-seconds", "0",
                       "--check", "none", "--json-out", str(out_json), "--md-out", ""])
    (cell,) = json.loads(out_json.read_text())["cells"]
    assert cell["random"]["n"] == 1 and cell["sources_requested"] == 3
    assert "| RMAT-8 ef16 | bfs | 1 of 3 random" in capsys.readouterr().out


def test_the_total_limit_skips_and_says_so(tmp_path):
    out_json = tmp_path / "m.json"
    bench_matrix.main(["--device", "cpu", "--rmat-scale", "8", "--graphs", "rmat",
                       "--grid-side", "16", "--total-limit", "0.001", "--reserve", "1",
                       "--json-out", str(out_json), "--md-out", ""])
    data = json.loads(out_json.read_text())
    assert data["cells"] == [] and data["skipped"] == [
        "RMAT-8 ef16: the total limit was reached before it"]


def test_the_matrix_on_renumbered_graphs(tmp_path):
    """--order degree: sources and the hub are input ids, every answer still scipy's."""
    out_json = tmp_path / "m.json"
    assert bench_matrix.main(["--device", "cpu", "--rmat-scale", "8", "--uniform-scale", "8",
                              "--grid-side", "16", "--sources", "2", "--check", "scipy",
                              "--page-edges", "256", "--order", "degree", "--graphs", "rmat",
                              "road", "--json-out", str(out_json), "--md-out", ""]) == 0
    data = json.loads(out_json.read_text())
    assert [g["name"] for g in data["graphs"]] == [
        "RMAT-8 ef16, --order degree", "grid 16x16, 10% removed, shuffled, --order degree"]
    assert all(c["check"] == "equal" for c in data["cells"])
