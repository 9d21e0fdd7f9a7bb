// RUN: tensorkiln-opt %s --split-input-file -p conv-transpose-to-conv | filecheck %s

// Stride 2: zeros stuffed between the input pixels (reshape, pad, reshape), padded to
// the output size, then a plain conv2d on a weight with swapped channels, flipped.

// CHECK-LABEL: func.func @stride2
// CHECK:         %[[S:.*]] = graph.reshape %x {shape = array<i64: 1, 8, 5, 1, 5, 1>} : tensor<1x8x5x5xf32> -> tensor<1x8x5x1x5x1xf32>
// CHECK-NEXT:    %[[Z:.*]] = graph.pad %[[S]] {low = array<i64: 0, 0, 0, 0, 0, 0>, high = array<i64: 0, 0, 0, 1, 0, 1>, value = 0.000000e+00 : f32} : tensor<1x8x5x1x5x1xf32> -> tensor<1x8x5x2x5x2xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.reshape %[[Z]] {shape = array<i64: 1, 8, 10, 10>}
// CHECK-NEXT:    %[[P:.*]] = graph.pad %[[M]] {low = array<i64: 0, 0, 2, 2>, high = array<i64: 0, 0, 1, 1>, value = 0.000000e+00 : f32} : tensor<1x8x10x10xf32> -> tensor<1x8x13x13xf32>
// CHECK:         %[[W:.*]] = graph.flip %{{.*}} {axes = array<i64: 2, 3>} : tensor<4x8x4x4xf32>
// CHECK-NEXT:    %{{.*}} = graph.conv2d %[[P]], %[[W]], %b : tensor<1x8x13x13xf32>, tensor<4x8x4x4xf32>, tensor<4xf32> -> tensor<1x4x10x10xf32>
// CHECK-NOT:     graph.conv2d_transpose
func.func @stride2(%x: tensor<1x8x5x5xf32>, %w: tensor<8x4x4x4xf32>, %b: tensor<4xf32>) -> tensor<1x4x10x10xf32> {
  %y = graph.conv2d_transpose %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x5x5xf32>, tensor<8x4x4x4xf32>, tensor<4xf32> -> tensor<1x4x10x10xf32>
  func.return %y : tensor<1x4x10x10xf32>
}

// -----

// Stride 1 with groups: no stuffing; the weight's channels swap within each group.

// CHECK-LABEL: func.func @groups
// CHECK-NOT:     graph.reshape %x
// CHECK:         graph.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3, 4>} : tensor<2x2x3x3x3xf32> -> tensor<2x3x2x3x3xf32>
// CHECK:         graph.conv2d %{{.*}}, %{{.*}} {groups = 2 : i64} : tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x7x7xf32>

func.func @groups(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x6x7x7xf32> {
  %y = graph.conv2d_transpose %x, %w {groups = 2 : i64} : tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<1x6x7x7xf32>
  func.return %y : tensor<1x6x7x7xf32>
}
