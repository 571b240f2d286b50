"""Edge operators: what a relaxation over one in-edge ``(u, v)`` offers ``v`` (or, for a
summing program, what the edge contributes to ``v``'s sum: :data:`SHARE`).

Every relaxing algorithm pulls ``value[v] = min(value[v], min over in-edges of
offer(value[u], w(u, v)))``, or pushes the same offer with an atomic min; an operator fixes
the offer, the value dtype and the identity of the min (the value meaning "unreached",
never offered on). The compiled kernels switch on the operator's ``code``
(:func:`seraph.backends.cpu.pull.offer`) or are instantiated for it (values.cuh's functors,
named by the CUDA kernels' interface); they know nothing of the algorithms declared over
them (docs/design.md, "Vertex programs").

Every offer is at least the value it is made from (``offer(d, w) >= d``): the strong rules'
arguments (docs/design.md, section 7) and any order of relaxations reaching the one
fixpoint both rest on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HOP = 0  #: d + 1 (BFS levels)
LABEL = 1  #: d (CC labels)
DISTANCE = 2  #: d + w, w the stored float32 weight >= 0 (SSSP distances)
WIDTH = 3  #: max(d, width_code(w)) (widest path, in width codes: see width_code)
#: x[u] / outdeg[u], summed (PageRank's share of a rank): a summing program's operand,
#: which its own step computes per vertex before an iteration sums it over the in-edges
#: (docs/design.md, "Summing programs"); no relaxation kernel sees it.
SHARE = 4
#: The operators a relaxation offers (the min engine's kernels are built for each).
RELAXING = (HOP, LABEL, DISTANCE, WIDTH)

INT_INF = np.int32(np.iinfo(np.int32).max)  #: "unreached" for int32 values; never added to
FLOAT_INF = np.float32(np.inf)  #: "unreached" for float32 values

#: The bits of float32 +inf. For a width ``w >= 0`` the int32 ``WIDTH_CODE_BASE -
#: bits(w)`` orders the other way round (non-negative floats order as their bits do), so
#: the widest path's max-min is the engine's min-max over codes, exactly.
WIDTH_CODE_BASE = np.int32(0x7F800000)


@dataclass(frozen=True)
class EdgeOperator:
    """An offer over one edge: its kernel code, its formula, the dtype of the values it
    relaxes, whether it reads stored weights, and whether pushes may go in delta-stepping
    bins of values (the offer grows by the edge's weight: bins then hold values that
    cannot be lowered by pushes from later bins)."""

    code: int
    formula: str
    dtype: np.dtype
    weighted: bool
    binned: bool = False

    @property
    def inf(self) -> np.int32 | np.float32:
        """The identity of the min: the value of an unreached vertex."""
        return FLOAT_INF if self.dtype == np.float32 else INT_INF


OPERATORS = {op.code: op for op in (
    EdgeOperator(HOP, "d + 1", np.dtype(np.int32), weighted=False),
    EdgeOperator(LABEL, "d", np.dtype(np.int32), weighted=False),
    EdgeOperator(DISTANCE, "d + w", np.dtype(np.float32), weighted=True, binned=True),
    EdgeOperator(WIDTH, "max(d, width_code(w))", np.dtype(np.int32), weighted=True),
    EdgeOperator(SHARE, "x[u] / outdeg[u]", np.dtype(np.float64), weighted=False),
)}


def operator(code: int) -> EdgeOperator:
    if code not in OPERATORS:
        raise ValueError(f"unknown edge operator {code!r}; expected one of {tuple(OPERATORS)}")
    return OPERATORS[code]


def value_dtype(code: int) -> np.dtype:
    """The dtype of the values the operator ``code`` relaxes."""
    return operator(code).dtype


def infinity(code: int) -> np.int32 | np.float32:
    """The value that means "unreached" for the operator ``code``."""
    return operator(code).inf


def width_codes(widths: np.ndarray) -> np.ndarray:
    """The int32 codes of float32 widths (>= 0, inf included): smaller code, wider."""
    return WIDTH_CODE_BASE - np.ascontiguousarray(widths, dtype=np.float32).view(np.int32)


def code_widths(codes: np.ndarray) -> np.ndarray:
    """The float32 widths of int32 codes (the inverse of :func:`width_codes`)."""
    return (WIDTH_CODE_BASE - np.ascontiguousarray(codes, dtype=np.int32)).view(np.float32)
