// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te | tensorkiln-opt | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop,default-schedule | filecheck %s --check-prefix=SCHED

// An LSTM layer over a symbolic number of steps, in reverse, becomes te.rnn, then ONE kernel:
// blocks of batch rows (the only spatial loop), one serial loop over time (the only scan
// loop: the cell is not unrolled per step), t = steps - 1 - s, the state in workspaces the
// host allocates (h, the product's accumulators, c). Inside the time loop: the recurrent
// product in register tiles (the accumulators at addresses fixed while k advances), then
// the cell vectorized over the hidden units, writing c and then h to the output.
// The default schedule packs the constant weight into column panels of 64 (here 28
// columns: no whole panel, left as it is) and keeps a batch of 3 on one thread.

func.func @main(%g: tensor<?x3x28xf32, #graph.dims<steps, _, _>>, %h: tensor<3x14xf32>) -> tensor<?x3x14xf32, #graph.dims<steps, _, _>> {
  %w = graph.constant dense<0.5> : tensor<7x28xf32>
  %b = graph.constant dense<0.25> : tensor<28xf32>
  %s = graph.rnn %g, %w, %b, %h {cell = "lstm", reverse = true} : tensor<?x3x28xf32, #graph.dims<steps, _, _>>, tensor<7x28xf32>, tensor<28xf32>, tensor<3x14xf32> -> tensor<?x3x14xf32, #graph.dims<steps, _, _>>
  func.return %s : tensor<?x3x14xf32, #graph.dims<steps, _, _>>
}

// TE:      %s = te.rnn %g, %{{.*}}, %{{.*}}, %h {cell = "lstm", reverse = true} : (tensor<?x3x28xf32, #graph.dims<steps, _, _>>, tensor<7x28xf32>, tensor<28xf32>, tensor<3x14xf32>) -> tensor<?x3x14xf32, #graph.dims<steps, _, _>>

// CHECK-LABEL: func.func @main
// CHECK:         %[[H:.*]] = loop.alloc() {scope = "global"} : memref<3x7xf32>
// CHECK-NEXT:    %[[ACC:.*]] = loop.alloc() {scope = "global"} : memref<3x28xf32>
// CHECK-NEXT:    %[[C:.*]] = loop.alloc() {scope = "global"} : memref<3x7xf32>
// CHECK-NEXT:    func.call @rnn_0(%g, %w0, %w1, %h, %out0, %[[H]], %[[ACC]], %[[C]])
// CHECK-LABEL: func.func @rnn_0
// CHECK-SAME:    attributes {tk.kernel = "rnn", tk.anchor = "rnn"}
// CHECK:         %[[STEPS:.*]] = loop.dim %0, 0 : memref<?x3x28xf32>
// CHECK:         loop.for %{{.*}} name("i0") role(spatial) {
// CHECK:           loop.for %[[S:.*]] = %{{.*}} to %[[STEPS]] step %{{.*}} name("t0") role(scan) {
// CHECK:             %[[LAST:.*]] = arith.subi %[[STEPS]], %{{.*}} : index
// CHECK-NEXT:        %[[T:.*]] = arith.subi %[[LAST]], %[[S]] : index
// CHECK:             loop.for %[[K:.*]] = {{.*}} name("k0") role(reduction) {
// CHECK:               loop.for %[[J:.*]] = {{.*}} vectorized name("j3") {
// CHECK-NEXT:            %[[W:.*]] = loop.load %1[%[[K]], %[[J]]] : memref<7x28xf32>
// CHECK:                 arith.mulf %{{.*}}, %[[W]] fastmath<contract> : f32
// CHECK:             loop.for %{{.*}} vectorized
// CHECK:               math.tanh
// CHECK:               loop.store %{{.*}}, %4[%[[T]], %{{.*}}, %{{.*}}] : memref<?x3x14xf32>
// CHECK-NOT:     role(scan)
// CHECK:         func.return

// SCHED-LABEL: func.func @rnn_0
// SCHED-SAME:    tk.strategy = "rnn_row_blocks"
// SCHED-NOT:     parallel
// SCHED:         func.return
