// RUN: tensorkiln-opt %s --split-input-file -p legalize-16bit-floats | filecheck %s

// An op computing on bfloat16 runs in float32 and rounds once; data movement
// (transpose) stays in bfloat16; a float16 matmul accumulates in float32.

// CHECK-LABEL: func.func @compute
// CHECK-NEXT:    %[[X:.*]] = graph.cast %x : tensor<3x5xbf16> -> tensor<3x5xf32>
// CHECK-NEXT:    %[[E:.*]] = graph.exp %[[X]] : tensor<3x5xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.cast %[[E]] : tensor<3x5xf32> -> tensor<3x5xbf16>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[R]] {perm = array<i64: 1, 0>} : tensor<3x5xbf16> -> tensor<5x3xbf16>
// CHECK-NEXT:    %[[A:.*]] = graph.cast %a : tensor<5x4xf16> -> tensor<5x4xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.cast %b : tensor<4x2xf16> -> tensor<4x2xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %[[A]], %[[B]] : tensor<5x4xf32>, tensor<4x2xf32> -> tensor<5x2xf32>
// CHECK-NEXT:    %[[H:.*]] = graph.cast %[[M]] : tensor<5x2xf32> -> tensor<5x2xf16>
// CHECK-NEXT:    func.return %[[T]], %[[H]]
func.func @compute(%x: tensor<3x5xbf16>, %a: tensor<5x4xf16>, %b: tensor<4x2xf16>) -> (tensor<5x3xbf16>, tensor<5x2xf16>) {
  %e = graph.exp %x : tensor<3x5xbf16>
  %t = graph.transpose %e {perm = array<i64: 1, 0>} : tensor<3x5xbf16> -> tensor<5x3xbf16>
  %m = graph.matmul %a, %b : tensor<5x4xf16>, tensor<4x2xf16> -> tensor<5x2xf16>
  func.return %t, %m : tensor<5x3xbf16>, tensor<5x2xf16>
}

// -----

// Comparisons and reductions read float32 and keep their own result type; casts between
// bfloat16 and types other than float32 go through float32 (float16's stay direct).

// CHECK-LABEL: func.func @results
// CHECK-NEXT:    %[[X:.*]] = graph.cast %x : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.cast %y : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NEXT:    %{{.*}} = graph.compare %[[X]], %[[Y]] {predicate = "lt"} : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
// CHECK-NEXT:    %[[X2:.*]] = graph.cast %x : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NEXT:    %{{.*}} = graph.cast %[[X2]] : tensor<4xf32> -> tensor<4xi32>
// CHECK-NEXT:    %[[D:.*]] = graph.cast %d : tensor<4xf64> -> tensor<4xf32>
// CHECK-NEXT:    %{{.*}} = graph.cast %[[D]] : tensor<4xf32> -> tensor<4xbf16>
// CHECK-NEXT:    %{{.*}} = graph.cast %d : tensor<4xf64> -> tensor<4xf16>
func.func @results(%x: tensor<4xbf16>, %y: tensor<4xbf16>, %d: tensor<4xf64>) -> (tensor<4xi1>, tensor<4xi32>, tensor<4xbf16>, tensor<4xf16>) {
  %c = graph.compare %x, %y {predicate = "lt"} : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xi1>
  %i = graph.cast %x : tensor<4xbf16> -> tensor<4xi32>
  %b = graph.cast %d : tensor<4xf64> -> tensor<4xbf16>
  %h = graph.cast %d : tensor<4xf64> -> tensor<4xf16>
  func.return %c, %i, %b, %h : tensor<4xi1>, tensor<4xi32>, tensor<4xbf16>, tensor<4xf16>
}

// -----

// float32 models are left alone.

// CHECK-LABEL: func.func @f32
// CHECK-NEXT:    graph.exp %x : tensor<3xf32>
// CHECK-NOT:     graph.cast
func.func @f32(%x: tensor<3xf32>) -> tensor<3xf32> {
  %e = graph.exp %x : tensor<3xf32>
  func.return %e : tensor<3xf32>
}
