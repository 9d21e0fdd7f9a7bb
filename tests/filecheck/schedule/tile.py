# RUN: python %s | filecheck %s
"""tile(x, y, fx, fy) = split(x, fx), split(y, fy), reorder(x.outer, y.outer, x.inner, y.inner)."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

KERNEL = """
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

s = Schedule(tk.parse_module(KERNEL).ops.first)
print(s.tile("i0", "i1", 4, 16))
print(s.to_json())
print(s.kernel)

# CHECK:      ('i0.outer', 'i1.outer', 'i0.inner', 'i1.inner')
# CHECK-NEXT: [{"args": {"x": "i0", "x_factor": 4, "y": "i1", "y_factor": 16}, "primitive": "tile"}]
# CHECK:      loop.for %[[IO:.*]] = {{.*}} name("i0.outer") {
# CHECK-NEXT:   %{{.*}} = arith.subi
# CHECK-NEXT:   %[[TI:.*]] = arith.minsi
# CHECK-NEXT:   loop.for %[[JO:.*]] = {{.*}} name("i1.outer") {
# CHECK-NEXT:     %{{.*}} = arith.subi
# CHECK-NEXT:     %[[TJ:.*]] = arith.minsi
# CHECK-NEXT:     loop.for %[[II:.*]] = %{{.*}} to %[[TI]] step %{{.*}} name("i0.inner") {
# CHECK-NEXT:       loop.for %[[JI:.*]] = %{{.*}} to %[[TJ]] step %{{.*}} name("i1.inner") {
# CHECK-NEXT:         %[[I:.*]] = arith.addi %[[IO]], %[[II]] : index
# CHECK-NEXT:         %[[J:.*]] = arith.addi %[[JO]], %[[JI]] : index
# CHECK-NEXT:         %[[ACC:.*]] = loop.alloc() {scope = "local"} : memref<f32>
# CHECK:              loop.for %{{.*}} name("k0") {
# CHECK:              loop.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]] : memref<17x31xf32>
