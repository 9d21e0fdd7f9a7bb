"""External modules: what a backend's codegen returns, and how compiled code calls it.

An :class:`ExternalModule` is one compiled ``byoc.region``. Its interface:

- ``init(weights)``: bind the constants the region keeps inside (name -> array);
- ``run(*inputs)``: compute the outputs from numpy arrays (the interpreter's path);
- ``native_address()``: a C function compiled code calls, with the calling convention of
  every generated function: for each input then each output, the buffer's pointer
  followed by one ``int64`` per symbolic dim (``void f(float* x, int64 x_d0, float* y, int64 y_d0)``);
- ``serialize()`` -> bytes and :func:`deserialize` (bytes -> module), numpy and json only,
  for export artifacts;
- ``describe()``: a dict for the profiler (backend, symbol, what it computes, flops);
- ``device`` and ``run_device(inputs, outputs)``: for modules that compute on a GPU's
  memory (``device = "cuda"``: cupy arrays, e.g. cuBLAS), what ``tk.build(...,
  target="cuda")`` calls: it writes the outputs the host program allocated, from inputs
  already on the device, on the current stream (no host round trip). Modules with
  ``device = None`` (the default: ``blas``, ``example_npu``) run on the host only, and a
  CUDA build that calls one fails with an error naming it.

Modules whose work is Python (the example NPU, cuBLAS through cupy) subclass
:class:`PythonExternalModule`: ``native_address`` is then a ctypes callback into ``run``.
An exception raised in the callback is kept and re-raised by :meth:`raise_pending`
after the native call returns (a ctypes callback cannot unwind through native code);
the outputs are filled with NaN meanwhile, so a caller that does not check never reads
stale memory as a result.
"""

from __future__ import annotations

import ctypes
import importlib
import io
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..runtime.npz import load_arrays, save_arrays
from ..runtime.signature import TensorSpec

MAGIC = b"TKEXT1\n"

#: kind -> class, for :func:`deserialize`
EXTERNAL_KINDS: dict[str, type[ExternalModule]] = {}

#: the built-in kinds -> the (xDSL-free) module defining each, imported by deserialize
BUILTIN_KINDS = {
    "example_npu.gemm": "tensorkiln.byoc.backends.npu_module",
    "blas.sgemm": "tensorkiln.byoc.backends.blas_module",
    "cublas.gemm": "tensorkiln.byoc.backends.cublas_module",
}


def spec_of(tensor_type: Any) -> TensorSpec:
    """The TensorSpec of a graph tensor type (an external module's argument: no name)."""
    from ..dialects.graph.types import element_type, numpy_dtype, shape_of

    return TensorSpec("", tuple(shape_of(tensor_type)), np.dtype(numpy_dtype(element_type(tensor_type))))


def spec_to_json(spec: TensorSpec) -> list[Any]:
    """An external module's argument as serialized: ``[shape, dtype]`` (``"<f4"``)."""
    return [list(spec.shape), np.dtype(spec.dtype).str]


def spec_from_json(data: Sequence[Any]) -> TensorSpec:
    return TensorSpec("", tuple(data[0]), np.dtype(data[1]))


def register_kind(cls: type[ExternalModule]) -> type[ExternalModule]:
    """Class decorator: make ``cls`` loadable by :func:`deserialize` under ``cls.kind``."""
    EXTERNAL_KINDS[cls.kind] = cls
    return cls


class ExternalModule:
    """Base of compiled regions (see module docstring)."""

    kind: ClassVar[str] = ""
    #: the memory ``run_device`` works on ("cuda": cupy arrays); None: host only
    device: ClassVar[str | None] = None

    def __init__(self, symbol: str, backend: str, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec]):
        self.symbol = symbol
        self.backend = backend
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.weights: dict[str, np.ndarray] = {}

    # -- the interface -----------------------------------------------------------------

    def init(self, weights: Mapping[str, np.ndarray]) -> None:
        """Bind the region's constants by name."""
        self.weights = {k: np.asarray(v, order="C") for k, v in weights.items()}

    def run(self, *inputs: np.ndarray) -> list[np.ndarray]:
        raise NotImplementedError

    def native_address(self) -> int:
        raise NotImplementedError

    def run_device(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Compute into ``outputs`` from ``inputs``, all arrays in ``device`` memory (cupy
        arrays for "cuda"), queued on the current stream; only for modules with a ``device``."""
        raise NotImplementedError(f"external module '{self.symbol}' ({self.backend}) runs on the host only")

    def describe(self) -> dict[str, Any]:
        return {"symbol": self.symbol, "backend": self.backend, "kind": self.kind}

    def payload(self) -> dict[str, Any]:
        """What a subclass needs besides specs and weights to rebuild itself (json)."""
        return {}

    @classmethod
    def from_payload(cls, symbol: str, backend: str, inputs, outputs, payload: dict[str, Any]) -> ExternalModule:
        return cls(symbol, backend, inputs, outputs)

    def raise_pending(self) -> None:
        """Raise an error kept from a native call (Python-backed modules)."""

    # -- checks and serialization ------------------------------------------------------

    def bind(self, inputs: Sequence[np.ndarray]) -> dict[str, int]:
        """Check inputs against the specs; returns the symbol sizes."""
        if len(inputs) != len(self.inputs):
            raise ValueError(f"external module '{self.symbol}' takes {len(self.inputs)} inputs, got {len(inputs)}")
        symbols: dict[str, int] = {}
        for k, (array, spec) in enumerate(zip(inputs, self.inputs)):
            if array.ndim != len(spec.shape) or array.dtype != np.dtype(spec.dtype):
                raise ValueError(
                    f"external module '{self.symbol}' input #{k}: expected {spec.shape} {np.dtype(spec.dtype)}, "
                    f"got {array.shape} {array.dtype}"
                )
            for want, got in zip(spec.shape, array.shape):
                if isinstance(want, str):
                    if symbols.setdefault(want, got) != got:
                        raise ValueError(f"external module '{self.symbol}': dim {want} is {symbols[want]} and {got}")
                elif want != got:
                    raise ValueError(f"external module '{self.symbol}' input #{k}: shape {array.shape}, expected {spec.shape}")
        return symbols

    def serialize(self) -> bytes:
        """Bytes that :func:`deserialize` turns back into an equivalent module."""
        header = json.dumps(
            {
                "kind": self.kind,
                "symbol": self.symbol,
                "backend": self.backend,
                "inputs": [spec_to_json(s) for s in self.inputs],
                "outputs": [spec_to_json(s) for s in self.outputs],
                "payload": self.payload(),
            },
            sort_keys=True,
        ).encode()
        buffer = io.BytesIO()
        save_arrays(buffer, self.weights)
        return MAGIC + struct.pack("<Q", len(header)) + header + buffer.getvalue()


def deserialize(data: bytes) -> ExternalModule:
    """The module :meth:`ExternalModule.serialize` wrote (its kind must be registered:
    import the backend's module first, e.g. ``tensorkiln.byoc.backends.blas``)."""
    if not data.startswith(MAGIC):
        raise ValueError("not a serialized tensorkiln external module (bad magic)")
    (n,) = struct.unpack_from("<Q", data, len(MAGIC))
    start = len(MAGIC) + 8
    header = json.loads(data[start : start + n])
    kind = header["kind"]
    if kind not in EXTERNAL_KINDS and kind in BUILTIN_KINDS:
        importlib.import_module(BUILTIN_KINDS[kind])
    if kind not in EXTERNAL_KINDS:
        raise ValueError(f"external module kind '{kind}' is not registered (known: {', '.join(sorted(EXTERNAL_KINDS))})")
    weights = load_arrays(io.BytesIO(data[start + n :]))
    module = EXTERNAL_KINDS[kind].from_payload(
        header["symbol"],
        header["backend"],
        [spec_from_json(s) for s in header["inputs"]],
        [spec_from_json(s) for s in header["outputs"]],
        header["payload"],
    )
    module.init(weights)
    return module


def native_arg_types(specs: Sequence[TensorSpec]) -> list[type]:
    """ctypes argument types of the native calling convention for these buffers."""
    types: list[type] = []
    for spec in specs:
        types += [ctypes.c_void_p] + [ctypes.c_int64] * len(spec.symbolic)
    return types


def _view(address: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return np.empty(shape, dtype)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(address)
    return np.frombuffer(raw, dtype).reshape(shape)


class PythonExternalModule(ExternalModule):
    """An external module computed in Python: its native entry is a ctypes callback."""

    _callback: Any = None
    _pending: BaseException | None = None

    def native_address(self) -> int:
        if self._callback is None:
            specs = self.inputs + self.outputs
            prototype = ctypes.CFUNCTYPE(None, *native_arg_types(specs))
            self._callback = prototype(self._native_call)
        return ctypes.cast(self._callback, ctypes.c_void_p).value

    def _native_call(self, *args: Any) -> None:
        views: list[np.ndarray] = []
        try:
            position, symbols, arrays = 0, {}, []
            for spec in self.inputs + self.outputs:
                address = args[position]
                for axis in spec.symbolic:
                    position += 1
                    symbols[spec.shape[axis]] = args[position]
                position += 1
                arrays.append((address, spec))
            views = [_view(a, s.concrete(symbols), np.dtype(s.dtype)) for a, s in arrays]
            results = self.run(*views[: len(self.inputs)])
            for out, result in zip(views[len(self.inputs) :], results):
                out[...] = result
        except BaseException as e:  # noqa: BLE001 - kept, re-raised after the native call
            self._pending = e
            # a caller that does not check (a bare native call) sees NaN, never stale memory
            for out in views[len(self.inputs) :]:
                if out.dtype.kind == "f":
                    out[...] = np.nan

    def raise_pending(self) -> None:
        error, self._pending = self._pending, None
        if error is not None:
            raise RuntimeError(f"external module '{self.symbol}' ({self.backend}) failed: {error}") from error


__all__ = [
    "EXTERNAL_KINDS",
    "ExternalModule",
    "PythonExternalModule",
    "TensorSpec",
    "deserialize",
    "native_arg_types",
    "register_kind",
    "spec_from_json",
    "spec_of",
    "spec_to_json",
]
