"""torch.cond and while_loop exported with torch.export: imported as graph.if /
graph.while, run by the VM at batch 1, 3 and 17 (Dim("batch")) against torch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend needs torch")


import tensorkiln as tk  # noqa: E402
from tensorkiln.dialects.graph.control import IfOp, WhileOp  # noqa: E402
from tensorkiln.errors import UnsupportedOperatorError  # noqa: E402
from tensorkiln.driver.vm import VMModule  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402


class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 5)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.lin(x).relu(), lambda x: self.lin(-x) * 0.5, (x,))


class Looping(torch.nn.Module):
    def forward(self, x):
        from torch._higher_order_ops.while_loop import while_loop

        count = torch.zeros((), dtype=torch.int64)
        return while_loop(lambda k, y: y.abs().sum() < 1000.0, lambda k, y: (k + 1, y * 1.5 + 0.25), (count, x))


def _export(model):
    batch = torch.export.Dim("batch")
    return from_exported_program(torch.export.export(model, (torch.randn(4, 6),), dynamic_shapes=({0: batch},)))


@pytest.mark.parametrize("model_class, op", [(Branchy, IfOp), (Looping, WhileOp)])
def test_torch_control_flow_runs_in_the_vm(model_class, op):
    torch.manual_seed(0)
    model = model_class().eval()
    module = _export(model)
    assert any(isinstance(o, op) for o in module.walk())
    vm = tk.build(module)  # once, for every batch size
    assert isinstance(vm, VMModule)
    interpreter = tk.create_executor("interpreter", module).evaluate()
    for n in (1, 3, 17):
        for sign in (1.0, -1.0):
            x = torch.rand(n, 6) * sign
            with torch.no_grad():
                expected = model(x)
            expected = expected if isinstance(expected, tuple) else (expected,)
            for run in (vm, interpreter):
                got = run(x.numpy())
                got = got if isinstance(got, tuple) else (got,)
                for g, e in zip(got, expected):
                    np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-6)


def test_unsupported_op_inside_a_branch_is_named():
    def spectrum(x):  # aten.linalg_eig: unsupported
        return x - torch.linalg.eigvals(x[:3, :3]).real.sum()

    class Bad(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, spectrum, lambda x: x * 2.0, (x,))

    with pytest.raises((UnsupportedOperatorError, TorchImportError), match=r"aten\.linalg_eig\.default"):
        batch = torch.export.Dim("batch", min=3)
        from_exported_program(torch.export.export(Bad(), (torch.randn(4, 6),), dynamic_shapes=({0: batch},)))
