"""The loop kernels of ``te.dense_linalg``: each routine's sequential algorithm run on
each matrix of the batch (``code.py``: the shared scalar code and the registry): Gaussian elimination and substitution (``elimination.py``: solve,
det_factors, lu_factor, pivot_permutation, triangular_solve, cholesky), Householder
reflections (``householder.py``: householder_qr, householder_product) and Jacobi
rotations (``jacobi.py``: eigh, jacobi_svd); Stockham FFTs of the signals of a matrix
(``fourier.py``: fft, rfft, irfft); per element, the functions computed by iteration
(``iterative.py``: orthogonal polynomials, incomplete gamma). Every access is inside its
buffer: loops run over the matrix sizes only, and chosen rows (pivots) are among them.
"""

from __future__ import annotations

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Region, SSAValue

from ...dialects import loop, te
from ...dialects.graph.types import shape_of, tensor_type
from ..kernel_registry import KernelHost, kernel_rule
from ..loop_nest import buffer_bounds, buffer_type, emit_loop_nest
from . import elimination, fourier, householder, iterative, jacobi, products  # noqa: F401  (register their routines)
from .code import ROUTINES, KernelArgs, LoopNames, MatrixAt, ScalarCode


def workspace_type(op: te.DenseLinalgOp) -> TensorType | None:
    """The workspace of ``op``'s kernel: the routine's (an ``n x n`` matrix, ...) per
    matrix of the result's batch, or None for routines working in their output."""
    core = ROUTINES[op.routine.data].workspace
    if core is None:
        return None
    signature = te.DENSE_LINALG_ROUTINES[op.routine.data]
    shape = shape_of(op.result.type)
    batch = shape[: len(shape) - signature.result]
    return tensor_type((*batch, *core(op)), op.result.type.element_type)


def _batch_of(c: ScalarCode, buffer: SSAValue, ivs: list[SSAValue], rank: int) -> tuple[SSAValue, ...]:
    """The batch indices into ``buffer`` (its leading ``rank`` axes) of the result's
    matrix at ``ivs``: numpy broadcasting (static size-1 axes read index 0; missing
    leading axes are dropped)."""
    shape = buffer.type.get_shape()[:rank]
    offset = len(ivs) - rank
    return tuple(c.index(0) if size == 1 else ivs[offset + axis] for axis, size in enumerate(shape))


def dense_linalg_kernel(op: te.DenseLinalgOp, name: str) -> func.FuncOp:
    """The kernel ``name(inputs..., out[, workspace])`` of ``op``: its routine run on each
    matrix, inside the batch loops."""
    routine = op.routine.data
    signature = te.DENSE_LINALG_ROUTINES[routine]
    workspace = workspace_type(op)
    types = [buffer_type(v.type) for v in op.inputs] + [buffer_type(op.result.type)]
    types += [buffer_type(workspace)] if workspace is not None else []
    entry = Block(arg_types=types)
    inputs, out = entry.args[: len(op.inputs)], entry.args[len(op.inputs)]
    b = Builder(InsertPoint.at_end(entry))
    input_bounds = [buffer_bounds(b, v) for v in inputs]
    out_bounds = buffer_bounds(b, out)
    batch_rank = len(out_bounds) - signature.result
    ivs, inner = emit_loop_nest(b, out_bounds[:batch_rank], "i", role="spatial")
    cores = [*zip(inputs, signature.inputs), (out, signature.result)]
    static = [d for v, core in cores for d in v.type.get_shape()[len(v.type.get_shape()) - core :]]
    largest = max(static) if static and min(static) >= 0 else None
    c = ScalarCode(inner, op.result.type.element_type, LoopNames(), largest)
    args = KernelArgs(
        c,
        op,
        [MatrixAt(v, _batch_of(c, v, ivs, len(v.type.get_shape()) - core)) for v, core in zip(inputs, signature.inputs)],
        [bounds[len(bounds) - core :] for bounds, core in zip(input_bounds, signature.inputs)],
        MatrixAt(out, tuple(ivs)),
        out_bounds[batch_rank:],
        MatrixAt(entry.args[-1], tuple(ivs)) if workspace is not None else None,
    )
    ROUTINES[routine].emit(args)
    b.insert(func.ReturnOp())
    kernel = func.FuncOp(name, (types, []), Region(entry))
    loop.set_kernel_tag(kernel, routine)
    return kernel


@kernel_rule(te.DenseLinalgOp)
def dense_linalg(host: KernelHost, op: te.DenseLinalgOp, target: SSAValue) -> None:
    """One kernel running the routine per matrix, given a workspace (a temporary: one
    matrix per matrix of the batch) when it factors a copy."""
    kernel = dense_linalg_kernel(op, host.kernel_name(op.routine.data))
    workspace = workspace_type(op)
    extra = [host.temporary(workspace)] if workspace is not None else []
    host.call(kernel, [host.buffer(v) for v in op.inputs] + [target, *extra])


__all__ = ["dense_linalg", "dense_linalg_kernel", "workspace_type"]
