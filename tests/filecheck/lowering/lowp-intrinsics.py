# RUN: python %s | filecheck %s
"""The int8 / bfloat16 products' inner loops: one vpdpbusd / vdpbf16ps per vector of
accumulators on targets with AVX512_VNNI / AVX512_BF16 (the strategies' accumulate_dots
folds ``acc + dot(0, a, w)`` into ``dot(acc, a, w)``), the broadcast activation word and
a vector of packed weight words as operands; without the feature, no x86 intrinsic."""

import ml_dtypes
import numpy as np
from xdsl.backend.llvm.convert import convert_module

import tensorkiln as tk
from tensorkiln.passes.pipeline import PassContext, run_pipeline


def llvm_ir(module, features, vector_bits=512):
    ctx = PassContext(opt_level=2, dump_ir=False)
    run_pipeline(module, ["checks-to-outputs", "legalize-unsigned", "graph-to-te", "te-to-loop",
                          f'default-schedule{{vector_bits={vector_bits} features="{features}"}}',
                          "bf16-storage", "expand-math", f"loop-to-llvm{{vector_bits={vector_bits}}}"], ctx)  # fmt: skip
    return str(convert_module(module, fallback_target_triple="x86_64-unknown-linux-gnu"))


def qdense():
    b = tk.GraphBuilder()
    x = b.input("x", (12, 64), np.uint8)
    params = [b.constant(np.float32(0.1)), b.constant(np.uint8(3)), b.constant(np.full(128, 0.01, np.float32)),
              b.constant(np.zeros(128, np.int8)), b.constant(np.float32(0.2)), b.constant(np.uint8(0))]
    return b.finish(b.qdense(x, b.constant(np.ones((128, 64), np.int8)), None, params))


def bf16_dense():
    b = tk.GraphBuilder()
    x = b.input("x", (12, 64), np.dtype(ml_dtypes.bfloat16))
    return b.finish(b.bf16_dense(x, b.constant(np.ones((128, 64), np.float32))))


# CHECK-LABEL: int8 with VNNI
# the packed weight words (a vector load), the accumulator tile's vector, the activation word broadcast:
# CHECK:       %[[W:"[^"]*"]] = load <16 x i32>, ptr
# CHECK:       %[[ACC:"[^"]*"]] = load <16 x i32>, ptr
# CHECK-NEXT:  %[[ONE:"[^"]*"]] = insertelement <16 x i32> {{.*}}, i32 %{{"[^"]*"}}, i32 0
# CHECK-NEXT:  %[[A:"[^"]*"]] = shufflevector <16 x i32> %[[ONE]], <16 x i32> %[[ONE]], <16 x i32> <i32 0, {{.*}}>
# CHECK-NEXT:  call <16 x i32> @"llvm.x86.avx512.vpdpbusd.512"(<16 x i32> %[[ACC]], <16 x i32> %[[A]], <16 x i32> %[[W]])
print("int8 with VNNI")
print(llvm_ir(qdense(), "+avx512f,+avx512vnni"))

# CHECK-LABEL: int8 without VNNI
# CHECK-NOT:   vpdpbusd
# CHECK:       mul <32 x i32>
# CHECK-NOT:   vpdpbusd
print("int8 without VNNI")
print(llvm_ir(qdense(), "+avx2,+fma", vector_bits=256))

# CHECK-LABEL: bf16 with AVX512_BF16
# CHECK:       call <16 x float> @"llvm.x86.avx512bf16.dpbf16ps.512"(<16 x float> %{{.*}}, <16 x i32> %{{.*}}, <16 x i32> %{{.*}})
print("bf16 with AVX512_BF16")
print(llvm_ir(bf16_dense(), "+avx512f,+avx512bf16"))

# CHECK-LABEL: bf16 without AVX512_BF16
# CHECK-NOT:   dpbf16ps
print("bf16 without AVX512_BF16")
print(llvm_ir(bf16_dense(), "+avx512f"))
