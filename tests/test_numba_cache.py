"""numba's cache lives in the per-user cache directory (or NUMBA_CACHE_DIR), never in the
package: cache files left in site-packages break a later editable install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seraph.numba_cache import user_cache_dir

# Imports every module of both packages and reports where each cached kernel keeps its
# cache, and where the packages live.
_REPORT = """
import importlib, json, pkgutil, sys
import partitioner, seraph
from numba.core.dispatcher import Dispatcher
paths, roots = [], []
for pkg in (seraph, partitioner):
    roots.append(pkg.__path__[0])
    for mod in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        try:
            module = importlib.import_module(mod.name)
        except ImportError:  # an optional extra (cupy, matplotlib) that is not installed
            continue
        for obj in vars(module).values():
            if isinstance(obj, Dispatcher) and obj._cache.__class__.__name__ != "NullCache":
                paths.append(obj._cache._cache_path)
print(json.dumps({"paths": paths, "roots": roots}))
"""


def _cache_paths(env: dict[str, str]) -> tuple[list[str], list[str]]:
    out = subprocess.run([sys.executable, "-c", _REPORT], env=env, check=True,
                         capture_output=True, text=True).stdout
    report = json.loads(out.splitlines()[-1])
    return report["paths"], report["roots"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(extra)
    return env


def test_kernels_cache_in_the_user_cache(tmp_path: Path) -> None:
    paths, roots = _cache_paths(_env(XDG_CACHE_HOME=str(tmp_path)))
    assert len(paths) > 20  # the kernels of both packages were found
    for path in paths:
        assert Path(path).is_relative_to(tmp_path / "seraph"), path
        assert not any(Path(path).is_relative_to(root) for root in roots), path


def test_numba_cache_dir_overrides(tmp_path: Path) -> None:
    paths, _ = _cache_paths(_env(NUMBA_CACHE_DIR=str(tmp_path / "mine"),
                                 XDG_CACHE_HOME=str(tmp_path / "xdg")))
    assert paths and all(Path(p).is_relative_to(tmp_path / "mine") for p in paths)


@pytest.mark.parametrize(("platform", "env", "expected"), [
    ("linux", {"XDG_CACHE_HOME": "/x/cache"}, "/x/cache/seraph"),
    ("linux", {}, "HOME/.cache/seraph"),
    ("darwin", {}, "HOME/Library/Caches/seraph"),
    ("win32", {"LOCALAPPDATA": "/x/local"}, "/x/local/seraph/Cache"),
])
def test_user_cache_dir_per_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     platform: str, env: dict[str, str], expected: str) -> None:
    for name in ("XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(sys, "platform", platform)
    assert user_cache_dir() == Path(expected.replace("HOME", str(tmp_path)))


# Calls one kernel and prints how many of our kernels numba compiled (rather than loaded).
_CALL = """
import numpy as np
from numba.core import event
import seraph.paths
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        if ev.data["dispatcher"].py_func.__module__.startswith("seraph."):
            compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
indptr, indices = np.array([0, 1, 2, 2]), np.array([1, 2])
seraph.paths._tight_walk(indptr, indices, np.zeros(0, np.float32),
                         np.array([0, 1, 2], np.int32), 0, 0)
print(seraph.paths.__file__, len(compiled))
"""


def test_installs_at_two_places_share_the_cache(tmp_path: Path) -> None:
    # An editable install and a normal one hold the same sources at different paths; an
    # edit to a source file makes its kernels compile again.
    import shutil

    import seraph
    compiled = []
    for place, edit in (("editable", ""), ("site-packages", ""), ("site-packages", "\n#\n")):
        if not (tmp_path / place).exists():
            shutil.copytree(Path(seraph.__file__).parent, tmp_path / place / "seraph",
                            ignore=shutil.ignore_patterns("__pycache__"))
        with open(tmp_path / place / "seraph" / "paths.py", "a") as f:
            f.write(edit)
        env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(tmp_path / place))
        out = subprocess.run([sys.executable, "-c", _CALL], env=env, check=True,
                             capture_output=True, text=True, cwd=tmp_path).stdout.split()
        assert Path(out[0]).is_relative_to(tmp_path / place)
        compiled.append(int(out[1]))
    assert compiled == [1, 0, 1]


def test_a_kernel_compiling_in_another_process_is_waited_for_not_compiled_again(tmp_path):
    # Two processes reach one kernel on a fresh cache at once: one compiles it, the other
    # waits for it and loads it.
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.Popen([sys.executable, "-c", _CALL], env=env, stdout=subprocess.PIPE,
                             text=True, cwd=tmp_path) for _ in range(2)]
    compiled = sorted(int(run.communicate()[0].split()[1]) for run in runs)
    assert [run.returncode for run in runs] == [0, 0]
    assert compiled == [0, 1]
