// RUN: tensorkiln-opt %s -p cancel-double-neg,dce | filecheck %s

builtin.module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = graph.neg %x : tensor<4xf32>
    %b = graph.neg %a : tensor<4xf32>
    %c = graph.relu %b : tensor<4xf32>
    func.return %c : tensor<4xf32>
  }
}

// CHECK:      func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:   %{{.*}} = graph.relu %x : tensor<4xf32>
// CHECK-NOT:    graph.neg
