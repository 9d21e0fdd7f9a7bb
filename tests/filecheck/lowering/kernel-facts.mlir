// RUN: tensorkiln-opt %s -p 'fuse-ops,graph-to-te,te-to-loop{stash_rows=true}' | filecheck %s
// RUN: tensorkiln-opt %s -p 'fuse-ops,graph-to-te,te-to-loop{stash_rows=true}' | tensorkiln-opt | filecheck %s

// What te-to-loop records for the schedules (lowering/kernel_anchor.py, dialects/loop.py):
// each kernel's ops, its anchor op and its elementwise epilogue, and each loop's role.
// The schedules read these, never a kernel's or a loop's name.

// A dense layer and its epilogue: the anchor's loops are the kernel's (output loops
// spatial, the product's loop a reduction).
func.func @dense_epilogue(%x: tensor<3x8xf32>, %w: tensor<5x8xf32>, %b: tensor<5xf32>) -> tensor<3x5xf32> {
  %d = graph.dense %x, %w, %b : tensor<3x8xf32>, tensor<5x8xf32>, tensor<5xf32> -> tensor<3x5xf32>
  %r = graph.relu %d : tensor<3x5xf32>
  func.return %r : tensor<3x5xf32>
}

// CHECK-LABEL: func.func @dense_relu_0(
// CHECK-SAME:      attributes {tk.kernel = "dense_relu", tk.ops = ["dense", "relu"], tk.anchor = "dense", tk.epilogue = ["relu"]}
// CHECK:         loop.for {{.*}} name("i0") role(spatial) {
// CHECK-NEXT:      loop.for {{.*}} name("i1") role(spatial) {
// CHECK:             loop.for {{.*}} name("k0") role(reduction) {

// A reduction whose result is transposed: the anchor is the reduction, but the kernel's
// loops are the transpose's, so there is no epilogue.
func.func @reduce_transpose(%x: tensor<4x6x8xf32>) -> tensor<6x4xf32> {
  %s = graph.reduce_sum %x {axes = array<i64: 2>, keepdims = false} : tensor<4x6x8xf32> -> tensor<4x6xf32>
  %t = graph.transpose %s {perm = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
  func.return %t : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @reduce_sum_transpose_0(
// CHECK-SAME:      attributes {tk.kernel = "reduce_sum_transpose", tk.ops = ["reduce_sum", "transpose"], tk.anchor = "reduce_sum"}

// softmax, a kernel of row stages: the row loop, the max's reduction, the exp stored
// in the output row once (init), the sum's reduction over it, then the row's elements.
func.func @softmax(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %y = graph.softmax %x {axis = 1 : i64} : tensor<2x16xf32>
  func.return %y : tensor<2x16xf32>
}

// CHECK-LABEL: func.func @softmax_0(
// CHECK-SAME:      attributes {tk.kernel = "softmax", tk.anchor = "softmax"}
// CHECK:         loop.for {{.*}} name("i0") role(spatial) {
// CHECK:           loop.for {{.*}} name("k0") role(reduction) {
// CHECK:           loop.for {{.*}} name("ks1") role(init) {
// CHECK:           loop.for {{.*}} name("k1_0") role(reduction) {
// CHECK:           loop.for {{.*}} name("i1") role(spatial) {
