"""Shared helpers of the benchmark scripts (docs/benchmarks/): the machine description,
timing, cases run in fresh subprocesses with their own peak RSS, markdown tables, output.

A benchmark script that measures memory runs each case as ``python <script> --case NAME
--params JSON --result FILE`` through :func:`run_case`; the script hands its case functions
to :func:`dispatch_case` first thing in ``main``. The parent reaps the child with
``os.wait4``, whose resource usage is that one child's alone, so every case reports its own
peak RSS (``RUSAGE_CHILDREN`` would give the maximum over all children so far).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime
import io
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from seraph.units import format_size

GiB = 1 << 30
MiB = 1 << 20

#: Where the figures go; the scripts' defaults point here.
DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks"


# --------------------------------------------------------------------------- the machine
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except ImportError:
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=Path(__file__).parent, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, cwd=Path(__file__).parent)
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def machine(extra_modules: Sequence[str] = ()) -> dict:
    """What the figures were measured on, including how busy the machine was."""
    import numba

    versions = {m: _version(m) for m in ("numpy", "scipy", "numba", "zarr", *extra_modules)}
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "ram_bytes": _ram_bytes(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
        "git": _git_commit(),
        "load_average_start": list(os.getloadavg()),
    }


def finish_machine(info: dict) -> dict:
    """Adds the load average at the end: the machine is shared, so both ends matter."""
    info["load_average_end"] = list(os.getloadavg())
    return info


def machine_markdown(info: dict) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v)
    missing = [k for k, v in info["versions"].items() if not v]
    load = " / ".join(f"{x:.2f}" for x in info["load_average_start"])
    end = info.get("load_average_end")
    lines = [
        f"- Date: {info['date']} (git {info['git'] or 'unknown'})",
        f"- CPU: {info['cpu']}, {info['cores']} cores ({info['cores_usable']} usable, "
        f"{info['numba_threads']} numba threads), {format_size(info['ram_bytes'])} RAM",
        f"- OS: {info['os']}; Python {info['python']}; {versions}"
        + (f"; not installed: {', '.join(missing)}" if missing else ""),
        f"- Load average (1/5/15 min) at start: {load}"
        + (f"; at end: {' / '.join(f'{x:.2f}' for x in end)}" if end else "")
        + " (the machine is shared with other jobs)",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- graphs
#: The road-like grid: this share of its edges removed, its ids shuffled by this seed.
REMOVE_FRACTION = 0.1
SHUFFLE_SEED = 1


def in_memory(source, page_edges: int | None = None, order: str = "input"):
    """A symmetrized in-memory Graph of an edge source, partitioned as a store would be
    (pages of ``page_edges``, default the store's; vertices in ``order``, see
    partitioner.order)."""
    from partitioner.writer import DEFAULT_PAGE_EDGES, Options, build_in_memory
    from seraph import Graph

    options = Options(symmetrize=True, page_edges=page_edges or DEFAULT_PAGE_EDGES,
                      order=order)
    attrs, arrays = build_in_memory(source, options)
    return Graph(attrs, arrays=arrays)


def generated(kind: str, scale: int, weights: tuple[float, float] | None = None,
              page_edges: int | None = None, order: str = "input"):
    """A symmetrized RMAT or uniform graph of ``2^scale`` vertices, edge factor 16."""
    from partitioner import generators

    return in_memory(generators.GENERATORS[kind](scale, 16, seed=1, weights=weights),
                     page_edges, order)


def shuffled_grid(side: int, weights: tuple[float, float] | None = None,
                  page_edges: int | None = None, order: str = "input",
                  remove_fraction: float = REMOVE_FRACTION):
    """A ``side x side`` grid with ``remove_fraction`` of its edges removed and its ids
    permuted by a fixed permutation, as real road networks' are (``order``: the graph's
    vertex order, see partitioner.order)."""
    from partitioner import generators
    from seraph import Graph

    source = generators.grid(side, side, remove_fraction=remove_fraction, seed=1,
                             weights=weights)
    chunks = list(source.chunks())
    src = np.concatenate([c.src for c in chunks])
    dst = np.concatenate([c.dst for c in chunks])
    weight = np.concatenate([c.weight for c in chunks]) if weights else None
    perm = np.random.default_rng(SHUFFLE_SEED).permutation(side * side)
    return Graph.from_edges(perm[src], perm[dst], weight, num_vertices=side * side,
                            symmetrize=True, page_edges=page_edges, order=order)


# --------------------------------------------------------------------------- checks
class Checks:
    """A cell's checks: every timed call's answer verified by its algorithm's verifier
    (:func:`seraph.validate.verify`, outside the timed region) and its device peak set
    beside its budget. A wrong answer or a peak over budget fails the cell."""

    def __init__(self) -> None:
        self.checked = 0
        self.seconds = 0.0
        self.wrong: list[str] = []
        self.over_budget: list[str] = []
        self.peaks: list[tuple[int | None, int | None]] = []

    def call(self, graph, algorithm: str, source: int | None, result,
             budget: int | None, **options) -> None:
        """Checks one call's ``result`` (``source`` an input id, None for CC), run under
        ``budget`` bytes of device memory (None: no cap); ``options`` are the algorithm's
        own of the call (PageRank's tolerance, ...)."""
        from seraph.algorithms import get
        from seraph.validate import verify

        start = time.perf_counter()
        s = graph.vertex_index(source) if get(algorithm).needs_source else None
        verdict = verify(graph, algorithm, result.values, s,
                         getattr(result, "predecessors", None), **options)
        self.seconds += time.perf_counter() - start
        self.checked += 1
        where = f"{algorithm} from {source}" if source is not None else algorithm
        if verdict:
            self.wrong.append(f"{where}: {verdict}")
        peak = result.stats.peak_device_memory or None  # the CPU backend reports none
        self.peaks.append((peak, budget))
        if peak is not None and budget is not None and peak > budget:
            self.over_budget.append(f"{where}: device peak {size(peak)} over the budget "
                                    f"{size(budget)}")

    def to_dict(self, calls: int) -> dict:
        """The checks of a cell that made ``calls`` calls (counted by the cell itself):
        ``line`` says "checked N of M"; ``ok`` needs every call checked and right, within
        its budget."""
        problems = self.wrong + self.over_budget
        if self.checked != calls:
            problems.append(f"{calls - self.checked} of {calls} calls not checked")
        line = f"checked {self.checked} of {calls}"
        if self.wrong:
            line += f", {len(self.wrong)} WRONG"
        if self.over_budget:
            line += f", {len(self.over_budget)} OVER BUDGET"
        peaks = [p for p, _ in self.peaks if p is not None]
        return {"checked": self.checked, "calls": calls, "ok": not problems, "line": line,
                "problems": problems, "seconds": self.seconds,
                "peaks": [{"peak": p, "budget": b} for p, b in self.peaks],
                "peak_over_budget": (f"{size(max(peaks) if peaks else None)} / "
                                     f"{size(max((b for _, b in self.peaks if b), default=None))}")}


# --------------------------------------------------------------------------- timing
def best_time(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The fastest of ``repeat`` calls, and the last call's result.

    The minimum, not the mean: on a shared machine other jobs only ever add time, so the
    fastest run is the best estimate of the code's own cost.
    """
    best, result = float("inf"), None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    return best_time(fn, 1)


# --------------------------------------------------------------------------- subprocess cases
def rss_now() -> dict:
    """Current and peak resident set size of this process, from /proc (Linux)."""
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key = "rss" if line.startswith("VmRSS") else "hwm"
                    out[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return out


def run_case(script: str | Path, case: str, params: dict, *, env: dict | None = None,
             profile: bool = False) -> dict:
    """Runs one case of ``script`` in a fresh interpreter; its result plus its peak RSS.

    The child's stdout and stderr pass through. A failing case returns ``{"error": ...}``
    rather than raising, so one bad case does not lose a whole run.
    """
    with tempfile.TemporaryDirectory(prefix="bench-case-") as tmp:
        result_path = Path(tmp) / "result.json"
        argv = [sys.executable, str(script), "--case", case, "--params", json.dumps(params),
                "--result", str(result_path)] + (["--profile"] if profile else [])
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        elapsed = time.perf_counter() - start
        if proc.returncode != 0 or not result_path.exists():
            return {"error": f"case {case} exited with status {proc.returncode}",
                    "process_seconds": elapsed}
        result = json.loads(result_path.read_text())
    result["peak_rss"] = usage.ru_maxrss * 1024  # kilobytes on Linux
    result["process_seconds"] = elapsed
    return result


def dispatch_case(cases: dict[str, Callable[..., dict]], argv: Sequence[str] | None = None
                  ) -> bool:
    """In a child started by :func:`run_case`: runs the case and writes its result.

    Returns False when ``argv`` is not a case invocation (the script then runs normally).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--case" not in argv:
        return False
    p = argparse.ArgumentParser()
    p.add_argument("--case", required=True, choices=sorted(cases))
    p.add_argument("--params", required=True)
    p.add_argument("--result", required=True)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args(argv)
    quiet()
    params = json.loads(args.params)
    if args.profile:
        profiler = cProfile.Profile()
        result = profiler.runcall(cases[args.case], **params)
        result["profile"] = profile_summary(profiler)
    else:
        result = cases[args.case](**params)
    Path(args.result).write_text(json.dumps(result))
    return True


def quiet() -> None:
    """No progress bars: on a terminal they would cost time inside the timed calls."""
    from seraph import progress

    progress.set_verbosity(0)


@contextlib.contextmanager
def busy_beside(loaded: bool = True) -> Iterator[None]:
    """Within (where ``loaded``): one other process spinning on a core until the block ends,
    as another program on a developer's laptop would."""
    if not loaded:
        yield
        return
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        busy.kill()
        busy.wait()


def profile_summary(profiler: cProfile.Profile, top: int = 25) -> str:
    """The functions with the most cumulative time (numba kernels show as one call each)."""
    buf = io.StringIO()
    pstats.Stats(profiler, stream=buf).sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


def fresh_numba_cache() -> tempfile.TemporaryDirectory:
    """An empty numba cache directory: a child given it compiles every kernel from scratch,
    which is how the one-off compile time is measured (pass it as ``NUMBA_CACHE_DIR``)."""
    return tempfile.TemporaryDirectory(prefix="bench-numba-cache-")


# --------------------------------------------------------------------------- output
def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]],
                   right: Sequence[bool] | None = None) -> str:
    """A GitHub markdown table; ``right`` marks the columns to right-align (numbers)."""
    right = right or [False] * len(headers)
    cells = [[str(c) for c in row] for row in rows]
    rule = ["---:" if r else "---" for r in right]
    return "\n".join("| " + " | ".join(row) + " |" for row in [list(headers), rule, *cells])


def seconds(x: float | None) -> str:
    """Seconds for a table: "—" when not measured."""
    if x is None:
        return "—"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def case_seconds(result: dict | None) -> str:
    """A :func:`run_case` result's time for a table, or why there is none."""
    if result and "error" in result:
        return "**failed**"
    return seconds(None if not result else result.get("seconds"))


def ratio(x: float | None, y: float | None) -> str:
    if x is None or y is None or y == 0:
        return "—"
    return f"{x / y:.2f}x"


def size(x: float | None) -> str:
    return "—" if x is None else format_size(x)


#: Everything from this line on in a markdown report is written by hand (the analysis of
#: where the time goes) and survives when the script rewrites the figures above it.
ANALYSIS_MARKER = "<!-- analysis: written by hand, kept when the benchmark is re-run -->"


def write_outputs(payload: dict, json_out: str | Path | None, markdown: str,
                  md_out: str | Path | None) -> None:
    """Writes the JSON and markdown results (either may be None or '' to skip it)."""
    if json_out:
        Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(json_out).write_text(json.dumps(payload, indent=1, default=str) + "\n")
    print(markdown)
    if not md_out:
        return
    md_out = Path(md_out)
    analysis = f"{ANALYSIS_MARKER}\n\n## Analysis\n\n(not written yet)\n"
    if md_out.exists() and ANALYSIS_MARKER in (old := md_out.read_text()):
        analysis = old[old.index(ANALYSIS_MARKER):]
    md_out.parent.mkdir(parents=True, exist_ok=True)
    md_out.write_text(markdown.rstrip("\n") + "\n\n" + analysis)


def markdown_path(args: argparse.Namespace, md_default: Path) -> Path | None:
    """Where the report goes: ``--md-out``, else the docs unless ``--quick`` (a smoke test
    must not overwrite the recorded figures)."""
    if args.md_out is not None:
        return Path(args.md_out) if args.md_out else None
    return None if args.quick else md_default


def compile_line(compile_result: dict, calls: str) -> str:
    """The report's sentence on the one-off numba compile: ``compile_result`` holds the
    "cold" (empty cache) and "cached" cases of the ``calls`` described."""
    cold, warm = compile_result["cold"], compile_result["cached"]
    if "error" in cold or "error" in warm:
        return "Compile time: not measured (a compile case failed)."
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in cold["parts"].items())
    return (f"One-off numba compile (empty cache; {calls}): {cold['seconds']:.1f} s "
            f"({parts}); with the cache filled the same calls take {warm['seconds']:.1f} s. "
            "Neither is in the timings below.")


def run_and_report(script: str, args: argparse.Namespace, argv: Sequence[str] | None,
                   modules: Sequence[str], run: Callable[[argparse.Namespace, Path], dict],
                   report: Callable[[dict, dict, str], str], md_default: Path) -> int:
    """The shared body of a benchmark's ``main``: ``run(args, workdir)`` gives the results,
    ``report(results, machine, command)`` their markdown; both are written out."""
    quiet()
    command = f"python scripts/{script} " + " ".join(argv if argv is not None else sys.argv[1:])
    info = machine(modules)
    with workdir(args.workdir) as work:
        results = run(args, work)
    finish_machine(info)
    write_outputs({"machine": info, **results}, args.json_out,
                  report(results, info, command.strip()), markdown_path(args, md_default))
    return 0


def run_cells(script: str, args: argparse.Namespace, argv: Sequence[str] | None,
              cells_of: Callable[[], list[dict]], report: Callable[[list, dict, str], str],
              md_out: str | Path | None) -> int:
    """The shared body of a ``main`` whose cells each check every call (``checks``, a
    :meth:`Checks.to_dict`): ``cells_of()`` runs them between the machine's snapshots,
    and the JSON (machine, command, args, cells) and ``report(cells, machine, command)``
    are written out. Returns 0 when every cell's checks passed, else 1 (after saying
    which failed)."""
    quiet()
    info = machine(["cupy"] if args.device == "cuda" else [])
    cells = cells_of()
    finish_machine(info)
    command = (f"python scripts/{script} "
               + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    write_outputs({"machine": info, "command": command, "args": vars(args), "cells": cells},
                  args.json_out, report(cells, info, command), md_out)
    failed = [c for c in cells if not c["checks"]["ok"]]
    for c in failed:
        for problem in c["checks"]["problems"]:
            print(f"{script}: {problem}", file=sys.stderr)
    return 1 if failed else 0


@contextlib.contextmanager
def workdir(path: str | None) -> Iterator[Path]:
    """The given directory (created, kept), or a temporary one removed afterwards."""
    if path:
        Path(path).mkdir(parents=True, exist_ok=True)
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="seraph-bench-") as tmp:
        yield Path(tmp)


def common_arguments(p: argparse.ArgumentParser, md_default: Path) -> None:
    """The options every benchmark takes (see :func:`markdown_path` for ``--md-out``)."""
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    p.add_argument("--json-out", default=None, help="write the raw figures here as JSON")
    p.add_argument("--md-out", default=None,
                   help=f"markdown report (default {md_default}, none with --quick)")
    p.add_argument("--workdir", default=None,
                   help="where inputs and stores go (default: a temporary directory); files "
                        "already there are reused")
