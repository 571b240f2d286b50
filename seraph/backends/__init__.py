"""Backends: where a run's pages and vertex state live and its kernels run.

The engine talks to a backend only through :class:`seraph.backends.base.Backend`; the
device names a run accepts map to backend classes here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seraph.backends.base import Backend


def backend_class(device: str) -> type[Backend]:
    """The backend class of a resolved device, ``cpu`` or ``cuda`` (imported on demand:
    the CUDA backend needs cupy, and raises ImportError without it)."""
    if device == "cuda":
        from seraph.backends.cuda.backend import CudaBackend

        return CudaBackend
    from seraph.backends.cpu.backend import CpuBackend

    return CpuBackend
