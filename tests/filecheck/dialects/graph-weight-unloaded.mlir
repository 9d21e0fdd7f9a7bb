// RUN: tensorkiln-opt %s --parsing-diagnostics | filecheck %s

// Weights are held by reference to numpy arrays in the process that built the IR.
// Printed IR that names one parses back only in that process; elsewhere the parser
// says which weight is missing and what to write instead.
func.func @uses_weight() -> tensor<2x3xf32> {
  %w = graph.constant #graph.weight<"fc1.weight"> : tensor<2x3xf32>
  func.return %w : tensor<2x3xf32>
}
// CHECK:      %w = graph.constant #graph.weight<"fc1.weight"> : tensor<2x3xf32>
// CHECK:      weight 'fc1.weight' is not loaded in this process (weights are held by reference; write small constants as dense<...>)
