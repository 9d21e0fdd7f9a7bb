// RUN: tensorkiln-opt %s --verify-diagnostics --split-input-file | filecheck %s --check-prefix=VERIFY

// VERIFY: byoc.composite: name 'dense' must be 'backend.pattern'
func.func @g(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>) -> tensor<3x4xf32> {
  %d = byoc.composite "dense" (%x, %w) : (tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<3x4xf32> {
  ^bb0(%a: tensor<3x8xf32>, %b: tensor<4x8xf32>):
    %r = graph.dense %a, %b : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
    byoc.yield %r : tensor<3x4xf32>
  }
  func.return %d : tensor<3x4xf32>
}

// -----

// VERIFY: byoc.region: composites of several backends (blas, example_npu)
func.func @h(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>) -> tensor<3x4xf32> {
  %d = byoc.region (%x, %w) : (tensor<3x8xf32>, tensor<4x8xf32>) -> (tensor<3x4xf32>) {
  ^bb0(%a: tensor<3x8xf32>, %b: tensor<4x8xf32>):
    %r = byoc.composite "blas.dense" (%a, %b) : (tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<3x4xf32> {
    ^bb1(%c: tensor<3x8xf32>, %e: tensor<4x8xf32>):
      %s = graph.dense %c, %e : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
      byoc.yield %s : tensor<3x4xf32>
    }
    %t = byoc.composite "example_npu.relu" (%r) : (tensor<3x4xf32>) -> tensor<3x4xf32> {
    ^bb2(%f: tensor<3x4xf32>):
      %u = graph.relu %f : tensor<3x4xf32>
      byoc.yield %u : tensor<3x4xf32>
    }
    byoc.yield %t : tensor<3x4xf32>
  }
  func.return %d : tensor<3x4xf32>
}

// -----

// VERIFY: byoc.composite: the body must end with byoc.yield of (tensor<3x4xf32>)
func.func @k(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %d = byoc.composite "blas.relu" (%x) : (tensor<3x4xf32>) -> tensor<3x4xf32> {
  ^bb0(%a: tensor<3x4xf32>):
    %r = graph.relu %a : tensor<3x4xf32>
    byoc.yield %a, %r : tensor<3x4xf32>, tensor<3x4xf32>
  }
  func.return %d : tensor<3x4xf32>
}
