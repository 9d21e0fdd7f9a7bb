# RUN: python %s | filecheck %s
"""cache_read(pad=True) on a padded conv's input (NCHW 1x2x5x6, 3x3, pad 1) at the
output-channel loop: the window of rows 0..4 and columns 0..5 of both input channels
grows by the padding to a 2x7x8 box, the fill value (0) is
stored everywhere first, the part inside the input is copied over it (clamped: the copy
never reads out of bounds), and the taps read the box without their bounds checks.
compute_inline gives the checked reads back."""

import numpy as np
import tensorkiln as tk
from tensorkiln.build import lower_to_loops
from tensorkiln.schedule import Schedule, kernels

b = tk.GraphBuilder()
module = lower_to_loops(b.finish(b.conv2d(b.input("x", (1, 2, 5, 6)), np.ones((4, 2, 3, 3), np.float32), padding=1)))
(kernel,) = kernels(module)
s = Schedule(kernel)
print(s.cache_read(0, "i1", pad=True))
print(s.kernel)
# CHECK:      arg0.local
# CHECK:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
# CHECK:      loop.for %[[N:.*]] = {{.*}} name("i0") role(spatial) {
# CHECK-NEXT:   loop.for %{{.*}} name("i1") role(spatial) {
# CHECK:          %[[BOX:.*]] = loop.alloc() {tk.stage = "arg0.local", tk.pad_dims = [2 : i64, 3 : i64], tk.pad_fill = 0.000000e+00 : f32, scope = "local"} : memref<1x2x7x8xf32>
# CHECK-NEXT:     loop.for %[[A:.*]] = {{.*}} name("arg0.local.c0.fill") {
# CHECK-NEXT:       loop.for %[[B:.*]] = {{.*}} name("arg0.local.c1.fill") {
# CHECK-NEXT:         loop.for %[[C:.*]] = {{.*}} name("arg0.local.c2.fill") {
# CHECK-NEXT:           loop.for %[[D:.*]] = {{.*}} name("arg0.local.c3.fill") {
# CHECK-NEXT:             loop.store %[[ZERO]], %[[BOX]][%[[A]], %[[B]], %[[C]], %[[D]]] : memref<1x2x7x8xf32>
# CHECK:          loop.for {{.*}} name("arg0.local.c0") {
# CHECK:            loop.for {{.*}} name("arg0.local.c3") {
# CHECK:              %[[X:.*]] = loop.load %{{.*}} : memref<1x2x5x6xf32>
# CHECK:              loop.store %[[X]], %[[BOX]][{{.*}}] : memref<1x2x7x8xf32>
# CHECK:          name("k0") role(reduction)
# CHECK-NOT:      arith.select
# CHECK:          loop.load %[[BOX]][{{.*}}] : memref<1x2x7x8xf32>
# CHECK-NOT:      arith.select
# CHECK:        func.return

s.compute_inline("arg0.local")
print("inlined:", s.kernel)
# CHECK:      inlined: func.func
# CHECK-NOT:  tk.stage
# CHECK:      arith.minsi
# CHECK:      loop.load %{{.*}} : memref<1x2x5x6xf32>
# CHECK-NEXT: arith.select
# CHECK-NOT:  tk.stage
