// RUN: not tensorkiln-opt %s -p 'partition' 2>&1 | filecheck %s --check-prefix=NOBACKEND
// RUN: not tensorkiln-opt %s -p 'partition{backend=tpu9000}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tensorkiln-opt %s -p 'partition{backend=example_npu},merge-composites,run-codegen,graph-to-te' 2>&1 | filecheck %s --check-prefix=UNTAGGED

// NOBACKEND: partition: name the backend, e.g. -p 'partition{backend=blas}'
// UNKNOWN: unknown BYOC backend 'tpu9000' (known: blas, cublas, example_npu)
// UNTAGGED: graph-to-te: no compute rule for byoc.composite (x1), byoc.yield (x1)

func.func @f(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>) -> tensor<3x4xf32> {
  %d = graph.dense %x, %w : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
  func.return %d : tensor<3x4xf32>
}
