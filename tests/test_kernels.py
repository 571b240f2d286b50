"""Kernels compiled as twins (seraph.kernels): the parallel twin for large work and the
serial one for small work give the same answers, and a small graph compiles no parallel
kernel, so that a first run on it compiles in a fraction of the time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import seraph
from partitioner.generators import gap_weights, rmat
from partitioner.writer import Options, write_store
from seraph.algorithms import ALGORITHMS
from seraph.backends import output
from seraph.backends.cpu import push
from seraph.kernels import SERIAL_GRAPH, SERIAL_WORK, serial
from seraph.validate import check, verify


def test_the_size_of_the_work_or_of_the_graph_picks_the_twin():
    assert serial(SERIAL_WORK - 1) and not serial(SERIAL_WORK)
    assert serial(SERIAL_WORK, SERIAL_GRAPH - 1) and not serial(SERIAL_WORK, SERIAL_GRAPH)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_a_fill_on_every_thread_writes_what_one_on_this_thread_does(monkeypatch, dtype):
    from seraph import kernels

    one, every = np.zeros(100_003, dtype), np.zeros(100_003, dtype)
    kernels.fill(one, -1)
    monkeypatch.setattr(kernels, "SERIAL_FILL", 0)
    kernels.fill(every, -1)
    assert (one == -1).all() and np.array_equal(one, every)
    kernels.fill(every[:0], 1)  # nothing to fill


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_ids_on_every_thread_are_those_of_one_thread(monkeypatch, dtype):
    from seraph import kernels

    one, every = np.full(100_003, -1, dtype), np.full(100_003, -1, dtype)
    kernels.fill_ids(one)
    monkeypatch.setattr(kernels, "SERIAL_FILL", 0)
    kernels.fill_ids(every)
    assert np.array_equal(one, np.arange(100_003)) and np.array_equal(one, every)
    kernels.fill_ids(every[:0])  # nothing to write


def test_the_twins_are_one_function_compiled_two_ways():
    twins = output._convert
    assert twins.parallel.targetoptions["parallel"]
    assert not twins.serial.targetoptions["parallel"]
    assert twins.parallel.py_func.__code__ is twins.serial.py_func.__code__
    # numba files a kernel's cache by its qualified name: the twins' differ.
    assert twins.serial.py_func.__qualname__ == "_convert_serial"


def test_a_serial_twin_calls_serial_twins_and_leaves_out_parallel_branches():
    scope = push._delta_stepping.serial.py_func.__globals__
    assert scope["_waiting"] is push._waiting.serial and scope["PARALLEL"] is False
    scope = push._delta_stepping.parallel.py_func.__globals__
    assert scope["_waiting"] is push._waiting.parallel and scope["PARALLEL"] is True


@pytest.fixture(scope="module")
def one_page(tmp_path_factory) -> seraph.Graph:
    """A weighted symmetric R-MAT whose one page is large enough for the parallel pulls."""
    store = tmp_path_factory.mktemp("kernels") / "rmat.zarr"
    write_store(rmat(12, 16, seed=3, weights=gap_weights()), store,
                Options(symmetrize=True), command="test")
    return seraph.open_graph(store)


def _answers(graph: seraph.Graph) -> dict[str, np.ndarray]:
    """Every algorithm's answer from the highest-degree vertex, checked against scipy and
    its verifier."""
    source = int(np.argmax(graph.out_degrees()))
    answers = {}
    for name, entry in ALGORITHMS.items():
        s = entry.source_for(source)
        result = seraph.run(graph, name, None if s is None else int(graph.vertex_ids[s]),
                            device="cpu")
        assert check(graph, name, result.values, s) is None, name
        assert verify(graph, name, result.values, s) is None, name
        answers[name] = result.values
    return answers


def test_the_parallel_twins_answer_as_the_serial_ones(one_page, tmp_path, monkeypatch):
    assert one_page.num_pages == 1 and one_page.num_edges > SERIAL_WORK
    serial_answers = _answers(one_page)
    from seraph import kernels

    monkeypatch.setattr(kernels, "SERIAL_WORK", 0)
    monkeypatch.setattr(kernels, "SERIAL_GRAPH", 0)
    # The partitioner's too: the same graph preprocessed on every thread.
    store = tmp_path / "again.zarr"
    write_store(rmat(12, 16, seed=3, weights=gap_weights()), store,
                Options(symmetrize=True), command="test")
    again = seraph.open_graph(store)
    np.testing.assert_array_equal(again.csc()[1], one_page.csc()[1])
    parallel_answers = _answers(again)
    for name, values in serial_answers.items():
        np.testing.assert_array_equal(parallel_answers[name], values, err_msg=name)


# Runs the demo on a fresh kernel cache and lists what this process compiled.
_DEMO = """
import json, sys
from numba.core import event
compiled = []
class Listen(event.Listener):
    def on_start(self, ev):
        d = ev.data["dispatcher"]
        if d.py_func.__module__.split(".")[0] in ("seraph", "partitioner"):
            compiled.append([d.py_func.__qualname__, bool(d.targetoptions.get("parallel"))])
    def on_end(self, ev):
        pass
event.register("numba:compile", Listen())
from seraph.cli import main
code = main(["demo", "--scale", "6", "--device", "cpu"])
print(json.dumps({"code": code, "compiled": compiled}))
"""


def test_a_small_graph_compiles_no_parallel_kernel(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", _DEMO], env=env, capture_output=True,
                          text=True, check=True, cwd=Path(seraph.__file__).parent.parent)
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["code"] == 0 and report["compiled"]
    assert not [name for name, parallel in report["compiled"] if parallel]


def _helper_of(pid: int) -> int | None:
    """The pid of the process that compiles ahead for process ``pid``, if it runs."""
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid and b"_compile_ahead" in cmdline:
            return int(entry.name)
    return None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_ends_the_demo_and_its_compiling_helper(tmp_path):
    # A terminal's Ctrl-C reaches the whole foreground group: the helper ends at once, the
    # demo once its current compile is done (seraph.compiling), with one line.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmp_path))
    # SIGINT raising KeyboardInterrupt, as in a shell, however pytest was started; the
    # helper started however busy the machine.
    demo = subprocess.Popen([sys.executable, "-c", "import signal, sys; "
                             "signal.signal(signal.SIGINT, signal.default_int_handler); "
                             "import seraph.compiling as c; c.a_core_is_idle = lambda: True; "
                             "from seraph.__main__ import main; sys.exit(main())",
                             "demo", "--scale", "6"],
                            env=env, cwd=Path(seraph.__file__).parent.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline, helper = time.monotonic() + 600, None
    while helper is None and demo.poll() is None and time.monotonic() < deadline:
        helper = _helper_of(demo.pid)
        time.sleep(0.05)
    assert helper is not None, demo.communicate()
    os.killpg(demo.pid, signal.SIGINT)
    signalled = time.monotonic()
    while Path(f"/proc/{helper}").exists() and time.monotonic() < signalled + 1:
        time.sleep(0.01)
    assert not Path(f"/proc/{helper}").exists() or \
        (Path(f"/proc/{helper}") / "stat").read_text().split()[2] == "Z"  # dead, unreaped
    _, err = demo.communicate(timeout=300)
    assert demo.returncode == 130, err
    assert err.endswith("seraph: interrupted; no partial output was left behind\n")
    assert not Path(f"/proc/{helper}").exists()
