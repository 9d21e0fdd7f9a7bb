// RUN: not tensorkiln-opt %s -p bf16-storage 2>&1 | filecheck %s

// Arithmetic on bfloat16 means legalize-16bit-floats did not run: an error naming the op.

// CHECK: bf16-storage: 'arith.addf' computes on bfloat16 (run legalize-16bit-floats on the graph first)
func.func @unlegalized(%x: memref<2xbf16>) {
  %c0 = arith.constant 0 : index
  %v = loop.load %x[%c0] : memref<2xbf16>
  %w = arith.addf %v, %v : bf16
  loop.store %w, %x[%c0] : memref<2xbf16>
  func.return
}
