// RUN: tensorkiln-opt %s -p fuse-ops | filecheck %s
// RUN: tensorkiln-opt %s -p fuse-ops,graph-to-te,te-to-loop | filecheck %s --check-prefix=KERNELS

// A dense layer and its elementwise epilogue fuse; the next layer's dense does not
// fuse its (re-read) input.
func.func @mlp(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>, %w2: tensor<3x4xf32>) -> tensor<3x3xf32> {
  %d = graph.dense %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %r = graph.relu %d : tensor<2x4xf32>
  %e = graph.dense %r, %w2 : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x3xf32>
  %t = graph.tanh %e : tensor<2x3xf32>
  %c = graph.concat %t, %t, %t {axis = 0 : i64} : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<6x3xf32>
  %s = graph.slice %c {axes = array<i64: 0>, starts = array<i64: 1>, ends = array<i64: 4>, steps = array<i64: 1>} : tensor<6x3xf32> -> tensor<3x3xf32>
  func.return %s : tensor<3x3xf32>
}

// conv + residual add + relu: one group, the residual comes in as an input.
func.func @residual(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x3x3xf32>, %res: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %c = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  %a = graph.add %c, %res : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf32>
  %r = graph.relu %a : tensor<1x4x6x6xf32>
  func.return %r : tensor<1x4x6x6xf32>
}

// An intermediate used outside the group is not fused away; a reduction read at
// broadcast indices that are not its rows (x - column mean) is not inlined; softmax
// (opaque) stays alone.
func.func @negative(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = graph.exp %x : tensor<4x8xf32>
  %n = graph.neg %e : tensor<4x8xf32>
  %m = graph.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : tensor<4x8xf32> -> tensor<1x8xf32>
  %d = graph.sub %x, %m : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  %s = graph.softmax %d {axis = 1 : i64} : tensor<4x8xf32>
  func.return %e, %n, %s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Layer norm: the row mean and variance (and rsqrt(var + eps)) hold one value per row
// of the output: they join its group as row members, any number of them, and the
// kernel computes them once per row before the row's elements.
func.func @layer_norm(%x: tensor<5x9xf32>, %g: tensor<9xf32>) -> tensor<5x9xf32> {
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %m = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<5x9xf32> -> tensor<5x1xf32>
  %c = graph.sub %x, %m : tensor<5x9xf32>, tensor<5x1xf32> -> tensor<5x9xf32>
  %sq = graph.mul %c, %c : tensor<5x9xf32>, tensor<5x9xf32> -> tensor<5x9xf32>
  %v = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<5x9xf32> -> tensor<5x1xf32>
  %ve = graph.add %v, %eps : tensor<5x1xf32>, tensor<f32> -> tensor<5x1xf32>
  %r = graph.rsqrt %ve : tensor<5x1xf32>
  %y = graph.mul %c, %r : tensor<5x9xf32>, tensor<5x1xf32> -> tensor<5x9xf32>
  %o = graph.mul %y, %g : tensor<5x9xf32>, tensor<9xf32> -> tensor<5x9xf32>
  func.return %o : tensor<5x9xf32>
}

// A reduction with an elementwise epilogue on its own shape fuses (mean -> rsqrt).
func.func @reduce_epilogue(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %sq = graph.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %m = graph.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %r = graph.rsqrt %m : tensor<4x1xf32>
  func.return %r : tensor<4x1xf32>
}

// CHECK-LABEL: func.func @mlp(
// CHECK-NEXT:    %r = graph.fused "dense_relu" (%x, %w, %b)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<2x8xf32>, %[[W:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[D:.*]] = graph.dense %[[X]], %[[W]], %[[B]]
// CHECK-NEXT:      %[[R:.*]] = graph.relu %[[D]]
// CHECK-NEXT:      graph.yield %[[R]] : tensor<2x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %e = graph.dense %r, %w2
// CHECK-NEXT:    %s = graph.fused "tanh_concat_slice" (%e)

// CHECK-LABEL: func.func @residual(
// CHECK-NEXT:    %r = graph.fused "conv2d_add_relu" (%x, %w, %res)
// CHECK:           graph.conv2d
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.relu
// CHECK-NEXT:      graph.yield

// CHECK-LABEL: func.func @negative(
// CHECK-NEXT:    %e = graph.exp %x
// CHECK-NEXT:    %n = graph.neg %e
// CHECK-NEXT:    %m = graph.reduce_mean %x
// CHECK-NEXT:    %d = graph.sub %x, %m
// CHECK-NEXT:    %s = graph.softmax %d
// CHECK-NEXT:    func.return

// CHECK-LABEL: func.func @layer_norm(
// CHECK:         %o = graph.fused "reduce_mean_sub_mul_reduce_mean_add_rsqrt_mul_mul" (%x, %g)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<5x9xf32>, %{{.*}}: tensor<9xf32>):
// CHECK:           graph.reduce_mean %[[X]]
// CHECK-NOT:     graph.fused
// CHECK:           graph.yield

// CHECK-LABEL: func.func @reduce_epilogue(
// CHECK-NEXT:    %r = graph.fused "mul_reduce_mean_rsqrt" (%x)

// One kernel per group: the producers are computed inside the output's loop nest.
// KERNELS-LABEL: func.func @mlp(
// KERNELS:         func.call @dense_relu_0(
// KERNELS:         func.call @dense_0(
// KERNELS-NEXT:    func.call @tanh_concat_slice_0(
// KERNELS-LABEL: func.func @dense_relu_0(
// KERNELS:         loop.for {{.*}} name("i0") role(spatial)
// KERNELS:           loop.for {{.*}} name("i1") role(spatial)
// KERNELS:             loop.for {{.*}} name("k0") role(reduction)
// KERNELS:               arith.mulf
// KERNELS:             arith.maximumf
// KERNELS-NEXT:        loop.store
// KERNELS-LABEL: func.func @conv2d_add_relu_0(
// KERNELS-NOT:     loop.alloc() {scope = "global"}
// KERNELS:         arith.addf
// KERNELS:         arith.maximumf

// The row statistics once per row: the mean's and the variance's reduction loops, then
// the row's elements reading them (no reduction inside the element loop).
// KERNELS-LABEL: func.func @reduce_mean_sub_mul_reduce_mean_add_rsqrt_mul_mul_0(
// KERNELS:         loop.for %[[ROW:.*]] = {{.*}} name("i0") role(spatial) {
// KERNELS:           loop.for %[[K:.*]] = {{.*}} name("k0") role(reduction) {
// KERNELS-NEXT:        loop.load %{{.*}}[%[[ROW]], %[[K]]] : memref<5x9xf32>
// KERNELS:           %[[MEAN:.*]] = arith.divf
// KERNELS:           loop.for %[[K1:.*]] = {{.*}} name("k1_0") role(reduction) {
// KERNELS-NEXT:        %[[XK:.*]] = loop.load %{{.*}}[%[[ROW]], %[[K1]]] : memref<5x9xf32>
// KERNELS:             arith.subf %[[XK]], %[[MEAN]]
// KERNELS:           math.sqrt
// KERNELS:           loop.for %[[J:.*]] = {{.*}} name("i1") role(spatial) {
// KERNELS-NOT:         loop.for
// KERNELS:             %[[XJ:.*]] = loop.load %{{.*}}[%[[ROW]], %[[J]]] : memref<5x9xf32>
// KERNELS:             arith.subf %[[XJ]], %[[MEAN]]
// KERNELS-NOT:         loop.for
// KERNELS:             loop.store
// KERNELS-LABEL: func.func @mul_reduce_mean_rsqrt_0(

// A view read by two groups (the halves of a complex value, each read by two products):
// each group takes its own copy of the slices and reads %x directly; no kernel
// materializes a half.
func.func @view_copies(%x: tensor<2x6xf32>, %y: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %s = graph.slice %x {axes = array<i64: 0>, starts = array<i64: 0>, ends = array<i64: 1>, steps = array<i64: 1>} : tensor<2x6xf32> -> tensor<1x6xf32>
  %re = graph.reshape %s {shape = array<i64: 6>} : tensor<1x6xf32> -> tensor<6xf32>
  %t = graph.slice %x {axes = array<i64: 0>, starts = array<i64: 1>, ends = array<i64: 2>, steps = array<i64: 1>} : tensor<2x6xf32> -> tensor<1x6xf32>
  %im = graph.reshape %t {shape = array<i64: 6>} : tensor<1x6xf32> -> tensor<6xf32>
  %a = graph.mul %re, %y : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  %b = graph.mul %im, %y : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  %real = graph.sub %a, %b : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  %c = graph.mul %re, %y : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  %d = graph.mul %im, %y : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  %imaginary = graph.add %c, %d : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  func.return %real, %imaginary : tensor<6xf32>, tensor<6xf32>
}
// CHECK-LABEL: func.func @view_copies(
// CHECK-NEXT:    %real = graph.fused "slice_reshape_slice_reshape_mul_mul_sub" (%x, %y)
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<2x6xf32>, %{{.*}}: tensor<6xf32>):
// CHECK-NEXT:      graph.slice %[[X]]
// CHECK:           graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %imaginary = graph.fused "slice_reshape_slice_reshape_mul_mul_add" (%x, %y)
// CHECK-NEXT:    ^bb0(%[[X2:.*]]: tensor<2x6xf32>, %{{.*}}: tensor<6xf32>):
// CHECK-NEXT:      graph.slice %[[X2]]
// CHECK:           graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %real, %imaginary
