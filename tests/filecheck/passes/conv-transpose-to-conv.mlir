// RUN: tensorkiln-opt %s --split-input-file -p conv-transpose-to-conv | filecheck %s

// Stride 2, 4x4 kernel, padding 1: four phases, each a conv2d of the (padded) input with
// a 2x2 sub-kernel of the swapped weight, interleaved by concat + reshape.

// CHECK-LABEL: func.func @stride2
// CHECK:         %[[SW:.*]] = graph.reshape %{{.*}} {shape = array<i64: 4, 8, 4, 4>} : tensor<1x4x8x4x4xf32> -> tensor<4x8x4x4xf32>
// CHECK-NEXT:    %[[T0:.*]] = graph.slice %[[SW]] {axes = array<i64: 2, 3>, starts = array<i64: 1, 1>, ends = array<i64: 4, 4>, steps = array<i64: 2, 2>} : tensor<4x8x4x4xf32> -> tensor<4x8x2x2xf32>
// CHECK-NEXT:    %[[K0:.*]] = graph.flip %[[T0]] {axes = array<i64: 2, 3>}
// CHECK-NEXT:    %[[P0:.*]] = graph.pad %x {low = array<i64: 0, 0, 1, 1>, high = array<i64: 0, 0, 0, 0>, {{.*}}} : tensor<1x8x5x5xf32> -> tensor<1x8x6x6xf32>
// CHECK-NEXT:    graph.conv2d %[[P0]], %[[K0]], %b : tensor<1x8x6x6xf32>, tensor<4x8x2x2xf32>, tensor<4xf32> -> tensor<1x4x5x5xf32>
// CHECK-COUNT-3: graph.conv2d %{{.*}}, %{{.*}}, %b : tensor<1x8x6x6xf32>, tensor<4x8x2x2xf32>, tensor<4xf32> -> tensor<1x4x5x5xf32>
// CHECK:         %[[I:.*]] = graph.concat %{{.*}}, %{{.*}} {axis = 3 : i64} : tensor<1x4x5x1x5x2xf32>, tensor<1x4x5x1x5x2xf32> -> tensor<1x4x5x2x5x2xf32>
// CHECK-NEXT:    graph.reshape %[[I]] {shape = array<i64: 1, 4, 10, 10>}
// CHECK-NOT:     graph.conv2d_transpose
func.func @stride2(%x: tensor<1x8x5x5xf32>, %w: tensor<8x4x4x4xf32>, %b: tensor<4xf32>) -> tensor<1x4x10x10xf32> {
  %y = graph.conv2d_transpose %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x8x5x5xf32>, tensor<8x4x4x4xf32>, tensor<4xf32> -> tensor<1x4x10x10xf32>
  func.return %y : tensor<1x4x10x10xf32>
}

// -----

// Stride 1 with groups: one plain conv2d; the weight's channels swap within each group.

// CHECK-LABEL: func.func @groups
// CHECK:         graph.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3, 4>} : tensor<2x2x3x3x3xf32> -> tensor<2x3x2x3x3xf32>
// CHECK:         graph.conv2d %{{.*}}, %{{.*}} {groups = 2 : i64} : tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x7x7xf32>
// CHECK-NOT:     graph.conv2d_transpose
func.func @groups(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x6x7x7xf32> {
  %y = graph.conv2d_transpose %x, %w {groups = 2 : i64} : tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<1x6x7x7xf32>
  func.return %y : tensor<1x6x7x7xf32>
}

// -----

// Dilation: the input is zero-stuffed (reshape, pad, reshape) and convolved with the
// whole flipped kernel, dilated.

// CHECK-LABEL: func.func @dilated
// CHECK:         graph.reshape %x {shape = array<i64: 1, 2, 4, 1, 4, 1>}
// CHECK-NEXT:    graph.pad %{{.*}} {low = array<i64: 0, 0, 0, 0, 0, 0>, high = array<i64: 0, 0, 0, 1, 0, 1>
// CHECK-NEXT:    graph.reshape %{{.*}} {shape = array<i64: 1, 2, 8, 8>}
// CHECK:         graph.conv2d %{{.*}}, %{{.*}} {dilation = array<i64: 2, 2>} : tensor<1x2x11x11xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x7x7xf32>
func.func @dilated(%x: tensor<1x2x4x4xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x3x7x7xf32> {
  %y = graph.conv2d_transpose %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 2, 2, 2, 2>, dilation = array<i64: 2, 2>} : tensor<1x2x4x4xf32>, tensor<2x3x3x3xf32> -> tensor<1x3x7x7xf32>
  func.return %y : tensor<1x3x7x7xf32>
}
