// RUN: %tk-roundtrip
// RUN: %tk-generic-roundtrip

// graph.data_size / graph.check: a size read from a count the model computed (a size
// carrier: no elements, its first dim the new symbol; run by the VM between compiled
// functions), and a run-time assertion (its error RuntimeError unless named).

func.func @select(%x: tensor<?xf32, #graph.dims<n>>) -> tensor<?xf32, #graph.dims<u0>> {
  %z = graph.constant dense<0.0> : tensor<f32>
  %m = graph.compare %x, %z {predicate = "gt"} : tensor<?xf32, #graph.dims<n>>, tensor<f32> -> tensor<?xi1, #graph.dims<n>>
  %i = graph.cast %m : tensor<?xi1, #graph.dims<n>> -> tensor<?xi64, #graph.dims<n>>
  %c = graph.reduce_sum %i {axes = array<i64: 0>} : tensor<?xi64, #graph.dims<n>> -> tensor<i64>
  %k = graph.data_size %c {lower = 1 : i64, upper = 4096 : i64} : tensor<i64> -> tensor<?x0xi8, #graph.dims<u0, _>>
  %lim = graph.constant dense<100> : tensor<i64>
  %ok = graph.compare %c, %lim {predicate = "lt"} : tensor<i64>, tensor<i64> -> tensor<i1>
  graph.check %ok {message = "at most 99 positives"} : tensor<i1>
  %f = graph.full %k {value = 1.0 : f32, shape = array<i64: -1>, dims = #graph.dims<u0>} : (tensor<?x0xi8, #graph.dims<u0, _>>) -> tensor<?xf32, #graph.dims<u0>>
  func.return %f : tensor<?xf32, #graph.dims<u0>>
}
// CHECK-LABEL: func.func @select
// CHECK:         %k = graph.data_size %c {lower = 1 : i64, upper = 4096 : i64} : tensor<i64> -> tensor<?x0xi8, #graph.dims<u0, _>>
// CHECK:         graph.check %ok {message = "at most 99 positives"} : tensor<i1>
// CHECK:         graph.full %k

func.func @index_check(%i: tensor<5xi64>) -> tensor<5xi64> {
  %lo = graph.constant dense<0> : tensor<i64>
  %ge = graph.compare %i, %lo {predicate = "ge"} : tensor<5xi64>, tensor<i64> -> tensor<5xi1>
  %f = graph.cast %ge : tensor<5xi1> -> tensor<5xi8>
  %m = graph.reduce_min %f {axes = array<i64: 0>} : tensor<5xi8> -> tensor<i8>
  %z = graph.constant dense<0> : tensor<i8>
  %ok = graph.compare %m, %z {predicate = "ne"} : tensor<i8>, tensor<i8> -> tensor<i1>
  graph.check %ok {message = "negative index", error = "IndexError"} : tensor<i1>
  func.return %i : tensor<5xi64>
}
// CHECK-LABEL: func.func @index_check
// CHECK:         graph.check %ok {message = "negative index", error = "IndexError"} : tensor<i1>
