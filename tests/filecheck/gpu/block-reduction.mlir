// A row max over 300 columns gets the block reduction: one block per row, 256 threads
// taking strided partials, then a shared-memory tree with a barrier between levels.
// RUN: tensorkiln-opt %s -p gpu-default-schedule,loop-to-gpu | filecheck %s
// RUN: tensorkiln-opt %s -p gpu-default-schedule,loop-to-gpu -t cuda | filecheck %s --check-prefix=CUDA

builtin.module {
  func.func @main(%x: memref<?x300xf32>, %y: memref<?x1xf32>) {
    func.call @softmax_max_0(%x, %y) : (memref<?x300xf32>, memref<?x1xf32>) -> ()
    func.return
  }
  func.func @softmax_max_0(%0: memref<?x300xf32>, %1: memref<?x1xf32>) attributes {tk.kernel = "softmax_max"} {
    %3 = loop.dim %1, 0 : memref<?x1xf32>
    %4 = arith.constant 1 : index
    %5 = arith.constant 0 : index
    %9 = arith.constant 300 : index
    %11 = arith.constant 0xff800000 : f32
    loop.for %7 = %5 to %3 step %4 name("i0") {
      loop.for %8 = %5 to %4 step %4 name("i1") {
        %10 = loop.alloc() {scope = "local"} : memref<f32>
        loop.store %11, %10[] : memref<f32>
        loop.for %14 = %5 to %9 step %4 name("k0") {
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
// CHECK:      memref.alloca() : memref<256xf32, 3 : i32>
// CHECK:      "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK:      loop.for {{.*}} name("k0")
// CHECK:        arith.maximumf
// CHECK:      memref.store {{.*}} : memref<256xf32, 3 : i32>
// CHECK:      "gpu.barrier"()
// CHECK:      arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK-NEXT: scf.if
// CHECK:        arith.maximumf
// CHECK-COUNT-8: "gpu.barrier"()
// CHECK-NOT:  "gpu.barrier"()
// CHECK:      memref.store {{.*}} : memref<?x1xf32>
// CHECK:      gpu.known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: tk.gpu_strategy = "block_reduction"

// CUDA:       __launch_bounds__(256) softmax_max_0(const float* __restrict__ {{.*}}, float* __restrict__
// CUDA:       __shared__ float {{.*}}[256];
// CUDA-COUNT-9: __syncthreads();
// CUDA-NOT:   __syncthreads();
