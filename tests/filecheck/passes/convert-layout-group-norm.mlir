// RUN: tensorkiln-opt %s -p convert-layout,fold-constants,simplify,dce | filecheck %s

// conv -> GroupNorm(2 groups of 2 channels) -> SiLU -> conv, as the torch frontend imports
// group norm (frontends/torch/ops/normalization.py): per-channel means over the spatial
// axes (keepdims), averaged over each group by a product with a constant block-diagonal
// matrix on the small (N, C) statistics, x * scale + shift. In NHWC the reductions run over
// axes 1, 2 of the converted activation and the statistics are reshaped vectors: between
// the two convs no activation is transposed (one transpose in, one back out).

// CHECK-LABEL: func.func @main
// CHECK:         %[[IN:.*]] = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x6x6xf32> -> tensor<1x6x6x4xf32>
// CHECK:         %[[C1:.*]] = graph.conv2d %[[IN]], %{{.*}} {padding = array<i64: 1, 1, 1, 1>, layout = "NHWC"}
// CHECK-NOT:     graph.transpose
// CHECK:         %[[MEAN:.*]] = graph.reduce_mean %[[C1]] {axes = array<i64: 1, 2>, keepdims = true} : tensor<1x6x6x4xf32> -> tensor<1x1x1x4xf32>
// CHECK-NEXT:    %[[M2:.*]] = graph.reshape %[[MEAN]] {shape = array<i64: 1, 4>} : tensor<1x1x1x4xf32> -> tensor<1x4xf32>
// CHECK-NEXT:    %[[GM:.*]] = graph.dense %[[M2]], %{{.*}} : tensor<1x4xf32>, tensor<4x4xf32> -> tensor<1x4xf32>
// CHECK:         graph.sub %[[C1]], %{{.*}} : tensor<1x6x6x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x6x6x4xf32>
// CHECK:         graph.reduce_mean %{{.*}} {axes = array<i64: 1, 2>, keepdims = true} : tensor<1x6x6x4xf32> -> tensor<1x1x1x4xf32>
// CHECK:         graph.rsqrt %{{.*}} : tensor<1x4xf32>
// CHECK:         %[[Y:.*]] = graph.add %{{.*}}, %{{.*}} : tensor<1x6x6x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x6x6x4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.sigmoid %[[Y]] : tensor<1x6x6x4xf32>
// CHECK-NEXT:    %[[SILU:.*]] = graph.mul %[[Y]], %[[S]] : tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32> -> tensor<1x6x6x4xf32>
// CHECK:         %[[C2:.*]] = graph.conv2d %[[SILU]], %{{.*}} {padding = array<i64: 1, 1, 1, 1>, layout = "NHWC"}
// CHECK-NEXT:    %[[OUT:.*]] = graph.transpose %[[C2]] {perm = array<i64: 0, 3, 1, 2>} : tensor<1x6x6x4xf32> -> tensor<1x4x6x6xf32>
// CHECK-NEXT:    func.return %[[OUT]]

func.func @main(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
  %w1 = graph.constant dense<0.125> : tensor<4x4x3x3xf32>
  %gamma = graph.constant dense<1.5> : tensor<4xf32>
  %beta = graph.constant dense<0.25> : tensor<4xf32>
  %w2 = graph.constant dense<-0.125> : tensor<4x4x3x3xf32>
  %c1 = graph.conv2d %x, %w1 {padding = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  %avg = graph.constant dense<[[0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]]> : tensor<4x4xf32>
  %m = graph.reduce_mean %c1 {axes = array<i64: 2, 3>, keepdims = true} : tensor<1x4x6x6xf32> -> tensor<1x4x1x1xf32>
  %m2 = graph.reshape %m {shape = array<i64: 1, 4>} : tensor<1x4x1x1xf32> -> tensor<1x4xf32>
  %mean = graph.dense %m2, %avg : tensor<1x4xf32>, tensor<4x4xf32> -> tensor<1x4xf32>
  %mean4 = graph.reshape %mean {shape = array<i64: 1, 4, 1, 1>} : tensor<1x4xf32> -> tensor<1x4x1x1xf32>
  %d = graph.sub %c1, %mean4 : tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %d2 = graph.mul %d, %d : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf32>
  %v = graph.reduce_mean %d2 {axes = array<i64: 2, 3>, keepdims = true} : tensor<1x4x6x6xf32> -> tensor<1x4x1x1xf32>
  %v2 = graph.reshape %v {shape = array<i64: 1, 4>} : tensor<1x4x1x1xf32> -> tensor<1x4xf32>
  %var = graph.dense %v2, %avg : tensor<1x4xf32>, tensor<4x4xf32> -> tensor<1x4xf32>
  %eps = graph.constant dense<1.0e-05> : tensor<f32>
  %ve = graph.add %var, %eps : tensor<1x4xf32>, tensor<f32> -> tensor<1x4xf32>
  %rstd = graph.rsqrt %ve : tensor<1x4xf32>
  %scale = graph.mul %rstd, %gamma : tensor<1x4xf32>, tensor<4xf32> -> tensor<1x4xf32>
  %ms = graph.mul %mean, %scale : tensor<1x4xf32>, tensor<1x4xf32> -> tensor<1x4xf32>
  %nms = graph.neg %ms : tensor<1x4xf32>
  %shift = graph.add %nms, %beta : tensor<1x4xf32>, tensor<4xf32> -> tensor<1x4xf32>
  %scale4 = graph.reshape %scale {shape = array<i64: 1, 4, 1, 1>} : tensor<1x4xf32> -> tensor<1x4x1x1xf32>
  %xs = graph.mul %c1, %scale4 : tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %shift4 = graph.reshape %shift {shape = array<i64: 1, 4, 1, 1>} : tensor<1x4xf32> -> tensor<1x4x1x1xf32>
  %y = graph.add %xs, %shift4 : tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32> -> tensor<1x4x6x6xf32>
  %s = graph.sigmoid %y : tensor<1x4x6x6xf32>
  %silu = graph.mul %y, %s : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32> -> tensor<1x4x6x6xf32>
  %c2 = graph.conv2d %silu, %w2 {padding = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  func.return %c2 : tensor<1x4x6x6xf32>
}
