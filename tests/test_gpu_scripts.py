"""The GPU check that a session with a GPU runs (benchmarks/gpu_check.sh) must work the
first time: its shell scripts parse, the benchmark script imports and shows its help
without cupy, and the device test file is collected (and skipped here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_shell_scripts_parse():
    for script in ("gpu_check.sh", "gpu_wheels.sh"):
        result = subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / script)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def test_benchmark_script_help_needs_no_gpu():
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_bench.py"), "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "--import-section" in result.stdout


def test_benchmark_workloads_lower_to_cuda():
    """Every benchmark workload compiles to CUDA C here (the GPU run only adds timing)."""
    np = __import__("numpy")
    torch = __import__("pytest").importorskip("torch")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_bench

    import tensorkiln as tk

    for name, make in gpu_bench.workloads(tk, torch, np).items():
        if "GEMM" not in name and "softmax" not in name:
            continue  # the others allocate large inputs or need CUDA tensors
        module = make()[0]
        assert 'extern "C" __global__' in tk.emit_source(module, target="cuda"), name


def test_cublas_offload_workloads_build_on_the_cupy_stand_in(monkeypatch):
    """The benchmark's cuBLAS workloads partition into one cuBLAS call each and build for
    CUDA; the small one matches its plain-cupy version (numpy-backed stand-in)."""
    np = __import__("numpy")
    from fake_cupy import fake_cupy

    fake = fake_cupy([])
    monkeypatch.setitem(sys.modules, "cupy", fake)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_bench

    import tensorkiln as tk

    for name, make in gpu_bench.cublas_workloads(tk, np).items():
        module, inputs, plain, flops = make()
        lib = tk.build(tk.byoc.partition_for(module, "cublas"), target="cuda")
        assert lib._module is None and lib.host_source.count("rt.call_external") == 1, name
        if flops < 1e8:  # the big ones would take seconds of CPU time here
            dev = [fake.asarray(x) for x in inputs]
            np.testing.assert_allclose(np.asarray(lib(*dev)), np.asarray(plain(fake, *dev)), rtol=1e-5, atol=1e-5)


def test_kernel_variants_are_written_and_compile(tmp_path):
    """benchmarks/gpu_variants: gen.py writes the generated kernels run.py times (softmax
    with and without the shared row copy), and they and the hand-written reference points
    compile with nvcc for sm_90 (run.py itself needs a GPU)."""
    import shutil

    import pytest

    pytest.importorskip("torch")
    variants = ROOT / "benchmarks" / "gpu_variants"
    result = subprocess.run([sys.executable, str(variants / "gen.py"), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    generated = {p.name: p.read_text() for p in tmp_path.glob("*.cu")}
    assert set(generated) == {"softmax_plain.cu", "softmax_cached.cu", "softmax_cached_fmaxf.cu", "layer_norm_cached.cu", "sum_abs.cu"}
    assert generated["softmax_plain.cu"].count("a0[") > 1 and generated["softmax_cached.cu"].count("a0[") == 1
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc on this machine: the sources were written, not compiled")
    for source in [*tmp_path.glob("*.cu"), variants / "hand.cu"]:
        result = subprocess.run([nvcc, "--ptx", "-arch=sm_90", "-std=c++17", "-o", str(tmp_path / "out.ptx"), str(source)],
                                capture_output=True, text=True, timeout=300)  # fmt: skip
        assert result.returncode == 0, f"{source.name}: {result.stderr}"
