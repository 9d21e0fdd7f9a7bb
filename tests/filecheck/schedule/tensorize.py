# RUN: python %s | filecheck %s
"""tensorize replaces a loop nest by a call to a micro-kernel: buffers first, then the
index values (tile offsets, bounds) the nest uses; without a function of that name
in the module, the nest is outlined into one."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

MATMUL = """
func.func @matmul(%A: memref<17x13xf32>, %B: memref<13x31xf32>, %C: memref<17x31xf32>) attributes {tk.kernel = "matmul"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  %c17 = arith.constant 17 : index
  %c31 = arith.constant 31 : index
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %c17 step %c1 name("i0") {
    loop.for %j = %c0 to %c31 step %c1 name("i1") {
      %acc = loop.alloc() {scope = "local"} : memref<f32>
      loop.store %zero, %acc[] : memref<f32>
      loop.for %k = %c0 to %c13 step %c1 name("k0") {
        %a = loop.load %A[%i, %k] : memref<17x13xf32>
        %b = loop.load %B[%k, %j] : memref<13x31xf32>
        %p = arith.mulf %a, %b : f32
        %s = loop.load %acc[] : memref<f32>
        %n = arith.addf %s, %p fastmath<reassoc> : f32
        loop.store %n, %acc[] : memref<f32>
      }
      %r = loop.load %acc[] : memref<f32>
      loop.store %r, %C[%i, %j] : memref<17x31xf32>
    }
  }
  func.return
}
"""

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
