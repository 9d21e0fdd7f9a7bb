# RUN: python %s | filecheck %s
"""default-schedule on transposes: injective_vectorized tiles the loop the input is
read along (its last index) and the innermost output loop into 16 x 16 blocks, the two
tile loops innermost (the inner one vectorized), shifted last tiles on sizes that 16
does not divide. An elementwise kernel without a transposed read keeps its plain nest."""

import tensorkiln as tk
from kernels import scheduled

b = tk.GraphBuilder()
print(scheduled(b.finish(b.transpose(b.input("x", (2, 40, 50)), [0, 2, 1]))))

# CHECK-LABEL: func.func @transpose_0(
# CHECK-SAME:      %[[X:[0-9]+]]: memref<2x40x50xf32>, %[[Y:[0-9]+]]: memref<2x50x40xf32>)
# CHECK:         loop.for {{.*}} name("i0") role(spatial) {
# CHECK-NEXT:      loop.for %[[AO:.*]] = {{.*}} step %[[T:[0-9]+]] name("i1.outer") role(spatial) {
# CHECK-NEXT:        loop.for %[[BO:.*]] = {{.*}} step %[[T]] name("i2.outer") role(spatial) {
# CHECK-NEXT:          loop.for %[[AI:.*]] = {{.*}} to %[[T]] step {{.*}} name("i1.inner") role(spatial) {
# CHECK-NEXT:            loop.for %[[BI:.*]] = {{.*}} to %[[T]] step {{.*}} vectorized name("i2.inner") role(spatial) {
# CHECK:                   arith.minsi %[[AO]]
# CHECK:                   arith.minsi %[[BO]]
# CHECK:                   loop.load %[[X]]
# CHECK-NEXT:              loop.store {{.*}}, %[[Y]]

b = tk.GraphBuilder()
print(scheduled(b.finish(b.relu(b.input("x", (40, 50))))))

# CHECK-LABEL: func.func @relu_0(
# CHECK:         loop.for {{.*}} name("i0") role(spatial) {
# CHECK-NEXT:      loop.for {{.*}} vectorized name("i1") role(spatial) {
