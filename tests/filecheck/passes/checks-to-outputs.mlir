// RUN: tensorkiln-opt %s -p checks-to-outputs | filecheck %s

// A straight-line function's run-time checks become its last results, 0-d predicates in
// the order of the checks, listed with their messages and errors in tk.checks; the caller
// raises the first that is false (Signature.results). A check whose predicate is computed
// from constants alone and holds is dropped, its ops with it. The checks inside a graph.if
// region stay (the VM runs them).

func.func @embedding(%w: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  %lo = graph.constant dense<0> : tensor<i64>
  %hi = graph.constant dense<10> : tensor<i64>
  %ge = graph.compare %ids, %lo {predicate = "ge"} : tensor<3xi64>, tensor<i64> -> tensor<3xi1>
  %lt = graph.compare %ids, %hi {predicate = "lt"} : tensor<3xi64>, tensor<i64> -> tensor<3xi1>
  %in = graph.bitwise_and %ge, %lt : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
  %f = graph.cast %in : tensor<3xi1> -> tensor<3xi8>
  %m = graph.reduce_min %f {axes = array<i64: 0>, keepdims = true} : tensor<3xi8> -> tensor<1xi8>
  %z = graph.constant dense<0> : tensor<i8>
  %ok = graph.compare %m, %z {predicate = "ne"} : tensor<1xi8>, tensor<i8> -> tensor<1xi1>
  graph.check %ok {message = "embedding: index out of range", error = "IndexError"} : tensor<1xi1>
  %first = graph.compare %lo, %lo {predicate = "eq"} : tensor<i64>, tensor<i64> -> tensor<i1>
  graph.check %first {message = "always true"} : tensor<i1>
  %least = graph.reduce_min %ids {axes = array<i64: 0>, keepdims = false} : tensor<3xi64> -> tensor<i64>
  %nonneg = graph.compare %least, %lo {predicate = "ge"} : tensor<i64>, tensor<i64> -> tensor<i1>
  graph.check %nonneg {message = "ids are not negative"} : tensor<i1>
  %e = graph.take %w, %ids {axis = 0 : i64} : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  func.return %e : tensor<3x4xf32>
}
// CHECK-LABEL: func.func @embedding(%w: tensor<10x4xf32>, %ids: tensor<3xi64>) -> (tensor<3x4xf32>, tensor<i1>, tensor<i1>)
// CHECK-SAME:    tk.checks = {{\[}}["embedding: index out of range", "IndexError"], ["ids are not negative", "RuntimeError"]]
// CHECK-NOT:     graph.check
// CHECK-NOT:     graph.compare %lo, %lo
// CHECK:         %[[OK:.*]] = graph.reshape %ok {{.*}} : tensor<1xi1> -> tensor<i1>
// CHECK:         func.return %e, %[[OK]], %nonneg : tensor<3x4xf32>, tensor<i1>, tensor<i1>

func.func @no_checks(%x: tensor<3xf32>) -> tensor<3xf32> {
  func.return %x : tensor<3xf32>
}
// CHECK-LABEL: func.func @no_checks(%x: tensor<3xf32>) -> tensor<3xf32> {
// CHECK-NEXT:    func.return %x : tensor<3xf32>

func.func @in_a_branch(%p: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %r = "graph.if"(%p, %p, %x) ({
  ^bb0(%q: tensor<i1>, %a: tensor<3xf32>):
    graph.check %q {message = "in a branch"} : tensor<i1>
    "graph.region_yield"(%a) : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%q: tensor<i1>, %a: tensor<3xf32>):
    "graph.region_yield"(%a) : (tensor<3xf32>) -> ()
  }) : (tensor<i1>, tensor<i1>, tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}
// CHECK-LABEL: func.func @in_a_branch(%p: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
// CHECK:         graph.check %q {message = "in a branch"} : tensor<i1>
// CHECK:         func.return %r : tensor<3xf32>
