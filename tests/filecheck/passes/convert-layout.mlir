// RUN: tensorkiln-opt %s --split-input-file -p convert-layout,fold-constants,simplify,dce | filecheck %s
// RUN: tensorkiln-opt %s --split-input-file -p 'convert-layout{layout=NCHW}' | filecheck %s --check-prefix=KEEP

// A conv -> bias -> relu -> pool chain runs in NHWC: one transpose in, one back out
// before the reshape that needs NCHW; the weight and the bias are transposed at compile time.

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[IN:.*]] = graph.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x8x8xf32> -> tensor<1x8x8x3xf32>
// CHECK-DAG:     %[[B:.*]] = graph.constant #graph.weight<"{{.*}}"> : tensor<1x1x1x4xf32>
// CHECK-DAG:     %[[W:.*]] = graph.constant #graph.weight<"{{.*}}"> : tensor<3x3x3x4xf32>
// CHECK:         %c = graph.conv2d %[[IN]], %[[W]] {padding = array<i64: 1, 1, 1, 1>, layout = "NHWC"} : tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32> -> tensor<1x8x8x4xf32>
// CHECK-NEXT:    %a = graph.add %c, %[[B]] : tensor<1x8x8x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x8x8x4xf32>
// CHECK-NEXT:    %r = graph.relu %a : tensor<1x8x8x4xf32>
// CHECK-NEXT:    %p = graph.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, layout = "NHWC"} : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %[[OUT:.*]] = graph.transpose %p {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x4x4xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %f = graph.reshape %[[OUT]] {shape = array<i64: 1, 64>}
// CHECK-NEXT:    func.return %f
// KEEP-LABEL: func.func @chain
// KEEP-NOT:     graph.transpose
// KEEP-NOT:     "NHWC"
// KEEP:       func.func @residual
func.func @chain(%x: tensor<1x3x8x8xf32>) -> tensor<1x64xf32> {
  %w = graph.constant dense<0.5> : tensor<4x3x3x3xf32>
  %b = graph.constant dense<0.25> : tensor<4x1x1xf32>
  %c = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
  %a = graph.add %c, %b : tensor<1x4x8x8xf32>, tensor<4x1x1xf32> -> tensor<1x4x8x8xf32>
  %r = graph.relu %a : tensor<1x4x8x8xf32>
  %p = graph.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %f = graph.reshape %p {shape = array<i64: 1, 64>} : tensor<1x4x4x4xf32> -> tensor<1x64xf32>
  func.return %f : tensor<1x64xf32>
}

// -----

// A residual block: the skip connection reuses the input's transpose; two convs, one
// transpose each way.

// CHECK-LABEL: func.func @residual
// CHECK-COUNT-1: graph.transpose %x
// CHECK:         %c1 = graph.conv2d {{.*}} layout = "NHWC"
// CHECK:         %r1 = graph.relu %c1
// CHECK:         %c2 = graph.conv2d %r1, {{.*}} layout = "NHWC"
// CHECK-NEXT:    %s = graph.add %c2, %{{.*}} : tensor<2x7x5x8xf32>, tensor<2x7x5x8xf32> -> tensor<2x7x5x8xf32>
// CHECK-NEXT:    %[[OUT:.*]] = graph.transpose %s {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    func.return %[[OUT]]
// CHECK-NOT:     graph.transpose
func.func @residual(%x: tensor<2x8x7x5xf32>) -> tensor<2x8x7x5xf32> {
  %w = graph.constant dense<0.5> : tensor<8x8x3x3xf32>
  %c1 = graph.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<2x8x7x5xf32>, tensor<8x8x3x3xf32> -> tensor<2x8x7x5xf32>
  %r1 = graph.relu %c1 : tensor<2x8x7x5xf32>
  %c2 = graph.conv2d %r1, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<2x8x7x5xf32>, tensor<8x8x3x3xf32> -> tensor<2x8x7x5xf32>
  %s = graph.add %c2, %x : tensor<2x8x7x5xf32>, tensor<2x8x7x5xf32> -> tensor<2x8x7x5xf32>
  func.return %s : tensor<2x8x7x5xf32>
}

// -----

// Global average pooling without keepdims gives (N, C) in either layout: no transpose
// back. A channel concat concatenates along NHWC's last axis.

// CHECK-LABEL: func.func @concat_and_global_pool
// CHECK:         %k = graph.concat %{{.*}}, %{{.*}} {axis = 3 : i64} : tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32> -> tensor<1x6x6x8xf32>
// CHECK-NEXT:    %m = graph.reduce_mean %k {axes = array<i64: 1, 2>} : tensor<1x6x6x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT:    func.return %m
func.func @concat_and_global_pool(%x: tensor<1x3x6x6xf32>) -> tensor<1x8xf32> {
  %w = graph.constant dense<0.5> : tensor<4x3x1x1xf32>
  %c = graph.conv2d %x, %w : tensor<1x3x6x6xf32>, tensor<4x3x1x1xf32> -> tensor<1x4x6x6xf32>
  %e = graph.exp %c : tensor<1x4x6x6xf32>
  %k = graph.concat %c, %e {axis = 1 : i64} : tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32> -> tensor<1x8x6x6xf32>
  %m = graph.reduce_mean %k {axes = array<i64: 2, 3>} : tensor<1x8x6x6xf32> -> tensor<1x8xf32>
  func.return %m : tensor<1x8xf32>
}

// -----

// Adaptive pooling to 1x1 then flatten (ResNet's head): the transpose back only moves
// 1-sized axes, so it becomes a reshape and merges with the flatten.

// CHECK-LABEL: func.func @head
// CHECK:         %p = graph.adaptive_avg_pool2d %{{.*}} {output_size = array<i64: 1, 1>, layout = "NHWC"} : tensor<1x5x5x4xf32> -> tensor<1x1x1x4xf32>
// CHECK-NEXT:    %f = graph.reshape %p {shape = array<i64: 1, 4>} : tensor<1x1x1x4xf32> -> tensor<1x4xf32>
// CHECK-NEXT:    func.return %f
func.func @head(%x: tensor<1x3x5x5xf32>) -> tensor<1x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x3x1x1xf32>
  %c = graph.conv2d %x, %w : tensor<1x3x5x5xf32>, tensor<4x3x1x1xf32> -> tensor<1x4x5x5xf32>
  %p = graph.adaptive_avg_pool2d %c {output_size = array<i64: 1, 1>} : tensor<1x4x5x5xf32> -> tensor<1x4x1x1xf32>
  %f = graph.reshape %p {shape = array<i64: 1, 4>} : tensor<1x4x1x1xf32> -> tensor<1x4xf32>
  func.return %f : tensor<1x4xf32>
}

// -----

// Negative: without a convolution or pooling nothing changes (elementwise ops alone
// never start a conversion), and an NHWC conv is left as it is.

// CHECK-LABEL: func.func @no_conv
// CHECK-NOT:     graph.transpose
// CHECK:         graph.relu %x
// CHECK:         graph.conv2d %y, %w {layout = "NHWC"}
// CHECK-NOT:     graph.transpose
func.func @no_conv(%x: tensor<1x3x4x4xf32>, %y: tensor<1x4x4x3xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x4x4x2xf32>) {
  %r = graph.relu %x : tensor<1x3x4x4xf32>
  %w = graph.constant dense<0.5> : tensor<1x1x3x2xf32>
  %c = graph.conv2d %y, %w {layout = "NHWC"} : tensor<1x4x4x3xf32>, tensor<1x1x3x2xf32> -> tensor<1x4x4x2xf32>
  func.return %r, %c : tensor<1x3x4x4xf32>, tensor<1x4x4x2xf32>
}

// -----

// pad and slice stay in NHWC: their per-axis properties follow the axes.

// CHECK-LABEL: func.func @pad_slice
// CHECK:         %p = graph.pad %c {low = array<i64: 0, 1, 2, 0>, high = array<i64: 0, 3, 4, 0>, value = 0.000000e+00 : f32} : tensor<1x6x6x4xf32> -> tensor<1x10x12x4xf32>
// CHECK-NEXT:    %s = graph.slice %p {axes = array<i64: 1, 3>, starts = array<i64: 0, 1>, ends = array<i64: 5, 3>, steps = array<i64: 1, 1>} : tensor<1x10x12x4xf32> -> tensor<1x5x12x2xf32>
// CHECK-NEXT:    %{{.*}} = graph.transpose %s {perm = array<i64: 0, 3, 1, 2>}
func.func @pad_slice(%x: tensor<1x3x6x6xf32>) -> tensor<1x2x5x12xf32> {
  %w = graph.constant dense<0.5> : tensor<4x3x1x1xf32>
  %c = graph.conv2d %x, %w : tensor<1x3x6x6xf32>, tensor<4x3x1x1xf32> -> tensor<1x4x6x6xf32>
  %p = graph.pad %c {low = array<i64: 0, 0, 1, 2>, high = array<i64: 0, 0, 3, 4>, value = 0.000000e+00 : f32} : tensor<1x4x6x6xf32> -> tensor<1x4x10x12xf32>
  %s = graph.slice %p {axes = array<i64: 1, 2>, starts = array<i64: 1, 0>, ends = array<i64: 3, 5>, steps = array<i64: 1, 1>} : tensor<1x4x10x12xf32> -> tensor<1x2x5x12xf32>
  func.return %s : tensor<1x2x5x12xf32>
}

// -----

// A resize between convolutions (a UNet's upsampling) runs in NHWC; one of the model's
// input (not converted yet) stays NCHW.

// CHECK-LABEL: func.func @resize
// CHECK:         %u = graph.resize2d %x {size = array<i64: 8, 8>, mode = "nearest"} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
// CHECK:         %c = graph.conv2d
// CHECK-NEXT:    %r = graph.resize2d %c {size = array<i64: 16, 16>, mode = "bilinear", layout = "NHWC"} : tensor<1x8x8x4xf32> -> tensor<1x16x16x4xf32>
// CHECK:         %d = graph.conv2d %r, %{{.*}} {layout = "NHWC"}
// CHECK-NEXT:    graph.transpose %d {perm = array<i64: 0, 3, 1, 2>}
func.func @resize(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x16x16xf32> {
  %u = graph.resize2d %x {size = array<i64: 8, 8>, mode = "nearest"} : tensor<1x3x4x4xf32> -> tensor<1x3x8x8xf32>
  %w = graph.constant dense<0.5> : tensor<4x3x1x1xf32>
  %c = graph.conv2d %u, %w : tensor<1x3x8x8xf32>, tensor<4x3x1x1xf32> -> tensor<1x4x8x8xf32>
  %r = graph.resize2d %c {size = array<i64: 16, 16>, mode = "bilinear"} : tensor<1x4x8x8xf32> -> tensor<1x4x16x16xf32>
  %v = graph.constant dense<0.25> : tensor<2x4x1x1xf32>
  %d = graph.conv2d %r, %v : tensor<1x4x16x16xf32>, tensor<2x4x1x1xf32> -> tensor<1x2x16x16xf32>
  func.return %d : tensor<1x2x16x16xf32>
}
