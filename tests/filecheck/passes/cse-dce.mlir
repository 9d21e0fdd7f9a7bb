// RUN: tensorkiln-opt %s --split-input-file -p cse | tensorkiln-opt --split-input-file | filecheck %s
// RUN: tensorkiln-opt %s --split-input-file -p dce | filecheck %s --check-prefix=DCE

// xDSL's own cse and dce work on the graph dialect: graph ops are Pure, graph.constant
// is ConstantLike. cse merges ops with the same name, operands, properties and types;
// constants merge only when their values are equal (dense<...> compares by bytes, so
// -0.0 and 0.0 differ; #graph.weight<...> compares by array identity).

// CHECK-LABEL: func.func @merge
// CHECK-NEXT:    %c1 = graph.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %c2 = graph.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %a = graph.add %x, %c1
// CHECK-NEXT:    %c = graph.add %x, %c2
// CHECK-NEXT:    %e = graph.exp %a
// CHECK-NEXT:    func.return %a, %a, %c, %e, %e
func.func @merge(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c1 = graph.constant dense<1.0> : tensor<4xf32>
  %c1b = graph.constant dense<1.0> : tensor<4xf32>
  %c2 = graph.constant dense<2.0> : tensor<4xf32>
  %a = graph.add %x, %c1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %b = graph.add %x, %c1b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %c = graph.add %x, %c2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %e = graph.exp %a : tensor<4xf32>
  %f = graph.exp %b : tensor<4xf32>
  func.return %a, %b, %c, %e, %f : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Not merged: signed zeros, different properties, different result types, operands
// in another order (cse knows no commutativity).
// CHECK-LABEL: func.func @keep
// CHECK:         %pz = graph.constant dense<0.000000e+00>
// CHECK-NEXT:    %nz = graph.constant dense<-0.000000e+00>
// CHECK-NEXT:    %t1 = graph.transpose %m {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %s1 = graph.reduce_sum %m {axes = array<i64: 0>}
// CHECK-NEXT:    %s2 = graph.reduce_sum %m {axes = array<i64: 1>}
// CHECK-NEXT:    %k1 = graph.cast %m : tensor<3x3xf32> -> tensor<3x3xf16>
// CHECK-NEXT:    %k2 = graph.cast %m : tensor<3x3xf32> -> tensor<3x3xi32>
// CHECK-NEXT:    %p = graph.sub %m, %t1
// CHECK-NEXT:    %q = graph.sub %t1, %m
func.func @keep(%m: tensor<3x3xf32>) -> (tensor<f32>, tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3x3xf16>, tensor<3x3xi32>, tensor<3x3xf32>, tensor<3x3xf32>) {
  %pz = graph.constant dense<0.0> : tensor<f32>
  %nz = graph.constant dense<-0.0> : tensor<f32>
  %t1 = graph.transpose %m {perm = array<i64: 1, 0>} : tensor<3x3xf32> -> tensor<3x3xf32>
  %s1 = graph.reduce_sum %m {axes = array<i64: 0>} : tensor<3x3xf32> -> tensor<3xf32>
  %s2 = graph.reduce_sum %m {axes = array<i64: 1>} : tensor<3x3xf32> -> tensor<3xf32>
  %k1 = graph.cast %m : tensor<3x3xf32> -> tensor<3x3xf16>
  %k2 = graph.cast %m : tensor<3x3xf32> -> tensor<3x3xi32>
  %p = graph.sub %m, %t1 : tensor<3x3xf32>, tensor<3x3xf32> -> tensor<3x3xf32>
  %q = graph.sub %t1, %m : tensor<3x3xf32>, tensor<3x3xf32> -> tensor<3x3xf32>
  func.return %pz, %nz, %s1, %s2, %k1, %k2, %p, %q : tensor<f32>, tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3x3xf16>, tensor<3x3xi32>, tensor<3x3xf32>, tensor<3x3xf32>
}

// -----

// dce removes graph ops (constants included) whose results are unused, transitively.
// DCE-LABEL: func.func @dead
// DCE-NEXT:    %c = graph.constant dense<2.000000e+00> : tensor<4xf32>
// DCE-NEXT:    %y = graph.mul %x, %c
// DCE-NEXT:    func.return %y
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %unused = graph.constant dense<1.0> : tensor<4xf32>
  %c = graph.constant dense<2.0> : tensor<4xf32>
  %d1 = graph.add %x, %unused : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %d2 = graph.exp %d1 : tensor<4xf32>
  %y = graph.mul %x, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
