# RUN: python %s | filecheck %s
"""parallel, vectorize, unroll, bind set the kind of a loop (after legality checks)."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

KERNEL = """
func.func @k(%x: memref<9x13xf32>, %y: memref<9xf32>) attributes {tk.kernel = "reduce_sum"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %c13 = arith.constant 13 : index
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %c9 step %c1 name("i0") {
    %acc = loop.alloc() {scope = "local"} : memref<f32>
    loop.store %zero, %acc[] : memref<f32>
    loop.for %k = %c0 to %c13 step %c1 name("k0") {
      %v = loop.load %x[%i, %k] : memref<9x13xf32>
      %s = loop.load %acc[] : memref<f32>
      %n = arith.addf %s, %v fastmath<reassoc> : f32
      loop.store %n, %acc[] : memref<f32>
    }
    %r = loop.load %acc[] : memref<f32>
    loop.store %r, %y[%i] : memref<9xf32>
  }
  func.return
}
"""

s = Schedule(tk.parse_module(KERNEL).ops.first)
s.split("i0", 2)
s.parallel("i0.outer")
s.unroll("i0.inner")
s.vectorize("k0")  # a reduction with a reassociable combiner may be vectorized
print([(name, s.kind(name)) for name in s.loops()])
# CHECK: [('i0.outer', 'parallel'), ('i0.inner', 'unrolled'), ('k0', 'vectorized')]
print(s.kernel)
# CHECK: loop.for {{.*}} parallel name("i0.outer") {
# CHECK: loop.for {{.*}} unrolled name("i0.inner") {
# CHECK: loop.for {{.*}} vectorized name("k0") {

g = Schedule(tk.parse_module(KERNEL).ops.first)
g.bind("i0", "blockIdx.x")
print(g.kernel)
# CHECK: loop.for {{.*}} blockIdx.x name("i0") {
