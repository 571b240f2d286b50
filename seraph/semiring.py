"""The (min, +) semiring's weight modes and value types (docs/design.md, "Architecture").

Every algorithm relaxes ``value[v] = min(value[v], value[u] + w(u, v))``; they differ only
in where ``w`` comes from and in the value dtype.
"""

from __future__ import annotations

import numpy as np

UNIT = 0  #: BFS: w = 1, int32 levels
ZERO = 1  #: CC: w = 0, int32 labels
STORED = 2  #: SSSP: w = the stored float32 weight (>= 0), float32 distances

WEIGHT_MODES = (UNIT, ZERO, STORED)

INT_INF = np.int32(np.iinfo(np.int32).max)  #: "unreached" for int32 values; never added to
FLOAT_INF = np.float32(np.inf)  #: "unreached" for float32 values


def value_dtype(weight_mode: int) -> np.dtype:
    """The dtype of the values an algorithm with this weight mode relaxes."""
    if weight_mode not in WEIGHT_MODES:
        raise ValueError(f"unknown weight mode {weight_mode!r}; expected one of {WEIGHT_MODES}")
    return np.dtype(np.float32 if weight_mode == STORED else np.int32)


def infinity(weight_mode: int) -> np.int32 | np.float32:
    """The value that means "unreached" for this weight mode."""
    return FLOAT_INF if value_dtype(weight_mode) == np.float32 else INT_INF
