"""Mistakes users make with the Python API raise Seraph's errors with messages that say what
to do, never a traceback from deep inside numpy or numba, on every backend (the ``device``
fixture of conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest

import seraph
from partitioner.preprocess import preprocess
from seraph.api import cuda_status
from seraph.backends.layout import DEVICE_SCRATCH, PAGE_BYTES
from seraph.errors import ConfigError, DeviceError, InputError

#: A page of this many edges: the 6-edge test graph has 3 pages.
PAGE_EDGES = 2


@pytest.fixture(scope="module")
def directed() -> seraph.Graph:
    """0 -> 1 -> 2 -> 3 -> 4 -> 5 -> 0 plus the isolated vertex 6, unweighted."""
    src = np.arange(6)
    return seraph.Graph.from_edges(src, (src + 1) % 6, num_vertices=7, page_edges=PAGE_EDGES)


@pytest.fixture(scope="module")
def weighted() -> seraph.Graph:
    src = np.arange(6)
    return seraph.Graph.from_edges(src, (src + 1) % 6, np.full(6, 2.0, np.float32),
                                   num_vertices=7, page_edges=PAGE_EDGES, symmetrize=True)


@pytest.mark.parametrize("source", [-1, 7, 10**12])
@pytest.mark.parametrize("run", [seraph.bfs, seraph.sssp])
def test_a_source_out_of_range_names_the_valid_range(run, source, weighted, device):
    with pytest.raises(InputError, match=r"out of range.*0\.\.6"):
        run(weighted, source, device=device)


@pytest.mark.parametrize("source", [1.5, 2.0, "1", True, None])
def test_a_source_that_is_not_an_integer_is_refused(source, directed, device):
    with pytest.raises(InputError, match="integer|required"):
        seraph.bfs(directed, source, device=device)


def test_numpy_integer_sources_are_fine(directed, device):
    assert seraph.bfs(directed, np.int64(2), device=device).levels[2] == 0


def test_sssp_on_an_unweighted_graph_suggests_bfs_or_weights(directed, device):
    with pytest.raises(InputError, match="unweighted") as err:
        seraph.sssp(directed, 0, device=device)
    assert "bfs" in str(err.value) and "--weights" in str(err.value)


def test_cc_on_a_directed_in_memory_graph_says_how_to_build_it(directed, device):
    with pytest.raises(InputError, match="in-memory graph is directed: build it with "
                                         "symmetrize=True") as err:
        seraph.connected_components(directed, device=device)
    assert "--symmetrize" not in str(err.value) and "store" not in str(err.value)


def test_cc_on_a_directed_store_says_how_to_preprocess_it(tmp_path, device):
    src = np.arange(6)
    path = preprocess((src, (src + 1) % 6), tmp_path / "d.zarr", page_edges=PAGE_EDGES)
    with pytest.raises(InputError, match=r"store .*d\.zarr is directed: preprocess it with "
                                         "--symmetrize"):
        seraph.connected_components(str(path), device=device)


def test_a_graph_that_is_not_a_graph_is_refused(device):
    with pytest.raises(InputError, match="expected a seraph.Graph or a store path"):
        seraph.bfs(np.zeros((3, 3)), 0, device=device)


@pytest.mark.parametrize("predictor, weak", [("strong", 0), ("weak", 1)])
def test_a_budget_below_the_minimum_states_the_minimum(directed, predictor, weak, device):
    n = directed.num_vertices
    # values 4, changed flag 1, weak state 1, the CSC and (directed) CSR indptr, 8 (n + 1)
    # each, then one epoch per block (a block per vertex below 4096 vertices); the push
    # phase's two int32 lists and int64 offsets, for every vertex of a graph this small
    # (+ 1 offset); the device's scratch and per-page words, and the weak predictor's
    # three a page; plus two 4-byte-per-edge page slots
    frontier, pages = n, directed.num_pages
    minimum = n * (4 + 1 + weak) + 2 * 8 * (n + 1) + n * 8 + 16 * frontier + \
        DEVICE_SCRATCH + PAGE_BYTES * (pages + 1) + 24 * pages * weak + 2 * PAGE_EDGES * 4
    with pytest.raises(DeviceError, match=rf"minimum is .*\({minimum} bytes\)"):
        seraph.bfs(directed, 0, device=device, predictor=predictor, device_memory=minimum - 1)
    stats = seraph.bfs(directed, 0, device=device, predictor=predictor,
                       device_memory=minimum).stats
    assert (stats.num_slots, stats.resident) == (2, False)


def test_a_budget_can_be_written_with_units(directed, device):
    assert seraph.bfs(directed, 0, device=device, device_memory="1MiB").stats.resident
    with pytest.raises(ConfigError, match="device_memory: cannot read 'lots'"):
        seraph.bfs(directed, 0, device=device, device_memory="lots")


@pytest.mark.parametrize("option, value, match", [
    ("schedule", "fastest", "unknown schedule 'fastest'; expected one of pipelined"),
    ("predictor", "psychic", "unknown predictor 'psychic'"),
    ("device", "tpu", "unknown device 'tpu'; expected auto, cuda or cpu"),
    ("push_alpha", -1.0, "push_alpha must be a finite number >= 0"),
    ("push_alpha", float("nan"), "push_alpha must be a finite number >= 0, got nan"),
    ("push_alpha", float("inf"), "push_alpha must be a finite number >= 0, got inf"),
    ("push_on", "gpu", "unknown push_on"),
    ("max_reentries", 0, "at least 1"),
    ("threads", 0, "threads must be a whole number of at least 1, got 0"),
    ("threads", 1.5, "threads must be a whole number of at least 1, got 1.5"),
    ("threads", True, "threads must be a whole number of at least 1, got True"),
    ("threads", 10**6, "threads=1000000 but numba's thread pool has .*NUMBA_NUM_THREADS"),
    ("warp_speed", 9, "unknown engine option"),
])
def test_unknown_or_invalid_options_are_config_errors(directed, option, value, match,
                                                     device):
    options = {"device": device, option: value}
    with pytest.raises(ConfigError, match=match):
        seraph.bfs(directed, 0, **options)


@pytest.mark.skipif(cuda_status()[0], reason="a usable GPU is present")
def test_cuda_without_a_gpu_is_a_device_error(directed):
    with pytest.raises(DeviceError, match="no usable GPU.*--device cpu"):
        seraph.bfs(directed, 0, device="cuda")


@pytest.mark.skipif(cuda_status()[0], reason="a usable GPU is present")
def test_auto_without_a_gpu_warns_and_runs_on_the_cpu(directed):
    with pytest.warns(RuntimeWarning, match="running on the CPU backend"):
        stats = seraph.bfs(directed, 0, device="auto").stats
    assert stats.device == "cpu"


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_status()[0], reason=f"no usable GPU: {cuda_status()[1]}")
def test_auto_with_a_gpu_runs_on_it(directed):
    assert seraph.bfs(directed, 0, device="auto").stats.device == "cuda"


@pytest.mark.parametrize("predictor", ["weak", "auto", "strong"])
def test_a_bad_diagram_is_a_config_error_whatever_the_predictor(directed, tmp_path,
                                                                 predictor, device):
    with pytest.raises(ConfigError, match="cannot read predictor diagram"):
        seraph.bfs(directed, 0, device=device, predictor=predictor,
                   diagram=tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="unknown predictor diagram 'nope'"):
        seraph.bfs(directed, 0, device=device, predictor=predictor, diagram="nope")
    broken = tmp_path / "broken.toml"
    broken.write_text("initial = 0\n[states.0]\nattempt = true\n")
    with pytest.raises(ConfigError, match="broken.toml: state 0: missing transition"):
        seraph.bfs(directed, 0, device=device, predictor=predictor, diagram=broken)


def test_a_diagram_selects_the_weak_predictor(directed, device):
    stats = seraph.bfs(directed, 0, device=device, diagram="seraph").stats
    assert stats.predictor == "weak"
    stats = seraph.bfs(directed, 0, device=device, diagram="seraph", predictor="weak").stats
    assert stats.predictor == "weak"


@pytest.mark.parametrize("predictor", ["strong", "none"])
def test_a_diagram_with_a_predictor_that_ignores_it_is_refused(directed, device, predictor):
    with pytest.raises(ConfigError, match="a diagram describes the weak predictor"):
        seraph.bfs(directed, 0, device=device, diagram="seraph", predictor=predictor)


@pytest.mark.parametrize("which", ["one", "the pool's"])
def test_threads_run_the_call_on_that_many_and_leave_the_callers_count(directed, which,
                                                                       monkeypatch):
    """``threads=N``: the engine runs with numba's N threads (as the caller would set them
    with ``numba.set_num_threads``), the answer is the same, and the caller's count is
    back after the call."""
    import numba

    import seraph.api

    count = 1 if which == "one" else numba.config.NUMBA_NUM_THREADS
    seen = []
    run_engine = seraph.api.run_engine

    def spy(*args, **kwargs):
        seen.append(numba.get_num_threads())
        return run_engine(*args, **kwargs)

    monkeypatch.setattr(seraph.api, "run_engine", spy)
    before = numba.get_num_threads()
    got = seraph.bfs(directed, 0, device="cpu", threads=count)
    assert seen == [count]
    np.testing.assert_array_equal(got.levels, seraph.bfs(directed, 0, device="cpu").levels)
    assert numba.get_num_threads() == before
