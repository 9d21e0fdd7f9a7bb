# RUN: python %s | filecheck %s
"""default-schedule on matrix products: gemm_register_tile. 255x257x129 (sizes the
tile does not divide): columns in tiles of 3 vectors (48: fewer wasted columns than
64), rows in tiles of 8 (24 accumulators with 32 vector registers), the last tiles
shifted back (min(outer, 247) / min(outer, 81)) so every tile is full; accumulators in
a local 8x48 tile, rows unrolled, columns vectorized, row blocks parallel. A small
product stays serial."""

import tensorkiln as tk
from kernels import scheduled


b = tk.GraphBuilder()
print(scheduled(b.finish(b.matmul(b.input("x", (255, 257)), b.input("y", (257, 129))))))

# CHECK-LABEL: func.func @matmul_0(
# CHECK-SAME:      tk.strategy = "gemm_register_tile"
# CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
# CHECK-DAG:     %[[C247:.*]] = arith.constant 247 : index
# CHECK-DAG:     %[[C48:.*]] = arith.constant 48 : index
# CHECK-DAG:     %[[C81:.*]] = arith.constant 81 : index
# CHECK:         loop.for %[[IO:.*]] = %{{.*}} to %{{.*}} step %[[C8]] parallel name("i0.outer") role(spatial) attributes {tk.max_threads = {{[0-9]+}} : i64} {
# CHECK-NEXT:      loop.for %[[JO:.*]] = %{{.*}} to %{{.*}} step %[[C48]] name("i1.outer") role(spatial) {
# CHECK-NEXT:        %[[TILE:.*]] = loop.alloc() {scope = "local"} : memref<8x48xf32>
# CHECK:             loop.for {{.*}} vectorized name("i1.inner.init") role(spatial) {
# CHECK:           loop.for %[[K:.*]] = {{.*}} name("k0") role(reduction) {
# CHECK-NEXT:        loop.for %[[II:.*]] = %{{.*}} to %[[C8]] step %{{.*}} unrolled name("i0.inner") role(spatial) {
# CHECK-NEXT:          loop.for %[[JI:.*]] = %{{.*}} to %[[C48]] step %{{.*}} vectorized name("i1.inner") role(spatial) {
# CHECK-NEXT:            %[[ROW0:.*]] = arith.minsi %[[IO]], %[[C247]] : index
# CHECK-NEXT:            %[[ROW:.*]] = arith.addi %[[ROW0]], %[[II]] : index
# CHECK-NEXT:            %[[COL0:.*]] = arith.minsi %[[JO]], %[[C81]] : index
# CHECK-NEXT:            %[[COL:.*]] = arith.addi %[[COL0]], %[[JI]] : index
# CHECK-NEXT:            loop.load %{{.*}}[%[[ROW]], %[[K]]] : memref<255x257xf32>
# CHECK-NEXT:            loop.load %{{.*}}[%[[K]], %[[COL]]] : memref<257x129xf32>
# CHECK:                 loop.store %{{.*}}, %[[TILE]][%[[II]], %[[JI]]] : memref<8x48xf32>
# CHECK:           loop.for {{.*}} name("i0.inner.write") role(spatial) {
# CHECK-NEXT:        loop.for {{.*}} vectorized name("i1.inner.write") role(spatial) {
# CHECK:               loop.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<255x129xf32>

b = tk.GraphBuilder()
print(scheduled(b.finish(b.batch_matmul(b.input("x", (6, 8, 16)), b.input("y", (6, 16, 32))))))

# A small batched product: the same tile, no parallel loop (6*8*32*16 iterations is
# below the work threshold).
# CHECK-LABEL: func.func @batch_matmul_0(
# CHECK-SAME:      tk.strategy = "gemm_register_tile"
# CHECK-NOT:     parallel
# CHECK:         name("i1.outer") role(spatial)
# CHECK:         name("i2.outer") role(spatial)
# CHECK:         vectorized name("i2.inner") role(spatial)
# CHECK:         func.return

b = tk.GraphBuilder()
print(scheduled(b.finish(b.matmul(b.input("x", (64, 1024)), b.input("y", (1024, 1024))))))

# B (1024 x 1024, 4 MiB) does not stay in L2 between row blocks: column panels outside
# row blocks, the column blocks in parallel, each panel of B (1024 x 64) packed into a
# contiguous local buffer first (its rows 4 KiB apart would alias in L1).
# CHECK-LABEL: func.func @matmul_0(
# CHECK:         loop.for {{.*}} parallel name("i1.outer") role(spatial) attributes {tk.max_threads = {{[0-9]+}} : i64} {
# CHECK:           %[[PANEL:.*]] = loop.alloc() {tk.stage = "arg1.local", scope = "local"} : memref<1024x64xf32>
# CHECK-NEXT:      loop.for {{.*}} name("arg1.local.c0") {
# CHECK-NEXT:        loop.for {{.*}} name("arg1.local.c1") {
# CHECK:           loop.for {{.*}} name("i0.outer") role(spatial) {
# CHECK-NEXT:        loop.alloc() {scope = "local"} : memref<6x64xf32>
