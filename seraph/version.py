"""The package version, importable without the engine (the store writer records it)."""

#: The name the package index knows the distribution by ("seraph" there is another project).
DISTRIBUTION = "seraph-graph"
__version__ = "0.1.0"
