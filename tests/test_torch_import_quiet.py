"""Importing a torch model prints no warning of torch's own making (#40: every export printed
torch 2.13's LeafSpec FutureWarning, raised inside run_decompositions)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from tensorkiln.frontends.torch import from_exported_program  # noqa: E402


def test_from_exported_program_warns_nothing():
    model = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.GELU()).eval()
    ep = torch.export.export(model, (torch.randn(2, 5),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from_exported_program(ep)
    assert [str(w.message) for w in caught] == []


def test_other_future_warnings_still_show():
    """The filter is that one message, only around torch's call: a FutureWarning of the
    user's own, raised after, is not swallowed."""
    model = torch.nn.Linear(2, 2).eval()
    ep = torch.export.export(model, (torch.randn(1, 2),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from_exported_program(ep)
        warnings.warn("mine", FutureWarning)
    assert [str(w.message) for w in caught] == ["mine"]
