"""A newcomer's first runs of ``seraph demo``, as docs/benchmarks/first-run.md reports them.

In a fresh virtual environment and an empty kernel cache (``NUMBA_CACHE_DIR``), one after
the other:

- cold: ``pip install .`` then ``seraph demo`` (numba compiles every kernel it calls);
- warm: ``seraph demo`` again;
- the other install: ``pip install -e .`` (the repository, not site-packages) and
  ``seraph demo``: with the cache keyed by content it compiles nothing;

and with ``--tests-first`` the README's order in a second empty cache: ``pip install -e
'.[test]'``, the test command (``pytest -q`` unless ``--tests`` says otherwise), then
``pip install .`` and ``seraph demo``.

``--profile`` instead runs ``seraph demo`` here, in this process (whatever cache
``NUMBA_CACHE_DIR`` names: empty it for a cold run), and lists the functions numba
compiled with the CPU time each took, its callees' compiles left out.

Each step prints its wall time, its CPU time (user + sys, of the demo and its children,
the process that compiles ahead on a fresh install among them: the figure the machine's
load changes least), the kernels numba compiled and saved (the cache's new data files: 0
means nothing was compiled), and the load average when it started.

    python scripts/bench_first_run.py [--tests-first] [--tests "pytest -q tests/test_cli.py"]
    NUMBA_CACHE_DIR=$(mktemp -d) python scripts/bench_first_run.py --profile
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _entries(env: dict[str, str]) -> int:
    """The kernels in the cache: numba saves each compiled signature to a data file."""
    return sum(1 for _ in Path(env["NUMBA_CACHE_DIR"]).rglob("*.nbc"))


def step(name: str, command: list[str], env: dict[str, str]) -> dict:
    """Runs ``command``; its wall and CPU seconds and the kernels numba saved to its cache
    (by all its processes)."""
    load, entries = os.getloadavg()[0], _entries(env)
    t, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t, _children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"{name}: {shlex.join(command)} failed:\n{done.stdout[-3000:]}"
                 f"{done.stderr[-3000:]}")
    saved = _entries(env) - entries
    print(f"{name:<34} wall {wall:6.1f} s  cpu {cpu:6.1f} s  cache entries written "
          f"{saved:>4}  load {load:.1f}", flush=True)
    return {"wall": wall, "cpu": cpu, "compiled": saved}


def profile(top: int = 40) -> None:
    """``seraph demo`` here, with each compiled function's exclusive CPU time."""
    from collections import Counter

    from numba.core import event

    from seraph.cli import main as seraph

    spent, compiles, stack = Counter(), Counter(), []  # stack: [start, nested compiles' CPU]

    class Compiles(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            stack.append([time.process_time(), 0.0])

        def on_end(self, ev: event.Event) -> None:
            start, nested = stack.pop()
            took = time.process_time() - start
            func = ev.data["dispatcher"].py_func
            name = f"{func.__module__}.{func.__qualname__}"
            spent[name] += took - nested
            compiles[name] += 1
            if stack:
                stack[-1][1] += took

    event.register("numba:compile", Compiles())
    cpu = time.process_time()
    seraph(["demo"])
    # This process's compiles only: on a fresh cache a second one compiles ahead for it.
    print(f"demo CPU {time.process_time() - cpu:.1f} s; {sum(compiles.values())} compiles "
          f"in {sum(spent.values()):.1f} s CPU; load {os.getloadavg()[0]:.1f}")
    for name, took in spent.most_common(top):
        print(f"{took:7.2f} s  {compiles[name]:2d}x  {name}")


def pip(venv: Path, *args: str) -> None:
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args],
                   cwd=ROOT, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests-first", action="store_true",
                        help="also the README's order: the tests (editable), then the demo")
    parser.add_argument("--tests", default="pytest -q -p no:randomly",
                        help="the test command of --tests-first")
    parser.add_argument("--profile", action="store_true",
                        help="seraph demo in this process, with each compile's CPU time")
    args = parser.parse_args()
    if args.profile:
        profile()
        return
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()
    print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}, commit {head}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, {platform.processor() or platform.machine()}")
    with tempfile.TemporaryDirectory(prefix="seraph-first-run-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        seraph = [str(venv / "bin" / "seraph"), "demo"]
        env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(tmp) / "cache"),
               "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
        env.pop("VIRTUAL_ENV", None)
        pip(venv, ".[test]")
        step("cold: pip install . && seraph demo", seraph, env)
        step("warm: seraph demo", seraph, env)
        pip(venv, "--no-deps", "-e", ".")
        step("editable install: seraph demo", seraph, env)
        if args.tests_first:
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "cache-tests-first")
            step(f"tests first: {args.tests}", [str(venv / "bin" / "python"), "-m",
                                                 *shlex.split(args.tests)], env)
            pip(venv, "--no-deps", "--force-reinstall", ".")
            step("then: pip install . && seraph demo", seraph, env)


if __name__ == "__main__":
    main()
