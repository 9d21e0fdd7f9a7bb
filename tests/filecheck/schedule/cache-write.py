# RUN: python %s | filecheck %s
"""cache_write: the per-element accumulator of the output loops inside a loop becomes
one local tile, initialised, accumulated over the reduction loop (now outside the
tile loops), and written back once; without an accumulator the element is stored to
a tile and copied out by a .write nest."""

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
      %relu = arith.maximumf %r, %zero : f32
      loop.store %relu, %C[%i, %j] : memref<17x31xf32>
    }
  }
  func.return
}
"""

s = Schedule(tk.parse_module(MATMUL).ops.first)
s.tile("i0", "i1", 4, 16)
s.cache_write("i1.outer")
print(s.loops())
print(s.kernel)

# CHECK:      ['i0.outer', 'i1.outer', 'i0.inner.init', 'i1.inner.init', 'k0', 'i0.inner', 'i1.inner', 'i0.inner.write', 'i1.inner.write']
# CHECK:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
# CHECK:      loop.for %[[IO:.*]] = {{.*}} name("i0.outer") {
# CHECK:        %[[TI:.*]] = arith.minsi
# CHECK-NEXT:   loop.for %[[JO:.*]] = {{.*}} name("i1.outer") {
# CHECK:          %[[TJ:.*]] = arith.minsi
# CHECK-NEXT:     %[[TILE:.*]] = loop.alloc() {scope = "local"} : memref<4x16xf32>
# CHECK-NEXT:     loop.for %[[A:.*]] = %{{.*}} to %[[TI]] step %{{.*}} name("i0.inner.init") {
# CHECK-NEXT:       loop.for %[[B:.*]] = %{{.*}} to %[[TJ]] step %{{.*}} name("i1.inner.init") {
# CHECK-NEXT:         loop.store %[[ZERO]], %[[TILE]][%[[A]], %[[B]]] : memref<4x16xf32>
# CHECK:          loop.for %[[K:.*]] = {{.*}} name("k0") {
# CHECK-NEXT:       loop.for %[[II:.*]] = %{{.*}} to %[[TI]] step %{{.*}} name("i0.inner") {
# CHECK-NEXT:         loop.for %[[JI:.*]] = %{{.*}} to %[[TJ]] step %{{.*}} name("i1.inner") {
# CHECK-NEXT:           %[[I:.*]] = arith.addi %[[IO]], %[[II]] : index
# CHECK-NEXT:           %[[J:.*]] = arith.addi %[[JO]], %[[JI]] : index
# CHECK-NEXT:           %{{.*}} = loop.load %{{.*}}[%[[I]], %[[K]]] : memref<17x13xf32>
# CHECK-NEXT:           %{{.*}} = loop.load %{{.*}}[%[[K]], %[[J]]] : memref<13x31xf32>
# CHECK-NEXT:           %[[P:.*]] = arith.mulf
# CHECK-NEXT:           %[[OLD:.*]] = loop.load %[[TILE]][%[[II]], %[[JI]]] : memref<4x16xf32>
# CHECK-NEXT:           %[[NEW:.*]] = arith.addf %[[OLD]], %[[P]] fastmath<reassoc> : f32
# CHECK-NEXT:           loop.store %[[NEW]], %[[TILE]][%[[II]], %[[JI]]] : memref<4x16xf32>
# The epilogue (here a relu) runs in the write-back nest.
# CHECK:          loop.for %[[WI:.*]] = %{{.*}} to %[[TI]] step %{{.*}} name("i0.inner.write") {
# CHECK-NEXT:       loop.for %[[WJ:.*]] = %{{.*}} to %[[TJ]] step %{{.*}} name("i1.inner.write") {
# CHECK-NEXT:         %[[R:.*]] = loop.load %[[TILE]][%[[WI]], %[[WJ]]] : memref<4x16xf32>
# CHECK-NEXT:         %[[RELU:.*]] = arith.maximumf %[[R]], %[[ZERO]] : f32
# CHECK-NEXT:         %[[I2:.*]] = arith.addi %[[IO]], %[[WI]] : index
# CHECK-NEXT:         %[[J2:.*]] = arith.addi %[[JO]], %[[WJ]] : index
# CHECK-NEXT:         loop.store %[[RELU]], %{{.*}}[%[[I2]], %[[J2]]] : memref<17x31xf32>

ELEMENTWISE = """
func.func @exp(%x: memref<5x13xf32>, %y: memref<5x13xf32>) attributes {tk.kernel = "exp"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c13 = arith.constant 13 : index
  loop.for %i = %c0 to %c5 step %c1 name("i0") {
    loop.for %j = %c0 to %c13 step %c1 name("i1") {
      %v = loop.load %x[%i, %j] : memref<5x13xf32>
      %e = math.exp %v : f32
      loop.store %e, %y[%i, %j] : memref<5x13xf32>
    }
  }
  func.return
}
"""
e = Schedule(tk.parse_module(ELEMENTWISE).ops.first)
e.cache_write("i0")
print(e.kernel)
# CHECK:      loop.for %[[I:.*]] = {{.*}} name("i0") {
# CHECK-NEXT:   %[[ROW:.*]] = loop.alloc() {scope = "local"} : memref<13xf32>
# CHECK-NEXT:   loop.for %[[J:.*]] = {{.*}} name("i1") {
# CHECK-NEXT:     %[[V:.*]] = loop.load %{{.*}}[%[[I]], %[[J]]] : memref<5x13xf32>
# CHECK-NEXT:     %[[E:.*]] = math.exp %[[V]] : f32
# CHECK-NEXT:     loop.store %[[E]], %[[ROW]][%[[J]]] : memref<13xf32>
# CHECK:        loop.for %[[W:.*]] = {{.*}} name("i1.write") {
# CHECK-NEXT:     %[[T:.*]] = loop.load %[[ROW]][%[[W]]] : memref<13xf32>
# CHECK-NEXT:     loop.store %[[T]], %{{.*}}[%[[I]], %[[W]]] : memref<5x13xf32>
