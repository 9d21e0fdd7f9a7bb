// RUN: tensorkiln-opt %s -p legalize-unsigned | filecheck %s

// uint8 arithmetic runs on zero-extended i32 (the cast sign-extends the signless byte,
// the mask clears the high bits) and is truncated back; data movement (transpose)
// keeps the bytes; a float cast to uint8 is clamped to [0, 255] through i32; then no
// ui8 type is left.

// CHECK-LABEL: func.func @bytes(%x: tensor<3x5xi8>, %f: tensor<3x5xf32>) -> (tensor<5x3xi8>, tensor<3x5xi8>)
// CHECK-NEXT:    %[[M1:.*]] = graph.constant {{.*}} : tensor<i32>
// CHECK-NEXT:    %[[X:.*]] = graph.cast %x : tensor<3x5xi8> -> tensor<3x5xi32>
// CHECK-NEXT:    %[[XZ:.*]] = graph.bitwise_and %[[X]], %[[M1]] : tensor<3x5xi32>, tensor<i32> -> tensor<3x5xi32>
// CHECK-NEXT:    %[[M2:.*]] = graph.constant {{.*}} : tensor<i32>
// CHECK-NEXT:    %[[X2:.*]] = graph.cast %x : tensor<3x5xi8> -> tensor<3x5xi32>
// CHECK-NEXT:    %[[XZ2:.*]] = graph.bitwise_and %[[X2]], %[[M2]] : tensor<3x5xi32>, tensor<i32> -> tensor<3x5xi32>
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[XZ]], %[[XZ2]] : tensor<3x5xi32>, tensor<3x5xi32> -> tensor<3x5xi32>
// CHECK-NEXT:    %[[B:.*]] = graph.cast %[[S]] : tensor<3x5xi32> -> tensor<3x5xi8>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[B]] {perm = array<i64: 1, 0>} : tensor<3x5xi8> -> tensor<5x3xi8>
// CHECK-NEXT:    %[[F:.*]] = graph.cast %f : tensor<3x5xf32> -> tensor<3x5xi32>
// CHECK-NEXT:    %[[LOW:.*]] = graph.constant {{.*}} : tensor<i32>
// CHECK-NEXT:    %[[FL:.*]] = graph.max %[[F]], %[[LOW]]
// CHECK-NEXT:    %[[HIGH:.*]] = graph.constant {{.*}} : tensor<i32>
// CHECK-NEXT:    %[[FH:.*]] = graph.min %[[FL]], %[[HIGH]]
// CHECK-NEXT:    %[[FB:.*]] = graph.cast %[[FH]] : tensor<3x5xi32> -> tensor<3x5xi8>
// CHECK-NEXT:    func.return %[[T]], %[[FB]] : tensor<5x3xi8>, tensor<3x5xi8>
// CHECK-NOT:   ui8
func.func @bytes(%x: tensor<3x5xui8>, %f: tensor<3x5xf32>) -> (tensor<5x3xui8>, tensor<3x5xui8>) {
  %s = graph.add %x, %x : tensor<3x5xui8>, tensor<3x5xui8> -> tensor<3x5xui8>
  %t = graph.transpose %s {perm = array<i64: 1, 0>} : tensor<3x5xui8> -> tensor<5x3xui8>
  %b = graph.cast %f : tensor<3x5xf32> -> tensor<3x5xui8>
  func.return %t, %b : tensor<5x3xui8>, tensor<3x5xui8>
}
