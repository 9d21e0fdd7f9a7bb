# RUN: python %s | filecheck %s
"""default-schedule on reductions and injective groups.

* softmax along the last axis: ONE kernel of row stages (row_stages): per row (rows in
  parallel) the max loop (a vector accumulator), exp(x - max) stored in the output row
  (the stash: one exp per element), the sum loop reading it back, then the row's
  elements scaled in place; every loop vectorized.
* softmax along a non-last axis keeps separate kernels: max and sum across the rows
  (reduce_columns), exp(x - max) and the normalization (injective).
* a sum over a non-contiguous axis (reduce_columns): 32 adjacent outputs accumulate in
  a local vector tile with the reduction loop outside it; 37 columns = a tile at 0 and
  one shifted back to 5.
* a tiny elementwise kernel is vectorized but stays serial; a 1-D one is split into
  blocks of 1024, the blocks in parallel."""

import tensorkiln as tk
from kernels import scheduled


b = tk.GraphBuilder()
print(scheduled(b.finish(b.softmax(b.input("x", (301, 437)), -1))))

# CHECK-LABEL: func.func @main(
# CHECK-NEXT:    func.call @softmax_0(
# CHECK-NEXT:    func.return
# CHECK-LABEL: func.func @softmax_0(
# CHECK-SAME:      tk.strategy = "row_stages"
# CHECK:         loop.for %[[I:.*]] = {{.*}} parallel name("i0") role(spatial) attributes {tk.max_threads = {{[0-9]+}} : i64} {
# CHECK-NEXT:      %[[MAX:.*]] = loop.alloc() {scope = "local"} : memref<f32>
# CHECK:           loop.for %[[K:.*]] = {{.*}} vectorized name("k0") role(reduction) {
# CHECK-NEXT:        loop.load %{{.*}}[%[[I]], %[[K]]] : memref<301x437xf32>
# CHECK:             arith.maximumf
# CHECK:           %[[M:.*]] = loop.load %[[MAX]][] : memref<f32>
# CHECK:           loop.for %[[KS:.*]] = {{.*}} vectorized name("ks1") role(init) {
# CHECK-NEXT:        %[[X:.*]] = loop.load %[[IN:.*]][%[[I]], %[[KS]]] : memref<301x437xf32>
# CHECK-NEXT:        %[[D:.*]] = arith.subf %[[X]], %[[M]]
# CHECK-NEXT:        %[[E:.*]] = math.exp %[[D]]
# CHECK-NEXT:        loop.store %[[E]], %[[OUT:.*]][%[[I]], %[[KS]]] : memref<301x437xf32>
# CHECK:           loop.for %[[K1:.*]] = {{.*}} vectorized name("k1_0") role(reduction) {
# CHECK-NEXT:        loop.load %[[OUT]][%[[I]], %[[K1]]] : memref<301x437xf32>
# CHECK-NOT:         math.exp
# CHECK:             arith.addf {{.*}} fastmath<reassoc,contract>
# CHECK:           %[[S:.*]] = loop.load %{{.*}}[] : memref<f32>
# CHECK-NEXT:      loop.for %[[J:.*]] = {{.*}} vectorized name("i1") role(spatial) {
# CHECK-NEXT:        %[[EJ:.*]] = loop.load %[[OUT]][%[[I]], %[[J]]] : memref<301x437xf32>
# CHECK-NEXT:        %[[R:.*]] = arith.divf %{{.*}}, %[[S]]
# CHECK-NEXT:        %[[Y:.*]] = arith.mulf %[[EJ]], %[[R]]
# CHECK-NEXT:        loop.store %[[Y]], %[[OUT]][%[[I]], %[[J]]] : memref<301x437xf32>

b = tk.GraphBuilder()
print(scheduled(b.finish(b.softmax(b.input("x", (301, 437)), 0))))

# CHECK-LABEL: func.func @main(
# CHECK:         func.call @softmax_max_0(
# CHECK:         func.call @softmax_exp_0(
# CHECK:         func.call @softmax_sum_0(
# CHECK:         func.call @softmax_0(
# CHECK-LABEL: func.func @softmax_max_0(
# CHECK-SAME:      tk.strategy = "reduce_columns"
# CHECK-LABEL: func.func @softmax_exp_0(
# CHECK-SAME:      tk.strategy = "injective_vectorized"
# CHECK-LABEL: func.func @softmax_sum_0(
# CHECK-SAME:      tk.strategy = "reduce_columns"
# CHECK-LABEL: func.func @softmax_0(
# CHECK-SAME:      tk.strategy = "injective_vectorized"

b = tk.GraphBuilder()
print(scheduled(b.finish(b.reduce_sum(b.input("x", (1001, 37)), [0]))))

# CHECK-LABEL: func.func @reduce_sum_0(
# CHECK-SAME:      tk.strategy = "reduce_columns"
# CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : index
# CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
# CHECK:         loop.for %[[JO:.*]] = %{{.*}} to %{{.*}} step %[[C32]] parallel name("i0.outer") role(spatial) attributes {tk.max_threads = {{[0-9]+}} : i64} {
# CHECK-NEXT:      %[[BASE:.*]] = arith.minsi %[[JO]], %[[C5]] : index
# CHECK-NEXT:      %[[TILE:.*]] = loop.alloc() {scope = "local"} : memref<32xf32>
# CHECK-NEXT:      loop.for {{.*}} vectorized name("i0.inner.init") role(spatial) {
# CHECK:           loop.for %[[K:.*]] = {{.*}} name("k0") role(reduction) {
# CHECK-NEXT:        loop.for %[[JI:.*]] = {{.*}} vectorized name("i0.inner") role(spatial) {
# CHECK-NEXT:          %[[J:.*]] = arith.addi %[[BASE]], %[[JI]] : index
# CHECK-NEXT:          loop.load %{{.*}}[%[[K]], %[[J]]] : memref<1001x37xf32>
# CHECK-NEXT:          loop.load %[[TILE]][%[[JI]]] : memref<32xf32>
# CHECK:           loop.for {{.*}} vectorized name("i0.inner.write") role(spatial) {

b = tk.GraphBuilder()
x = b.input("x", (5, 7))
print(scheduled(b.finish(b.relu(b.add(x, x)))))

# CHECK-LABEL: func.func @add_relu_0(
# CHECK-SAME:      tk.strategy = "injective_vectorized"
# CHECK-NOT:     parallel
# CHECK:         loop.for {{.*}} name("i0") role(spatial) {
# CHECK-NEXT:      loop.for {{.*}} vectorized name("i1") role(spatial) {

b = tk.GraphBuilder()
x = b.input("x", (100003,))
print(scheduled(b.finish(b.tanh(x))))

# CHECK-LABEL: func.func @tanh_0(
# CHECK-SAME:      tk.strategy = "injective_vectorized"
# CHECK:         loop.for {{.*}} parallel name("i0.outer") role(spatial) attributes {tk.max_threads = {{[0-9]+}} : i64} {
# CHECK:           loop.for {{.*}} vectorized name("i0.inner") role(spatial) {
