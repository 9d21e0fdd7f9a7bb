"""``tk.quantize``: post-training static quantization of a float32 graph (TVM's
``relay.quantize``, ONNX Runtime's ``quantize_static``), producing a QDQ graph that
``fold-qdq`` turns into int8 products when it is built.

Every dense layer, conv2d and matmul with a constant right operand is quantized:

* its weight to int8, symmetric (zero point 0), per output channel (``per_channel``,
  the default) or per tensor: ``scale = max|w| / 127``; the graph then holds the int8
  constant and a ``dequantize`` of it;
* its input and its output (after a following relu, which the output's range then
  absorbs) to uint8 per tensor, asymmetric, from the ranges the ``calibration`` inputs
  give (:mod:`.calibrate`): ``scale = (high - low) / 255``, ``zero_point = round(-low / scale)``;
  each tensor is quantized once, however many products read it;
* its bias stays float32 (``fold-qdq`` rounds it to int32 at ``x_scale * w_scale``).

Other ops run in float32 between a ``dequantize`` and a ``quantize`` (an add of two
quantized branches reads two int8 tensors and writes one, once fused).

Example::

    qdq = tk.quantize(module, calibration=[[x] for x in samples], per_channel=True, method="percentile")
    lib = tk.build(qdq)          # int8 kernels (vpdpbusd on AVX512_VNNI)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ..dialects.functions import find_function
from ..dialects.graph import ConstantOp
from ..dialects.graph.elementwise import ReluOp
from ..dialects.graph.linalg import DenseOp, MatMulOp
from ..dialects.graph.nn import Conv2dOp
from ..dialects.graph.quant import DequantizeOp, QuantizeOp
from .calibrate import METHODS, Range, calibrate

#: products quantized, and the output-channel axis of each one's weight
PRODUCTS: dict[type[Operation], int] = {DenseOp: 0, Conv2dOp: 0, MatMulOp: 1}


def _weight_axis(op: Operation) -> int:
    if isinstance(op, Conv2dOp) and op.data_layout() == "NHWC":
        return 3
    return PRODUCTS[type(op)]


def _operands(op: Operation) -> tuple[SSAValue, SSAValue]:
    return (op.lhs, op.rhs) if isinstance(op, MatMulOp) else (op.operands[0], op.operands[1])


def _quantizable(op: Operation) -> bool:
    if type(op) not in PRODUCTS:
        return False
    data, weight = _operands(op)
    if data.type.element_type != f32 or weight.type.element_type != f32 or not isinstance(weight.owner, ConstantOp):
        return False
    return not isinstance(op, MatMulOp) or len(weight.type.get_shape()) == 2 and len(data.type.get_shape()) == 2


def _observed_output(op: Operation) -> SSAValue:
    """The product's result, or the relu right after it when that is its only user."""
    users = [use.operation for use in op.results[0].uses]
    if len(users) == 1 and isinstance(users[0], ReluOp):
        return users[0].result
    return op.results[0]


def uint8_params(r: Range) -> tuple[np.float32, np.uint8]:
    """(scale, zero point) of an asymmetric uint8 quantization of ``r``."""
    span = max(r.high - r.low, 1e-8)
    scale = np.float32(span / 255.0)
    zero_point = int(np.clip(np.rint(-r.low / float(scale)), 0, 255))
    return scale, np.uint8(zero_point)


def int8_weight(w: np.ndarray, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(int8 weight, float32 scales) of a symmetric quantization, per ``axis`` or per tensor."""
    if axis is None:
        scale = np.asarray(max(float(np.abs(w).max()), 1e-12) / 127.0, np.float32)
        return np.clip(np.rint(w / scale), -127, 127).astype(np.int8), scale
    reduce_axes = tuple(a for a in range(w.ndim) if a != axis)
    scale = (np.maximum(np.abs(w).max(axis=reduce_axes), 1e-12) / 127.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    return np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8), scale


class _Inserter:
    def __init__(self, block: Block):
        self.block = block

    def after(self, value: SSAValue, ops: list[Operation]) -> None:
        if isinstance(value.owner, Block):
            Rewriter.insert_op(ops, InsertPoint.at_start(self.block))
        else:
            Rewriter.insert_op(ops, InsertPoint.after(value.owner))

    def constant(self, array: np.ndarray, name: str) -> ConstantOp:
        return ConstantOp.from_array(np.asarray(array), name)

    def quantize_tensor(self, value: SSAValue, r: Range) -> None:
        """Every use of ``value`` reads ``dequantize(quantize(value))``."""
        uses = list(value.uses)  # (before the quantize below adds its own)
        scale, zero_point = uint8_params(r)
        s, z = self.constant(scale, "act.scale"), self.constant(zero_point, "act.zero_point")
        q = QuantizeOp(value, s.result, z.result)
        d = DequantizeOp(q.result, s.result, z.result)
        self.after(value, [s, z, q, d])
        for use in uses:
            use.operation.operands[use.index] = d.result

    def quantize_weight(self, op: Operation, per_channel: bool) -> None:
        _, weight = _operands(op)
        array = weight.owner.array()
        axis = _weight_axis(op) if per_channel else None
        q, scale = int8_weight(array, axis)
        stem = getattr(getattr(weight.owner.value, "data", None), "name", "weight")
        qc = self.constant(q, f"{stem}.int8")
        sc = self.constant(scale, f"{stem}.scale")
        zc = self.constant(np.zeros(scale.shape, np.int8), f"{stem}.zero_point")
        d = DequantizeOp(qc.result, sc.result, zc.result, axis=axis if axis is not None else 1)
        Rewriter.insert_op([qc, sc, zc, d], InsertPoint.before(op))
        op.operands[1] = d.result  # (the weight: rhs of a matmul, weight of dense and conv2d)


def quantize(
    module: ModuleOp,
    calibration: Sequence[Sequence[np.ndarray] | np.ndarray],
    per_channel: bool = True,
    method: str = "minmax",
    percentile: float = 99.99,
    function: str = "main",
    target: str = "llvm",
) -> ModuleOp:
    """A QDQ copy of a float32 ``module`` (see the module doc); ``calibration``: sample
    inputs of ``function``, each a sequence of its arguments (or one array for a
    one-input function); ``method``: ``"minmax"`` or ``"percentile"`` (``percentile``:
    e.g. 99.99). The products that cannot be quantized (a run-time weight) are left as they are.

    Example::

        qdq = tk.quantize(module, calibration=[x0, x1, x2], method="percentile")
    """
    if method not in METHODS:
        raise ValueError(f"tk.quantize: method must be one of {', '.join(METHODS)}, got {method!r}")
    samples = [[s] if isinstance(s, np.ndarray) else list(s) for s in calibration]
    copy = module.clone()
    body = find_function(copy, function).body.block
    products = [op for op in body.ops if _quantizable(op)]
    observed: list[SSAValue] = []
    for op in products:
        for value in (_operands(op)[0], _observed_output(op)):
            if value not in observed:
                observed.append(value)
    ranges = dict(zip(observed, calibrate(copy, observed, samples, method, percentile, function, target)))
    inserter = _Inserter(body)
    for value in observed:
        inserter.quantize_tensor(value, ranges[value])
    for op in products:
        inserter.quantize_weight(op, per_channel)
    copy.verify()
    return copy


__all__ = ["int8_weight", "quantize", "uint8_params"]
