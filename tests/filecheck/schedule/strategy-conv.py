# RUN: python %s | filecheck %s
"""default-schedule on conv2d (after convert-layout: NHWC, weight HWIO): the GEMM register
tile over output pixels x output channels (conv2d_register_tile). 64 channels = 4 vectors
of 16: up to 6 pixel rows (24 zmm accumulators in a local tile), reduction over (ky, kx, c)
outside the unrolled rows and vectorized channels. A 7-wide image holds less than two
tiles: its rows and columns are fused into one pixel loop (49 pixels in tiles of 5, which
recompute fewer than 6 would, the last one shifted); the 10 tiles are the parallel loop
(4 pieces per core on 2 cores; the cost model's cap: 10 threads).
The constant weight comes in column panels of the tile's width, packed at compile time
(``tk.layout_blocks``: HWIO split on O into P[O/64, 3, 3, 32, 64]), and the input is
padded by its own kernel first (explicit-conv-padding: 9x9), so no tap is checked. The
kernel runs with denormals flushed (tk.flush_denormals)."""

import numpy as np
import tensorkiln as tk
from kernels import scheduled
from tensorkiln.schedule import kernels

b = tk.GraphBuilder()
w = np.ones((64, 32, 3, 3), np.float32)
m = scheduled(b.finish(b.conv2d(b.input("x", (1, 32, 7, 7)), w, padding=1)))
for k in kernels(m):
    if k.attributes["tk.kernel"].data.startswith("conv2d"):
        print(k)

# CHECK-LABEL: func.func @conv2d_0(%0: memref<1x9x9x32xf32>, %1: memref<1x3x3x32x64xf32>, %2: memref<1x7x7x64xf32>)
# CHECK-SAME:      tk.layout_blocks = {"1" = [3 : i64, 64 : i64]}, tk.flush_denormals, tk.strategy = "conv2d_register_tile"
# CHECK:         loop.for {{.*}} parallel name("i1.i2.fused.outer") role(spatial) attributes {tk.max_threads = 10 : i64}
# CHECK:           loop.alloc() {scope = "local"} : memref<5x64xf32>
# CHECK:           vectorized name("i3.inner.init")
# CHECK:           name("k0")
# CHECK:             name("k1")
# CHECK:               name("k2")
# CHECK:                 unrolled name("i1.i2.fused.inner")
# CHECK:                   vectorized name("i3.inner")
# CHECK-NOT:       arith.select
# CHECK:           vectorized name("i3.inner.write")

# A stem conv (3 -> 8 channels, 7x7 stride 2, pad 3): one 8-wide vector of channels
# per tap, so the bounds check of each tap is the tile's main cost. The window of
# each output row (7 input rows x 37 columns x 3 channels, padding included) is copied
# at the top of the parallel row loop, and the taps read it unchecked (pad_input).
b = tk.GraphBuilder()
w = np.ones((8, 3, 7, 7), np.float32)
m = scheduled(b.finish(b.conv2d(b.input("x", (2, 3, 32, 32)), w, strides=2, padding=3)))
for k in kernels(m):
    if k.attributes["tk.kernel"].data.startswith("conv2d"):
        print(k)

# CHECK-LABEL: func.func @conv2d_0(%0: memref<2x32x32x3xf32>, %1: memref<7x7x3x8xf32>, %2: memref<2x16x16x8xf32>)
# CHECK:         loop.for {{.*}} parallel name("i0.i1.fused")
# CHECK-NEXT:      arith.divui
# CHECK:           loop.alloc() {tk.stage = "arg0.local", tk.pad_dims = [1 : i64, 2 : i64], tk.pad_fill = 0.000000e+00 : f32, scope = "local"} : memref<1x7x37x3xf32>
# CHECK:           name("k0")
# CHECK-NOT:       arith.select
# CHECK:           vectorized name("i3.inner.write")
