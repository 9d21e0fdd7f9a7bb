// RUN: tensorkiln-opt %s --split-input-file -p fold-batch-norm | filecheck %s
// RUN: tensorkiln-opt %s --split-input-file -p fold-batch-norm,dce | filecheck %s --check-prefix=DCE

// A per-channel constant scale and shift after conv2d/dense move into its weight and
// bias (new constants, held by reference).

// CHECK-LABEL: func.func @conv_bn
// CHECK:         graph.constant #graph.weight<"conv2d.weight.folded{{.*}}"> : tensor<2x1x1x1xf32>
// CHECK:         %a = graph.conv2d %x
// CHECK-NOT:     graph.mul
// CHECK-NOT:     graph.add
// CHECK:         func.return %a
// DCE-LABEL: func.func @conv_bn
// DCE-NEXT:    %[[W:.*]] = graph.constant #graph.weight<"conv2d.weight.folded{{.*}}"> : tensor<2x1x1x1xf32>
// DCE-NEXT:    %[[B:.*]] = graph.constant #graph.weight<"conv2d.bias.folded{{.*}}"> : tensor<2xf32>
// DCE-NEXT:    %a = graph.conv2d %x, %[[W]], %[[B]] : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32> -> tensor<1x2x3x3xf32>
// DCE-NEXT:    func.return %a
func.func @conv_bn(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %b = graph.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %scale = graph.constant dense<[[[[2.0]], [[3.0]]]]> : tensor<1x2x1x1xf32>
  %shift = graph.constant dense<[[[[1.0]], [[-1.0]]]]> : tensor<1x2x1x1xf32>
  %y = graph.conv2d %x, %w, %b : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32> -> tensor<1x2x3x3xf32>
  %m = graph.mul %y, %scale : tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32> -> tensor<1x2x3x3xf32>
  %a = graph.add %shift, %m : tensor<1x2x1x1xf32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  func.return %a : tensor<1x2x3x3xf32>
}

// -----

// No bias: one is created for the shift. Properties (strides, padding, groups) are kept.
// CHECK-LABEL: func.func @conv_no_bias
// CHECK:         %[[B:.*]] = graph.constant #graph.weight<"{{.*}}"> : tensor<2xf32>
// CHECK-NEXT:    %{{.*}} = graph.conv2d %x, %w, %[[B]] {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64}
// CHECK-NOT:     graph.sub
func.func @conv_no_bias(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = graph.constant dense<1.0> : tensor<2x1x3x3xf32>
  %shift = graph.constant dense<[[[3.0]], [[4.0]]]> : tensor<2x1x1xf32>
  %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, groups = 2 : i64} : tensor<1x2x4x4xf32>, tensor<2x1x3x3xf32> -> tensor<1x2x2x2xf32>
  %s = graph.sub %y, %shift : tensor<1x2x2x2xf32>, tensor<2x1x1xf32> -> tensor<1x2x2x2xf32>
  func.return %s : tensor<1x2x2x2xf32>
}

// -----

// dense: per output feature, (N,) or (1, N) or a scalar.
// CHECK-LABEL: func.func @dense
// CHECK-NOT:     graph.mul
// CHECK-NOT:     graph.add
// CHECK:         func.return
// DCE-LABEL: func.func @dense
// DCE-NEXT:    %[[W:.*]] = graph.constant #graph.weight<"dense.weight.folded{{.*}}"> : tensor<3x2xf32>
// DCE-NEXT:    %[[B:.*]] = graph.constant #graph.weight<"dense.bias.folded{{.*}}"> : tensor<3xf32>
// DCE-NEXT:    %a = graph.dense %x, %[[W]], %[[B]]
// DCE-NEXT:    func.return %a
func.func @dense(%x: tensor<?x2xf32, #graph.dims<n, _>>) -> tensor<?x3xf32, #graph.dims<n, _>> {
  %w = graph.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %scale = graph.constant dense<[[2.0, 3.0, 4.0]]> : tensor<1x3xf32>
  %k = graph.constant dense<0.5> : tensor<f32>
  %shift = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = graph.dense %x, %w : tensor<?x2xf32, #graph.dims<n, _>>, tensor<3x2xf32> -> tensor<?x3xf32, #graph.dims<n, _>>
  %m = graph.mul %scale, %y : tensor<1x3xf32>, tensor<?x3xf32, #graph.dims<n, _>> -> tensor<?x3xf32, #graph.dims<n, _>>
  %m2 = graph.mul %m, %k : tensor<?x3xf32, #graph.dims<n, _>>, tensor<f32> -> tensor<?x3xf32, #graph.dims<n, _>>
  %a = graph.add %m2, %shift : tensor<?x3xf32, #graph.dims<n, _>>, tensor<3xf32> -> tensor<?x3xf32, #graph.dims<n, _>>
  func.return %a : tensor<?x3xf32, #graph.dims<n, _>>
}

// -----

// Not folded: the conv result has another user (it needs the unscaled value).
// CHECK-LABEL: func.func @other_user
// CHECK:         %y = graph.conv2d %x, %w
// CHECK-NEXT:    %m = graph.mul %y, %scale
// CHECK-NEXT:    func.return %m, %y
func.func @other_user(%x: tensor<1x1x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = graph.constant dense<1.0> : tensor<2x1x1x1xf32>
  %scale = graph.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %y = graph.conv2d %x, %w : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x3x3xf32>
  %m = graph.mul %y, %scale : tensor<1x2x3x3xf32>, tensor<2x1x1xf32> -> tensor<1x2x3x3xf32>
  func.return %m, %y : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}

// -----

// Not folded: a constant that varies along a spatial axis, one that broadcasts the
// result to a larger shape, a weight that is not constant, a shift subtracted from
// a constant (t - y), an op in between.
// CHECK-LABEL: func.func @not_per_channel
// CHECK:         %m1 = graph.mul %y1, %spatial
// CHECK:         %m2 = graph.mul %y2, %wide
// CHECK:         %m3 = graph.mul %y3, %scale
// CHECK:         %s4 = graph.sub %scale, %y4
// CHECK:         %m5 = graph.mul %r5, %scale
func.func @not_per_channel(%x: tensor<1x1x3x3xf32>, %wv: tensor<2x1x1x1xf32>) -> (tensor<1x2x3x3xf32>, tensor<2x1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = graph.constant dense<1.0> : tensor<2x1x1x1xf32>
  %spatial = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %wide = graph.constant dense<[[[[[2.0]]]], [[[[3.0]]]]]> : tensor<2x1x1x1x1xf32>
  %scale = graph.constant dense<[[[2.0]], [[3.0]]]> : tensor<2x1x1xf32>
  %y1 = graph.conv2d %x, %w : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x3x3xf32>
  %m1 = graph.mul %y1, %spatial : tensor<1x2x3x3xf32>, tensor<3xf32> -> tensor<1x2x3x3xf32>
  %y2 = graph.conv2d %x, %w : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x3x3xf32>
  %m2 = graph.mul %y2, %wide : tensor<1x2x3x3xf32>, tensor<2x1x1x1x1xf32> -> tensor<2x1x2x3x3xf32>
  %y3 = graph.conv2d %x, %wv : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x3x3xf32>
  %m3 = graph.mul %y3, %scale : tensor<1x2x3x3xf32>, tensor<2x1x1xf32> -> tensor<1x2x3x3xf32>
  %y4 = graph.conv2d %x, %w : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x3x3xf32>
  %s4 = graph.sub %scale, %y4 : tensor<2x1x1xf32>, tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32>
  %y5 = graph.conv2d %x, %w : tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x3x3xf32>
  %r5 = graph.relu %y5 : tensor<1x2x3x3xf32>
  %m5 = graph.mul %r5, %scale : tensor<1x2x3x3xf32>, tensor<2x1x1xf32> -> tensor<1x2x3x3xf32>
  func.return %m1, %m2, %m3, %s4, %m5 : tensor<1x2x3x3xf32>, tensor<2x1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
