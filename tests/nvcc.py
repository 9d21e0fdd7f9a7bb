"""nvcc for the CPU-side checks of the GPU path: the emitted CUDA C compiled to PTX where
the CUDA toolkit is installed (these machines have it; elsewhere the check skips)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

NVCC = shutil.which("nvcc") or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc") else None)

#: nvcc's arguments: PTX for the H100/H200 generation; 177 is "declared but never referenced"
PTX_FLAGS = ("--ptx", "-arch=sm_90", "-diag-suppress", "177")


def compile_ptx(source: str, directory: Path, name: str) -> str:
    """The PTX of one CUDA C translation unit (fails with nvcc's errors; skips the test
    where nvcc is not installed)."""
    if NVCC is None:
        pytest.skip("nvcc is not installed (CUDA toolkit): the CUDA C was not compiled")
    cu, ptx = directory / f"{name}.cu", directory / f"{name}.ptx"
    cu.write_text(source)
    job = subprocess.run([NVCC, *PTX_FLAGS, "-o", str(ptx), str(cu)], capture_output=True, text=True, timeout=600)
    assert job.returncode == 0, job.stderr[-3000:]
    return ptx.read_text()
