"""The host partitioner: turns edge lists, matrices, arrays and generators into a Seraph store."""

# First: numba must know where its cache lives before any kernel module is imported.
import seraph.numba_cache  # noqa: F401
