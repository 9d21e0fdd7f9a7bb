#!/usr/bin/env bash
# ONE prepared command for a session that has the GPU machine (see README's GPU section):
# installs the carried wheels, runs the GPU test subset, then times tensorkiln's CUDA
# kernels against torch CUDA eager and writes the BENCHMARKS.md section "gpu".
# Budget: under 7 minutes (tests <= 180 s, benchmarks <= 200 s; the cuBLAS-offload rows
# add a few seconds, before the zoo, which stops at its own time budget).
#
# Here, first:   bash benchmarks/gpu_wheels.sh
# Then the device tool's run, with carry [".whl"] and timeout_s 450:
#                bash benchmarks/gpu_check.sh
# What comes back under $OUT: gpu_tests.log, gpu_bench.log, gpu_section.md, gpu_variants.log, BENCHMARKS.md
# (merge the section here with: python benchmarks/gpu_bench.py --import-section FILE).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/tensorkiln-gpu-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || {
  echo "gpu_check: installing the carried wheels failed (run benchmarks/gpu_wheels.sh here and carry .whl)"; exit 1; }
mkdir -p /tmp/pkg && ln -sfn "$PWD" /tmp/pkg/tensorkiln
export PYTHONPATH=/tmp/pkg:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi -L 2>&1 | head -2
python3 - <<'PY' 2>&1 | tee "$OUT/versions.txt"
import cupy, numpy, torch, xdsl
print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "| cupy", cupy.__version__, "| numpy", numpy.__version__)
try:
    import llvmlite
    print("llvmlite", llvmlite.__version__, "(the CPU backend wants 0.50; the CUDA path does not use it)")
except ImportError:
    print("no llvmlite")
import tensorkiln
print("tensorkiln from", tensorkiln.__file__)
PY
timeout 180 python3 -m pytest -q -p no:cacheprovider --timeout=60 -rf tests/test_cuda_device.py tests/test_cuda_byoc_device.py 2>&1 | tee "$OUT/gpu_tests.log"
tests_rc=${PIPESTATUS[0]}
timeout 200 python3 benchmarks/gpu_bench.py --out "$OUT" 2>&1 | tee "$OUT/gpu_bench.log"
bench_rc=${PIPESTATUS[0]}
# the kernels alone (no host program): generated ones beside hand-written reference points
python3 benchmarks/gpu_variants/gen.py /tmp/gpu_variants && timeout 60 python3 benchmarks/gpu_variants/run.py /tmp/gpu_variants 2>&1 | tee "$OUT/gpu_variants.log"
cp BENCHMARKS.md "$OUT/" 2>/dev/null
echo "gpu_check: tests rc=$tests_rc, benchmarks rc=$bench_rc"
exit $(( tests_rc != 0 || bench_rc != 0 ))
