"""The ``scalar`` dialect: scalar ops of MLIR's ``arith``/``math`` that xDSL 0.74's lack,
and C library functions that MLIR has no op for (``lgamma``).

They appear where ``arith``/``math`` ops do (``te.compute`` bodies, loop bodies, GPU
kernels) and are converted by the same tables (``lowering/scalar_to_llvm.py``, the
vectoriser, the CUDA printer). Example::

    %r = scalar.remf %a, %b : f32
    %e = scalar.erfc %x : f32
"""

from __future__ import annotations

from xdsl.dialects.arith import FloatingPointLikeBinaryOperation
from xdsl.dialects.math import FloatingPointLikeUnaryMathOperation
from xdsl.ir import Dialect, Operation
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure


@irdl_op_definition
class RemFOp(FloatingPointLikeBinaryOperation):
    """The remainder of ``lhs / rhs`` truncated toward zero: C's ``fmod``, exact, with the
    sign of ``lhs`` (MLIR's ``arith.remf``; LLVM's ``frem``). ``remf(x, 0)``,
    ``remf(inf, y)`` are NaN; ``remf(x, inf)`` is ``x``.

    Example: ``%r = scalar.remf %a, %b : f32``
    """

    name = "scalar.remf"
    traits = traits_def(Pure())


@irdl_op_definition
class ErfcOp(FloatingPointLikeUnaryMathOperation):
    """``1 - erf(x)`` with full relative accuracy where it is tiny (C's ``erfc``; MLIR's
    ``math.erfc``).

    Example: ``%e = scalar.erfc %x : f32``
    """

    name = "scalar.erfc"
    traits = traits_def(Pure())


@irdl_op_definition
class LgammaOp(FloatingPointLikeUnaryMathOperation):
    """``log(|gamma(x)|)`` (C's ``lgamma``): +inf at 0 and the negative integers.

    Example: ``%l = scalar.lgamma %x : f32``
    """

    name = "scalar.lgamma"
    traits = traits_def(Pure())


Scalar = Dialect("scalar", [RemFOp, ErfcOp, LgammaOp], [])

#: the dialects of the scalar arithmetic in kernel bodies (te.compute, loops, GPU kernels)
SCALAR_DIALECTS = ("arith", "math", "scalar", "lowp")  # lowp: low-precision dot products (dialects/lowp.py)


def is_scalar_arithmetic(op: Operation) -> bool:
    """An ``arith``/``math``/``scalar`` op without regions: pure, copied as it is into GPU
    kernels and recomputed where needed."""
    return op.name.split(".")[0] in SCALAR_DIALECTS and not op.regions


__all__ = ["SCALAR_DIALECTS", "ErfcOp", "LgammaOp", "RemFOp", "Scalar", "is_scalar_arithmetic"]
