# RUN: python %s | filecheck %s
"""cache_read copies the box of an input that the loops inside a loop read into a local
buffer (clamped to the input: never out of bounds), and the reads read the copy;
compute_at moves that copy stage to another loop, compute_inline removes it."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

from kernels import MATMUL


s = Schedule(tk.parse_module(MATMUL).ops.first)
s.split("i1", 8)
print(s.cache_read(1, "i1.outer"))
print(s.kernel)
# Columns [j0, j0 + 7] of B, clamped to the last column (30): a 13x8 panel.
# CHECK:      arg1.local
# CHECK:      %[[C30:.*]] = arith.constant 30 : index
# CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : index
# CHECK:      loop.for %[[JO:.*]] = {{.*}} name("i1.outer") {
# CHECK-NEXT:   %[[END:.*]] = arith.addi %[[JO]], %[[C7]] : index
# CHECK-NEXT:   %[[LAST:.*]] = arith.minsi %[[END]], %[[C30]] : index
# CHECK-NEXT:   %[[SPAN:.*]] = arith.subi %[[LAST]], %[[JO]] : index
# CHECK-NEXT:   %[[COLS:.*]] = arith.addi %[[SPAN]], %{{.*}} : index
# CHECK-NEXT:   %[[PANEL:.*]] = loop.alloc() {tk.stage = "arg1.local", scope = "local"} : memref<13x8xf32>
# CHECK-NEXT:   loop.for %[[R:.*]] = {{.*}} name("arg1.local.c0") {
# CHECK-NEXT:     loop.for %[[Q:.*]] = %{{.*}} to %[[COLS]] step %{{.*}} name("arg1.local.c1") {
# CHECK-NEXT:       %[[COL:.*]] = arith.addi %[[JO]], %[[Q]] : index
# CHECK-NEXT:       %[[E:.*]] = loop.load %{{.*}}[%[[R]], %[[COL]]] : memref<13x31xf32>
# CHECK-NEXT:       loop.store %[[E]], %[[PANEL]][%[[R]], %[[Q]]] : memref<13x8xf32>
# CHECK:          loop.for %[[K:.*]] = {{.*}} name("k0") {
# CHECK:            %[[ROW:.*]] = arith.subi %[[K]], %{{.*}} : index
# CHECK-NEXT:       %[[OFF:.*]] = arith.subi %{{.*}}, %[[JO]] : index
# CHECK-NEXT:       %{{.*}} = loop.load %[[PANEL]][%[[ROW]], %[[OFF]]] : memref<13x8xf32>

s.compute_at("arg1.local", "i0")
print(s.loops())
# CHECK: ['i0', 'arg1.local.c0', 'arg1.local.c1', 'i1.outer', 'i1.inner', 'k0']
print(s.kernel)
# The box of i1.outer + i1.inner is bounded by interval arithmetic (0 + 24 + 7 = 31, one
# more than the 31 columns); the copy itself stays clamped to the buffer.
# CHECK:      loop.for %{{.*}} name("i0") {
# CHECK:        %{{.*}} = loop.alloc() {tk.stage = "arg1.local", scope = "local"} : memref<13x32xf32>
# CHECK-NEXT:   loop.for {{.*}} name("arg1.local.c0") {
s.compute_inline("arg1.local")
print("inlined:", s.kernel)
# CHECK:       inlined: func.func @matmul
# CHECK-NOT:   tk.stage
# CHECK:       loop.load %B[%{{.*}}, %{{.*}}] : memref<13x31xf32>
# CHECK-NOT:   tk.stage
