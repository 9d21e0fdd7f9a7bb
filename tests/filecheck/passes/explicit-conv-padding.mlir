// RUN: tensorkiln-opt %s -p explicit-conv-padding | filecheck %s

// A padded channels-last conv of 16+ input channels reads a padded copy (its own pad
// op) and has no padding left; depthwise/grouped, few-channel (stem) and NCHW convs keep theirs.

// CHECK-LABEL: func.func @f
// CHECK-NEXT:    %[[P:.*]] = graph.pad %x {low = array<i64: 0, 1, 2, 0>, high = array<i64: 0, 3, 1, 0>, value = 0.000000e+00 : f32} : tensor<2x5x7x16xf32> -> tensor<2x9x10x16xf32>
// CHECK-NEXT:    %{{.*}} = graph.conv2d %[[P]], %w, %b {strides = array<i64: 2, 2>, layout = "NHWC"} : tensor<2x9x10x16xf32>, tensor<3x3x16x8xf32>, tensor<8xf32> -> tensor<2x4x4x8xf32>
// CHECK-NEXT:    %{{.*}} = graph.conv2d %x, %d {padding = array<i64: 1, 1, 1, 1>, groups = 16 : i64, layout = "NHWC"}
// CHECK-NEXT:    %{{.*}} = graph.conv2d %s, %k {padding = array<i64: 3, 3, 3, 3>, layout = "NHWC"}
// CHECK-NEXT:    %{{.*}} = graph.conv2d %n, %m {padding = array<i64: 1, 1, 1, 1>}
func.func @f(%x: tensor<2x5x7x16xf32>, %w: tensor<3x3x16x8xf32>, %b: tensor<8xf32>, %d: tensor<3x3x1x16xf32>, %s: tensor<1x9x9x3xf32>, %k: tensor<7x7x3x8xf32>, %n: tensor<1x16x5x5xf32>, %m: tensor<8x16x3x3xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x5x7x16xf32>, tensor<1x9x9x8xf32>, tensor<1x8x5x5xf32>) {
  %y = graph.conv2d %x, %w, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 2, 3, 1>, layout = "NHWC"} : tensor<2x5x7x16xf32>, tensor<3x3x16x8xf32>, tensor<8xf32> -> tensor<2x4x4x8xf32>
  %z = graph.conv2d %x, %d {padding = array<i64: 1, 1, 1, 1>, groups = 16 : i64, layout = "NHWC"} : tensor<2x5x7x16xf32>, tensor<3x3x1x16xf32> -> tensor<2x5x7x16xf32>
  %t = graph.conv2d %s, %k {padding = array<i64: 3, 3, 3, 3>, layout = "NHWC"} : tensor<1x9x9x3xf32>, tensor<7x7x3x8xf32> -> tensor<1x9x9x8xf32>
  %u = graph.conv2d %n, %m {padding = array<i64: 1, 1, 1, 1>} : tensor<1x16x5x5xf32>, tensor<8x16x3x3xf32> -> tensor<1x8x5x5xf32>
  func.return %y, %z, %t, %u : tensor<2x4x4x8xf32>, tensor<2x5x7x16xf32>, tensor<1x9x9x8xf32>, tensor<1x8x5x5xf32>
}
