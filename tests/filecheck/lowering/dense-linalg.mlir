// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te | tensorkiln-opt | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | tensorkiln-opt | filecheck %s

// Each dense linear algebra op becomes one te.dense_linalg (its routine the graph op);
// te-to-loop writes one kernel per op: the batch loops outermost (i0: one matrix each),
// inside them the routine's serial loops. solve and det_factors copy each matrix into a
// workspace the host allocates (one matrix per matrix of the batch) and eliminate there
// with partial pivoting: the pivot row p is the first of largest |w[r, j]| (a local
// maximum and position), rows j and p swap, and each row below subtracts a multiple of
// row j (0 when the pivot is 0). det_factors stores each pivot, negated when rows swapped.
// The main loops are scan0..2; loops over a triangle run min(n, stop - start) times.

func.func @main(%a: tensor<?x3x3xf32, #graph.dims<n, _, _>>, %b: tensor<3x2xf32>) -> (tensor<?x3x2xf32, #graph.dims<n, _, _>>, tensor<?x3xf32, #graph.dims<n, _>>, tensor<3x3xf32>) {
  %x = graph.solve %a, %b : tensor<?x3x3xf32, #graph.dims<n, _, _>>, tensor<3x2xf32> -> tensor<?x3x2xf32, #graph.dims<n, _, _>>
  %f = graph.det_factors %a : tensor<?x3x3xf32, #graph.dims<n, _, _>> -> tensor<?x3xf32, #graph.dims<n, _>>
  %c = graph.constant dense<[[4.0, 2.0, 0.0], [2.0, 5.0, 1.0], [0.0, 1.0, 3.0]]> : tensor<3x3xf32>
  %l = graph.cholesky %c : tensor<3x3xf32>
  func.return %x, %f, %l : tensor<?x3x2xf32, #graph.dims<n, _, _>>, tensor<?x3xf32, #graph.dims<n, _>>, tensor<3x3xf32>
}

// TE:       %x = te.dense_linalg %a, %b {routine = "solve"} : (tensor<?x3x3xf32, #graph.dims<n, _, _>>, tensor<3x2xf32>) -> tensor<?x3x2xf32, #graph.dims<n, _, _>>
// TE-NEXT:  %f = te.dense_linalg %a {routine = "det_factors"} : (tensor<?x3x3xf32, #graph.dims<n, _, _>>) -> tensor<?x3xf32, #graph.dims<n, _>>
// TE:       %l = te.dense_linalg %c {routine = "cholesky"} : (tensor<3x3xf32>) -> tensor<3x3xf32>

// CHECK-LABEL: func.func @main(%a: memref<?x3x3xf32>, %b: memref<3x2xf32>, %out0: memref<?x3x2xf32>, %out1: memref<?x3xf32>, %out2: memref<3x3xf32>, %w0: memref<3x3xf32>)
// CHECK-NEXT:    %[[N:.*]] = loop.dim %a, 0 : memref<?x3x3xf32>
// CHECK-NEXT:    %[[W1:.*]] = loop.alloc(%[[N]]) {scope = "global"} : memref<?x3x3xf32>
// CHECK-NEXT:    func.call @solve_0(%a, %b, %out0, %[[W1]])
// CHECK-NEXT:    %[[W2:.*]] = loop.alloc(%[[N]]) {scope = "global"} : memref<?x3x3xf32>
// CHECK-NEXT:    func.call @det_factors_0(%a, %out1, %[[W2]])
// CHECK-NEXT:    func.call @cholesky_0(%w0, %out2)
// CHECK-NEXT:    loop.free %[[W1]] : memref<?x3x3xf32>
// CHECK-NEXT:    loop.free %[[W2]] : memref<?x3x3xf32>

// CHECK-LABEL: func.func @solve_0(%0: memref<?x3x3xf32>, %1: memref<3x2xf32>, %2: memref<?x3x2xf32>, %3: memref<?x3x3xf32>) attributes {tk.kernel = "solve", tk.anchor = "solve"}
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i0") role(spatial) {
// CHECK:           loop.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("copy0") {
// CHECK:             loop.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("copy1") {
// CHECK-NEXT:          %[[V:.*]] = loop.load %1[%[[R]], %[[C]]] : memref<3x2xf32>
// CHECK-NEXT:          loop.store %[[V]], %2[%[[I]], %[[R]], %[[C]]] : memref<?x3x2xf32>
// CHECK:           name("copy3")
// CHECK:           %[[BEST:.*]] = loop.alloc() {scope = "local"} : memref<f32>
// CHECK-NEXT:      %[[WHERE:.*]] = loop.alloc() {scope = "local"} : memref<i64>
// CHECK:           loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("scan0") role(scan) {
// CHECK:             loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} name("pivot0") {
// CHECK:               %[[TAKE:.*]] = arith.cmpf ogt, %{{.*}}, %{{.*}} : f32
// CHECK:               arith.select %[[TAKE]], %{{.*}}, %{{.*}} : i64
// CHECK:             %[[P64:.*]] = loop.load %[[WHERE]][] : memref<i64>
// CHECK-NEXT:        %[[P:.*]] = arith.index_cast %[[P64]] : i64 to index
// CHECK:             loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} name("swap0") {
// CHECK:             loop.for %[[Q:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("swap1") {
// CHECK-NEXT:          %[[TOP:.*]] = loop.load %2[%[[I]], %[[J]], %[[Q]]] : memref<?x3x2xf32>
// CHECK-NEXT:          %[[PIV:.*]] = loop.load %2[%[[I]], %[[P]], %[[Q]]] : memref<?x3x2xf32>
// CHECK-NEXT:          loop.store %[[PIV]], %2[%[[I]], %[[J]], %[[Q]]] : memref<?x3x2xf32>
// CHECK-NEXT:          loop.store %[[TOP]], %2[%[[I]], %[[P]], %[[Q]]] : memref<?x3x2xf32>
// CHECK:             %[[PIVOT:.*]] = loop.load %3[%[[I]], %[[J]], %[[J]]] : memref<?x3x3xf32>
// CHECK:             %[[SINGULAR:.*]] = arith.cmpf oeq, %[[PIVOT]], %{{.*}} : f32
// CHECK:             loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} name("scan1") role(scan) {
// CHECK:               %[[Q2:.*]] = arith.divf %{{.*}}, %[[PIVOT]] : f32
// CHECK:               %[[M:.*]] = arith.select %[[SINGULAR]], %{{.*}}, %[[Q2]] : f32
// CHECK:               loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} name("scan2") role(scan) {
// CHECK:                 arith.mulf %[[M]], %{{.*}} : f32
// CHECK:               loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} name("rhs0") {
// CHECK:           loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} name("solve0") {
// CHECK:             name("scale0")
// CHECK:             name("solve1")
// CHECK:               name("solve2")

// CHECK-LABEL: func.func @det_factors_0(%0: memref<?x3x3xf32>, %1: memref<?x3xf32>, %2: memref<?x3x3xf32>) attributes {tk.kernel = "det_factors", tk.anchor = "det_factors"}
// CHECK:             name("swap0")
// CHECK:             %[[PV:.*]] = loop.load %2[%[[DI:.*]], %[[DJ:.*]], %[[DJ]]] : memref<?x3x3xf32>
// CHECK-NEXT:        %[[SWAPPED:.*]] = arith.cmpi ne, %{{.*}}, %[[DJ]] : index
// CHECK-NEXT:        %[[NEG:.*]] = arith.negf %[[PV]] : f32
// CHECK-NEXT:        %[[F:.*]] = arith.select %[[SWAPPED]], %[[NEG]], %[[PV]] : f32
// CHECK-NEXT:        loop.store %[[F]], %1[%[[DI]], %[[DJ]]] : memref<?x3xf32>

// CHECK-LABEL: func.func @cholesky_0(%0: memref<3x3xf32>, %1: memref<3x3xf32>) attributes {tk.kernel = "cholesky", tk.anchor = "cholesky"}
// CHECK:         loop.for %[[CJ:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("scan0") role(scan) {
// CHECK:           name("diagonal0")
// CHECK:           %[[D:.*]] = math.sqrt %{{.*}} : f32
// CHECK-NEXT:      loop.store %[[D]], %1[%[[CJ]], %[[CJ]]] : memref<3x3xf32>
// CHECK:           name("scan1") role(scan)
// CHECK:             name("scan2") role(scan)
// CHECK:             arith.divf %{{.*}}, %[[D]] : f32
// CHECK:           name("upper0")
