"""`seraph plot`: real traces from `seraph run --trace` turned into lanes and a picture."""

from __future__ import annotations

import shutil
import struct
import sys
from pathlib import Path

import pytest

from seraph.cli import main
from seraph.plot import figure, load_trace, timeline
from seraph.stats import SPARSE_KINDS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def traces(tmp_path_factory, three_slots) -> dict[str, Path]:
    """Two traces of a small paged run: SSSP with the weak predictor and no push engine
    (copies, sweeps and state counts), and BFS with the defaults (strong predictor)."""
    tmp = tmp_path_factory.mktemp("plot")
    store = tmp / "rmat.zarr"
    assert main(["generate", "rmat", "--scale", "9", "--edge-factor", "8", "--weighted",
                 "--symmetrize", "--page-edges", "512", "-o", str(store), "-q"]) == 0
    # Three of the eleven page slots, so pages move.
    common = ["--device", "cpu", "--gpu-memory", three_slots(store), "-q"]
    out = {"weak": tmp / "weak.json", "strong": tmp / "strong.json"}
    assert main(["run", "sssp", str(store), *common, "--predictor", "weak",
                 "--push-alpha", "0", "--trace", str(out["weak"])]) == 0
    assert main(["run", "bfs", str(store), *common, "--trace", str(out["strong"])]) == 0
    return out


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("name", ["weak", "strong"])
def test_every_event_is_on_its_lanes(traces, name):
    trace = load_trace(traces[name])
    tl = timeline(trace)
    copies = [e for e in trace["events"] if e["kind"] == "copy"]
    computes = [e for e in trace["events"] if e["kind"] == "compute"]
    assert copies and computes  # the budget made pages move
    for e in copies:
        assert (e["start"], e["end"]) in tl.copies[e["page"]]
    for e in computes:
        for page in e["pages"]:
            assert (e["start"], e["end"]) in tl.computes[page]
    # ...and nothing else is: the lanes hold exactly the events' intervals.
    assert sum(map(len, tl.copies.values())) == len(copies)
    assert sum(map(len, tl.computes.values())) == sum(len(e["pages"]) for e in computes)
    assert len(tl.sparse_spans) == sum(e["kind"] in SPARSE_KINDS for e in trace["events"])
    assert set(tl.pages) <= set(range(trace["stats"]["num_pages"]))
    assert tl.end == max(e["end"] for e in trace["events"])
    assert tl.predictor_states == trace["stats"]["predictor_states"]
    assert bool(tl.predictor_states) == (name == "weak")
    assert tl.round_log == trace["stats"]["round_log"] and tl.round_log


def test_plot_writes_a_png(traces, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "timeline.png"
    assert main(["plot", str(traces["weak"]), "-o", str(png)]) == 0
    assert f"wrote {png}" in capsys.readouterr().err
    width, height = _png_size(png)
    assert width >= 800 and height >= 500
    assert 10_000 < png.stat().st_size < 5_000_000


def test_default_output_is_beside_the_trace(traces, tmp_path):
    pytest.importorskip("matplotlib")
    trace = shutil.copy(traces["strong"], tmp_path / "t.json")
    assert main(["plot", str(trace), "-q"]) == 0
    _png_size(tmp_path / "t.png")


def test_panels_and_title(traces):
    pytest.importorskip("matplotlib")
    weak = timeline(load_trace(traces["weak"]))
    fig = figure(weak)
    assert len(fig.axes) == 3  # timeline, work per round and predictor states
    work = fig.axes[1]
    assert work.get_title() == "work per round"
    bars = [p for p in work.patches]  # attempted, then changed, a bar per logged round
    assert len(bars) == 2 * len(weak.round_log)
    assert [b.get_height() for b in bars[:len(weak.round_log)]] == \
        [entry["attempted"] for entry in weak.round_log]
    title = fig.get_suptitle()
    st = weak.stats
    for part in (st["algorithm"], st["device"], st["schedule"], f"{st['wall_time']:.3f} s"):
        assert part in title
    fig = figure(timeline(load_trace(traces["strong"])))
    assert len(fig.axes) == 2  # no predictor states
    assert "weak predictor did not run" in fig.get_suptitle()


def test_sparse_lane_and_unknown_kinds():
    trace = {"stats": {"algorithm": "bfs"}, "events": [
        {"kind": "push", "start": 0.0, "end": 0.5, "rounds": 2, "edges": 10},
        {"kind": "bottom-up", "start": 0.75, "end": 0.8, "vertices": 3, "edges": 9},
        {"kind": "compute", "start": 0.5, "end": 0.75, "pages": [3, 4], "updates": 1},
        {"kind": "from-a-newer-version", "start": 0.0, "end": 1.0},
    ]}
    tl = timeline(trace)
    assert tl.sparse_spans == [(0.0, 0.5), (0.75, 0.8)] and tl.pages == [3, 4]
    assert not tl.copies and tl.end == 0.8
    pytest.importorskip("matplotlib")
    labels = [t.get_text() for t in figure(tl).axes[0].get_yticklabels()]
    assert labels == ["sparse", "3", "4"]


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such trace file"),
    ("{not json", "not a trace: it is not JSON"),
    ('{"stats": {}}', 'no "events" list'),
    ('[1, 2]', 'no "events" list'),
    ('{"events": [{"kind": "copy", "start": 0, "end": 1}]}', "trace event 0 is malformed"),
])
def test_bad_traces(tmp_path, capsys, content, message):
    pytest.importorskip("matplotlib")  # without it, the missing extra is reported first
    trace = tmp_path / "trace.json"
    if content is not None:
        trace.write_text(content)
    assert main(["plot", str(trace), "-o", str(tmp_path / "t.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seraph: error:") and message in err
    assert not (tmp_path / "t.png").exists()


def test_bad_output_name(traces, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["plot", str(traces["strong"]), "-o", str(tmp_path / "t.docx")]) == 2
    assert ".png" in capsys.readouterr().err
    assert main(["plot", str(traces["strong"]), "-o", str(tmp_path / "no" / "t.png")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_missing_matplotlib_names_the_extra(traces, tmp_path, capsys, monkeypatch):
    # A None entry in sys.modules makes the import fail as if matplotlib were absent.
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["plot", str(traces["weak"]), "-o", str(tmp_path / "t.png")]) == 2
    err = capsys.readouterr().err
    assert "needs matplotlib" in err and "pip install 'seraph-graph[plot]'" in err
    assert not (tmp_path / "t.png").exists()

