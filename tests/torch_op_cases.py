"""Test helper shared by the op-level torch tests (test_torch_ops_core.py, test_torch_ops_math.py):
a tiny module around a function, export + import + tk.build of it, the comparison with torch eager
(shapes, dtypes, non-finite values exactly, a relative L2 error per dtype), and a table of cases
that records which ATen overloads the cases name."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import tensorkiln as tk
from tensorkiln.frontends.torch import from_exported_program
from tensorkiln.frontends.torch.importer import _decompose
from tensorkiln.frontends.torch.registry import target_name

#: relative L2 error allowed per dtype (ints and bools compare exactly)
TOLERANCE = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


class Fn(torch.nn.Module):
    """A module around a function of its inputs."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def flat(result) -> list:
    """The tensors of a (nested) tuple of results, Nones left out."""
    if isinstance(result, tuple | list):
        return [t for r in result for t in flat(r)]
    return [] if result is None else [result]


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    got, want = got.astype(np.float64), want.astype(np.float64)  # no overflow in the norms
    norm = np.linalg.norm(want)
    return float(np.linalg.norm(got - want) / (norm if norm else 1.0))


def qualified(overload: str) -> str:
    """An expected overload's full name: ATen's are written without their namespace
    (``mm.default``), others with it (``prims.iota.default``)."""
    return overload if overload.count(".") >= 2 else f"aten.{overload}"


def overloads(ep) -> set[str]:
    return {target_name(n.target) for n in ep.graph.nodes if n.op == "call_function"}


def assert_matches(got: list[np.ndarray], want: list[np.ndarray], *, elementwise: bool = False) -> None:
    """Same shapes and dtypes; floats: inf and nan where torch has them, the rest within
    TOLERANCE in relative L2 error (and, with ``elementwise``, each element within it
    too); others exactly."""
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"output {k}: shape {g.shape}, torch {w.shape}"
        assert g.dtype == w.dtype, f"output {k}: dtype {g.dtype}, torch {w.dtype}"
        if w.dtype.kind != "f":
            np.testing.assert_array_equal(g, w, err_msg=f"output {k}")
            continue
        finite = np.isfinite(w)  # inf and nan where torch has them, the same ones
        np.testing.assert_array_equal(g[~finite], w[~finite], err_msg=f"output {k}: non-finite values")
        g, w = np.where(finite, g, 0), np.where(finite, w, 0)
        error = relative_error(g, w)
        rtol = TOLERANCE[w.dtype]
        assert error <= rtol, f"output {k}: relative L2 error {error:.3g}"
        if elementwise:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol / 10, err_msg=f"output {k}")


def check(fn, makers, rng, expect=(), *, decompose=True, runs=2, elementwise=False):
    """Export ``fn`` (a function or a module) on inputs from ``makers``, check that its
    (decomposed) graph uses the ``expect`` overloads, compile it, and compare it with torch
    eager (:func:`assert_matches`) on ``runs`` fresh sets of inputs."""
    model = (fn if isinstance(fn, torch.nn.Module) else Fn(fn)).eval()
    ep = torch.export.export(model, tuple(make(rng) for make in makers))
    if decompose:
        ep = _decompose(ep)
    missing = {qualified(e) for e in expect} - overloads(ep)
    assert not missing, f"the program does not use {sorted(missing)}; it uses {sorted(overloads(ep))}"
    lib = tk.build(from_exported_program(ep, decompose=False))
    for _ in range(runs):
        inputs = [make(rng) for make in makers]
        with torch.no_grad():
            want = [t.numpy() for t in flat(model(*inputs))]
        got = lib(*(t.numpy() for t in inputs))
        assert_matches(list(got) if isinstance(got, tuple) else [got], want, elementwise=elementwise)


class CaseTable:
    """``case(name, fn, makers, *expect, decompose=True)`` makes a pytest param and records the
    overloads it names (without "aten.") in ``covered``, for a test that every registered
    overload has a case."""

    def __init__(self):
        self.covered: set[str] = set()

    def __call__(self, name: str, fn: Callable, makers: tuple, *expect: str, decompose: bool = True):
        self.covered.update(expect)
        return pytest.param(fn, makers, expect, decompose, id=name)
