"""scripts/bench_matrix.py on the CPU at tiny sizes: a row per graph and algorithm with
the median and the maximum, every call's answer checked by the verifiers, the JSON's
fields; a wrong answer fails the cell and the script."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_matrix  # noqa: E402

GRAPHS = ("RMAT-8 ef16", "uniform-8 ef16", "grid 16x16", "grid 16x16, 10% removed, shuffled")


def test_the_matrix_on_the_cpu(tmp_path, capsys):
    out_json, out_md = tmp_path / "m.json", tmp_path / "m.md"
    rc = bench_matrix.main(["--device", "cpu", "--rmat-scale", "8", "--uniform-scale", "8",
                            "--grid-side", "16", "--sources", "2", "--page-edges", "256",
                            "--json-out", str(out_json), "--md-out", str(out_md)])
    assert rc == 0
    data = json.loads(out_json.read_text())
    assert [g["name"] for g in data["graphs"]] == list(GRAPHS)
    cells = {(c["graph"], c["algorithm"]): c for c in data["cells"]}
    assert set(cells) == {(g, a) for g in GRAPHS for a in ("bfs", "cc", "sssp")}
    for (_graph, alg), cell in cells.items():
        assert cell["skipped"] is None and cell["checks"]["ok"]
        calls = 1 + 2 + (alg != "cc")  # the first call, the random sources, the hub
        assert cell["checks"]["line"] == f"checked {calls} of {calls}"
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
    for key in ("machine", "command", "device", "reference", "failed", "skipped"):
        assert key in data
    assert data["machine"]["date"] and "git" in data["machine"]
    assert data["reference"]["targets"]["grid cc"] == [0.1, 0.02]
    md = out_md.read_text()
    table = [line for line in md.splitlines() if line.startswith("| ")]
    for graph in GRAPHS:
        for alg in ("bfs", "cc", "sssp"):
            assert any(line.startswith(f"| {graph} | {alg} |") for line in table)
    assert "published-code measurements on the same graphs" in md
    assert "Checking the answers (outside the timed calls) took" in md
    assert "| checked 4 of 4 |" in md


def test_a_slow_cell_keeps_the_sources_it_had(tmp_path, capsys):
    out_json = tmp_path / "m.json"
    bench_matrix.main(["--device", "cpu", "--rmat-scale", "8", "--graphs", "rmat",
                       "--algorithms", "bfs", "--sources", "3", "--cell-seconds", "0",
                       "--json-out", str(out_json), "--md-out", ""])
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
    """--order degree: sources and the hub are input ids, every answer still right."""
    out_json = tmp_path / "m.json"
    assert bench_matrix.main(["--device", "cpu", "--rmat-scale", "8", "--uniform-scale", "8",
                              "--grid-side", "16", "--sources", "2", "--page-edges", "256",
                              "--order", "degree", "--graphs", "rmat", "road",
                              "--json-out", str(out_json), "--md-out", ""]) == 0
    data = json.loads(out_json.read_text())
    assert [g["name"] for g in data["graphs"]] == [
        "RMAT-8 ef16, --order degree", "grid 16x16, 10% removed, shuffled, --order degree"]
    assert all(c["checks"]["ok"] for c in data["cells"])


def test_a_wrong_answer_fails_its_cell_and_the_script(tmp_path, monkeypatch, capsys):
    """One BFS call's answer off by one at a reached vertex: the verifier rejects it, the
    cell says FAILED and which call, and the script exits 1."""
    import seraph

    calls = []

    def off_by_one(graph, algorithm, source=None, **options):
        result = run(graph, algorithm, source, **options)
        calls.append(algorithm)
        if len(calls) == 2:  # the first random source's call
            result.levels[np.flatnonzero(result.levels > 0)[0]] += 1
        return result

    run = seraph.run
    monkeypatch.setattr(seraph, "run", off_by_one)
    out_json = tmp_path / "m.json"
    rc = bench_matrix.main(["--device", "cpu", "--rmat-scale", "8", "--graphs", "rmat",
                            "--algorithms", "bfs", "--sources", "2", "--json-out",
                            str(out_json), "--md-out", ""])
    assert rc == 1
    (cell,) = json.loads(out_json.read_text())["cells"]
    assert cell["verdict"] == "FAILED" and not cell["checks"]["ok"]
    assert cell["checks"]["line"] == "checked 4 of 4, 1 WRONG"
    assert "1 of 256 vertices wrong" in cell["checks"]["problems"][0]
    assert "bench_matrix: RMAT-8 ef16 bfs: bfs from" in capsys.readouterr().err


def renamed_sssp():
    """SSSP registered under a name no script knows: what a new algorithm looks like to
    the scripts, which must ask the registry what it needs."""
    from dataclasses import replace

    from seraph.algorithms import ALGORITHMS

    entry = ALGORITHMS["sssp"]
    return replace(entry, spec=replace(entry.spec, name="renamed"))


def test_a_newly_registered_algorithm_runs_in_the_matrix(tmp_path, monkeypatch):
    """The registry says it takes a source (so it gets random sources and the hub) and
    reads weights (so an in-place read costs 8 bytes an edge)."""
    from types import SimpleNamespace

    from seraph.algorithms import ALGORITHMS

    monkeypatch.setitem(ALGORITHMS, "renamed", renamed_sssp())
    stats = SimpleNamespace(resident=False, bytes_h2d=10, edges_pushed=3,
                            edges_pulled_bottom_up=1)
    assert bench_matrix.pcie_bytes(stats, "renamed") == 10 + 4 * 8
    assert bench_matrix.pcie_bytes(stats, "bfs") == 10 + 4 * 4
    out_json = tmp_path / "m.json"
    assert bench_matrix.main(["--device", "cpu", "--rmat-scale", "8", "--graphs", "rmat",
                              "--algorithms", "renamed", "--sources", "2", "--json-out",
                              str(out_json), "--md-out", ""]) == 0
    (cell,) = json.loads(out_json.read_text())["cells"]
    assert cell["algorithm"] == "renamed" and cell["checks"]["line"] == "checked 4 of 4"
    assert "hub" in cell and len({r["source"] for r in cell["random"]["runs"]}) == 2
