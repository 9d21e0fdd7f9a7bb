// RUN: %tk-roundtrip
// RUN: %tk-generic-roundtrip

// graph.if / graph.while (run by the VM): isolated regions ending in graph.region_yield.

func.func @branch(%p: tensor<i1>, %x: tensor<?x4xf32, #graph.dims<n, _>>) -> tensor<?x4xf32, #graph.dims<n, _>> {
  %r = "graph.if"(%p, %x) ({
  ^bb0(%a: tensor<?x4xf32, #graph.dims<n, _>>):
    %y = graph.relu %a : tensor<?x4xf32, #graph.dims<n, _>>
    "graph.region_yield"(%y) : (tensor<?x4xf32, #graph.dims<n, _>>) -> ()
  }, {
  ^bb0(%a: tensor<?x4xf32, #graph.dims<n, _>>):
    "graph.region_yield"(%a) : (tensor<?x4xf32, #graph.dims<n, _>>) -> ()
  }) : (tensor<i1>, tensor<?x4xf32, #graph.dims<n, _>>) -> tensor<?x4xf32, #graph.dims<n, _>>
  func.return %r : tensor<?x4xf32, #graph.dims<n, _>>
}
// CHECK-LABEL: func.func @branch
// CHECK:         %r = "graph.if"(%p, %x) ({
// CHECK:           graph.relu
// CHECK:           "graph.region_yield"(%{{.*}}) : (tensor<?x4xf32, #graph.dims<n, _>>) -> ()
// CHECK:         }, {
// CHECK:         }) : (tensor<i1>, tensor<?x4xf32, #graph.dims<n, _>>) -> tensor<?x4xf32, #graph.dims<n, _>>

// -----

func.func @loop(%x: tensor<3xf32>, %k: tensor<i64>) -> tensor<3xf32> {
  %r:2 = "graph.while"(%x, %k) ({
  ^bb0(%a: tensor<3xf32>, %b: tensor<i64>):
    %lim = graph.constant dense<5> : tensor<i64>
    %c = graph.compare %b, %lim {predicate = "lt"} : tensor<i64>, tensor<i64> -> tensor<i1>
    "graph.region_yield"(%c) : (tensor<i1>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>, %b: tensor<i64>):
    %d = graph.add %a, %a : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    %one = graph.constant dense<1> : tensor<i64>
    %e = graph.add %b, %one : tensor<i64>, tensor<i64> -> tensor<i64>
    "graph.region_yield"(%d, %e) : (tensor<3xf32>, tensor<i64>) -> ()
  }) : (tensor<3xf32>, tensor<i64>) -> (tensor<3xf32>, tensor<i64>)
  func.return %r#0 : tensor<3xf32>
}
// CHECK-LABEL: func.func @loop
// CHECK:         %r, %r_1 = "graph.while"(%x, %k) ({
// CHECK:           graph.compare
// CHECK:         }, {
// CHECK:           "graph.region_yield"(%{{.*}}, %{{.*}}) : (tensor<3xf32>, tensor<i64>) -> ()
// CHECK:         }) : (tensor<3xf32>, tensor<i64>) -> (tensor<3xf32>, tensor<i64>)
