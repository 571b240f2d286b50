"""EMOGI and Subway, the published out-of-GPU-memory systems Seraph is measured against
(docs/design.md, "Peers"): built from their own sources, fed the same graph in their
own file formats, run as subprocesses; their own printed timers parsed and their answers
read back in Seraph's conventions, so that a benchmark can check them.

Their code is not part of Seraph and is never committed: clone it into ``.peers/``
(git-ignored) as ``.peers/EMOGI`` (github.com/illinois-impact/EMOGI) and ``.peers/Subway``
(github.com/AutomataLab/Subway). :func:`build` copies each tree into a build directory and
builds the copy with the project's own Makefile, overriding only its flags:

- **EMOGI**: ``bfs cc sssp pagerank`` and their ``_32`` variants. The plain programs hold
  8-byte edges on the device side; the ``_32`` ones read the same 8-byte files and keep
  4-byte edges, half the bytes each traversal reads over PCIe: the ones that fit graphs of
  fewer than 2^32 vertices, and those issue 21 measured ("zero-copy, 4-byte edges").
  Flags: ``-O3 -arch=sm_XX`` for their ``-gencode`` list (sm_61/sm_70), and
  ``-include seraph_peer.h``, a header written here: CUDA 13 dropped the
  ``cudaMemAdvise(ptr, n, advice, int device)`` form EMOGI calls, and the header puts it
  back as an overload onto the ``cudaMemLocation`` form.
- **Subway**: ``{bfs,cc,sssp,sswp,pr}-{sync,async}``, with ``NFLAGS=-arch=sm_XX`` (their
  sm_60) and ``CFLAGS=-std=c++17 -O3`` (their C++11: CUDA 13's Thrust needs C++17). Its
  Makefile is not safe under ``make -j`` from the top, so ``shared/`` and ``subway/`` are
  made first, then the programs.

Patches, applied to the build copy only (string replacements that fail loudly when the
upstream text changed), each outside the peer's timed region:

- EMOGI prints no answer: each program also writes its answer array (levels, distances,
  labels or ranks, raw bytes) to the file named by ``$EMOGI_ANSWER`` after its timer has
  stopped (``seraph_peer_answer`` in the header above; one call inserted per program).
- Subway's ``--output`` writes ``i value`` text lines, each flushed (``endl``): minutes
  for 67 M vertices, and floats rounded to 6 digits. The patched ``SaveResults`` writes
  the values' raw bytes instead.
- Subway has no knob for its device edge buffer: ``Subgraph`` sizes it to 0.9 of the
  card's memory less 32 bytes a vertex. The patched constructor takes
  ``$SUBWAY_PARTITION_EDGES`` (edges) instead where it is set; unset, the rule is theirs.

What each run's time is (``PeerRun.seconds``; ``PeerRun.wall`` is the whole process):

- EMOGI: its CUDA-event time around the algorithm's loop (``time ... ms`` / ``total time:``):
  the kernels, the per-round flag copies and the edges read in place from host memory
  (``-m 2``, UVM_DIRECT: managed memory the GPU is advised to access where it lies, so
  the edges stay in host memory and are read over PCIe: EMOGI's zero-copy). Not in it:
  reading the files, the allocations, copying the vertex offsets to the device.
  PageRank's includes its initialisation kernel. Run with ``-t 2`` (COALESCE_CHUNK, the
  "merged+aligned" kernels of the paper).
- Subway: its ``Processing finished in ... (s)`` (gettimeofday): the partitioning, the
  copies of each partition's active edges to the device, the kernels, and every subgraph
  generation after the first. Not in it: reading the file, the first subgraph generation
  (every vertex active for CC and PageRank: a whole pass over the edges on the host),
  allocating its buffers.

Conventions (``PeerRun.answer``, per store vertex, as Seraph's verifiers take them): BFS
levels int32, -1 unreached; SSSP distances float32, inf unreached; SSWP widths float32,
inf at the source, 0 unreached; CC labels int64, each vertex's label the smallest store
vertex of its class (the peers label components by some member; the class is what is
checked); PageRank ranks float64 scaled to sum 1. Both peers rank without a uniform jump
for dangling vertices (x = (1 - d) + d * sum x[u] / outdeg[u]); on a symmetric graph the
only dangling vertices are isolated, and the scaled ranks equal networkx's.
Subway's PageRank has its damping (0.85) and its per-vertex residual threshold (0.01 of
an unscaled rank of order 1) fixed in its code; EMOGI takes both (``-a``, ``-l``).

Known upstream behaviour, not patched: Subway's ``ReadGraph`` never sets the out-degree
of vertex n-2 (its loop stops one short), so that vertex pushes nothing unless the
allocation happens to hold its degree; a check that fails there is Subway's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

EMOGI, SUBWAY = "emogi", "subway"
#: Where the sources come from (the error for a missing tree names it).
UPSTREAM = {EMOGI: ("EMOGI", "https://github.com/illinois-impact/EMOGI"),
            SUBWAY: ("Subway", "https://github.com/AutomataLab/Subway")}
#: The algorithms each peer runs (Seraph's names).
ALGORITHMS = {EMOGI: ("bfs", "cc", "sssp", "pagerank"),
              SUBWAY: ("bfs", "cc", "sssp", "sswp", "pagerank")}
EMOGI_PROGRAMS = ("bfs", "bfs_32", "cc", "cc_32", "sssp", "sssp_32", "pagerank", "pagerank_32")
SUBWAY_SHORT = {"bfs": "bfs", "cc": "cc", "sssp": "sssp", "sswp": "sswp", "pagerank": "pr"}
SUBWAY_PROGRAMS = tuple(f"{SUBWAY_SHORT[a]}-{m}" for a in ALGORITHMS[SUBWAY]
                        for m in ("sync", "async"))
#: EMOGI's and Subway's unreached markers (0xFFFFFFFF; Subway's DIST_INFINITY one less).
UNREACHED = np.uint32(0xFFFFFFFE)
#: Bumped whenever the patches or the flags change, so that old builds are rebuilt.
BUILD_VERSION = 1

HEADER = r"""// Written by Seraph's scripts/peers.py, included into every EMOGI program (-include).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#if CUDART_VERSION >= 13000
// CUDA 13 takes a cudaMemLocation where EMOGI passes a device number.
static inline cudaError_t cudaMemAdvise(const void *ptr, size_t count, cudaMemoryAdvise advice,
                                        int device) {
    cudaMemLocation location;
    location.type = cudaMemLocationTypeDevice;
    location.id = device;
    return cudaMemAdvise(ptr, count, advice, location);
}
#endif
// The answer's raw bytes to $EMOGI_ANSWER, when set (called after the timer stopped).
static inline void seraph_peer_answer(const void *data, size_t bytes, bool on_device) {
    const char *path = getenv("EMOGI_ANSWER");
    if (!path) return;
    void *host = (void *)data;
    if (on_device) {
        host = malloc(bytes);
        cudaMemcpy(host, data, bytes, cudaMemcpyDeviceToHost);
    }
    FILE *out = fopen(path, "wb");
    if (!out || fwrite(host, 1, bytes, out) != bytes) { perror(path); exit(3); }
    fclose(out);
    if (on_device) free(host);
}
"""

#: EMOGI's line after the timed loops of BFS and SSSP.
AVERAGE = '    printf("Average run time %f ms\\n", avg_milliseconds / num_run);'
#: (files, the line the answer is written before, the call) per EMOGI program family.
EMOGI_ANSWER = [
    (("bfs.cu", "bfs_32.cu"), AVERAGE,
     "    seraph_peer_answer(label_d, vertex_count * sizeof(uint32_t), true);\n"),
    (("sssp.cu", "sssp_32.cu"), AVERAGE,
     "    seraph_peer_answer(costList_d, vertex_count * sizeof(WeightT), true);\n"),
    (("cc.cu", "cc_32.cu"), '    printf("total iterations: %u\\n", iter);',
     "    seraph_peer_answer(comp_h, vertex_count * sizeof(unsigned long long), false);\n"),
    (("pagerank.cu", "pagerank_32.cu"), "    free(value_h);",
     "    seraph_peer_answer(value_h, vertex_count * sizeof(ValueT), false);\n"),
]
SUBWAY_BUFFER_LINE = "max_partition_size = 0.9 * (dev.totalGlobalMem - 8*4*num_nodes) / sizeof(E);"
SUBWAY_BUFFER_KNOB = ('\n\tif(getenv("SUBWAY_PARTITION_EDGES"))\n\t\tmax_partition_size = '
                      'strtoull(getenv("SUBWAY_PARTITION_EDGES"), NULL, 10);')
SUBWAY_SAVE = re.compile(r'for\(int i=0; i<n; i\+\+\)\s*\n\s*outfile << i << " " << '
                         r'results\[i\] << endl;')
SUBWAY_SAVE_RAW = "outfile.write((const char*)results, sizeof(*results) * (size_t)n);"


class PeerError(Exception):
    """A peer's build failed, or it cannot be built here (:class:`PeerMissing`)."""


class PeerMissing(PeerError):
    """A peer's sources are not there, or nvcc is not: it is absent, not broken."""


# --------------------------------------------------------------------------- building
def build(peers_dir: str | Path, out_dir: str | Path, *, arch: str = "sm_90",
          jobs: int | None = None, systems: tuple[str, ...] = (EMOGI, SUBWAY),
          log=print) -> dict[str, dict[str, Path]]:
    """Builds the peers in ``systems`` from ``peers_dir`` (``EMOGI/``, ``Subway/``) into
    ``out_dir``; returns ``{system: {program: binary}}``. A build whose sources, flags and
    patches are unchanged is reused. Raises :class:`PeerError` when a source tree is
    missing or ``nvcc`` is not on the PATH (:class:`PeerMissing`), or a build fails (with
    the compiler's tail)."""
    peers_dir, out_dir = Path(peers_dir), Path(out_dir)
    for system in systems:
        name, url = UPSTREAM[system]
        if not (peers_dir / name / "Makefile").is_file():
            raise PeerMissing(f"no {name} sources in {peers_dir / name}: clone {url} there "
                            "(it stays out of git: .peers/ is ignored)")
    for tool in ("nvcc", "make"):
        if shutil.which(tool) is None:
            raise PeerMissing(f"{tool} is not on the PATH: the peers are CUDA programs built "
                              "by their Makefiles (or build them elsewhere with "
                              "`python scripts/peers.py` and bring the build directory)")
    jobs = jobs or os.cpu_count() or 1
    built = {}
    for system in systems:
        maker = _build_emogi if system == EMOGI else _build_subway
        built[system] = _cached_build(system, peers_dir / UPSTREAM[system][0],
                                      out_dir / system, arch, jobs, maker, log)
    return built


def _cached_build(system, src: Path, out: Path, arch: str, jobs: int, maker, log):
    programs = EMOGI_PROGRAMS if system == EMOGI else SUBWAY_PROGRAMS
    work = out / "src"
    stamp = json.dumps({"version": BUILD_VERSION, "arch": arch, "sources": _digest(src)})
    binaries = {p: work / p for p in programs}
    if (out / "stamp.json").exists() and (out / "stamp.json").read_text() == stamp and \
            all(b.is_file() for b in binaries.values()):
        return binaries
    log(f"building {UPSTREAM[system][0]} in {work} ({arch}, {jobs} jobs)")
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(src, work, ignore=shutil.ignore_patterns(".git", "*.o", *programs))
    start = time.perf_counter()
    maker(work, arch, jobs)
    missing = [p for p, b in binaries.items() if not b.is_file()]
    if missing:
        raise PeerError(f"{UPSTREAM[system][0]}'s build made no {', '.join(missing)}")
    for obj in work.rglob("*.o"):
        obj.unlink()  # a rebuild starts from a fresh copy: only the programs are kept
    (out / "stamp.json").write_text(stamp)
    log(f"built {UPSTREAM[system][0]} in {time.perf_counter() - start:.0f} s")
    return binaries


def _digest(src: Path) -> str:
    """A digest of the source tree (not .git, not objects or binaries built in the clone),
    to know a build stale."""
    h = hashlib.sha256()
    for path in sorted(src.rglob("*")):
        if (not path.is_file() or ".git" in path.relative_to(src).parts
                or path.suffix == ".o" or (path.suffix == "" and os.access(path, os.X_OK))):
            continue
        h.update(str(path.relative_to(src)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _patch(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    if text.count(old) != count:
        raise PeerError(f"{path.name}: expected {count} of {old.strip()!r} to patch, found "
                        f"{text.count(old)}: the upstream code changed")
    path.write_text(text.replace(old, new))


def _make(args: list[str], cwd: Path) -> None:
    proc = subprocess.run(["make", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise PeerError(f"make {' '.join(args)} in {cwd} failed:\n" + "\n".join(tail))


def _build_emogi(work: Path, arch: str, jobs: int) -> None:
    header = work / "seraph_peer.h"
    header.write_text(HEADER)
    for files, line, call in EMOGI_ANSWER:
        for name in files:
            _patch(work / name, line, call + line)
    _make([f"-j{jobs}", f"NVCCFLAGS=-arch={arch} -include {header}", *EMOGI_PROGRAMS], work)


def _build_subway(work: Path, arch: str, jobs: int) -> None:
    _patch(work / "shared" / "subgraph.cu", SUBWAY_BUFFER_LINE,
           SUBWAY_BUFFER_LINE + SUBWAY_BUFFER_KNOB)
    utilities = work / "shared" / "subway_utilities.cpp"
    text, n = SUBWAY_SAVE.subn(SUBWAY_SAVE_RAW, utilities.read_text())
    if n != 3:
        raise PeerError(f"{utilities.name}: expected 3 SaveResults loops to patch, found {n}")
    utilities.write_text(text)
    flags = [f"NFLAGS=-arch={arch}", "CFLAGS=-std=c++17 -O3"]
    for part in ("shared", "subway"):
        _make([f"-j{jobs}", *flags], work / part)
    _make([f"-j{jobs}", *flags, *SUBWAY_PROGRAMS], work)


# --------------------------------------------------------------------------- inputs
#: Edges converted and written at a time (bounds the writers' temporary memory).
CHUNK = 1 << 24


def _chunks(n: int):
    for lo in range(0, n, CHUNK):
        yield lo, min(lo + CHUNK, n)


def integer_weights(weights: np.ndarray) -> None:
    """Raises ValueError unless the weights are integers in [0, 2^32): both peers read
    uint32 weights (GAP-style 1..255 integer weights are)."""
    for lo, hi in _chunks(len(weights)):
        w = weights[lo:hi]
        if not (np.all(w >= 0) and np.all(w < 2 ** 32) and np.all(w == np.floor(w))):
            raise ValueError("the peers read uint32 edge weights: this graph's weights are not "
                             "integers in [0, 2^32)")


def write_emogi(graph, directory: str | Path, weights: bool = False) -> Path:
    """The graph's out-edges as EMOGI's binary CSR ``graph.bel.{col,dst}`` (``.val`` too
    with ``weights``) in ``directory``; returns the name EMOGI's ``-f`` takes.

    Each file: a 16-byte header (uint64 count of its elements, uint64 unused), then the
    elements: ``.col`` the n+1 row offsets (uint64), ``.dst`` the m edge heads (uint64, the
    ``_32`` programs narrow them on reading), ``.val`` the m weights (uint32)."""
    indptr, indices, w = graph.csr()
    base = Path(directory) / "graph.bel"
    _write(Path(f"{base}.col"), indptr, np.uint64)
    _write(Path(f"{base}.dst"), indices, np.uint64)
    if weights:
        if w is None:
            raise ValueError("EMOGI's SSSP needs a weighted graph")
        integer_weights(w)
        _write(Path(f"{base}.val"), w, np.uint32)
    return base


def _write(path: Path, values: np.ndarray, dtype) -> None:
    with open(path, "wb") as f:
        np.array([len(values), 0], np.uint64).tofile(f)
        for lo, hi in _chunks(len(values)):
            values[lo:hi].astype(dtype).tofile(f)


def read_emogi(base: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(indptr, indices, weights or None) back from :func:`write_emogi`'s files."""
    def read(suffix, dtype):
        path = Path(f"{base}.{suffix}")
        if not path.exists():
            return None
        with open(path, "rb") as f:
            count, _ = np.fromfile(f, np.uint64, 2)
            data = np.fromfile(f, dtype)
        if len(data) != count:
            raise ValueError(f"{path}: header says {count} elements, file holds {len(data)}")
        return data

    return read("col", np.uint64), read("dst", np.uint64), read("val", np.uint32)


def write_subway(graph, directory: str | Path, weights: bool = False) -> Path:
    """The graph's out-edges as Subway's ``graph.bcsr`` (``graph.bwcsr`` with ``weights``)
    in ``directory``; returns its path (Subway tells the two apart by the suffix).

    Layout (tools/converter.cpp, shared/graph.cu): uint32 n, uint32 m, the n row offsets
    (uint32, no final m: Subway appends it), then m edges: uint32 heads, or (uint32 head,
    uint32 weight) pairs."""
    indptr, indices, w = graph.csr()
    n, m = graph.num_vertices, graph.num_edges
    if m >= 2 ** 32:
        raise ValueError(f"Subway counts edges in uint32: {m} edges are too many")
    path = Path(directory) / ("graph.bwcsr" if weights else "graph.bcsr")
    if weights:
        if w is None:
            raise ValueError("Subway's SSSP and SSWP need a weighted graph")
        integer_weights(w)
    with open(path, "wb") as f:
        np.array([n, m], np.uint32).tofile(f)
        indptr[:n].astype(np.uint32).tofile(f)
        for lo, hi in _chunks(m):
            if weights:
                pairs = np.empty((hi - lo, 2), np.uint32)
                pairs[:, 0], pairs[:, 1] = indices[lo:hi], w[lo:hi]
                pairs.tofile(f)
            else:
                indices[lo:hi].astype(np.uint32).tofile(f)
    return path


def read_subway(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(indptr, indices, weights or None) back from :func:`write_subway`'s file."""
    data = np.fromfile(path, np.uint32)
    n, m = int(data[0]), int(data[1])
    indptr = np.append(data[2:2 + n], np.uint32(m))
    edges = data[2 + n:]
    if str(path).endswith(".bwcsr"):
        pairs = edges.reshape(m, 2)
        return indptr, pairs[:, 0], pairs[:, 1]
    if len(edges) != m:
        raise ValueError(f"{path}: header says {m} edges, file holds {len(edges)}")
    return indptr, edges, None


# --------------------------------------------------------------------------- running
@dataclass
class PeerRun:
    """One run of a peer: its own time (None when it failed), the process's wall time,
    its rounds where it prints them, and its answer in Seraph's conventions (see the
    module's docstring), or why it failed (``failed``, with its output's tail)."""

    system: str
    program: str
    algorithm: str
    source: int | None
    seconds: float | None
    wall: float
    rounds: int | None = None
    answer: np.ndarray | None = field(default=None, repr=False)
    failed: str | None = None
    command: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"system": self.system, "program": self.program, "algorithm": self.algorithm,
                "source": self.source, "seconds": self.seconds, "wall": self.wall,
                "rounds": self.rounds, "failed": self.failed, "command": self.command}


EMOGI_TIME = {"cc": re.compile(r"^total time:\s*([0-9.eE+-]+) ms", re.M),
              "pagerank": re.compile(r"^iteration\s+(\d+), time\s+([0-9.eE+-]+) ms", re.M)}
EMOGI_RUN_TIME = re.compile(r"^run\s+\d+: src\s+\d+, iteration\s+(\d+), time\s+([0-9.eE+-]+) ms",
                            re.M)
EMOGI_CC_ROUNDS = re.compile(r"^total iterations:\s*(\d+)", re.M)
SUBWAY_TIME = re.compile(r"Processing finished in ([0-9.eE+-]+) \(s\)")
SUBWAY_ROUNDS = re.compile(r"(?:Number of iterations = |Global Iteration )(\d+)")
#: The answer's dtype in each peer's raw output.
EMOGI_DTYPE = {"bfs": np.uint32, "sssp": np.uint32, "cc": np.uint64, "pagerank": np.float32}
SUBWAY_DTYPE = {"bfs": np.uint32, "sssp": np.uint32, "sswp": np.uint32, "cc": np.uint32,
                "pagerank": np.float32}


def _execute(cmd: list[str], timeout: float, env: dict | None = None
             ) -> tuple[str | None, str, float]:
    """(why it failed or None, its stdout, wall seconds)."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return f"timed out after {timeout:g} s; output: {_tail(out)}", out, \
            time.perf_counter() - start
    except OSError as e:
        return f"could not start {cmd[0]}: {e}", "", time.perf_counter() - start
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        return (f"exit status {proc.returncode}: {_tail(proc.stderr or proc.stdout)}",
                proc.stdout, wall)
    return None, proc.stdout, wall


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(text.strip().splitlines()[-lines:]) or "(no output)"


def run_emogi(binary: str | Path, graph_base: str | Path, algorithm: str,
              source: int | None = None, *, timeout: float = 600.0, damping: float = 0.85,
              threshold: float = 1e-6, max_iterations: int = 100, answer_dir=None,
              memory: int = 2, kernel: int = 2) -> PeerRun:
    """Runs EMOGI's ``binary`` (``bfs``, ``cc``, ``sssp``, ``pagerank`` or a ``_32``
    variant) on :func:`write_emogi`'s ``graph_base``: from ``source`` (a store vertex; BFS,
    SSSP), with ``-m memory`` (2: zero-copy) and ``-t kernel`` (2: merged+aligned);
    PageRank with ``-a damping -l threshold -i max_iterations`` (``threshold``: its
    per-vertex residual below which a vertex stops pushing, in unscaled ranks of order
    1). ``answer_dir``: where the answer is written and read back (None: not read)."""
    cmd = [str(binary), "-f", str(graph_base), "-t", str(kernel), "-m", str(memory)]
    if algorithm in ("bfs", "sssp"):
        cmd += ["-r", str(source)]
    elif algorithm == "pagerank":
        cmd += ["-a", repr(float(damping)), "-l", repr(float(threshold)),
                "-i", str(int(max_iterations))]
    elif algorithm != "cc":
        raise ValueError(f"EMOGI runs {', '.join(ALGORITHMS[EMOGI])}, not {algorithm}")
    answer = Path(answer_dir) / "emogi-answer.bin" if answer_dir is not None else None
    env = {"EMOGI_ANSWER": str(answer)} if answer else {}
    failed, out, wall = _execute(cmd, timeout, env)
    run = PeerRun(EMOGI, Path(binary).name, algorithm, source, None, wall, command=cmd)
    if failed:
        run.failed = failed
        return run
    if algorithm == "cc":
        found, rounds = EMOGI_TIME["cc"].search(out), EMOGI_CC_ROUNDS.search(out)
        ms, run.rounds = found and found.group(1), rounds and int(rounds.group(1))
    else:
        found = (EMOGI_TIME["pagerank"] if algorithm == "pagerank" else EMOGI_RUN_TIME).search(out)
        ms, run.rounds = (found.group(2), int(found.group(1))) if found else (None, None)
    if ms is None:
        run.failed = f"no time in its output: {_tail(out)}"
        return run
    run.seconds = float(ms) / 1e3
    if answer is not None:
        run.answer, run.failed = _read_answer(answer, EMOGI_DTYPE[algorithm], algorithm, source)
    return run


def run_subway(binary: str | Path, graph_file: str | Path, algorithm: str,
               source: int | None = None, *, timeout: float = 600.0,
               partition_edges: int | None = None, answer_dir=None) -> PeerRun:
    """Runs Subway's ``binary`` (``bfs-async``, ``pr-sync``, ...) on
    :func:`write_subway`'s ``graph_file`` (``.bcsr`` for BFS, CC, PageRank; ``.bwcsr`` for
    SSSP, SSWP), from ``source`` (a store vertex; BFS, SSSP, SSWP). ``partition_edges``:
    its device edge buffer, in edges (None: its own rule, 0.9 of the card). ``answer_dir``:
    where ``--output`` goes and is read back from (None: not written)."""
    if algorithm not in ALGORITHMS[SUBWAY]:
        raise ValueError(f"Subway runs {', '.join(ALGORITHMS[SUBWAY])}, not {algorithm}")
    cmd = [str(binary), "--input", str(graph_file)]
    if algorithm in ("bfs", "sssp", "sswp"):
        cmd += ["--source", str(source)]
    answer = Path(answer_dir) / "subway-answer.bin" if answer_dir is not None else None
    cmd += ["--output", str(answer)] if answer else []
    env = {"SUBWAY_PARTITION_EDGES": str(int(partition_edges))} if partition_edges else {}
    failed, out, wall = _execute(cmd, timeout, env)
    run = PeerRun(SUBWAY, Path(binary).name, algorithm, source, None, wall, command=cmd)
    found = SUBWAY_TIME.search(out)
    if failed or not found:  # Subway exits 0 after a usage message
        run.failed = failed or f"no time in its output: {_tail(out)}"
        return run
    run.seconds = float(found.group(1))
    rounds = SUBWAY_ROUNDS.findall(out)
    run.rounds = max(int(r) for r in rounds) if rounds else None
    if answer is not None:
        run.answer, run.failed = _read_answer(answer, SUBWAY_DTYPE[algorithm], algorithm, source)
    return run


def _read_answer(path: Path, dtype, algorithm: str, source: int | None):
    """(the answer in Seraph's conventions, None) or (None, why not); the file is removed."""
    if not path.exists():
        return None, f"wrote no answer to {path}"
    raw = np.fromfile(path, dtype)
    path.unlink()
    return to_seraph(algorithm, raw, source), None


def to_seraph(algorithm: str, raw: np.ndarray, source: int | None = None) -> np.ndarray:
    """A peer's raw answer in Seraph's conventions (see the module's docstring)."""
    if algorithm == "bfs":
        return np.where(raw >= UNREACHED, -1, raw.astype(np.int64)).astype(np.int32)
    if algorithm == "sssp":
        return np.where(raw >= UNREACHED, np.inf, raw.astype(np.float64)).astype(np.float32)
    if algorithm == "sswp":  # Subway: DIST_INFINITY at the source, 0 unreached
        return np.where(raw >= UNREACHED, np.inf, raw.astype(np.float64)).astype(np.float32)
    if algorithm == "cc":
        labels = raw.astype(np.int64)
        n = len(labels)
        if n and (labels.min() < 0 or labels.max() >= n):
            return labels  # not vertex numbers: left as they are, for the check to refuse
        smallest = np.full(n, n, np.int64)
        np.minimum.at(smallest, labels, np.arange(n))
        return smallest[labels]
    if algorithm == "pagerank":
        ranks = raw.astype(np.float64)
        total = ranks.sum()
        return ranks / total if total > 0 else ranks
    raise ValueError(f"no peer answer convention for {algorithm}")


def main(argv: list[str] | None = None) -> int:
    """Builds the peers (a build directory made on one x86-64 machine with the same CUDA
    serves another: the benchmark reuses it while the sources and flags are unchanged)."""
    repo = Path(__file__).resolve().parent.parent
    p = argparse.ArgumentParser(description=main.__doc__.split("(")[0].strip())
    p.add_argument("--peers-dir", default=str(repo / ".peers"))
    p.add_argument("--build-dir", default=str(repo / "build" / "peers"))
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--jobs", type=int, default=None)
    args = p.parse_args(argv)
    try:
        built = build(args.peers_dir, args.build_dir, arch=args.arch, jobs=args.jobs)
    except PeerError as e:
        print(f"peers: {e}")
        return 1
    for system, programs in built.items():
        print(f"{UPSTREAM[system][0]}: {' '.join(str(b) for b in programs.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
