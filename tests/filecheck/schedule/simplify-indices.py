# RUN: python %s | filecheck %s
"""simplify_indices: a reshape's flatten-then-cut index arithmetic, (i * 16 + j) % 16
and (i * 16 + j) / 16 with 0 <= j < 16, becomes j and i (so the load is linear in the
vectorized loop); a remainder the bounds do not make trivial (j up to 19, a negative
term) stays."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

KERNEL = """
func.func @k(%x: memref<64xf32>, %y: memref<4x16xf32>, %z: memref<4x20xf32>) attributes {tk.kernel = "reshape"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c20 = arith.constant 20 : index
  loop.for %i = %c0 to %c4 step %c1 name("i0") {
    loop.for %j = %c0 to %c16 step %c1 name("i1") {
      %a = arith.muli %i, %c16 : index
      %f = arith.addi %a, %j : index
      %r = arith.remsi %f, %c16 : index
      %q = arith.floordivsi %f, %c16 : index
      %g = arith.muli %q, %c16 : index
      %h = arith.addi %g, %r : index
      %v = loop.load %x[%h] : memref<64xf32>
      loop.store %v, %y[%i, %j] : memref<4x16xf32>
    }
    loop.for %j = %c0 to %c20 step %c1 name("i2") {
      %n = arith.subi %j, %i : index
      %r = arith.remsi %j, %c16 : index
      %s = arith.remsi %n, %c16 : index
      %t = arith.addi %r, %s : index
      %v = loop.load %x[%t] : memref<64xf32>
      loop.store %v, %z[%i, %j] : memref<4x20xf32>
    }
  }
  func.return
}
"""

s = Schedule(tk.parse_module(KERNEL).ops.first)
print(s.simplify_indices())
print(s.kernel)

# CHECK:      2
# CHECK:      loop.for %[[I:.*]] = {{.*}} name("i0") {
# CHECK-NEXT:   loop.for %[[J:.*]] = {{.*}} name("i1") {
# CHECK-NEXT:     %[[A:.*]] = arith.muli %[[I]], %{{.*}} : index
# CHECK-NEXT:     %[[H:.*]] = arith.addi %[[A]], %[[J]] : index
# CHECK-NEXT:     loop.load %{{.*}}[%[[H]]] : memref<64xf32>
# CHECK:        name("i2")
# CHECK:          arith.remsi %{{.*}}, %{{.*}} : index
# CHECK:          arith.remsi %{{.*}}, %{{.*}} : index
