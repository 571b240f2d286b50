"""Seraph: BFS, connected components, SSSP, widest paths and PageRank on graphs larger than
GPU memory.

The public names below load on first use (PEP 562), so that importing a base module
(``seraph.errors``, ``seraph.units``, ``seraph.progress``, ``seraph.store``,
``seraph.version``), as the partitioner does, does not import the engine. The layers,
bottom up: that base; ``partitioner``; the engine (graph, scheduler, backends, api); the
algorithms; the CLI (docs/design.md, "Architecture").
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

# First: numba must know where its cache lives before any kernel module is imported.
import seraph.numba_cache  # noqa: F401
from seraph.version import __version__

#: public name -> the module that defines it
_EXPORTS = {
    "BFSResult": "seraph.algorithms.bfs", "bfs": "seraph.algorithms.bfs",
    "CCResult": "seraph.algorithms.cc", "connected_components": "seraph.algorithms.cc",
    "SSSPResult": "seraph.algorithms.sssp", "sssp": "seraph.algorithms.sssp",
    "SSWPResult": "seraph.algorithms.sswp", "sswp": "seraph.algorithms.sswp",
    "PageRankResult": "seraph.algorithms.pagerank", "pagerank": "seraph.algorithms.pagerank",
    "run": "seraph.algorithms",
    "load_config": "seraph.api", "make_config": "seraph.api",
    "ConfigError": "seraph.errors", "DeviceError": "seraph.errors",
    "InputError": "seraph.errors", "SeraphError": "seraph.errors",
    "StoreError": "seraph.errors",
    "Graph": "seraph.graph", "open_graph": "seraph.graph",
    "EngineConfig": "seraph.scheduler",
    "RunStats": "seraph.stats",
}

__all__ = [
    "BFSResult", "CCResult", "ConfigError", "DeviceError", "EngineConfig", "Graph",
    "InputError", "PageRankResult", "RunStats", "SSSPResult", "SSWPResult", "SeraphError",
    "StoreError", "__version__", "bfs", "connected_components", "load_config", "make_config",
    "open_graph", "pagerank", "run", "sssp", "sswp",
]

if TYPE_CHECKING:
    from seraph.algorithms import run
    from seraph.algorithms.bfs import BFSResult, bfs
    from seraph.algorithms.cc import CCResult, connected_components
    from seraph.algorithms.pagerank import PageRankResult, pagerank
    from seraph.algorithms.sssp import SSSPResult, sssp
    from seraph.algorithms.sswp import SSWPResult, sswp
    from seraph.api import load_config, make_config
    from seraph.errors import ConfigError, DeviceError, InputError, SeraphError, StoreError
    from seraph.graph import Graph, open_graph
    from seraph.scheduler import EngineConfig
    from seraph.stats import RunStats


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'seraph' has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
