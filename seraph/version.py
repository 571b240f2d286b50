"""The package version, importable without the engine (the store writer records it)."""

__version__ = "0.1.0"
