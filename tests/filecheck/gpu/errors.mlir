// Kernels loop-to-gpu cannot map fail with the kernel's name and the reason.
// RUN: not tensorkiln-opt %s -p loop-to-gpu 2>&1 | filecheck %s

builtin.module {
  func.func @main(%A: memref<?xf32>, %B: memref<?xf32>) {
    func.call @copy_0(%A, %B) : (memref<?xf32>, memref<?xf32>) -> ()
    func.return
  }
  func.func @copy_0(%A: memref<?xf32>, %B: memref<?xf32>) attributes {tk.kernel = "copy"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = loop.dim %A, 0 : memref<?xf32>
    loop.for %i = %c0 to %n step %c1 threadIdx.x name("i0") {
      %x = loop.load %A[%i] : memref<?xf32>
      loop.store %x, %B[%i] : memref<?xf32>
    }
    func.return
  }
}

// CHECK: loop-to-gpu: kernel 'copy_0': loop 'i0' is bound to threadIdx.x but has no compile-time trip bound (split it first)
