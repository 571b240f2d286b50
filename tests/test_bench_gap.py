"""scripts/bench_gap.py at a tiny size against a stand-in for GAP's binaries, which records
how it is called: every source goes to GAP's ``-r`` and to Seraph, SSSP reads the weighted
file with ``-d 2``, PageRank's ``pr`` gets the tolerance as ``-t``, GAP gets numba's thread
count, and its trial times are parsed."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import numba
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_gap  # noqa: E402

FAKE_KERNEL = """#!{python}
import os, sys
args = sys.argv[1:]
name, threads = os.path.basename(sys.argv[0]), os.environ["OMP_NUM_THREADS"]
with open({log!r}, "a") as log:
    log.write(" ".join([name, threads, *args]) + "\\n")
# The stand-in converter copies the edge list: each undirected edge once, "u v w".
edges = [tuple(map(int, line.split()[:2])) for line in open(args[args.index("-f") + 1])]
n = 1 + max(max(e) for e in edges)
print(f"Graph has {{n}} nodes and {{len(edges)}} undirected edges for degree: 1")
print("Trial Time:          0.01250")
if "-v" in args:
    print("Verification:           PASS")
if "-a" in args:  # GAP's figures of its answer, from a plain union-find and BFS
    off = int(os.environ.get("FAKE_GAP_OFF", "0"))
    neighbours = [[] for _ in range(n)]
    for u, v in edges:
        neighbours[u].append(v)
        neighbours[v].append(u)
    parent = list(range(n))
    def root(v):
        while parent[v] != v:
            v = parent[v]
        return v
    for u, v in edges:
        parent[root(u)] = root(v)
    if name == "cc":
        sizes = {{}}
        for v in range(n):
            sizes[root(v)] = sizes.get(root(v), 0) + 1
        print(f"1 biggest clusters\\n0:{{max(sizes.values())}}")
        print(f"There are {{len(sizes) + off}} components")
    elif name in ("bfs", "sssp"):
        source = int(args[args.index("-r") + 1])
        reached = [v for v in range(n) if root(v) == root(source)]
        if name == "bfs":
            out_edges = sum(len(neighbours[v]) for v in reached)
            print(f"BFS Tree has {{len(reached) + off}} nodes and {{out_edges}} edges")
        else:
            print(f"SSSP Tree reaches {{len(reached) + off}} nodes")
"""
FAKE_CONVERTER = """#!{python}
import sys
open(sys.argv[-1], "w").write(open(sys.argv[2]).read())
"""


def fake_gap(folder: Path, log: Path) -> Path:
    folder.mkdir()
    for name in ("bfs", "cc", "sssp", "pr", "converter"):
        text = FAKE_CONVERTER if name == "converter" else FAKE_KERNEL
        path = folder / name
        path.write_text(text.format(python=sys.executable, log=str(log)))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return folder


def test_seraph_beside_a_stand_in_for_gap(tmp_path, capsys):
    log = tmp_path / "calls.log"
    gap = fake_gap(tmp_path / "gap", log)
    out_json = tmp_path / "g.json"
    assert bench_gap.main(["--gap-dir", str(gap), "--kinds", "rmat", "--scale", "6",
                           "--sources", "2", "--repeat", "2", "--workdir",
                           str(tmp_path / "work"), "--json-out", str(out_json),
                           "--md-out", ""]) == 0
    cells = json.loads(out_json.read_text())["cells"]
    assert [c["algorithm"] for c in cells] == ["bfs", "cc", "sssp", "pagerank"]
    assert all(c["checks"]["ok"] and c["gap_verified"] and c["gap"] == [0.0125, 0.0125]
               for c in cells)
    sssp = cells[2]["seraph_work"]
    assert sssp["edges_pushed"] + sssp["edges_pulled_bottom_up"] + sssp["edges_swept"] > 0
    assert all(c["seraph_page_faults"] >= 0 for c in cells)
    calls = [line.split() for line in log.read_text().splitlines()]
    assert len(calls) == 4 * (1 + 2 * 2)  # a verified first run, then sources x repeat
    sources = cells[0]["sources"]
    for kernel, threads, *args in calls:
        assert threads == str(numba.config.NUMBA_NUM_THREADS)
        assert args[args.index("-f") + 1].endswith(".wsg" if kernel == "sssp" else ".sg")
        assert ("-d" in args) == (kernel == "sssp")
        assert ("-r" in args) == (kernel in ("bfs", "sssp"))
        assert ("-t" in args) == (kernel == "pr")
        if kernel == "pr":
            assert args[args.index("-t") + 1] == "0.0001" and "-i" in args
    bfs_sources = [c[c.index("-r") + 1] for c in calls if c[0] == "bfs"]
    assert bfs_sources == [str(s) for s in [sources[0], *(s for s in sources for _ in "ab")]]
    assert "| kron-6 | SSSP |" in capsys.readouterr().out


def test_a_road_like_grid_is_a_class_of_its_own(tmp_path):
    """``--kinds road``: the shuffled grid with edges removed, of side 2^(scale/2), its
    isolated vertices among GAP's; every answer checked and GAP's figures agreeing."""
    gap = fake_gap(tmp_path / "gap", tmp_path / "calls.log")
    out_json = tmp_path / "g.json"
    assert bench_gap.main(["--gap-dir", str(gap), "--kinds", "road", "--scale", "8",
                           "--algorithms", "bfs", "cc", "sssp", "--sources", "2", "--repeat",
                           "1", "--workdir", str(tmp_path / "work"), "--json-out",
                           str(out_json), "--md-out", ""]) == 0
    cells = json.loads(out_json.read_text())["cells"]
    assert {c["graph"] for c in cells} == {"road-8"}
    # A grid's 2 x 16 x 15 edges, each stored both ways, less the removed ones.
    assert all(c["vertices"] == 16 * 16 and c["stored_edges"] < 4 * 16 * 15
               and c["checks"]["ok"] and c["gap_figures"] for c in cells)


def test_gaps_sssp_runs_at_each_delta_and_stands_at_its_fastest(tmp_path):
    log = tmp_path / "calls.log"
    gap = fake_gap(tmp_path / "gap", log)
    out_json = tmp_path / "g.json"
    assert bench_gap.main(["--gap-dir", str(gap), "--kinds", "rmat", "--scale", "6",
                           "--algorithms", "sssp", "--gap-deltas", "1", "4.5",
                           "--sources", "2", "--repeat", "1", "--workdir",
                           str(tmp_path / "work"), "--json-out", str(out_json),
                           "--md-out", ""]) == 0
    [cell] = json.loads(out_json.read_text())["cells"]
    runs = [line.split() for line in log.read_text().splitlines() if "-v" not in line]
    assert sorted(args[args.index("-d") + 1] for _, _, *args in runs) == ["1", "1", "4.5",
                                                                          "4.5"]
    assert cell["gap_delta"] in (1, 4.5) and set(cell["gap_medians_by_delta"]) == {"1", "4.5"}


def test_each_thread_count_runs_both_systems_and_the_scaling_is_drawn(tmp_path, monkeypatch):
    """``--threads 1 2``: each cell once per count, GAP's OMP_NUM_THREADS and Seraph's
    ``threads=`` the cell's, and ``--plot`` writes the curve."""
    import seraph

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs a pool of two threads")
    log = tmp_path / "calls.log"
    gap = fake_gap(tmp_path / "gap", log)
    asked = []
    run = seraph.run

    def spy(*args, **kwargs):
        asked.append(kwargs.get("threads"))
        return run(*args, **kwargs)

    monkeypatch.setattr(seraph, "run", spy)
    out_json, plot = tmp_path / "g.json", tmp_path / "scaling.png"
    assert bench_gap.main(["--gap-dir", str(gap), "--kinds", "uniform", "--scale", "6",
                           "--algorithms", "bfs", "--sources", "2", "--repeat", "1",
                           "--threads", "1", "2", "--workdir", str(tmp_path / "work"),
                           "--json-out", str(out_json), "--md-out", "", "--plot",
                           str(plot)]) == 0
    cells = json.loads(out_json.read_text())["cells"]
    assert [c["threads"] for c in cells] == [1, 2]
    assert [line.split()[1] for line in log.read_text().splitlines()] == ["1"] * 3 + ["2"] * 3
    assert asked == [None, 1, 1, 2, 2]  # the first call (compiling), then each count's
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_gaps_figures_of_its_answer_are_set_beside_seraphs(tmp_path, monkeypatch, capsys):
    """What GAP's -a prints of its first answer (BFS and SSSP: the vertices reached, BFS
    their out-edges too; CC: the components and the largest one) is compared with the
    same figures of Seraph's first answer, over GAP's vertices: equal, the answers column
    says so; one off, the cell fails and the run exits 1."""
    gap = fake_gap(tmp_path / "gap", tmp_path / "calls.log")
    common = ["--gap-dir", str(gap), "--kinds", "rmat", "--scale", "6", "--algorithms",
              "bfs", "cc", "sssp", "--sources", "2", "--repeat", "1", "--workdir",
              str(tmp_path / "work"), "--md-out", ""]
    out = tmp_path / "agree.json"
    assert bench_gap.main([*common, "--json-out", str(out)]) == 0
    cells = json.loads(out.read_text())["cells"]
    assert [sorted(c["gap_figures"]) for c in cells] == [
        ["reached", "reached out-edges"], ["components", "largest"], ["reached"]]
    assert all(c["gap_figures"] == c["seraph_figures"] for c in cells)
    assert "GAP's -a agrees (components" in capsys.readouterr().out
    monkeypatch.setenv("FAKE_GAP_OFF", "1")
    out = tmp_path / "differ.json"
    assert bench_gap.main([*common, "--json-out", str(out)]) == 1
    cells = json.loads(out.read_text())["cells"]
    assert not any(c["checks"]["ok"] for c in cells)
    assert "GAP's -a **differs**: reached" in capsys.readouterr().out


def test_more_threads_than_the_pool_are_refused(tmp_path, capsys):
    gap = fake_gap(tmp_path / "gap", tmp_path / "calls.log")
    with pytest.raises(SystemExit) as stop:
        bench_gap.main(["--gap-dir", str(gap), "--threads",
                        str(numba.config.NUMBA_NUM_THREADS + 1)])
    assert stop.value.code == 2 and "NUMBA_NUM_THREADS" in capsys.readouterr().err


def test_a_missing_gap_is_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        bench_gap.main(["--gap-dir", str(tmp_path)])
    assert stop.value.code == 2
    assert "lacks GAP's bfs, cc, sssp, pr, converter" in capsys.readouterr().err


def test_the_curve_of_several_runs_is_drawn_from_their_json(tmp_path, monkeypatch, capsys):
    """``--plot-from``: the cells of earlier runs' JSON, each with some thread counts, go
    on one curve per graph and algorithm, and nothing runs (no --gap-dir needed)."""
    drawn = []
    monkeypatch.setattr(bench_gap, "plot_scaling", lambda cells, path: drawn.append(
        (sorted(c["threads"] for c in cells), path)))
    runs = []
    for name, threads in (("a.json", [16, 2]), ("b.json", [8, 4, 1])):
        cells = [{"graph": "kron-6", "algorithm": "bfs", "threads": t, "seraph_median": 1.0 / t,
                  "gap_median": 1.0 / t} for t in threads]
        (tmp_path / name).write_text(json.dumps({"cells": cells}))
        runs.append(str(tmp_path / name))
    plot = str(tmp_path / "curve.png")
    assert bench_gap.main(["--plot-from", *runs, "--plot", plot]) == 0
    assert drawn == [([1, 2, 4, 8, 16], plot)]
    with pytest.raises(SystemExit) as stop:
        bench_gap.main(["--plot-from", *runs])
    assert stop.value.code == 2 and "--plot" in capsys.readouterr().err
