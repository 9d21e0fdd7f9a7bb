"""Zoo models with their products offloaded (BLAS, the example NPU): the same outputs as
the model compiled without offload and as torch eager (fresh random inputs)."""

from __future__ import annotations

import zlib
from functools import cache

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend needs torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.byoc.backends import blas  # noqa: E402
from tensorkiln.examples.torch_zoo import ZOO, random_inputs  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

TOLERANCE = 1e-5  # relative L2 error, float32
NEEDS_BLAS = pytest.mark.skipif(blas.unavailable() is not None, reason=str(blas.unavailable()))

#: (model, backend, composites expected at least)
CASES = [
    pytest.param("mlp", "blas", {"blas.dense_bias_act": 2, "blas.dense_bias": 1}, marks=NEEDS_BLAS, id="mlp-blas"),
    pytest.param(
        "transformer_encoder", "blas", {"blas.dense_bias": 7, "blas.batch_matmul": 4}, marks=NEEDS_BLAS,
        id="transformer_encoder-blas",
    ),
    pytest.param("gpt", "blas", {"blas.dense_bias": 8, "blas.batch_matmul": 4}, marks=NEEDS_BLAS, id="gpt-blas"),
    pytest.param("mlp", "example_npu", {"example_npu.dense_bias_act": 2}, id="mlp-example_npu"),
    pytest.param("sdpa", "example_npu", {"example_npu.batch_matmul": 6}, id="sdpa-example_npu"),
]


def _seed(*key) -> int:
    return zlib.crc32(repr(key).encode())


@cache
def _model(name: str):
    entry = ZOO[name]
    model = entry.build()
    module = from_exported_program(torch.export.export(model, random_inputs(entry, seed=_seed(name, "export"))))
    return model, module, tk.build(module)


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(np.linalg.norm(got - want) / (np.linalg.norm(want) or 1.0))


@pytest.mark.parametrize("name, backend, expected", CASES)
def test_offloaded_zoo_model_matches_compiled_and_torch(name, backend, expected):
    model, module, compiled = _model(name)
    part = tk.byoc.partition_for(module, backend)
    steps = [s["composite"] for m in tk.byoc.external_modules(part) for s in m.describe()["steps"]]
    for composite, count in expected.items():
        assert steps.count(composite) >= count, f"{name}: {composite} offloaded {steps.count(composite)}x"
    lib = tk.build(part)
    args = random_inputs(ZOO[name], seed=_seed(name, "byoc", backend))
    with torch.no_grad():
        eager = model(*args)
    eager = [e.numpy() for e in (eager if isinstance(eager, tuple) else (eager,))]
    xs = [a.numpy() for a in args]
    got, ours = lib(*xs), compiled(*xs)
    got, ours = (got, ours) if isinstance(got, tuple) else ((got,), (ours,))
    for k, (g, o, e) in enumerate(zip(got, ours, eager, strict=True)):
        assert _relative_error(g, o) <= TOLERANCE, f"{name} output {k}: offloaded vs compiled"
        assert _relative_error(g, e) <= TOLERANCE, f"{name} output {k}: offloaded vs torch"
