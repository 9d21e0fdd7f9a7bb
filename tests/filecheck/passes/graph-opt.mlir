// RUN: tensorkiln-opt %s -p graph-opt-O1 | filecheck %s --check-prefix=O1
// RUN: tensorkiln-opt %s -p 'graph-opt{opt_level=1}' | filecheck %s --check-prefix=O1
// RUN: tensorkiln-opt %s -p graph-opt-O0 | filecheck %s --check-prefix=O0
// RUN: tensorkiln-opt %s -p fold-constants,simplify,dce | filecheck %s --check-prefix=O1

// The graph pipelines of each optimization level are passes too. O1 = fold-constants,
// simplify, dce: the constant arithmetic folds, the product by the folded 1 goes, and
// the dead constants with it. O0 changes nothing.

// O1-LABEL: func.func @main
// O1-NEXT:    %[[T:.*]] = graph.transpose %x {perm = array<i64: 1, 0>}
// O1-NEXT:    %[[E:.*]] = graph.exp %[[T]]
// O1-NEXT:    func.return %[[E]]

// O0-LABEL: func.func @main
// O0-NEXT:    %two = graph.constant
// O0-NEXT:    %half = graph.constant
// O0-NEXT:    %one = graph.mul %two, %half
// O0-NEXT:    %t = graph.transpose %x
// O0-NEXT:    %tt = graph.transpose %t
// O0-NEXT:    %ttt = graph.transpose %tt
// O0-NEXT:    %y = graph.mul %ttt, %one
// O0-NEXT:    %e = graph.exp %y
func.func @main(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %half = graph.constant dense<0.5> : tensor<f32>
  %one = graph.mul %two, %half : tensor<f32>, tensor<f32> -> tensor<f32>
  %t = graph.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %tt = graph.transpose %t {perm = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32>
  %ttt = graph.transpose %tt {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %y = graph.mul %ttt, %one : tensor<3x2xf32>, tensor<f32> -> tensor<3x2xf32>
  %e = graph.exp %y : tensor<3x2xf32>
  func.return %e : tensor<3x2xf32>
}
