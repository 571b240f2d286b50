"""Software prefetch for compiled loops that walk a frontier's rows, built as a numba
intrinsic (numba has none of its own).

A push round over a small frontier (a road network's or a grid's BFS level) is bound by
memory latency, not bandwidth: each frontier vertex costs a miss on its row bounds, then
one on its row, and the loop's next vertex waits behind them. Asking for the rows of the
vertices a few places ahead overlaps those misses, as a hardware prefetcher does for a
sequential scan but cannot for the frontier's scattered ids. The verifiers' edge passes
ask for their edges' tails ahead for the same reason; a hint changes nothing they read.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hints that ``arr[idx]`` will be read soon (LLVM ``llvm.prefetch``: a read, kept in
    every cache level). No bounds check; a hint never faults, even out of bounds."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(idx, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty = sig.args
        array = context.make_array(aryty)(context, builder, value=args[0])
        index = context.cast(builder, args[1], idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, array, [index],
                                       wraparound=False)
        byte_ptr, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        # The unsuffixed name: LLVM renames it to the pointer type's own overload, whether
        # pointers are typed (LLVM 14, numba 0.59) or opaque (LLVM 15 on).
        hint = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
            "llvm.prefetch")
        read, keep_in_all_caches, data = (ir.Constant(i32, c) for c in (0, 3, 1))
        builder.call(hint, [builder.bitcast(ptr, byte_ptr), read, keep_in_all_caches, data])
        return context.get_dummy_value()

    return types.void(arr, idx), codegen

