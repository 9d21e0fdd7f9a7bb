// RUN: %tk-roundtrip
// RUN: %tk-generic-roundtrip

// Every graph op prints in its custom form and parses back to itself.

// CHECK-LABEL: func.func @elementwise(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4x8xi32>) -> tensor<4x8xf32> {
func.func @elementwise(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4x8xi32>) -> tensor<4x8xf32> {
  // CHECK-NEXT: %neg = graph.neg %x : tensor<4x8xf32>
  // CHECK-NEXT: %abs = graph.abs %i : tensor<4x8xi32>
  // CHECK-NEXT: %relu = graph.relu %x : tensor<4x8xf32>
  // CHECK-NEXT: %exp = graph.exp %x : tensor<4x8xf32>
  // CHECK-NEXT: %log = graph.log %x : tensor<4x8xf32>
  // CHECK-NEXT: %sqrt = graph.sqrt %x : tensor<4x8xf32>
  // CHECK-NEXT: %rsqrt = graph.rsqrt %x : tensor<4x8xf32>
  // CHECK-NEXT: %tanh = graph.tanh %x : tensor<4x8xf32>
  // CHECK-NEXT: %sigmoid = graph.sigmoid %x : tensor<4x8xf32>
  // CHECK-NEXT: %erf = graph.erf %x : tensor<4x8xf32>
  // CHECK-NEXT: %floor = graph.floor %x : tensor<4x8xf32>
  %neg = graph.neg %x : tensor<4x8xf32>
  %abs = graph.abs %i : tensor<4x8xi32>
  %relu = graph.relu %x : tensor<4x8xf32>
  %exp = graph.exp %x : tensor<4x8xf32>
  %log = graph.log %x : tensor<4x8xf32>
  %sqrt = graph.sqrt %x : tensor<4x8xf32>
  %rsqrt = graph.rsqrt %x : tensor<4x8xf32>
  %tanh = graph.tanh %x : tensor<4x8xf32>
  %sigmoid = graph.sigmoid %x : tensor<4x8xf32>
  %erf = graph.erf %x : tensor<4x8xf32>
  %floor = graph.floor %x : tensor<4x8xf32>

  // Binary ops broadcast like numpy, either side.
  // CHECK-NEXT: %add = graph.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %sub = graph.sub %b, %x : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %mul = graph.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %div = graph.div %i, %i : tensor<4x8xi32>, tensor<4x8xi32> -> tensor<4x8xi32>
  // CHECK-NEXT: %max = graph.max %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %min = graph.min %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %pow = graph.pow %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %add = graph.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %sub = graph.sub %b, %x : tensor<8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %mul = graph.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %div = graph.div %i, %i : tensor<4x8xi32>, tensor<4x8xi32> -> tensor<4x8xi32>
  %max = graph.max %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %min = graph.min %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %pow = graph.pow %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>

  // CHECK-NEXT: %lt = graph.compare %x, %b {predicate = "lt"} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK-NEXT: %where = graph.where %lt, %x, %b : tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK-NEXT: %cast = graph.cast %x : tensor<4x8xf32> -> tensor<4x8xi32>
  // CHECK-NEXT: func.return %where : tensor<4x8xf32>
  %lt = graph.compare %x, %b {predicate = "lt"} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %where = graph.where %lt, %x, %b : tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %cast = graph.cast %x : tensor<4x8xf32> -> tensor<4x8xi32>
  func.return %where : tensor<4x8xf32>
}

// Small literal constants; weights (#graph.weight<"...">) are held by reference and
// only parse in the process that loaded them (see graph-weight-unloaded.mlir).
// CHECK-LABEL: func.func @constants() -> (tensor<f32>, tensor<2x3xf32>, tensor<3xi32>, tensor<2xi1>) {
// CHECK-NEXT:    %s = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %m = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    %i = graph.constant {tag = "ids"} dense<[1, 2, 3]> : tensor<3xi32>
// CHECK-NEXT:    %p = graph.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:    func.return %s, %m, %i, %p : tensor<f32>, tensor<2x3xf32>, tensor<3xi32>, tensor<2xi1>
func.func @constants() -> (tensor<f32>, tensor<2x3xf32>, tensor<3xi32>, tensor<2xi1>) {
  %s = graph.constant dense<2.0> : tensor<f32>
  %m = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %i = graph.constant {tag = "ids"} dense<[1, 2, 3]> : tensor<3xi32>
  %p = graph.constant dense<[true, false]> : tensor<2xi1>
  func.return %s, %m, %i, %p : tensor<f32>, tensor<2x3xf32>, tensor<3xi32>, tensor<2xi1>
}

// CHECK-LABEL: func.func @products(
// CHECK-NEXT:    %mm = graph.matmul %a, %b : tensor<16x8xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
// CHECK-NEXT:    %bmm = graph.batch_matmul %ba, %bb : tensor<4x16x8xf32>, tensor<1x8x32xf32> -> tensor<4x16x32xf32>
// CHECK-NEXT:    %d = graph.dense %a, %w, %bias : tensor<16x8xf32>, tensor<32x8xf32>, tensor<32xf32> -> tensor<16x32xf32>
// CHECK-NEXT:    %nb = graph.dense %a, %w : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
// CHECK-NEXT:    func.return
func.func @products(%a: tensor<16x8xf32>, %b: tensor<8x32xf32>, %ba: tensor<4x16x8xf32>, %bb: tensor<1x8x32xf32>, %w: tensor<32x8xf32>, %bias: tensor<32xf32>) {
  %mm = graph.matmul %a, %b : tensor<16x8xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  %bmm = graph.batch_matmul %ba, %bb : tensor<4x16x8xf32>, tensor<1x8x32xf32> -> tensor<4x16x32xf32>
  %d = graph.dense %a, %w, %bias : tensor<16x8xf32>, tensor<32x8xf32>, tensor<32xf32> -> tensor<16x32xf32>
  %nb = graph.dense %a, %w : tensor<16x8xf32>, tensor<32x8xf32> -> tensor<16x32xf32>
  func.return
}

// Symbolic dims: `?` in the shape, the name in #graph.dims (`_` marks a static dim).
// CHECK-LABEL: func.func @symbolic(%x: tensor<?x8xf32, #graph.dims<n, _>>, %b: tensor<8xf32>, %w: tensor<4x8xf32>) -> tensor<?x4xf32, #graph.dims<n, _>> {
// CHECK-NEXT:    %y = graph.add %x, %b : tensor<?x8xf32, #graph.dims<n, _>>, tensor<8xf32> -> tensor<?x8xf32, #graph.dims<n, _>>
// CHECK-NEXT:    %r = graph.relu %y : tensor<?x8xf32, #graph.dims<n, _>>
// CHECK-NEXT:    %d = graph.dense %r, %w : tensor<?x8xf32, #graph.dims<n, _>>, tensor<4x8xf32> -> tensor<?x4xf32, #graph.dims<n, _>>
// CHECK-NEXT:    func.return %d : tensor<?x4xf32, #graph.dims<n, _>>
func.func @symbolic(%x: tensor<?x8xf32, #graph.dims<n, _>>, %b: tensor<8xf32>, %w: tensor<4x8xf32>) -> tensor<?x4xf32, #graph.dims<n, _>> {
  %y = graph.add %x, %b : tensor<?x8xf32, #graph.dims<n, _>>, tensor<8xf32> -> tensor<?x8xf32, #graph.dims<n, _>>
  %r = graph.relu %y : tensor<?x8xf32, #graph.dims<n, _>>
  %d = graph.dense %r, %w : tensor<?x8xf32, #graph.dims<n, _>>, tensor<4x8xf32> -> tensor<?x4xf32, #graph.dims<n, _>>
  func.return %d : tensor<?x4xf32, #graph.dims<n, _>>
}

// A symbol broadcasts with itself and with 1.
// CHECK-LABEL: func.func @symbolic_2d(
// CHECK-NEXT:    %z = graph.mul %x, %y : tensor<?x?xf32, #graph.dims<batch, seq>>, tensor<?x1xf32, #graph.dims<batch, _>> -> tensor<?x?xf32, #graph.dims<batch, seq>>
func.func @symbolic_2d(%x: tensor<?x?xf32, #graph.dims<batch, seq>>, %y: tensor<?x1xf32, #graph.dims<batch, _>>) -> tensor<?x?xf32, #graph.dims<batch, seq>> {
  %z = graph.mul %x, %y : tensor<?x?xf32, #graph.dims<batch, seq>>, tensor<?x1xf32, #graph.dims<batch, _>> -> tensor<?x?xf32, #graph.dims<batch, seq>>
  func.return %z : tensor<?x?xf32, #graph.dims<batch, seq>>
}
