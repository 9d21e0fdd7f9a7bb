"""Complex values inside models (frontends/torch/complex.py, ops/complex_ops.py,
ops/fft.py) against torch eager: FFTs of every kind (rfft/irfft, fft/ifft, 2-d and n-d, the three norms, cut
and zero-padded lengths), complex products, parameters and slice assignment (a Fourier
neural operator layer), abs/angle/view_as_real; and clear errors for complex inputs and
outputs and for ops we do not convert on complex values."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch frontend tests need torch")
nn = torch.nn

import tensorkiln as tk  # noqa: E402
from tensorkiln.frontends.torch import TorchImportError, from_exported_program  # noqa: E402
from torch_op_cases import Fn  # noqa: E402


def check(model, shapes, rng, dtype=np.float32, rtol=2e-5, atol=2e-5):
    """Compile on one set of inputs, compare with torch on two fresh ones."""
    make = lambda: tuple(torch.from_numpy(rng.standard_normal(s).astype(dtype)) for s in shapes)  # noqa: E731
    lib = tk.build(from_exported_program(torch.export.export(model, make())))
    for _ in range(2):
        inputs = make()
        expected = torch.utils._pytree.tree_leaves(model(*inputs))
        got = lib(*[t.numpy() for t in inputs])
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            e = e.detach().resolve_neg().resolve_conj().numpy()
            assert g.shape == e.shape and g.dtype == e.dtype
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol * max(1.0, np.abs(e).max()))


def _transforms(x):
    fft = torch.fft
    real = torch.view_as_real
    return (
        real(fft.rfft(x)), real(fft.rfft(x, norm="ortho")), real(fft.rfft(x, n=7)), real(fft.rfft(x, n=24, dim=1)),
        real(fft.fft(x)), real(fft.fft(x, norm="forward", dim=0)), fft.ifft(x).real, fft.ifft(x).imag, real(fft.fft2(x)),
        real(fft.fftn(x, dim=(0, 2))), real(fft.rfft2(x, norm="ortho")), fft.irfft(fft.rfft(x)),
        fft.irfft(fft.rfft(x), n=13), fft.irfft(fft.rfft(x), n=25), fft.irfft2(fft.rfft2(x), s=(6, 10)),
        fft.ifft(fft.fft(x, dim=1), dim=1).real, fft.ifft(fft.rfft(x)).imag,
        real(fft.ihfft2(x)), real(fft.ihfftn(x, dim=(0, 2))),  # (conjugated spectra: _conj_physical)
    )  # fmt: skip


@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 2e-5), (np.float64, 1e-12)], ids=["float32", "float64"])
def test_fft_transforms(rng, dtype, tolerance):
    check(Fn(_transforms), [(3, 6, 10)], rng, dtype, tolerance, tolerance)


def _long_transforms(x, u, k):
    """Long lengths, forward and inverse, real and complex: by the FFT kernels (256,
    210 = 2 x 3 x 5 x 7, 300, 2048) and split four-step (255 = 15 x 17)."""
    fft, real = torch.fft, torch.view_as_real
    n = u.shape[-1]
    return (
        real(fft.fft(x)), real(fft.rfft(x, norm="ortho")), fft.irfft(fft.rfft(x), n=256),
        real(fft.ifft(fft.fft(x, dim=-1), dim=-1)), fft.irfft(fft.rfft(u, n=2 * n) * fft.rfft(k, n=2 * n), n=2 * n)[..., :n],
        fft.irfft(fft.rfft(x[..., :255]), n=255), real(fft.fft(x[..., :210])), fft.irfft(fft.rfft(x), n=300),
    )  # fmt: skip


@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 2e-6), (np.float64, 1e-14)], ids=["float32", "float64"])
def test_long_transforms_split_in_four_steps(rng, dtype, tolerance):
    check(Fn(_long_transforms), [(3, 256), (2, 4, 1024), (4, 1024)], rng, dtype, tolerance, tolerance)


def _real_transforms(x, re, im, u):
    """Even lengths by the real FFT kernels (512, 300, a Whisper spectrogram's 400) along
    a middle axis, both-sided, normalized, an irfft of a spectrum that is not Hermitian
    (torch ignores the imaginary parts of its first and last bins); and by halves whose
    half is split four-step (544 = 2 x 16 x 17: ``_rfft_by_halves``/``_irfft_by_halves``),
    with an odd axis ahead."""
    fft, real = torch.fft, torch.view_as_real
    spectrum = torch.complex(re, im)
    frames = torch.stft(x[0, :, 0], 400, 160, window=torch.hann_window(400, dtype=x.dtype), return_complex=True)
    return (
        real(fft.rfft(x, dim=1)), real(fft.fft(x, dim=1, norm="ortho")), fft.irfft(spectrum, n=512, norm="forward"),
        fft.irfft(spectrum, n=300), real(fft.rfft2(x[..., :3], s=(512, 2))), frames.abs() ** 2,
        real(fft.rfft(u, norm="ortho")), fft.irfft(fft.rfft(u) * 2, n=544), real(fft.rfft(u, dim=0)),
    )  # fmt: skip


@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 2e-6), (np.float64, 1e-13)], ids=["float32", "float64"])
def test_real_transforms(rng, dtype, tolerance):
    check(Fn(_real_transforms), [(2, 512, 5), (3, 257), (3, 257), (3, 544)], rng, dtype, tolerance, tolerance)


def test_real_transforms_are_one_kernel_each():
    """rfft of 1024 points: one ``graph.rfft`` along the 3 rows (as lanes), irfft one
    ``graph.irfft``, no DFT products; a length with a prime factor above the kernel's
    radices (255 = 15 x 17) goes four-step: one GEMM of both parts per stage (weights
    2n x 2n), not four."""
    from tensorkiln.dialects.graph.fourier import FFTOp, IRFFTOp, RFFTOp
    from tensorkiln.dialects.graph.linalg import DenseOp

    def ops(length: int, of: type):
        fn = Fn(lambda x: torch.fft.irfft(torch.fft.rfft(x) * 2, n=length))
        return [op for op in from_exported_program(torch.export.export(fn, (torch.randn(3, length),))).walk() if isinstance(op, of)]

    assert [(tuple(op.input.type.get_shape()), op.axis.value.data) for op in ops(1024, RFFTOp)] == [((1, 3, 1024), -1)]
    assert [(tuple(op.real.type.get_shape()), op.length.value.data) for op in ops(1024, IRFFTOp)] == [((1, 3, 513), 1024)]
    assert ops(1024, DenseOp) == [] and ops(1024, FFTOp) == []
    assert sorted(tuple(op.weight.type.get_shape()) for op in ops(255, DenseOp)) == [(30, 30), (30, 30), (34, 34), (34, 34)]
    assert ops(255, RFFTOp) == ops(255, FFTOp) == []


class FNet(nn.Module):
    """FNet's token mixing: the real part of a 2-d FFT over (sequence, hidden)."""

    def forward(self, x):
        return torch.fft.fft(torch.fft.fft(x, dim=-1), dim=-2).real


class LongConvolution(nn.Module):
    """An FFT convolution (Hyena, S4): rfft of signal and kernel, product, irfft, cut."""

    def forward(self, u, k):
        n = u.shape[-1]
        return torch.fft.irfft(torch.fft.rfft(u, n=2 * n) * torch.fft.rfft(k, n=2 * n), n=2 * n)[..., :n]


class SpectralConv2d(nn.Module):
    """A Fourier neural operator layer: complex weights on the lowest modes."""

    def __init__(self, channels=4, modes=3):
        super().__init__()
        torch.manual_seed(0)
        self.modes = modes
        self.weight = nn.Parameter(torch.randn(channels, channels, modes, modes, dtype=torch.cfloat) / channels)

    def forward(self, x):
        m = self.modes
        x_ft = torch.fft.rfft2(x)
        out = torch.zeros(x.shape[0], self.weight.shape[1], x.shape[-2], x.shape[-1] // 2 + 1, dtype=torch.cfloat)
        out[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m, :m], self.weight)
        return torch.fft.irfft2(out, s=(x.shape[-2], x.shape[-1])) + x


class Spectrum(nn.Module):
    """Magnitude and phase, complex arithmetic with scalars and real tensors, conj, polar."""

    def forward(self, x, y):
        z = torch.fft.rfft(x, norm="ortho")
        w = torch.fft.rfft(y)
        mixed = (z * w.conj() + 2 * z - w / (w.abs() + 1)) / (1 + 0.5j)
        return z.abs(), torch.angle(w), torch.view_as_real(mixed), torch.view_as_real(torch.polar(z.abs(), torch.angle(w)))


@pytest.mark.parametrize(
    "model, shapes",
    [(FNet(), [(2, 7, 12)]), (LongConvolution(), [(2, 3, 16), (3, 16)]), (SpectralConv2d(), [(2, 4, 8, 10)]),
     (Spectrum(), [(3, 10), (3, 10)]), (FNet(), [(2, 64, 48)]), (LongConvolution(), [(2, 3, 100), (3, 100)]),
     (SpectralConv2d(), [(2, 4, 32, 40)])],
    ids=["fnet", "long-convolution", "fno-layer", "spectrum", "fnet-kernels", "long-convolution-kernels", "fno-kernels"],
)  # fmt: skip
def test_models_computing_with_complex_values(rng, model, shapes):
    check(model, shapes, rng)


class DynamicTransforms(nn.Module):
    """A power spectrogram of a batch of clips (symbolic batch and length: a symbolic
    number of frames), a complex FFT along the middle axis and a real round trip along
    the last of a symbolic batch."""

    def forward(self, x, u):
        frames = torch.stft(x, 400, 160, window=torch.hann_window(400), return_complex=True).abs() ** 2
        return frames, torch.view_as_real(torch.fft.fft(u, dim=-2)), torch.fft.irfft(torch.fft.rfft(u) * 2, n=64)


def test_symbolic_sizes_along_the_last_two_axes_use_the_kernels(rng):
    from tensorkiln.dialects.graph.fourier import FFTOp, IRFFTOp, RFFTOp

    make = lambda b, t, c: (torch.randn(b, t), torch.randn(c, 32, 64))  # noqa: E731
    dims = ({0: torch.export.Dim("b", min=2), 1: torch.export.Dim("t", min=1000, max=64000)}, {0: torch.export.Dim("c")})
    module = from_exported_program(torch.export.export(DynamicTransforms(), make(2, 16000, 3), dynamic_shapes=dims))
    kernels = sorted(op.name for op in module.walk() if isinstance(op, FFTOp | RFFTOp | IRFFTOp))
    assert kernels == ["graph.irfft", "graph.rfft", "graph.rfft", "graph.rfft"]  # (fft of a real u: r2c, two-sided)
    lib = tk.build(module)
    for b, t, c in ((2, 16000, 3), (3, 8000, 1)):
        x, u = make(b, t, c)
        for got, want in zip(lib(x.numpy(), u.numpy()), DynamicTransforms()(x, u)):
            want = want.numpy()
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


class SymbolicLength(nn.Module):
    """Transforms along an axis of symbolic length (FNet's sequence, an FFT convolution of
    any length), every norm. (A one-sided transform of a length ``s`` itself, not ``2 s``,
    fails in torch.export: its bin count ``s // 2 + 1`` brings a guard torch cannot prove.)"""

    def forward(self, x, z):
        n = z.shape[1]
        spectrum = torch.fft.ifft(torch.complex(z, z * 2), dim=1, norm="forward")
        convolved = torch.fft.irfft(torch.fft.rfft(z, n=2 * n) * torch.fft.rfft(z.flip(0), n=2 * n), n=2 * n)[..., :n]
        return torch.fft.fft2(x, norm="ortho").real, torch.view_as_real(spectrum), torch.fft.fft(x, dim=1).imag, convolved


def test_transforms_along_a_symbolic_axis_compute_their_dft(rng):
    """DFT matrices computed in the model for each length (7: below the kernels' 16
    points, 20, 257: a prime): complex, two- and one-sided real (of ``2 n`` points),
    inverse real."""
    length = torch.export.Dim("s", min=2, max=300)
    make = lambda n: (torch.randn(2, n, 24), torch.randn(3, n))  # noqa: E731
    program = torch.export.export(SymbolicLength(), make(20), dynamic_shapes=({1: length}, {1: length}))
    lib = tk.build(from_exported_program(program))
    for n in (7, 20, 257):
        inputs = make(n)
        for got, want in zip(lib(*[t.numpy() for t in inputs]), SymbolicLength()(*inputs)):
            want = want.numpy()
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max() * np.sqrt(n))


def test_complex_inputs_and_outputs_are_refused_by_name():
    with pytest.raises(TorchImportError, match="returns a complex tensor"):
        from_exported_program(torch.export.export(Fn(lambda x: torch.fft.rfft(x)), (torch.randn(8),)))
    ep = torch.export.export(Fn(lambda z: torch.view_as_real(z * 2)), (torch.randn(8, dtype=torch.cfloat),))
    with pytest.raises(TorchImportError, match=r"input .* is a complex tensor \(torch.complex64\): complex inputs are not supported"):
        from_exported_program(ep)


def test_an_op_we_do_not_convert_on_complex_values_is_named():
    ep = torch.export.export(Fn(lambda x: torch.view_as_real(torch.exp(torch.fft.rfft(x)))), (torch.randn(8),))
    with pytest.raises(TorchImportError, match="aten.exp.default on complex tensors is not supported"):
        from_exported_program(ep)
