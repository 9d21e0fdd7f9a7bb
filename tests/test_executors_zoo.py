"""Every zoo model gives torch's outputs through all four executors (interpreter,
graph, vm, aot), and the graph executor's memory plan is smaller than one buffer per
intermediate on the ResNets."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the zoo needs torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.examples.torch_zoo import ZOO, random_inputs  # noqa: E402
from tensorkiln.driver.vm import vm_of  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

TOLERANCE = 1e-5  # relative L2 error, float32


def _seed(*key) -> int:
    return zlib.crc32(repr(key).encode())


def _leaves(result) -> list:
    if result is None:
        return []
    if isinstance(result, list | tuple):
        return [leaf for r in result for leaf in _leaves(r)]
    return [result]


def _check(got, expected, what: str) -> None:
    got = list(got) if isinstance(got, tuple) else [got]
    expected = [e.detach().numpy() for e in _leaves(expected)]
    assert len(got) == len(expected), what
    for k, (g, e) in enumerate(zip(got, expected)):
        assert g.shape == e.shape and g.dtype == e.dtype, f"{what} output {k}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e, err_msg=f"{what} output {k}")
        else:
            g64, e64 = g.astype(np.float64), e.astype(np.float64)
            norm = np.linalg.norm(e64)
            error = np.linalg.norm(g64 - e64) / norm if norm else np.linalg.norm(g64)
            assert error <= TOLERANCE, f"{what} output {k}: relative L2 error {error:.3g}"


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_model_same_outputs_from_every_executor(name):
    entry = ZOO[name]
    model = entry.build()
    ep = torch.export.export(model, random_inputs(entry, seed=_seed(name, "export")))
    module = from_exported_program(ep)
    aot = tk.build(module)
    runs = {
        "interpreter": tk.create_executor("interpreter", module).evaluate(),
        "graph": aot.graph_executor(),
        "vm": vm_of(aot),  # the VM's one-call program over the same build (tests/test_vm.py builds VMs)
        "aot": aot,
    }
    args = random_inputs(entry, seed=_seed(name, "executors"))
    with torch.no_grad():
        expected = model(*args)
    arrays = [a.numpy() for a in args]
    for kind, run in runs.items():
        _check(run(*arrays), expected, f"{name} ({kind})")


@pytest.mark.parametrize("name", ["resnet18", "resnet50"])
def test_memory_plan_is_smaller_than_one_buffer_per_intermediate(name):
    entry = ZOO[name]
    ep = torch.export.export(entry.build(), random_inputs(entry, seed=1))
    program = tk.build(from_exported_program(ep)).graph_program
    temporaries = program.temporaries
    planned = sum(program.storage_bytes({}))
    every = sum(program.tensors[t].nbytes({}) for t in temporaries)
    assert len(program.storages) < len(temporaries)
    assert planned < every, f"{name}: planned {planned} bytes, one buffer each {every}"
