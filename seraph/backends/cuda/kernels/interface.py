"""The CUDA kernels' interface, declared once: the constants they share with the Python side,
each kernel's parameters, and what each kernel is a template over.

The kernel files hold no constant and no parameter list. :func:`header` writes the
constants as ``#define``s and, for each kernel, its parameter list (``PULL_WINDOW_PARAMS``),
the names in that list (``PULL_WINDOW_ARGS``, for a kernel that hands them on) and its
declaration; :func:`source_code` puts it in front of ``values.cuh`` and the kernel file;
:func:`name_expression` names a kernel's instantiation for an edge operator
(``pull_window<Distance>``: values.cuh's functor for :data:`seraph.operators.DISTANCE`) or
a value type (``count_selected<float>``); and :func:`packer` turns a launch's keyword
arguments into the positional tuple in the parameters' order, each scalar as its
parameter's type. Kernels take plain parameters rather than structs: nvcc optimises loads
through a struct parameter differently (loop unswitching, the read-only cache), and the
kernels' code should not change with their plumbing.

This module needs no cupy, so the CPU test suite checks it (tests/test_kernel_sources.py).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

import numpy as np

from seraph.backends.cpu.pull import (
    ATTEMPTED,
    NUM_COUNTERS,
    SKIPPED_STRONG,
    SKIPPED_WEAK,
    SUCCEEDED,
)
from seraph.operators import (
    DISTANCE,
    HOP,
    LABEL,
    RELAXING,
    SHARE,
    WIDTH,
    WIDTH_CODE_BASE,
    EdgeOperator,
    operator,
)
from seraph.predictors import MAX_STATES, NONE, OWES, STATE_MASK, STRONG, WEAK

#: The functor (values.cuh) of each edge operator the kernels are built for (their template
#: argument Op), by the operator's code: the relaxing ones, and SHARE, a recomputing sum's.
FUNCTORS = {HOP: "Hop", LABEL: "Label", DISTANCE: "Distance", WIDTH: "Width", SHARE: "Share"}
#: The C name of each value type a kernel may be built for (its template argument V).
VALUE_TYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.int32): "int",
               np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
#: The value types the selecting kernels are built for: the relaxing programs'.
_SELECTED = tuple(np.dtype(t) for t in (np.uint8, np.int32, np.float32))
#: The numpy type of each C scalar type a parameter may have.
SCALARS = {"unsigned char": np.uint8, "int": np.int32, "unsigned int": np.uint32,
           "long long": np.int64, "unsigned long long": np.uint64, "float": np.float32,
           "double": np.float64}


def constants() -> dict[str, int]:
    """The codes the kernels share with the Python side: the width codes' base
    (seraph.operators), predictor codes, the sweep counters' columns
    (seraph.backends.cpu.pull) and the weak predictor's state bits (seraph.predictors)."""
    return {"WIDTH_CODE_BASE": int(WIDTH_CODE_BASE),
            "PRED_NONE": NONE, "PRED_STRONG": STRONG, "PRED_WEAK": WEAK,
            "ATTEMPTED": ATTEMPTED, "SUCCEEDED": SUCCEEDED,
            "SKIPPED_STRONG": SKIPPED_STRONG, "SKIPPED_WEAK": SKIPPED_WEAK,
            "NUM_COUNTERS": NUM_COUNTERS,
            "OWES": int(OWES), "STATE_MASK": int(STATE_MASK), "MAX_STATES": MAX_STATES}


# Parameters are "C type name": a scalar, or a pointer (a device array of the pointee's
# dtype, or None for NULL). V is the kernel's value type (its operator's, Op::V).
#: The edges a pull or push relaxes, and the values it lowers (values.cuh: the operator's
#: offer).
_EDGES = ("const int* indices", "const float* weights", "V* values", "V inf")
#: A pull's edges, whether each row lists them lightest first (SSSP's lightest_first;
#: values.cuh: weight_reaches), and whether the rounds count levels, so that a bottom-up
#: pull stops at the threshold (BFS's; pull.cu: pull_tiles).
_PULL_EDGES = (*_EDGES, "int by_weight", "int levels")
#: The strong rule (values.cuh: StrongRule): value <= threshold + light_codes[v] * light_unit.
_STRONG = ("V threshold", "const unsigned char* light_codes", "float light_unit")
#: A window: its pages, their slot offsets and the prefix sums of their vertices and hub
#: chunks, then the graph's paging and hub chunks.
_WINDOW = (
    "const long long* pages", "const long long* offsets", "const long long* vertex_prefix",
    "const long long* chunk_prefix", "int num_window_pages", "const long long* page_first",
    "long long page_edges", "long long num_edges", "const long long* indptr",
    "const long long* page_chunks", "const long long* hub_chunks", "long long hub_edges")
#: A window sweep (pull.cu: WindowItems, sweep_items): the window, the edges, the
#: predictor, what a success marks and the lane groups.
_PULL_WINDOW = (
    *_WINDOW, *_PULL_EDGES, "int predictor", *_STRONG, "const unsigned char* table",
    "int num_states",
    "unsigned char* states", "unsigned char* changed", "long long* block_epoch",
    "int block_shift", "long long epoch", "unsigned long long* counters", "int light_lanes",
    "long long heavy_edges", "V* min_written")


@dataclass(frozen=True)
class Kernel:
    """A kernel: its file in kernels/, its parameters, and what it is a template over: the
    edge operators it is built for (``template <typename Op>``, its value type V being
    ``Op::V``), or the value types (``template <typename V>``), or neither."""

    source: str
    params: tuple[str, ...]
    operators: tuple[EdgeOperator, ...] = ()
    value_types: tuple[np.dtype, ...] = ()


#: The operators the relaxing kernels (pull.cu, push.cu) are built for, and the summing one
#: that recompute_window is (gather.cu).
_RELAXING = tuple(operator(code) for code in RELAXING)
_SUMMING = (operator(SHARE),)
KERNELS = {
    "pull_window": Kernel("pull.cu", _PULL_WINDOW, _RELAXING),
    # Sweeps until told to stop (pull.cu: pull_persistent); launched cooperatively. `live`
    # (here and in push_loop) is host memory mapped into the device's: [0] set by the host
    # when a signal stops the run, [1] and [2] a push phase's rounds and frontier so far.
    "pull_persistent": Kernel("pull.cu", (
        *_PULL_WINDOW, "int max_sweeps", "const long long* landed_seq", "int incoming_slot",
        "long long expected_seq", "int mandatory", "int* control", "const long long* live"),
        _RELAXING),
    # A bottom-up round: every vertex with all its in-edges (pull.cu: VertexItems).
    "pull_unsettled": Kernel("pull.cu", (
        "const long long* indptr", "long long num_vertices", "const long long* hub_chunks",
        "long long num_chunks", "long long hub_edges", *_PULL_EDGES, *_STRONG,
        "unsigned char* changed", "long long* block_epoch", "int block_shift",
        "long long epoch", "unsigned long long* counters", "V* min_written"), _RELAXING),
    # A sparse phase's push rounds, near-far with a finite delta (push.cu); launched
    # cooperatively.
    "push_loop": Kernel("push.cu", (
        "int* near_a", "int* near_b", "long long count", "long long capacity", "long long n",
        "long long* ends", "long long* block_sums", "const long long* out_indptr", *_EDGES,
        "V delta", "long long edge_limit", "unsigned int* claimed", "unsigned char* states",
        "unsigned char initial_state", "long long* block_epoch", "int block_shift",
        "long long epoch", "unsigned long long* counters", "V* mins", "long long* result",
        "long long max_degree", "long long* live"),
        _RELAXING),
    "count_selected": Kernel("select.cu", (
        "const V* value", *_STRONG, "const long long* indptr", "long long n",
        "unsigned long long* totals"), value_types=_SELECTED),
    "list_selected": Kernel("select.cu", (
        "const V* value", *_STRONG, "long long n", "int* out", "unsigned long long* claimed"),
        value_types=_SELECTED),
    "count_states": Kernel("select.cu", (
        "const unsigned char* states", "long long n", "int num_states",
        "unsigned long long* counts")),
    "count_awake": Kernel("select.cu", (
        "const long long* pages", "int shares", "const long long* page_first",
        "const long long* page_last", "long long page_edges", "long long num_edges",
        "const long long* indptr", "const unsigned char* states",
        "const unsigned char* attempt", "long long hub_edges",
        "unsigned long long* counts")),
    "label_from_reach": Kernel("reach.cu", (
        "int* value", "int inf", "const long long* smallest", "const long long* out_indptr",
        "long long n", "unsigned char* spreads")),
    # Union-find components (union_find.cu): the CSC's rows, and CC's labels as parents.
    "link_sampled": Kernel("union_find.cu", (
        "const long long* indptr", "const int* indices", "int* parent", "long long n")),
    "link_rest": Kernel("union_find.cu", (
        "const long long* indptr", "const int* indices", "int* parent", "long long n",
        "int skip_root")),
    "compress": Kernel("union_find.cu", ("int* parent", "long long n")),
    "link_parents": Kernel("union_find.cu", ("int* parent", "const int* other", "long long n")),
    # A summing program's pass over a window (gather.cu): the window as pull_window's, then
    # the edges, what they sum (of the operand's type: PageRank's shares may be float) and
    # where.
    "gather_sum": Kernel("gather.cu", (
        *_WINDOW, "const int* indices", "const V* operand", "double* into",
        "int light_lanes", "long long heavy_edges"),
        value_types=(np.dtype(np.float32), np.dtype(np.float64))),
    # A recomputing program's sweep over a window (gather.cu; seraph/spec.py, Recompute): the
    # window, the edges, the operands, sums and scales, the pieces' partial sums (two a page,
    # one a hub chunk), the rule's factor and eps, the weak predictor, what a success marks,
    # the counts and the lane groups.
    "recompute_window": Kernel("gather.cu", (
        *_WINDOW, "const int* indices", "V* operand", "V* values", "const V* scale",
        "V* page_sums", "V* chunk_sums", "V factor", "V eps", "int predictor",
        "const unsigned char* table", "int num_states", "unsigned char* states",
        "long long* block_epoch", "int block_shift", "long long epoch",
        "unsigned long long* counters", "unsigned long long* edges_read", "double* moved",
        "int light_lanes", "long long heavy_edges"), _SUMMING),
    # An iterating walk's step from its sums (gather.cu): the vectors (the operand of the
    # shares' type), the step's parameters (vertex -1: a uniform restart) and the change a
    # block.
    "walk_step": Kernel("gather.cu", (
        "double* values", "double* sums", "const double* scale", "V* operand",
        "double damping", "double jump", "long long vertex", "long long n",
        "double* partial"), value_types=(np.dtype(np.float32), np.dtype(np.float64))),
    # Its totals between rounds, a pair a block (gather.cu).
    "walk_totals": Kernel("gather.cu", (
        "const V* values", "const V* scale", "long long n", "double* partial"), _SUMMING),
    # Its pieces' partial sums from its values, before its first sweep (gather.cu).
    "split_sums_from_values": Kernel("gather.cu", (
        "const long long* indptr", "const long long* page_last", "long long num_pages",
        "long long page_edges", "long long num_edges", "const long long* hub_chunks",
        "long long num_chunks", "const V* values", "V* page_sums", "V* chunk_sums"), _SUMMING),
}


@dataclass(frozen=True)
class Param:
    """One parameter of a kernel, parsed from its "C type name" declaration."""

    name: str
    ctype: str
    pointer: bool
    base: str  # the scalar type, or the pointee's ("V": the value type)


@functools.cache
def params(kernel: str) -> tuple[Param, ...]:
    out = []
    k = KERNELS[kernel]
    for decl in k.params:
        ctype, name = decl.rsplit(" ", 1)
        base = ctype.removeprefix("const ").removesuffix("*")
        if base == "V" and not (k.operators or k.value_types):
            raise ValueError(f"{kernel}.{name}: V in a kernel that is not a template")
        if base != "V" and base not in SCALARS:
            raise ValueError(f"{kernel}.{name}: unknown type {ctype!r}")
        out.append(Param(name, ctype, ctype.endswith("*"), base))
    return tuple(out)


def header(source: str) -> str:
    """What goes in front of values.cuh and the kernel file ``source``."""
    lines = ["// Written by seraph/backends/cuda/kernels/interface.py: the kernels' constants "
             "and parameters."]
    lines += [f"#define {name} {value}" for name, value in constants().items()]
    for name, kernel in KERNELS.items():
        if kernel.source != source:
            continue
        macro = name.upper()
        ps = params(name)
        # An operator's kernel spells its value type Op::V.
        value = "typename Op::V" if kernel.operators else "V"
        decls = (re.sub(r"\bV\b", value, p.ctype) + " " + p.name for p in ps)
        lines.append(f"#define {macro}_PARAMS " + ", ".join(decls))
        lines.append(f"#define {macro}_ARGS " + ", ".join(p.name for p in ps))
        # A definition with other parameters is then an overload, which the kernel's name
        # expression cannot pick: a compile error, not garbage at run time.
        template = ("template <typename Op> " if kernel.operators
                    else "template <typename V> " if kernel.value_types else "")
        lines.append(f"{template}__global__ void {name}({macro}_PARAMS);")
    return "\n".join(lines) + "\n"


def source_code(source: str) -> str:
    """The text the CUDA backend compiles for the kernel file ``source``: the header, then
    values.cuh, then the file."""
    kernels = resources.files("seraph.backends.cuda.kernels")
    return (header(source) + kernels.joinpath("values.cuh").read_text()
            + kernels.joinpath(source).read_text())


def value_type_of(kernel: str, argument: EdgeOperator | np.dtype | None) -> np.dtype | None:
    """The value type V of ``kernel`` instantiated for ``argument`` (see
    :func:`name_expression`): the operator's dtype, the value type itself, or None."""
    name_expression(kernel, argument)  # refuses an argument the kernel is not built for
    if isinstance(argument, EdgeOperator):
        return argument.dtype
    return None if argument is None else np.dtype(argument)


def name_expression(kernel: str, argument: EdgeOperator | np.dtype | None = None) -> str:
    """The kernel's name for cupy's RawModule: ``pull_window<Distance>`` for an edge
    operator's kernel, ``count_selected<float>`` for a value type's, or the plain name."""
    k = KERNELS[kernel]
    if k.operators and isinstance(argument, EdgeOperator) and argument in k.operators:
        return f"{kernel}<{FUNCTORS[argument.code]}>"
    if k.value_types and argument is not None and not isinstance(argument, EdgeOperator) \
            and np.dtype(argument) in k.value_types:
        return f"{kernel}<{VALUE_TYPES[np.dtype(argument)]}>"
    if not k.operators and not k.value_types and argument is None:
        return kernel
    built_for = ([op.formula for op in k.operators] if k.operators
                 else [str(t) for t in k.value_types])
    raise TypeError(f"{kernel} is built for {built_for or 'no template argument'}, "
                    f"not {getattr(argument, 'formula', argument)}")


def name_expressions(source: str, operators: tuple[EdgeOperator, ...] | None = None
                     ) -> list[str]:
    """Every kernel of the file ``source``: an operator's kernel for each of ``operators``
    (None: every operator it is built for), a value type's for each value type."""
    out = []
    for name, kernel in KERNELS.items():
        if kernel.source != source:
            continue
        if kernel.operators:
            arguments = kernel.operators if operators is None else operators
        else:
            arguments = kernel.value_types or (None,)
        out += [name_expression(name, argument) for argument in arguments]
    return out


@functools.cache
def packer(kernel: str, argument: EdgeOperator | np.dtype | None = None):
    """A function from a launch's keyword arguments (a dict) to the positional ones of
    ``kernel`` instantiated for ``argument`` (see :func:`name_expression`): each scalar as
    its parameter's numpy type (cupy passes a scalar by its own type, whatever the
    parameter's), each array checked to hold the pointee's type, a missing or unknown name
    a TypeError. It is generated once per kernel and template argument, so a launch costs
    what a hand-written tuple of its arguments does: SSSP launches its pushes and
    selections hundreds of times in a run of milliseconds."""
    value_type = value_type_of(kernel, argument)
    env: dict = {"_wrong_array": _wrong_array, "_refuse": _refuse, "kernel": kernel,
                 "value_type": value_type}
    items = []
    for i, p in enumerate(params(kernel)):
        dtype = value_type if p.base == "V" else np.dtype(SCALARS[p.base])
        arg = f"args[{p.name!r}]"
        if p.pointer:
            # Builtin dtypes are singletons: the identity test spares most launches the
            # compare.
            env[f"d{i}"] = dtype
            items.append(f"x if (x := {arg}) is None or x.dtype is d{i} or x.dtype == d{i} "
                         f"else _wrong_array(kernel, {p.name!r}, x, d{i})")
        else:
            env[f"t{i}"] = dtype.type
            items.append(f"t{i}({arg})")
    exec(f"""def pack(args):
    if len(args) != {len(items)}:
        _refuse(kernel, value_type, args)
    try:
        return ({", ".join(items)},)
    except (KeyError, AttributeError):
        _refuse(kernel, value_type, args)
""", env)
    return env["pack"]


def _wrong_array(kernel: str, name: str, arg, dtype: np.dtype):
    raise TypeError(f"{kernel}.{name}: expected an array of {dtype}, got "
                    f"{getattr(arg, 'dtype', type(arg).__name__)}")


def _refuse(kernel: str, value_type: np.dtype | None, args: dict):
    """Says what is wrong with a launch's arguments: a name missing or unknown, or a pointer
    given something that is not an array."""
    names = {p.name for p in params(kernel)}
    if args.keys() != names:
        raise TypeError(f"{kernel}: missing {sorted(names - args.keys())}, "
                        f"unknown {sorted(args.keys() - names)}")
    for p in params(kernel):
        if p.pointer and args[p.name] is not None and not hasattr(args[p.name], "dtype"):
            dtype = value_type if p.base == "V" else np.dtype(SCALARS[p.base])
            _wrong_array(kernel, p.name, args[p.name], dtype)
    raise AssertionError(f"{kernel}: arguments refused for no reason found")
