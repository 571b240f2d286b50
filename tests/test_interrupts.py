"""Signals during a real ``seraph preprocess``: whatever the phase, the run ends with one
line and the conventional exit code, and leaves nothing beside its output. A run killed
outright leaves its temporaries, and the next run to the same output removes them.

The phase is told from the files the run makes: its spill directory appears before the
input is read, bucket files while edges are partitioned, and page files while the store
is written (see seraph.temporaries and partitioner.writer).

Then signals during ``seraph run`` and the API's calls (seraph.interrupts): whatever the
phase, the run ends within a second of the signal; its phase is told from ``-v``'s lines.

Every child process, and every test here that signals itself, handles SIGINT as an
interactive shell's command does, whatever the test run inherited: a background job
(``pytest &``) starts with SIGINT ignored, and a process keeps an ignored signal ignored.
"""

from __future__ import annotations

import os
import pickle
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import seraph.cli
from seraph.cli import main
from seraph.store import Store

#: Edges of the input: enough for each phase to last a fraction of a second.
EDGES, VERTICES = 1_500_000, 200_000
#: A tiny budget makes the run spill, and small pages make writing take many files.
ARGS = ["--memory", "1MiB", "--page-edges", "16384"]

#: Globs (in the output's folder) whose first match marks a phase of the run to "g.zarr".
PHASES = {
    "reading": ".g.zarr.spill-*",
    "partitioning": ".g.zarr.spill-*/by-source-*",
    "writing pages": "g.zarr.tmp-*/csc/indices/c/0",
}


#: How a test starts seraph: with SIGINT raising KeyboardInterrupt (see the docstring).
SERAPH = [sys.executable, "-c", "import signal; "
          "signal.signal(signal.SIGINT, signal.default_int_handler); "
          "import sys; from seraph.__main__ import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def edge_file(tmp_path_factory) -> Path:
    """A text edge list big enough to take a few seconds."""
    path = tmp_path_factory.mktemp("interrupts") / "input.el"
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, VERTICES, EDGES), rng.integers(0, VERTICES, EDGES)
    path.write_text("\n".join(map("%d %d".__mod__, zip(src.tolist(), dst.tolist(),
                                                       strict=True))) + "\n")
    return path


@pytest.fixture(scope="module")
def small_file(edge_file) -> Path:
    """A tiny edge list, for runs whose length does not matter."""
    path = edge_file.with_name("small.el")
    path.write_text("0 1\n1 2\n2 0\n")
    return path


def preprocess_command(edges: Path, output: Path) -> list[str]:
    return [*SERAPH, "preprocess", str(edges), "-o", str(output), *ARGS]


def start(edge_file: Path, folder: Path, env: dict[str, str] | None = None
          ) -> subprocess.Popen:
    return subprocess.Popen(preprocess_command(edge_file, folder / "g.zarr"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=None if env is None else {**os.environ, **env})


def wait_for(folder: Path, pattern: str, run: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not list(folder.glob(pattern)):
        assert run.poll() is None, f"the run ended before {pattern} appeared: {run.stderr}"
        assert time.monotonic() < deadline, f"{pattern} did not appear"
        time.sleep(0.002)


def finish(run: subprocess.Popen) -> tuple[int, str]:
    _out, err = run.communicate(timeout=60)
    return run.returncode, err


def assert_one_line(err: str, word: str) -> None:
    """The run's stderr is its one line of ending (after a note that kernels are being
    compiled, when they are)."""
    *before, last = err.splitlines() or [""]
    assert last == f"seraph: {word}; no partial output was left behind", err
    assert [line for line in before if not line.startswith("compiling")] == [], err


SIGINT = (signal.SIGINT, 130, "interrupted")
SIGTERM = (signal.SIGTERM, 143, "terminated")


@pytest.mark.parametrize("phase, signum, code, word", [
    ("compiling", *SIGINT), ("reading", *SIGINT), ("partitioning", *SIGINT),
    ("writing pages", *SIGINT), ("reading", *SIGTERM), ("writing pages", *SIGTERM)])
def test_a_signal_in_any_phase_ends_cleanly(edge_file, tmp_path_factory, tmp_path, phase,
                                            signum, code, word):
    # An empty kernel cache makes the run compile its parsers when it starts reading.
    env = ({"NUMBA_CACHE_DIR": str(tmp_path_factory.mktemp("kernels"))}
           if phase == "compiling" else None)
    run = start(edge_file, tmp_path, env)
    wait_for(tmp_path, PHASES["reading" if phase == "compiling" else phase], run)
    if phase in ("reading", "compiling"):
        time.sleep(0.2)  # into the parser, or numba compiling it
    run.send_signal(signum)
    returncode, err = finish(run)
    assert returncode == code, err
    assert_one_line(err, word)
    assert list(tmp_path.iterdir()) == []


def test_a_killed_run_is_cleaned_up_by_the_next(edge_file, small_file, tmp_path):
    run = start(edge_file, tmp_path)
    wait_for(tmp_path, PHASES["writing pages"], run)
    run.kill()
    # Dead, but not waited for: a zombie, whose process id still exists.
    os.waitid(os.P_PID, run.pid, os.WEXITED | os.WNOWAIT)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert [name.split("-")[0] for name in left] == [".g.zarr.spill", "g.zarr.tmp"]
    try:
        returncode, err = finish(start(small_file, tmp_path))
    finally:
        finish(run)
    assert returncode == 0, err
    assert f"removed what an interrupted earlier run left: {', '.join(left)}" in err
    assert [p.name for p in tmp_path.iterdir()] == ["g.zarr"]
    assert Store(tmp_path / "g.zarr").attrs.num_edges > 0


def assert_wrote(returncode: int, err: str, folder: Path) -> None:
    """The run finished: exit 0, its summary, and the store alone in its folder."""
    assert returncode == 0, err
    lines = [line for line in err.splitlines() if not line.startswith("compiling")]
    assert len(lines) == 1 and lines[0].startswith(f"wrote {folder / 'g.zarr'}: "), err
    assert [p.name for p in folder.iterdir()] == ["g.zarr"]
    assert Store(folder / "g.zarr").attrs.num_edges > 0


@pytest.mark.parametrize("signum, code, word", [SIGINT, SIGTERM])
def test_a_signal_at_the_end_is_told_as_it_was(edge_file, tmp_path, signum, code, word):
    """A signal in the last moments of the run: as the last arrays are written (before the
    commit, or after it if the run is that quick), and once the store is in place."""
    for folder, pattern in ((tmp_path / "before", "g.zarr.tmp-*/pages"),
                            (tmp_path / "after", "g.zarr")):
        folder.mkdir()
        run = start(edge_file, folder)
        wait_for(folder, pattern, run)
        run.send_signal(signum)
        returncode, err = finish(run)
        if returncode == code and pattern != "g.zarr":
            assert_one_line(err, word)
            assert list(folder.iterdir()) == []
        else:
            assert_wrote(returncode, err, folder)


def in_process_run(tmp_path: Path) -> int:
    edges = tmp_path / "e.el"
    edges.write_text("0 1\n1 2\n2 0\n")
    return main(["preprocess", str(edges), "-o", str(tmp_path / "g.zarr")])


def signal_after(fn):
    def call_then_signal(*args, **kwargs):
        result = fn(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)
        return result
    return call_then_signal


def test_signals_before_the_commit_leave_nothing(tmp_path, monkeypatch, capsys):
    from seraph import store

    monkeypatch.setattr(store, "_fsync_tree", signal_after(store._fsync_tree))
    assert in_process_run(tmp_path) == 130
    assert capsys.readouterr().err == "seraph: interrupted; no partial output was left behind\n"
    assert [p.name for p in tmp_path.iterdir()] == ["e.el"]


@pytest.mark.parametrize("moment", ["the rename into place", "the summary"])
def test_signals_after_the_commit_let_the_run_finish(tmp_path, monkeypatch, capsys, moment):
    from seraph import store, temporaries

    if moment == "the rename into place":
        monkeypatch.setattr(temporaries, "commit", signal_after(temporaries.commit))
    else:
        monkeypatch.setattr(store.Store, "_validate", signal_after(store.Store._validate))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor is a coroutine of zarr's left unawaited
        assert in_process_run(tmp_path) == 0
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert err.startswith(f"wrote {tmp_path / 'g.zarr'}: 3 vertices, 3 edges") and \
        err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.el", "g.zarr"]
    assert Store(tmp_path / "g.zarr").attrs.num_edges == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # main() restored it


#: A ``seraph`` command whose signal comes while the CLI's modules are imported.
SIGNAL_WHILE_IMPORTING = """
import signal, sys

class SignalOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == "seraph.algorithms":
            signal.raise_signal(signal.SIG{}})
        return None

sys.meta_path.insert(0, SignalOnImport())
from seraph.__main__ import main
sys.exit(main())
"""


@pytest.mark.parametrize("signum, code, word", [SIGINT, SIGTERM])
def test_a_signal_while_importing_gives_one_line(tmp_path, signum, code, word):
    script = SIGNAL_WHILE_IMPORTING.replace("SIG{}}", signal.Signals(signum).name)
    run = subprocess.run([sys.executable, "-c", script, "preprocess", "x.el", "-o", "g.zarr"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == code, run.stderr
    assert run.stderr == f"seraph: {word}; no partial output was left behind\n"
    assert list(tmp_path.iterdir()) == []


def test_temporaries_of_a_live_run_are_left_alone(edge_file, small_file, tmp_path):
    first = start(edge_file, tmp_path)
    wait_for(tmp_path, PHASES["partitioning"], first)
    first.send_signal(signal.SIGSTOP)  # alive, but holding still while the second runs
    try:
        second = subprocess.run(preprocess_command(small_file, tmp_path / "g.zarr"),
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 0, second.stderr
        assert "interrupted earlier run" not in second.stderr
        assert list(tmp_path.glob(".g.zarr.spill-*/by-source-*"))  # the first's, intact
    finally:
        first.send_signal(signal.SIGCONT)
    returncode, err = finish(first)
    # stopped before it made its store, it finds the output taken when it does
    assert returncode == 2 and "g.zarr already exists" in err and err.count("\n") == 1
    assert [p.name for p in tmp_path.iterdir()] == ["g.zarr"]


#: A run whose SIGTERM comes while LLVM takes a cached kernel's machine code from numba: in
#: the Python callback through which llvmlite asks for it (see seraph.compiling).
SIGTERM_IN_CACHE_LOAD = """
import signal, sys
from numba.core.codegen import CPUCodeLibrary

give_code = CPUCodeLibrary._object_getbuffer_hook.__func__

def give_code_then_signal(cls, module):
    code = give_code(cls, module)
    if code is not None:
        signal.raise_signal(signal.SIGTERM)
    return code

CPUCodeLibrary._object_getbuffer_hook = classmethod(give_code_then_signal)
from seraph.cli import main
sys.exit(main(sys.argv[1:]))
"""


#: A run whose SIGTERM comes while a kernel returning arrays runs: the signal is handled when
#: the kernel's wrapper calls back into Python to box them (see seraph.cli._raise_interrupt).
SIGTERM_IN_KERNEL = """
import signal, sys, threading, time
import numba
import numpy as np
import partitioner.preprocess
from partitioner.readers import _parse_pieces, _split_lines

def parse(lines):
    buf = np.frombuffer(b"123456 654321\\n" * lines, dtype=np.uint8)
    cuts = _split_lines(buf, len(buf), numba.get_num_threads())
    return lambda: _parse_pieces(buf, cuts, 2, 3, False, False, -1)

def long_work(*args, **kwargs):
    parse(10)()  # loaded before the signal
    long_parse = parse(1 << 22)  # a good part of a second
    threading.Timer(0.1, signal.raise_signal, (signal.SIGTERM,)).start()
    long_parse()
    time.sleep(5)
    raise AssertionError("the signal was lost")

partitioner.preprocess.preprocess = long_work
from seraph.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("script", [SIGTERM_IN_CACHE_LOAD, SIGTERM_IN_KERNEL],
                         ids=["loading a kernel", "running a kernel"])
def test_a_signal_inside_numba_ends_cleanly(small_file, tmp_path, script):
    warm = subprocess.run(preprocess_command(small_file, tmp_path / "warm.zarr"),
                          capture_output=True, text=True, timeout=300)
    assert warm.returncode == 0, warm.stderr  # the kernels are in the cache now
    shutil.rmtree(tmp_path / "warm.zarr")
    command = preprocess_command(small_file, tmp_path / "g.zarr")
    run = subprocess.run([command[0], "-c", script, *command[3:]],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 143, run.stderr  # not -11
    assert_one_line(run.stderr, "terminated")
    assert list(tmp_path.iterdir()) == []


# -- the interrupt behind numba's SystemError, and --force, in process --------------------
def test_an_interrupt_wrapped_by_numba_exits_130(tmp_path, monkeypatch, capsys):
    import partitioner.preprocess

    def interrupted_in_compiled_code(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as e:  # what a dispatcher returning with a signal pending gives
            raise SystemError("CPUDispatcher(<function parse>) returned a result with an "
                              "exception set") from e

    monkeypatch.setattr(partitioner.preprocess, "preprocess", interrupted_in_compiled_code)
    edges = tmp_path / "e.el"
    edges.write_text("0 1\n")
    assert main(["preprocess", str(edges), "-o", str(tmp_path / "g.zarr")]) == 130
    assert capsys.readouterr().err == "seraph: interrupted; no partial output was left behind\n"


class UnpickledWithASignal:
    """Unpickled through numba.core.serialize._numba_unpickle, as a kernel's wrapper does
    while it boxes the kernel's results; a SIGTERM is handled meanwhile."""

    def __reduce__(self):
        return handle_sigterm_here, ()


def handle_sigterm_here() -> str:
    seraph.cli._raise_interrupt(signal.SIGTERM, sys._getframe())
    return "unpickled"


def test_an_interrupt_inside_numbas_callback_is_sent_again(monkeypatch):
    from numba.core import serialize

    sent = []
    monkeypatch.setattr(seraph.cli, "_send_again", sent.append)
    data = pickle.dumps(UnpickledWithASignal())
    assert serialize._numba_unpickle(id(data), data, b"UnpickledWithASignal") == "unpickled"
    assert sent == [signal.SIGTERM]
    with pytest.raises(seraph.cli.Terminated):  # elsewhere it is raised at once
        seraph.cli._raise_interrupt(signal.SIGTERM, sys._getframe())
    assert sent == [signal.SIGTERM]


class DroppedInterrupt:
    """Raises KeyboardInterrupt where Python can only print it and go on, as a Ctrl-C does
    in the callbacks through which llvmlite reports compiled code to numba."""

    def __del__(self):
        raise KeyboardInterrupt


def test_an_interrupt_python_had_to_drop_still_ends_the_run(tmp_path, monkeypatch, capsys):
    import partitioner.preprocess

    def long_work(*args, **kwargs):
        DroppedInterrupt()  # dropped at once
        time.sleep(30)
        raise AssertionError("the interrupt was lost")

    monkeypatch.setattr(partitioner.preprocess, "preprocess", long_work)
    edges = tmp_path / "e.el"
    edges.write_text("0 1\n")
    started = time.monotonic()
    assert main(["preprocess", str(edges), "-o", str(tmp_path / "g.zarr")]) == 130
    assert time.monotonic() - started < 5
    assert capsys.readouterr().err == "seraph: interrupted; no partial output was left behind\n"


def test_sigterm_handler_is_restored_after_main(tmp_path):
    edges = tmp_path / "e.el"
    edges.write_text("0 1\n")
    assert main(["preprocess", str(edges), "-o", str(tmp_path / "g.zarr"), "-q"]) == 0
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_force_on_the_cli_keeps_what_is_not_a_store(tmp_path, capsys, kind):
    edges = tmp_path / "e.el"
    edges.write_text("0 1\n1 2\n")
    target = tmp_path / "out"
    if kind == "file":
        target.write_text("precious")
    else:
        target.mkdir()
        (target / "keep.txt").write_text("precious")
    assert main(["preprocess", str(edges), "-o", str(target), "--force"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--force replaces only a Seraph store" in err
    kept = target if kind == "file" else target / "keep.txt"
    assert kept.read_text() == "precious"
    assert sorted(os.listdir(tmp_path)) == ["e.el", "out"]


def test_force_on_the_cli_replaces_a_store(tmp_path):
    edges = tmp_path / "e.el"
    edges.write_text("0 1\n1 2\n")
    out = str(tmp_path / "g.zarr")
    assert main(["preprocess", str(edges), "-o", out, "-q"]) == 0
    edges.write_text("0 1\n1 2\n2 3\n")
    assert main(["preprocess", str(edges), "-o", out, "--force", "-q"]) == 0
    assert Store(out).attrs.num_edges == 3
    assert sorted(os.listdir(tmp_path)) == ["e.el", "g.zarr"]


def test_a_signal_as_a_temporary_is_made_leaves_nothing(tmp_path, monkeypatch):
    from seraph import temporaries

    make = temporaries.make_temp_dir

    def made_then_interrupted(dest: Path, kind: str) -> Path:
        path = make(dest, kind)
        signal.raise_signal(signal.SIGINT)  # handled as the call returns
        return path

    monkeypatch.setattr(temporaries, "make_temp_dir", made_then_interrupted)
    with pytest.raises(KeyboardInterrupt), temporaries.temp_dir(tmp_path / "g.zarr", "spill"):
        raise AssertionError("the block ran")
    assert list(tmp_path.iterdir()) == []


# -- seraph run and the API ---------------------------------------------------------------
#: The graph a run stops in: long enough that every phase below lasts seconds. On the CPU
#: a weighted grid; on a GPU, which sweeps and pushes a grid in a blink, two rows of 2^21
#: (a BFS of two million levels, a push round or a dense round each).
RUN_GRIDS = {"cpu": (2048, 2048), "cuda": (2, 1 << 21)}
#: A signal must end the run within this many seconds.
WITHIN_S = 1.0


@pytest.fixture(scope="module")
def long_store(tmp_path_factory, device) -> Path:
    from partitioner.generators import gap_weights, grid
    from partitioner.writer import Options, write_store

    rows, cols = RUN_GRIDS[device]
    path = tmp_path_factory.mktemp("runs") / "grid.zarr"
    # Pages of 2^20 edges: three slots hold only some of them (see "paged sweeps").
    write_store(grid(rows, cols, weights=gap_weights()), path, Options(page_edges=1 << 20),
                command="test")
    return path


@pytest.fixture(scope="module")
def union_find_compiled(long_store) -> None:
    """One whole CC run on the store: union-find's line shows as the phase starts, before
    its kernels are loaded, and a kernel compiling holds a signal until it is done
    (seraph.compiling), which a first run on a cold cache would time."""
    subprocess.run([*SERAPH, "run", "cc", str(long_store), "--device", "cpu"], check=True,
                   capture_output=True)


#: (phase, arguments that force it, the -v line that shows it under way)
RUN_PHASES = {
    "dense sweeps": (["sssp", "--push-alpha", "0", "--schedule", "single"],
                     r"^round \d+ dense"),
    "paged sweeps": (["sssp", "--push-alpha", "0", "--gpu-memory", "{three_slots}"],
                     r"^round \d+ dense"),
    "push rounds": (["bfs"], r"^rounds? [\d-]+ push"),
    "delta-stepping": (["sssp"], r"^rounds? [\d-]+ push"),
    "union-find": (["cc"], r"^union-find"),
}


def lines_of(stream) -> queue.Queue:
    """The lines of ``stream`` as they come (None at its end)."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def start_run(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([*SERAPH, "run", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_line(lines: queue.Queue, pattern: str, seen: list[str]) -> None:
    """Waits until a line matches ``pattern`` (the first run compiles its kernels)."""
    deadline = time.monotonic() + 300
    while True:
        line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        assert line is not None, f"the run ended before {pattern!r}: {seen}"
        seen.append(line)
        if re.search(pattern, line):
            return


def signal_and_time(run: subprocess.Popen, signum: int) -> float:
    """Sends ``signum``; returns the seconds until the run had ended."""
    sent = time.monotonic()
    run.send_signal(signum)
    try:
        run.wait(timeout=60)
    finally:
        run.kill()
    return time.monotonic() - sent


@pytest.mark.parametrize("phase, signum, code, word", [
    *((phase, *SIGINT) for phase in RUN_PHASES),
    ("delta-stepping", *SIGTERM), ("union-find", *SIGTERM)])
def test_a_signal_ends_a_run_within_a_second(long_store, device, three_slots, phase, signum,
                                             code, word, request):
    if device == "cuda" and phase == "union-find":
        pytest.skip("the GPU's union-find is a few short launches")
    if phase == "union-find":
        request.getfixturevalue("union_find_compiled")
    args, shown = RUN_PHASES[phase]
    args = [a.format(three_slots=three_slots(long_store)) for a in args]
    run = start_run([*args, str(long_store), "--device", device, "-v"])
    lines, seen = lines_of(run.stderr), []
    wait_for_line(lines, shown, seen)
    took = signal_and_time(run, signum)
    assert run.returncode == code, seen
    rest = []
    while (line := lines.get(timeout=10)) is not None:
        rest.append(line)
    assert rest[-1] == f"seraph: {word}; no partial output was left behind", rest
    assert not [line for line in rest[:-1]
                if not re.search(r"^rounds? |^union-find|^compiling", line)]
    assert run.stdout.read() == ""
    assert took < WITHIN_S, f"{phase}: {took:.2f} s"


def test_a_many_source_run_prints_each_row_as_it_finishes_and_stops(long_store, device,
                                                                    tmp_path):
    output = tmp_path / "levels.npz"
    run = start_run(["bfs", str(long_store), "--device", device, "--sources", "0,1,2,3",
                     "--output", str(output)])
    rows, seen = lines_of(run.stdout), []
    wait_for_line(rows, r"^0 +[\d.]+ +[\d,]+ +\d+", seen)  # the first source's row
    took = signal_and_time(run, signal.SIGINT)
    assert run.returncode == 130
    assert seen[0] == f"bfs on {long_store}: 4 sources"
    assert seen[1].split() == ["source", "time", "s", "reached", "rounds", "pages", "moved"]
    assert run.stderr.read().splitlines()[-1] == \
        "seraph: interrupted; no partial output was left behind"
    assert list(tmp_path.iterdir()) == []
    assert took < WITHIN_S, f"{took:.2f} s"




def test_an_interrupted_call_raises_within_a_second_and_the_graph_stays_usable(
        long_store, device):
    import seraph
    from seraph.interrupts import STOP
    from seraph.progress import LIVE

    graph = seraph.open_graph(long_store)
    LIVE[:] = 0
    sent = []

    def interrupt_the_push_phase() -> None:
        while not LIVE[0]:  # its rounds are under way
            time.sleep(0.001)
        sent.append(time.monotonic())
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threading.Thread(target=interrupt_the_push_phase, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        seraph.bfs(graph, 0, device=device)
    took = time.monotonic() - sent[0]
    assert STOP[0] == 0
    cols = RUN_GRIDS[device][1]  # from vertex 0 of a full grid: a vertex's row plus column
    again = seraph.bfs(graph, 0, device=device)
    stats = again.stats  # whether a wrong answer came from few rounds or from a stale state
    np.testing.assert_array_equal(
        again.levels, graph.vertex_ids // cols + graph.vertex_ids % cols,
        err_msg=f"rounds {stats.rounds}, sparse {stats.sparse_rounds}, dense "
                f"{stats.dense_rounds}, edges pushed {stats.edges_pushed}")
    assert took < WITHIN_S, f"{took:.2f} s"


# -- the compiled loops look at the flag ---------------------------------------------------
CHAIN = 1000


def chain() -> tuple[np.ndarray, np.ndarray]:
    """A path 0 -> 1 -> ... -> CHAIN - 1 (its CSR; with the edges reversed, its CSC)."""
    return (np.r_[np.arange(CHAIN), CHAIN - 1].astype(np.int64),
            np.arange(1, CHAIN, dtype=np.int32))


@pytest.fixture
def stop_flag():
    """The flag a signal sets, set: the compiled loops stop at their first look."""
    from seraph.interrupts import STOP

    STOP[0] = signal.SIGINT
    yield STOP
    STOP[0] = 0


@pytest.mark.parametrize("mode", ["rounds", "delta-stepping"])
def test_push_rounds_stop_after_a_round_and_can_go_on(stop_flag, mode):
    from seraph.backends.cpu.push import push_until
    from seraph.operators import DISTANCE, HOP, infinity, value_dtype

    op = HOP if mode == "rounds" else DISTANCE
    indptr, indices = chain()
    weights = np.ones(len(indices), dtype=np.float32)
    values = np.full(CHAIN, infinity(op), dtype=value_dtype(op))
    values[0] = 0
    res = push_until(indptr, indices, weights, values, np.array([0]), op, 1 << 40)
    assert res.rounds == 1 and list(res.frontier) == [1]
    stop_flag[0] = 0  # what waits is all it takes to go on
    push_until(indptr, indices, weights, values, res.frontier, op, 1 << 40)
    np.testing.assert_array_equal(values, np.arange(CHAIN))


def test_union_find_links_nothing_once_stopped(stop_flag):
    from seraph.backends.cpu.union_find import components

    indptr, indices = chain()  # each edge one way: linking them joins the path all the same
    np.testing.assert_array_equal(components(indptr, indices, CHAIN), np.arange(CHAIN))
    stop_flag[0] = 0
    assert set(components(indptr, indices, CHAIN)[1:].tolist()) == {0}


def test_a_bottom_up_round_pulls_nothing_once_stopped(stop_flag):
    from seraph.backends.cpu.bottom_up import pull_unsettled
    from seraph.operators import HOP, infinity

    indptr, indices = chain()
    csc_indptr = np.r_[0, np.arange(CHAIN)].astype(np.int64)  # vertex v > 0 has v - 1
    values = np.full(CHAIN, infinity(HOP), dtype=np.int32)
    values[0] = 0
    assert pull_unsettled(csc_indptr, indices - 1, None, values, 0, 1 << 40, HOP,
                          infinity(HOP)) is None
    assert values[1] == infinity(HOP)
    stop_flag[0] = 0  # what waits is all it takes to go on
    assert pull_unsettled(csc_indptr, indices - 1, None, values, 0, 1 << 40, HOP,
                          infinity(HOP)).complete
    assert values[1] == 1


# -- the watcher thread ----------------------------------------------------------------------
def watchers() -> int:
    return sum(t.name == "seraph-interrupts" for t in threading.enumerate())


def test_one_watcher_serves_every_call_and_each_ends_caught_up():
    """The watcher is made once a process; a signal of one call stops that call, and the
    next starts with the flag clear."""
    from seraph import interrupts

    for _ in range(3):
        with interrupts.stoppable():
            pass
    assert watchers() == 1
    with pytest.raises(KeyboardInterrupt), interrupts.stoppable():
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        deadline = time.monotonic() + 5
        while not interrupts.stopping() and time.monotonic() < deadline:
            time.sleep(0.001)  # the watcher sets the flag, from its thread
        interrupts.check()
    assert not interrupts.stopping() and watchers() == 1
    with interrupts.stoppable():
        assert not interrupts.stopping()


def test_a_call_that_no_signal_reached_waits_on_nothing(monkeypatch):
    """With nothing in the socket and the watcher idle, a call's end does not wait for the
    watcher's thread, which a busy machine may have descheduled."""
    from seraph import interrupts

    with interrupts.stoppable():
        pass
    waits = []
    wait = interrupts._caught_up.wait
    monkeypatch.setattr(interrupts._caught_up, "wait", lambda *a: waits.append(a) or wait(*a))
    for _ in range(3):
        with interrupts.stoppable():
            pass
    assert waits == [] and not interrupts.stopping()


def test_a_forked_child_makes_its_own_watcher():
    """A child forked after a call has the socket's copy but not the thread: its calls make
    their own instead of waiting on one that is not there."""
    from seraph import interrupts

    with interrupts.stoppable():
        pass
    pid = os.fork()
    if pid == 0:  # the child: a call that would hang without a watcher
        signal.alarm(10)
        with interrupts.stoppable():
            pass
        os._exit(0 if watchers() == 1 else 3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_signals_of_a_call_reach_the_wakeup_fd_that_was_there_before():
    """An event loop's wakeup fd, set before the call, still gets the call's signals."""
    from seraph import interrupts

    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno())
    try:
        with pytest.raises(KeyboardInterrupt), interrupts.stoppable():
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            interrupts.check()
        assert signal.set_wakeup_fd(writer.fileno()) == writer.fileno()  # restored
        reader.settimeout(5)
        assert reader.recv(8) == bytes([signal.SIGINT])
    finally:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
