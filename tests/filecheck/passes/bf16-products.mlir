// RUN: tensorkiln-opt %s --split-input-file -p bf16-products | filecheck %s
// RUN: tensorkiln-opt %s --split-input-file -p 'bf16-products{autocast=true}' | filecheck %s --check-prefix=AUTO

// A bfloat16 model's dense layer reads its operands as stored; its float32 result is
// rounded to bfloat16 once, the bfloat16 bias widened first.

// CHECK-LABEL: func.func @bf16_model
// CHECK-NEXT:    %[[B:.*]] = graph.cast %b : tensor<4xbf16> -> tensor<4xf32>
// CHECK-NEXT:    %[[D:.*]] = graph.bf16_dense %x, %w, %[[B]] : tensor<3x8xbf16>, tensor<4x8xbf16>, tensor<4xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.cast %[[D]] : tensor<3x4xf32> -> tensor<3x4xbf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @bf16_model(%x: tensor<3x8xbf16>, %w: tensor<4x8xbf16>, %b: tensor<4xbf16>) -> tensor<3x4xbf16> {
  %y = graph.dense %x, %w, %b : tensor<3x8xbf16>, tensor<4x8xbf16>, tensor<4xbf16> -> tensor<3x4xbf16>
  func.return %y : tensor<3x4xbf16>
}

// -----

// float32 layers: kept without autocast; with it, a constant weight's dense layer and
// matmul take bfloat16 products (the input cast, the matmul's weight transposed); a
// run-time weight stays float32.

// CHECK-LABEL: func.func @fp32_model
// CHECK-NOT:     graph.bf16_dense
// AUTO-LABEL:  func.func @fp32_model
// AUTO:          %[[C:.*]] = graph.cast %x : tensor<3x8xf32> -> tensor<3x8xbf16>
// AUTO-NEXT:     %[[D:.*]] = graph.bf16_dense %[[C]], %w : tensor<3x8xbf16>, tensor<4x8xf32> -> tensor<3x4xf32>
// AUTO:          %[[T:.*]] = graph.transpose %v {perm = array<i64: 1, 0>} : tensor<4x5xf32> -> tensor<5x4xf32>
// AUTO:          graph.bf16_dense %{{.*}}, %[[T]] : tensor<3x4xbf16>, tensor<5x4xf32> -> tensor<3x5xf32>
// AUTO:          graph.dense %x, %r : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
func.func @fp32_model(%x: tensor<3x8xf32>, %r: tensor<4x8xf32>) -> (tensor<3x5xf32>, tensor<3x4xf32>) {
  %w = graph.constant dense<0.5> : tensor<4x8xf32>
  %v = graph.constant dense<0.25> : tensor<4x5xf32>
  %d = graph.dense %x, %w : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
  %m = graph.matmul %d, %v : tensor<3x4xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
  %k = graph.dense %x, %r : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
  func.return %m, %k : tensor<3x5xf32>, tensor<3x4xf32>
}
