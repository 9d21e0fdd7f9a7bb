// RUN: %tk-roundtrip
// RUN: %tk-generic-roundtrip

// A matmul: te.compute over (i, j), te.reduce over k, te.read of both inputs.
// CHECK-LABEL: func.func @matmul(%a: tensor<16x8xf32>, %b: tensor<8x32xf32>) -> tensor<16x32xf32> {
// CHECK-NEXT:    %c = te.compute(%a, %b) : (tensor<16x8xf32>, tensor<8x32xf32>) -> tensor<16x32xf32> {
// CHECK-NEXT:    ^bb0(%i: index, %j: index, %A: tensor<16x8xf32>, %B: tensor<8x32xf32>):
// CHECK-NEXT:      %k8 = arith.constant 8 : index
// CHECK-NEXT:      %s = te.reduce add(%k8) init 0.0 : f32 {
// CHECK-NEXT:      ^bb{{[0-9]+}}(%k: index):
// CHECK-NEXT:        %x = te.read %A[%i, %k] : tensor<16x8xf32>
// CHECK-NEXT:        %y = te.read %B[%k, %j] : tensor<8x32xf32>
// CHECK-NEXT:        %p = arith.mulf %x, %y : f32
// CHECK-NEXT:        te.yield %p : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      te.yield %s : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %c : tensor<16x32xf32>
// CHECK-NEXT:  }
func.func @matmul(%a: tensor<16x8xf32>, %b: tensor<8x32xf32>) -> tensor<16x32xf32> {
  %c = te.compute(%a, %b) : (tensor<16x8xf32>, tensor<8x32xf32>) -> tensor<16x32xf32> {
  ^bb0(%i: index, %j: index, %A: tensor<16x8xf32>, %B: tensor<8x32xf32>):
    %k8 = arith.constant 8 : index
    %s = te.reduce add(%k8) init 0.0 : f32 {
    ^bb1(%k: index):
      %x = te.read %A[%i, %k] : tensor<16x8xf32>
      %y = te.read %B[%k, %j] : tensor<8x32xf32>
      %p = arith.mulf %x, %y : f32
      te.yield %p : f32
    }
    te.yield %s : f32
  }
  func.return %c : tensor<16x32xf32>
}

// A max over a static axis of a tensor with a symbolic dim; the extent comes from te.dim.
// CHECK-LABEL: func.func @row_max(%x: tensor<?x8xf32, #graph.dims<n, _>>) -> tensor<?xf32, #graph.dims<n>> {
// CHECK-NEXT:    %r = te.compute(%x) : (tensor<?x8xf32, #graph.dims<n, _>>) -> tensor<?xf32, #graph.dims<n>> {
// CHECK-NEXT:    ^bb0(%i: index, %X: tensor<?x8xf32, #graph.dims<n, _>>):
// CHECK-NEXT:      %c8 = te.dim %X, 1 : tensor<?x8xf32, #graph.dims<n, _>>
// (-3.4e38 is not exact in f32: it prints as the f32 value's repr)
// CHECK-NEXT:      %m = te.reduce max(%c8) init -3.39999{{[0-9]+}}e+38 : f32 {
// CHECK-NEXT:      ^bb{{[0-9]+}}(%k: index):
// CHECK-NEXT:        %v = te.read %X[%i, %k] : tensor<?x8xf32, #graph.dims<n, _>>
// CHECK-NEXT:        te.yield %v : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      te.yield %m : f32
// CHECK-NEXT:    }
func.func @row_max(%x: tensor<?x8xf32, #graph.dims<n, _>>) -> tensor<?xf32, #graph.dims<n>> {
  %r = te.compute(%x) : (tensor<?x8xf32, #graph.dims<n, _>>) -> tensor<?xf32, #graph.dims<n>> {
  ^bb0(%i: index, %X: tensor<?x8xf32, #graph.dims<n, _>>):
    %c8 = te.dim %X, 1 : tensor<?x8xf32, #graph.dims<n, _>>
    %m = te.reduce max(%c8) init -3.4e38 : f32 {
    ^bb1(%k: index):
      %v = te.read %X[%i, %k] : tensor<?x8xf32, #graph.dims<n, _>>
      te.yield %v : f32
    }
    te.yield %m : f32
  }
  func.return %r : tensor<?xf32, #graph.dims<n>>
}

// An integer sum over two reduction axes into a rank-0 tensor (no index variables).
// CHECK-LABEL: func.func @sum_all(%x: tensor<4x6xi32>) -> tensor<i32> {
// CHECK-NEXT:    %r = te.compute(%x) : (tensor<4x6xi32>) -> tensor<i32> {
// CHECK-NEXT:    ^bb0(%X: tensor<4x6xi32>):
// CHECK-NEXT:      %n = te.dim %X, 0 : tensor<4x6xi32>
// CHECK-NEXT:      %m = te.dim %X, 1 : tensor<4x6xi32>
// CHECK-NEXT:      %s = te.reduce add(%n, %m) init 0 : i32 {
// CHECK-NEXT:      ^bb{{[0-9]+}}(%a: index, %b: index):
// CHECK-NEXT:        %v = te.read %X[%a, %b] : tensor<4x6xi32>
// CHECK-NEXT:        te.yield %v : i32
// CHECK-NEXT:      }
// CHECK-NEXT:      te.yield %s : i32
// CHECK-NEXT:    }
func.func @sum_all(%x: tensor<4x6xi32>) -> tensor<i32> {
  %r = te.compute(%x) : (tensor<4x6xi32>) -> tensor<i32> {
  ^bb0(%X: tensor<4x6xi32>):
    %n = te.dim %X, 0 : tensor<4x6xi32>
    %m = te.dim %X, 1 : tensor<4x6xi32>
    %s = te.reduce add(%n, %m) init 0 : i32 {
    ^bb1(%a: index, %b: index):
      %v = te.read %X[%a, %b] : tensor<4x6xi32>
      te.yield %v : i32
    }
    te.yield %s : i32
  }
  func.return %r : tensor<i32>
}

// Index arithmetic in reads, math ops in the body, attributes on te.compute and te.read.
// CHECK-LABEL: func.func @shift_exp(%x: tensor<8xf32>) -> tensor<7xf32> {
// CHECK-NEXT:    %r = te.compute(%x) : (tensor<8xf32>) -> tensor<7xf32> attributes {tag = "shift"} {
// CHECK-NEXT:    ^bb0(%i: index, %X: tensor<8xf32>):
// CHECK-NEXT:      %one = arith.constant 1 : index
// CHECK-NEXT:      %j = arith.addi %i, %one : index
// CHECK-NEXT:      %v = te.read %X[%j] {note} : tensor<8xf32>
// CHECK-NEXT:      %e = math.exp %v : f32
// CHECK-NEXT:      te.yield %e : f32
// CHECK-NEXT:    }
func.func @shift_exp(%x: tensor<8xf32>) -> tensor<7xf32> {
  %r = te.compute(%x) : (tensor<8xf32>) -> tensor<7xf32> attributes {tag = "shift"} {
  ^bb0(%i: index, %X: tensor<8xf32>):
    %one = arith.constant 1 : index
    %j = arith.addi %i, %one : index
    %v = te.read %X[%j] {note} : tensor<8xf32>
    %e = math.exp %v : f32
    te.yield %e : f32
  }
  func.return %r : tensor<7xf32>
}
