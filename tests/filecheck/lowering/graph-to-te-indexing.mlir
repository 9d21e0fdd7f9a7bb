// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te | tensorkiln-opt | filecheck %s

// A read at an index taken from data is made safe: a negative index wraps once (torch's
// -1 is the last element), then the index is clamped into [0, size), so the kernel never
// reads outside the buffer whatever the index tensor holds: the upper end first, so on an
// axis empty at run time the index is 0 (inside the buffer), not -1.

func.func @take(%w: tensor<10x4xf32>, %i: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
  %e = graph.take %w, %i {axis = 0 : i64} : tensor<10x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  func.return %e : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @take(
// CHECK:         %e = te.compute(%w, %i) {{.*}} attributes {tag = "take"} {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: index, %[[B:.*]]: index, %[[C:.*]]: index, %[[W:.*]]: tensor<10x4xf32>, %[[I:.*]]: tensor<2x3xi32>):
// CHECK-NEXT:      %[[P:.*]] = te.read %[[I]][%[[A]], %[[B]]] : tensor<2x3xi32>
// CHECK-NEXT:      %[[N:.*]] = arith.constant 10 : index
// CHECK-NEXT:      %[[X:.*]] = arith.index_cast %[[P]] : i32 to index
// CHECK:           %[[NEG:.*]] = arith.cmpi slt, %[[X]], %{{.*}} : index
// CHECK-NEXT:      %[[UP:.*]] = arith.addi %[[X]], %[[N]] : index
// CHECK-NEXT:      %[[WR:.*]] = arith.select %[[NEG]], %[[UP]], %[[X]] : index
// CHECK:           %[[LAST:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK-NEXT:      %[[HI:.*]] = arith.minsi %[[WR]], %[[LAST]] : index
// CHECK:           %[[AT:.*]] = arith.maxsi %[[HI]], %{{.*}} : index
// CHECK-NEXT:      %[[V:.*]] = te.read %[[W]][%[[AT]], %[[C]]] : tensor<10x4xf32>
// CHECK-NEXT:      te.yield %[[V]] : f32
