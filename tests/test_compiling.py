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
