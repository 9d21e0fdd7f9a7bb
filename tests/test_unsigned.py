"""uint8 (and int16) tensors: imported from torch, stored as bytes, computed in i32
(legalize-unsigned), with torch's wrap-around arithmetic, comparisons of values above
127, casts, reductions and data movement; against torch eager on odd shapes."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkiln as tk
from tensorkiln.dialects.graph.types import UI8
from tensorkiln.passes.legalize_unsigned import legalize_unsigned, uses_unsigned_bytes

torch = pytest.importorskip("torch", reason="torch is the oracle for uint8 semantics")
F = torch.nn.functional


def _bytes(*shape, seed=0):
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


UINT8_CASES = {
    "add_wraps": lambda x, y: x + y,
    "sub_wraps": lambda x, y: x - y,
    "mul_scalar_wraps": lambda x, y: x * 3 + 7,
    "compare_above_127": lambda x, y: torch.where(x > 200, x, y),
    "eq_and_lt": lambda x, y: (x < y) | (x == 255),
    "floor_divide": lambda x, y: x // (y | 1),
    "remainder": lambda x, y: x % (y | 1),
    "true_divide": lambda x, y: x / 255.0,
    "bitwise": lambda x, y: (x & y) ^ (~x | (y >> 2)),
    "shift_left_wraps": lambda x, y: x << 3,
    "max_min": lambda x, y: torch.maximum(x, y) - torch.minimum(x, y),
    "amax": lambda x, y: x.amax(dim=-1),
    "sum_promotes": lambda x, y: x.sum(dim=0),
    "clamp": lambda x, y: x.clamp(30, 220),
    "to_float_and_back": lambda x, y: ((x.float() * 0.5) + 100.25).to(torch.uint8),
    "from_bool": lambda x, y: (x > y).to(torch.uint8) * 200,
    "to_bool": lambda x, y: x.bool() & y.bool(),
    "to_int16": lambda x, y: x.to(torch.int16) * 300 - y.to(torch.int16),
    "cat_transpose_flip": lambda x, y: torch.cat([x, y.flip(0)], 1).transpose(0, 1),
    "pad_with_200": lambda x, y: F.pad(x, (1, 2), value=200),
    "masked_fill": lambda x, y: x.masked_fill(y > 128, 250),
    "gather_rows": lambda x, y: x[y[:, 0].long() % x.shape[0]],
    "identity": lambda x, y: x,
    "arange_uint8": lambda x, y: x + torch.arange(5, dtype=torch.uint8) * 60,
    "full_uint8": lambda x, y: torch.full((7, 5), 231, dtype=torch.uint8) - x,
}


class _Case(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, y):
        return self.fn(x, y)


def _compile(model, args):
    from tensorkiln.frontends.torch import from_exported_program

    return tk.build(from_exported_program(torch.export.export(model, args)))


@pytest.mark.parametrize("name", UINT8_CASES)
def test_uint8_ops_against_torch(name):
    x, y = _bytes(7, 5, seed=1), _bytes(7, 5, seed=2)
    model = _Case(UINT8_CASES[name])
    want = model(x, y).numpy()
    got = _compile(model, (x, y))(x.numpy(), y.numpy())
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_uint8_image_preprocessing_and_pooling():
    class Preprocess(torch.nn.Module):
        def forward(self, image):
            pooled = F.max_pool2d(image.permute(2, 0, 1).unsqueeze(0).float(), 2)
            scaled = F.interpolate(image.permute(2, 0, 1).unsqueeze(0), scale_factor=2, mode="nearest")
            return pooled / 255.0, scaled

    image = _bytes(9, 11, 3, seed=3)
    model = Preprocess()
    got = _compile(model, (image,))(image.numpy())
    for g, w in zip(got, model(image), strict=True):
        assert g.dtype == w.numpy().dtype
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-6)


def test_int16_ops_against_torch():
    class Int16(torch.nn.Module):
        def forward(self, a, b):
            return (a * b + 1000) // 7, a > b, (a.float() * 0.5).to(torch.int16)

    gen = torch.Generator().manual_seed(4)
    a = torch.randint(-30000, 30000, (6, 5), dtype=torch.int16, generator=gen)
    b = torch.randint(-3, 4, (6, 5), dtype=torch.int16, generator=gen)
    model = Int16()
    got = _compile(model, (a, b))(a.numpy(), b.numpy())
    for g, w in zip(got, model(a, b), strict=True):
        assert g.dtype == w.numpy().dtype
        np.testing.assert_array_equal(g, w.numpy())


def test_wrong_dtype_at_call_names_the_argument():
    x, y = _bytes(3, 4), _bytes(3, 4)
    lib = _compile(_Case(lambda x, y: x + y), (x, y))
    with pytest.raises(ValueError, match="uint8"):
        lib(x.numpy().astype(np.int8), y.numpy())


def test_pass_leaves_no_unsigned_type_and_keeps_the_bits():
    b = tk.GraphBuilder()
    x = b.input("x", (2, 3), np.uint8)
    weight = b.constant(np.array([[250, 3, 128]], np.uint8))
    module = b.finish(b.add(x, weight))
    assert uses_unsigned_bytes(module)
    reference = tk.create_executor("interpreter", module).evaluate()
    data = np.array([[10, 255, 127], [0, 1, 200]], np.uint8)
    want = reference(data)
    np.testing.assert_array_equal(want, (data + np.array([[250, 3, 128]], np.uint8)))
    np.testing.assert_array_equal(tk.build(module)(data), want)
    legalize_unsigned(module)
    module.verify()
    assert not uses_unsigned_bytes(module)
    assert UI8 not in {getattr(v.type, "element_type", None) for op in module.walk() for v in op.results}
    text = str(module)
    assert "graph.bitwise_and" in text and "tensor<2x3xi32>" in text
