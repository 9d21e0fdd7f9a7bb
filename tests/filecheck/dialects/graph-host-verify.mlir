// RUN: tensorkiln-opt %s --split-input-file --verify-diagnostics | filecheck %s

// graph.data_size / graph.check verifiers: what is wrong, named.

func.func @count_not_0d(%c: tensor<2xi64>) -> tensor<?x0xi8, #graph.dims<u0, _>> {
  %k = graph.data_size %c : tensor<2xi64> -> tensor<?x0xi8, #graph.dims<u0, _>>
  func.return %k : tensor<?x0xi8, #graph.dims<u0, _>>
}
// CHECK: graph.data_size: the count must be a 0-d integer tensor, got tensor<2xi64>

// -----

func.func @not_a_carrier(%c: tensor<i64>) -> tensor<?xi8, #graph.dims<u0>> {
  %k = graph.data_size %c : tensor<i64> -> tensor<?xi8, #graph.dims<u0>>
  func.return %k : tensor<?xi8, #graph.dims<u0>>
}
// CHECK: graph.data_size: the result must be a size carrier

// -----

func.func @bad_range(%c: tensor<i64>) -> tensor<?x0xi8, #graph.dims<u0, _>> {
  %k = graph.data_size %c {lower = 5 : i64, upper = 2 : i64} : tensor<i64> -> tensor<?x0xi8, #graph.dims<u0, _>>
  func.return %k : tensor<?x0xi8, #graph.dims<u0, _>>
}
// CHECK: graph.data_size: bad range [5, 2]

// -----

func.func @check_of_many(%p: tensor<3xi1>) {
  graph.check %p {message = "no"} : tensor<3xi1>
  func.return
}
// CHECK: graph.check: the predicate must have one element, got tensor<3xi1>

// -----

func.func @check_unknown_error(%p: tensor<i1>) {
  graph.check %p {message = "no", error = "KeyError"} : tensor<i1>
  func.return
}
// CHECK: graph.check: error must be one of RuntimeError, IndexError, got 'KeyError'
