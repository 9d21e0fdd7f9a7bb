// RUN: %tk-roundtrip
// RUN: %tk-generic-roundtrip

// Loop kinds (serial is the default and prints nothing), names, buffers and accesses.

// CHECK-LABEL: func.func @kernel(%A: memref<16x8xf32>, %C: memref<16x8xf32>, %D: memref<?x8xf32>) {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c8 = arith.constant 8 : index
// CHECK-NEXT:    %c16 = arith.constant 16 : index
// CHECK-NEXT:    %n = loop.dim %D, 0 : memref<?x8xf32>
// CHECK-NEXT:    %t = loop.alloc(%n) {scope = "global"} : memref<?x8xf32>
// CHECK-NEXT:    %acc = loop.alloc() {scope = "local"} : memref<1xf32>
// CHECK-NEXT:    loop.for %i = %c0 to %c16 step %c1 parallel name("i") {
// CHECK-NEXT:      loop.for %j = %c0 to %c8 step %c1 vectorized name("j.inner") {
// CHECK-NEXT:        %x = loop.load %A[%i, %j] : memref<16x8xf32>
// CHECK-NEXT:        loop.store %x, %C[%i, %j] : memref<16x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.for %u = %c0 to %c8 step %c1 unrolled {
// CHECK-NEXT:        loop.for %s = %c0 to %c1 step %c1 {
// CHECK-NEXT:          %y = loop.load %acc[%c0] {nontemporal} : memref<1xf32>
// CHECK-NEXT:          loop.store %y, %acc[%c0] : memref<1xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.free %t : memref<?x8xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @kernel(%A: memref<16x8xf32>, %C: memref<16x8xf32>, %D: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %n = loop.dim %D, 0 : memref<?x8xf32>
  %t = loop.alloc(%n) {scope = "global"} : memref<?x8xf32>
  %acc = loop.alloc() {scope = "local"} : memref<1xf32>
  loop.for %i = %c0 to %c16 step %c1 parallel name("i") {
    loop.for %j = %c0 to %c8 step %c1 vectorized name("j.inner") {
      %x = loop.load %A[%i, %j] : memref<16x8xf32>
      loop.store %x, %C[%i, %j] : memref<16x8xf32>
    }
    loop.for %u = %c0 to %c8 step %c1 unrolled {
      loop.for %s = %c0 to %c1 step %c1 {
        %y = loop.load %acc[%c0] {nontemporal} : memref<1xf32>
        loop.store %y, %acc[%c0] : memref<1xf32>
      }
    }
  }
  loop.free %t : memref<?x8xf32>
  func.return
}

// GPU bindings are loop kinds too; attributes other than kind and name follow `attributes`.
// The implicit loop.yield terminator is not printed, also when it is written out.
// CHECK-LABEL: func.func @gpu_bound(%A: memref<64xf32>) {
// CHECK:         loop.for %b = %c0 to %c4 step %c1 blockIdx.x name("b") {
// CHECK-NEXT:      loop.for %t = %c0 to %c16 step %c1 threadIdx.x name("t") attributes {unroll_hint = 2 : i64} {
// CHECK-NEXT:        %v = loop.load %A[%t] : memref<64xf32>
// CHECK-NEXT:        loop.store %v, %A[%t] : memref<64xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @gpu_bound(%A: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  loop.for %b = %c0 to %c4 step %c1 blockIdx.x name("b") {
    loop.for %t = %c0 to %c16 step %c1 threadIdx.x name("t") attributes {unroll_hint = 2 : i64} {
      %v = loop.load %A[%t] : memref<64xf32>
      loop.store %v, %A[%t] : memref<64xf32>
      loop.yield
    }
  }
  func.return
}

// A loop's role (what it iterates over, as te-to-loop records it; schedules read it)
// follows its name; a loop without one prints none.
// CHECK-LABEL: func.func @roles(%A: memref<4x8xf32>, %S: memref<4xf32>) {
// CHECK:         loop.for %i = %c0 to %c4 step %c1 parallel name("i0") role(spatial) {
// CHECK-NEXT:      loop.for %k = %c0 to %c8 step %c1 name("k0") role(reduction) attributes {unroll_hint = 2 : i64} {
// CHECK:           loop.for %s = %c0 to %c8 step %c1 name("scan0") role(scan) {
func.func @roles(%A: memref<4x8xf32>, %S: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  loop.for %i = %c0 to %c4 step %c1 parallel name("i0") role(spatial) {
    loop.for %k = %c0 to %c8 step %c1 name("k0") role(reduction) attributes {unroll_hint = 2 : i64} {
      %a = loop.load %A[%i, %k] : memref<4x8xf32>
      loop.store %a, %S[%i] : memref<4xf32>
    }
    loop.for %s = %c0 to %c8 step %c1 name("scan0") role(scan) {
      %b = loop.load %A[%i, %s] : memref<4x8xf32>
      loop.store %b, %S[%i] : memref<4xf32>
    }
  }
  func.return
}

// A warp shuffle: the value of lane (lane ^ offset) within segments of `width` lanes.
// CHECK-LABEL: func.func @shuffle(%x: f32, %n: i64) {
// CHECK-NEXT:    %a = loop.shuffle_xor %x, 16, 32 : f32
// CHECK-NEXT:    %b = loop.shuffle_xor %n, 1, 8 {tag} : i64
func.func @shuffle(%x: f32, %n: i64) {
  %a = loop.shuffle_xor %x, 16, 32 : f32
  %b = loop.shuffle_xor %n, 1, 8 {tag} : i64
  func.return
}
