"""The README runs as written: its bash and Python blocks, in order, in a fresh folder, on
the stores the README itself creates (at tiny sizes)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from seraph import cli

README = Path(__file__).resolve().parents[1] / "README.md"

#: The README's sizes, and the tiny ones the test runs instead.
TINY = {"--scale 22": "--scale 8", "--rows 1024 --cols 1024": "--rows 16 --cols 16",
        "seraph demo": "seraph demo --scale 6",
        # Several workers need a page each: a small graph in small pages.
        "--scale 20": "--scale 9", "--page-edges 1048576 -o rmat20": "--page-edges 1024 -o rmat20"}

#: Commands not run here, and why: a line is skipped if it starts with one of these.
SKIPPED = {
    "python3 -m venv": "installing: CI runs the first two blocks as written (.ci/run)",
    ". .venv/bin/activate": "installing",
    "pip install": "installing",
    "pytest": "the test suite itself",
    "ruff": "the linter: CI's",
    "scripts/wheelhouse.sh": "downloads wheels from the package index",
    "python scripts/": "benchmarks and tools, minutes each (some need a GPU)",
    "bash scripts/": "Nsight Compute on a GPU host",
    "seraph demo --device cuda": "needs a GPU",
    "seraph run bfs rmat20.zarr --gpus": "needs GPUs",
    "mpiexec -f hosts": "needs a host file of several hosts",
    # Inputs the user brings: their formats are tested in test_readers.py.
    "seraph preprocess soc-LiveJournal1.txt.gz": "SNAP's LiveJournal, not shipped",
    "seraph preprocess road.mtx": "a user's Matrix Market file, not shipped",
    "seraph preprocess edges.el": "a user's edge list, not shipped",
}


def blocks(text: str) -> list[tuple[str, str]]:
    """The README's fenced bash and python blocks, in order."""
    return re.findall(r"^```(bash|python)\n(.*?)^```", text, flags=re.S | re.M)


def commands(block: str) -> list[str]:
    """A bash block's commands: one a line, ``&&`` chains split, comments dropped."""
    out = []
    for line in block.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line:
            out += [part.strip() for part in line.split(" && ")]
    return out


def tiny(text: str) -> str:
    for size, small in TINY.items():
        text = text.replace(size, small)
    return text


def skipped(command: str) -> bool:
    return any(command.startswith(prefix) for prefix in SKIPPED)


def run_command(command: str, cwd: Path) -> None:
    words = shlex.split(command)
    if words[0] == "echo":  # the one shell line: writes a file
        (text, _, target) = words[1:]
        (cwd / target).write_text(text + "\n")
        return
    assert words[0] == "seraph", f"README: no way here to run {command!r}; skip it or run it"
    assert cli.main(words[1:]) == 0, command


def test_readme_blocks_are_found():
    found = blocks(README.read_text())
    assert [kind for kind, _ in found].count("python") == 1
    lines = [c for kind, b in found if kind == "bash" for c in commands(b)]
    assert "seraph demo" in lines and all(any(c.startswith(p) for c in lines) for p in SKIPPED)
    assert [c for c in lines if not c.startswith("seraph") and not skipped(c)] == [
        "echo 'schedule = \"reentry\"' > run.toml"]


def test_readme_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    for kind, block in blocks(README.read_text()):
        if kind == "python":
            exec(compile(tiny(block), str(README), "exec"), {})
            continue
        for command in commands(block):
            if not skipped(command):
                run_command(tiny(command), tmp_path)
    assert {"rmat22.zarr", "grid.zarr", "dist.npy", "t.json", "timeline.png",
            "levels.npz"} <= {p.name for p in tmp_path.iterdir()}
