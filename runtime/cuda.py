"""Load and run CUDA kernels with cupy (NVRTC): what ``tk.build(mod, target="cuda")``
returns. Imports neither xDSL nor torch; cupy is imported only when a module is made.

    lib = CudaModule(source, host_source, "main", signature, weights, arch="sm_90")
    y = lib(x)                    # x: numpy, cupy or a torch CUDA tensor; y: cupy
    y = lib(x, output="numpy")    # copied back to the host

Inputs on the GPU are used in place (DLPack, zero copy); numpy inputs are copied to the
device. cupy has no bfloat16: a bfloat16 tensor is an int16 cupy array of its bits
(torch bfloat16 tensors and ml_dtypes arrays are taken as such; ``output="numpy"``
gives bfloat16 arrays back). Weights are copied once, when the module is made. External modules (BYOC
regions, e.g. ``tk.byoc.partition_for(mod, "cublas")``) are called by the host program
between the launches, on the same device buffers and the same stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .dim_expr import evaluate, is_symbol
from .signature import Signature, is_torch_bfloat16, torch_bfloat16_bits
from .random_state import Seedable

#: CUDA's limits on grid sizes per axis
GRID_LIMITS = (2**31 - 1, 65535, 65535)
#: kernels index with 32-bit ints
MAX_ELEMENTS = 2**31 - 1


class CudaUnavailableError(RuntimeError):
    """cupy or a CUDA GPU is missing."""


class HostOnlyExternalError(ValueError):
    """A CUDA build calls an external module that cannot run on device memory."""


def check_device_modules(modules: Sequence[Any]) -> dict[str, Any]:
    """symbol -> module for the external modules a CUDA host program calls; each must
    compute on CUDA memory (``device == "cuda"``, e.g. ``cublas``). A host-only one
    (``blas``, ``example_npu``) is refused rather than given a hidden copy to the host
    and back at every call, which would also wait for the GPU each time: a CUDA build
    promises device-resident execution, and the fix is the user's choice (a GPU backend,
    or the ``llvm`` target)."""
    for module in modules:
        if getattr(module, "device", None) != "cuda":
            raise HostOnlyExternalError(
                f"external module '{module.symbol}' (BYOC backend '{module.backend}') runs on the host only and "
                f"cannot be called from a CUDA build: partition the model for a GPU backend "
                f"(tk.byoc.partition_for(module, 'cublas')) or build it for target 'llvm'"
            )
    return {module.symbol: module for module in modules}


def require_cupy() -> Any:
    """The cupy module, with a usable GPU, or a CudaUnavailableError saying what is missing."""
    try:
        import cupy
    except ImportError as error:
        raise CudaUnavailableError(
            "target 'cuda' needs cupy to compile and launch kernels (pip install 'tensorkiln[cuda]', "
            "i.e. cupy-cuda12x); tk.emit_source(module, target='cuda') works without it"
        ) from error
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # cupy raises CUDARuntimeError without a driver
        raise CudaUnavailableError(f"target 'cuda': cupy found no usable CUDA GPU ({error})") from error
    if count == 0:
        raise CudaUnavailableError("target 'cuda': cupy found no CUDA GPU on this machine")
    return cupy


def device_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a tensor's device array: cupy has no bfloat16, so a bfloat16 tensor
    lives on the device as an int16 array of its bits (as the kernels see it)."""
    return np.dtype(np.int16) if dtype.name == "bfloat16" else dtype


def _bits_if_bfloat16(arg: Any) -> Any:
    """A torch or numpy bfloat16 array as int16 (the same memory), others as they are."""
    if is_torch_bfloat16(arg):
        return torch_bfloat16_bits(arg)
    if isinstance(arg, np.ndarray) and arg.dtype.name == "bfloat16":
        return arg.view(np.int16)
    return arg


def _to_device(cp: Any, arg: Any, name: str) -> Any:
    if isinstance(arg, cp.ndarray):
        return arg
    arg = _bits_if_bfloat16(arg)
    if hasattr(arg, "__dlpack__") and hasattr(arg, "device") and "cuda" in str(arg.device):
        return cp.from_dlpack(arg.detach() if hasattr(arg, "detach") else arg)
    if hasattr(arg, "__dlpack__") and not isinstance(arg, np.ndarray):
        arg = np.from_dlpack(arg.detach() if hasattr(arg, "detach") else arg)
    if isinstance(arg, np.ndarray | np.generic | int | float | bool):
        return cp.asarray(arg)
    raise ValueError(f"argument '{name}': expected a numpy array, cupy array or CUDA tensor, got {type(arg).__name__}")


class _Launcher:
    """The ``rt`` the host program calls (see ``host.py``)."""

    def __init__(self, cp: Any, module: Any, kernel_names: Sequence[str], externals: dict[str, Any]):
        self.cp = cp
        self.kernels = {name: module.get_function(name) for name in kernel_names}
        self.externals = externals

    def empty(self, shape: tuple[int, ...], dtype: str) -> Any:
        return self.cp.empty(shape, dtype)

    def launch(self, kernel: str, grid: tuple[int, ...], block: tuple[int, ...], buffers: Sequence[Any], dynamic: Sequence[tuple[int, ...]]) -> None:
        # (called for every launch of every call: the common case takes few steps)
        if min(grid) <= 0:
            return  # an empty tensor: nothing to compute
        if grid[0] > GRID_LIMITS[0] or grid[1] > GRID_LIMITS[1] or grid[2] > GRID_LIMITS[2]:
            axis = next(k for k, (g, limit) in enumerate(zip(grid, GRID_LIMITS)) if g > limit)
            raise ValueError(f"kernel '{kernel}': grid {grid} exceeds CUDA's limit {GRID_LIMITS[axis]} on axis {'xyz'[axis]}")
        for buf in buffers:
            if buf.size > MAX_ELEMENTS:
                raise ValueError(f"kernel '{kernel}': a buffer of {buf.size} elements is too large for 32-bit indexing")
        args = tuple(buffers)
        if any(dynamic):  # each buffer followed by its dynamic dims
            args = tuple(a for buf, dims in zip(buffers, dynamic) for a in (buf, *(np.int32(buf.shape[d]) for d in dims)))
        self.kernels[kernel](tuple(grid), tuple(block), args)

    def call_external(self, symbol: str, buffers: Sequence[Any]) -> None:
        """Run external module ``symbol``: ``buffers`` are its inputs, then its outputs."""
        module = self.externals[symbol]
        outputs = buffers[len(module.inputs) :]
        if all(o.size == 0 for o in outputs):
            return  # an empty tensor: nothing to compute
        module.run_device(buffers[: len(module.inputs)], outputs)


class CudaModule(Seedable):
    """A model compiled for CUDA: callable like ``tk.build``'s CPU modules."""

    def __init__(
        self,
        source: str,
        host_source: str,
        function: str,
        signature: Signature,
        weights: Sequence[np.ndarray],
        kernel_names: Sequence[str],
        arch: str | None = None,
        external_modules: Sequence[Any] = (),
    ):
        externals = check_device_modules(external_modules)
        cp = require_cupy()
        self.source, self.host_source, self.signature = source, host_source, signature
        #: the BYOC modules the host program calls (each ``describe()``s itself)
        self.external_modules = list(external_modules)
        options = ("--std=c++17",) + ((f"--gpu-architecture={arch}",) if arch else ())
        # a model offloaded whole has no kernel of ours: nothing to compile
        self._module = cp.RawModule(code=source, options=options) if kernel_names else None
        self._rt = _Launcher(cp, self._module, kernel_names, externals)
        namespace: dict[str, Any] = {}
        exec(compile(host_source, f"<tensorkiln host {function}>", "exec"), namespace)
        self._host = namespace[function]
        self._cp = cp
        self._weights = [cp.asarray(_bits_if_bfloat16(np.asarray(w, order="C"))) for w in weights]
        self.compile_seconds: float | None = None
        self.pass_timings: list[tuple[str, float]] = []

    def __call__(self, *args: Any, output: str = "cupy") -> Any:
        if output not in ("cupy", "numpy"):
            raise ValueError(f"output must be 'cupy' or 'numpy', got {output!r}")
        cp = self._cp
        inputs, symbols = self._bind(args)
        shapes = self.signature.output_shapes(symbols)
        specs = self.signature.entry_outputs
        outputs = [cp.empty(shape, device_dtype(spec.dtype)) for shape, spec in zip(shapes, specs)]
        self._host(self._rt, *inputs, *outputs, *self._weights)
        if output == "numpy":
            outputs = [cp.asnumpy(o).view(spec.dtype) for o, spec in zip(outputs, specs)]
        elif self.signature.checks:  # the checks' predicates to the host in one copy
            n = len(self.signature.outputs)
            outputs = [*outputs[:n], *cp.asnumpy(cp.stack(outputs[n:]))]
        return self.signature.results(outputs)

    def _bind(self, args: Sequence[Any]) -> tuple[list[Any], dict[str, int]]:
        """Device arrays for ``args``, checked against the signature, and the symbols' values
        (a dim written as an expression of symbols, ``4*s0``, is checked after)."""
        specs, args = self.signature.inputs, self.signature.complete(args)
        arrays, symbols, computed = [], {}, []
        for spec, arg in zip(specs, args):
            a = _to_device(self._cp, arg, spec.name)
            if a.dtype != device_dtype(spec.dtype):
                bits = " (bfloat16's bits as int16 in a cupy array)" if spec.dtype.name == "bfloat16" else ""
                raise ValueError(f"argument '{spec.name}': expected dtype {spec.dtype}{bits}, got {a.dtype}")
            if a.ndim != len(spec.shape):
                raise ValueError(f"argument '{spec.name}': expected shape {spec.describe()}, got {list(a.shape)}")
            for axis, (want, got) in enumerate(zip(spec.shape, a.shape)):
                if isinstance(want, str) and not is_symbol(want):
                    computed.append((spec, axis, want, got))
                elif isinstance(want, str):
                    if symbols.setdefault(want, got) != got:
                        raise ValueError(f"argument '{spec.name}': dim {axis} is '{want}' = {symbols[want]}, got {got}")
                elif want != got:
                    raise ValueError(f"argument '{spec.name}': expected shape {spec.describe()}, got {list(a.shape)}")
            arrays.append(a if a.flags.c_contiguous else self._cp.ascontiguousarray(a))
        for spec, axis, want, got in computed:
            if evaluate(want, symbols) != got:
                raise ValueError(f"argument '{spec.name}': dim {axis} is '{want}' = {evaluate(want, symbols)}, got {got}")
        return arrays, symbols


__all__ = ["CudaModule", "CudaUnavailableError", "HostOnlyExternalError", "check_device_modules", "require_cupy"]
