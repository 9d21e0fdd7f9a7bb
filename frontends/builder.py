"""Write graph programs in Python, without torch.

Every graph op is available as a method named after it (``graph.add`` -> ``b.add``,
``graph.reduce_sum`` -> ``b.reduce_sum``): the method takes the op's constructor
arguments, inserts the op and returns its result value. Numpy arrays and Python
numbers given as operands become constants (numbers take the element type of the
op's first tensor operand)::

    import numpy as np
    from tensorkiln.frontends.builder import GraphBuilder

    b = GraphBuilder()
    x = b.input("x", (1, 784))
    h = b.relu(b.dense(x, np.random.rand(512, 784).astype("f4"), np.zeros(512, "f4")))
    y = b.mul(h, 0.5)
    module = b.finish(y)          # a builtin.module holding func.func @main
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i1, i64
from xdsl.ir import Block, Region, SSAValue

from ..dialects.graph import GRAPH_OPS, ConstantOp
from ..dialects.graph.host import CheckOp, DataSizeOp
from ..dialects.graph.types import Dim, element_type_of, numpy_dtype
from ..dialects.functions import RANDOM_STATE_ATTR

_OPS_BY_METHOD = {op.name.removeprefix("graph."): op for op in GRAPH_OPS}


class GraphBuilder:
    """Builds one ``func.func`` (default name ``main``) of graph ops."""

    def __init__(self, name: str = "main"):
        self.name = name
        self._block = Block()
        self._builder = Builder(InsertPoint.at_end(self._block))
        self._input_names: list[str] = []
        self._constants = 0
        self._random_state: SSAValue | None = None
        self._random_streams = 0

    # -- values ---------------------------------------------------------------

    def input(self, name: str, shape: Sequence[Dim], dtype: Any = np.float32) -> SSAValue:
        """A function argument; string dims are symbolic (``("n", 784)``)."""
        from ..dialects.graph.types import tensor_type

        arg = self._block.insert_arg(tensor_type(tuple(shape), element_type_of(dtype)), len(self._block.args))
        arg.name_hint = name
        self._input_names.append(name)
        return arg

    def constant(self, value: Any, name: str | None = None, dtype: Any = None) -> SSAValue:
        """A constant tensor held by reference (the array is not copied into the IR)."""
        array = np.asarray(value, dtype=dtype)
        if name is None:
            name, self._constants = f"const{self._constants}", self._constants + 1
        return self._builder.insert(ConstantOp.from_array(array, name)).result

    def _as_value(self, operand: Any, like: SSAValue | None) -> SSAValue:
        if isinstance(operand, SSAValue):
            return operand
        if isinstance(operand, np.ndarray):
            return self.constant(operand)
        if isinstance(operand, bool | int | float):
            dtype = numpy_dtype(like.type.element_type) if like is not None else np.float32
            return self.constant(np.asarray(operand, dtype=dtype))
        raise TypeError(f"cannot use {type(operand).__name__} as a graph operand")

    def draw(self, distribution: str, shape: Sequence[Dim], dtype: Any = np.float32, sources: Sequence[SSAValue] = ()) -> SSAValue:
        """Random ``"uniform"`` ([0, 1)) or ``"normal"`` numbers (float32 or float64) of
        ``shape``; ``sources`` carry its symbolic dims. The first draw adds the function's
        random-state input (``rng_state``, which callers of the compiled model leave out);
        each draw is its own stream of numbers.

        Example: ``noise = b.draw("normal", (4, 16))``
        """
        if self._builder.insertion_point.block is not self._block:
            # regions are isolated from above: the state would have to be threaded through
            # (and advanced per loop iteration)
            raise NotImplementedError("random numbers inside control flow (graph.if / graph.while) are not supported")
        if self._random_state is None:
            self._random_state = self.input("rng_state", (2,), np.int64)
        stream, self._random_streams = self._random_streams, self._random_streams + 1
        return self.random(self._random_state, distribution, stream, shape, element_type_of(dtype), sources)

    # -- host ops (run by the VM: dialects/graph/host.py) ------------------------

    def data_size(self, count: SSAValue, symbol: str, lower: int = 0, upper: int | None = None) -> SSAValue:
        """A size carrier whose first dim, the new symbol ``symbol``, is the value of the
        0-d integer tensor ``count``: pass it as a source of ``symbol`` to the ops after.

        Example: ``k = b.data_size(b.reduce_sum(b.cast(mask, i64), [0]), "u0")``
        """
        return self._builder.insert(DataSizeOp(count, symbol, lower, upper)).carrier

    def check(self, pred: SSAValue, message: str, error: str = "RuntimeError") -> None:
        """A run-time assertion: calling the model raises ``error`` (``RuntimeError`` or
        ``IndexError``) with ``message`` when ``pred`` is false. A predicate that is a
        constant true (a check of no elements) adds nothing."""
        if isinstance(pred.owner, ConstantOp) and pred.owner.array().all():
            return
        self._builder.insert(CheckOp(pred, message, error))

    # -- ops --------------------------------------------------------------------

    def __getattr__(self, method: str) -> Callable[..., SSAValue]:
        op_class = _OPS_BY_METHOD.get(method)
        if op_class is None:
            raise AttributeError(f"no graph op '{method}' (known: {', '.join(sorted(_OPS_BY_METHOD))})")

        n_operands = len(op_class.get_irdl_definition().operands)

        def build(*args: Any, **kwargs: Any) -> SSAValue:
            # Only operand positions turn numbers and arrays into constants; later
            # positional arguments are the op's own (axes, shapes, ...).
            tensors = [a for a in args if isinstance(a, SSAValue) and isinstance(a.type, TensorType)]
            # numbers take the type of the first non-boolean tensor operand (where(c, x, 0.0))
            like = next((a for a in tensors if a.type.element_type != i1), tensors[0] if tensors else None)
            operands = [
                self._as_value(a, like) if k < n_operands and isinstance(a, np.ndarray | bool | int | float) else a
                for k, a in enumerate(args)
            ]
            return self._builder.insert(op_class(*operands, **kwargs)).results[0]

        build.__doc__ = op_class.__doc__
        build.__name__ = method
        return build

    # -- result -------------------------------------------------------------------

    def finish(self, *outputs: SSAValue) -> ModuleOp:
        """Return ``outputs`` from the function and wrap it in a module."""
        self._builder.insert(func.ReturnOp(*outputs))
        function_type = ([a.type for a in self._block.args], [o.type for o in outputs])
        function = func.FuncOp(self.name, function_type, Region(self._block))
        if self._random_state is not None:
            function.attributes[RANDOM_STATE_ATTR] = IntegerAttr(self._random_state.index, i64)
        module = ModuleOp([function])
        module.verify()
        return module
