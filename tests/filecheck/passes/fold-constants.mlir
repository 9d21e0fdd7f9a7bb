// RUN: tensorkiln-opt %s --split-input-file -p 'fold-constants{inline_limit=16}' | filecheck %s
// RUN: tensorkiln-opt %s --split-input-file -p fold-constants | filecheck %s --check-prefix=REF

// Ops whose operands are all constants are evaluated with their numpy reference
// semantics; small results inline as dense<...> (inline_limit), larger ones are held by
// reference (#graph.weight<...>), which is the default.

// CHECK-LABEL: func.func @binary
// CHECK-NEXT:    %a = graph.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %b = graph.constant dense<5.000000e-01> : tensor<3xf32>
// CHECK-NEXT:    %s = graph.constant dense<[1.500000e+00, 2.500000e+00, 3.500000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %y = graph.add %x, %s
// REF-LABEL: func.func @binary
// REF:         %s = graph.constant #graph.weight<"const.add{{.*}}"> : tensor<3xf32>
// REF-NEXT:    %y = graph.add %x, %s
func.func @binary(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = graph.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = graph.constant dense<0.5> : tensor<3xf32>
  %s = graph.add %a, %b : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %y = graph.add %x, %s : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// A chain folds op after op (weight transforms, batch-norm scale arithmetic).
// CHECK-LABEL: func.func @chain
// CHECK:         %t = graph.constant dense<{{\[}}[1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %r = graph.constant dense<[1.000000e+00, 3.000000e+00, 2.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %n = graph.constant dense<[-1.000000e+00, -3.000000e+00, -2.000000e+00, -4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %y = graph.mul %x, %n
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %t = graph.transpose %c {perm = array<i64: 1, 0>} : tensor<2x2xf32> -> tensor<2x2xf32>
  %r = graph.reshape %t {shape = array<i64: 4>} : tensor<2x2xf32> -> tensor<4xf32>
  %n = graph.neg %r : tensor<4xf32>
  %y = graph.mul %x, %n : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// Element types change as the op says: cast, compare.
// CHECK-LABEL: func.func @types
// CHECK:         %i = graph.constant dense<[1, -2, 3]> : tensor<3xi32>
// CHECK:         %m = graph.constant dense<[true, false, true]> : tensor<3xi1>
func.func @types() -> (tensor<3xi32>, tensor<3xi1>) {
  %c = graph.constant dense<[1.5, -2.5, 3.9]> : tensor<3xf32>
  %z = graph.constant dense<0.0> : tensor<f32>
  %i = graph.cast %c : tensor<3xf32> -> tensor<3xi32>
  %m = graph.compare %c, %z {predicate = "gt"} : tensor<3xf32>, tensor<f32> -> tensor<3xi1>
  %k = graph.compare %m, %m {predicate = "eq"} : tensor<3xi1>, tensor<3xi1> -> tensor<3xi1>
  func.return %i, %m : tensor<3xi32>, tensor<3xi1>
}

// -----

// Not folded: an operand that is not a constant.
// CHECK-LABEL: func.func @not_constant
// CHECK:         %y = graph.add %x, %c
// CHECK-NEXT:    %z = graph.exp %y
func.func @not_constant(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = graph.constant dense<1.0> : tensor<3xf32>
  %y = graph.add %x, %c : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %z = graph.exp %y : tensor<3xf32>
  func.return %z : tensor<3xf32>
}

// -----

// Not folded: a result much larger than its inputs (broadcast of a scalar to 128 KiB);
// a small broadcast folds.
// CHECK-LABEL: func.func @size_limit
// CHECK:         %big = graph.broadcast_to %c {shape = array<i64: 128, 256>} : tensor<f32> -> tensor<128x256xf32>
// CHECK:         %small = graph.constant dense<2.000000e+00> : tensor<4x4xf32>
// REF-LABEL: func.func @size_limit
// REF:         %big = graph.broadcast_to %c
// REF:         %small = graph.constant #graph.weight<"const.broadcast_to{{.*}}"> : tensor<4x4xf32>
func.func @size_limit() -> (tensor<128x256xf32>, tensor<4x4xf32>) {
  %c = graph.constant dense<2.0> : tensor<f32>
  %big = graph.broadcast_to %c {shape = array<i64: 128, 256>} : tensor<f32> -> tensor<128x256xf32>
  %small = graph.broadcast_to %c {shape = array<i64: 4, 4>} : tensor<f32> -> tensor<4x4xf32>
  func.return %big, %small : tensor<128x256xf32>, tensor<4x4xf32>
}

// -----

// Not folded: an op whose result is unused (dce removes it) and constants themselves.
// CHECK-LABEL: func.func @unused
// CHECK-NEXT:    %c = graph.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK-NEXT:    %dead = graph.exp %c : tensor<3xf32>
// CHECK-NEXT:    func.return %c
func.func @unused() -> tensor<3xf32> {
  %c = graph.constant dense<1.0> : tensor<3xf32>
  %dead = graph.exp %c : tensor<3xf32>
  func.return %c : tensor<3xf32>
}
