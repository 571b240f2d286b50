"""Several workers (docs/design.md, "Many workers"): one query over the processes of an
MPI job, each holding its part of the pages.

- Every registered algorithm over 2 and 3 CPU workers equals the single-process engine
  and the oracle, on Hypothesis graphs with isolated vertices, self-loops, duplicates and
  zero weights, under schedules, predictors, budgets, push limits and page splits with
  empty parts (tests/workers_job.py: one MPI job per test, looping over the examples).
- The command line and the API start their workers under ``mpiexec`` and read the result
  back; what several workers cannot run is refused in one line before any starts.
- A worker killed or stopped mid-query ends the query on every worker within seconds, in
  one line that names it; Ctrl-C stops them all within a second; nothing is left running.
- The split, the parts, the waiting set, a sparse exchange beside a scripted peer and the
  launcher's output filter, without MPI.
- With two GPUs (``cuda``), the same over NCCL.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_interrupts import SERAPH, WITHIN_S, lines_of, wait_for_line

import seraph
from seraph.algorithms import ALGORITHMS
from seraph.distributed import launch, parts
from seraph.distributed.engine import Waiting, gpu_ids
from seraph.errors import ConfigError, InputError, WorkerError
from seraph.graph import Graph

HERE = Path(__file__).resolve().parent
#: Hypothesis examples per algorithm in each MPI job.
EXAMPLES = 40
#: How long a query stopped by a worker's end may take to end everywhere.
FAULT_S = 5.0
#: One numba thread a worker: CI's two cores are shared out among the workers.
ONE_THREAD = {**os.environ, "NUMBA_NUM_THREADS": "1"}


def gpus() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def run_job(workers: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([launch.mpiexec(), "-n", str(workers), sys.executable,
                           str(HERE / "workers_job.py"), str(EXAMPLES), *args], cwd=HERE,
                          env=ONE_THREAD, capture_output=True, text=True, timeout=900)


# -- every algorithm against one process and the oracle -------------------------------------
@pytest.mark.parametrize("workers", [2, 3])
def test_every_algorithm_over_workers_equals_one_process_and_the_oracle(workers):
    done = run_job(workers)
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ALGORITHMS:
        assert f"{name}: {EXAMPLES} examples on {workers} workers ok" in done.stdout, \
            done.stdout + done.stderr


@pytest.mark.cuda
@pytest.mark.skipif(gpus() < 2, reason="needs two GPUs")
def test_every_algorithm_over_two_gpus_equals_one_process_and_the_oracle():
    done = run_job(2, "cuda")
    assert done.returncode == 0, done.stdout + done.stderr
    for name in ALGORITHMS:
        assert f"{name}: {EXAMPLES} examples on 2 workers ok" in done.stdout, done.stdout


# -- the command line ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A weighted symmetric R-MAT of 16 pages."""
    path = tmp_path_factory.mktemp("workers") / "rmat.zarr"
    subprocess.run([*SERAPH, "generate", "rmat", "--scale", "10", "--weighted",
                    "--symmetrize", "--page-edges", "2048", "-o", str(path), "-q"], check=True)
    return path


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> tuple[Path, int]:
    """A path through 200,000 vertices in random order, and its first vertex: a BFS
    without push rounds takes many dense rounds of a few hops each."""
    from partitioner.readers import edges_from_arrays
    from partitioner.writer import Options, write_store

    n = 200_000
    order = np.random.default_rng(0).permutation(n)
    path = tmp_path_factory.mktemp("workers") / "chain.zarr"
    write_store(edges_from_arrays(order[:-1], order[1:], None, n), path,
                Options(page_edges=1 << 14))
    return path, int(order[0])


def seraph_run(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([*SERAPH, "run", *args], capture_output=True, text=True,
                          env=env or ONE_THREAD, timeout=600)


@pytest.mark.parametrize("algorithm", ["bfs", "pagerank"])
def test_the_command_line_runs_over_workers_and_the_first_prints(store, tmp_path, algorithm):
    entry = ALGORITHMS[algorithm]
    source = ["--source", "5"] if entry.needs_source else []
    one, many = tmp_path / "one.npy", tmp_path / "many.npy"
    alone = seraph_run(algorithm, str(store), *source, "--device", "cpu", "--output", str(one))
    assert alone.returncode == 0, alone.stderr
    done = seraph_run(algorithm, str(store), *source, "--device", "cpu", "--workers", "3",
                      "--validate", "--output", str(many))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{algorithm} on {store}: ") and lines[-1] == \
        "  validation: ok", done.stdout
    assert sum(line.startswith(f"{algorithm} on ") for line in lines) == 1
    assert [line for line in done.stderr.splitlines()
            if not line.startswith("compiling")] == []
    if entry.spec.combine == "sum":
        np.testing.assert_allclose(np.load(many), np.load(one), rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_array_equal(np.load(many), np.load(one))


def test_many_sources_run_over_workers(store, tmp_path):
    out = tmp_path / "levels"
    done = seraph_run("bfs", str(store), "--device", "cpu", "--workers", "2",
                      "--random-sources", "3", "--validate", "--output", str(out))
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[2:5]]
    assert [row[-1] for row in rows] == ["ok"] * 3
    graph = seraph.open_graph(store)
    for row in rows:
        np.testing.assert_array_equal(np.load(out / f"source_{row[0]}.npy"),
                                      seraph.bfs(graph, int(row[0])).levels)


def many_sources(store, algorithm: str, count: int, *workers: str, more: tuple = ()
                 ) -> tuple[list, dict]:
    """A many-source run's table lines (less the times) and its JSON (with ``more``
    options), both asked for."""
    import json

    args = [algorithm, str(store), "--device", "cpu", "--random-sources", str(count),
            "--seed", "4", "--validate", *workers]
    table = seraph_run(*args)
    assert table.returncode == 0, table.stderr
    done = seraph_run(*args, "--json", *more)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in table.stdout.splitlines()]
    return [row[:1] + row[2:] for row in rows], json.loads(done.stdout)


@pytest.mark.parametrize("algorithm, workers, count", [("sssp", 2, 5), ("sswp", 3, 2)])
def test_many_sources_run_source_parallel_when_each_worker_gets_one(store, tmp_path,
                                                                    algorithm, workers, count):
    """At least as many sources as workers: each worker runs its share on the whole graph
    (every workers-th source); fewer: each source partitioned over all of them. Either
    way the same rows in the same order as one process, and the same answers (two cases:
    each run is a whole MPI job; BFS runs source-parallel in the tests below)."""
    from seraph.distributed.spread import source_parallel

    out = tmp_path / "values"
    alone, one = many_sources(store, algorithm, count)
    rows, over = many_sources(store, algorithm, count, "--workers", str(workers),
                              more=("--output", str(out)))
    parallel = source_parallel(count, workers)
    assert parallel == (count >= workers)
    if not parallel:  # a partitioned run takes rounds of its own
        rows, alone = ([row[:2] + row[4:] if row[0].isdigit() else row for row in r]
                       for r in (rows, alone))
    assert rows == alone  # the header, the rows and their order; times left out
    assert [r["validation"] for r in over["runs"]] == ["ok"] * count
    for i, run in enumerate(over["runs"]):
        assert run["source"] == one["runs"][i]["source"]
        assert run.get("worker") == (i % workers if parallel else None)
        assert len(run["stats"]["workers"]) == (0 if parallel else workers)
        want = seraph.run(store, algorithm, run["source"], device="cpu").values
        np.testing.assert_array_equal(np.load(out / f"source_{run['source']}.npy"), want)
    assert over["summary"]["sources"] == count and over["summary"]["seconds"] > 0


def test_source_parallel_sources_anywhere_on_a_graph_in_pieces(tmp_path):
    """Sources on a chain, a star, an isolated vertex and a self-loop's vertex of one graph,
    weighted with zeros and duplicates: each worker's answers are one process's."""
    from partitioner.readers import edges_from_arrays
    from partitioner.writer import Options, write_store

    src = np.array([0, 1, 2, 10, 10, 10, 10, 20, 3, 3])
    dst = np.array([1, 2, 3, 11, 12, 13, 11, 20, 4, 4])
    weights = np.array([1, 0, 2, 5, 1, 0, 3, 1, 7, 2], np.float32)
    path = tmp_path / "pieces.zarr"
    write_store(edges_from_arrays(src, dst, weights, 30), path,
                Options(symmetrize=True, page_edges=2))
    sources = [0, 10, 25, 20, 4]  # 25 has no edge at all
    out = tmp_path / "values"
    # SSSP, for which the weights' zeros and duplicates count.
    done = seraph_run("sssp", str(path), "--device", "cpu", "--workers", "3", "--sources",
                      ",".join(map(str, sources)), "--validate", "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()[2:7]] == \
        [str(s) for s in sources]
    for source in sources:
        np.testing.assert_array_equal(np.load(out / f"source_{source}.npy"),
                                      seraph.run(path, "sssp", source, device="cpu").values)


def test_a_source_parallel_run_takes_what_one_worker_cannot_split(store):
    """The weak predictor is one process's: refused over partitioned workers, run by each
    worker of a source-parallel run."""
    done = seraph_run("bfs", str(store), "--device", "cpu", "--workers", "2",
                      "--random-sources", "2", "--predictor", "weak", "--validate")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(" ok") == 2
    refused = seraph_run("bfs", str(store), "--device", "cpu", "--workers", "2",
                         "--random-sources", "1", "--predictor", "weak")
    assert refused.returncode == 2 and "runs on one worker only" in refused.stderr


def test_a_budget_no_worker_can_hold_is_one_line(store):
    done = seraph_run("bfs", str(store), "--device", "cpu", "--workers", "2",
                      "--random-sources", "4", "--gpu-memory", "100")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [line for line in done.stderr.splitlines()
                                        if line.startswith("seraph: error: device memory "
                                                           "budget 100 B is too small")]
    assert len(done.stderr.splitlines()) == 1, done.stderr


@pytest.mark.parametrize("count", [1, 2])
def test_an_output_folder_in_use_is_refused_by_every_worker(store, tmp_path, count):
    """Partitioned (one source) or source-parallel: no worker waits for one that refused."""
    taken = tmp_path / "taken"
    taken.mkdir()
    sources = seraph.open_graph(store).vertex_ids[[5, 6]][:count]
    for source in sources:
        np.save(taken / f"source_{source}.npy", np.zeros(1))
    done = seraph_run("bfs", str(store), "--device", "cpu", "--workers", "2", "--sources",
                      ",".join(str(s) for s in sources), "--output", str(taken))
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and "is already there" in done.stderr


def test_the_sources_are_shared_out_every_workers_th():
    from seraph.distributed.spread import share, source_parallel

    assert [list(share(7, 3, w)) for w in range(3)] == [[0, 3, 6], [1, 4], [2, 5]]
    assert not source_parallel(1, 2) and not source_parallel(5, 1)
    assert source_parallel(2, 2) and not source_parallel(2, 3)


def test_the_stats_say_what_each_worker_did(store):
    import json

    done = seraph_run("sssp", str(store), "--source", "5", "--device", "cpu", "--workers", "3",
                      "--json")
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)["stats"]
    graph = seraph.open_graph(store)
    workers = stats["workers"]
    assert [w["worker"] for w in workers] == [0, 1, 2]
    assert sum(w["pages"] for w in workers) == stats["num_pages"] == graph.num_pages
    assert sum(w["edges"] for w in workers) == stats["num_edges"] == graph.num_edges
    assert [w["first_page"] for w in workers] == [0, *np.cumsum([w["pages"] for w in
                                                                  workers])[:-1]]
    spans = [w["vertices"] for w in workers]
    assert all(lo < hi for lo, hi in spans)
    # A vertex whose in-edges span two parts is in both.
    assert all(a[1] - 1 <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert all(w["exchange_bytes"] > 0 and w["exchange_time"] > 0 for w in workers)
    assert stats["exchange_bytes"] == sum(w["exchange_bytes"] for w in workers)


@pytest.mark.parametrize("args, says", [
    (["--workers", "{more}"], "{more} workers for a graph of {pages} page(s)"),
    (["--workers", "2", "--device", "cuda"], "workers run on the CPU"),
    (["--gpus", "1", "--device", "cpu"], "devices name GPUs, but the device is cpu"),
    (["--gpus", "one"], "--gpus one: give GPU ids"),
    (["--workers", "0"], "workers must be a whole number of at least 1"),
    (["--workers", "2", "--gpus", "2"], "give one of them"),
    (["--workers", "2", "--predictor", "weak"], "runs on one worker only"),
    (["--workers", "2", "--source", "99999"], "out of range"),
])
def test_what_workers_cannot_run_is_refused_in_one_line(store, args, says):
    pages = seraph.open_graph(store).num_pages
    args = [a.format(more=pages + 1) for a in args]
    says = says.format(more=pages + 1, pages=pages)
    done = seraph_run("bfs", str(store), *args)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr
    assert done.stdout == ""


@pytest.mark.cuda
@pytest.mark.skipif(gpus() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_command_line_runs_over_two_gpus(store, tmp_path, three_slots, algorithm):
    entry = ALGORITHMS[algorithm]
    source = ["--source", "5"] if entry.needs_source else []
    one, two = tmp_path / "one.npy", tmp_path / "two.npy"
    # Paged on each GPU: three slots' worth of the graph's budget, the exchange's room more.
    memory = str(int(three_slots(store, algorithm)) + (1 << 20))
    alone = seraph_run(algorithm, str(store), *source, "--device", "cuda", "--gpu-memory",
                       memory, "--output", str(one))
    assert alone.returncode == 0, alone.stderr
    done = seraph_run(algorithm, str(store), *source, "--gpus", "2", "--gpu-memory", memory,
                      "--validate", "--output", str(two), "--json")
    assert done.returncode == 0, done.stderr
    import json

    out = json.loads(done.stdout)
    assert out["validation"] == "ok"
    workers = out["stats"]["workers"]
    assert [w["device"] for w in workers] == ["cuda", "cuda"]
    assert all(w["peak_device_memory"] <= int(memory) for w in workers)
    if entry.spec.combine == "sum":
        np.testing.assert_allclose(np.load(two), np.load(one), rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_array_equal(np.load(two), np.load(one))


@pytest.mark.cuda
@pytest.mark.skipif(gpus() < 2, reason="needs two GPUs")
def test_many_sources_run_source_parallel_over_two_gpus(store, tmp_path):
    """Four sources over two GPUs: each GPU runs every other source on the whole graph,
    and each answer is one GPU's."""
    import json

    out = tmp_path / "values"
    done = seraph_run("sssp", str(store), "--gpus", "2", "--random-sources", "4", "--seed",
                      "4", "--validate", "--json", "--output", str(out))
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert [run["worker"] for run in runs] == [0, 1, 0, 1]
    assert all(run["validation"] == "ok" and run["stats"]["device"] == "cuda" for run in runs)
    graph = seraph.open_graph(store)
    for run in runs:
        np.testing.assert_array_equal(np.load(out / f"source_{run['source']}.npy"),
                                      seraph.sssp(graph, run["source"], device="cuda").distances)


# -- faults ----------------------------------------------------------------------------------
def descendants(pid: int) -> dict[int, str]:
    """The live processes below ``pid`` (zombies left out), by their command lines."""
    children: dict[int, list[int]] = {}
    lines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if stat[0] != "Z":
            children.setdefault(int(stat[1]), []).append(int(entry.name))
            lines[int(entry.name)] = line
    found, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found[child] = lines[child]
            todo.append(child)
    return found


def workers_of(pid: int) -> dict[int, int]:
    """The worker processes below ``pid``, by rank (their guards left out)."""
    found = {}
    for child, line in descendants(pid).items():
        if " -m seraph run " in line and "guard" not in line:
            environ = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
            rank = next(v for v in environ if v.startswith(b"PMI_RANK="))
            found[int(rank.split(b"=")[1])] = child
    return found


def alive(pids) -> list[int]:
    """Those of ``pids`` still running a moment on (zombies are done)."""
    deadline = time.monotonic() + 2
    while True:
        left = []
        for pid in pids:
            try:
                if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    left.append(pid)
            except OSError:
                pass
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def start_long_run(chain, workers: int = 2) -> tuple[subprocess.Popen, queue.Queue]:
    """A BFS of many dense rounds over ``workers``, once its rounds are under way."""
    path, first = chain
    run = subprocess.Popen([*SERAPH, "run", "bfs", str(path), "--source", str(first),
                            "--device", "cpu", "--workers", str(workers), "--push-alpha",
                            "0", "--predictor", "none", "-v"], env=ONE_THREAD,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = lines_of(run.stderr)
    wait_for_line(lines, r"^rounds? ", [])
    return run, lines


def rest_of(lines: queue.Queue) -> list[str]:
    """What the run printed to its end, less its progress lines (a source-parallel run's
    name their source first)."""
    rest = []
    while (line := lines.get(timeout=30)) is not None:
        rest.append(line)
    return [line for line in rest
            if not re.match(r"(source \d+ \(\d+/\d+\): )?rounds? |compiling", line)]


@pytest.mark.parametrize("rank", [0, 1])
def test_a_killed_worker_ends_the_query_on_every_worker(chain, rank):
    run, lines = start_long_run(chain)
    victim, started = workers_of(run.pid)[rank], descendants(run.pid)
    sent = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    run.wait(timeout=60)
    took = time.monotonic() - sent
    assert run.returncode == 1
    assert rest_of(lines) == [
        f"seraph: error: worker {rank} of 2 (pid {victim} on {socket.gethostname()}) was "
        "killed by SIGKILL (out of memory, or killed); the query was stopped on every worker"]
    assert took < FAULT_S, f"{took:.2f} s"
    assert alive(started) == []


def test_a_worker_killed_in_a_source_parallel_run_ends_it_on_every_worker(chain):
    path, _first = chain
    run = subprocess.Popen([*SERAPH, "run", "bfs", str(path), "--random-sources", "2",
                            "--device", "cpu", "--workers", "2", "--push-alpha", "0",
                            "--predictor", "none", "-v"], env=ONE_THREAD,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = lines_of(run.stderr)
    wait_for_line(lines, r"^source \d+ \(1/2\): rounds? ", [])
    victim, started = workers_of(run.pid)[1], descendants(run.pid)
    sent = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    run.wait(timeout=60)
    assert run.returncode == 1 and time.monotonic() - sent < FAULT_S
    assert rest_of(lines) == [
        f"seraph: error: worker 1 of 2 (pid {victim} on {socket.gethostname()}) was "
        "killed by SIGKILL (out of memory, or killed); the query was stopped on every worker"]
    assert alive(started) == []


def test_a_worker_stopped_by_a_signal_ends_the_query_and_names_it(chain):
    run, lines = start_long_run(chain, workers=3)
    victim, started = workers_of(run.pid)[2], descendants(run.pid)
    os.kill(victim, signal.SIGTERM)
    run.wait(timeout=60)
    assert run.returncode == 1
    assert rest_of(lines) == [
        f"seraph: error: worker 2 of 3 (pid {victim} on {socket.gethostname()}) was "
        "stopped by SIGTERM; the query was stopped on every worker"]
    assert alive(started) == []


@pytest.mark.parametrize("signum, code, word", [(signal.SIGINT, 130, "interrupted"),
                                                (signal.SIGTERM, 143, "terminated")])
def test_a_signal_stops_every_worker_within_a_second(chain, signum, code, word):
    run, lines = start_long_run(chain)
    started = descendants(run.pid)
    sent = time.monotonic()
    run.send_signal(signum)
    run.wait(timeout=60)
    took = time.monotonic() - sent
    assert run.returncode == code
    assert rest_of(lines) == [f"seraph: {word}; no partial output was left behind"]
    assert run.stdout.read() == ""
    assert took < WITHIN_S, f"{took:.2f} s"
    assert alive(started) == []


# -- the API -------------------------------------------------------------------------------
def job_folders() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("seraph-job-*")}


def test_the_api_runs_over_workers_and_reads_the_result_back(monkeypatch):
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 300, 3000), rng.integers(0, 300, 3000)
    graph = Graph.from_edges(src, dst, rng.integers(0, 9, 3000).astype(np.float32), 310,
                             page_edges=256)
    before = job_folders()
    got = seraph.sssp(graph, 0, workers=2, predecessors=True)
    want = seraph.sssp(graph, 0, predecessors=True, device="cpu")
    np.testing.assert_array_equal(got.distances, want.distances)
    np.testing.assert_array_equal(got.predecessors, want.predecessors)
    assert len(got.stats.workers) == 2 and got.stats.call_time > 0
    with pytest.raises(InputError, match="out of range"):
        seraph.bfs(graph, 10**6, workers=2)
    more = graph.num_pages + 1
    with pytest.raises(ConfigError, match=f"{more} workers for a graph of {more - 1} page"):
        seraph.bfs(graph, 0, workers=more)
    assert job_folders() == before


@pytest.mark.parametrize(("method", "predictor"), [
    ("delta", "auto"), ("delta", "none"), ("delta", "weak"), ("gauss-seidel", "auto")])
def test_recomputing_pagerank_over_workers_is_refused_in_one_line(store, method, predictor):
    """PageRank-delta's and Gauss-Seidel's rounds sum, which the workers' exchange of minima
    cannot: refused alike under any predictor (auto's weak predictor, one process's, is not
    the reason)."""
    graph = seraph.open_graph(store)
    says = ("runs on one worker only" if predictor == "weak"
            else "rounds do not run over several workers")
    with pytest.raises(ConfigError, match=says):
        seraph.pagerank(graph, method=method, device="cpu", workers=2, predictor=predictor)


def test_a_worker_killed_during_an_api_call_raises(chain, monkeypatch):
    import threading

    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    path, first = chain
    before, killed = job_folders(), []

    def kill_a_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = [p for p, line in descendants(os.getpid()).items()
                     if "seraph.distributed.job" in line and "guard" not in line]
            if len(found) == 2:
                time.sleep(2)  # into the query
                os.kill(found[1], signal.SIGKILL)
                killed.append(found[1])
                return
            time.sleep(0.05)

    threading.Thread(target=kill_a_worker, daemon=True).start()
    with pytest.raises(WorkerError, match=r"worker \d of 2 \(pid \d+ on .*\) was killed by "
                                          "SIGKILL"):
        seraph.bfs(path, first, workers=2, push_alpha=0, predictor="none")
    assert killed and job_folders() == before


@pytest.mark.cuda
@pytest.mark.skipif(gpus() < 2, reason="needs two GPUs")
def test_the_api_runs_over_two_gpus(store):
    graph = seraph.open_graph(store)
    got = seraph.sssp(graph, 5, devices=[0, 1])
    np.testing.assert_array_equal(got.distances, seraph.sssp(graph, 5, device="cuda").distances)
    assert len(got.stats.workers) == 2


@settings(max_examples=200, deadline=None)
@given(st.data(), st.sampled_from([None, 1.0, 2.5]))
def test_waiting_takes_the_nearest_bucket_unique_and_fresh(device, data, delta):
    """The partitioned engine's waiting set against a plain set of the vertices filed and
    not yet taken: each take is its nearest bucket's, and the next ones' until it holds
    the edges asked for (within a cap), ascending, each vertex once,
    none whose value has since moved to a nearer bucket, none without out-edges; the
    counts of vertices and edges bound those of the live ones, and equal them once
    compacted; in numpy's arrays, or
    cupy's on a GPU (the partitioned engine's on a device)."""
    xp = np
    if device == "cuda":
        import cupy as xp
    n = data.draw(st.integers(1, 24))
    degrees = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    values = np.array(data.draw(st.lists(st.floats(0, 20), min_size=n, max_size=n)))
    on = xp.asarray(values)
    waiting, live = Waiting(xp, delta, on, xp.asarray(degrees)), set()

    def key(v):
        return 0 if delta is None else int(np.floor(values[v] / delta))

    for _ in range(data.draw(st.integers(1, 12))):
        action = data.draw(st.sampled_from(["add", "take", "compact"]))
        if action == "compact":
            waiting.compact()
            assert waiting.count == len(live)
            assert waiting.edges == degrees[list(live)].sum()
        elif action == "add":
            lowered = sorted(data.draw(st.sets(st.integers(0, n - 1))))
            for v in lowered:
                values[v] = data.draw(st.floats(0, values[v]))
            on[...] = xp.asarray(values)
            waiting.add(xp.asarray(lowered, dtype=np.int64))
            live |= {v for v in lowered if degrees[v] > 0}
        else:
            edges, unless_over = data.draw(st.integers(0, 20)), data.draw(st.integers(0, 20))
            want, held = [], 0
            for k in sorted({key(v) for v in live}):
                if want and (held >= edges or held > unless_over):
                    break
                bucket = [v for v in live if key(v) == k]
                want, held = want + bucket, held + degrees[bucket].sum()
            got, got_edges = waiting.take(edges, unless_over)
            assert got.tolist() == sorted(want) and got_edges == held
            live -= set(want)
        assert waiting.empty == (not live)
        assert waiting.count >= len(live)
        assert waiting.edges >= degrees[list(live)].sum()
    assert set(waiting.drain().tolist()) >= live


def test_waiting_drops_a_stale_entry_whose_vertex_was_taken_from_a_nearer_bucket(device):
    """A vertex filed far, lowered and filed near, and taken from there: its far entry is
    stale, also when a later step takes the far bucket with the buckets before it."""
    xp = np
    if device == "cuda":
        import cupy as xp
    values = xp.asarray([0.0, 1.0, 2.0])
    waiting = Waiting(xp, 1.0, values, xp.asarray([1, 1, 1]))
    waiting.add(xp.arange(3))  # buckets 0: [0], 1: [1], 2: [2]
    values[2] = 0.0
    waiting.add(xp.asarray([2]))  # bucket 0: [0], [2]
    got, edges = waiting.take()
    assert got.tolist() == [0, 2] and edges == 2
    waiting.add(xp.asarray([0]))  # bucket 0 again
    got, edges = waiting.take(10)  # buckets 0, 1 and 2 (whose entry of 2 is stale)
    assert got.tolist() == [0, 1] and edges == 2
    assert waiting.empty


class _ScriptedPeer:
    """Worker 0's collectives in a job of two, where worker 1 offers ``theirs`` (ids and
    values) in a sparse exchange."""

    size, rank = 2, 0

    def __init__(self, xp, theirs_ids, theirs_values, count):
        self.xp, self.bytes, self.count = xp, 0, count
        self.theirs = [xp.asarray(theirs_ids, dtype=np.int32), xp.asarray(theirs_values)]

    def rows(self, row):
        return np.array([row, [len(self.theirs[0]), 0, np.inf]], dtype=np.float64)

    def allgatherv(self, send, counts):
        theirs = self.theirs.pop(0)
        return self.xp.concatenate((send, theirs.astype(send.dtype)))


class _Values:
    """What an exchange asks of a backend: its values, on its stream."""

    def __init__(self, xp, values):
        self.xp, self.values = xp, values
        self.layout = type("Layout", (), {"block_shift": 2})

    def vector(self, name):
        return self.values

    def vector_steps(self):
        import contextlib

        return contextlib.nullcontext()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_sparse_exchange_takes_the_smallest_offer_and_marks_only_anothers(device, data):
    """Worker 0 of two after a push step: every vertex either worker lowered takes the
    smaller offer, once, whether one or both offered it (a vertex spanning both parts);
    the changes are every vertex offered, ascending, each once; the marks are exactly the
    vertices the other worker lowered below this one's value, whatever their order."""
    from unittest import mock

    from seraph.distributed import exchange

    xp = np
    if device == "cuda":
        import cupy as xp
    n = data.draw(st.integers(1, 40))
    before = np.array(data.draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)),
                      dtype=np.int32)
    mine = sorted(data.draw(st.sets(st.integers(0, n - 1))))
    theirs = data.draw(st.lists(st.integers(0, n - 1), unique=True))
    values = before.copy()
    for v in mine:
        values[v] = data.draw(st.integers(0, int(before[v])))
    offers = np.array([data.draw(st.integers(0, int(before[v]))) for v in theirs],
                      dtype=np.int32)
    be = _Values(xp, xp.array(values))  # a copy: the test keeps the values before
    x = exchange.Exchange(_ScriptedPeer(xp, theirs, offers, len(mine)), be, (0, n))
    x.snapshot[...] = xp.asarray(before)
    with mock.patch.object(exchange, "SPARSE_SHARE", np.inf):  # sparse at any count
        step = x.step(len(mine), 0, xp.asarray(mine, dtype=np.int64))
    want = values.copy()
    np.minimum.at(want, np.asarray(theirs, dtype=np.int64), offers)
    assert (be.values.get() if xp is not np else be.values).tolist() == want.tolist()
    changed = sorted(set(mine) | set(theirs))
    got = step.changes.vertices()
    assert (got.get() if xp is not np else got).tolist() == changed
    assert step.changes.count == len(changed)
    lowered = {v for v, offer in zip(theirs, offers, strict=True) if offer < values[v]}
    assert sorted(step.marks.tolist()) == sorted(lowered)
    snapshot = x.snapshot.get() if xp is not np else x.snapshot
    assert snapshot[changed].tolist() == want[changed].tolist()


# -- the parts, without MPI -----------------------------------------------------------------
class _Pages:
    def __init__(self, pages: int, page_edges: int, edges: int):
        self.num_pages, self.page_edges, self.num_edges = pages, page_edges, edges


@settings(max_examples=200, deadline=None)
@given(pages=st.integers(0, 300), parts_=st.integers(1, 40), last=st.integers(1, 64))
def test_the_split_is_contiguous_and_balanced_by_edges(pages, parts_, last):
    pe = 64
    edges = max(0, pages - 1) * pe + (last if pages else 0)
    bounds = parts.split_pages(_Pages(pages, pe, edges), parts_)
    assert bounds[0] == 0 and bounds[-1] == pages and len(bounds) == parts_ + 1
    sizes = np.diff(bounds)
    assert (sizes >= 0).all()
    if parts_ <= pages:
        assert (sizes >= 1).all()
        # Each part within a page and a half of its share of the edges.
        held = np.minimum(bounds[1:] * pe, edges) - np.minimum(bounds[:-1] * pe, edges)
        assert np.abs(held - edges / parts_).max() <= 1.5 * pe


@pytest.mark.parametrize("twin", ["serial", "parallel"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_parts_csr_is_its_transpose_rows_by_tail_heads_ascending(twin, data):
    n = data.draw(st.integers(0, 300))
    heads = np.sort(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=4 * n)))
    tails = np.array(data.draw(st.lists(st.integers(0, max(n - 1, 0)), min_size=len(heads),
                                        max_size=len(heads))), dtype=np.int32)
    weights = np.arange(len(heads), dtype=np.float32) if data.draw(st.booleans()) else None
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(heads.astype(np.int64), minlength=n), out=indptr[1:])
    with pytest.MonkeyPatch.context() as patch:  # the twin that large work takes, or not
        patch.setattr("seraph.kernels.SERIAL_WORK", 0 if twin == "parallel" else 1 << 62)
        got_indptr, got_heads, got_weights = parts.csr_of(indptr, tails, weights, n)
    order = np.argsort(tails, kind="stable")  # by tail, then as the CSC lists them
    np.testing.assert_array_equal(got_indptr[1:] - got_indptr[:-1],
                                  np.bincount(tails, minlength=n))
    np.testing.assert_array_equal(got_heads, heads[order])
    if weights is None:
        assert got_weights is None
    else:
        np.testing.assert_array_equal(got_weights, weights[order])


def test_the_parts_hold_the_graph_and_read_only_their_pages(store, monkeypatch):
    from seraph.store import SAMPLE, Store

    whole = seraph.open_graph(store)
    read: list[int] = []
    original = Store.read_chunk_into
    monkeypatch.setattr(Store, "read_chunk_into", lambda self, name, page, out:
                        read.append(page) or original(self, name, page, out))
    indptr, indices, weights = seraph.open_graph(store).csc()
    heads = np.repeat(np.arange(whole.num_vertices), np.diff(indptr))
    got = []
    for k in range(3):
        part = parts.part_of(seraph.open_graph(store), 3, k)
        read.clear()
        p_indptr, p_indices, p_weights = part.csc()
        assert sorted(set(read)) == list(range(part.first_page, part.end_page))
        lo, hi = part.vertices
        p_heads = np.repeat(np.arange(part.num_vertices), np.diff(p_indptr))
        assert (lo <= p_heads).all() and (p_heads < hi).all()
        got.append((p_heads, p_indices, p_weights))
        # Its CSR is the transpose of its CSC, rows by tail, heads ascending.
        o_indptr, o_indices, o_weights = part.csr()
        tails = np.repeat(np.arange(part.num_vertices), np.diff(o_indptr))
        assert sorted(zip(tails, o_indices, o_weights, strict=True)) == \
            sorted(zip(p_indices, p_heads, p_weights, strict=True))
        np.testing.assert_array_equal(part.out_degrees(), whole.out_degrees())
        # Union-find's sample, as its rows: its own vertices' alone.
        own = np.full((whole.num_vertices, SAMPLE), -1)
        own[lo:hi] = whole.sample().reshape(-1, SAMPLE)[lo:hi]
        np.testing.assert_array_equal(part.sample(), own.ravel())
    np.testing.assert_array_equal(np.concatenate([g[0] for g in got]), heads)
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), indices)
    np.testing.assert_array_equal(np.concatenate([g[2] for g in got]), weights)


@pytest.mark.parametrize("options, says", [
    ({"workers": 0}, "at least 1"), ({"workers": True}, "at least 1"),
    ({"devices": [0, 0]}, "distinct ids"), ({"devices": [-1]}, "distinct ids"),
    ({"devices": "some"}, "distinct ids"), ({"workers": 2, "devices": [0]}, "one of them"),
    ({"workers": 2, "device": "cuda"}, "workers run on the CPU"),
    ({"devices": 2, "device": "cpu"}, "the device is cpu")])
def test_worker_options_are_checked(options, says):
    with pytest.raises(ConfigError, match=says):
        seraph.make_config(**options)


def test_gpus_are_named_by_ids_count_or_all():
    assert gpu_ids("all", 3) == (0, 1, 2) and gpu_ids(2, 3) == (0, 1)
    assert gpu_ids((2, 0), 3) == (2, 0)
    with pytest.raises(ConfigError, match="3 GPU"):
        gpu_ids((3,), 3)
    with pytest.raises(ConfigError, match="no GPU"):
        gpu_ids("all", 0)


def test_the_launchers_own_report_is_dropped_and_the_workers_line_kept():
    import io

    report = (b"bfs on g: 5 reached\n\n" + b"=" * 83 + b"\n=   BAD TERMINATION OF ONE OF "
              b"YOUR APPLICATION PROCESSES\n=   PID 7 RUNNING AT vm\n" + b"=" * 83 + b"\n"
              b"YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n"
              b"This typically refers to a problem with your application.\n"
              b"Please see the FAQ page for debugging suggestions\n"
              b"seraph: error: worker 1 of 2 (pid 9 on vm) was killed by SIGKILL\n"
              b"Abort(1) on node 1 (rank 1 in comm 0): application called MPI_Abort\n"
              b"\nlast\n")
    out, ending = io.StringIO(), launch.Ending(0)
    launch._pump(io.BytesIO(report), out, ending)
    assert out.getvalue() == ("bfs on g: 5 reached\n"
                              "seraph: error: worker 1 of 2 (pid 9 on vm) was killed by "
                              "SIGKILL\n\nlast\n")
    assert ending.launcher == "Killed (signal 9)"
    assert ending.worker_line.startswith("seraph: error: worker 1 of 2")


def test_threads_set_each_workers_pool_and_run(store, monkeypatch):
    """``--threads N`` with workers: each worker's pool is N threads (numba's
    NUMBA_NUM_THREADS, set by the launcher), and the run answers as one process does."""
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    assert launch.environment(2, 3)["NUMBA_NUM_THREADS"] == "3"
    assert launch.environment(2)["NUMBA_NUM_THREADS"] == str(
        max(1, len(os.sched_getaffinity(0)) // 2))
    done = seraph_run("sssp", str(store), "--source", "5", "--device", "cpu", "--workers", "2",
                      "--threads", "1", "--validate")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "  validation: ok", \
        done.stderr
