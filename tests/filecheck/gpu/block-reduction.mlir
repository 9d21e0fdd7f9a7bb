// A row max over 300 columns gets the block reduction: one block per row, 256 threads
// taking strided partials, each warp combining its 32 with a butterfly of xor shuffles
// (lane 0 keeps the warp's max in shared memory), then after ONE barrier the first warp
// combines the 8 warp maxima the same way, and after a second barrier one thread
// writes the row's result.
// RUN: tensorkiln-opt %s -p gpu-default-schedule,loop-to-gpu | filecheck %s
// RUN: tensorkiln-opt %s -p gpu-default-schedule,loop-to-gpu -t cuda | filecheck %s --check-prefix=CUDA

builtin.module {
  func.func @main(%x: memref<?x300xf32>, %y: memref<?x1xf32>) {
    func.call @softmax_max_0(%x, %y) : (memref<?x300xf32>, memref<?x1xf32>) -> ()
    func.return
  }
  func.func @softmax_max_0(%0: memref<?x300xf32>, %1: memref<?x1xf32>) attributes {tk.kernel = "softmax_max", tk.ops = ["softmax", "max"], tk.anchor = "softmax", tk.epilogue = ["max"]} {
    %3 = loop.dim %1, 0 : memref<?x1xf32>
    %4 = arith.constant 1 : index
    %5 = arith.constant 0 : index
    %9 = arith.constant 300 : index
    %11 = arith.constant 0xff800000 : f32
    loop.for %7 = %5 to %3 step %4 name("i0") role(spatial) {
      loop.for %8 = %5 to %4 step %4 name("i1") role(spatial) {
        %10 = loop.alloc() {scope = "local"} : memref<f32>
        loop.store %11, %10[] : memref<f32>
        loop.for %14 = %5 to %9 step %4 name("k0") role(reduction) {
          %15 = loop.load %0[%7, %14] : memref<?x300xf32>
          %16 = loop.load %10[] : memref<f32>
          %17 = arith.maximumf %16, %15 : f32
          loop.store %17, %10[] : memref<f32>
        }
        %18 = loop.load %10[] : memref<f32>
        loop.store %18, %1[%7, %8] : memref<?x1xf32>
      }
    }
    func.return
  }
}

// CHECK:      "gpu.launch_func"
// CHECK-SAME: kernel = @kernels::@softmax_max_0
// CHECK:      "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK:      %[[WARPS:.*]] = memref.alloca() : memref<8xf32, 3 : i32>
// CHECK:      %[[RESULT:.*]] = memref.alloca() : memref<1xf32, 3 : i32>
// CHECK-NOT:  "gpu.barrier"()
// CHECK:      "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// four accumulators: the main loop takes four of the thread's iterations a step, the
// rest go to the first; then the four are combined pairwise
// CHECK:      loop.for {{.*}} name("k0")
// CHECK-COUNT-4: arith.maximumf
// CHECK:      loop.for {{.*}} name("k0.rest")
// CHECK:        arith.maximumf
// CHECK:      %[[A0:.*]] = memref.load {{.*}} : memref<f32>
// CHECK-NEXT: %[[A1:.*]] = memref.load {{.*}} : memref<f32>
// CHECK-NEXT: %[[A2:.*]] = memref.load {{.*}} : memref<f32>
// CHECK-NEXT: %[[A3:.*]] = memref.load {{.*}} : memref<f32>
// CHECK-NEXT: %[[A01:.*]] = arith.maximumf {{.*}}%[[A0]]{{.*}} : f32
// CHECK-NEXT: %[[A23:.*]] = arith.maximumf {{.*}}%[[A2]]{{.*}} : f32
// CHECK-NEXT: %[[P:.*]] = arith.maximumf {{.*}}%[[A01]]{{.*}} : f32
// CHECK-NEXT: %[[S16:.*]] = loop.shuffle_xor %[[P]], 16, 32 : f32
// CHECK-NEXT: %[[M16:.*]] = arith.maximumf %[[P]], %[[S16]] : f32
// CHECK-NEXT: %[[S8:.*]] = loop.shuffle_xor %[[M16]], 8, 32 : f32
// CHECK-NEXT: %[[M8:.*]] = arith.maximumf %[[M16]], %[[S8]] : f32
// CHECK-NEXT: loop.shuffle_xor %[[M8]], 4, 32 : f32
// CHECK-NEXT: arith.maximumf
// CHECK-NEXT: loop.shuffle_xor %{{.*}}, 2, 32 : f32
// CHECK-NEXT: arith.maximumf
// CHECK-NEXT: loop.shuffle_xor %{{.*}}, 1, 32 : f32
// CHECK-NEXT: %[[WARP_MAX:.*]] = arith.maximumf
// CHECK:      loop.for {{.*}} name("lane0") {
// CHECK-NEXT:   memref.store %[[WARP_MAX]], %[[WARPS]][%{{.*}}] : memref<8xf32, 3 : i32>
// CHECK:      "gpu.barrier"()
// CHECK-NEXT: %[[T:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK-NEXT: %[[IN_WARP0:.*]] = arith.cmpi slt, %[[T]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[IN_WARP0]] {
// CHECK:        memref.load %[[WARPS]][%{{.*}}] : memref<8xf32, 3 : i32>
// CHECK-NEXT:   loop.shuffle_xor %{{.*}}, 4, 8 : f32
// CHECK-NEXT:   arith.maximumf
// CHECK-NEXT:   loop.shuffle_xor %{{.*}}, 2, 8 : f32
// CHECK-NEXT:   arith.maximumf
// CHECK-NEXT:   loop.shuffle_xor %{{.*}}, 1, 8 : f32
// CHECK-NEXT:   %[[ROW_MAX:.*]] = arith.maximumf
// CHECK:        loop.for {{.*}} = %[[T]] to {{.*}} name("lane0") {
// CHECK:          memref.store %[[ROW_MAX]], %[[RESULT]][%{{.*}}] : memref<1xf32, 3 : i32>
// CHECK:      "gpu.barrier"()
// CHECK-NOT:  "gpu.barrier"()
// CHECK:      memref.load %[[RESULT]][%{{.*}}] : memref<1xf32, 3 : i32>
// CHECK:      memref.store {{.*}} : memref<?x1xf32>
// CHECK:      gpu.known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: tk.gpu_strategy = "block_reduction"

// CUDA:       __launch_bounds__(256) softmax_max_0(const float* __restrict__ {{.*}}, float* __restrict__
// CUDA:       __shared__ __align__(16) float {{.*}}[8];
// CUDA:       __shared__ __align__(16) float {{.*}}[1];
// CUDA-NOT:   __syncthreads();
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 16, 32);
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 8, 32);
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 4, 32);
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 2, 32);
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 1, 32);
// CUDA-COUNT-1: __syncthreads();
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 4, 8);
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 2, 8);
// CUDA:       __shfl_xor_sync(0xffffffffu, {{.*}}, 1, 8);
// CUDA-COUNT-1: __syncthreads();
// CUDA-NOT:   __syncthreads();
// CUDA-NOT:   __shfl_xor_sync
