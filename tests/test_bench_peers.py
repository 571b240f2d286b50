"""scripts/peers.py and scripts/bench_peers.py without a GPU: the peers' file formats read
back equal to the graph, their runs parsed from stand-ins that print what EMOGI and Subway
print and write answers as the patched programs do, a failing or silent peer marked
failed, the CPU path with the peers absent, and bad arguments."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_peers  # noqa: E402
import peers  # noqa: E402

from seraph import Graph  # noqa: E402


@pytest.fixture(scope="module")
def graph():
    """A small weighted symmetric graph with an isolated vertex (7) and a duplicate edge."""
    src = np.array([0, 1, 2, 3, 0, 5, 2, 0])
    dst = np.array([1, 2, 3, 4, 4, 6, 0, 1])
    weight = np.array([3, 1, 255, 7, 2, 9, 4, 3], np.float32)
    return Graph.from_edges(src, dst, weight, num_vertices=8, symmetrize=True, page_edges=4)


def test_emogi_files_read_back_equal_to_the_graph(graph, tmp_path):
    base = peers.write_emogi(graph, tmp_path, weights=True)
    assert base.name == "graph.bel"
    indptr, indices, weights = peers.read_emogi(base)
    expect = graph.csr()
    assert np.array_equal(indptr, expect[0]) and np.array_equal(indices, expect[1])
    assert np.array_equal(weights, expect[2].astype(np.uint32))
    header = np.fromfile(f"{base}.col", np.uint64, 2)
    assert header.tolist() == [graph.num_vertices + 1, 0]  # EMOGI counts the offsets


def test_emogi_files_without_weights(graph, tmp_path):
    base = peers.write_emogi(graph, tmp_path)
    assert not Path(f"{base}.val").exists()
    assert peers.read_emogi(base)[2] is None


@pytest.mark.parametrize("weighted", [False, True])
def test_subway_files_read_back_equal_to_the_graph(graph, tmp_path, weighted):
    path = peers.write_subway(graph, tmp_path, weights=weighted)
    assert path.suffix == (".bwcsr" if weighted else ".bcsr")
    indptr, indices, weights = peers.read_subway(path)
    expect = graph.csr()
    assert np.array_equal(indptr, expect[0]) and np.array_equal(indices, expect[1])
    if weighted:
        assert np.array_equal(weights, expect[2].astype(np.uint32))
    else:
        assert weights is None
    # The header and the n offsets (no final m), then the edges: nothing else.
    per_edge = 8 if weighted else 4
    assert path.stat().st_size == 8 + 4 * graph.num_vertices + per_edge * graph.num_edges


def test_writers_refuse_weights_the_peers_cannot_read(tmp_path):
    g = Graph.from_edges([0, 1], [1, 2], np.array([1.5, 2.0], np.float32), symmetrize=True)
    with pytest.raises(ValueError, match="uint32"):
        peers.write_subway(g, tmp_path, weights=True)
    with pytest.raises(ValueError, match="uint32"):
        peers.write_emogi(g, tmp_path, weights=True)


# --------------------------------------------------------------------------- runs
STAND_IN = """#!{python}
import os, sys
from array import array
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(" ".join([os.path.basename(sys.argv[0]), *args,
                        "CAP=" + os.environ.get("SUBWAY_PARTITION_EDGES", "")]) + "\\n")
{body}
"""
EMOGI_BFS = """
print("graph.bel\\nVertex: 8, Edge: 10\\nAllocation finished\\nInitialization done")
print("run   0: src            0, iteration   4, time     1.500000 ms")
print("Average run time 1.500000 ms")
array("I", [0, 1, 2, 3, 1, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF]).tofile(
    open(os.environ["EMOGI_ANSWER"], "wb"))
"""
EMOGI_CC = """
print("total iterations: 3\\ntotal components: 3\\ntotal time: 2.250000 ms")
array("Q", [0, 0, 0, 0, 0, 6, 6, 7]).tofile(open(os.environ["EMOGI_ANSWER"], "wb"))
"""
EMOGI_PAGERANK = """
print("iteration  12, time     3.000000 ms")
array("f", [1, 1, 2, 4]).tofile(open(os.environ["EMOGI_ANSWER"], "wb"))
"""
SUBWAY_SSWP = """
print("Graph Reading finished in 0.01 (s).")
print("1 Inner Iteration in Global Iteration 1, Partition 0")
print("2 Inner Iterations in Global Iteration 2, Partition 0")
print("Processing finished in 0.0425 (s).")
array("I", [0xFFFFFFFE, 3, 1, 0]).tofile(open(args[args.index("--output") + 1], "wb"))
"""
SUBWAY_USAGE = """
print("There was an error parsing command line arguments")
"""
CRASH = """
sys.stderr.write("line one\\nCUDA error: out of memory\\n")
sys.exit(1)
"""


def stand_in(folder: Path, name: str, body: str, log: Path) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(STAND_IN.format(python=sys.executable, log=str(log), body=body))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def calls(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()]


def test_emogi_runs_are_called_and_parsed(tmp_path):
    log, bins = tmp_path / "log", tmp_path / "bin"
    bfs = peers.run_emogi(stand_in(bins, "bfs_32", EMOGI_BFS, log), "g.bel", "bfs", 0,
                          answer_dir=tmp_path)
    assert bfs.failed is None and bfs.seconds == pytest.approx(1.5e-3) and bfs.rounds == 4
    assert bfs.answer.dtype == np.int32 and bfs.answer.tolist() == [0, 1, 2, 3, 1, -1, -1, -1]
    assert bfs.wall > 0 and not list(tmp_path.glob("emogi-answer*"))  # read, then removed
    cc = peers.run_emogi(stand_in(bins, "cc_32", EMOGI_CC, log), "g.bel", "cc",
                         answer_dir=tmp_path)
    assert cc.seconds == pytest.approx(2.25e-3) and cc.rounds == 3
    assert cc.answer.tolist() == [0, 0, 0, 0, 0, 5, 5, 7]  # the smallest member of each class
    pr = peers.run_emogi(stand_in(bins, "pagerank_32", EMOGI_PAGERANK, log), "g.bel",
                         "pagerank", damping=0.8, threshold=1e-7, max_iterations=50,
                         answer_dir=tmp_path)
    assert pr.seconds == pytest.approx(3e-3) and pr.rounds == 12
    assert pr.answer.tolist() == pytest.approx([0.125, 0.125, 0.25, 0.5])
    assert calls(log) == [
        ["bfs_32", "-f", "g.bel", "-t", "2", "-m", "2", "-r", "0", "CAP="],
        ["cc_32", "-f", "g.bel", "-t", "2", "-m", "2", "CAP="],
        ["pagerank_32", "-f", "g.bel", "-t", "2", "-m", "2", "-a", "0.8", "-l", "1e-07",
         "-i", "50", "CAP="]]


def test_subway_runs_are_called_and_parsed(tmp_path):
    log, bins = tmp_path / "log", tmp_path / "bin"
    run = peers.run_subway(stand_in(bins, "sswp-async", SUBWAY_SSWP, log), "g.bwcsr", "sswp",
                           0, partition_edges=1234, answer_dir=tmp_path)
    assert run.failed is None and run.seconds == pytest.approx(0.0425) and run.rounds == 2
    assert run.answer.dtype == np.float32
    assert run.answer.tolist() == [np.inf, 3, 1, 0]  # inf at the source, 0 unreached
    (call,) = calls(log)
    assert call == ["sswp-async", "--input", "g.bwcsr", "--source", "0", "--output",
                    str(tmp_path / "subway-answer.bin"), "CAP=1234"]


def test_a_failing_or_silent_peer_is_a_failed_run(tmp_path):
    log, bins = tmp_path / "log", tmp_path / "bin"
    crash = peers.run_subway(stand_in(bins, "bfs-async", CRASH, log), "g.bcsr", "bfs", 0)
    assert crash.seconds is None and "exit status 1" in crash.failed
    assert "out of memory" in crash.failed
    usage = peers.run_subway(stand_in(bins, "cc-async", SUBWAY_USAGE, log), "g.bcsr", "cc")
    assert usage.seconds is None and "no time in its output" in usage.failed
    missing = peers.run_emogi(tmp_path / "nowhere", "g.bel", "cc")
    assert "could not start" in missing.failed
    slow = peers.run_emogi(stand_in(bins, "cc", "import time; time.sleep(5)", log), "g.bel",
                           "cc", timeout=0.5)
    assert "timed out" in slow.failed


def test_build_says_which_peer_is_missing(tmp_path):
    with pytest.raises(peers.PeerMissing, match="no EMOGI sources.*illinois-impact/EMOGI"):
        peers.build(tmp_path, tmp_path / "out")
    with pytest.raises(peers.PeerMissing, match="no Subway sources"):
        peers.build(tmp_path, tmp_path / "out", systems=(peers.SUBWAY,))


def test_subway_cap_is_the_fraction_but_at_least_the_largest_degree(graph):
    assert bench_peers.subway_cap(graph, 0.5) == max(graph.num_edges // 2 + graph.num_edges % 2,
                                                     int(graph.out_degrees().max()))
    assert bench_peers.subway_cap(graph, 0.01) == int(graph.out_degrees().max())


def test_reference_pagerank_solves_pagerank_exactly(graph):
    """Against the fixed point solved densely: x = d (A^T D^-1 x + dangling mass / n) +
    (1 - d) / n, networkx's conventions (vertex 7 is isolated, so dangling)."""
    n, d = graph.num_vertices, 0.85
    adjacency = graph.to_scipy().toarray()
    degrees = adjacency.astype(bool).sum(1)
    step = np.divide(adjacency.astype(bool).T, degrees, out=np.zeros((n, n)),
                     where=degrees > 0) + np.outer(np.ones(n), degrees == 0) / n
    expect = np.linalg.solve(np.eye(n) - d * step, np.full(n, (1 - d) / n))
    ours = bench_peers.reference_pagerank(graph, d, 1e-13)["ranks"]
    assert np.abs(ours - expect).sum() < 1e-10 and ours.sum() == pytest.approx(1)


# --------------------------------------------------------------------------- the script
def test_cpu_path_with_the_peers_absent(tmp_path, capsys):
    out_json = tmp_path / "p.json"
    assert bench_peers.main(["--device", "cpu", "--graphs", "grid", "--grid-side", "6",
                             "--algorithms", "bfs", "cc", "--sources", "2",
                             "--peers-dir", str(tmp_path / "none"), "--workdir",
                             str(tmp_path / "work"), "--json-out", str(out_json),
                             "--md-out", ""]) == 0
    report = capsys.readouterr().out
    assert "Peers not built" in report and "no EMOGI sources" in report
    payload = json.loads(out_json.read_text())
    assert [c["algorithm"] for c in payload["cells"]] == ["bfs", "cc"]
    for cell in payload["cells"]:
        assert list(cell["systems"]) == ["seraph"]
        seraph = cell["systems"]["seraph"]
        assert seraph["ok"] and seraph["n"] == 2 and seraph["checked"] == 3
    assert payload["peers"]["programs"] == {}


def test_each_pagerank_method_is_a_system_and_a_row_of_its_own(tmp_path, capsys):
    out_json = tmp_path / "p.json"
    assert bench_peers.main(["--device", "cpu", "--graphs", "grid", "--grid-side", "5",
                             "--algorithms", "pagerank", "--pagerank-method", "power", "delta",
                             "--sources", "2", "--peers-dir", str(tmp_path / "none"),
                             "--json-out", str(out_json), "--md-out", ""]) == 0
    report = capsys.readouterr().out
    assert "| PAGERANK | 2 |" in report and "| PAGERANK (delta) | 2 |" in report
    (cell,) = json.loads(out_json.read_text())["cells"]
    assert list(cell["first_calls"]) == list(cell["systems"]) == ["seraph", "seraph-delta"]
    for system in cell["systems"].values():
        assert system["ok"] and system["n"] == 2 and max(system["l1_errors"]) < 1e-5
        assert system["unconverged"] == 0


def test_a_pagerank_run_out_of_iterations_is_reported(tmp_path, capsys):
    assert bench_peers.main(["--device", "cpu", "--graphs", "grid", "--grid-side", "5",
                             "--algorithms", "pagerank", "--max-iterations", "1",
                             "--sources", "2", "--peers-dir", str(tmp_path / "none"),
                             "--md-out", ""]) == 1  # the verifier finds the answer short
    report = capsys.readouterr().out
    assert ", 3 unconverged" in report  # the first call and the two timed ones


#: Stand-ins that compute the answer from the files written for them, as the real peers
#: would (BFS levels, CC labels by some member); Subway's BFS gets one vertex wrong.
FAKE_PEER = """#!{python}
import os, sys
from collections import deque
import numpy as np
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
if name.endswith("_32"):
    base = args[args.index("-f") + 1]
    indptr = np.fromfile(base + ".col", np.uint64)[2:].astype(np.int64)
    heads = np.fromfile(base + ".dst", np.uint64)[2:].astype(np.int64)
    unreached, out = 0xFFFFFFFF, os.environ["EMOGI_ANSWER"]
    source = int(args[args.index("-r") + 1]) if "-r" in args else None
else:
    data = np.fromfile(args[args.index("--input") + 1], np.uint32).astype(np.int64)
    n, m = data[0], data[1]
    indptr, heads = np.append(data[2:2 + n], m), data[2 + n:]
    unreached, out = 0xFFFFFFFE, args[args.index("--output") + 1]
    source = int(args[args.index("--source") + 1]) if "--source" in args else None
n = len(indptr) - 1
if name.startswith("bfs"):
    values = np.full(n, unreached, np.uint32)
    values[source], queue = 0, deque([source])
    while queue:
        u = queue.popleft()
        for v in heads[indptr[u]:indptr[u + 1]]:
            if values[v] == unreached:
                values[v] = values[u] + 1
                queue.append(v)
    if name.startswith("bfs-"):
        values[np.argmax(values * (values < unreached))] += 1
    print("run   0: src 0, iteration 3, time 1.0 ms" if name.endswith("_32") else
          "Processing finished in 0.002 (s).")
else:
    labels = np.arange(n)
    changed = True
    while changed:  # the largest member, to show that classes, not labels, are checked
        changed = False
        for u in range(n):
            for v in heads[indptr[u]:indptr[u + 1]]:
                if labels[v] < labels[u]:
                    labels[v], changed = labels[u], True
    values = labels.astype(np.uint64 if name.endswith("_32") else np.uint32)
    print("total time: 2.0 ms" if name.endswith("_32") else "Processing finished in 0.004 (s).")
values.tofile(out)
"""


def test_peer_answers_are_checked_and_a_wrong_one_is_reported(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    fakes = {}
    for system, programs in ((peers.EMOGI, ("bfs_32", "cc_32", "sssp_32", "pagerank_32")),
                             (peers.SUBWAY, ("bfs-async", "cc-async", "sssp-async",
                                             "sswp-async", "pr-async"))):
        fakes[system] = {}
        for name in programs:
            path = folder / name
            path.write_text(FAKE_PEER.format(python=sys.executable))
            path.chmod(path.stat().st_mode | stat.S_IEXEC)
            fakes[system][name] = path
    monkeypatch.setattr(peers, "build", lambda *a, systems, **k: {systems[0]: fakes[systems[0]]})
    out_json = tmp_path / "p.json"
    assert bench_peers.main(["--device", "cpu", "--graphs", "grid", "--grid-side", "5",
                             "--algorithms", "bfs", "cc", "--sources", "2", "--workdir",
                             str(tmp_path / "work"), "--json-out", str(out_json),
                             "--md-out", ""]) == 0  # a peer's wrong answer is its own
    report = capsys.readouterr().out
    assert "EMOGI: checked 2 of 2; Subway: checked 2 of 2, 2 WRONG" in report
    cells = json.loads(out_json.read_text())["cells"]
    for cell in cells:
        emogi, subway = cell["systems"][peers.EMOGI], cell["systems"][peers.SUBWAY]
        assert emogi["ok"] and emogi["n"] == 2 and emogi["checked"] == 2
        assert subway["times"] == [0.002, 0.002] if cell["algorithm"] == "bfs" else \
            subway["ok"] and subway["times"] == [0.004, 0.004]
    assert not list((tmp_path / "work" / "peer-inputs").iterdir())  # dropped after the graph


@pytest.mark.parametrize("argv, message", [
    (["--sources", "0"], "--sources must be at least 1"),
    (["--budget-fraction", "0"], "--budget-fraction must be in"),
    (["--damping", "1.5"], "--damping must be from 0 to 1"),
    (["--tolerance", "0"], "--tolerance must be a positive number"),
    (["--algorithms", "tc"], "invalid choice"),
    (["--emogi-edges", "2"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        bench_peers.main(["--device", "cpu", *argv])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_the_answers_column_puts_seraphs_device_peak_beside_the_budget():
    record = bench_peers.Record()
    record.peaks += [1 << 20, 3 << 19]
    cell = {"algorithm": "bfs", "budget": 2 << 20, "systems": {"seraph": record.summary()}}
    assert bench_peers.answers(cell).endswith(
        f"peak {bench_peers.benchlib.size(3 << 19)} / {bench_peers.benchlib.size(2 << 20)}")
