"""The host side of a gpu-level module as Python source: what runs on the CPU to
allocate device buffers and launch the kernels, with grid sizes computed from the
arguments' shapes at each call (symbolic shapes work).

The host function (``func.func @main`` after ``loop-to-gpu``) holds only ``loop.dim``,
``loop.alloc``/``loop.free`` (global buffers), index arithmetic, ``gpu.launch_func``,
``func.call`` of external modules (BYOC regions: ``tk.byoc.partition_for``) and
``func.return``; it becomes::

    def main(rt, x, out0, w0):
        v0 = x.shape[0]
        v1 = rt.empty((v0, 13), "float32")
        v2 = ...                                     # grid size, from v0
        rt.launch("dense_0", (v2, 1, 1), (256, 1, 1), (x, w0, v1), ((0,), (), (0,)))
        rt.call_external("cublas_main_0", (v1, out0, ))
        ...

``rt`` (``runtime.py``, or a test double) provides ``empty(shape, dtype)`` and
``launch(kernel, grid, block, buffers, dynamic_dims)``: ``dynamic_dims[k]`` lists the
axes of buffer ``k`` whose sizes the kernel takes as ``int`` arguments after its
pointer; and ``call_external(symbol, buffers)``: the external module ``symbol`` reads
its inputs and writes its outputs, in that order in ``buffers`` (the order of the
native calling convention, see ``byoc/external.py``). The generated code imports
nothing, so the runtime can exec it without xDSL.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from xdsl.dialects import arith, func, gpu
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Operation, SSAValue

from ...dialects import loop

HELPERS = """\
def _divsi(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q

def _remsi(a, b):
    return a - _divsi(a, b) * b

"""

# i16: also bfloat16's bits (lowering/bf16_storage.py)
_DTYPES = {
    "f32": "float32", "f64": "float64", "f16": "float16", "i32": "int32", "i64": "int64", "i16": "int16", "i8": "int8",
    "i1": "bool",
}  # fmt: skip


class HostPrintError(ValueError):
    """An op the host printer does not know."""


def dtype_name(t: object) -> str:
    name = _DTYPES.get(str(t))
    if name is None:
        raise HostPrintError(f"no numpy dtype for element type {t}")
    return name


#: each host-side binary op: its Python expression (a format of its operands' names) and
#: what it computes, to fold constant operands when printing (the same helpers as the program)
_HELPER_FUNCTIONS: dict[str, Callable[[int, int], int]] = {}
exec(HELPERS, _HELPER_FUNCTIONS)
_BINARY: dict[type[Operation], tuple[str, Callable[[int, int], int]]] = {
    arith.AddiOp: ("{} + {}", operator.add),
    arith.SubiOp: ("{} - {}", operator.sub),
    arith.MuliOp: ("{} * {}", operator.mul),
    arith.DivSIOp: ("_divsi({}, {})", _HELPER_FUNCTIONS["_divsi"]),
    arith.DivUIOp: ("{} // {}", operator.floordiv),
    arith.RemSIOp: ("_remsi({}, {})", _HELPER_FUNCTIONS["_remsi"]),
    arith.RemUIOp: ("{} % {}", operator.mod),
    arith.FloorDivSIOp: ("{} // {}", operator.floordiv),
    arith.CeilDivSIOp: ("-(-{} // {})", lambda a, b: -(-a // b)),
    arith.MaxSIOp: ("max({}, {})", max),
    arith.MinSIOp: ("min({}, {})", min),
}


def print_host(function: func.FuncOp) -> str:
    """Python source of ``def <name>(rt, *buffers)`` for a host function. Index arithmetic
    on constants is done here, once: a static model's launches get literal grid sizes
    instead of recomputing them at every call."""
    names: dict[SSAValue, str] = {}
    known: dict[SSAValue, int] = {}  # values computed while printing

    def name(v: SSAValue) -> str:
        if v in known:
            return str(known[v])
        if v not in names:
            names[v] = f"v{len(names)}"
        return names[v]

    args = [name(a) for a in function.body.block.args]
    lines = [f"def {function.sym_name.data}(rt, {', '.join(args)}):"]
    for op in function.body.block.ops:
        match op:
            case loop.DimOp():
                lines.append(f"{name(op.result)} = {name(op.buffer)}.shape[{op.axis.value.data}]")
            case loop.AllocOp():
                t: MemRefType = op.result.type
                dynamic = iter(op.dynamic_sizes)
                dims = [name(next(dynamic)) if d < 0 else str(d) for d in t.get_shape()]
                shape = "(" + "".join(f"{d}, " for d in dims) + ")"
                lines.append(f"{name(op.result)} = rt.empty({shape}, {dtype_name(t.element_type)!r})")
            case loop.FreeOp():
                lines.append(f"{name(op.buffer)} = None")
            case arith.ConstantOp() if isinstance(op.value, IntegerAttr):
                known[op.result] = op.value.value.data
            case _ if type(op) in _BINARY:
                expression, compute = _BINARY[type(op)]
                if all(v in known for v in op.operands):
                    try:
                        known[op.results[0]] = compute(*(known[v] for v in op.operands))
                        continue
                    except ZeroDivisionError:  # printed: it raises when run, as it would unfolded
                        pass
                lines.append(f"{name(op.results[0])} = {expression.format(*(name(v) for v in op.operands))}")
            case gpu.LaunchFuncOp():
                kernel = op.kernel.nested_references.data[-1].data
                grid = ", ".join(name(v) for v in (op.gridSizeX, op.gridSizeY, op.gridSizeZ))
                block = ", ".join(name(v) for v in (op.blockSizeX, op.blockSizeY, op.blockSizeZ))
                buffers, dynamic = [], []
                for v in op.kernelOperands:
                    if not isinstance(v.type, MemRefType):
                        raise HostPrintError(f"kernel '{kernel}' takes a scalar argument ({v.type}); only buffers are passed")
                    buffers.append(name(v))
                    dynamic.append(tuple(k for k, d in enumerate(v.type.get_shape()) if d < 0))
                lines.append(
                    f"rt.launch({kernel!r}, ({grid}), ({block}), ({''.join(b + ', ' for b in buffers)}), {tuple(dynamic)!r})"
                )
            case func.CallOp() if not op.results:
                # an external module (byoc): te-to-loop called its symbol like a kernel
                buffers = [name(v) for v in op.arguments]
                lines.append(f"rt.call_external({op.callee.string_value()!r}, ({''.join(b + ', ' for b in buffers)}))")
            case func.ReturnOp():
                lines.append("return")
            case _:
                raise HostPrintError(f"the host printer has no rule for '{op.name}' in '{function.sym_name.data}'")
    return HELPERS + "\n".join(lines[:1] + ["    " + line for line in lines[1:]]) + "\n"


__all__ = ["HostPrintError", "dtype_name", "print_host"]
