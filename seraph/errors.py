"""Exceptions users see. Every failure a user can cause maps to one of these, with a message
that says what was wrong and what to do; the CLI prints the message without a traceback."""

from __future__ import annotations


class SeraphError(Exception):
    """Base class of every error Seraph raises on purpose."""


class InputError(SeraphError, ValueError):
    """The input (a graph file, arrays or matrix, or a trace to plot) is malformed or unusable."""


class StoreError(SeraphError):
    """A graph store is missing, corrupt, incomplete or of an unsupported format version."""


class ConfigError(SeraphError, ValueError):
    """A configuration file or option (predictor diagram, run config) is invalid."""


class DeviceError(SeraphError):
    """The requested device is unusable or the memory budget is too small."""


class DeviceWarning(RuntimeWarning):
    """A run falls back from the GPU to the CPU backend (the CLI prints it as a note)."""


class WorkerError(SeraphError):
    """A worker of a multi-worker query failed (killed, out of memory, an error of its own):
    the query was stopped on every worker."""
