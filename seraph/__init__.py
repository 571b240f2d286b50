"""Seraph: BFS, connected components and SSSP on graphs larger than GPU memory."""

from seraph.errors import ConfigError, DeviceError, InputError, SeraphError, StoreError

__version__ = "0.1.0"

__all__ = ["ConfigError", "DeviceError", "InputError", "SeraphError", "StoreError", "__version__"]
