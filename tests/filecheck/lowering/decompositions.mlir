// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s | tensorkiln-opt | filecheck %s --check-prefix=ROUND
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | tensorkiln-opt | filecheck %s

// The decompositions (dialects/graph/factorizations.py, spectral.py) each become one
// te.dense_linalg (the routine: the graph op's name; eigh's `lower` flag, te's default false
// not printed) and one
// kernel: the batch loops outermost (i0), LAPACK's packed results in the output (the
// pivots or tau in its last row), eigh's symmetric copy in a host workspace.
// householder_qr reflects row by row: d = v^T W accumulated in a local vector of the
// columns, then W -= tau v d. Jacobi sweeps (eigh, jacobi_svd) run 40 times at most,
// a pair rotating unless it is small enough (ugt: a NaN rotates and spreads),
// their pair loops empty once a sweep rotated nothing (a select of the trip count), each
// rotation a loop of one iteration or none.

func.func @main(%a: tensor<?x5x3xf32, #graph.dims<n, _, _>>, %s: tensor<4x4xf64>, %p: tensor<3xi32>) -> (tensor<?x6x3xf32, #graph.dims<n, _, _>>, tensor<?x6x3xf32, #graph.dims<n, _, _>>, tensor<5x4xf64>, tensor<?x3x8xf32, #graph.dims<n, _, _>>, tensor<5xi32>) {
  %lu = graph.lu_factor %a : tensor<?x5x3xf32, #graph.dims<n, _, _>> -> tensor<?x6x3xf32, #graph.dims<n, _, _>>
  %qr = graph.householder_qr %a : tensor<?x5x3xf32, #graph.dims<n, _, _>> -> tensor<?x6x3xf32, #graph.dims<n, _, _>>
  %e = graph.eigh %s {lower = false} : tensor<4x4xf64> -> tensor<5x4xf64>
  %v = graph.jacobi_svd %a : tensor<?x5x3xf32, #graph.dims<n, _, _>> -> tensor<?x3x8xf32, #graph.dims<n, _, _>>
  %perm = graph.pivot_permutation %p {size = 5 : i64} : tensor<3xi32> -> tensor<5xi32>
  func.return %lu, %qr, %e, %v, %perm : tensor<?x6x3xf32, #graph.dims<n, _, _>>, tensor<?x6x3xf32, #graph.dims<n, _, _>>, tensor<5x4xf64>, tensor<?x3x8xf32, #graph.dims<n, _, _>>, tensor<5xi32>
}

// ROUND:      graph.lu_factor %a : tensor<?x5x3xf32, #graph.dims<n, _, _>> -> tensor<?x6x3xf32, #graph.dims<n, _, _>>
// ROUND-NEXT: graph.householder_qr %a
// ROUND-NEXT: graph.eigh %s {lower = false} : tensor<4x4xf64> -> tensor<5x4xf64>
// ROUND-NEXT: graph.jacobi_svd %a : tensor<?x5x3xf32, #graph.dims<n, _, _>> -> tensor<?x3x8xf32, #graph.dims<n, _, _>>
// ROUND-NEXT: graph.pivot_permutation %p {size = 5 : i64} : tensor<3xi32> -> tensor<5xi32>

// TE:      te.dense_linalg %a {routine = "lu_factor"} : (tensor<?x5x3xf32, #graph.dims<n, _, _>>) -> tensor<?x6x3xf32, #graph.dims<n, _, _>>
// TE-NEXT: te.dense_linalg %a {routine = "householder_qr"}
// TE-NEXT: te.dense_linalg %s {routine = "eigh"} : (tensor<4x4xf64>) -> tensor<5x4xf64>
// TE-NEXT: te.dense_linalg %a {routine = "jacobi_svd"}
// TE-NEXT: te.dense_linalg %p {routine = "pivot_permutation"} : (tensor<3xi32>) -> tensor<5xi32>

// CHECK-LABEL: func.func @main(
// CHECK:         func.call @lu_factor_0(%a, %out0)
// CHECK-NEXT:    func.call @householder_qr_0(%a, %out1)
// CHECK-NEXT:    %[[W:.*]] = loop.alloc() {scope = "global"} : memref<4x4xf64>
// CHECK-NEXT:    func.call @eigh_0(%s, %out2, %[[W]])
// CHECK-NEXT:    func.call @jacobi_svd_0(%a, %out3)
// CHECK-NEXT:    func.call @pivot_permutation_0(%p, %out4)

// CHECK-LABEL: func.func @lu_factor_0(
// CHECK:         name("i0")
// the pivot, 1-based, as a float in the last row (row 5)
// CHECK:           name("scan0")
// CHECK:             %[[ONE_BASED:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK-NEXT:        loop.store %[[ONE_BASED]], %1[%{{.*}}, %{{.*}}, %{{.*}}] : memref<?x6x3xf32>
// whole rows swap: the swap loop starts at column 0
// CHECK:             name("swap0")

// CHECK-LABEL: func.func @householder_qr_0(
// CHECK:           name("scan0")
// CHECK:             name("norm0")
// CHECK:             %[[D:.*]] = loop.alloc() {scope = "local"} : memref<3xf32>
// CHECK:             name("dots0")
// CHECK:             name("scan1")
// CHECK:               name("scan2")
// CHECK:                 loop.load %[[D]][%{{.*}}] : memref<3xf32>
// CHECK:                 loop.store %{{.*}}, %[[D]][%{{.*}}] : memref<3xf32>

// CHECK-LABEL: func.func @eigh_0(
// CHECK:         name("sweep0")
// CHECK:           %[[DONE:.*]] = arith.cmpi eq
// CHECK:           %[[PAIRS:.*]] = arith.select %[[DONE]], %{{.*}}, %{{.*}} : index
// CHECK:           arith.minsi %{{.*}}, %[[PAIRS]] : index
// CHECK:           name("scan0")
// CHECK:             name("scan1")
// CHECK:               %[[ROTATE:.*]] = arith.cmpf ugt
// CHECK:               %[[ONCE:.*]] = arith.select %[[ROTATE]], %{{.*}}, %{{.*}} : index
// CHECK:               loop.for %{{.*}} = %{{.*}} to %[[ONCE]] step %{{.*}} name("rotation0")
// CHECK:                 name("rotate0")
// CHECK:                 name("rotate1")
// CHECK:                 name("rotate2")
// CHECK:         name("values0")
// CHECK:         name("sort0")

// CHECK-LABEL: func.func @jacobi_svd_0(
// CHECK:         name("sweep0")
// CHECK:           name("rotation0")
// CHECK:             name("rotate0")
// descending norms: the best so far replaced by a larger one
// CHECK:         name("sort0")
// CHECK:           arith.cmpf ogt

// CHECK-LABEL: func.func @pivot_permutation_0(
// pivots clamped into [0, size)
// CHECK:         name("scan0")
// CHECK:           arith.maxsi
// CHECK:           arith.minsi
