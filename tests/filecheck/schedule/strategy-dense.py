# RUN: python %s | filecheck %s
"""default-schedule on dense layers with a constant weight: dense_packed. The kernel
takes the weight transposed (transform_layout, recorded in tk.layouts), the host
function gets a new weight holding the transposed data (packed at compile time) in
place of the original, and the kernel is then a GEMM register tile. Batch 1 (a
matrix-vector product): dense_matvec keeps the weight as it is, and each output
feature (in parallel) is a vectorized dot product along the weight's contiguous row,
for each row of the input (unrolled). A dense followed by a transpose keeps its packed
GEMM (the transpose is its own kernel). A dense on (1, 7, 7, C) tokens tiles the 49
tokens as one fused row loop (6-row tiles), not 7 rows under a loop of 7."""

import numpy as np

import tensorkiln as tk
from kernels import scheduled


b = tk.GraphBuilder()
w = np.ones((40, 20), np.float32)
print(scheduled(b.finish(b.relu(b.dense(b.input("x", (6, 20)), w)))))

# CHECK-LABEL: func.func @main(
# CHECK-SAME:      %x: memref<6x20xf32>, %out0: memref<6x40xf32>, %[[W:[a-z0-9_]+]]: memref<20x40xf32>)
# CHECK-SAME:      tk.weights = [#graph.weight<"{{.*}}.packed">]
# CHECK-NEXT:    func.call @dense_relu_0(%x, %[[W]], %out0) : (memref<6x20xf32>, memref<20x40xf32>, memref<6x40xf32>) -> ()
# CHECK-LABEL: func.func @dense_relu_0(
# CHECK-SAME:      %[[WT:[0-9]+]]: memref<20x40xf32>
# CHECK-SAME:      tk.layouts = {"1" = [1 : i64, 0 : i64]}, tk.flush_denormals, tk.strategy = "dense_packed"
# CHECK:         loop.alloc() {scope = "local"} : memref<6x40xf32>
# CHECK:         loop.for %[[K:.*]] = {{.*}} name("k0") role(reduction) {
# CHECK-NEXT:      loop.for {{.*}} unrolled name("i0.inner") role(spatial) {
# CHECK-NEXT:        loop.for %[[J:.*]] = {{.*}} vectorized name("i1.inner") role(spatial) {
# CHECK:               %[[COL:.*]] = arith.addi %{{.*}}, %[[J]] : index
# CHECK:               loop.load %[[WT]][%[[K]], %[[COL]]] : memref<20x40xf32>
# CHECK:           arith.maximumf

b = tk.GraphBuilder()
w = np.ones((512, 784), np.float32)
print(scheduled(b.finish(b.dense(b.input("x", (1, 784)), w))))

# CHECK-LABEL: func.func @dense_0(
# CHECK-SAME:      %[[X:[0-9]+]]: memref<1x784xf32>, %[[W:[0-9]+]]: memref<512x784xf32>
# CHECK-SAME:      tk.flush_denormals, tk.strategy = "dense_matvec"
# CHECK:         loop.for %[[J:.*]] = {{.*}} parallel name("i1") role(spatial) attributes {tk.max_threads = 19 : i64} {
# CHECK-NEXT:      loop.for %[[I:.*]] = {{.*}} unrolled name("i0") role(spatial) {
# CHECK:             loop.for %[[K:.*]] = {{.*}} vectorized name("k0") role(reduction) {
# CHECK-NEXT:          loop.load %[[X]][%[[I]], %[[K]]] : memref<1x784xf32>
# CHECK-NEXT:          loop.load %[[W]][%[[J]], %[[K]]] : memref<512x784xf32>
# CHECK:               arith.addf {{.*}} fastmath<reassoc,contract> : f32

b = tk.GraphBuilder()
w = np.ones((24, 20), np.float32)
print(scheduled(b.finish(b.transpose(b.dense(b.input("x", (6, 20)), w), [1, 0]))))

# CHECK-LABEL: func.func @dense_0(
# CHECK-SAME:      memref<20x24xf32>
# CHECK-SAME:      tk.strategy = "dense_packed"
# CHECK-LABEL: func.func @transpose_0(
# CHECK-SAME:      tk.strategy = "injective_vectorized"

b = tk.GraphBuilder()
w = np.ones((64, 32), np.float32)
print(scheduled(b.finish(b.dense(b.input("x", (1, 7, 7, 32)), w))))

# CHECK-LABEL: func.func @dense_0(
# CHECK-SAME:      memref<1x7x7x32xf32>
# CHECK-SAME:      tk.strategy = "dense_packed"
# CHECK:         loop.alloc() {scope = "local"} : memref<6x64xf32>
# CHECK:         loop.for {{.*}} name("k0") role(reduction) {
# CHECK-NEXT:      loop.for {{.*}} unrolled name("i0.i1.fused.i2.fused.inner") role(spatial) {
# CHECK-NEXT:        loop.for {{.*}} vectorized name("i3.inner") role(spatial) {
