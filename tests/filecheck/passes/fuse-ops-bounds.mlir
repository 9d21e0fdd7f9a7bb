// RUN: tensorkiln-opt %s -p 'fuse-ops{max_group_size=3}' | filecheck %s
// RUN: tensorkiln-opt %s -p 'fuse-ops{max_recomputed_ops=1}' | filecheck %s --check-prefix=RECOMPUTE

// fuse-ops' two bounds: max_group_size ops in a group (default 1024), and recomputed ops
// (broadcast into a larger output, so computed again per output element) at most as
// many as the group's others or max_recomputed_ops (default 64).

// A chain at one shape: cut every 3 ops with max_group_size=3; one group otherwise
// (every op computed once per element, none recomputed).
func.func @chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = graph.exp %x : tensor<4x8xf32>
  %b = graph.tanh %a : tensor<4x8xf32>
  %c = graph.neg %b : tensor<4x8xf32>
  %d = graph.relu %c : tensor<4x8xf32>
  %e = graph.abs %d : tensor<4x8xf32>
  func.return %e : tensor<4x8xf32>
}

// A (1, 8) chain broadcast into a (4, 8) add: with max_recomputed_ops=1 the group of the
// add (one op computed per element) takes one recomputed op, neg; exp and tanh fuse apart.
func.func @broadcast(%x: tensor<4x8xf32>, %z: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %a = graph.exp %z : tensor<1x8xf32>
  %b = graph.tanh %a : tensor<1x8xf32>
  %c = graph.neg %b : tensor<1x8xf32>
  %d = graph.add %x, %c : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  func.return %d : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %b = graph.fused "exp_tanh" (%x)
// CHECK:         %e = graph.fused "neg_relu_abs" (%b)

// CHECK-LABEL: func.func @broadcast(
// CHECK-NEXT:    %a = graph.exp %z
// CHECK-NEXT:    %d = graph.fused "tanh_neg_add" (%a, %x)

// RECOMPUTE-LABEL: func.func @chain(
// RECOMPUTE-NEXT:    %e = graph.fused "exp_tanh_neg_relu_abs" (%x)

// RECOMPUTE-LABEL: func.func @broadcast(
// RECOMPUTE-NEXT:    %b = graph.fused "exp_tanh" (%z)
// RECOMPUTE:         %d = graph.fused "neg_add" (%b, %x)
