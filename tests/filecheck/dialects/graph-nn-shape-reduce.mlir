// RUN: %tk-roundtrip
// RUN: %tk-generic-roundtrip

// Round trip of the nn, shape and reduce op families (defaults are not printed).

func.func @nn(%x: tensor<1x8x9x7xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>, %p: tensor<2x3x9x8xf32>) -> (tensor<1x6x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x3x2xf32>) {
  %c = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : tensor<1x8x9x7xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x5x4xf32>
  %m = graph.max_pool2d %p {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<2x3x9x8xf32> -> tensor<2x3x5x4xf32>
  %a = graph.avg_pool2d %p {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false, divisor_override = 4 : i64} : tensor<2x3x9x8xf32> -> tensor<2x3x5x4xf32>
  %g = graph.adaptive_avg_pool2d %p {output_size = array<i64: 3, 2>} : tensor<2x3x9x8xf32> -> tensor<2x3x3x2xf32>
  func.return %c, %m, %a, %g : tensor<1x6x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x3x2xf32>
}
func.func @shape(%x: tensor<?x6xf32, #graph.dims<n, _>>, %y: tensor<2x3xf32>, %z: tensor<2x5xf32>) -> (tensor<?x2x3xf32, #graph.dims<n, _, _>>, tensor<3x2xf32>, tensor<4x2x3xf32>, tensor<2x8xf32>, tensor<1x2xf32>) {
  %r = graph.reshape %x {shape = array<i64: -1, 2, 3>, dims = #graph.dims<n, _, _>} : tensor<?x6xf32, #graph.dims<n, _>> -> tensor<?x2x3xf32, #graph.dims<n, _, _>>
  %t = graph.transpose %y {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %b = graph.broadcast_to %y {shape = array<i64: 4, 2, 3>} : tensor<2x3xf32> -> tensor<4x2x3xf32>
  %c = graph.concat %y, %z {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  %s = graph.slice %z {axes = array<i64: 0, 1>, starts = array<i64: 1, 0>, ends = array<i64: 2, 5>, steps = array<i64: 1, 3>} : tensor<2x5xf32> -> tensor<1x2xf32>
  func.return %r, %t, %b, %c, %s : tensor<?x2x3xf32, #graph.dims<n, _, _>>, tensor<3x2xf32>, tensor<4x2x3xf32>, tensor<2x8xf32>, tensor<1x2xf32>
}
func.func @reduce(%x: tensor<5x4x7xf32>) -> (tensor<4xf32>, tensor<5x1x7xf32>, tensor<f32>, tensor<5x4xf32>, tensor<5x4x7xf32>, tensor<5x4x7xf32>) {
  %s = graph.reduce_sum %x {axes = array<i64: 0, 2>} : tensor<5x4x7xf32> -> tensor<4xf32>
  %m = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<5x4x7xf32> -> tensor<5x1x7xf32>
  %mx = graph.reduce_max %x {axes = array<i64: 0, 1, 2>} : tensor<5x4x7xf32> -> tensor<f32>
  %mn = graph.reduce_min %x {axes = array<i64: 2>} : tensor<5x4x7xf32> -> tensor<5x4xf32>
  %sm = graph.softmax %x {axis = 2 : i64} : tensor<5x4x7xf32>
  %ls = graph.log_softmax %x {axis = 0 : i64} : tensor<5x4x7xf32>
  func.return %s, %m, %mx, %mn, %sm, %ls : tensor<4xf32>, tensor<5x1x7xf32>, tensor<f32>, tensor<5x4xf32>, tensor<5x4x7xf32>, tensor<5x4x7xf32>
}

// CHECK-LABEL: func.func @nn(%x: tensor<1x8x9x7xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>, %p: tensor<2x3x9x8xf32>) -> (tensor<1x6x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x3x2xf32>) {
// CHECK-NEXT:    %c = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : tensor<1x8x9x7xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x5x4xf32>
// CHECK-NEXT:    %m = graph.max_pool2d %p {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<2x3x9x8xf32> -> tensor<2x3x5x4xf32>
// CHECK-NEXT:    %a = graph.avg_pool2d %p {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad = false, divisor_override = 4 : i64} : tensor<2x3x9x8xf32> -> tensor<2x3x5x4xf32>
// CHECK-NEXT:    %g = graph.adaptive_avg_pool2d %p {output_size = array<i64: 3, 2>} : tensor<2x3x9x8xf32> -> tensor<2x3x3x2xf32>
// CHECK-NEXT:    func.return %c, %m, %a, %g : tensor<1x6x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x3x2xf32>
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @shape(%x: tensor<?x6xf32, #graph.dims<n, _>>, %y: tensor<2x3xf32>, %z: tensor<2x5xf32>) -> (tensor<?x2x3xf32, #graph.dims<n, _, _>>, tensor<3x2xf32>, tensor<4x2x3xf32>, tensor<2x8xf32>, tensor<1x2xf32>) {
// CHECK-NEXT:    %r = graph.reshape %x {shape = array<i64: -1, 2, 3>, dims = #graph.dims<n, _, _>} : tensor<?x6xf32, #graph.dims<n, _>> -> tensor<?x2x3xf32, #graph.dims<n, _, _>>
// CHECK-NEXT:    %t = graph.transpose %y {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    %b = graph.broadcast_to %y {shape = array<i64: 4, 2, 3>} : tensor<2x3xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    %c = graph.concat %y, %z {axis = 1 : i64} : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %s = graph.slice %z {axes = array<i64: 0, 1>, starts = array<i64: 1, 0>, ends = array<i64: 2, 5>, steps = array<i64: 1, 3>} : tensor<2x5xf32> -> tensor<1x2xf32>
// CHECK-NEXT:    func.return %r, %t, %b, %c, %s : tensor<?x2x3xf32, #graph.dims<n, _, _>>, tensor<3x2xf32>, tensor<4x2x3xf32>, tensor<2x8xf32>, tensor<1x2xf32>
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @reduce(%x: tensor<5x4x7xf32>) -> (tensor<4xf32>, tensor<5x1x7xf32>, tensor<f32>, tensor<5x4xf32>, tensor<5x4x7xf32>, tensor<5x4x7xf32>) {
// CHECK-NEXT:    %s = graph.reduce_sum %x {axes = array<i64: 0, 2>} : tensor<5x4x7xf32> -> tensor<4xf32>
// CHECK-NEXT:    %m = graph.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<5x4x7xf32> -> tensor<5x1x7xf32>
// CHECK-NEXT:    %mx = graph.reduce_max %x {axes = array<i64: 0, 1, 2>} : tensor<5x4x7xf32> -> tensor<f32>
// CHECK-NEXT:    %mn = graph.reduce_min %x {axes = array<i64: 2>} : tensor<5x4x7xf32> -> tensor<5x4xf32>
// CHECK-NEXT:    %sm = graph.softmax %x {axis = 2 : i64} : tensor<5x4x7xf32>
// CHECK-NEXT:    %ls = graph.log_softmax %x {axis = 0 : i64} : tensor<5x4x7xf32>
// CHECK-NEXT:    func.return %s, %m, %mx, %mn, %sm, %ls : tensor<4xf32>, tensor<5x1x7xf32>, tensor<f32>, tensor<5x4xf32>, tensor<5x4x7xf32>, tensor<5x4x7xf32>
// CHECK-NEXT:  }
