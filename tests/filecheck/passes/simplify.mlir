// RUN: tensorkiln-opt %s --split-input-file -p simplify | tensorkiln-opt --split-input-file | filecheck %s
// RUN: tensorkiln-opt %s --split-input-file -p simplify,dce | filecheck %s --check-prefix=DCE

// Only identities exact in IEEE float (signed zeros, NaN, inf) are applied.

// CHECK-LABEL: func.func @mul_div_one
// CHECK:         func.return %x, %x, %x, %x
// DCE-LABEL: func.func @mul_div_one
// DCE-NEXT:    func.return %x, %x, %x, %x
func.func @mul_div_one(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %one = graph.constant dense<1.0> : tensor<f32>
  %ones = graph.constant dense<1.0> : tensor<3xf32>
  %a = graph.mul %x, %one : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %b = graph.mul %ones, %x : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %c = graph.div %x, %one : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %d = graph.mul %x, %ones : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  func.return %a, %b, %c, %d : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// x + (-0.0) and x - (+0.0) are exact; x + 0.0 turns -0.0 into +0.0, x - (-0.0) too:
// those stay.
// CHECK-LABEL: func.func @signed_zeros
// CHECK-NOT:     graph.add %x, %nz
// CHECK-NOT:     graph.add %nz, %x
// CHECK-NOT:     graph.sub %x, %pz
// CHECK:         %keep1 = graph.add %x, %pz
// CHECK-NEXT:    %keep2 = graph.sub %x, %nz
// CHECK-NEXT:    func.return %x, %x, %x, %keep1, %keep2
func.func @signed_zeros(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %nz = graph.constant dense<-0.0> : tensor<4xf32>
  %pz = graph.constant dense<0.0> : tensor<4xf32>
  %a = graph.add %x, %nz : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = graph.add %nz, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %c = graph.sub %x, %pz : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %keep1 = graph.add %x, %pz : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %keep2 = graph.sub %x, %nz : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %a, %b, %c, %keep1, %keep2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Integers have no signed zero: x + 0 and x - 0 go.
// CHECK-LABEL: func.func @int_zero
// CHECK:         func.return %x, %x
func.func @int_zero(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %z = graph.constant dense<0> : tensor<i32>
  %a = graph.add %z, %x : tensor<i32>, tensor<4xi32> -> tensor<4xi32>
  %b = graph.sub %x, %z : tensor<4xi32>, tensor<i32> -> tensor<4xi32>
  func.return %a, %b : tensor<4xi32>, tensor<4xi32>
}

// -----

// Never: x * 0 (NaN * 0 is NaN, -1 * 0 is -0); a constant that is not a splat; an
// identity that broadcasts x to a larger shape; a splat of another value.
// CHECK-LABEL: func.func @kept
// CHECK:         %a = graph.mul %x, %zero
// CHECK-NEXT:    %b = graph.mul %x, %mixed
// CHECK-NEXT:    %c = graph.mul %x, %wide
// CHECK-NEXT:    %d = graph.mul %x, %two
// CHECK-NEXT:    %e = graph.div %one, %x
// CHECK-NEXT:    func.return %a, %b, %c, %d, %e
func.func @kept(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %zero = graph.constant dense<0.0> : tensor<3xf32>
  %mixed = graph.constant dense<[1.0, 1.0, 2.0]> : tensor<3xf32>
  %wide = graph.constant dense<1.0> : tensor<2x3xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.mul %x, %zero : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %b = graph.mul %x, %mixed : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %c = graph.mul %x, %wide : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %d = graph.mul %x, %two : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %e = graph.div %one, %x : tensor<f32>, tensor<3xf32> -> tensor<3xf32>
  func.return %a, %b, %c, %d, %e : tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @double_neg
// CHECK:         func.return %x, %n
func.func @double_neg(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %n = graph.neg %x : tensor<3xf32>
  %nn = graph.neg %n : tensor<3xf32>
  func.return %nn, %n : tensor<3xf32>, tensor<3xf32>
}

// -----

// Transposes compose; an identity permutation is removed.
// CHECK-LABEL: func.func @transposes
// CHECK:         %[[T:.*]] = graph.transpose %x {perm = array<i64: 2, 1, 0>} : tensor<2x3x5xf32> -> tensor<5x3x2xf32>
// CHECK:         func.return %x, %[[T]], %x
// DCE-LABEL: func.func @transposes
// DCE-NEXT:    %[[T:.*]] = graph.transpose %x {perm = array<i64: 2, 1, 0>}
// DCE-NEXT:    func.return %x, %[[T]], %x
func.func @transposes(%x: tensor<2x3x5xf32>) -> (tensor<2x3x5xf32>, tensor<5x3x2xf32>, tensor<2x3x5xf32>) {
  %t1 = graph.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x5xf32> -> tensor<5x2x3xf32>
  %back = graph.transpose %t1 {perm = array<i64: 1, 2, 0>} : tensor<5x2x3xf32> -> tensor<2x3x5xf32>
  %t2 = graph.transpose %t1 {perm = array<i64: 0, 2, 1>} : tensor<5x2x3xf32> -> tensor<5x3x2xf32>
  %id = graph.transpose %x {perm = array<i64: 0, 1, 2>} : tensor<2x3x5xf32> -> tensor<2x3x5xf32>
  func.return %back, %t2, %id : tensor<2x3x5xf32>, tensor<5x3x2xf32>, tensor<2x3x5xf32>
}

// -----

// Reshapes compose (symbolic dims included); a reshape to the same shape is removed.
// CHECK-LABEL: func.func @reshapes
// CHECK:         %[[R:.*]] = graph.reshape %x {shape = array<i64: -1, 2, 6>, dims = #graph.dims<n, _, _>} : tensor<?x3x4xf32, #graph.dims<n, _, _>> -> tensor<?x2x6xf32, #graph.dims<n, _, _>>
// CHECK:         func.return %[[R]], %x, %x
func.func @reshapes(%x: tensor<?x3x4xf32, #graph.dims<n, _, _>>) -> (tensor<?x2x6xf32, #graph.dims<n, _, _>>, tensor<?x3x4xf32, #graph.dims<n, _, _>>, tensor<?x3x4xf32, #graph.dims<n, _, _>>) {
  %r1 = graph.reshape %x {shape = array<i64: -1, 12>, dims = #graph.dims<n, _>} : tensor<?x3x4xf32, #graph.dims<n, _, _>> -> tensor<?x12xf32, #graph.dims<n, _>>
  %r2 = graph.reshape %r1 {shape = array<i64: -1, 2, 6>, dims = #graph.dims<n, _, _>} : tensor<?x12xf32, #graph.dims<n, _>> -> tensor<?x2x6xf32, #graph.dims<n, _, _>>
  %back = graph.reshape %r1 {shape = array<i64: -1, 3, 4>, dims = #graph.dims<n, _, _>} : tensor<?x12xf32, #graph.dims<n, _>> -> tensor<?x3x4xf32, #graph.dims<n, _, _>>
  %same = graph.reshape %x {shape = array<i64: -1, 3, 4>, dims = #graph.dims<n, _, _>} : tensor<?x3x4xf32, #graph.dims<n, _, _>> -> tensor<?x3x4xf32, #graph.dims<n, _, _>>
  func.return %r2, %back, %same : tensor<?x2x6xf32, #graph.dims<n, _, _>>, tensor<?x3x4xf32, #graph.dims<n, _, _>>, tensor<?x3x4xf32, #graph.dims<n, _, _>>
}

// -----

// No-op cast, broadcast_to and slice go; real ones stay.
// CHECK-LABEL: func.func @no_ops
// CHECK:         %cast = graph.cast %x : tensor<4x3xf32> -> tensor<4x3xf16>
// CHECK-NEXT:    %bcast = graph.broadcast_to %x {shape = array<i64: 2, 4, 3>}
// CHECK-NEXT:    %part = graph.slice %x {axes = array<i64: 0>, starts = array<i64: 1>, ends = array<i64: 4>, steps = array<i64: 1>}
// CHECK-NEXT:    func.return %x, %x, %x, %x, %cast, %bcast, %part
func.func @no_ops(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf16>, tensor<2x4x3xf32>, tensor<3x3xf32>) {
  %c = graph.cast %x : tensor<4x3xf32> -> tensor<4x3xf32>
  %b = graph.broadcast_to %x {shape = array<i64: 4, 3>} : tensor<4x3xf32> -> tensor<4x3xf32>
  %s = graph.slice %x {axes = array<i64: 0, 1>, starts = array<i64: 0, 0>, ends = array<i64: 4, 3>, steps = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<4x3xf32>
  %s1 = graph.slice %x {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 3>, steps = array<i64: 1>} : tensor<4x3xf32> -> tensor<4x3xf32>
  %cast = graph.cast %x : tensor<4x3xf32> -> tensor<4x3xf16>
  %bcast = graph.broadcast_to %x {shape = array<i64: 2, 4, 3>} : tensor<4x3xf32> -> tensor<2x4x3xf32>
  %part = graph.slice %x {axes = array<i64: 0>, starts = array<i64: 1>, ends = array<i64: 4>, steps = array<i64: 1>} : tensor<4x3xf32> -> tensor<3x3xf32>
  func.return %c, %b, %s, %s1, %cast, %bcast, %part : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf16>, tensor<2x4x3xf32>, tensor<3x3xf32>
}

// -----

// A transpose moving only 1-sized axes keeps the element order: a reshape. One that
// reorders two axes of size > 1 stays.
// CHECK-LABEL: func.func @unit_transpose
// CHECK-NEXT:    %u = graph.reshape %x {shape = array<i64: 2, 5, 1, 1>} : tensor<2x1x1x5xf32> -> tensor<2x5x1x1xf32>
// CHECK-NEXT:    %t = graph.transpose %y {perm = array<i64: 0, 3, 1, 2>} : tensor<2x1x3x5xf32> -> tensor<2x5x1x3xf32>
func.func @unit_transpose(%x: tensor<2x1x1x5xf32>, %y: tensor<2x1x3x5xf32>) -> (tensor<2x5x1x1xf32>, tensor<2x5x1x3xf32>) {
  %u = graph.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<2x1x1x5xf32> -> tensor<2x5x1x1xf32>
  %t = graph.transpose %y {perm = array<i64: 0, 3, 1, 2>} : tensor<2x1x3x5xf32> -> tensor<2x5x1x3xf32>
  func.return %u, %t : tensor<2x5x1x1xf32>, tensor<2x5x1x3xf32>
}
