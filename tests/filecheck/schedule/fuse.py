# RUN: python %s | filecheck %s
"""fuse: two directly nested loops become one over the product of their trip counts;
the old induction variables are the quotient and remainder."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

KERNEL = """
func.func @k(%x: memref<?x7xf32>, %y: memref<?x7xf32>) attributes {tk.kernel = "relu"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %zero = arith.constant 0.0 : f32
  %n = loop.dim %y, 0 : memref<?x7xf32>
  loop.for %i = %c0 to %n step %c1 name("i0") {
    loop.for %j = %c0 to %c7 step %c1 name("i1") {
      %v = loop.load %x[%i, %j] : memref<?x7xf32>
      %r = arith.maximumf %v, %zero : f32
      loop.store %r, %y[%i, %j] : memref<?x7xf32>
    }
  }
  func.return
}
"""

s = Schedule(tk.parse_module(KERNEL).ops.first)
print(s.fuse("i0", "i1"))
print(s.kernel)

# CHECK:      i0.i1.fused
# CHECK:      %[[C7:.*]] = arith.constant 7 : index
# CHECK:      %[[N:.*]] = loop.dim %{{.*}}, 0 : memref<?x7xf32>
# CHECK-NEXT: %[[TOTAL:.*]] = arith.muli %[[N]], %[[C7]] : index
# CHECK-NEXT: loop.for %[[F:.*]] = %{{.*}} to %[[TOTAL]] step %{{.*}} name("i0.i1.fused") {
# CHECK-NEXT:   %[[I:.*]] = arith.divui %[[F]], %[[C7]] : index
# CHECK-NEXT:   %[[J:.*]] = arith.remui %[[F]], %[[C7]] : index
# CHECK-NEXT:   %[[V:.*]] = loop.load %{{.*}}[%[[I]], %[[J]]] : memref<?x7xf32>
# CHECK:        loop.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]] : memref<?x7xf32>
