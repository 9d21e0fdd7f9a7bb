# RUN: python %s | filecheck %s
"""split: a loop becomes <name>.outer (stepping by the factor) and <name>.inner (the
rest of a tile: min(factor, ub - outer), or the factor itself when it divides the trip
count), and the old induction variable becomes outer + inner."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

KERNEL = """
func.func @k(%x: memref<?x16xf32>, %y: memref<?x16xf32>) attributes {tk.kernel = "add"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %n = loop.dim %y, 0 : memref<?x16xf32>
  loop.for %i = %c0 to %n step %c1 name("i0") {
    loop.for %j = %c0 to %c16 step %c1 name("i1") {
      %v = loop.load %x[%i, %j] : memref<?x16xf32>
      loop.store %v, %y[%i, %j] : memref<?x16xf32>
    }
  }
  func.return
}
"""

s = Schedule(tk.parse_module(KERNEL).ops.first)
print(s.split("i0", 3))
print(s.split("i1", 4))
print(s.loops())
print(s.kernel)

# CHECK:      ('i0.outer', 'i0.inner')
# CHECK-NEXT: ('i1.outer', 'i1.inner')
# CHECK-NEXT: ['i0.outer', 'i0.inner', 'i1.outer', 'i1.inner']
# CHECK:      %[[C0:.*]] = arith.constant 0 : index
# CHECK-DAG:  %[[C1:.*]] = arith.constant 1 : index
# CHECK-DAG:  %[[C16:.*]] = arith.constant 16 : index
# CHECK-DAG:  %[[C3:.*]] = arith.constant 3 : index
# CHECK-DAG:  %[[C4:.*]] = arith.constant 4 : index
# CHECK:      %[[N:.*]] = loop.dim %{{.*}}, 0 : memref<?x16xf32>
# CHECK-NEXT: loop.for %[[IO:.*]] = %[[C0]] to %[[N]] step %[[C3]] name("i0.outer") {
# CHECK-NEXT:   %[[REST:.*]] = arith.subi %[[N]], %[[IO]] : index
# CHECK-NEXT:   %[[TILE:.*]] = arith.minsi %[[C3]], %[[REST]] : index
# CHECK-NEXT:   loop.for %[[II:.*]] = %[[C0]] to %[[TILE]] step %[[C1]] name("i0.inner") {
# CHECK-NEXT:     %[[I:.*]] = arith.addi %[[IO]], %[[II]] : index
# 16 = 4 x 4: every tile is full, the inner bound is the factor
# CHECK-NEXT:     loop.for %[[JO:.*]] = %[[C0]] to %[[C16]] step %[[C4]] name("i1.outer") {
# CHECK-NEXT:       loop.for %[[JI:.*]] = %[[C0]] to %[[C4]] step %[[C1]] name("i1.inner") {
# CHECK-NEXT:         %[[J:.*]] = arith.addi %[[JO]], %[[JI]] : index
# CHECK-NEXT:         %[[V:.*]] = loop.load %{{.*}}[%[[I]], %[[J]]] : memref<?x16xf32>
# CHECK-NEXT:         loop.store %[[V]], %{{.*}}[%[[I]], %[[J]]] : memref<?x16xf32>
