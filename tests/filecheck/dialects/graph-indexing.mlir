// RUN: %tk-roundtrip
// RUN: %tk-generic-roundtrip

// Round trip of the indexing op family (defaults are not printed).

func.func @take_gather(%x: tensor<6x5xf32>, %i: tensor<2x3xi64>, %g: tensor<6x2xi32>, %s: tensor<?x5xf32, #graph.dims<n, _>>, %si: tensor<?x3xi64, #graph.dims<n, _>>) -> (tensor<6x2x3xf32>, tensor<2x3x5xf32>, tensor<6x2xf32>, tensor<?x2x3xf32, #graph.dims<n, _, _>>, tensor<?x3xf32, #graph.dims<n, _>>) {
  %t = graph.take %x, %i {axis = 1 : i64} : tensor<6x5xf32>, tensor<2x3xi64> -> tensor<6x2x3xf32>
  %t0 = graph.take %x, %i {axis = 0 : i64} : tensor<6x5xf32>, tensor<2x3xi64> -> tensor<2x3x5xf32>
  %g1 = graph.gather %x, %g {axis = 1 : i64} : tensor<6x5xf32>, tensor<6x2xi32> -> tensor<6x2xf32>
  %ts = graph.take %s, %i {axis = 1 : i64} : tensor<?x5xf32, #graph.dims<n, _>>, tensor<2x3xi64> -> tensor<?x2x3xf32, #graph.dims<n, _, _>>
  %gs = graph.gather %s, %si {axis = 1 : i64} : tensor<?x5xf32, #graph.dims<n, _>>, tensor<?x3xi64, #graph.dims<n, _>> -> tensor<?x3xf32, #graph.dims<n, _>>
  func.return %t, %t0, %g1, %ts, %gs : tensor<6x2x3xf32>, tensor<2x3x5xf32>, tensor<6x2xf32>, tensor<?x2x3xf32, #graph.dims<n, _, _>>, tensor<?x3xf32, #graph.dims<n, _>>
}
func.func @scan_sort(%x: tensor<4x7xf32>, %k: tensor<4x7xi32>) -> (tensor<4x7xf32>, tensor<4xi64>, tensor<1x7xi64>, tensor<4x7xi64>, tensor<4x3xi64>, tensor<4x7xf32>) {
  %c = graph.cumsum %x {axis = 1 : i64} : tensor<4x7xf32>
  %a = graph.argmax %x {axis = 1 : i64} : tensor<4x7xf32> -> tensor<4xi64>
  %b = graph.argmin %k {axis = 0 : i64, keepdims = true} : tensor<4x7xi32> -> tensor<1x7xi64>
  %s = graph.argsort %x {axis = 1 : i64} : tensor<4x7xf32> -> tensor<4x7xi64>
  %t = graph.argsort %k {axis = 1 : i64, descending = true, k = 3 : i64} : tensor<4x7xi32> -> tensor<4x3xi64>
  %f = graph.flip %x {axes = array<i64: 0, 1>} : tensor<4x7xf32>
  func.return %c, %a, %b, %s, %t, %f : tensor<4x7xf32>, tensor<4xi64>, tensor<1x7xi64>, tensor<4x7xi64>, tensor<4x3xi64>, tensor<4x7xf32>
}
func.func @pad_full(%x: tensor<4x5xf32>, %k: tensor<3xi32>, %s: tensor<?x5xf32, #graph.dims<n, _>>) -> (tensor<6x3xf32>, tensor<4xi32>, tensor<?x3xf32, #graph.dims<n, _>>, tensor<2x2xi1>, tensor<?xi64, #graph.dims<n>>, tensor<?xf32, #graph.dims<n>>) {
  %p = graph.pad %x {low = array<i64: 1, -1>, high = array<i64: 1, -1>, value = -1.500000e+00 : f32} : tensor<4x5xf32> -> tensor<6x3xf32>
  %q = graph.pad %k {low = array<i64: 0>, high = array<i64: 1>, value = 7 : i32} : tensor<3xi32> -> tensor<4xi32>
  %z = graph.full %s {value = 0.000000e+00 : f32, shape = array<i64: -1, 3>, dims = #graph.dims<n, _>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?x3xf32, #graph.dims<n, _>>
  %b = graph.full {value = true, shape = array<i64: 2, 2>} : () -> tensor<2x2xi1>
  %r = graph.arange %s {start = 0 : i64, step = 1 : i64, shape = array<i64: -1>, dims = #graph.dims<n>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?xi64, #graph.dims<n>>
  %h = graph.arange %s {start = 5.000000e-01 : f32, step = 2.500000e-01 : f32, shape = array<i64: -1>, dims = #graph.dims<n>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?xf32, #graph.dims<n>>
  func.return %p, %q, %z, %b, %r, %h : tensor<6x3xf32>, tensor<4xi32>, tensor<?x3xf32, #graph.dims<n, _>>, tensor<2x2xi1>, tensor<?xi64, #graph.dims<n>>, tensor<?xf32, #graph.dims<n>>
}

func.func @scatter(%x: tensor<6x5xf32>, %i: tensor<4x5xi64>, %u: tensor<4x7xf32>, %s: tensor<?x5xf32, #graph.dims<n, _>>, %si: tensor<?x2xi32, #graph.dims<n, _>>, %su: tensor<?x2xf32, #graph.dims<n, _>>) -> (tensor<6x5xf32>, tensor<6x5xf32>, tensor<?x5xf32, #graph.dims<n, _>>) {
  %a = graph.scatter %x, %i, %u {axis = 0 : i64} : tensor<6x5xf32>, tensor<4x5xi64>, tensor<4x7xf32> -> tensor<6x5xf32>
  %b = graph.scatter %x, %i, %u {axis = 0 : i64, mode = "max", include_self = false} : tensor<6x5xf32>, tensor<4x5xi64>, tensor<4x7xf32> -> tensor<6x5xf32>
  %c = graph.scatter %s, %si, %su {axis = 1 : i64, mode = "add"} : tensor<?x5xf32, #graph.dims<n, _>>, tensor<?x2xi32, #graph.dims<n, _>>, tensor<?x2xf32, #graph.dims<n, _>> -> tensor<?x5xf32, #graph.dims<n, _>>
  func.return %a, %b, %c : tensor<6x5xf32>, tensor<6x5xf32>, tensor<?x5xf32, #graph.dims<n, _>>
}

// CHECK-LABEL:  func.func @take_gather(%x: tensor<6x5xf32>, %i: tensor<2x3xi64>, %g: tensor<6x2xi32>, %s: tensor<?x5xf32, #graph.dims<n, _>>, %si: tensor<?x3xi64, #graph.dims<n, _>>) -> (tensor<6x2x3xf32>, tensor<2x3x5xf32>, tensor<6x2xf32>, tensor<?x2x3xf32, #graph.dims<n, _, _>>, tensor<?x3xf32, #graph.dims<n, _>>) {
// CHECK-NEXT:      %t = graph.take %x, %i {axis = 1 : i64} : tensor<6x5xf32>, tensor<2x3xi64> -> tensor<6x2x3xf32>
// CHECK-NEXT:      %t0 = graph.take %x, %i {axis = 0 : i64} : tensor<6x5xf32>, tensor<2x3xi64> -> tensor<2x3x5xf32>
// CHECK-NEXT:      %g1 = graph.gather %x, %g {axis = 1 : i64} : tensor<6x5xf32>, tensor<6x2xi32> -> tensor<6x2xf32>
// CHECK-NEXT:      %ts = graph.take %s, %i {axis = 1 : i64} : tensor<?x5xf32, #graph.dims<n, _>>, tensor<2x3xi64> -> tensor<?x2x3xf32, #graph.dims<n, _, _>>
// CHECK-NEXT:      %gs = graph.gather %s, %si {axis = 1 : i64} : tensor<?x5xf32, #graph.dims<n, _>>, tensor<?x3xi64, #graph.dims<n, _>> -> tensor<?x3xf32, #graph.dims<n, _>>
// CHECK-NEXT:      func.return %t, %t0, %g1, %ts, %gs : tensor<6x2x3xf32>, tensor<2x3x5xf32>, tensor<6x2xf32>, tensor<?x2x3xf32, #graph.dims<n, _, _>>, tensor<?x3xf32, #graph.dims<n, _>>
// CHECK-NEXT:    }
// CHECK-LABEL:  func.func @scan_sort(%x: tensor<4x7xf32>, %k: tensor<4x7xi32>) -> (tensor<4x7xf32>, tensor<4xi64>, tensor<1x7xi64>, tensor<4x7xi64>, tensor<4x3xi64>, tensor<4x7xf32>) {
// CHECK-NEXT:      %c = graph.cumsum %x {axis = 1 : i64} : tensor<4x7xf32>
// CHECK-NEXT:      %a = graph.argmax %x {axis = 1 : i64} : tensor<4x7xf32> -> tensor<4xi64>
// CHECK-NEXT:      %b = graph.argmin %k {axis = 0 : i64, keepdims = true} : tensor<4x7xi32> -> tensor<1x7xi64>
// CHECK-NEXT:      %s = graph.argsort %x {axis = 1 : i64} : tensor<4x7xf32> -> tensor<4x7xi64>
// CHECK-NEXT:      %t = graph.argsort %k {axis = 1 : i64, descending = true, k = 3 : i64} : tensor<4x7xi32> -> tensor<4x3xi64>
// CHECK-NEXT:      %f = graph.flip %x {axes = array<i64: 0, 1>} : tensor<4x7xf32>
// CHECK-NEXT:      func.return %c, %a, %b, %s, %t, %f : tensor<4x7xf32>, tensor<4xi64>, tensor<1x7xi64>, tensor<4x7xi64>, tensor<4x3xi64>, tensor<4x7xf32>
// CHECK-NEXT:    }
// CHECK-LABEL:  func.func @pad_full(%x: tensor<4x5xf32>, %k: tensor<3xi32>, %s: tensor<?x5xf32, #graph.dims<n, _>>) -> (tensor<6x3xf32>, tensor<4xi32>, tensor<?x3xf32, #graph.dims<n, _>>, tensor<2x2xi1>, tensor<?xi64, #graph.dims<n>>, tensor<?xf32, #graph.dims<n>>) {
// CHECK-NEXT:      %p = graph.pad %x {low = array<i64: 1, -1>, high = array<i64: 1, -1>, value = -1.500000e+00 : f32} : tensor<4x5xf32> -> tensor<6x3xf32>
// CHECK-NEXT:      %q = graph.pad %k {low = array<i64: 0>, high = array<i64: 1>, value = 7 : i32} : tensor<3xi32> -> tensor<4xi32>
// CHECK-NEXT:      %z = graph.full %s {value = 0.000000e+00 : f32, shape = array<i64: -1, 3>, dims = #graph.dims<n, _>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?x3xf32, #graph.dims<n, _>>
// CHECK-NEXT:      %b = graph.full {value = true, shape = array<i64: 2, 2>} : () -> tensor<2x2xi1>
// CHECK-NEXT:      %r = graph.arange %s {start = 0 : i64, step = 1 : i64, shape = array<i64: -1>, dims = #graph.dims<n>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?xi64, #graph.dims<n>>
// CHECK-NEXT:      %h = graph.arange %s {start = 5.000000e-01 : f32, step = 2.500000e-01 : f32, shape = array<i64: -1>, dims = #graph.dims<n>} : (tensor<?x5xf32, #graph.dims<n, _>>) -> tensor<?xf32, #graph.dims<n>>
// CHECK-NEXT:      func.return %p, %q, %z, %b, %r, %h : tensor<6x3xf32>, tensor<4xi32>, tensor<?x3xf32, #graph.dims<n, _>>, tensor<2x2xi1>, tensor<?xi64, #graph.dims<n>>, tensor<?xf32, #graph.dims<n>>
// CHECK-NEXT:    }
// CHECK-LABEL:  func.func @scatter(%x: tensor<6x5xf32>, %i: tensor<4x5xi64>, %u: tensor<4x7xf32>, %s: tensor<?x5xf32, #graph.dims<n, _>>, %si: tensor<?x2xi32, #graph.dims<n, _>>, %su: tensor<?x2xf32, #graph.dims<n, _>>) -> (tensor<6x5xf32>, tensor<6x5xf32>, tensor<?x5xf32, #graph.dims<n, _>>) {
// CHECK-NEXT:      %a = graph.scatter %x, %i, %u {axis = 0 : i64} : tensor<6x5xf32>, tensor<4x5xi64>, tensor<4x7xf32> -> tensor<6x5xf32>
// CHECK-NEXT:      %b = graph.scatter %x, %i, %u {axis = 0 : i64, mode = "max", include_self = false} : tensor<6x5xf32>, tensor<4x5xi64>, tensor<4x7xf32> -> tensor<6x5xf32>
// CHECK-NEXT:      %c = graph.scatter %s, %si, %su {axis = 1 : i64, mode = "add"} : tensor<?x5xf32, #graph.dims<n, _>>, tensor<?x2xi32, #graph.dims<n, _>>, tensor<?x2xf32, #graph.dims<n, _>> -> tensor<?x5xf32, #graph.dims<n, _>>
// CHECK-NEXT:      func.return %a, %b, %c : tensor<6x5xf32>, tensor<6x5xf32>, tensor<?x5xf32, #graph.dims<n, _>>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
