# RUN: python %s | filecheck %s
"""split(tail="shift"): 10 iterations by 4 -> tiles at 0, 4 and 6 (min(outer, 6)), the
inner loop a constant 4 iterations. transform_layout(1, [1, 0]): the argument's type
and every access are permuted, the permutation recorded in tk.layouts."""

import tensorkiln as tk
from tensorkiln.schedule import Schedule

KERNEL = """
func.func @k(%x: memref<10x3xf32>, %y: memref<3x10xf32>, %z: memref<10xf32>) attributes {tk.kernel = "add"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  loop.for %i = %c0 to %c10 step %c1 name("i0") {
    %a = loop.load %x[%i, %c1] : memref<10x3xf32>
    %b = loop.load %y[%c1, %i] : memref<3x10xf32>
    %s = arith.addf %a, %b : f32
    loop.store %s, %z[%i] : memref<10xf32>
  }
  func.return
}
"""

s = Schedule(tk.parse_module(KERNEL).ops.first)
s.split("i0", 4, tail="shift")
s.transform_layout(1, [1, 0])
print(s.kernel)
print(s.to_json())

# CHECK:      func.func @k(%{{.*}}: memref<10x3xf32>, %[[Y:.*]]: memref<10x3xf32>, %{{.*}}: memref<10xf32>) attributes {tk.kernel = "add", tk.layouts = {"1" = [1 : i64, 0 : i64]}} {
# CHECK-DAG:  %[[C4:.*]] = arith.constant 4 : index
# CHECK-DAG:  %[[C6:.*]] = arith.constant 6 : index
# CHECK:      loop.for %[[IO:.*]] = %{{.*}} to %{{.*}} step %[[C4]] name("i0.outer") {
# CHECK-NEXT:   %[[BASE:.*]] = arith.minsi %[[IO]], %[[C6]] : index
# CHECK-NEXT:   loop.for %[[II:.*]] = %{{.*}} to %[[C4]] step %{{.*}} name("i0.inner") {
# CHECK-NEXT:     %[[I:.*]] = arith.addi %[[BASE]], %[[II]] : index
# CHECK-NEXT:     loop.load %{{.*}}[%[[I]], %{{.*}}] : memref<10x3xf32>
# CHECK-NEXT:     loop.load %[[Y]][%[[I]], %{{.*}}] : memref<10x3xf32>
# CHECK:      [{"args": {"factor": 4, "loop": "i0", "tail": "shift"}, "primitive": "split"}, {"args": {"buffer": 1, "permutation": [1, 0]}, "primitive": "transform_layout"}]
