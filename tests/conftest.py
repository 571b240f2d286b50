"""The ``device`` fixture: a test that takes it runs once per backend.

Every test that runs the engine takes ``device`` and passes it on (``device=device``, or
``--device`` on the command line). Its "cpu" copy runs everywhere; its "cuda" copy carries
the ``cuda`` marker and is skipped, at no cost, where ``seraph.api.cuda_status()`` finds no
usable GPU. So on a GPU host ``pytest`` runs the engine suite on both backends, and
``pytest -m cuda`` runs only the CUDA copies (``-m "not cuda"`` only the rest).

The fixture is module-scoped, so Hypothesis ``@given`` tests can take it without
suppressing ``HealthCheck.function_scoped_fixture``: Hypothesis runs all its examples once
per device. It also keeps each module's CPU copies together, ahead of its CUDA copies.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from seraph.api import cuda_status

CUDA_USABLE, CUDA_REASON = cuda_status()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cuda: runs on the CUDA backend; skipped where no usable GPU is present")


@pytest.fixture(scope="module", params=[
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[
        pytest.mark.cuda,
        pytest.mark.skipif(not CUDA_USABLE, reason=f"no usable GPU: {CUDA_REASON}")]),
])
def device(request: pytest.FixtureRequest) -> str:
    """The backend to run on: "cpu", then "cuda" where a usable GPU is present."""
    return request.param


@pytest.fixture(scope="session")
def three_slots() -> Callable[..., str]:
    """``three_slots(store, algorithm="sssp")``: a memory budget (bytes, as the CLI takes
    it) for the store's vertex state, the largest the algorithm needs under any predictor,
    and three of its page slots, so that pages move."""
    import seraph
    from seraph.algorithms import get
    from seraph.backends.layout import Layout

    def budget(store: Path, algorithm: str = "sssp") -> str:
        graph, spec = seraph.open_graph(store), get(algorithm).spec
        layouts = [Layout.for_run(graph, spec, predictor, None)
                   for predictor in ("combined", "strong", "none")]
        return str(max(la.state_bytes for la in layouts) + 3 * layouts[0].slot_bytes)

    return budget


@pytest.fixture
def all_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call runs the parallel twins of its kernels, however small its work
    (seraph.kernels), so that a small graph tests them too."""
    from seraph import kernels

    monkeypatch.setattr(kernels, "SERIAL_WORK", 0)
    monkeypatch.setattr(kernels, "SERIAL_GRAPH", 0)
    monkeypatch.setattr(kernels, "SERIAL_FILL", 0)


@pytest.fixture(autouse=True)
def sigint_raises():
    """SIGINT raises KeyboardInterrupt during every test, as in an interactive shell, also
    where pytest runs as a background job (which starts with SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
