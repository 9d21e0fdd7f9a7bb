// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te | tensorkiln-opt | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | tensorkiln-opt | filecheck %s

// A scan becomes te.scan (tagged with its graph op); te-to-loop writes one kernel: a loop
// per line (every axis but the scan axis: i0, i1, the output loops), in each line a local
// running value, initialised once, then a serial loop along the axis that combines it
// with each element (no fast-math flags: element order) and stores it. cumargmax carries
// the running maximum and its position: an element is taken when it is NaN or >= it.
// logcumsumexp adds log1p(exp(lo - hi)) to the larger of the running value and the
// element (the element itself when both are the same infinity).

func.func @main(%x: tensor<?x7x3xf32, #graph.dims<n, _, _>>) -> (tensor<?x7x3xf32, #graph.dims<n, _, _>>, tensor<?x7x3xi64, #graph.dims<n, _, _>>, tensor<?x7x3xf32, #graph.dims<n, _, _>>) {
  %c = graph.cumsum %x {axis = 1 : i64} : tensor<?x7x3xf32, #graph.dims<n, _, _>>
  %m = graph.cumargmax %x {axis = 0 : i64} : tensor<?x7x3xf32, #graph.dims<n, _, _>> -> tensor<?x7x3xi64, #graph.dims<n, _, _>>
  %l = graph.logcumsumexp %x {axis = 2 : i64} : tensor<?x7x3xf32, #graph.dims<n, _, _>>
  func.return %c, %m, %l : tensor<?x7x3xf32, #graph.dims<n, _, _>>, tensor<?x7x3xi64, #graph.dims<n, _, _>>, tensor<?x7x3xf32, #graph.dims<n, _, _>>
}

// TE:       %c = te.scan %x {tag = "cumsum", axis = 1 : i64, combiner = "add"} : (tensor<?x7x3xf32, #graph.dims<n, _, _>>) -> tensor<?x7x3xf32, #graph.dims<n, _, _>>
// TE-NEXT:  %m = te.scan %x {tag = "cumargmax", axis = 0 : i64, combiner = "argmax"} : (tensor<?x7x3xf32, #graph.dims<n, _, _>>) -> tensor<?x7x3xi64, #graph.dims<n, _, _>>

// TE-NEXT:  %l = te.scan %x {tag = "logcumsumexp", axis = 2 : i64, combiner = "logaddexp"} : (tensor<?x7x3xf32, #graph.dims<n, _, _>>) -> tensor<?x7x3xf32, #graph.dims<n, _, _>>

// CHECK-LABEL: func.func @main(%x: memref<?x7x3xf32>, %out0: memref<?x7x3xf32>, %out1: memref<?x7x3xi64>, %out2: memref<?x7x3xf32>)
// CHECK:         func.call @cumsum_0(%x, %out0)
// CHECK-NEXT:    func.call @cumargmax_0(%x, %out1)
// CHECK-NEXT:    func.call @logcumsumexp_0(%x, %out2)
// CHECK-NEXT:    func.return

// CHECK-LABEL: func.func @cumsum_0(%0: memref<?x7x3xf32>, %1: memref<?x7x3xf32>) attributes {tk.kernel = "cumsum", tk.anchor = "cumsum"}
// CHECK:         %[[N:.*]] = loop.dim %0, 0 : memref<?x7x3xf32>
// CHECK-NEXT:    %[[SEVEN:.*]] = arith.constant 7 : index
// CHECK-NEXT:    %[[THREE:.*]] = arith.constant 3 : index
// CHECK:         loop.for %[[I0:.*]] = %{{.*}} to %[[N]] step %{{.*}} name("i0") role(spatial) {
// CHECK-NEXT:      loop.for %[[I1:.*]] = %{{.*}} to %[[THREE]] step %{{.*}} name("i1") role(spatial) {
// CHECK-NEXT:        %[[ACC:.*]] = loop.alloc() {scope = "local"} : memref<f32>
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        loop.store %[[ZERO]], %[[ACC]][] : memref<f32>
// CHECK:             loop.for %[[K:.*]] = %{{.*}} to %[[SEVEN]] step %{{.*}} name("scan0") role(scan) {
// CHECK-NEXT:          %[[X:.*]] = loop.load %0[%[[I0]], %[[K]], %[[I1]]] : memref<?x7x3xf32>
// CHECK-NEXT:          %[[OLD:.*]] = loop.load %[[ACC]][] : memref<f32>
// CHECK-NEXT:          %[[NEW:.*]] = arith.addf %[[OLD]], %[[X]] : f32
// CHECK-NEXT:          loop.store %[[NEW]], %[[ACC]][] : memref<f32>
// CHECK-NEXT:          loop.store %[[NEW]], %1[%[[I0]], %[[K]], %[[I1]]] : memref<?x7x3xf32>
// CHECK-NEXT:        }

// CHECK-LABEL: func.func @cumargmax_0(%0: memref<?x7x3xf32>, %1: memref<?x7x3xi64>) attributes {tk.kernel = "cumargmax", tk.anchor = "cumargmax"}
// CHECK:         loop.for %[[J0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i0") role(spatial) {
// CHECK-NEXT:      loop.for %[[J1:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i1") role(spatial) {
// CHECK-NEXT:        %[[POS:.*]] = loop.alloc() {scope = "local"} : memref<i64>
// CHECK:             loop.store %{{.*}}, %[[POS]][] : memref<i64>
// CHECK-NEXT:        %[[BEST:.*]] = loop.alloc() {scope = "local"} : memref<f32>
// CHECK-NEXT:        %[[LOWEST:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:        loop.store %[[LOWEST]], %[[BEST]][] : memref<f32>
// CHECK:             loop.for %[[K2:.*]] = %{{.*}} to %[[N2:.*]] step %{{.*}} name("scan0") role(scan) {
// CHECK-NEXT:          %[[Y:.*]] = loop.load %0[%[[K2]], %[[J0]], %[[J1]]] : memref<?x7x3xf32>
// CHECK-NEXT:          %[[P:.*]] = loop.load %[[POS]][] : memref<i64>
// CHECK-NEXT:          %[[B:.*]] = loop.load %[[BEST]][] : memref<f32>
// CHECK-NEXT:          %[[NAN:.*]] = arith.cmpf uno, %[[Y]], %[[Y]] : f32
// CHECK-NEXT:          %[[GE:.*]] = arith.cmpf oge, %[[Y]], %[[B]] : f32
// CHECK-NEXT:          %[[TAKE:.*]] = arith.ori %[[NAN]], %[[GE]] : i1
// CHECK-NEXT:          %[[HERE:.*]] = arith.index_cast %[[K2]] : index to i64
// CHECK-NEXT:          %[[NP:.*]] = arith.select %[[TAKE]], %[[HERE]], %[[P]] : i64
// CHECK-NEXT:          %[[NB:.*]] = arith.select %[[TAKE]], %[[Y]], %[[B]] : f32
// CHECK-NEXT:          loop.store %[[NP]], %[[POS]][] : memref<i64>
// CHECK-NEXT:          loop.store %[[NB]], %[[BEST]][] : memref<f32>
// CHECK-NEXT:          loop.store %[[NP]], %1[%[[K2]], %[[J0]], %[[J1]]] : memref<?x7x3xi64>
// CHECK-NEXT:        }

// CHECK-LABEL: func.func @logcumsumexp_0(%0: memref<?x7x3xf32>, %1: memref<?x7x3xf32>) attributes {tk.kernel = "logcumsumexp", tk.anchor = "logcumsumexp"}
// CHECK:         %[[MINUS_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:    loop.store %[[MINUS_INF]], %[[TOTAL:.*]][] : memref<f32>
// CHECK:         loop.for %[[K3:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("scan0") role(scan) {
// CHECK-NEXT:      %[[Z:.*]] = loop.load %0[%{{.*}}, %{{.*}}, %[[K3]]] : memref<?x7x3xf32>
// CHECK-NEXT:      %[[R:.*]] = loop.load %[[TOTAL]][] : memref<f32>
// CHECK-NEXT:      %[[LO:.*]] = arith.minimumf %[[R]], %[[Z]] : f32
// CHECK-NEXT:      %[[HI:.*]] = arith.maximumf %[[R]], %[[Z]] : f32
// CHECK-NEXT:      %[[APART:.*]] = arith.cmpf une, %[[LO]], %[[HI]] : f32
// CHECK:           %[[FINITE:.*]] = arith.cmpf one, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      %[[GAP:.*]] = arith.subf %[[LO]], %[[HI]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[GAP]] : f32
// CHECK-NEXT:      %[[L:.*]] = math.log1p %[[E]] : f32
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[HI]], %[[L]] : f32
// CHECK-NEXT:      %[[EITHER:.*]] = arith.ori %[[APART]], %[[FINITE]] : i1
// CHECK-NEXT:      %[[NEXT:.*]] = arith.select %[[EITHER]], %[[SUM]], %[[Z]] : f32
// CHECK-NEXT:      loop.store %[[NEXT]], %[[TOTAL]][] : memref<f32>
// CHECK-NEXT:      loop.store %[[NEXT]], %1[%{{.*}}, %{{.*}}, %[[K3]]] : memref<?x7x3xf32>
