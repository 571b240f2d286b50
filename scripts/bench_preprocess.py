"""Preprocessing throughput and memory: text edge lists and generators into stores, beside a
pyarrow parse plus an in-memory scipy CSR and CSC build of the same file
(docs/benchmarks/preprocess-cpu.md).

    python scripts/bench_preprocess.py [--quick] [--json-out FILE] [--md-out FILE]

Targets (2 cores, 24 GiB): text to store within 2.0x of the reference (aim 1.5x); generator
to store at least 20 M edges/s; peak RSS under ``--memory`` + 1 GiB for an input four times
larger than ``--memory``.

Every case runs in a fresh interpreter, so its peak RSS is its own. Each child first runs the
same case on a tiny input, so numba's compile (or cache load) stays out of the timing; the
one-off compile time is measured once, in a child given an empty numba cache.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import benchlib
import numpy as np
from benchlib import GiB, MiB
from numba import njit

TEXT_RATIO_TARGET, TEXT_RATIO_AIM = 2.0, 1.5
GENERATOR_RATE_TARGET = 20e6
OUT_OF_CORE_SLACK = 1 * GiB
#: Out-of-core runs get a budget this many times smaller than their input.
OUT_OF_CORE_FACTOR = 4
MARKDOWN = benchlib.DOCS / "preprocess-cpu.md"
TINY_SCALE = 10  # warm-up inputs: enough edges to touch every kernel, in milliseconds


# --------------------------------------------------------------------------- inputs
@njit(cache=True, inline="always")
def _put_int(out, pos, x):
    """Writes the decimal digits of a non-negative int at ``out[pos:]``; returns the end."""
    end, rest = pos + 1, x // 10
    while rest:
        end, rest = end + 1, rest // 10
    for i in range(end - 1, pos - 1, -1):
        out[i] = 48 + x % 10
        x //= 10
    return end


@njit(cache=True)
def _format_edges(src, dst, out):
    """``src[i] dst[i]\\n`` lines into ``out``; returns the bytes written."""
    pos = 0
    for i in range(len(src)):
        pos = _put_int(out, pos, src[i])
        out[pos] = 32
        pos = _put_int(out, pos + 1, dst[i])
        out[pos] = 10
        pos += 1
    return pos


def write_edge_list(path: Path, scale: int) -> int:
    """A SNAP-style edge list (``src dst`` per line, one space, no comments) of the RMAT
    graph at ``scale``; returns its edge count. An existing file is reused."""
    from partitioner.generators import rmat

    source = rmat(scale, 16, seed=1)
    if not path.exists():
        partial = path.with_suffix(".partial")
        with open(partial, "wb") as f:
            for chunk in source.chunks():
                buf = np.empty(42 * len(chunk), np.uint8)  # 20 digits, a space, 20, newline
                f.write(buf[: _format_edges(chunk.src, chunk.dst, buf)].data)
        partial.rename(path)
    return source.num_edges_hint


# --------------------------------------------------------------------------- cases (children)
def _store_facts(output: str) -> dict:
    from seraph.store import Store

    a = Store(output).attrs
    return {"store_edges": a.num_edges, "num_vertices": a.num_vertices,
            "num_pages": a.num_pages}


def case_text(path: str, tiny: str, output: str, memory: int | None) -> dict:
    """``preprocess`` of an edge list into a store (directed: CSC and CSR)."""
    from partitioner.preprocess import preprocess

    preprocess(tiny, output + ".warm", memory=memory, force=True)
    shutil.rmtree(output + ".warm")
    before = benchlib.rss_now()
    seconds, _ = benchlib.timed(lambda: preprocess(path, output, memory=memory, force=True))
    return {"seconds": seconds, "rss_before": before.get("rss"), **_store_facts(output)}


def _reference(path: str) -> dict:
    """pyarrow parse plus scipy CSR and CSC builds; the time of each step."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import scipy.sparse as sp

    def parse() -> tuple[np.ndarray, np.ndarray]:
        table = pacsv.read_csv(
            path, read_options=pacsv.ReadOptions(autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(delimiter=" "),
            convert_options=pacsv.ConvertOptions(column_types={"f0": pa.int64(),
                                                               "f1": pa.int64()}))
        return table.column(0).to_numpy(), table.column(1).to_numpy()

    parse_s, (src, dst) = benchlib.timed(parse)
    n = int(max(src.max(), dst.max())) + 1
    coo_s, coo = benchlib.timed(lambda: sp.coo_matrix(
        (np.ones(len(src), np.float32), (src, dst)), shape=(n, n)))
    csr_s, _ = benchlib.timed(coo.tocsr)
    csc_s, _ = benchlib.timed(coo.tocsc)
    return {"parse_seconds": parse_s, "coo_seconds": coo_s, "csr_seconds": csr_s,
            "csc_seconds": csc_s, "seconds": parse_s + coo_s + csr_s + csc_s}


def case_reference(path: str, tiny: str) -> dict:
    _reference(tiny)
    before = benchlib.rss_now()
    return {**_reference(path), "rss_before": before.get("rss")}


def _generator(kind: str, scale: int, weighted: bool):
    from partitioner import generators

    weights = generators.gap_weights() if weighted else None
    if kind == "grid":
        return generators.grid(1 << (scale // 2), 1 << (scale - scale // 2), weights=weights)
    return generators.GENERATORS[kind](scale, 16, seed=1, weights=weights)


def case_generated(kind: str, scale: int, output: str, weighted: bool, symmetrize: bool,
                   memory: int | None) -> dict:
    """``write_store`` of a generator (the input edges are made on the fly, never stored)."""
    from partitioner.writer import Options, write_store

    options = Options(symmetrize=symmetrize, memory=memory)
    write_store(_generator(kind, TINY_SCALE, weighted), output + ".warm", options, force=True)
    shutil.rmtree(output + ".warm")
    source = _generator(kind, scale, weighted)
    before = benchlib.rss_now()
    seconds, _ = benchlib.timed(lambda: write_store(source, output, options, force=True))
    return {"seconds": seconds, "input_edges": source.num_edges_hint,
            "rss_before": before.get("rss"), **_store_facts(output)}


def case_compile(tiny: str, output: str) -> dict:
    """First calls of every preprocessing path: compile time with an empty numba cache,
    cache-load time with a warm one."""
    from partitioner.preprocess import preprocess
    from partitioner.writer import Options, write_store

    times = {}
    times["text"], _ = benchlib.timed(lambda: preprocess(tiny, output, force=True))
    for kind in ("rmat", "uniform", "grid"):
        times[kind], _ = benchlib.timed(lambda k=kind: write_store(
            _generator(k, TINY_SCALE, True), output, Options(symmetrize=True), force=True))
    shutil.rmtree(output)
    return {"seconds": sum(times.values()), "parts": times}


CASES = {"text": case_text, "reference": case_reference, "generated": case_generated,
         "compile": case_compile}


# --------------------------------------------------------------------------- the parent
def plan(quick: bool) -> dict:
    if quick:
        return {"text": [14, 16], "generated": [("rmat", 14), ("rmat", 16), ("uniform", 16),
                                                ("grid", 16)],
                "engine_input": ("rmat", 16), "out_of_core_text": 16,
                "out_of_core_generated": ("rmat", 16)}
    return {"text": [20, 22], "generated": [("rmat", 20), ("rmat", 22), ("uniform", 20),
                                            ("uniform", 22), ("grid", 22), ("grid", 24)],
            "engine_input": ("rmat", 20), "out_of_core_text": 22,
            "out_of_core_generated": ("rmat", 22)}


def _case(name: str, params: dict, profile: bool, output: str | None = None, **kw) -> dict:
    script = Path(__file__).resolve()
    print(f"[bench_preprocess] {name} {params}", file=sys.stderr, flush=True)
    result = benchlib.run_case(script, name, params, profile=profile, **kw)
    if output:
        shutil.rmtree(output, ignore_errors=True)
    if "error" in result:
        print(f"[bench_preprocess]   FAILED: {result['error']}", file=sys.stderr)
    else:
        print(f"[bench_preprocess]   {result['seconds']:.2f} s, peak RSS "
              f"{benchlib.size(result['peak_rss'])}", file=sys.stderr)
    return result


def _has_pyarrow() -> bool:
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def run(args: argparse.Namespace, work: Path) -> dict:
    sizes = plan(args.quick)
    tiny = work / f"rmat{TINY_SCALE}.txt"
    write_edge_list(tiny, TINY_SCALE)
    store = str(work / "bench.zarr")
    out: dict = {"quick": args.quick, "text": [], "generated": [], "out_of_core": []}

    with benchlib.fresh_numba_cache() as cache:
        cold = _case("compile", {"tiny": str(tiny), "output": store}, False,
                     env={"NUMBA_CACHE_DIR": cache})
    warm = _case("compile", {"tiny": str(tiny), "output": store}, False)
    out["compile"] = {"cold": cold, "cached": warm}

    pyarrow = _has_pyarrow()
    for scale in sizes["text"]:
        path = work / f"rmat{scale}.txt"
        t = time.perf_counter()
        edges = write_edge_list(path, scale)
        row = {"scale": scale, "path": str(path), "edges": edges,
               "file_bytes": path.stat().st_size, "write_seconds": time.perf_counter() - t}
        row["seraph"] = _case("text", {"path": str(path), "tiny": str(tiny), "output": store,
                                       "memory": None}, args.profile, store)
        row["reference"] = (_case("reference", {"path": str(path), "tiny": str(tiny)}, False)
                            if pyarrow else None)
        out["text"].append(row)

    kind, scale = sizes["engine_input"]
    generated = [(k, s, False, False) for k, s in sizes["generated"]] + [(kind, scale, True,
                                                                          True)]
    for kind, scale, weighted, symmetrize in generated:
        result = _case("generated", {"kind": kind, "scale": scale, "output": store,
                                     "weighted": weighted, "symmetrize": symmetrize,
                                     "memory": None}, args.profile, store)
        out["generated"].append({"kind": kind, "scale": scale, "weighted": weighted,
                                 "symmetrize": symmetrize, **result})

    # Out of core: a budget a quarter of the input (the text file; for a generator, its
    # int64 (src, dst) pairs).
    scale = sizes["out_of_core_text"]
    path = work / f"rmat{scale}.txt"
    write_edge_list(path, scale)
    memory = max(MiB, path.stat().st_size // OUT_OF_CORE_FACTOR // MiB * MiB)
    result = _case("text", {"path": str(path), "tiny": str(tiny), "output": store,
                            "memory": memory}, args.profile, store)
    out["out_of_core"].append({"input": f"text RMAT scale {scale}", "edges": 16 << scale,
                               "input_bytes": path.stat().st_size, "memory": memory, **result})
    kind, scale = sizes["out_of_core_generated"]
    input_bytes = 16 * (16 << scale)
    memory = max(MiB, input_bytes // OUT_OF_CORE_FACTOR // MiB * MiB)
    result = _case("generated", {"kind": kind, "scale": scale, "output": store,
                                 "weighted": False, "symmetrize": False, "memory": memory},
                   args.profile, store)
    out["out_of_core"].append({"input": f"generated {kind} scale {scale}",
                               "edges": 16 << scale, "input_bytes": input_bytes,
                               "memory": memory, **result})
    out["pyarrow"] = pyarrow
    return out


# --------------------------------------------------------------------------- the report
def _rate(edges: int, seconds: float | None) -> str:
    return "—" if not seconds else f"{edges / seconds / 1e6:.2f}"


def _verdict(ok: bool) -> str:
    return "meets" if ok else "**misses**"


def text_table(rows: list[dict], pyarrow: bool) -> str:
    headers = ["input", "edges", "file", "seraph s", "M edges/s", "peak RSS", "reference s",
               "(parse / COO / CSR / CSC)", "ref M edges/s", "ref peak RSS", "seraph / ref",
               f"target ≤ {TEXT_RATIO_TARGET}x"]
    body = []
    for r in rows:
        s, ref = r["seraph"], r["reference"] or {}
        st, rt = s.get("seconds"), ref.get("seconds")
        parts = ("—" if not ref.get("seconds") else " / ".join(
            benchlib.seconds(ref[k]) for k in ("parse_seconds", "coo_seconds", "csr_seconds",
                                               "csc_seconds")))
        body.append([f"RMAT scale {r['scale']}", f"{r['edges']:,}",
                     benchlib.size(r["file_bytes"]), benchlib.case_seconds(s),
                     _rate(r["edges"], st), benchlib.size(s.get("peak_rss")),
                     benchlib.case_seconds(r["reference"]), parts, _rate(r["edges"], rt),
                     benchlib.size(ref.get("peak_rss")), benchlib.ratio(st, rt),
                     "—" if not (st and rt) else _verdict(st / rt <= TEXT_RATIO_TARGET)])
    table = benchlib.markdown_table(headers, body, [False] + [True] * 10 + [False])
    if not pyarrow:
        table += "\n\npyarrow is not installed: the reference columns are empty."
    return table


def generated_table(rows: list[dict]) -> str:
    headers = ["generator", "options", "input edges", "store edges", "seconds", "M edges/s",
               "peak RSS", f"target ≥ {GENERATOR_RATE_TARGET / 1e6:.0f} M/s"]
    body = []
    for r in rows:
        name = (f"grid {1 << (r['scale'] // 2)}x{1 << (r['scale'] - r['scale'] // 2)}"
                if r["kind"] == "grid" else f"{r['kind']} scale {r['scale']}")
        opts = ", ".join(o for o, on in (("weighted 1..255", r["weighted"]),
                                         ("symmetrize", r["symmetrize"])) if on) or "—"
        sec = r.get("seconds")
        edges = r.get("input_edges", 0)
        body.append([name, opts, f"{edges:,}", f"{r.get('store_edges', 0):,}",
                     benchlib.case_seconds(r), _rate(edges, sec),
                     benchlib.size(r.get("peak_rss")),
                     "—" if not sec else _verdict(edges / sec >= GENERATOR_RATE_TARGET)])
    return benchlib.markdown_table(headers, body, [False, False] + [True] * 5 + [False])


def out_of_core_table(rows: list[dict]) -> str:
    headers = ["input", "input size", "--memory", "seconds", "M edges/s", "peak RSS",
               "limit (memory + 1 GiB)", "target"]
    body = []
    for r in rows:
        limit = r["memory"] + OUT_OF_CORE_SLACK
        peak = r.get("peak_rss")
        body.append([r["input"], benchlib.size(r["input_bytes"]), benchlib.size(r["memory"]),
                     benchlib.case_seconds(r), _rate(r["edges"], r.get("seconds")),
                     benchlib.size(peak), benchlib.size(limit),
                     "—" if peak is None else _verdict(peak <= limit)])
    return benchlib.markdown_table(headers, body, [False] + [True] * 6 + [False])


def report(results: dict, info: dict, command: str) -> str:
    baseline = [r["seraph"].get("rss_before") for r in results["text"]]
    baseline = next((b for b in baseline if b), None)
    return "\n".join([
        "# Preprocessing on the CPU",
        "",
        f"Generated by `{command}`; raw figures in the JSON beside it when `--json-out` is "
        "given.",
        "",
        benchlib.machine_markdown(info),
        "",
        "Each case runs in a fresh interpreter after a warm-up on a tiny input of the same "
        "kind; *peak RSS* is that process's maximum resident set (`os.wait4`), interpreter and "
        "imports included"
        + (f" (about {benchlib.size(baseline)} before the timed call)" if baseline else "")
        + ". Stores go to the local disk and are deleted after each case.",
        "",
        benchlib.compile_line(results["compile"], "first tiny text preprocess then each "
                              "generator, weighted and symmetrized"),
        "",
        "## Text edge list to store",
        "",
        "A SNAP-style edge list (`src dst`, one space) of a directed RMAT graph (edge factor "
        "16, duplicates and self-loops left in), preprocessed with the defaults (directed, so "
        "both CSC and CSR are built; `--memory` is a quarter of RAM). The reference is "
        "`pyarrow.csv.read_csv` (int64 columns) plus `scipy.sparse.coo_matrix` with float32 "
        "ones and `.tocsr()` and `.tocsc()`, all in memory. M edges/s counts input lines.",
        "",
        text_table(results["text"], results["pyarrow"]),
        "",
        "## Generator to store",
        "",
        "`write_store` of a generator with default options. M edges/s counts generated "
        "(input) edges, before symmetrization and deduplication; RMAT and uniform use edge "
        "factor 16, the grid emits both directions of every lattice edge.",
        "",
        generated_table(results["generated"]),
        "",
        f"## Out of core: input {OUT_OF_CORE_FACTOR}x larger than --memory",
        "",
        "The input size of a text file is its bytes; of a generator, its edges as int64 "
        "(src, dst) pairs (16 bytes per edge).",
        "",
        out_of_core_table(results["out_of_core"]),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    if benchlib.dispatch_case(CASES, argv):
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    benchlib.common_arguments(p, MARKDOWN)
    p.add_argument("--profile", action="store_true",
                   help="run the seraph cases under cProfile; the top functions go to the JSON")
    return benchlib.run_and_report("bench_preprocess.py", p.parse_args(argv), argv,
                                   ["pyarrow"], run, report, MARKDOWN)


if __name__ == "__main__":
    sys.exit(main())
