"""What a compiled function takes and returns, and the checks made at every call.

Pure numpy: a deployed model checks its inputs with this without the compiler.
Dims are ints or symbol names; a symbol (``n``) must take one value everywhere it
appears in the inputs, and output shapes follow from the values bound.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dim_arith import solve
from .dim_expr import evaluate, free_symbols, is_symbol
from .host_checks import check
from .random_state import RandomState
from .sizes import buffer_bytes

Dim = int | str


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape (ints and symbol names) and dtype of one argument or result."""

    name: str
    shape: tuple[Dim, ...]
    dtype: np.dtype

    def describe(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"

    def concrete(self, symbols: Mapping[str, int]) -> tuple[int, ...]:
        """The shape with each symbol replaced by its value in ``symbols``."""
        return tuple(d if isinstance(d, int) else evaluate(d, symbols) for d in self.shape)

    @property
    def symbolic(self) -> list[int]:
        """Axes whose size is a symbol (an external module takes each as an int64 after the pointer)."""
        return [k for k, d in enumerate(self.shape) if not isinstance(d, int)]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": str(self.dtype)}

    @staticmethod
    def from_json(d: dict[str, Any]) -> TensorSpec:
        return TensorSpec(d["name"], tuple(d["shape"]), np.dtype(d["dtype"]))


@dataclass(frozen=True)
class RuntimeCheck:
    """A run-time check of a compiled function (a ``graph.check``): the function computes
    its predicate as one more output, a 0-d bool after the model's outputs, and the
    caller raises ``error`` (``host_checks.CHECK_ERRORS``) with ``message`` when it is
    false."""

    message: str
    error: str = "RuntimeError"

    def to_json(self) -> dict[str, str]:
        return {"message": self.message, "error": self.error}


@dataclass(frozen=True)
class Signature:
    """The inputs and outputs of a compiled function, and the range of values each
    symbol may take: ``(symbol, lowest, highest or None)`` (torch.export's range
    constraints: a slice ``x[:, 2:7]`` of ``(2, s0)`` is only valid for ``s0 >= 7``)."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    ranges: tuple[tuple[str, int, int | None], ...] = ()
    #: dims computed in the function that a small size can make negative (``n - 2`` after a slice)
    computed_dims: tuple[str, ...] = ()
    #: the input that is the random-number state (``runtime/random_state.py``), if the
    #: function draws random numbers: callers may leave it out, the state fills it
    random_state: int | None = None
    #: the run-time checks whose predicates the native entry writes after ``outputs``
    checks: tuple[RuntimeCheck, ...] = ()
    rng: RandomState = field(default_factory=RandomState, compare=False, repr=False)

    def check_inputs(self, args: Sequence[Any]) -> list[np.ndarray]:
        """Contiguous numpy arrays for ``args``, or a ValueError naming the bad argument."""
        arrays, _ = self.bind(args)
        return arrays

    def complete(self, args: Sequence[Any]) -> list[Any]:
        """``args`` with the random state added where the caller left it out (the next
        state of ``rng``), or a ValueError when their number is wrong."""
        hidden = self.random_state
        if hidden is not None and len(args) == len(self.inputs) - 1:
            return [*args[:hidden], self.rng.next_state(), *args[hidden:]]
        if len(args) != len(self.inputs):
            names = ", ".join(s.name for k, s in enumerate(self.inputs) if k != hidden)
            count = len(self.inputs) - (hidden is not None)
            raise ValueError(f"expected {count} arguments ({names}), got {len(args)}")
        return list(args)

    def manual_seed(self, seed: int) -> None:
        """Restart the random numbers of the calls that leave the random state out."""
        self.rng.manual_seed(seed)

    def bind(self, args: Sequence[Any]) -> tuple[list[np.ndarray], dict[str, int]]:
        """Check ``args``; return them as contiguous arrays and the value of each symbol."""
        args = self.complete(args)
        symbols: dict[str, int] = {}
        where: dict[str, str] = {}
        computed: list[tuple[TensorSpec, int, str, int]] = []
        arrays = []
        for spec, arg in zip(self.inputs, args):
            array = _as_array(arg, spec)
            if array.dtype != spec.dtype:
                raise ValueError(
                    f"argument '{spec.name}': expected dtype {spec.dtype}, got {array.dtype}"
                )
            if array.ndim != len(spec.shape):
                raise ValueError(
                    f"argument '{spec.name}': expected rank {len(spec.shape)} "
                    f"(shape {spec.describe()}), got rank {array.ndim} (shape {list(array.shape)})"
                )
            for axis, (want, got) in enumerate(zip(spec.shape, array.shape)):
                if isinstance(want, str) and not is_symbol(want):
                    computed.append((spec, axis, want, got))
                elif isinstance(want, str):
                    if want in symbols and symbols[want] != got:
                        raise ValueError(
                            f"argument '{spec.name}': dim {axis} is '{want}' = {symbols[want]} "
                            f"(from {where[want]}), got {got}"
                        )
                    symbols.setdefault(want, got)
                    where.setdefault(want, f"'{spec.name}' dim {axis}")
                elif want != got:
                    raise ValueError(
                        f"argument '{spec.name}': expected shape {spec.describe()}, "
                        f"got {list(array.shape)} (dim {axis}: expected {want}, got {got})"
                    )
            arrays.append(array if array.flags.c_contiguous else array.copy(order="C"))
        for spec, axis, want, got in computed:  # a symbol seen only in a dim like 2*s0: solved from it
            if not free_symbols(want) <= symbols.keys():
                solved = solve(want, got)
                if solved is None:
                    raise ValueError(f"argument '{spec.name}': dim {axis} is '{want}', which no value of its symbol makes {got}")
                symbols.update(solved)
        for spec, axis, want, got in computed:  # dims computed from symbols bound above
            value = evaluate(want, symbols)
            if value != got:
                raise ValueError(f"argument '{spec.name}': dim {axis} is '{want}' = {value}, got {got}")
        for symbol, lowest, highest in self.ranges:
            value = symbols.get(symbol)
            if value is not None and (value < lowest or (highest is not None and value > highest)):
                span = f"[{lowest}, {highest if highest is not None else 'inf'}]"
                source = f"argument {where[symbol]}" if symbol in where else "the input dims"
                raise ValueError(
                    f"{source}: '{symbol}' = {value} is outside {span}, the range the model was exported for"
                )
        for dim in self.computed_dims:
            if free_symbols(dim) <= symbols.keys() and evaluate(dim, symbols) < 0:
                values = ", ".join(f"{k}={v}" for k, v in sorted(symbols.items()) if k in free_symbols(dim))
                raise ValueError(
                    f"the inputs are too small for the model: its dim '{dim}' is {evaluate(dim, symbols)} at {values} "
                    f"(a slice, crop or window needs more elements)"
                )
        return arrays, symbols

    @functools.cached_property
    def entry_outputs(self) -> tuple[TensorSpec, ...]:
        """What the native entry writes: the outputs, then each check's predicate."""
        return self.outputs + tuple(TensorSpec(f"check{k}", (), np.dtype(bool)) for k in range(len(self.checks)))

    def output_shapes(self, symbols: dict[str, int]) -> list[tuple[int, ...]]:
        """The shapes of :attr:`entry_outputs` for the symbols' values (a
        TensorTooLargeError names an output whose size overflows 64 bits)."""
        shapes = [tuple(evaluate(d, symbols) if isinstance(d, str) else d for d in o.shape) for o in self.entry_outputs]
        for shape, spec in zip(shapes, self.entry_outputs):
            buffer_bytes(shape, spec.dtype.itemsize, spec.name)
        return shapes

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for s in self.inputs + self.outputs for d in s.shape)

    def results(self, written: Sequence[Any]) -> Any:
        """What a call returns, from what the entry wrote (:attr:`entry_outputs`): the one
        output, or a tuple of them, once every check holds (else its error is raised).

        Example: ``lib.signature.results(buffers)``
        """
        n = len(self.outputs)
        for pred, c in zip(written[n:], self.checks):
            if not (getattr(pred, "shape", None) == () and pred.item()):  # (the common case, fast)
                check(pred, c.message, c.error)
        return written[0] if n == 1 else tuple(written[:n])

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": [s.to_json() for s in self.inputs],
            "outputs": [s.to_json() for s in self.outputs],
            "ranges": [list(r) for r in self.ranges],
            "computed_dims": list(self.computed_dims),
            "random_state": self.random_state,
            "checks": [c.to_json() for c in self.checks],
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> Signature:
        return Signature(
            tuple(TensorSpec.from_json(s) for s in d["inputs"]),
            tuple(TensorSpec.from_json(s) for s in d["outputs"]),
            tuple((name, lowest, highest) for name, lowest, highest in d.get("ranges", [])),
            tuple(d.get("computed_dims", [])),
            d.get("random_state"),
            tuple(RuntimeCheck(c["message"], c.get("error", "RuntimeError")) for c in d.get("checks", [])),
        )


def is_torch_bfloat16(tensor: Any) -> bool:
    return str(getattr(tensor, "dtype", "")) == "torch.bfloat16"


def torch_bfloat16_bits(tensor: Any) -> Any:
    """A torch bfloat16 tensor viewed as int16, the same memory (DLPack carries no
    bfloat16 to numpy or cupy). torch is not imported here: the tensor's module is loaded."""
    return tensor.detach().view(sys.modules["torch"].int16)


def _as_array(arg: Any, spec: TensorSpec) -> np.ndarray:
    if isinstance(arg, np.ndarray):
        return arg
    if hasattr(arg, "__dlpack__") and hasattr(arg, "device") and "cpu" in str(arg.device):
        if is_torch_bfloat16(arg):  # DLPack to numpy has no bfloat16
            import ml_dtypes  # (slow to import: only for bfloat16)

            return np.from_dlpack(torch_bfloat16_bits(arg)).view(ml_dtypes.bfloat16)
        return np.from_dlpack(arg.detach() if hasattr(arg, "detach") else arg)
    if isinstance(arg, np.generic | int | float | bool):
        return np.asarray(arg)
    raise ValueError(f"argument '{spec.name}': expected a numpy array, got {type(arg).__name__}")
