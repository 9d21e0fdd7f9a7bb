// RUN: tensorkiln-opt %s -p convert-layout,fold-constants,simplify,dce | filecheck %s

// conv -> channel shuffle (ShuffleNet: reshape (N, G, C/G, H, W), swap the two channel
// axes, reshape back) -> depthwise conv. In NHWC the shuffle splits and swaps the LAST
// axes: (1, 5, 7, 6) -> (1, 5, 7, 2, 3) -> (1, 5, 7, 3, 2) -> (1, 5, 7, 6). No activation
// goes back to NCHW between the convs: one transpose in, one out.

// CHECK-LABEL: func.func @main
// CHECK:         %[[IN:.*]] = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x5x7xf32> -> tensor<1x5x7x4xf32>
// CHECK:         %[[C1:.*]] = graph.conv2d %[[IN]], %{{.*}} {layout = "NHWC"} : tensor<1x5x7x4xf32>, tensor<1x1x4x6xf32> -> tensor<1x5x7x6xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[C1]] : tensor<1x5x7x6xf32>
// CHECK-NEXT:    %[[SPLIT:.*]] = graph.reshape %[[R]] {shape = array<i64: 1, 5, 7, 2, 3>} : tensor<1x5x7x6xf32> -> tensor<1x5x7x2x3xf32>
// CHECK-NEXT:    %[[SWAP:.*]] = graph.transpose %[[SPLIT]] {perm = array<i64: 0, 1, 2, 4, 3>} : tensor<1x5x7x2x3xf32> -> tensor<1x5x7x3x2xf32>
// CHECK-NEXT:    %[[MERGED:.*]] = graph.reshape %[[SWAP]] {shape = array<i64: 1, 5, 7, 6>} : tensor<1x5x7x3x2xf32> -> tensor<1x5x7x6xf32>
// CHECK:         %[[C2:.*]] = graph.conv2d %[[MERGED]], %{{.*}} {padding = array<i64: 1, 1, 1, 1>, groups = 6 : i64, layout = "NHWC"}
// CHECK-NEXT:    %[[OUT:.*]] = graph.transpose %[[C2]] {perm = array<i64: 0, 3, 1, 2>} : tensor<1x5x7x6xf32> -> tensor<1x6x5x7xf32>
// CHECK-NEXT:    func.return %[[OUT]]

func.func @main(%x: tensor<1x4x5x7xf32>) -> tensor<1x6x5x7xf32> {
  %w1 = graph.constant dense<0.125> : tensor<6x4x1x1xf32>
  %w2 = graph.constant dense<-0.25> : tensor<6x1x3x3xf32>
  %c1 = graph.conv2d %x, %w1 : tensor<1x4x5x7xf32>, tensor<6x4x1x1xf32> -> tensor<1x6x5x7xf32>
  %r = graph.relu %c1 : tensor<1x6x5x7xf32>
  %s = graph.reshape %r {shape = array<i64: 1, 2, 3, 5, 7>} : tensor<1x6x5x7xf32> -> tensor<1x2x3x5x7xf32>
  %t = graph.transpose %s {perm = array<i64: 0, 2, 1, 3, 4>} : tensor<1x2x3x5x7xf32> -> tensor<1x3x2x5x7xf32>
  %m = graph.reshape %t {shape = array<i64: 1, 6, 5, 7>} : tensor<1x3x2x5x7xf32> -> tensor<1x6x5x7xf32>
  %c2 = graph.conv2d %m, %w2 {padding = array<i64: 1, 1, 1, 1>, groups = 6 : i64} : tensor<1x6x5x7xf32>, tensor<6x1x3x3xf32> -> tensor<1x6x5x7xf32>
  func.return %c2 : tensor<1x6x5x7xf32>
}
