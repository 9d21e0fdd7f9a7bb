"""A stand-in for cupy, for testing the CUDA runtime's Python side without a GPU.

"Device" arrays are numpy arrays of their own type (:class:`FakeArray`), so a test sees
what was on the device and what came back to the host. Kernels compiled with
``RawModule`` do not run: each launch is appended to the log. The few array functions
the cuBLAS module uses (``matmul`` and the in-place epilogues) compute with numpy on
fake device arrays, refuse host arrays as real cupy does, and log their call, so the
log holds the program's launches and library calls in order. Host <-> device copies
(``asarray`` of a host array, ``asnumpy``) go to the module's own list ``copies``.
"""

from __future__ import annotations

import types
from collections.abc import Callable

import numpy as np


class FakeArray(np.ndarray):
    """An array in the fake device's memory."""


def _on_device(name: str, *arrays) -> None:
    for a in arrays:
        if isinstance(a, np.ndarray) and not isinstance(a, FakeArray):
            raise TypeError(f"cupy.{name}: got a host (numpy) array; device arrays only")


def _device_function(name: str, function: Callable, log: list) -> Callable:
    def call(*args, out=None):
        _on_device(name, *args, out)
        log.append((f"cupy.{name}", *(a.shape for a in args if isinstance(a, np.ndarray))))
        return function(*args) if out is None else function(*args, out=out)

    return call


def fake_cupy(log: list, compute_capability: str = "90") -> types.SimpleNamespace:
    """A cupy module whose kernels and library calls append to ``log`` (its copies
    between host and device to its attribute ``copies``), on a GPU of ``compute_capability``."""
    copies: list = []

    def asarray(x):
        if not isinstance(x, FakeArray):
            copies.append(("to device", np.shape(x)))
        return np.asarray(x, order="C").view(FakeArray)

    def asnumpy(a):
        copies.append(("to host", a.shape))
        return np.asarray(a).view(np.ndarray).copy()

    class RawModule:
        def __init__(self, code: str, options: tuple = ()):
            assert 'extern "C" __global__' in code
            self.options = options

        def get_function(self, name: str):
            def kernel(grid, block, args):
                _on_device(name, *args)
                log.append((name, grid, block, args))

            return kernel

    device = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
        Device=lambda: types.SimpleNamespace(compute_capability=compute_capability),
    )
    functions = {name: _device_function(name, getattr(np, name), log) for name in
                 ("matmul", "maximum", "negative", "exp", "reciprocal", "tanh")}  # fmt: skip
    return types.SimpleNamespace(
        ndarray=FakeArray, asarray=asarray, empty=lambda shape, dtype: np.empty(shape, dtype).view(FakeArray),
        from_dlpack=asarray, ascontiguousarray=asarray, asnumpy=asnumpy, RawModule=RawModule, cuda=device,
        stack=lambda arrays: np.stack(arrays).view(FakeArray),
        copies=copies, **functions,
    )  # fmt: skip


__all__ = ["FakeArray", "fake_cupy"]
