"""ONNX models: tensorkiln (``from_onnx`` + ``tk.build``) vs ONNX Runtime on the same
``.onnx`` file, at 1 and 2 threads, and the cost of getting there: import + build vs
ONNX Runtime's session creation. Writes the table to BENCHMARKS.md (``onnx-models``).

    .venv/bin/python benchmarks/onnx_models.py [--repeat 30] [--models resnet50,gpt]

Models: the onnx package's light image models (random weights,
``tensorkiln.examples.onnx_models``) and torch zoo models exported with
``torch.onnx.export(..., dynamo=True)``. Steady state: tensorkiln and ONNX Runtime called
in turn in one loop on the same input, thread counts alternating in blocks
(``peers.interleaved_at_threads``), medians and their ratio (> 1: tensorkiln is slower).
ONNX Runtime's pool size is fixed per session: one session per thread count. Build times
are of a cold compile (an empty compile cache of this run).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ["TK_CACHE_DIR"] = tempfile.mkdtemp(prefix="tk-onnx-bench-")  # cold builds
sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import THREADS, interleaved_at_threads, load_average, ms, ratio  # noqa: E402  (sets the thread pools first)
from report import machine, write_section  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402

import tensorkiln as tk  # noqa: E402
from tensorkiln.examples.onnx_models import input_shape, light_model  # noqa: E402
from tensorkiln.examples.torch_zoo import ZOO, random_inputs  # noqa: E402
from tensorkiln.frontends.onnx import from_onnx  # noqa: E402

LIGHT = ("squeezenet", "shufflenet", "inception_v1", "densenet121", "resnet50")
EXPORTED = ("resnet18", "mobilenet_v2", "transformer_encoder", "gpt")


def exported(name: str) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    entry = ZOO[name]
    model, args = entry.build(), random_inputs(entry, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            program = torch.onnx.export(model, args, dynamo=True, verbose=False)
        finally:
            logging.disable(logging.NOTSET)
    return program.model_proto, [a.numpy() for a in args]


def light(name: str) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    model = light_model(name, seed=0)
    return model, [np.random.default_rng(1).standard_normal(input_shape(model)).astype(np.float32)]


def session(data: bytes, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # (see peers.onnxruntime_fns)
    options.log_severity_level = 3
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def measure(name: str, model: onnx.ModelProto, inputs: list[np.ndarray], repeat: int) -> list[str]:
    data = model.SerializeToString()
    start = time.perf_counter()
    module = from_onnx(data)
    imported = time.perf_counter() - start
    start = time.perf_counter()
    lib = tk.build(module)
    built = time.perf_counter() - start
    creations = []
    for _ in range(3):
        start = time.perf_counter()
        session(data, 1)
        creations.append(time.perf_counter() - start)
    sessions = {n: session(data, n) for n in THREADS}
    feeds = {n: dict(zip((i.name for i in s.get_inputs()), inputs)) for n, s in sessions.items()}
    got = lib(*inputs)
    got = got[0] if isinstance(got, list | tuple) else got
    expected = sessions[1].run(None, feeds[1])[0]
    error = float(np.linalg.norm(got - expected) / np.linalg.norm(expected))
    fns = {n: [lambda: lib(*inputs), lambda s=sessions[n], f=feeds[n]: s.run(None, f)] for n in THREADS}
    times = interleaved_at_threads(fns, repeat)
    row = [name, f"{imported:.2f}", f"{built:.1f}", f"{statistics.median(creations):.2f}"]
    for n in THREADS:
        ours, theirs = times[n]
        row += [ms(ours), ms(theirs), ratio(ours, theirs)]
    row.append(f"{error:.1e}")
    print(" | ".join(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--models", default="", help="comma-separated (default: all)")
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args()
    chosen = set(args.models.split(",")) if args.models else None
    rows = []
    for name in (*LIGHT, *EXPORTED):
        if chosen is not None and name not in chosen:
            continue
        model, inputs = light(name) if name in LIGHT else exported(name)
        label = f"{name} ({'onnx light' if name in LIGHT else 'torch zoo, dynamo export'})"
        rows.append(measure(label, model, inputs, args.repeat))
    header = ["model", "import s", "build s", "ORT session s"]
    for n in THREADS:
        header += [f"tk ms ({n}t)", f"ORT ms ({n}t)", f"tk/ORT ({n}t)"]
    header.append("rel. L2 vs ORT")
    lines = [
        "## ONNX models: tensorkiln vs ONNX Runtime (1 and 2 threads)",
        "",
        f"`benchmarks/onnx_models.py` (onnxruntime {ort.__version__}): the same `.onnx` file through `from_onnx` + "
        "`tk.build` and through an ONNX Runtime session (CPU provider, default graph optimizations). Steady state: "
        "both called in turn in one loop, thread counts alternating in blocks, medians; tk/ORT > 1: tensorkiln slower. "
        "Import and build: one cold compile (empty compile cache); ORT session: median of 3 creations at 1 thread. "
        f"{machine()}, load average {load_average()} at the end of the run.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
    ]
    markdown = "\n".join(lines) + "\n"
    print(markdown)
    if not args.no_report and chosen is None:
        write_section("onnx-models", markdown)


if __name__ == "__main__":
    main()
