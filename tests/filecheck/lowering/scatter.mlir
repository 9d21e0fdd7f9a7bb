// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | tensorkiln-opt | filecheck %s

// graph.scatter becomes te.scatter; te-to-loop copies the input into the result (a copy
// kernel), then a scatter kernel applies the updates in place, one line (here: one row,
// the scatter axis is 1) at a time, over the rows both the input and the indices have: with include_self = false the hit elements are first
// set to the identity, then combined in order; every target index is wrapped and clamped.

func.func @main(%x: tensor<?x6xf32, #graph.dims<n, _>>, %i: tensor<?x4xi64, #graph.dims<n, _>>, %u: tensor<?x4xf32, #graph.dims<n, _>>) -> tensor<?x6xf32, #graph.dims<n, _>> {
  %s = graph.scatter %x, %i, %u {axis = 1 : i64, mode = "max", include_self = false} : tensor<?x6xf32, #graph.dims<n, _>>, tensor<?x4xi64, #graph.dims<n, _>>, tensor<?x4xf32, #graph.dims<n, _>> -> tensor<?x6xf32, #graph.dims<n, _>>
  func.return %s : tensor<?x6xf32, #graph.dims<n, _>>
}

// TE:       %s = te.scatter %x, %i, %u {axis = 1 : i64, mode = "max", include_self = false} : (tensor<?x6xf32, #graph.dims<n, _>>, tensor<?x4xi64, #graph.dims<n, _>>, tensor<?x4xf32, #graph.dims<n, _>>) -> tensor<?x6xf32, #graph.dims<n, _>>

// CHECK-LABEL: func.func @main(%x: memref<?x6xf32>, %i: memref<?x4xi64>, %u: memref<?x4xf32>, %out0: memref<?x6xf32>)
// CHECK:         func.call @copy_0(%x, %out0)
// CHECK-NEXT:    func.call @scatter_0(%i, %u, %out0)
// CHECK-LABEL: func.func @scatter_0(%0: memref<?x4xi64>, %1: memref<?x4xf32>, %2: memref<?x6xf32>) attributes {tk.kernel = "scatter", tk.anchor = "scatter"}
// CHECK-NEXT:    %[[ROWS_I:.*]] = loop.dim %0, 0 : memref<?x4xi64>
// CHECK-NEXT:    %[[COUNT:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[ROWS_X:.*]] = loop.dim %2, 0 : memref<?x6xf32>
// CHECK:         %[[ROWS:.*]] = arith.minsi %[[ROWS_X]], %[[ROWS_I]] : index
// CHECK:         loop.for %[[ROW:.*]] = %{{.*}} to %[[ROWS]] step %{{.*}} name("i0") role(spatial) {
// CHECK:           loop.for %[[J:.*]] = %{{.*}} to %[[COUNT]] step %{{.*}} name("clear0") role(init) {
// CHECK-NEXT:        %[[LOWEST:.*]] = arith.constant 0xff800000 : f32
// CHECK:             loop.store %[[LOWEST]], %2[%[[ROW]], %{{.*}}] : memref<?x6xf32>
// CHECK:           loop.for %[[K:.*]] = %{{.*}} to %[[COUNT]] step %{{.*}} name("update0") role(update) {
// CHECK-NEXT:        %[[U:.*]] = loop.load %1[%[[ROW]], %[[K]]] : memref<?x4xf32>
// CHECK-NEXT:        %[[RAW:.*]] = loop.load %0[%[[ROW]], %[[K]]] : memref<?x4xi64>
// CHECK:             %[[T:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:        %[[OLD:.*]] = loop.load %2[%[[ROW]], %[[T]]] : memref<?x6xf32>
// CHECK-NEXT:        %[[NEW:.*]] = arith.maximumf %[[OLD]], %[[U]] : f32
// CHECK-NEXT:        loop.store %[[NEW]], %2[%[[ROW]], %[[T]]] : memref<?x6xf32>
