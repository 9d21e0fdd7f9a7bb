// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | tensorkiln-opt | filecheck %s

// The host function takes buffers (inputs, then outputs, then weights), allocates
// temporaries with their symbolic sizes and calls one kernel per te.compute;
// a kernel is a loop nest, a reduction accumulates in a local buffer.

func.func @main(%x: tensor<?x8xf32, #graph.dims<n, _>>, %b: tensor<8xf32>, %w: tensor<4x8xf32>) -> (tensor<?x4xf32, #graph.dims<n, _>>, tensor<?xf32, #graph.dims<n>>) {
  %y = graph.add %x, %b : tensor<?x8xf32, #graph.dims<n, _>>, tensor<8xf32> -> tensor<?x8xf32, #graph.dims<n, _>>
  %d = graph.dense %y, %w : tensor<?x8xf32, #graph.dims<n, _>>, tensor<4x8xf32> -> tensor<?x4xf32, #graph.dims<n, _>>
  %r = graph.relu %d : tensor<?x4xf32, #graph.dims<n, _>>
  %s = graph.reduce_sum %y {axes = array<i64: 1>} : tensor<?x8xf32, #graph.dims<n, _>> -> tensor<?xf32, #graph.dims<n>>
  func.return %r, %s : tensor<?x4xf32, #graph.dims<n, _>>, tensor<?xf32, #graph.dims<n>>
}

// CHECK-LABEL: func.func @main(%x: memref<?x8xf32>, %b: memref<8xf32>, %w: memref<4x8xf32>, %out0: memref<?x4xf32>, %out1: memref<?xf32>)
// CHECK-SAME:      tk.entry = {inputs = 3 : i64, outputs = 2 : i64}, tk.weights = []
// CHECK-NEXT:    %[[N:.*]] = loop.dim %x, 0 : memref<?x8xf32>
// CHECK-NEXT:    %[[Y:.*]] = loop.alloc(%[[N]]) {scope = "global"} : memref<?x8xf32>
// CHECK-NEXT:    func.call @add_0(%x, %b, %[[Y]])
// CHECK-NEXT:    %[[D:.*]] = loop.alloc(%[[N]]) {scope = "global"} : memref<?x4xf32>
// CHECK-NEXT:    func.call @dense_0(%[[Y]], %w, %[[D]])
// CHECK-NEXT:    func.call @relu_0(%[[D]], %out0)
// CHECK-NEXT:    func.call @reduce_sum_0(%[[Y]], %out1)
// CHECK-NEXT:    loop.free %[[Y]]
// CHECK-NEXT:    loop.free %[[D]]
// CHECK-NEXT:    func.return

// CHECK-LABEL: func.func @add_0(
// CHECK-SAME:      attributes {tk.kernel = "add", tk.anchor = "add"}
// CHECK:         loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i0") role(spatial) {
// CHECK-NEXT:      loop.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i1") role(spatial) {
// CHECK-NEXT:        %[[A:.*]] = loop.load %{{.*}}[%[[I]], %[[J]]] : memref<?x8xf32>
// CHECK-NEXT:        %[[B:.*]] = loop.load %{{.*}}[%[[J]]] : memref<8xf32>
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[A]], %[[B]] fastmath<contract> : f32
// CHECK-NEXT:        loop.store %[[S]], %{{.*}}[%[[I]], %[[J]]] : memref<?x8xf32>

// CHECK-LABEL: func.func @dense_0(
// CHECK:             %[[ACC:.*]] = loop.alloc() {scope = "local"} : memref<f32>
// CHECK-NEXT:        %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:        loop.store %[[ZERO]], %[[ACC]][] : memref<f32>
// CHECK:             loop.for %{{.*}} name("k0") role(reduction) {
// CHECK:               %[[P:.*]] = arith.mulf
// CHECK-NEXT:          %[[OLD:.*]] = loop.load %[[ACC]][] : memref<f32>
// CHECK-NEXT:          %[[NEW:.*]] = arith.addf %[[OLD]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          loop.store %[[NEW]], %[[ACC]][] : memref<f32>
// CHECK:             %[[R:.*]] = loop.load %[[ACC]][] : memref<f32>
// CHECK-NEXT:        loop.store %[[R]], %{{.*}} : memref<?x4xf32>

// CHECK-LABEL: func.func @relu_0(
// CHECK-LABEL: func.func @reduce_sum_0(
// CHECK-NOT:     te.
