// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te | tensorkiln-opt | filecheck %s

// Each graph op becomes one te.compute; broadcast operands read at fewer indices,
// contractions and reductions become te.reduce, symbolic dims stay symbolic.

func.func @main(%x: tensor<?x8xf32, #graph.dims<n, _>>, %b: tensor<8xf32>, %w: tensor<4x8xf32>) -> (tensor<?x4xf32, #graph.dims<n, _>>, tensor<?xf32, #graph.dims<n>>) {
  %y = graph.add %x, %b : tensor<?x8xf32, #graph.dims<n, _>>, tensor<8xf32> -> tensor<?x8xf32, #graph.dims<n, _>>
  %d = graph.dense %y, %w : tensor<?x8xf32, #graph.dims<n, _>>, tensor<4x8xf32> -> tensor<?x4xf32, #graph.dims<n, _>>
  %r = graph.relu %d : tensor<?x4xf32, #graph.dims<n, _>>
  %s = graph.reduce_sum %y {axes = array<i64: 1>} : tensor<?x8xf32, #graph.dims<n, _>> -> tensor<?xf32, #graph.dims<n>>
  func.return %r, %s : tensor<?x4xf32, #graph.dims<n, _>>, tensor<?xf32, #graph.dims<n>>
}

// CHECK-LABEL: func.func @main(
// CHECK:         %y = te.compute(%x, %b) {{.*}} -> tensor<?x8xf32, #graph.dims<n, _>> attributes {tag = "add"} {
// CHECK-NEXT:    ^bb0(%[[I:.*]]: index, %[[J:.*]]: index, %[[X:.*]]: tensor<?x8xf32, #graph.dims<n, _>>, %[[B:.*]]: tensor<8xf32>):
// CHECK-NEXT:      %[[XV:.*]] = te.read %[[X]][%[[I]], %[[J]]]
// CHECK-NEXT:      %[[BV:.*]] = te.read %[[B]][%[[J]]] : tensor<8xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[XV]], %[[BV]] fastmath<contract> : f32
// CHECK-NEXT:      te.yield %[[S]] : f32
// CHECK:         %d = te.compute(%y, %w) {{.*}} attributes {tag = "dense"} {
// CHECK:           %[[K:.*]] = arith.constant 8 : index
// CHECK-NEXT:      %[[ACC:.*]] = te.reduce add(%[[K]]) init 0.0 : f32 {
// CHECK:             arith.mulf
// CHECK:         %r = te.compute(%d) {{.*}} attributes {tag = "relu"} {
// CHECK:           arith.maximumf
// CHECK:         %s = te.compute(%y) {{.*}} -> tensor<?xf32, #graph.dims<n>> attributes {tag = "reduce_sum"} {
// CHECK:           te.reduce add
// CHECK:         func.return %r, %s
// CHECK-NOT:     = graph.
