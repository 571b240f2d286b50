"""Compile time is measured, left out of a run's times, and announced once by the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from numba import njit
from numba.core import event

import seraph
from seraph import api, compiling, rounds
from seraph.numba_cache import WAITING


def _fresh_kernel():
    """A function numba has not compiled yet (uncached: it is defined here, at run time)."""
    @njit
    def add(a, b):
        return a + b
    return add


def test_watch_adds_up_compiles_and_announces_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiling, "NOTE_AFTER", 0.0)
    watch, said = compiling._Watch(), []
    watch.announce = said.append
    with event.install_listener("numba:compile", watch):
        _fresh_kernel()(1, 2)
        first = watch.total
        _fresh_kernel()(1.0, 2.0)
    assert 0 < first < watch.total
    assert said == [compiling.NOTE]


def test_watch_is_silent_below_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiling, "NOTE_AFTER", 3600.0)
    watch, said = compiling._Watch(), []
    watch.announce = said.append
    with event.install_listener("numba:compile", watch):
        _fresh_kernel()(1, 2)
    assert watch.total > 0 and said == []


class _Compile:
    """A stand-in for numba's compile event of a function in ``module`` (or, of ``kind``
    WAITING, for the wait for another process's compile of it)."""

    def __init__(self, module: str, kind: str = "numba:compile") -> None:
        self.kind = kind
        self.data = {"dispatcher": type("D", (), {"py_func": type("F", (), {
            "__module__": module})})()}


def test_ticks_count_our_kernels_while_they_compile() -> None:
    watch, said = compiling._Watch(), []
    watch.announce, watch.first = said.append, 100.0
    ours, numbas = _Compile("seraph.backends.cpu.pull"), _Compile("numba.np.arrayobj")
    watch.on_start(ours)
    watch.tick(104.0)  # compiling now: a line, even before the first kernel is done
    watch.on_start(numbas)
    watch.on_end(numbas)  # one of numba's helpers is not counted
    watch.on_end(ours)
    watch.tick(108.0)  # one compiled since the last line
    watch.tick(112.0)  # none since, and none compiling: silent
    watch.on_start(_Compile("partitioner.csx"))
    watch.on_end(_Compile("partitioner.csx"))
    watch.tick(116.0)
    assert said == ["compiled 0 kernels so far (4 s)", "compiled 1 kernels so far (8 s)",
                    "compiled 2 kernels so far (16 s)"]


def test_a_wait_for_another_process_ticks_as_compiling_and_counts_no_kernel() -> None:
    watch, said = compiling._Watch(), []
    watch.announce, watch.first = said.append, 100.0
    wait = _Compile("seraph.backends.cpu.push", kind=WAITING)
    watch.on_start(wait)
    watch.tick(104.0)
    watch.on_end(wait)
    watch.tick(108.0)
    assert said == ["compiled 0 kernels so far (4 s)"]
    assert watch.total > 0


def test_a_long_compile_is_never_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    # The ticking thread speaks while one compile goes on (here: until it has spoken).
    monkeypatch.setattr(compiling, "NOTE_AFTER", 0.0)
    watch, said = compiling._Watch(), []
    watch.announce, watch.every = said.append, 0.01
    kernel = _Compile("seraph.backends.cpu.push")
    watch.on_start(kernel)
    deadline = time.perf_counter() + 60
    while len(said) < 3 and time.perf_counter() < deadline:
        time.sleep(0.01)
    watch.on_end(kernel)
    assert said[0] == compiling.NOTE
    assert said[1].startswith("compiled 0 kernels so far (") and len(said) >= 3


def test_the_cli_ticks_only_on_a_terminal_or_with_v(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    from seraph import cli

    asked = []
    monkeypatch.setattr(compiling, "announce_compiling", lambda say, every: asked.append(every))
    for tty, flags in ((False, []), (True, []), (False, ["-v"])):
        monkeypatch.setattr(sys.stderr, "isatty", lambda tty=tty: tty)
        assert cli.main(["info", *flags, str(tmp_path / "none.zarr")]) == 2
    assert asked == [None, compiling.TICK_EVERY, compiling.TICK_EVERY]


def test_run_times_leave_compiling_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # Pretend every second of the run was spent compiling: the run's own time is then ~0.
    t0 = time.perf_counter()
    for module in (api, rounds):
        monkeypatch.setattr(module, "compile_seconds", lambda: time.perf_counter() - t0)
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 50, 300), rng.integers(0, 50, 300)
    graph = seraph.Graph.from_edges(src, dst, num_vertices=50)
    stats = seraph.bfs(graph, source=0, device="cpu").stats
    assert stats.compile_time > 0
    for figure in (stats.wall_time, stats.setup_time, stats.kernel_time, stats.sparse_time):
        assert abs(figure) < 0.05


def _generate(tmp_path: Path, cache: Path, name: str) -> str:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "seraph.cli", "generate", "grid", "--rows", "4", "--cols", "4",
         "-o", str(tmp_path / name)], env=env, capture_output=True, text=True, check=True)
    return done.stderr


def test_cli_says_it_compiles_once_then_not_again(tmp_path: Path) -> None:
    cold = _generate(tmp_path, tmp_path / "cache", "a.zarr")
    assert cold.count(compiling.NOTE) == 1
    warm = _generate(tmp_path, tmp_path / "cache", "b.zarr")
    assert compiling.NOTE not in warm


def test_work_beside_runs_in_another_process_and_ends_with_the_block(tmp_path, monkeypatch,
                                                                      capfd):
    (tmp_path / "beside_probe.py").write_text(
        "import os, sys, time\n"
        "def run(path):\n"
        "    print('not shown')\n"
        "    open(path, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    mark = tmp_path / "pid"
    with compiling.compiled_beside("beside_probe", "run", str(mark)):
        deadline = time.perf_counter() + 60
        while not (mark.exists() and mark.read_text()) and time.perf_counter() < deadline:
            time.sleep(0.05)
        pid = int(mark.read_text())
        assert pid != os.getpid()
        os.kill(pid, 0)  # running
    with pytest.raises(ProcessLookupError):  # and gone, without its minute's sleep
        os.kill(pid, 0)
    assert "not shown" not in capfd.readouterr().out


@pytest.mark.parametrize(("load", "cores", "idle"), [(1.2, 2, True), (1.6, 2, False),
                                                     (0.1, 1, False), (5.0, 8, True)])
def test_a_process_beside_needs_a_core_to_itself(monkeypatch, load, cores, idle):
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    assert compiling.a_core_is_idle() is idle
