"""The torch model zoo (``tensorkiln.examples.torch_zoo``): every model exported with
torch.export, imported, compiled with ``tk.build`` and compared with torch eager on
fresh random inputs (relative L2 error <= 1e-5 in float32; integer and bool outputs
exactly). Models exported with ``torch.export.Dim("batch")`` run through the
interpreter and compiled at several batch sizes.

Models that use ops the frontend does not support yet are strict xfails listed in
``NOT_YET``: when their ops land the test passes, the strict xfail fails, and the
entry must go.
"""

from __future__ import annotations

import re
import zlib
from functools import cache

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend needs torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.dialects.graph.types import shape_of  # noqa: E402
from tensorkiln.errors import UnsupportedOperatorError  # noqa: E402
from tensorkiln.examples.torch_zoo import ZOO, random_inputs  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402

#: Zoo models that do not import yet -> what they lack: ATen overloads without a converter
#: (the import raises UnsupportedOperatorError naming them), or, written
#: ``overload[variant]``, a variant of a supported overload that its converter rejects
#: (TorchImportError). Delete an entry when its ops land.
NOT_YET: dict[str, list[str]] = {
}

TOLERANCE = 1e-5  # relative L2 error, float32


def _expected_error(missing: list[str]):
    return TorchImportError if any("[" in m for m in missing) else UnsupportedOperatorError


def _zoo_params():
    for name in ZOO:
        marks = []
        if name in NOT_YET:
            missing = NOT_YET[name]
            marks.append(
                pytest.mark.xfail(
                    raises=_expected_error(missing), strict=True, reason=f"not supported yet: {', '.join(missing)}"
                )
            )
        yield pytest.param(name, marks=marks, id=name)


# ---------------------------------------------------------------------------
# helpers


def _seed(*key) -> int:
    return zlib.crc32(repr(key).encode())


def _leaves(result) -> list:
    """The tensors a model returns, flattened in order, None dropped (as the importer does)."""
    if result is None:
        return []
    if isinstance(result, list | tuple):
        return [leaf for r in result for leaf in _leaves(r)]
    return [result]


def _relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    got, expected = got.astype(np.float64), expected.astype(np.float64)
    norm = np.linalg.norm(expected)
    return float(np.linalg.norm(got - expected) / norm) if norm else float(np.linalg.norm(got))


def assert_matches_torch(got, expected, what: str) -> None:
    """``got`` (what the compiled module or interpreter returned) against torch's result."""
    got = list(got) if isinstance(got, tuple) else [got]
    expected = [e.detach().numpy() for e in _leaves(expected)]
    assert len(got) == len(expected), f"{what}: {len(got)} outputs, torch returns {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        g = np.asarray(g)
        assert g.shape == e.shape, f"{what} output {k}: shape {g.shape}, torch {e.shape}"
        assert g.dtype == e.dtype, f"{what} output {k}: dtype {g.dtype}, torch {e.dtype}"
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e, err_msg=f"{what} output {k}")
        else:
            error = _relative_error(g, e)
            assert error <= TOLERANCE, f"{what} output {k}: relative L2 error {error:.3g} > {TOLERANCE}"


def _import(name: str, ep):
    """from_exported_program, checking that an expected failure fails for the listed reasons
    only (an op missing that NOT_YET does not list is a regression, not an xfail)."""
    try:
        return from_exported_program(ep)
    except UnsupportedOperatorError as e:
        named = set(re.findall(r"([\w.]+\.[\w]+) x\d+", str(e)))
        unexpected = named - set(NOT_YET.get(name, []))
        if unexpected:
            pytest.fail(f"{name}: unsupported ops not listed in NOT_YET: {sorted(unexpected)}\n{e}")
        raise
    except TorchImportError as e:
        listed = [m.split("[")[0] for m in NOT_YET.get(name, []) if "[" in m]
        if not any(op in str(e) for op in listed):
            pytest.fail(f"{name}: import failed for a reason NOT_YET does not list: {e}")
        raise


@cache
def _model(name: str):
    return ZOO[name].build()


# ---------------------------------------------------------------------------
# every zoo model, compiled


@pytest.mark.parametrize("name", list(_zoo_params()))
def test_zoo_model_compiled_matches_torch(name):
    entry, model = ZOO[name], _model(name)
    ep = torch.export.export(model, random_inputs(entry, seed=_seed(name, "export")))
    lib = tk.build(_import(name, ep))
    for trial in range(2):  # fresh inputs, not the ones used to export
        args = random_inputs(entry, seed=_seed(name, "run", trial))
        with torch.no_grad():
            expected = model(*args)
        assert_matches_torch(lib(*(a.numpy() for a in args)), expected, f"{name} (compiled)")


# ---------------------------------------------------------------------------
# dynamic batch

DYNAMIC = [name for name, entry in ZOO.items() if "dynamic_batch" in entry.tags]


def test_dynamic_models_are_the_mlp_and_resnets():
    assert {"mlp", "resnet18"} <= set(DYNAMIC)


@cache
def _dynamic(name: str):
    entry, model = ZOO[name], _model(name)
    batch = torch.export.Dim("batch")
    args = random_inputs(entry, seed=_seed(name, "export"), batch=2)
    ep = torch.export.export(model, args, dynamic_shapes=tuple({0: batch} for _ in args))
    module = from_exported_program(ep)
    return module, tk.create_executor("interpreter", module).evaluate(), tk.build(module)


@pytest.mark.parametrize("name", ["mlp", "resnet18"])
def test_dynamic_batch_imports_with_a_symbolic_dim(name):
    module, _, _ = _dynamic(name)
    func = module.body.block.first_op
    for arg in func.body.block.args:
        if len(shape_of(arg.type)) == len(ZOO[name].inputs[0].shape):
            assert isinstance(shape_of(arg.type)[0], str), f"batch dim of {arg.type} is not symbolic"
    output_type = func.function_type.outputs.data[0]
    assert isinstance(shape_of(output_type)[0], str), f"batch dim of the output {output_type} is not symbolic"


@pytest.mark.parametrize("batch", [1, 3, 17])
@pytest.mark.parametrize("executor", ["interpreter", "compiled"])
@pytest.mark.parametrize("name", ["mlp", "resnet18"])
def test_dynamic_batch_matches_torch(name, executor, batch):
    module, interpreter, lib = _dynamic(name)
    run = interpreter if executor == "interpreter" else lib
    args = random_inputs(ZOO[name], seed=_seed(name, "dynamic", batch), batch=batch)
    with torch.no_grad():
        expected = _model(name)(*args)
    assert_matches_torch(run(*(a.numpy() for a in args)), expected, f"{name} ({executor}, batch {batch})")


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_model_runs_on_its_inputs_device(name):
    """The tensors a model makes in forward (masks, positions, ramps) follow its inputs'
    device, so the GPU benchmark can time torch CUDA on it; the meta device stands in."""
    model = ZOO[name].build().to("meta").eval()
    inputs = [x.to("meta") for x in random_inputs(ZOO[name], seed=0)]
    with torch.no_grad():
        out = model(*inputs)
    outs = out if isinstance(out, tuple | list) else (out,)
    assert all(o.device.type == "meta" for o in outs)
