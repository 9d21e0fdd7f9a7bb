"""A compiled model, callable with numpy arrays: one native call per invocation.

Pure numpy + ctypes. The native entry function takes, in order, for each input then
each output then each weight: the buffer's pointer followed by its dynamic dims
(``int64``). Outputs are allocated here, with shapes from the symbols bound by the
inputs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

from .signature import Signature


def _dynamic_dims(shape: Sequence[Any]) -> list[int]:
    return [k for k, d in enumerate(shape) if not isinstance(d, int)]


class CompiledModule:
    """``lib(*inputs)`` runs the model; returns an array, or a tuple for several outputs."""

    def __init__(
        self,
        entry_address: int,
        signature: Signature,
        weights: Sequence[np.ndarray],
        keep_alive: Any = None,
    ):
        self.signature = signature
        self._keep_alive = keep_alive  # the native code's owner (the JIT engine)
        self._weights = [np.ascontiguousarray(w) for w in weights]
        self._weight_pointers = [w.ctypes.data for w in self._weights]
        arg_types: list[type] = []
        for spec in signature.inputs + signature.outputs:
            arg_types += [ctypes.c_void_p] + [ctypes.c_int64] * len(_dynamic_dims(spec.shape))
        arg_types += [ctypes.c_void_p] * len(self._weights)
        self._entry = ctypes.CFUNCTYPE(None, *arg_types)(entry_address)
        self._input_dynamic = [_dynamic_dims(s.shape) for s in signature.inputs]
        self._output_dynamic = [_dynamic_dims(s.shape) for s in signature.outputs]
        self._static_outputs = signature.output_shapes({}) if signature.is_static else None

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        arrays, symbols = self.signature.bind(args)
        shapes = self._static_outputs or self.signature.output_shapes(symbols)
        outputs = [np.empty(shape, spec.dtype) for shape, spec in zip(shapes, self.signature.outputs)]
        call_args: list[int] = []
        for array, dynamic in zip(arrays, self._input_dynamic):
            call_args.append(array.ctypes.data)
            call_args += [array.shape[k] for k in dynamic]
        for array, dynamic in zip(outputs, self._output_dynamic):
            call_args.append(array.ctypes.data)
            call_args += [array.shape[k] for k in dynamic]
        call_args += self._weight_pointers
        self._entry(*call_args)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def assembly(self) -> str:
        """The assembly text of the native code, from the compiler that made it (the JIT).

        Example: ``assert "zmm" in lib.assembly()`` (AVX-512 vector code was generated).
        """
        emit = getattr(self._keep_alive, "assembly", None)
        if emit is None:
            raise RuntimeError("this module keeps no compiler object that can show its assembly")
        return emit()
