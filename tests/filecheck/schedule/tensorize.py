# RUN: python %s | filecheck %s
"""tensorize replaces a loop nest by a call to a micro-kernel: buffers first, then the
index values (tile offsets, bounds) the nest uses; without a function of that name
in the module, the nest is outlined into one."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

from kernels import MATMUL


module = tk.parse_module(MATMUL)
s = Schedule(module.ops.first)
s.tile("i0", "i1", 4, 16)
s.cache_write("i1.outer")
print(s.tensorize("k0", "gemm_4x16"))
print(module)
# CHECK: ['memref<17x13xf32>', 'memref<13x31xf32>', 'memref<4x16xf32>', 'index', 'index', 'index', 'index']
# CHECK-LABEL: func.func @matmul(
# CHECK:         loop.for %[[IO:.*]] = {{.*}} name("i0.outer") {
# CHECK:           %[[TI:.*]] = arith.minsi
# CHECK:           loop.for %[[JO:.*]] = {{.*}} name("i1.outer") {
# CHECK:             %[[TJ:.*]] = arith.minsi
# CHECK-NEXT:        %[[TILE:.*]] = loop.alloc() {scope = "local"} : memref<4x16xf32>
# CHECK:             name("i1.inner.init")
# CHECK:             func.call @gemm_4x16(%A, %B, %[[TILE]], %[[TI]], %[[TJ]], %[[IO]], %[[JO]]) : (memref<17x13xf32>, memref<13x31xf32>, memref<4x16xf32>, index, index, index, index) -> ()
# CHECK-NEXT:        loop.for {{.*}} name("i0.inner.write") {
# CHECK-LABEL: func.func @gemm_4x16(
# CHECK-SAME:      %[[A:.*]]: memref<17x13xf32>, %[[B:.*]]: memref<13x31xf32>, %[[T:.*]]: memref<4x16xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
# CHECK-SAME:      attributes {tk.microkernel = "outlined"}
# CHECK:         loop.for {{.*}} name("k0") {
# CHECK-NEXT:      loop.for {{.*}} name("i0.inner") {
# CHECK-NEXT:        loop.for {{.*}} name("i1.inner") {
# CHECK:               loop.store %{{.*}}, %[[T]][%{{.*}}, %{{.*}}] : memref<4x16xf32>
# CHECK:         func.return
