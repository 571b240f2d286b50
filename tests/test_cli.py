"""The `seraph` command line end to end: generate, preprocess, info, run, demo, errors.

``run`` and ``demo`` go through every backend (the ``device`` fixture of conftest.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import seraph
from seraph.api import cuda_status
from seraph.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def rmat_store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "rmat.zarr"
    assert main(["generate", "rmat", "--scale", "9", "--edge-factor", "8", "--weighted",
                 "--symmetrize", "--page-edges", "512", "-o", str(path), "-q"]) == 0
    return path


def test_info_text_and_json(rmat_store, capsys):
    assert main(["info", str(rmat_store)]) == 0
    text = capsys.readouterr().out
    assert "vertices     512" in text and "symmetric, weighted" in text
    assert "seraph generate rmat" in text  # provenance keeps the command
    assert main(["info", str(rmat_store), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    g = seraph.open_graph(rmat_store)
    assert info["num_edges"] == g.num_edges and info["num_pages"] == g.num_pages
    assert info["in_degree"]["max"] == int(g.in_degrees().max())
    assert info["bytes_on_disk"]["csc/indices"] >= 4 * g.num_edges


@pytest.mark.parametrize("algorithm", ["bfs", "cc", "sssp"])
def test_run_validates_and_writes_outputs(rmat_store, tmp_path, capsys, algorithm, device):
    out = tmp_path / "result.npy"
    trace = tmp_path / "trace.json"
    hub = int(np.argmax(seraph.open_graph(rmat_store).out_degrees()))
    # 32 KiB holds the vertex state (the push frontier's lists included) and three of the
    # eleven 4 KiB page slots.
    code = main(["run", algorithm, str(rmat_store), "--source", str(hub), "--device", device,
                 "--gpu-memory", "32KiB", "--push-alpha", "0", "--validate", "--json",
                 "--output", str(out), "--trace", str(trace)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["validation"] == "ok" and report["stats"]["device"] == device
    assert report["stats"]["pages_transferred"] > 0 and not report["stats"]["resident"]
    assert len(np.load(out)) == 512
    events = json.loads(trace.read_text())["events"]
    assert {e["kind"] for e in events} >= {"copy", "compute"}


def test_run_npz_output_and_predecessors(rmat_store, tmp_path, capsys, device):
    out = tmp_path / "r.npz"
    assert main(["run", "bfs", str(rmat_store), "--source", "3", "--device", device,
                 "--predecessors", "--output", str(out), "-q"]) == 0
    data = np.load(out)
    assert set(data.files) == {"vertex_id", "value", "predecessors"}
    assert data["predecessors"][3] == -1


def test_run_config_file(rmat_store, tmp_path, capsys, device):
    cfg = tmp_path / "run.toml"
    cfg.write_text('schedule = "reentry"\npredictor = "none"\nsource = 5\n'
                   f'device = "{device}"\ndevice_memory = "64KiB"\n')
    assert main(["run", "sssp", str(rmat_store), "--config", str(cfg), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"] == 5
    assert report["stats"]["schedule"] == "reentry"
    assert report["stats"]["predictor"] == "none" and report["stats"]["device"] == device
    cfg.write_text('schedul = "reentry"\n')
    assert main(["run", "sssp", str(rmat_store), "--config", str(cfg)]) == 2
    assert "unknown key(s) schedul" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--source", "100000"], "out of range"),
    (["--gpu-memory", "1KiB"], "the minimum is"),
])
def test_run_errors(rmat_store, capsys, args, message, device):
    assert main(["run", "bfs", str(rmat_store), "--device", device, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seraph: error:") and message in err


@pytest.mark.skipif(cuda_status()[0], reason="a usable GPU is present")
@pytest.mark.parametrize("command", ["run", "demo"])
def test_device_cuda_without_a_gpu_is_an_error(rmat_store, capsys, command):
    args = ["run", "bfs", str(rmat_store)] if command == "run" else ["demo", "--scale", "4"]
    assert main([*args, "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seraph: error:") and "no usable GPU" in err


def test_algorithm_preconditions(tmp_path, capsys, device):
    edges = tmp_path / "g.el"
    edges.write_text("0 1\n1 2\n")
    store = tmp_path / "g.zarr"
    assert main(["preprocess", str(edges), "-o", str(store), "-q"]) == 0
    assert main(["run", "sssp", str(store), "--device", device]) == 2
    assert "use bfs" in capsys.readouterr().err
    assert main(["run", "cc", str(store), "--device", device]) == 2
    assert "--symmetrize" in capsys.readouterr().err


def test_preprocess_bad_line_and_existing_output(tmp_path, capsys):
    edges = tmp_path / "bad.el"
    edges.write_text("# comment\n0 1\n1 x\n")
    store = tmp_path / "g.zarr"
    assert main(["preprocess", str(edges), "-o", str(store)]) == 2
    err = capsys.readouterr().err
    assert f"{edges}:3" in err
    assert not store.exists() and not list(tmp_path.glob("*.tmp-*"))
    edges.write_text("0 1\n")
    assert main(["preprocess", str(edges), "-o", str(store), "-q"]) == 0
    assert main(["preprocess", str(edges), "-o", str(store)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["preprocess", str(edges), "-o", str(store), "--force", "-q"]) == 0


def test_demo_runs_and_checks(capsys, monkeypatch, tmp_path, device):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the demo's store goes here
    assert main(["demo", "--scale", "8", "--page-edges", "256", "--device", device]) == 0
    out, err = capsys.readouterr()
    assert f"Seraph demo on the {device} backend" in out
    assert "first runs, untimed below" in err  # so compiling is not in the table's times
    assert not list(tmp_path.iterdir())  # and is removed
    assert re.search(r"^BFS .* ok\s*$", out, re.MULTILINE)
    assert re.search(r"^SSSP .* ok\s*$", out, re.MULTILINE)


def test_console_script_is_installed():
    done = subprocess.run([sys.executable, "-m", "seraph.cli", "--help"], capture_output=True,
                          text=True, check=True)
    assert "preprocess" in done.stdout and "demo" in done.stdout


def test_readme_opens_with_demo_and_ci_runs_its_test_command():
    blocks = re.findall(r"```bash\n(.*?)\n", (ROOT / "README.md").read_text())
    assert blocks[0].endswith("seraph demo")
    assert "pytest" in blocks[1]
    extracted = subprocess.run(
        ["bash", "-c", "awk '/^```bash/ { n++; if (getline line > 0 && n == 2) "
         "{ print line; exit } }' README.md"], cwd=ROOT, capture_output=True, text=True)
    assert extracted.stdout.strip() == blocks[1]
    assert "awk" in (ROOT / ".ci" / "run").read_text()
