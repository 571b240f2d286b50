"""scripts/bench_multi_gpu.py on CPU workers at a tiny scale: a row per worker count and
algorithm, every answer checked and each worker's figures recorded, the source-parallel
throughput rows; a job past the total limit is stopped and the report still written."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import seraph

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_multi_gpu  # noqa: E402

TINY = ["--device", "cpu", "--graph", "rmat", "--scale", "9", "--page-edges", "256",
        "--sources", "2", "--unsourced-runs", "1"]


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")  # CI's two cores shared out


def test_one_and_three_workers_and_the_throughput_rows(tmp_path, capsys):
    out = tmp_path / "m.json"
    rc = bench_multi_gpu.main([*TINY, "--workers", "1,3", "--throughput-sources", "3",
                               "--workdir", str(tmp_path / "stores"), "--json-out", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["graph"]["name"] == "RMAT-9 ef16" and data["graph"]["num_pages"] > 3
    assert [job["workers"] for job in data["jobs"]] == [1, 3]
    assert len(data["sources"]) == 2 and data["failed"] == [] and data["skipped"] == []
    for job in data["jobs"]:
        assert job["status"] == 0 and not job["stopped"]
        assert [c["algorithm"] for c in job["cells"]] == ["bfs", "cc", "sssp"]
        for cell in job["cells"]:
            calls = 1 + (2 if cell["algorithm"] != "cc" else 1)
            assert cell["checks"]["ok"] and cell["checks"]["line"] == \
                f"checked {calls} of {calls}"
            assert cell["budget"] == data["budgets"][cell["algorithm"]][str(job["workers"])]
            s = cell["random"]
            assert 0 < s["median"] <= s["max"] and s["n"] == calls - 1
            assert len(s["bytes_per_worker_median"]) == job["workers"]
            assert all(len(r["per_worker"]) == job["workers"] for r in s["runs"])
            if job["workers"] > 1:
                assert 0 < s["exchange_share_median"] < 1
    # The pages split over more workers: less of them a worker, so a smaller share each.
    graph = seraph.open_graph(data["graph"]["store"])
    one, three = (bench_multi_gpu.budget(graph, "sssp", w, 0.25, False) for w in (1, 3))
    assert three < one
    rows = data["throughput"]
    assert [(r["algorithm"], r["workers"], r["source_parallel"]) for r in rows] == \
        [("sssp", 1, False), ("sssp", 3, True)]
    for row in rows:
        assert row["checks"]["ok"] and row["checks"]["line"] == "checked 3 of 3"
        assert row["per_second"] > 0 and row["per_second_wall"] > 0
        assert [r.get("worker") for r in row["runs"]] == \
            ([None] * 3 if row["workers"] == 1 else [0, 1, 2])
    printed = capsys.readouterr().out
    assert "| sssp | 3 |" in printed and "| cc | 3 |" in printed
    assert "checked 3 of 3" in printed and "`seraph run ALG --random-sources K" in printed
    # The store stays under --workdir and is reused.
    assert (tmp_path / "stores" / "rmat9-ef16-s1-p256.zarr").is_dir()


def test_the_total_limit_stops_a_job_and_the_report_is_written(tmp_path, capsys):
    out = tmp_path / "m.json"
    # Time for the first job's start, not for its calls: the job stops itself, or is
    # stopped, and the rest is skipped.
    bench_multi_gpu.main([*TINY, "--workers", "1,2", "--throughput-sources", "2",
                          "--total-limit", "4", "--reserve", "2", "--json-out", str(out)])
    data = json.loads(out.read_text())
    assert any("the total limit" in s for s in data["skipped"]), data["skipped"]
    assert "# One query over several GPUs" in capsys.readouterr().out
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("bench-multi-gpu-*/params.json"))


def test_generate_only_needs_a_workdir():
    with pytest.raises(SystemExit):
        bench_multi_gpu.parse_args(["--generate-only"])


def test_a_budget_too_small_fails_its_cell_and_the_script(tmp_path, monkeypatch):
    """Every process meets the engine's refusal alike: the cell says so and fails, the job
    goes on to the next algorithm, and the script exits 1."""
    real = bench_multi_gpu.budget
    monkeypatch.setattr(bench_multi_gpu, "budget", lambda graph, alg, *rest:
                        100 if alg == "bfs" else real(graph, alg, *rest))
    out = tmp_path / "m.json"
    rc = bench_multi_gpu.main([*TINY, "--workers", "2", "--algorithms", "bfs", "cc",
                               "--throughput-sources", "0", "--json-out", str(out)])
    assert rc == 1
    data = json.loads(out.read_text())
    bfs, cc = data["jobs"][0]["cells"]
    assert not bfs["checks"]["ok"] and "too small" in bfs["error"]
    assert cc["checks"]["ok"] and cc["random"]["n"] == 1
    assert any("too small" in f for f in data["failed"])


def test_throughput_only(tmp_path):
    out = tmp_path / "m.json"
    assert bench_multi_gpu.main([*TINY, "--workers", "1,2", "--throughput-only",
                                 "--throughput-sources", "2", "--throughput-algorithms", "bfs",
                                 "--json-out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["jobs"] == [] and [r["workers"] for r in data["throughput"]] == [1, 2]
