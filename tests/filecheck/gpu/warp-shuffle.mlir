// Row sums of 96 columns with warp shuffles: a block of 96 threads (3 warps), each warp
// sums its 32 values with a butterfly of xor shuffles and lane 0 keeps the warp's sum in
// shared memory; after the barrier the first warp alone (a guard that keeps whole warps)
// sums the 3 warp sums with shuffles within segments of 4 lanes (lane 3 adds a zero).
// loop-to-gpu keeps the shuffles; emulate-gpu splits the code at each shuffle like at a
// barrier (every thread stores its value in a scratch buffer, then reads its partner's),
// keeping per thread the values that live across the split; -t cuda prints
// __shfl_xor_sync.
// RUN: tensorkiln-opt %s -p loop-to-gpu | filecheck %s
// RUN: tensorkiln-opt %s -p loop-to-gpu,emulate-gpu | filecheck %s --check-prefix=EMU
// RUN: tensorkiln-opt %s -p loop-to-gpu -t cuda | filecheck %s --check-prefix=CUDA

builtin.module {
  func.func @main(%A: memref<?x96xf32>, %B: memref<?xf32>) {
    func.call @warpsum(%A, %B) : (memref<?x96xf32>, memref<?xf32>) -> ()
    func.return
  }
  func.func @warpsum(%A: memref<?x96xf32>, %B: memref<?xf32>) attributes {tk.kernel = "warpsum"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c32 = arith.constant 32 : index
    %c96 = arith.constant 96 : index
    %zero = arith.constant 0.0 : f32
    %rows = loop.dim %A, 0 : memref<?x96xf32>
    loop.for %r = %c0 to %rows step %c1 blockIdx.x name("r") {
      %sums = loop.alloc() {scope = "shared"} : memref<3xf32>
      loop.for %t = %c0 to %c96 step %c1 threadIdx.x name("t") {
        %x = loop.load %A[%r, %t] : memref<?x96xf32>
        %s16 = loop.shuffle_xor %x, 16, 32 : f32
        %x16 = arith.addf %x, %s16 : f32
        %s8 = loop.shuffle_xor %x16, 8, 32 : f32
        %x8 = arith.addf %x16, %s8 : f32
        %s4 = loop.shuffle_xor %x8, 4, 32 : f32
        %x4 = arith.addf %x8, %s4 : f32
        %s2 = loop.shuffle_xor %x4, 2, 32 : f32
        %x2 = arith.addf %x4, %s2 : f32
        %s1 = loop.shuffle_xor %x2, 1, 32 : f32
        %x1 = arith.addf %x2, %s1 : f32
        %lane = arith.remui %t, %c32 : index
        %warp = arith.divui %t, %c32 : index
        loop.for %g = %lane to %c1 step %c1 name("lane0") {
          loop.store %x1, %sums[%warp] : memref<3xf32>
        }
      }
      loop.for %u = %c0 to %c32 step %c1 threadIdx.x name("u") {
        %i = arith.minui %u, %c2 : index
        %w = loop.load %sums[%i] : memref<3xf32>
        %real = arith.cmpi ult, %u, %c3 : index
        %y = arith.select %real, %w, %zero : f32
        %t2 = loop.shuffle_xor %y, 2, 4 : f32
        %y2 = arith.addf %y, %t2 : f32
        %t1 = loop.shuffle_xor %y2, 1, 4 : f32
        %y1 = arith.addf %y2, %t1 : f32
        loop.for %g = %u to %c1 step %c1 name("lane0") {
          loop.store %y1, %B[%r] : memref<?xf32>
        }
      }
    }
    func.return
  }
}

// CHECK:      "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK:      memref.alloca() : memref<3xf32, 3 : i32>
// CHECK:      %[[X:.*]] = memref.load {{.*}} : memref<?x96xf32>
// CHECK-NEXT: %[[S16:.*]] = loop.shuffle_xor %[[X]], 16, 32 : f32
// CHECK-NEXT: arith.addf %[[X]], %[[S16]] : f32
// CHECK:      loop.shuffle_xor %{{.*}}, 1, 32 : f32
// CHECK:      "gpu.barrier"()
// CHECK:      %[[U:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK-NEXT: %[[WARP0:.*]] = arith.cmpi slt, %[[U]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[WARP0]] {
// CHECK:        loop.shuffle_xor %{{.*}}, 2, 4 : f32
// CHECK:        loop.shuffle_xor %{{.*}}, 1, 4 : f32
// CHECK:      gpu.known_block_size = array<i32: 96, 1, 1>

// Each shuffle: a scratch buffer of one entry per thread; the phase before stores
// the thread's value at its number, the phase after loads the partner's entry.
// EMU-NOT:    gpu.
// EMU:        func.func @warpsum(
// EMU:        loop.for {{.*}} name("blockIdx.x")
// EMU:          %[[SCRATCH16:.*]] = loop.alloc() {scope = "local"} : memref<96xf32>
// EMU:          %[[KEEP_X:.*]] = loop.alloc() {scope = "local"} : memref<96xf32>
// EMU:          loop.for {{.*}} name("threadIdx.x")
// EMU:            %[[X:.*]] = loop.load {{.*}} : memref<?x96xf32>
// EMU-NEXT:       loop.store %[[X]], %[[SCRATCH16]][%[[T:.*]]] : memref<96xf32>
// EMU-NEXT:       loop.store %[[X]], %[[KEEP_X]][%[[T]]] : memref<96xf32>
// EMU:          loop.for {{.*}} name("threadIdx.x")
// EMU:            %[[PARTNER:.*]] = arith.xori %[[T2:.*]], %{{.*}} : index
// EMU-NEXT:       %[[S16:.*]] = loop.load %[[SCRATCH16]][%[[PARTNER]]] : memref<96xf32>
// EMU-NEXT:       %[[X2:.*]] = loop.load %[[KEEP_X]][%[[T2]]] : memref<96xf32>
// EMU-NEXT:       arith.addf %[[X2]], %[[S16]] : f32
// The guarded phase: its pieces between shuffles each run under the guard.
// EMU-COUNT-3: name("if")
// EMU:        func.return

// CUDA:       extern "C" __global__ void __launch_bounds__(96) warpsum(
// CUDA:       __shared__ __align__(16) float {{.*}}[3];
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 16, 32);
// CUDA:       __syncthreads();
// CUDA:       if (
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 2, 4);
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 1, 4);
