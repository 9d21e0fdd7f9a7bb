"""The target's ISA extensions reach the strategies (``default-schedule{features=...}``
-> ``KernelInfo.features``): what an int8/bf16 strategy checks before using
vpdpbusd/vdpbf16ps."""

from __future__ import annotations

import tensorkiln as tk
from tensorkiln.build import lower_to_loops
from tensorkiln.passes.pipeline import run_pipeline
from tensorkiln.schedule.strategies import STRATEGIES, register_strategy, target_features


def test_target_features_keeps_the_enabled_ones():
    assert target_features("+avx512f,-avx512vnni, +avx512bf16,") == {"+avx512f", "+avx512bf16"}
    assert target_features("") == frozenset()


def test_the_pass_option_reaches_kernel_info():
    seen = []

    def applies(info):
        seen.append(info.features)
        return False

    register_strategy("test_features_probe", ops=("any",), plevel=99, applies=applies)(lambda s, info: None)
    try:
        b = tk.GraphBuilder()
        loops = lower_to_loops(b.finish(b.relu(b.input("x", (4, 8)))))
        run_pipeline(loops, ['default-schedule{vector_bits=256 features="+avx2,-avx512f,+fma"}'])
    finally:
        del STRATEGIES["test_features_probe"]
    assert seen and all(f == {"+avx2", "+fma"} for f in seen)
