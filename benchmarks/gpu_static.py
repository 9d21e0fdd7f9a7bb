"""What the GPU benchmark's kernels will do on the device, read off the compiler here
(no GPU needed, only nvcc): for each workload of ``gpu_bench.py``, each kernel's GPU
strategy, ptxas's registers, spills and shared memory for sm_90, and the instruction
mix of its PTX (FMAs, shared-memory loads as 16-byte vectors or scalars, global loads,
barriers, shuffles; static counts, i.e. per unrolled loop body, not per run). Writes
the BENCHMARKS.md section ``gpu-static``; the timings come from ``gpu_bench.py`` on a
machine with a GPU.

    python benchmarks/gpu_static.py [--no-write]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import table, write_section  # noqa: E402

SECTION = "gpu-static"
#: PTX instruction -> column
COUNTS = {
    "fma": r"\bfma\.rn\.f32\b",
    "mma": r"\bmma\.sync\b",
    "ld.shared.v4": r"\bld\.shared\.v4\.f32\b",
    "ld.shared (scalar)": r"\bld\.shared\.f32\b",
    "ld.global": r"\bld\.global(\.nc)?(\.v\d)?\.f32\b",
    "bar.sync": r"\bbar\.sync\b",
    "shfl": r"\bshfl\.sync\b",
}


def _per_kernel(text: str, header: str) -> dict[str, str]:
    """Split nvcc output (PTX, or ptxas -v lines) into the text of each kernel."""
    parts = re.split(header, text)
    return {parts[k]: parts[k + 1] for k in range(1, len(parts) - 1, 2)}


def kernel_facts(source: str, nvcc: str, work: Path) -> dict[str, dict[str, str]]:
    """{kernel: {column: value}} from ptxas -v and the PTX of one translation unit."""
    cu = work / "k.cu"
    cu.write_text(source)
    common = [nvcc, "-arch=sm_90", "-diag-suppress", "177"]
    subprocess.run([*common, "--ptx", "-o", work / "k.ptx", cu], check=True)
    report = subprocess.run(
        [*common, "-cubin", "-Xptxas", "-v", "-o", work / "k.cubin", cu], check=True, capture_output=True, text=True
    ).stderr
    facts: dict[str, dict[str, str]] = {}
    for name, ptx in _per_kernel((work / "k.ptx").read_text(), r"\.entry (\w+)\(").items():
        facts[name] = {column: str(len(re.findall(pattern, ptx))) for column, pattern in COUNTS.items()}
    for name, lines in _per_kernel(report, r"Compiling entry function '(\w+)'").items():
        registers = re.search(r"Used (\d+) registers", lines)
        spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", lines)
        shared = re.search(r"(\d+) bytes smem", lines)
        facts.setdefault(name, {}).update(
            registers=registers.group(1) if registers else "?",
            spills=f"{spills.group(1)}/{spills.group(2)}" if spills else "?",
            smem=shared.group(1) if shared else "0",
        )
    return facts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-write", action="store_true", help="print the table, leave BENCHMARKS.md alone")
    args = parser.parse_args()
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("gpu_static: nvcc is not installed", file=sys.stderr)
        return 1
    import numpy as np
    import torch

    import gpu_bench
    import tensorkiln as tk
    from tensorkiln.driver.cuda import lower_to_gpu
    from tensorkiln.dialects import loop
    from tensorkiln.lowering.loop_to_gpu import gpu_module_of

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workload, make in gpu_bench.workloads(tk, torch, np, device="cpu").items():
            module = make()[0]
            target = "cuda -tf32" if workload == gpu_bench.TF32_WORKLOAD else "cuda"
            gpu_level, _ = lower_to_gpu(module, target=target)
            kernels = {k.sym_name.data: k for k in gpu_module_of(gpu_level).body.block.ops}
            facts = kernel_facts(tk.emit_source(module, target=target), nvcc, Path(tmp))
            for name, kernel in kernels.items():
                block = "x".join(str(d) for d in kernel.known_block_size.get_values()) if kernel.known_block_size else "?"
                f = facts.get(name, {})
                rows.append([workload, name, loop.kernel_strategy(kernel, gpu=True), block,
                             f.get("registers", "?"), f.get("spills", "?"), f.get("smem", "?"),
                             *(f.get(column, "?") for column in COUNTS)])  # fmt: skip
                print(rows[-1], flush=True)
    markdown = "\n".join([
        "## GPU kernels as compiled (no GPU: nvcc 13 for sm_90)",
        "",
        "`benchmarks/gpu_static.py`: each kernel of the `gpu_bench.py` workloads, its strategy and block, "
        "ptxas's registers / spill bytes (stores/loads) / shared bytes, and static counts of PTX "
        "instructions (per unrolled loop body, not per run). Timings need a GPU: `gpu_bench.py`.",
        "",
        table(["workload", "kernel", "strategy", "block", "registers", "spills", "smem B", *COUNTS], rows),
    ])  # fmt: skip
    if not args.no_write:
        write_section(SECTION, markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
