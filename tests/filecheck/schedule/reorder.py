# RUN: python %s | filecheck %s
"""reorder: perfectly nested loops are permuted; the index arithmetic between them
goes where its operands exist (loop bounds) or to the innermost body (the rest)."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

KERNEL = """
func.func @k(%x: memref<5x7x9xf32>, %y: memref<9x7x5xf32>) attributes {tk.kernel = "transpose"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c9 = arith.constant 9 : index
  loop.for %i = %c0 to %c9 step %c1 name("i0") {
    loop.for %j = %c0 to %c7 step %c1 name("i1") {
      loop.for %k = %c0 to %c5 step %c1 name("i2") {
        %v = loop.load %x[%k, %j, %i] : memref<5x7x9xf32>
        loop.store %v, %y[%i, %j, %k] : memref<9x7x5xf32>
      }
    }
  }
  func.return
}
"""

s = Schedule(tk.parse_module(KERNEL).ops.first)
s.reorder("i2", "i0")
print(s.loops())
# CHECK: ['i2', 'i1', 'i0']
print(s.kernel)
# CHECK:      loop.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i2") {
# CHECK-NEXT:   loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i1") {
# CHECK-NEXT:     loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i0") {
# CHECK-NEXT:       %[[V:.*]] = loop.load %{{.*}}[%[[K]], %[[J]], %[[I]]] : memref<5x7x9xf32>
# CHECK-NEXT:       loop.store %[[V]], %{{.*}}[%[[I]], %[[J]], %[[K]]] : memref<9x7x5xf32>

# After a split, the inner loop's bound (min(4, 9 - outer)) moves with the outer loop;
# the position outer + inner sinks to the innermost body.
s = Schedule(tk.parse_module(KERNEL).ops.first)
s.split("i0", 4)
s.reorder("i0.outer", "i1", "i2", "i0.inner")
print(s.kernel)
# CHECK:      loop.for %[[IO:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i0.outer") {
# CHECK-NEXT:   %[[REST:.*]] = arith.subi %{{.*}}, %[[IO]] : index
# CHECK-NEXT:   %[[TILE:.*]] = arith.minsi %{{.*}}, %[[REST]] : index
# CHECK-NEXT:   loop.for %[[J:.*]] = {{.*}} name("i1") {
# CHECK-NEXT:     loop.for %[[K:.*]] = {{.*}} name("i2") {
# CHECK-NEXT:       loop.for %[[II:.*]] = %{{.*}} to %[[TILE]] step %{{.*}} name("i0.inner") {
# CHECK-NEXT:         %[[I:.*]] = arith.addi %[[IO]], %[[II]] : index
# CHECK-NEXT:         %[[V:.*]] = loop.load %{{.*}}[%[[K]], %[[J]], %[[I]]] : memref<5x7x9xf32>
