"""The `seraph` command line end to end: generate, preprocess, info, run, demo, errors.

``run`` and ``demo`` go through every backend (the ``device`` fixture of conftest.py)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import seraph
from seraph import cli, progress
from seraph.algorithms import ALGORITHMS
from seraph.api import cuda_status
from seraph.cli import main
from seraph.sources import random_sources

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


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_run_validates_and_writes_outputs(rmat_store, tmp_path, capsys, algorithm, device,
                                          three_slots):
    out = tmp_path / "result.npy"
    trace = tmp_path / "trace.json"
    hub = int(np.argmax(seraph.open_graph(rmat_store).out_degrees()))
    # CC by label propagation, whose rounds move pages (union-find reads the host's CSC).
    source = (["--source", str(hub)] if ALGORITHMS[algorithm].needs_source
              else ["--components", "propagation"] if algorithm == "cc" else [])
    # Three of the eleven page slots.
    code = main(["run", algorithm, str(rmat_store), *source, "--device", device,
                 "--gpu-memory", three_slots(rmat_store, algorithm), "--push-alpha", "0",
                 "--validate", "--json", "--output", str(out), "--trace", str(trace)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["validation"] == "ok" and report["stats"]["device"] == device
    assert report["stats"]["pages_transferred"] > 0 and not report["stats"]["resident"]
    assert len(np.load(out)) == 512
    events = json.loads(trace.read_text())["events"]
    assert {e["kind"] for e in events} >= {"copy", "compute"}


def test_validate_reports_a_wrong_answer_and_exits_1(rmat_store, capsys, monkeypatch):
    """--validate runs the algorithm's verifier: one level off by one, or one predecessor
    missing, is reported (how many vertices, the first) and the run exits 1."""
    import seraph.algorithms

    run = seraph.algorithms.run
    spoil = {}

    def spoiled(graph, algorithm, source=None, **options):
        result = run(graph, algorithm, source, **options)
        v = int(np.flatnonzero(result.levels > 0)[0])
        if spoil["what"] == "level":
            result.levels[v] += 1
        else:
            result.predecessors[v] = -1
        spoil["vertex"] = int(graph.vertex_ids[v])
        return result

    monkeypatch.setattr(seraph.algorithms, "run", spoiled)
    spoil["what"] = "level"  # its out-neighbours may lose their tight in-edge too
    assert main(["run", "bfs", str(rmat_store), "--source", "1", "--device", "cpu",
                 "--validate"]) == 1
    line = capsys.readouterr().out.splitlines()[-1]
    assert re.match(r"  validation: \d+ of 512 vertices wrong; first: vertex \d+ has \d+ but "
                    r"in-neighbour \d+ has \d+$", line), line
    spoil["what"] = "predecessor"
    assert main(["run", "bfs", str(rmat_store), "--source", "1", "--device", "cpu",
                 "--validate", "--predecessors"]) == 1
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith(f"  validation: 1 of 512 vertices wrong; first: vertex "
                           f"{spoil['vertex']} has ")
    assert line.endswith("but names no predecessor")
    assert main(["run", "bfs", str(rmat_store), "--sources", "1,5", "--device", "cpu",
                 "--validate", "--predecessors"]) == 1
    assert "names no predecessor" in capsys.readouterr().out


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
                   f'device = "{device}"\ndevice_memory = "1MiB"\n')
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


# -- failing before the work ---------------------------------------------------------------
@pytest.fixture
def no_work(monkeypatch):
    """Makes opening a store or running an algorithm fail the test: what is checked must be
    refused before either."""
    def forbidden(*_args, **_kw):
        raise AssertionError("the run started")

    monkeypatch.setattr(seraph, "open_graph", forbidden)
    monkeypatch.setattr(cli, "run_algorithm", forbidden)


def _one_error_line(err: str) -> str:
    assert err.startswith("seraph: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(("args", "message"), [
    (["--output", "{tmp}/nodir/r.npy"], "the directory {tmp}/nodir does not exist"),
    (["--trace", "{tmp}/nodir/t.json"], "the directory {tmp}/nodir does not exist"),
    (["--output", "{tmp}/r.txt"], "use a .npy, .npz or .parquet file name"),
    (["--output", "{tmp}/r.parquet"], "needs pyarrow"),
    (["--trace", "{tmp}/t.txt"], "the trace is JSON; use a .json file name"),
    (["--sources", "1,2", "--output", "{tmp}/r.npy"], "an .npz file or a folder"),
    (["--sources", "1,2", "--output", "{tmp}/nodir/r.npz"], "{tmp}/nodir does not exist"),
    (["--sources", "1,2", "--trace", "{tmp}/t.json"], "--trace records one run"),
    (["--sources", "1,x"], "--sources: cannot read '1,x'"),
    (["--sources", "1,2,1"], "a source is listed twice"),
    (["--predictor", "strong", "--diagram", "seraph"], "a diagram describes the weak predictor"),
    (["--predictor", "none", "--diagram", "seraph"], "a diagram describes the weak predictor"),
    (["--push-alpha", "nan"], "push_alpha must be a finite number >= 0, got nan"),
    (["--push-alpha", "inf"], "push_alpha must be a finite number >= 0, got inf"),
    (["--push-alpha", "-1"], "push_alpha must be a finite number >= 0, got -1.0"),
    (["--gpu-memory", "4XB"], "--gpu-memory: cannot read '4XB'"),
])
def test_run_refuses_bad_outputs_and_options_before_it_starts(tmp_path, capsys, monkeypatch,
                                                              no_work, args, message):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as where pyarrow is not installed
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    args = [a.format(tmp=tmp_path) for a in args]
    assert main(["run", "bfs", str(tmp_path / "g.zarr"), *args]) == 2
    assert message.format(tmp=tmp_path) in _one_error_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_run_refuses_a_read_only_output_folder(tmp_path, capsys, no_work):
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    assert main(["run", "bfs", "g.zarr", "--output", str(folder / "r.npy")]) == 2
    assert "is not writable" in _one_error_line(capsys.readouterr().err)


def test_preprocess_names_the_size_flag_it_cannot_read(tmp_path, capsys):
    edges = tmp_path / "g.el"
    edges.write_text("0 1\n")
    assert main(["preprocess", str(edges), "-o", str(tmp_path / "g.zarr"),
                 "--memory", "4XB"]) == 2
    assert "--memory: cannot read '4XB'" in _one_error_line(capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.el"]


def test_plot_checks_its_picture_name_before_reading_the_trace(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    trace = str(tmp_path / "missing.json")  # never read: the name is refused first
    assert main(["plot", trace, "-o", str(tmp_path / "nodir" / "t.png")]) == 2
    assert "does not exist" in _one_error_line(capsys.readouterr().err)
    assert main(["plot", trace, "-o", str(tmp_path / "t.doc")]) == 2
    assert "use a picture file name ending in" in _one_error_line(capsys.readouterr().err)


# -- many sources ----------------------------------------------------------------------------
def _rows(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.splitlines()[2:]}


def test_many_sources_run_on_one_opened_graph(rmat_store, tmp_path, capsys, monkeypatch,
                                              device):
    opened = []
    open_graph = seraph.open_graph
    monkeypatch.setattr(seraph, "open_graph", lambda p: opened.append(p) or open_graph(p))
    out = tmp_path / "levels.npz"
    assert main(["run", "bfs", str(rmat_store), "--sources", "1,5,9", "--device", device,
                 "--validate", "--predecessors", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert len(opened) == 1
    rows = _rows(text)
    assert list(rows) == ["1", "5", "9", "median", "max"]
    g = seraph.open_graph(rmat_store)
    data = np.load(out)
    assert set(data.files) == {"vertex_id", "source_1", "source_5", "source_9",
                               "predecessors_1", "predecessors_5", "predecessors_9"}
    for s in (1, 5, 9):
        levels = seraph.bfs(g, s, device=device).levels
        np.testing.assert_array_equal(data[f"source_{s}"], levels)
        assert rows[str(s)][2] == f"{int((levels >= 0).sum()):,}" and rows[str(s)][-1] == "ok"
    times = [float(rows[str(s)][1]) for s in (1, 5, 9)]
    assert float(rows["max"][1]) == max(times)
    assert float(rows["median"][1]) == sorted(times)[1]
    assert not [p for p in tmp_path.iterdir() if p.name != "levels.npz"]  # no temporary


def test_random_sources_json_and_folder_output(rmat_store, tmp_path, capsys, device):
    folder = tmp_path / "dists"
    args = ["run", "sssp", str(rmat_store), "--random-sources", "3", "--seed", "7",
            "--device", device, "--json", "--output", str(folder)]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    g = seraph.open_graph(rmat_store)
    sources = random_sources(g, 3, seed=7)
    assert [r["source"] for r in report["runs"]] == sources
    assert report["summary"]["sources"] == 3
    assert report["summary"]["max_time"] == max(r["time"] for r in report["runs"])
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"source_{s}.npy" for s in sources)
    for r in report["runs"]:
        dist = np.load(folder / f"source_{r['source']}.npy")
        np.testing.assert_array_equal(dist, seraph.sssp(g, r["source"], device=device).distances)
        assert r["reached"] == int(np.isfinite(dist).sum()) and r["stats"]["rounds"] == r["rounds"]
    # The same run again would overwrite the results: refused, and they stay as they were.
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert main(args) == 2
    assert "is already there" in _one_error_line(capsys.readouterr().err)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_a_failing_many_source_run_removes_what_it_wrote(rmat_store, tmp_path, capsys,
                                                         monkeypatch, device):
    run = cli.run_algorithm
    calls = []

    def second_fails(*args, **kw):
        calls.append(args)
        if len(calls) == 2:
            raise seraph.DeviceError("out of device memory")
        return run(*args, **kw)

    monkeypatch.setattr(cli, "run_algorithm", second_fails)
    for output in ("out", "out.npz"):
        calls.clear()
        assert main(["run", "bfs", str(rmat_store), "--sources", "1,2", "--device", device,
                     "--output", str(tmp_path / output)]) == 2
        assert "out of device memory" in capsys.readouterr().err
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["--source", "1"], ["--sources", "1,2"],
                                  ["--random-sources", "2"]])
def test_cc_takes_no_source(rmat_store, capsys, no_work, args):
    assert main(["run", "cc", str(rmat_store), *args]) == 2
    assert "cc takes no source" in _one_error_line(capsys.readouterr().err)


def test_cc_json_has_no_source(rmat_store, capsys, device):
    assert main(["run", "cc", str(rmat_store), "--device", device, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "source" not in report and report["summary"].endswith("components")


def test_source_options_exclude_each_other(rmat_store, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "bfs", str(rmat_store), "--source", "1", "--sources", "2,3"])
    assert exit_.value.code == 2 and "not allowed with" in capsys.readouterr().err


# -- long runs talk ----------------------------------------------------------------------------
def test_verbose_run_prints_a_line_per_round(rmat_store, capsys, device, three_slots):
    assert main(["run", "bfs", str(rmat_store), "--source", "1", "--device", device,
                 "--gpu-memory", three_slots(rmat_store), "--json", "-v"]) == 0
    out, err = capsys.readouterr()
    stats = json.loads(out)["stats"]
    lines = re.findall(r"^rounds? (?:(\d+)-)?(\d+) ((?:dense|push|bottom-up)\+?)+"
                       r"(?:  frontier [\d,]+)?  pages moved ([\d,]+)  [\d.]+ s$", err,
                       re.MULTILINE)
    # Every round on a line, a push phase's too; rounds that end close together share one.
    covered = [r for first, last, _, _ in lines for r in range(int(first or last), int(last) + 1)]
    assert covered == list(range(1, stats["rounds"] + 1))
    assert int(lines[-1][3].replace(",", "")) == stats["pages_transferred"]


@pytest.mark.parametrize(("tty", "quiet", "shown"), [(False, False, False), (True, False, True),
                                                     (True, True, False)])
def test_live_line_only_on_a_terminal(rmat_store, capsys, monkeypatch, device, tty, quiet,
                                      shown):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    # Every run counts as long, and every round redraws.
    monkeypatch.setattr(progress, "LIVE_AFTER_S", 0.0)
    monkeypatch.setattr(progress, "LIVE_EVERY_S", 0.0)
    assert main(["run", "bfs", str(rmat_store), "--source", "1", "--device", device,
                 *(["-q"] if quiet else [])]) == 0
    err = capsys.readouterr().err
    assert bool(re.search(r"\r\033\[Kround \d+ (dense|push|bottom-up)", err)) == shown
    if shown:
        assert err.endswith("\r\033[K")  # and the line is gone when the run ends
    else:
        assert "round" not in err


def test_round_reports_cost_nothing_when_nobody_watches():
    assert progress._listener is None  # what the engine's round_done checks, and no more


# -- the CLI explains itself ---------------------------------------------------------------
def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"seraph-graph {seraph.__version__}\n"
    assert seraph.__version__ == "0.1.0"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


@pytest.mark.parametrize("command", ["preprocess", "generate", "info", "run", "demo", "plot"])
def test_help_states_defaults_and_ends_with_examples(command, capsys):
    assert command in _subparsers()
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "\nexamples:\n" in text
    examples = text.rstrip("\n").split("\nexamples:\n")[-1].splitlines()
    assert 2 <= len(examples) <= 3 and all(e.startswith("  seraph ") for e in examples)
    formatter = _subparsers()[command].formatter_class(prog="seraph")
    for action in _subparsers()[command]._actions:
        if not action.option_strings or action.required or action.nargs == 0:
            continue  # positionals, -o of a store (required), flags, --help
        assert "(default" in formatter._get_help_string(action), action.option_strings


def test_no_gpu_notice_is_one_line(rmat_store, capsys, monkeypatch):
    monkeypatch.setattr(seraph.api, "cuda_status", lambda: (False, "why"))
    assert main(["run", "bfs", str(rmat_store), "--source", "1"]) == 0
    assert capsys.readouterr().err == "note: no usable GPU (why); running on the CPU backend\n"
    assert main(["run", "bfs", str(rmat_store), "--source", "1", "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_info_into_a_closed_pipe_exits_quietly(rmat_store):
    command = [sys.executable, "-m", "seraph.cli", "info", str(rmat_store)]
    reader = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader.stdout.close()  # before seraph writes: its first write meets a closed pipe
    assert reader.wait(timeout=120) == 141
    assert reader.stderr.read() == b""
    reader.stderr.close()
    done = subprocess.run(["bash", "-c", 'set -o pipefail; "$@" | head -1', "-", *command],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("store ") and done.stderr == ""


def test_preprocess_reading_bar_counts_the_file_bytes(tmp_path, monkeypatch):
    bars = {}

    class Bar:
        def __init__(self, total=None, desc="", unit="it", **_kw):
            self.total, self.unit, self.n = total, unit, 0
            bars[desc] = self

        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False

        def update(self, n):
            self.n += n

    monkeypatch.setattr(progress, "bar", Bar)
    edges = tmp_path / "g.el"
    edges.write_text("".join(f"{i} {i + 1}\n" for i in range(100)))
    assert main(["preprocess", str(edges), "-o", str(tmp_path / "g.zarr"), "-q"]) == 0
    reading = bars["reading"]
    assert (reading.total, reading.unit, reading.n) == (edges.stat().st_size, "B",
                                                        edges.stat().st_size)


@pytest.mark.parametrize("order", ["rcm", "degree"])
def test_a_renumbered_store_answers_by_input_id(tmp_path, capsys, device, order):
    """``--order``: the store's vertices are renumbered, the output still names input
    ids, and --validate checks the answer on the same store."""
    path = tmp_path / "grid.zarr"
    assert main(["generate", "grid", "--rows", "20", "--cols", "30", "--remove", "0.1",
                 "--weighted", "--symmetrize", "--order", order, "--page-edges", "256",
                 "-o", str(path), "-q"]) == 0
    assert seraph.open_graph(path).attrs.vertex_order == order
    out = tmp_path / "levels.npz"
    for algorithm, source in (("bfs", ["--source", "7"]), ("cc", [])):
        assert main(["run", algorithm, str(path), *source, "--device", device, "--validate",
                     "--output", str(out), "-q"]) == 0
        data = np.load(out)
        by_id = dict(zip(data["vertex_id"].tolist(), data["value"].tolist(), strict=True))
        assert sorted(by_id) == list(range(600))
        assert by_id[7] == (0 if algorithm == "bfs" else min(
            v for v, label in by_id.items() if label == by_id[7]))


class Counts:
    """What the lines read of a run's stats."""

    def __init__(self) -> None:
        self.rounds = self.pages_transferred = 0


def test_verbose_lines_follow_a_push_phase_as_it_goes(monkeypatch, capsys):
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)
    log, stats = progress._RoundLog(""), Counts()
    log.working("push", stats)
    progress.LIVE[:2] = 5, 10  # as the push loop publishes its rounds
    log.tick()
    progress.LIVE[:2] = 9, 3
    log.tick()
    log.tick()  # nothing new
    stats.rounds = 12
    log.done("push", stats, 0)
    monkeypatch.setattr(progress, "LOG_EVERY_S", 3600.0)
    for _ in range(2):
        log.working("dense", stats)
        stats.rounds += 1
        log.done("dense", stats, None)
    log.close()
    lines = [line.split("  pages")[0] for line in capsys.readouterr().err.splitlines()]
    assert lines == ["rounds 1-5 push  frontier 10", "rounds 6-9 push  frontier 3",
                     "rounds 10-12 push  frontier 0", "rounds 13-14 dense"]


def test_the_live_line_follows_a_push_phase_as_it_goes(monkeypatch, capsys):
    monkeypatch.setattr(progress, "LIVE_AFTER_S", 0.0)
    monkeypatch.setattr(progress, "LIVE_EVERY_S", 0.0)
    line, stats = progress._LiveLine(""), Counts()
    stats.rounds = 3
    line.working("push", stats)
    progress.LIVE[:2] = 7, 2
    line.tick()
    line.working("union-find", stats)
    line.tick()
    line.close()
    err = capsys.readouterr().err
    assert re.fullmatch(r"\r\033\[Kround 10 push  frontier 2  pages moved 0  [\d.]+ s"
                        r"\r\033\[Kunion-find  pages moved 0  [\d.]+ s\r\033\[K", err), err


def test_threads_run_the_command_and_a_bad_count_is_one_line(rmat_store, capsys):
    assert main(["run", "bfs", str(rmat_store), "--source", "1", "--device", "cpu",
                 "--threads", "1", "--validate"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "  validation: ok"
    assert main(["run", "bfs", str(rmat_store), "--source", "1", "--threads", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["seraph: error: threads must be a whole number of at least 1, got 0"], err
