"""Fast Fourier transforms of complex data held as two real parts.

``graph.fft %re, %im {axis}`` transforms the complex matrices ``re + i im``
``(..., rows, columns)`` along ``axis``: -1 (each row a signal: the natural layout of a
transform along the last axis) or -2 (each column a signal: a transform along a middle
axis, whose signals lie side by side in memory). The result ``(..., 2, rows, columns)``
holds the real parts, then the imaginary ones, of the unnormalised transform
``X_k = sum_j x_j exp(-+ 2 pi i j k / n)`` (``inverse``: ``+``). The kernel computes many
signals at once, one per vector lane (``lowering/dense_linalg/fourier.py``).

The algorithm is a mixed-radix Stockham FFT (autosort: every stage reads one buffer and
writes the next in order, no bit reversal): ``n`` factored into radices (4s, then a 2,
then odd primes up to :data:`MAX_RADIX`), a stage of radix ``r`` with ``m`` points left
per sub-transform and stride ``s`` (the product of the radices before) computing for each
``p < m`` and ``q < s``::

    y[q + s (r p + k)] = w_(r m)^(p k) * sum_j x[q + s (p + m j)] w_r^(j k)     (k < r)

with ``w_L = exp(-+ 2 pi i / L)``. :func:`stockham` is the numpy reference, run by the
interpreter; the kernel runs the same stages. Lengths with a prime factor above
:data:`MAX_RADIX` are refused (the torch frontend transforms them by DFT products).

``graph.rfft %x {axis}`` gives the ``n / 2 + 1`` non-negative frequencies of real signals
(``n`` even), ``graph.irfft %re, %im {axis, length}`` the real signals back from them
(unnormalised): each a complex transform of ``n / 2`` points (the even + i odd samples) and
one pass separating (joining) the halves, in the same kernels.

Example::

    %y = graph.fft %re, %im {axis = -1 : i64, inverse = false} : tensor<8x16x64xf32>, tensor<8x16x64xf32> -> tensor<8x2x16x64xf32>
    %z = graph.rfft %x {axis = -2 : i64} : tensor<64x5xf32> -> tensor<2x33x5xf32>
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import ParsePropInAttrDict, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from .base import GraphOp, OpPatternKind, operand_shape
from .dense_linalg import _float_element
from .types import format_shape, tensor_type

#: the largest prime factor of a length ``graph.fft`` transforms (a stage of radix ``r``
#: costs ``O(r)`` per point)
MAX_RADIX = 13


def radices(n: int) -> list[int] | None:
    """The stages' radices of an ``n``-point transform (4s first, then a 2, then odd
    primes ascending; ``[]`` for ``n = 1``), or None where a prime factor exceeds
    :data:`MAX_RADIX`."""
    stages, rest = [], n
    while rest % 4 == 0:
        stages.append(4)
        rest //= 4
    if rest % 2 == 0:
        stages.append(2)
        rest //= 2
    p = 3
    while rest > 1 and p <= MAX_RADIX:
        while rest % p == 0:
            stages.append(p)
            rest //= p
        p += 2
    return stages if rest == 1 else None


def unit_circle(turns: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``cos`` and ``sin`` of ``2 pi turns / n`` (float64), exact at multiples of a quarter
    turn (``sin(pi)`` would be 1.2e-16, not 0)."""
    turns = np.asarray(turns) % n  # small angles: exact arguments
    angle = 2 * np.pi * turns / n
    cos, sin = np.cos(angle), np.sin(angle)
    quarter = (4 * turns) % n == 0
    q = (4 * turns // n)[quarter]
    cos[quarter], sin[quarter] = np.array([1.0, 0.0, -1.0, 0.0])[q], np.array([0.0, 1.0, 0.0, -1.0])[q]
    return cos, sin


def roots_of_unity(n: int, inverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """Real and imaginary parts of ``w_n^t = exp(-+ 2 pi i t / n)``, ``t < n`` (float64):
    the twiddle factors of every stage (``w_(r m)^(p k) = w_n^(p k s)``)."""
    cos, sin = unit_circle(np.arange(n), n)
    return cos, (sin if inverse else -sin)


def stockham(x: np.ndarray, inverse: bool) -> np.ndarray:
    """The transform of each line of ``x`` (complex, ``(lines, n, lanes)``) along axis 1 by
    the kernel's stages, in ``x``'s precision (the twiddles rounded to it)."""
    n = x.shape[1]
    stages = radices(n)
    assert stages is not None, n
    real_dtype = np.finfo(x.dtype).dtype
    cos, sin = roots_of_unity(n, inverse)
    table = cos.astype(real_dtype) + 1j * sin.astype(real_dtype)
    stride, length = 1, n
    for r in stages:
        m = length // r
        # x[:, q + s (p + m j)] viewed as (j, p, q); y[:, q + s (r p + k)] as (p, k, q)
        a = x.reshape(len(x), r, m, stride, -1)
        rc, rs = unit_circle(np.outer(np.arange(r), np.arange(r)), r)
        inner = (rc + 1j * (rs if inverse else -rs)).astype(x.dtype)  # w_r^(j k)
        b = np.einsum("jk,njpqv->npkqv", inner, a)
        twiddle = table[(np.outer(np.arange(m), np.arange(r)) * stride) % n]  # w_n^(p k s)
        x = (b * twiddle[None, :, :, None, None]).astype(x.dtype).reshape(x.shape)
        stride, length = stride * r, m
    return x


@irdl_op_definition
class FFTOp(GraphOp):
    """The discrete Fourier transform of the complex ``real + i imag`` ``(..., rows,
    columns)`` along ``axis`` (-1: rows are signals; -2: columns are), ``inverse``
    without ``1/n`` -> ``(..., 2, rows, columns)``: real parts, then imaginary ones.

    Example: ``%y = graph.fft %re, %im {axis = -2 : i64, inverse = true} : tensor<30x3xf64>, tensor<30x3xf64> -> tensor<2x30x3xf64>``
    """

    name = "graph.fft"
    real = operand_def(TensorType)
    imag = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=IntegerAttr(-1, i64))
    inverse = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$real `,` $imag attr-dict `:` type($real) `,` type($imag) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, real: SSAValue | Operation, imag: SSAValue | Operation, axis: int = -1, inverse: bool = False):
        self._build([real, imag], {"axis": IntegerAttr(axis, i64), "inverse": BoolAttr.from_bool(inverse)})

    def infer_result_type(self) -> TensorType:
        shape = operand_shape(self.real)
        if operand_shape(self.imag) != shape:
            raise VerifyException(
                f"real and imag must have one shape, got {format_shape(shape)} and {format_shape(operand_shape(self.imag))}"
            )
        axis = self.axis.value.data
        _check_axis(axis, shape)
        n = shape[axis]
        if radices(n) is None:
            raise VerifyException(f"a length of {n} points has a prime factor above {MAX_RADIX}")
        element = _float_element("real and imag", self.real.type, self.imag.type)
        return tensor_type((*shape[:-2], 2, *shape[-2:]), element)

    def reference(self, real: np.ndarray, imag: np.ndarray) -> np.ndarray:
        complex_dtype = np.result_type(real.dtype, np.complex64)
        z = (real + 1j * imag).astype(complex_dtype)
        if self.axis.value.data == -1:
            z = np.swapaxes(z, -1, -2)
        lines = z.reshape(-1, *z.shape[-2:])
        y = stockham(lines, bool(self.inverse.value.data)).reshape(z.shape)
        if self.axis.value.data == -1:
            y = np.swapaxes(y, -1, -2)
        return np.stack([y.real, y.imag], axis=-3).astype(real.dtype)


def _real_transform_length(n: int, what: str) -> int:
    """``h = n / 2``, the complex length a real transform of ``n`` points runs."""
    if n < 2 or n % 2 or radices(n // 2) is None:
        raise VerifyException(
            f"{what} must be even, at least 2, with half of it free of prime factors above {MAX_RADIX}, got {n}"
        )
    return n // 2


def _moved(shape, axis: int, length: int) -> tuple:
    shape = list(shape)
    shape[axis] = length
    return tuple(shape)


def _check_axis(axis: int, shape) -> None:
    if axis not in (-1, -2):
        raise VerifyException(f"axis must be -1 (rows are signals) or -2 (columns are), got {axis}")
    if len(shape) < 2:
        raise VerifyException(f"needs matrices (..., rows, columns), got shape {format_shape(shape)}")
    if not isinstance(shape[axis], int):
        raise VerifyException(f"needs a static transform length along axis {axis}, got shape {format_shape(shape)}")


@irdl_op_definition
class RFFTOp(GraphOp):
    """The non-negative frequencies of the real signals of ``input`` ``(..., rows,
    columns)`` along ``axis`` (``n`` even points: ``n / 2 + 1`` bins) -> ``(..., 2, rows,
    columns)`` with the axis cut to the bins: real parts, then imaginary ones. Computed
    as a complex transform of ``n / 2`` points (even + i odd samples) and one pass
    separating the halves.

    Example: ``%y = graph.rfft %x {axis = -1 : i64} : tensor<4x64xf32> -> tensor<2x4x33xf32>``
    """

    name = "graph.rfft"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=IntegerAttr(-1, i64))
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, input: SSAValue | Operation, axis: int = -1):
        self._build([input], {"axis": IntegerAttr(axis, i64)})

    def infer_result_type(self) -> TensorType:
        shape, axis = operand_shape(self.input), self.axis.value.data
        _check_axis(axis, shape)
        h = _real_transform_length(shape[axis], f"the length along axis {axis}")
        element = _float_element("input", self.input.type)
        return tensor_type((*shape[:-2], 2, *_moved(shape[-2:], axis, h + 1)), element)

    def reference(self, x: np.ndarray) -> np.ndarray:
        y = np.fft.rfft(x.astype(np.float64), axis=self.axis.value.data)
        return np.stack([y.real, y.imag], axis=-3).astype(x.dtype)


@irdl_op_definition
class IRFFTOp(GraphOp):
    """The real signals of ``length`` (even) points along ``axis`` whose non-negative
    frequencies are ``real + i imag`` (``length / 2 + 1`` bins along ``axis``; the
    imaginary parts of the first and last bin ignored), without ``1 / length``.

    Example: ``%x = graph.irfft %re, %im {axis = -2 : i64, length = 64 : i64} : tensor<33x4xf32>, tensor<33x4xf32> -> tensor<64x4xf32>``
    """

    name = "graph.irfft"
    real = operand_def(TensorType)
    imag = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr, default_value=IntegerAttr(-1, i64))
    length = prop_def(IntegerAttr)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$real `,` $imag attr-dict `:` type($real) `,` type($imag) `->` type($result)"
    PATTERN_KIND: ClassVar[OpPatternKind] = OpPatternKind.OPAQUE

    def __init__(self, real: SSAValue | Operation, imag: SSAValue | Operation, length: int, axis: int = -1):
        self._build([real, imag], {"axis": IntegerAttr(axis, i64), "length": IntegerAttr(length, i64)})

    def infer_result_type(self) -> TensorType:
        shape, axis, length = operand_shape(self.real), self.axis.value.data, self.length.value.data
        if operand_shape(self.imag) != shape:
            raise VerifyException(
                f"real and imag must have one shape, got {format_shape(shape)} and {format_shape(operand_shape(self.imag))}"
            )
        _check_axis(axis, shape)
        h = _real_transform_length(length, "length")
        if shape[axis] != h + 1:
            raise VerifyException(f"a signal of {length} points has {h + 1} bins along axis {axis}, got shape {format_shape(shape)}")
        element = _float_element("real and imag", self.real.type, self.imag.type)
        return tensor_type((*shape[:-2], *_moved(shape[-2:], axis, length)), element)

    def reference(self, real: np.ndarray, imag: np.ndarray) -> np.ndarray:
        length, axis = self.length.value.data, self.axis.value.data
        z = real.astype(np.float64) + 1j * imag.astype(np.float64)
        return (np.fft.irfft(z, n=length, axis=axis) * length).astype(real.dtype)


__all__ = ["FFTOp", "IRFFTOp", "RFFTOp", "MAX_RADIX", "radices", "roots_of_unity", "stockham", "unit_circle"]
