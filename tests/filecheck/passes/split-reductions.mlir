// RUN: tensorkiln-opt %s -p split-reductions | filecheck %s

// Long reductions of few outputs (GPU builds) become two steps over a (parts, rest) view,
// parts the divisor of the element count nearest its square root; keepdims reshapes the
// result back. No divisor of at least 128 (65537 is prime), a symbolic shape, or many
// outputs: left as they are.

func.func @main(%x: tensor<300x257xf32>, %y: tensor<4x65536xf32>, %p: tensor<65537xf32>, %n: tensor<?x300x257xf32, #graph.dims<n, _, _>>, %w: tensor<300x70000xf32>) -> (tensor<f32>, tensor<4x1xf32>, tensor<f32>, tensor<?xf32, #graph.dims<n>>, tensor<300xf32>) {
  %s = graph.reduce_sum %x {axes = array<i64>} : tensor<300x257xf32> -> tensor<f32>
  %m = graph.reduce_max %y {axes = array<i64: 1>, keepdims = true} : tensor<4x65536xf32> -> tensor<4x1xf32>
  %q = graph.reduce_mean %p {axes = array<i64>} : tensor<65537xf32> -> tensor<f32>
  %r = graph.reduce_sum %n {axes = array<i64: 1, 2>} : tensor<?x300x257xf32, #graph.dims<n, _, _>> -> tensor<?xf32, #graph.dims<n>>
  %t = graph.reduce_min %w {axes = array<i64: 1>} : tensor<300x70000xf32> -> tensor<300xf32>
  func.return %s, %m, %q, %r, %t : tensor<f32>, tensor<4x1xf32>, tensor<f32>, tensor<?xf32, #graph.dims<n>>, tensor<300xf32>
}

// CHECK:      %[[S:.*]] = graph.reshape %x {shape = array<i64: 257, 300>} : tensor<300x257xf32> -> tensor<257x300xf32>
// CHECK-NEXT: %[[S1:.*]] = graph.reduce_sum %[[S]] {axes = array<i64: 1>} : tensor<257x300xf32> -> tensor<257xf32>
// CHECK-NEXT: %[[S2:.*]] = graph.reduce_sum %[[S1]] {axes = array<i64: 0>} : tensor<257xf32> -> tensor<f32>
// CHECK-NEXT: %[[M:.*]] = graph.reshape %y {shape = array<i64: 4, 256, 256>} : tensor<4x65536xf32> -> tensor<4x256x256xf32>
// CHECK-NEXT: %[[M1:.*]] = graph.reduce_max %[[M]] {axes = array<i64: 2>} : tensor<4x256x256xf32> -> tensor<4x256xf32>
// CHECK-NEXT: %[[M2:.*]] = graph.reduce_max %[[M1]] {axes = array<i64: 1>} : tensor<4x256xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[M3:.*]] = graph.reshape %[[M2]] {shape = array<i64: 4, 1>} : tensor<4xf32> -> tensor<4x1xf32>
// CHECK-NEXT: %q = graph.reduce_mean %p {axes = array<i64>} : tensor<65537xf32> -> tensor<f32>
// CHECK-NEXT: %r = graph.reduce_sum %n {axes = array<i64: 1, 2>}
// CHECK-NEXT: %t = graph.reduce_min %w {axes = array<i64: 1>} : tensor<300x70000xf32> -> tensor<300xf32>
// CHECK-NEXT: func.return %[[S2]], %[[M3]], %q, %r, %t
