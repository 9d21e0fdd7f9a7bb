"""Imported models name their dynamic sizes as the user's ``Dim``s, not torch's symbols
(issue #39: a range error said 's77' where the user wrote ``Dim("batch")``)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend needs torch")

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402
from tensorkiln.frontends.torch.dim_names import dim_names_of  # noqa: E402


class _TwoInputs(torch.nn.Module):
    def forward(self, x, y):
        return x.sum(1) + y[:, 0]


def _export_two_inputs():
    batch = torch.export.Dim("batch", min=2, max=8)
    return torch.export.export(_TwoInputs(), (torch.randn(3, 4), torch.randn(3, 5)), dynamic_shapes=({0: batch}, {0: batch}))


def test_shapes_and_the_range_error_name_the_users_dim():
    ep = _export_two_inputs()
    assert set(dim_names_of(ep).values()) == {"batch"}
    lib = tk.build(from_exported_program(ep))
    assert lib.signature.inputs[0].shape == ("batch", 4)
    x, y = np.ones((5, 4), "f4"), np.ones((5, 5), "f4")
    np.testing.assert_allclose(lib(x, y), np.full(5, 5.0, "f4"))
    with pytest.raises(ValueError, match=r"argument 'x' dim 0: 'batch' = 20 is outside \[2, 8\]"):
        lib(np.ones((20, 4), "f4"), np.ones((20, 5), "f4"))


def test_a_derived_dim_is_written_with_the_users_name():
    class Halves(torch.nn.Module):
        def forward(self, x):
            return x[:, ::2] + x[:, 1::2]

    half = torch.export.Dim("half", min=1, max=64)
    ep = torch.export.export(Halves(), (torch.randn(2, 8),), dynamic_shapes=({1: 2 * half},))
    lib = tk.build(from_exported_program(ep))
    assert lib.signature.inputs[0].shape == (2, "2*half")
    assert lib.signature.outputs[0].shape == (2, "half")
    x = np.arange(20, dtype="f4").reshape(2, 10)
    np.testing.assert_allclose(lib(x), x[:, ::2] + x[:, 1::2])


def test_dims_without_a_user_name_keep_torchs():
    """torch.export.Dim.AUTO gives no name: torch's symbol stays."""
    ep = torch.export.export(_TwoInputs(), (torch.randn(3, 4), torch.randn(3, 5)), dynamic_shapes=({0: torch.export.Dim.AUTO}, {0: torch.export.Dim.AUTO}))
    lib = tk.build(from_exported_program(ep))
    (dim,) = [d for d in lib.signature.inputs[0].shape if isinstance(d, str)]
    assert dim.startswith("s")
