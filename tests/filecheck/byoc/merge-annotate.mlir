// RUN: tensorkiln-opt %s -p 'partition{backend=example_npu},merge-composites,annotate-codegen' | filecheck %s
// RUN: tensorkiln-opt %s -p 'partition{backend=example_npu},merge-composites{single_output=false}' | filecheck %s --check-prefix=MULTI
// RUN: tensorkiln-opt %s -p 'partition{backend=example_npu},annotate-codegen' | filecheck %s --check-prefix=ALONE

// A chain of two composites becomes one region, tagged with its codegen and symbol.
func.func @chain(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>, %v: tensor<2x4xf32>) -> tensor<3x2xf32> {
  %d = graph.dense %x, %w : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
  %r = graph.relu %d : tensor<3x4xf32>
  %e = graph.dense %r, %v : tensor<3x4xf32>, tensor<2x4xf32> -> tensor<3x2xf32>
  func.return %e : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %{{.*}} = byoc.region (%x, %w, %v) : (tensor<3x8xf32>, tensor<4x8xf32>, tensor<2x4xf32>) -> (tensor<3x2xf32>) attributes {codegen = "example_npu", symbol = "example_npu_chain_0"} {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<3x8xf32>, %[[W:.*]]: tensor<4x8xf32>, %[[V:.*]]: tensor<2x4xf32>):
// CHECK-NEXT:      %[[A:.*]] = byoc.composite "example_npu.dense_act" (%[[X]], %[[W]])
// CHECK:           %[[B:.*]] = byoc.composite "example_npu.dense" (%[[A]], %[[V]])
// CHECK:           byoc.yield %[[B]] : tensor<3x2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// ALONE-LABEL: func.func @chain
// ALONE:         byoc.region (%x, %w) {{.*}} attributes {codegen = "example_npu", symbol = "example_npu_chain_0"}
// ALONE:         byoc.region ({{.*}}, %v) {{.*}} attributes {codegen = "example_npu", symbol = "example_npu_chain_1"}

// c = matmul(a, exp(a)): a's and c's composites never share a region (exp, not
// offloaded, would have to run both before and after it).
func.func @cycle(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = graph.dense %x, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %e = graph.exp %a : tensor<8x8xf32>
  %c = graph.matmul %a, %e : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  func.return %c : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @cycle
// CHECK-NEXT:    %[[A:.*]] = byoc.region (%x, %w) : {{.*}} attributes {codegen = "example_npu", symbol = "example_npu_cycle_0"}
// CHECK:         %[[E:.*]] = graph.exp %[[A]]
// CHECK-NEXT:    byoc.region (%[[A]], %[[E]]) : {{.*}} attributes {codegen = "example_npu", symbol = "example_npu_cycle_1"}

// MULTI-LABEL: func.func @cycle
// MULTI-NOT:     byoc.region

// A value used outside the chain: with single_output=false the region yields it too,
// and its other user moves after the region.
func.func @two_results(%x: tensor<3x8xf32>, %w: tensor<4x8xf32>, %v: tensor<2x4xf32>) -> (tensor<3x2xf32>, tensor<3x4xf32>) {
  %d = graph.dense %x, %w : tensor<3x8xf32>, tensor<4x8xf32> -> tensor<3x4xf32>
  %n = graph.neg %d : tensor<3x4xf32>
  %e = graph.dense %d, %v : tensor<3x4xf32>, tensor<2x4xf32> -> tensor<3x2xf32>
  func.return %e, %n : tensor<3x2xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @two_results
// CHECK:         byoc.region (%x, %w) : {{.*}} -> (tensor<3x4xf32>)
// CHECK:         byoc.region ({{.*}}, %v) : {{.*}} -> (tensor<3x2xf32>)

// MULTI-LABEL: func.func @two_results
// MULTI-NEXT:    %[[D:[^,]*]], %[[E:[^ ]*]] = byoc.region (%x, %w, %v) : (tensor<3x8xf32>, tensor<4x8xf32>, tensor<2x4xf32>) -> (tensor<3x4xf32>, tensor<3x2xf32>) {
// MULTI:           byoc.yield %{{.*}}, %{{.*}} : tensor<3x4xf32>, tensor<3x2xf32>
// MULTI:         %[[N:.*]] = graph.neg %[[D]]
// MULTI-NEXT:    func.return %[[E]], %[[N]]
