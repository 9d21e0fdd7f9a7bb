// RUN: tensorkiln-opt %s | tensorkiln-opt | filecheck %s --check-prefix=ROUND
// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | tensorkiln-opt | filecheck %s

// graph.orthogonal_polynomial (dialects/graph/polynomials.py) becomes one te.dense_linalg
// per element (routine orthogonal_polynomial, the family as its kind) and one kernel: the
// element loops outermost, then the degree truncated (-1 where not finite), the special
// values and closed forms computed and selected, and the recurrence in four nested serial
// loops (blocks of 2^48, 2^32, 2^16 steps, then steps) whose trip counts are 0 once the
// value is NaN (torch's early stop; the steps after it leave NaN, so a block runs on); the
// first case that holds wins, else the recurrence.

func.func @main(%x: tensor<?x5xf32, #graph.dims<k, _>>, %n: tensor<5xf32>) -> tensor<?x5xf32, #graph.dims<k, _>> {
  %p = graph.orthogonal_polynomial %x, %n {kind = "legendre_polynomial_p"} : tensor<?x5xf32, #graph.dims<k, _>>, tensor<5xf32> -> tensor<?x5xf32, #graph.dims<k, _>>
  func.return %p : tensor<?x5xf32, #graph.dims<k, _>>
}

// ROUND: graph.orthogonal_polynomial %x, %n {kind = "legendre_polynomial_p"} : tensor<?x5xf32, #graph.dims<k, _>>, tensor<5xf32> -> tensor<?x5xf32, #graph.dims<k, _>>

// TE: te.dense_linalg %x, %n {routine = "orthogonal_polynomial", kind = "legendre_polynomial_p"} : (tensor<?x5xf32, #graph.dims<k, _>>, tensor<5xf32>) -> tensor<?x5xf32, #graph.dims<k, _>>

// CHECK-LABEL: func.func @main(
// CHECK:         func.call @orthogonal_polynomial_0(%x, %n, %out0)
// CHECK-LABEL: func.func @orthogonal_polynomial_0(
// CHECK-SAME:      attributes {tk.kernel = "orthogonal_polynomial", tk.anchor = "orthogonal_polynomial"}
// CHECK:         loop.for %[[I:.*]] = {{.*}} name("i0") role(spatial)
// CHECK-NEXT:      loop.for %[[J:.*]] = {{.*}} name("i1") role(spatial)
// CHECK-NEXT:        %[[X:.*]] = loop.load %0[%[[I]], %[[J]]] : memref<?x5xf32>
// CHECK-NEXT:        %[[N:.*]] = loop.load %1[%[[J]]] : memref<5xf32>
// CHECK:             math.trunc %[[N]] : f32
// CHECK:             %[[DEGREE:.*]] = arith.select {{.*}} : f32
// CHECK:             %[[NEGATIVE:.*]] = arith.cmpf olt, %[[DEGREE]]
// CHECK:             %[[AT_ONE:.*]] = arith.cmpf oeq
// CHECK:             scalar.remf %[[DEGREE]]
// CHECK:             %[[P:.*]] = loop.alloc() {scope = "local"} : memref<f32>
// CHECK-NEXT:        %[[Q:.*]] = loop.alloc() {scope = "local"} : memref<f32>
// CHECK:             loop.store %[[X]], %[[Q]][] : memref<f32>
// CHECK:             %[[BLOCKS:.*]] = arith.minui {{.*}} : index
// CHECK-NEXT:        loop.load %[[P]][] : memref<f32>
// CHECK-NEXT:        %[[VALUE:.*]] = loop.load %[[Q]][] : memref<f32>
// CHECK-NEXT:        %[[NAN:.*]] = arith.cmpf une, %[[VALUE]], %[[VALUE]] : f32
// CHECK-NEXT:        %[[NONE:.*]] = arith.constant 0 : index
// CHECK-NEXT:        %[[COUNT:.*]] = arith.select %[[NAN]], %[[NONE]], %[[BLOCKS]] : index
// CHECK:             loop.for {{.*}} to %[[COUNT]] {{.*}} name("scan0") role(scan)
// CHECK:               loop.for {{.*}} name("scan1") role(scan)
// CHECK:                 loop.for {{.*}} name("scan2") role(scan)
// CHECK:                   loop.for {{.*}} name("scan3") role(scan)
// CHECK:                     %[[PREVIOUS:.*]] = loop.load %[[P]][]
// CHECK-NEXT:                %[[CURRENT:.*]] = loop.load %[[Q]][]
// CHECK:                     arith.sitofp
// CHECK:                     %[[NEXT:.*]] = arith.divf
// CHECK-NEXT:                loop.store %[[CURRENT]], %[[P]][] : memref<f32>
// CHECK-NEXT:                loop.store %[[NEXT]], %[[Q]][] : memref<f32>
// CHECK:             %[[RESULT:.*]] = loop.load %[[Q]][] : memref<f32>
// CHECK:             arith.select
// CHECK:             arith.select
// CHECK:             arith.select %[[AT_ONE]]
// CHECK:             %[[OUT:.*]] = arith.select %[[NEGATIVE]]
// CHECK-NEXT:        loop.store %[[OUT]], %2[%[[I]], %[[J]]] : memref<?x5xf32>
