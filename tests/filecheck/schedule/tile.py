# RUN: python %s | filecheck %s
"""tile(x, y, fx, fy) = split(x, fx), split(y, fy), reorder(x.outer, y.outer, x.inner, y.inner)."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

from kernels import MATMUL


s = Schedule(tk.parse_module(MATMUL).ops.first)
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
