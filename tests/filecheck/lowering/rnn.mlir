// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te | tensorkiln-opt | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop,default-schedule | filecheck %s --check-prefix=SCHED

// An LSTM layer over a symbolic number of steps, in reverse, becomes te.rnn, then ONE kernel:
// blocks of batch rows (the only spatial loop), one serial loop over time (the only scan
// loop: the cell is not unrolled per step), t = steps - 1 - s, the state in workspaces the
// host allocates (h double-buffered: step s reads h[s % 2] and writes h[1 - s % 2]; the
// product's accumulators (B, gates, hidden); c). Inside the time loop, tiles of hidden
// units: each computes its units' four gates (the recurrent product as register tiles,
// the accumulators at addresses fixed while k advances) and then their cell update,
// vectorized, writing c and h to the output.
// The default schedule leaves the weight in place (7 hidden units: no whole panel of 16)
// and, batch 3 being one block and a step's product tiny, runs nothing in parallel.

func.func @main(%g: tensor<?x3x28xf32, #graph.dims<steps, _, _>>, %h: tensor<3x14xf32>) -> tensor<?x3x14xf32, #graph.dims<steps, _, _>> {
  %w = graph.constant dense<0.5> : tensor<7x28xf32>
  %b = graph.constant dense<0.25> : tensor<28xf32>
  %s = graph.rnn %g, %w, %b, %h {cell = "lstm", reverse = true} : tensor<?x3x28xf32, #graph.dims<steps, _, _>>, tensor<7x28xf32>, tensor<28xf32>, tensor<3x14xf32> -> tensor<?x3x14xf32, #graph.dims<steps, _, _>>
  func.return %s : tensor<?x3x14xf32, #graph.dims<steps, _, _>>
}

// TE:      %s = te.rnn %g, %{{.*}}, %{{.*}}, %h {cell = "lstm", reverse = true} : (tensor<?x3x28xf32, #graph.dims<steps, _, _>>, tensor<7x28xf32>, tensor<28xf32>, tensor<3x14xf32>) -> tensor<?x3x14xf32, #graph.dims<steps, _, _>>

// CHECK-LABEL: func.func @main
// CHECK:         %[[H:.*]] = loop.alloc() {scope = "global"} : memref<2x3x7xf32>
// CHECK-NEXT:    %[[ACC:.*]] = loop.alloc() {scope = "global"} : memref<3x4x7xf32>
// CHECK-NEXT:    %[[C:.*]] = loop.alloc() {scope = "global"} : memref<3x7xf32>
// CHECK-NEXT:    func.call @rnn_0(%g, %w0, %w1, %h, %out0, %[[H]], %[[ACC]], %[[C]])
// CHECK-LABEL: func.func @rnn_0
// CHECK-SAME:    attributes {tk.kernel = "rnn", tk.anchor = "rnn"}
// CHECK:         %[[STEPS:.*]] = loop.dim %0, 0 : memref<?x3x28xf32>
// CHECK:         loop.for %{{.*}} name("i0") role(spatial) {
// CHECK:           loop.for %[[S:.*]] = %{{.*}} to %[[STEPS]] step %{{.*}} name("t0") role(scan) {
// CHECK:             %[[LAST:.*]] = arith.subi %[[STEPS]], %{{.*}} : index
// CHECK-NEXT:        %[[T:.*]] = arith.subi %[[LAST]], %[[S]] : index
// CHECK:             %[[NOW:.*]] = arith.remui %[[S]], %{{.*}} : index
// CHECK:             %[[NEXT:.*]] = arith.subi %{{.*}}, %[[NOW]] : index
// CHECK:             loop.for %{{.*}} name("u0") {
// CHECK:               loop.for %[[K:.*]] = {{.*}} name("k0") role(reduction) {
// CHECK:                 loop.load %5[%[[NOW]], %{{.*}}, %[[K]]] : memref<2x3x7xf32>
// CHECK:                 loop.for %{{.*}} = {{.*}} vectorized name("j3") {
// CHECK:                   %[[W:.*]] = loop.load %1[%[[K]], %{{.*}}] : memref<7x28xf32>
// CHECK:                   arith.mulf %{{.*}}, %[[W]] fastmath<contract> : f32
// CHECK:               loop.for %{{.*}} vectorized
// CHECK:                 math.tanh
// CHECK:                 loop.store %{{.*}}, %4[%[[T]], %{{.*}}, %{{.*}}] : memref<?x3x14xf32>
// CHECK:                 loop.store %{{.*}}, %5[%[[NEXT]], %{{.*}}, %{{.*}}] : memref<2x3x7xf32>
// CHECK-NOT:     role(scan)
// CHECK:         func.return

// SCHED-LABEL: func.func @rnn_0
// SCHED-SAME:    tk.strategy = "rnn_row_blocks"
// SCHED-NOT:     parallel
// SCHED:         func.return
