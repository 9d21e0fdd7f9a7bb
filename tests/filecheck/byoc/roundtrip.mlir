// RUN: %tk-roundtrip
// RUN: %tk-generic-roundtrip

// CHECK-LABEL: func.func @f
// CHECK:         %{{.*}} = byoc.region (%x, %w) : (tensor<3x8xf32>, tensor<4x8xf32>) -> (tensor<3x4xf32>) attributes {codegen = "blas", symbol = "blas_f_0"} {
// CHECK:           byoc.composite "blas.dense_act" (%{{.*}}, %{{.*}}) : (tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<3x4xf32> {
// CHECK:             byoc.yield %{{.*}} : tensor<3x4xf32>
func.func @f(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>) -> tensor<3x4xf32> {
  %d = byoc.region (%x, %w) : (tensor<3x8xf32>, tensor<4x8xf32>) -> (tensor<3x4xf32>) attributes {codegen = "blas", symbol = "blas_f_0"} {
  ^bb0(%a: tensor<3x8xf32>, %b: tensor<4x8xf32>):
    %r = byoc.composite "blas.dense_act" (%a, %b) : (tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<3x4xf32> {
    ^bb1(%c: tensor<3x8xf32>, %e: tensor<4x8xf32>):
      %s = graph.dense %c, %e : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
      %t = graph.relu %s : tensor<3x4xf32>
      byoc.yield %t : tensor<3x4xf32>
    }
    byoc.yield %r : tensor<3x4xf32>
  }
  func.return %d : tensor<3x4xf32>
}
