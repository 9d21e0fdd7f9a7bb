// RUN: tensorkiln-opt %s --split-input-file --verify-diagnostics | filecheck %s

// graph.if / graph.while verifiers: what is wrong, named.

// Negative: a predicate with more than one element.
func.func @bad_predicate(%p: tensor<2xi1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %r = "graph.if"(%p, %x) ({
  ^bb0(%a: tensor<3xf32>):
    "graph.region_yield"(%a) : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>):
    "graph.region_yield"(%a) : (tensor<3xf32>) -> ()
  }) : (tensor<2xi1>, tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}
// CHECK: graph.if: the predicate must have one element, got tensor<2xi1>

// -----

// Negative: the body yields a different type than it carries.
func.func @bad_body(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = "graph.while"(%x) ({
  ^bb0(%a: tensor<3xf32>):
    %s = graph.reduce_sum %a {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    %z = graph.constant dense<0.0> : tensor<f32>
    %c = graph.compare %s, %z {predicate = "gt"} : tensor<f32>, tensor<f32> -> tensor<i1>
    "graph.region_yield"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>):
    %s = graph.reduce_sum %a {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    "graph.region_yield"(%s) : (tensor<f32>) -> ()
  }) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}
// CHECK: graph.while: the body region must yield the carried types
