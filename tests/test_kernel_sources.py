"""The CUDA kernels' interface (seraph/backends/cuda/kernels/interface.py), checked without
a GPU: the header carries the Python side's constants, the kernel files take their parameter lists
from it and keep no copies, each relaxing kernel is named for each edge operator's functor,
launches are packed in the declared order and types, and (where nvcc is installed) every
kernel compiles, for every operator, as the CUDA backend hands it to cupy."""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib import resources

import numpy as np
import pytest

from seraph import operators, predictors
from seraph.backends.cpu import pull as cpu_kernels
from seraph.backends.cuda.kernels import interface
from seraph.scheduler import PREDICTOR_CODES

SOURCES = sorted({k.source for k in interface.KERNELS.values()})


def kernel_file(name: str) -> str:
    return resources.files("seraph.backends.cuda.kernels").joinpath(name).read_text()


def defines(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#define (\w+) (.*)$", text, re.M))


@pytest.mark.parametrize("source", SOURCES)
def test_header_defines_the_python_constants(source):
    got = defines(interface.header(source))
    want = {"WIDTH_CODE_BASE": int(operators.WIDTH_CODE_BASE),
            "PRED_NONE": PREDICTOR_CODES["none"], "PRED_STRONG": PREDICTOR_CODES["strong"],
            "PRED_WEAK": PREDICTOR_CODES["weak"], "OWES": int(predictors.OWES),
            "STATE_MASK": int(predictors.STATE_MASK), "MAX_STATES": predictors.MAX_STATES,
            "ATTEMPTED": cpu_kernels.ATTEMPTED, "SUCCEEDED": cpu_kernels.SUCCEEDED,
            "SKIPPED_STRONG": cpu_kernels.SKIPPED_STRONG,
            "SKIPPED_WEAK": cpu_kernels.SKIPPED_WEAK, "NUM_COUNTERS": cpu_kernels.NUM_COUNTERS}
    assert {name: int(got[name]) for name in want} == want


@pytest.mark.parametrize("source", [*SOURCES, "values.cuh"])
def test_kernel_files_keep_no_copies(source):
    """No constant of the header is defined again, and every kernel is a template over its
    operator or value type (or a plain kernel) over its generated parameter list, not an
    extern "C" entry point."""
    text = kernel_file(source)
    assert not set(defines(text)) & set(interface.constants())
    assert 'extern "C"' not in text
    for name, kernel in interface.KERNELS.items():
        if kernel.source == source:
            template = (r"template <typename Op>\s*" if kernel.operators
                        else r"template <typename V>\s*" if kernel.value_types else "")
            assert re.search(rf"{template}__global__ void {name}\({name.upper()}_PARAMS\)",
                             text), name


def test_every_operator_has_a_functor():
    """Each relaxing kernel is built for every relaxing operator of seraph.operators, the
    recomputing sum's for SHARE, and each operator's functor is defined in values.cuh with
    the operator's value type."""
    values = kernel_file("values.cuh")
    assert tuple(interface.FUNCTORS) == (*operators.RELAXING, operators.SHARE)
    c_types = {np.dtype(t): name for name, t in interface.SCALARS.items()}
    for code, functor in interface.FUNCTORS.items():
        c_type = c_types[operators.operator(code).dtype]
        assert re.search(rf"struct {functor} {{\s*using V = {c_type};", values), functor
    for name in ("pull_window", "pull_persistent", "pull_unsettled", "push_loop"):
        assert interface.KERNELS[name].operators == tuple(
            operators.operator(code) for code in operators.RELAXING)
    for name in ("recompute_window", "split_sums_from_values"):
        assert interface.KERNELS[name].operators == (operators.operator(operators.SHARE),)


def test_name_expressions_cover_each_kernel_and_template_argument():
    functors = [interface.FUNCTORS[code] for code in operators.RELAXING]
    assert interface.name_expressions("pull.cu") == [
        f"{k}<{f}>" for k in ("pull_window", "pull_persistent", "pull_unsettled")
        for f in functors]
    distance = operators.operator(operators.DISTANCE)
    assert interface.name_expression("pull_window", distance) == "pull_window<Distance>"
    assert interface.name_expressions("push.cu", (distance,)) == ["push_loop<Distance>"]
    assert interface.value_type_of("push_loop", distance) == np.float32
    assert interface.value_type_of("push_loop", operators.operator(operators.WIDTH)) == np.int32
    assert {"count_selected<unsigned char>", "count_states"} <= \
        set(interface.name_expressions("select.cu"))
    assert interface.name_expression("count_selected", np.dtype(np.float32)) == \
        "count_selected<float>"
    assert interface.name_expressions("reach.cu") == ["label_from_reach"]
    share = operators.operator(operators.SHARE)
    sums = ["gather_sum<float>", "gather_sum<double>"]
    assert interface.name_expressions("gather.cu", (share,)) == [
        *sums, "recompute_window<Share>", "walk_step<float>", "walk_step<double>",
        "walk_totals<Share>", "split_sums_from_values<Share>"]
    assert interface.name_expressions("gather.cu", ()) == [*sums, "walk_step<float>",
                                                           "walk_step<double>"]
    assert interface.value_type_of("recompute_window", share) == np.float64
    with pytest.raises(TypeError, match="built for"):
        interface.name_expression("pull_window", np.dtype(np.float32))
    with pytest.raises(TypeError, match="built for"):
        interface.name_expression("pull_window")
    with pytest.raises(TypeError, match="built for"):
        interface.name_expression("count_selected", distance)
    with pytest.raises(TypeError, match="built for"):
        interface.name_expression("label_from_reach", np.dtype(np.int32))


def test_packer_orders_and_types_the_arguments():
    value_type = np.dtype(np.float32)  # the operator's
    args, want = {}, []
    for i, p in enumerate(interface.params("push_loop")):
        dtype = value_type if p.base == "V" else np.dtype(interface.SCALARS[p.base])
        if p.pointer:
            args[p.name] = np.zeros(1, dtype)
        else:
            args[p.name] = i  # a Python int: cupy would pass it as an int64
        want.append((args[p.name], dtype))
    pack = interface.packer("push_loop", operators.operator(operators.DISTANCE))
    got = pack(dict(reversed(args.items())))  # the order of the names does not matter
    assert len(got) == len(want)
    for arg, (given, dtype) in zip(got, want, strict=True):
        if isinstance(given, np.ndarray):
            assert arg is given
        else:
            assert arg.dtype == dtype and arg == given
    states = [p.name for p in interface.params("push_loop")].index("states")
    assert pack(dict(args, states=None))[states] is None  # NULL
    with pytest.raises(TypeError, match=r"missing \['epoch'\]"):
        pack({k: v for k, v in args.items() if k != "epoch"})
    with pytest.raises(TypeError, match=r"unknown \['extra'\]"):
        pack(dict(args, extra=1))
    with pytest.raises(TypeError, match="values: expected an array of float32, got int32"):
        pack(dict(args, values=np.zeros(1, np.int32)))
    with pytest.raises(TypeError, match="ends: expected an array of int64, got int"):
        pack(dict(args, ends=7))


def test_a_parameter_of_unknown_type_is_refused(monkeypatch):
    monkeypatch.setitem(interface.KERNELS, "bad", interface.Kernel("pull.cu", ("short x",)))
    with pytest.raises(ValueError, match=r"bad\.x: unknown type 'short'"):
        interface.params("bad")
    monkeypatch.setitem(interface.KERNELS, "plain", interface.Kernel("pull.cu", ("V x",)))
    with pytest.raises(ValueError, match=r"plain\.x: V in a kernel that is not a template"):
        interface.params("plain")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("source", SOURCES)
def test_every_kernel_compiles(tmp_path, source):
    """What the CUDA backend compiles, with every name expression (each relaxing kernel for
    every edge operator) instantiated as NVRTC does, by taking its address, builds for
    sm_90 under nvcc with cupy's -ftz=true, and holds each instantiation."""
    expressions = interface.name_expressions(source)
    lines = [interface.source_code(source)]
    lines += [f"void* const address_{i} = (void*)&{expr};" for i, expr in enumerate(expressions)]
    path = tmp_path / source
    path.write_text("\n".join(lines) + "\n")
    cubin = tmp_path / "out.cubin"
    result = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-ftz=true", "-cubin",
                             "-o", str(cubin), str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    symbols = cubin.read_bytes()
    for expr in expressions:
        assert mangled(expr).encode() in symbols, expr


#: The Itanium mangling of the kernels' builtin template arguments.
_BUILTINS = {"int": "i", "float": "f", "double": "d", "unsigned char": "h"}


def mangled(expr: str) -> str:
    """The start of a name expression's mangled name: ``pull_window<Distance>`` is
    ``_Z11pull_windowI8DistanceE``."""
    name, _, argument = expr.removesuffix(">").partition("<")
    out = f"_Z{len(name)}{name}"
    if argument:
        out += f"I{_BUILTINS.get(argument) or f'{len(argument)}{argument}'}E"
    return out
