"""Build time as a user feels it (issue #36): `import tensorkiln`, a cold build, a warm
rebuild from the disk cache, against ONNX Runtime's export + session creation, with where
a cold build's time goes. Writes the ``build-time`` section of BENCHMARKS.md.

    python benchmarks/build_time.py [--models efficientnet_b0,resnet50] [--repeat 2] [--no-report]

Each measurement runs in a fresh process (nothing imported, nothing compiled in memory):
cold builds with an empty cache directory, warm rebuilds with the cache the cold build
filled. Columns: wall seconds, and CPU seconds (this process's plus its LLVM worker
processes', ``codegen_process.py``): on a shared machine the CPU seconds are the stable
figure, the wall seconds what a user waits on an idle one. Models: torchvision's (needs
torchvision: ``benchmarks/torchvision_models.py`` says how), else the torch zoo's. The
phase rows are seconds of the building thread (``time.thread_time``), LLVM's those of
the worker processes summed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import machine, table, write_section  # noqa: E402

DEFAULT_MODELS = ("efficientnet_b0", "resnet50", "mobilenet_v3_large")

#: phases of a cold build: (row, pass-timing names summed into it)
PHASES = (
    ("graph passes", None),  # every pass not listed below
    ("te-to-loop", ("te-to-loop",)),
    ("default-schedule", ("default-schedule",)),
    ("dedupe + hoist", ("dedupe-kernels", "hoist-temporaries")),
    ("loop-to-llvm (+ partition, expand-math)", ("loop-to-llvm", "partition-loops", "bf16-storage", "expand-math")),
    ("LLVM IR text", ("llvm-ir-text",)),
    ("LLVM opt (workers)", ("llvm-opt",)),
    ("LLVM codegen (workers)", ("llvm-codegen",)),
    ("load + caches", ("load-object", "cache-lookup", "build-cache")),
)

_PRELUDE = textwrap.dedent(
    """
    import json, os, resource, sys, time
    def cpu():
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    def model_and_input(name):
        import torch
        torch.manual_seed(0)
        try:
            import torchvision
            model = getattr(torchvision.models, name)(weights=None).eval()
            return model, torch.randn(1, 3, 224, 224)
        except ImportError:  # (the zoo's small models: --models resnet18,mobilenet...)
            from tensorkiln.examples.torch_zoo import ZOO, random_inputs
            return ZOO[name].build(), random_inputs(ZOO[name], 0)[0]
    """
)

_IMPORT = """
wall, start = time.perf_counter(), cpu()
import tensorkiln as tk
tk.build  # (the compiler, imported on first use)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": cpu() - start}))
"""

_BUILD = """
name, phases_clock = sys.argv[1], sys.argv[2]
import torch
model, x = model_and_input(name)
wall, start = time.perf_counter(), cpu()
import tensorkiln as tk
from tensorkiln.frontends.torch import from_exported_program
from tensorkiln.backends.llvm import codegen_process
import tensorkiln.passes.pipeline as pipeline
if phases_clock == "cpu":  # pass timings in seconds of the building thread
    pipeline.time = type("clock", (), {"perf_counter": staticmethod(time.thread_time)})
imported = time.perf_counter(), cpu()
module = from_exported_program(torch.export.export(model, (x,)))
exported = time.perf_counter(), cpu()
lib = tk.build(module)
built = time.perf_counter()
codegen_process.shutdown()  # (the workers' CPU time is counted once they have exited)
built_cpu = cpu()
y = lib(x.numpy())
print(json.dumps({
    "import": [imported[0] - wall, imported[1] - start],
    "export": [exported[0] - imported[0], exported[1] - imported[1]],
    "build": [built - exported[0], built_cpu - exported[1]],
    "hit": bool(lib.cache_hit), "timings": list(lib.pass_timings), "objects": len(lib._keep_alive.code.objects),
}))
"""

_ORT = """
name = sys.argv[1]
import io, logging, warnings
import torch
model, x = model_and_input(name)
wall, start = time.perf_counter(), cpu()
import onnxruntime as ort
buffer = io.BytesIO()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    torch.onnx.export(model, (x,), dynamo=True, verbose=False).save(buffer)
exported = time.perf_counter(), cpu()
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
done = time.perf_counter(), cpu()
print(json.dumps({"export": [exported[0] - wall, exported[1] - start], "session": [done[0] - exported[0], done[1] - exported[1]]}))
"""


def _run(body: str, *args: str, env: dict[str, str] | None = None) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(body), *args],
        capture_output=True, text=True, timeout=1800, env={**os.environ, **(env or {})},
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{args}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _phases(timings: list[tuple[str, float]]) -> dict[str, float]:
    named = {names: 0.0 for _, names in PHASES if names}
    other = 0.0
    for name, seconds in timings:
        for names in named:
            if name.startswith(names):
                named[names] += seconds
                break
        else:
            other += seconds
    return {row: (named[names] if names else other) for row, names in PHASES}


def measure(name: str, repeat: int, with_ort: bool, clock: str) -> dict:
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="tk-build-time-") as cache:
            env = {"TK_CACHE_DIR": cache, "TK_CACHE": "1", "TK_PROGRESS": "0"}
            cold = _run(_BUILD, name, clock, env=env)
            warm = _run(_BUILD, name, clock, env=env)
        assert not cold["hit"] and warm["hit"], (cold["hit"], warm["hit"])
        runs.append((cold, warm, _run(_IMPORT), _run(_ORT, name) if with_ort else None))
    med = statistics.median
    result = {
        "import": [med(r[2][k] for r in runs) for k in ("wall", "cpu")],
        "export": [med(r[0]["export"][k] for r in runs) for k in (0, 1)],
        "cold": [med(r[0]["build"][k] for r in runs) for k in (0, 1)],
        "warm": [med(r[1]["build"][k] for r in runs) for k in (0, 1)],
        "objects": runs[0][0]["objects"],
        "phases": {row: med(_phases(r[0]["timings"])[row] for r in runs) for row, _ in PHASES},
    }
    if with_ort:
        result["ort"] = [med(r[3]["export"][k] + r[3]["session"][k] for r in runs) for k in (0, 1)]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime's export + session")
    parser.add_argument("--phases", choices=("cpu", "wall"), default="cpu", help="clock of the phase rows")
    parser.add_argument("--no-report", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    results = {}
    for name in models:
        results[name] = r = measure(name, args.repeat, not args.no_ort, args.phases)
        print(f"{name}: {json.dumps(r)}", flush=True)

    def pair(v: list[float]) -> str:
        return f"{v[0]:.2f} / {v[1]:.2f}"

    rows = [
        ["`import tensorkiln` (+ compiler)"] + [pair(r["import"]) for r in results.values()],
        ["torch.export + import"] + [pair(r["export"]) for r in results.values()],
        ["**cold build**"] + [f"**{pair(r['cold'])}**" for r in results.values()],
        ["**import + export + cold build**"]
        + [f"**{pair([r['import'][k] + r['export'][k] + r['cold'][k] for k in (0, 1)])}**" for r in results.values()],
        ["warm rebuild (disk cache)"] + [pair(r["warm"]) for r in results.values()],
    ]
    if not args.no_ort:
        rows.append(["ONNX Runtime: export + session"] + [pair(r["ort"]) for r in results.values()])
    rows.append(["LLVM modules (objects)"] + [str(r["objects"]) for r in results.values()])
    for row, _ in PHASES:
        rows.append([f"cold build: {row} ({args.phases})"] + [f"{r['phases'][row]:.2f}" for r in results.values()])
    markdown = (
        f"{machine()} (shared with other jobs: CPU seconds are the stable figure); seconds, wall / CPU "
        f"(CPU: the process and its LLVM workers), each in a fresh process, median of {args.repeat}; "
        "`python benchmarks/build_time.py`\n\n" + table(["seconds"] + models, rows)
    )
    print(markdown)
    if not args.no_report:
        write_section("build-time", "## Build time\n\n" + markdown)


if __name__ == "__main__":
    main()
