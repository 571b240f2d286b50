"""Seraph: BFS, connected components and SSSP on graphs larger than GPU memory."""

# First: numba must know where its cache lives before any kernel module is imported.
import seraph.numba_cache  # noqa: F401, I001
from seraph.api import (
    BFSResult,
    CCResult,
    SSSPResult,
    bfs,
    connected_components,
    load_config,
    make_config,
    sssp,
)
from seraph.errors import ConfigError, DeviceError, InputError, SeraphError, StoreError
from seraph.graph import Graph, open_graph
from seraph.scheduler import EngineConfig
from seraph.stats import RunStats

__version__ = "0.1.0"

__all__ = [
    "BFSResult", "CCResult", "ConfigError", "DeviceError", "EngineConfig", "Graph",
    "InputError", "RunStats", "SSSPResult", "SeraphError", "StoreError", "__version__", "bfs",
    "connected_components", "load_config", "make_config", "open_graph", "sssp",
]
