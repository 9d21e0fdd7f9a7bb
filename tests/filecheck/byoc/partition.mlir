// RUN: tensorkiln-opt %s -p 'partition{backend=example_npu}' | filecheck %s
// RUN: tensorkiln-opt %s -p 'partition{backend=blas bind_constants=false}' | filecheck %s --check-prefix=LIFT

// dense + bias + relu is one composite (priority 30 beats dense_bias and dense); the
// softmax is not offloaded; the weights are bound inside (or lifted to inputs).
func.func @mlp(%x: tensor<3x8xf32>) -> tensor<3x4xf32> {
  %w = graph.constant dense<0.5> : tensor<4x8xf32>
  %b = graph.constant dense<0.25> : tensor<4xf32>
  %d = graph.dense %x, %w, %b : tensor<3x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %r = graph.relu %d : tensor<3x4xf32>
  %s = graph.softmax %r {axis = 1 : i64} : tensor<3x4xf32>
  func.return %s : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @mlp
// CHECK-NEXT:    %[[C:.*]] = byoc.composite "example_npu.dense_bias_act" (%x) : (tensor<3x8xf32>) -> tensor<3x4xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<3x8xf32>):
// CHECK-NEXT:      %[[W:.*]] = graph.constant dense<5.000000e-01> : tensor<4x8xf32>
// CHECK-NEXT:      %[[B:.*]] = graph.constant dense<2.500000e-01> : tensor<4xf32>
// CHECK-NEXT:      %[[D:.*]] = graph.dense %[[A]], %[[W]], %[[B]]
// CHECK-NEXT:      %[[R:.*]] = graph.relu %[[D]]
// CHECK-NEXT:      byoc.yield %[[R]] : tensor<3x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %{{.*}} = graph.softmax %[[C]]
// CHECK-NOT:     graph.constant

// LIFT-LABEL: func.func @mlp
// LIFT:         %[[W:.*]] = graph.constant dense<5.000000e-01> : tensor<4x8xf32>
// LIFT-NEXT:    %[[B:.*]] = graph.constant dense<2.500000e-01> : tensor<4xf32>
// LIFT-NEXT:    %{{.*}} = byoc.composite "blas.dense_bias_act" (%x, %[[W]], %[[B]]) : (tensor<3x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<3x4xf32> {
// LIFT-NOT:     graph.constant
// LIFT:         byoc.yield

// A bias given as an add of a vector (either side) is the bias pattern too; matmul and
// batch_matmul have their patterns.
func.func @products(%a: tensor<5x7xf32>, %b: tensor<7x3xf32>, %v: tensor<3xf32>, %p: tensor<2x5x7xf32>, %q: tensor<2x7x3xf32>) -> (tensor<5x3xf32>, tensor<2x5x3xf32>) {
  %m = graph.matmul %a, %b : tensor<5x7xf32>, tensor<7x3xf32> -> tensor<5x3xf32>
  %s = graph.add %v, %m : tensor<3xf32>, tensor<5x3xf32> -> tensor<5x3xf32>
  %t = graph.tanh %s : tensor<5x3xf32>
  %bm = graph.batch_matmul %p, %q : tensor<2x5x7xf32>, tensor<2x7x3xf32> -> tensor<2x5x3xf32>
  func.return %t, %bm : tensor<5x3xf32>, tensor<2x5x3xf32>
}

// CHECK-LABEL: func.func @products
// CHECK:         byoc.composite "example_npu.matmul_bias_act" (%v, %a, %b)
// CHECK:         byoc.composite "example_npu.batch_matmul" (%p, %q)

// Not offloaded: a float64 product, an activation whose input is used elsewhere (the
// dense alone is), a bias that is not a vector of the output's last size.
func.func @negative(%x: tensor<3x8xf64>, %w: tensor<4x8xf64>, %y: tensor<3x8xf32>, %v: tensor<4x8xf32>, %m: tensor<3x4xf32>) -> (tensor<3x4xf64>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %d64 = graph.dense %x, %w : tensor<3x8xf64>, tensor<4x8xf64> -> tensor<3x4xf64>
  %d = graph.dense %y, %v : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
  %r = graph.relu %d : tensor<3x4xf32>
  %e = graph.dense %y, %v : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
  %s = graph.add %e, %m : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  func.return %d64, %r, %d, %s : tensor<3x4xf64>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @negative
// CHECK-NEXT:    %d64 = graph.dense %x, %w
// CHECK-NEXT:    %[[D:.*]] = byoc.composite "example_npu.dense" (%y, %v)
// CHECK:         %[[R:.*]] = graph.relu %[[D]]
// CHECK-NEXT:    %[[E:.*]] = byoc.composite "example_npu.dense" (%y, %v)
// CHECK:         %{{.*}} = graph.add %[[E]], %m
