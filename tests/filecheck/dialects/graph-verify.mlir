// RUN: tensorkiln-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Invalid IR is reported by the verifier with the op's name, what was expected and
// what was found; the op is marked in the printed module.
// (The chunk separator is matched as `// {{-}}----`: a literal one in a CHECK line
// would split this file there.)

// A result type that disagrees with shape inference.
func.func @add_wrong_result(%x: tensor<4x8xf32>, %b: tensor<8xf32>) {
  %y = graph.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x7xf32>
  func.return
}
// CHECK:      graph.add: result type tensor<4x7xf32> does not match the inferred type tensor<4x8xf32>
// CHECK:      %y = "graph.add"(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x7xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^
// CHECK-NEXT: | Operation does not verify: graph.add: result type tensor<4x7xf32> does not match the inferred type tensor<4x8xf32>

// -----

func.func @matmul_contraction(%a: tensor<16x8xf32>, %b: tensor<7x32xf32>) {
  %c = graph.matmul %a, %b : tensor<16x8xf32>, tensor<7x32xf32> -> tensor<16x32xf32>
  func.return
}
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: graph.matmul: contraction dims differ (8 vs 7)
// CHECK:      %c = "graph.matmul"(%a, %b) : (tensor<16x8xf32>, tensor<7x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^
// CHECK-NEXT: | Operation does not verify: graph.matmul: contraction dims differ (8 vs 7)

// -----

func.func @dense_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) {
  %y = graph.dense %x, %w, %b : tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32> -> tensor<4x16xf32>
  func.return
}
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: graph.dense: bias must have shape (16,), got (8,)

// -----

// Two different symbols do not broadcast statically.
func.func @symbols_differ(%x: tensor<?x8xf32, #graph.dims<n, _>>, %y: tensor<?x8xf32, #graph.dims<m, _>>) {
  %z = graph.add %x, %y : tensor<?x8xf32, #graph.dims<n, _>>, tensor<?x8xf32, #graph.dims<m, _>> -> tensor<?x8xf32, #graph.dims<n, _>>
  func.return
}
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: graph.add: shapes (n, 8), (m, 8) do not broadcast

// -----

func.func @element_types_differ(%x: tensor<4x8xf32>, %i: tensor<4x8xi32>) {
  %z = graph.add %x, %i : tensor<4x8xf32>, tensor<4x8xi32> -> tensor<4x8xf32>
  func.return
}
// (the two element types are listed in no fixed order)
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: graph.add: operands must have one element type, got f32, i32

// -----

func.func @float_only(%x: tensor<4x8xi32>) {
  %z = graph.exp %x : tensor<4x8xi32>
  func.return
}
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: graph.exp: operand must be a float tensor, got tensor<4x8xi32>

// -----

func.func @bad_predicate(%x: tensor<4x8xf32>) {
  %z = graph.compare %x, %x {predicate = "less"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  func.return
}
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: graph.compare: unknown predicate 'less' (expected one of eq, ne, lt, le, gt, ge)

// -----

// te.read needs one index per dim of the tensor it reads.
func.func @te_read_indices(%a: tensor<16x8xf32>) -> tensor<16xf32> {
  %c = te.compute(%a) : (tensor<16x8xf32>) -> tensor<16xf32> {
  ^bb0(%i: index, %A: tensor<16x8xf32>):
    %x = te.read %A[%i] : tensor<16x8xf32>
    te.yield %x : f32
  }
  func.return %c : tensor<16xf32>
}
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: te.read: 1 indices for a rank-2 tensor
// CHECK:      %x = "te.read"(%A, %i) : (tensor<16x8xf32>, index) -> f32
// CHECK-NEXT: ^^^^^^^^^^^^^^
// CHECK-NEXT: | Operation does not verify: te.read: 1 indices for a rank-2 tensor

// -----

func.func @te_reduce_combiner(%x: tensor<4xf32>) -> tensor<f32> {
  %c = te.compute(%x) : (tensor<4xf32>) -> tensor<f32> {
  ^bb0(%X: tensor<4xf32>):
    %n = te.dim %X, 0 : tensor<4xf32>
    %s = te.reduce avg(%n) init 0.0 : f32 {
    ^bb1(%k: index):
      %v = te.read %X[%k] : tensor<4xf32>
      te.yield %v : f32
    }
    te.yield %s : f32
  }
  func.return %c : tensor<f32>
}
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: te.reduce: unknown combiner 'avg' (expected one of add, mul, max, min)

// -----

func.func @loop_kind(%A: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  "loop.for"(%c0, %c0, %c0) <{kind = "warp.x", loop_name = ""}> ({
  ^bb0(%i: index):
    loop.yield
  }) : (index, index, index) -> ()
  func.return
}
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: loop.for: unknown kind 'warp.x' (expected one of serial, parallel, vectorized, unrolled, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z)

// -----

func.func @loop_load_indices(%A: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %v = loop.load %A[%c0] : memref<4x4xf32>
  func.return
}
// CHECK:      {{^}}// {{-}}----
// CHECK-NEXT: loop.load: 1 indices for a rank-2 buffer memref<4x4xf32>
