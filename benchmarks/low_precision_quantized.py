"""int8 and bfloat16 at the hardware limit (AVX512_VNNI's vpdpbusd, AVX512_BF16's vdpbf16ps):
kernels and models, side by side with our float32 build and the peers, in one run.

* GEMM 1024^3: int8 (qdense, uint8 x int8 -> requantized uint8) and bfloat16 (bf16_dense,
  bfloat16 activations) vs our float32 dense;
* quantized ResNet-50 (224x224, batch 1) and a BERT-base-size encoder (12 layers, d=768,
  seq 128), both exported to ONNX and quantized by ONNX Runtime's ``quantize_static`` (QDQ,
  uint8 activations, int8 weights per channel, random calibration data): tensorkiln on the
  QDQ file vs tensorkiln on the float32 file vs ONNX Runtime on the QDQ file; accuracy:
  top-1 agreement of our int8 logits with ONNX Runtime's int8 logits over random inputs
  (ResNet-50), max |ours - ORT| relative to max |ORT| (both);
* a bfloat16 BERT-base-size encoder (``tk.build(..., precision="bf16")``: linear layers in
  bfloat16 products with float32 sums) vs our float32 build vs torch eager under
  ``torch.autocast("cpu", torch.bfloat16)``; error: relative L2 vs our float32 output.

Each row's runs are interleaved (every function called in turn, thread counts
alternating in blocks), medians reported: the machine is shared with other jobs.

    python benchmarks/low_precision_quantized.py [--repeat 9] [--agreement 200] [--only gemm,resnet,bert,bf16]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import THREADS, interleaved_at_threads, load_average, ms, ratio, set_threads  # noqa: E402
from report import machine, table, write_section  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.examples.torch_zoo import resnet50_full  # noqa: E402
from tensorkiln.frontends.torch import from_exported_program  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------------------
# GEMM


def gemm_rows(repeat: int) -> list[list[str]]:
    rng = np.random.default_rng(0)
    n = 1024
    w = rng.normal(size=(n, n)).astype(np.float32)

    def build(kind: str):
        b = tk.GraphBuilder()
        if kind == "fp32":
            return tk.build(b.finish(b.dense(b.input("x", (n, n)), b.constant(w))))
        if kind == "bf16":
            return tk.build(b.finish(b.bf16_dense(b.input("x", (n, n), BF16), b.constant(w))))
        x = b.input("x", (n, n), np.uint8)
        params = [b.constant(np.float32(0.02)), b.constant(np.uint8(128)), b.constant(np.full(n, 0.001, np.float32)),
                  b.constant(np.zeros(n, np.int8)), b.constant(np.float32(0.5)), b.constant(np.uint8(128))]  # fmt: skip
        return tk.build(b.finish(b.qdense(x, b.constant(rng.integers(-127, 128, (n, n)).astype(np.int8)), None, params)))

    libs = {kind: build(kind) for kind in ("fp32", "int8", "bf16")}
    inputs = {
        "fp32": rng.normal(size=(n, n)).astype(np.float32),
        "int8": rng.integers(0, 256, (n, n)).astype(np.uint8),
        "bf16": rng.normal(size=(n, n)).astype(BF16),
    }
    fns = {t: [lambda k=k: libs[k](inputs[k]) for k in ("fp32", "int8", "bf16")] for t in THREADS}
    times = interleaved_at_threads(fns, repeat)
    rows = []
    for t in THREADS:
        t32, t8, t16 = times[t]
        ops = 2 * n**3
        rows.append([
            "GEMM 1024^3", str(t), ms(t32), ms(t8), ms(t16), f"{ops / t32 / 1e9:.0f} / {ops / t8 / 1e9:.0f} / {ops / t16 / 1e9:.0f}",
            ratio(t32, t8), ratio(t32, t16),
        ])  # fmt: skip
        print(" | ".join(rows[-1]), flush=True)
    return rows


# ---------------------------------------------------------------------------
# quantized models through ONNX Runtime's quantizer


def quantized_onnx(model: torch.nn.Module, example: torch.Tensor, folder: Path, name: str) -> tuple[Path, Path]:
    """The model exported to ONNX and quantized by onnxruntime's quantize_static (QDQ)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    fp32, int8 = folder / f"{name}.onnx", folder / f"{name}_qdq.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), str(fp32), dynamo=False, input_names=["x"], output_names=["y"], opset_version=17)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter([{"x": torch.randn(*example.shape).numpy()} for _ in range(4)])

        def get_next(self):
            return next(self.samples, None)

    quantize_static(str(fp32), str(int8), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)  # fmt: skip
    return fp32, int8


def ort_session(path: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def model_rows(name: str, model: torch.nn.Module, example: torch.Tensor, repeat: int, agreement: int) -> list[list[str]]:
    import onnx

    from tensorkiln.frontends.onnx import from_onnx

    with tempfile.TemporaryDirectory() as folder:
        fp32_path, int8_path = quantized_onnx(model.eval(), example, Path(folder), name.split()[0])
        start = time.perf_counter()
        int8 = tk.build(from_onnx(onnx.load(str(int8_path))))
        build = time.perf_counter() - start
        fp32 = tk.build(from_onnx(onnx.load(str(fp32_path))))
        sessions = {t: ort_session(int8_path, t) for t in THREADS}
        x = example.numpy()
        fns = {t: [lambda: int8(x), lambda: fp32(x), lambda s=sessions[t]: s.run(None, {"x": x})] for t in THREADS}
        times = interleaved_at_threads(fns, repeat)
        # accuracy: our int8 vs ONNX Runtime's int8 on fresh random inputs
        set_threads(2)
        agree, error = [], 0.0
        for _ in range(agreement):
            sample = torch.randn(*example.shape).numpy()
            ours, theirs = int8(sample), sessions[2].run(None, {"x": sample})[0]
            agree.append(np.array_equal(ours.reshape(ours.shape[0], -1).argmax(-1), theirs.reshape(theirs.shape[0], -1).argmax(-1)))
            error = max(error, float(np.abs(ours - theirs).max() / np.abs(theirs).max()))
    rows = []
    for t in THREADS:
        ti8, tf32, tort = times[t]
        rows.append([
            name, str(t), f"{build:.0f}", ms(ti8), ms(tf32), ms(tort), ratio(tf32, ti8), ratio(tort, ti8),
            f"{np.mean(agree) * 100:.1f}% of {len(agree)}", f"{error:.1e}",
        ])  # fmt: skip
        print(" | ".join(rows[-1]), flush=True)
    return rows


def bert_encoder(layers: int = 12) -> torch.nn.Module:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
    return torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).eval()


# ---------------------------------------------------------------------------
# bfloat16 autocast


def bf16_rows(repeat: int) -> list[list[str]]:
    model, example = bert_encoder(), torch.randn(1, 128, 768)
    module = from_exported_program(torch.export.export(model, (example,)))
    fp32 = tk.build(module)
    start = time.perf_counter()
    bf16 = tk.build(module, precision="bf16")  # bf16-products{autocast=true} first in the graph pipeline
    build = time.perf_counter() - start
    x = example.numpy()

    def torch_autocast():
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            return model(example)

    def torch_fp32():
        with torch.no_grad():
            return model(example)

    reference = fp32(x)
    error = float(np.linalg.norm(bf16(x) - reference) / np.linalg.norm(reference))
    torch_error = float(np.linalg.norm(torch_autocast().float().numpy() - reference) / np.linalg.norm(reference))
    fns = {t: [lambda: bf16(x), lambda: fp32(x), torch_autocast, torch_fp32] for t in THREADS}
    times = interleaved_at_threads(fns, repeat)
    rows = []
    for t in THREADS:
        t16, t32, torch16, torch32 = times[t]
        rows.append([
            "BERT-base-size encoder, bf16 autocast", str(t), f"{build:.0f}", ms(t16), ms(t32), ms(torch16), ms(torch32),
            ratio(t32, t16), ratio(torch16, t16), f"{error:.1e}", f"{torch_error:.1e}",
        ])  # fmt: skip
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--agreement", type=int, default=200, help="random inputs for the int8 vs ORT top-1 agreement")
    parser.add_argument("--only", default="gemm,resnet,bert,bf16")
    args = parser.parse_args()
    only = set(args.only.split(","))
    gemm = gemm_rows(args.repeat) if "gemm" in only else []
    models = []
    if "resnet" in only:
        models += model_rows("ResNet-50 224x224", resnet50_full().build(), torch.randn(1, 3, 224, 224), args.repeat, args.agreement)
    if "bert" in only:
        models += model_rows("BERT-base-size encoder (seq 128)", bert_encoder(), torch.randn(1, 128, 768), args.repeat, max(args.agreement // 10, 5))
    bf16 = bf16_rows(args.repeat) if "bf16" in only else []
    body = [
        "## int8 and bfloat16 at the hardware limit (VNNI vpdpbusd, AVX512_BF16 vdpbf16ps)",
        "",
        f"`benchmarks/low_precision_quantized.py` on {machine()}, a machine shared with other jobs:",
        f"every row's functions called in turn, thread counts alternating in blocks, medians of {args.repeat} calls;",
        "read the ratios. int8 products: weights packed at compile time in VNNI's 4-deep layout, the activation's zero",
        "point folded into a per-channel bias, the requantize epilogue in the register tile's write-back loop.",
        f"Load average at the end: {load_average()}.",
        "",
        table(["kernel", "threads", "fp32 (ms)", "int8 (ms)", "bf16 (ms)", "GOP/s fp32 / int8 / bf16", "int8 vs fp32", "bf16 vs fp32"], gemm),
        "",
        "Quantized models: ONNX Runtime's quantize_static (QDQ, uint8 activations, int8 weights per channel) on random",
        "calibration data; tensorkiln builds the QDQ file (fold-qdq: int8 kernels) and the float32 file. top-1: argmax of",
        "our int8 logits equal to ONNX Runtime's int8 logits on fresh random inputs (ResNet-50: 1000 classes; the encoder:",
        "its output rows' argmax); max err: max |ours - ORT int8| / max |ORT int8| over those inputs.",
        "",
        table(["model", "threads", "build (s)", "tk int8 (ms)", "tk fp32 (ms)", "ORT int8 (ms)", "int8 vs tk fp32",
               "int8 vs ORT", "top-1 = ORT int8", "max err vs ORT"], models),  # fmt: skip
        "",
        "bfloat16 autocast: `bf16-products{autocast=true}` (float32 linear layers with constant weights as bfloat16",
        "products with float32 sums; attention's activation products stay float32) vs our float32 build, torch eager",
        "in float32 and under torch.autocast bfloat16; err: relative L2 vs our float32 output.",
        "",
        table(["model", "threads", "build (s)", "tk bf16 (ms)", "tk fp32 (ms)", "torch autocast (ms)", "torch fp32 (ms)",
               "bf16 vs tk fp32", "vs torch autocast", "tk err", "torch autocast err"], bf16),  # fmt: skip
    ]
    write_section("low-precision-quantized", "\n".join(body))


if __name__ == "__main__":
    main()
