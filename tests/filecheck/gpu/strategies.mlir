// Default GPU strategies on loop-level kernels, then loop-to-gpu (and CUDA text):
// a dense layer gets the shared-memory GEMM template, relu a grid-stride loop, and
// a reduction whose k loop reads an operand depending on rows AND columns is no GEMM:
// it gets a warp per output (the CHECK-NOTs say no shared tiles there).
// RUN: tensorkiln-opt %s -p gpu-default-schedule,loop-to-gpu | filecheck %s
// RUN: tensorkiln-opt %s -p gpu-default-schedule,loop-to-gpu -t cuda | filecheck %s --check-prefix=CUDA

builtin.module {
  func.func @main(%x: memref<?x37xf32>, %out0: memref<?x13xf32>, %w0: memref<13x37xf32>, %t: memref<?x13x37xf32>, %out1: memref<?x13xf32>) {
    %0 = loop.dim %x, 0 : memref<?x37xf32>
    %1 = loop.alloc(%0) {scope = "global"} : memref<?x13xf32>
    func.call @dense_0(%x, %w0, %1) : (memref<?x37xf32>, memref<13x37xf32>, memref<?x13xf32>) -> ()
    func.call @relu_0(%1, %out0) : (memref<?x13xf32>, memref<?x13xf32>) -> ()
    func.call @rowdot_0(%t, %x, %out1) : (memref<?x13x37xf32>, memref<?x37xf32>, memref<?x13xf32>) -> ()
    loop.free %1 : memref<?x13xf32>
    func.return
  }
  func.func @dense_0(%0: memref<?x37xf32>, %1: memref<13x37xf32>, %2: memref<?x13xf32>) attributes {tk.kernel = "dense", tk.anchor = "dense"} {
    %4 = loop.dim %2, 0 : memref<?x13xf32>
    %5 = arith.constant 13 : index
    %6 = arith.constant 0 : index
    %7 = arith.constant 1 : index
    %10 = arith.constant 37 : index
    %12 = arith.constant 0.000000e+00 : f32
    loop.for %8 = %6 to %4 step %7 name("i0") role(spatial) {
      loop.for %9 = %6 to %5 step %7 name("i1") role(spatial) {
        %11 = loop.alloc() {scope = "local"} : memref<f32>
        loop.store %12, %11[] : memref<f32>
        loop.for %15 = %6 to %10 step %7 name("k0") role(reduction) {
          %16 = loop.load %0[%8, %15] : memref<?x37xf32>
          %17 = loop.load %1[%9, %15] : memref<13x37xf32>
          %18 = arith.mulf %16, %17 fastmath<contract> : f32
          %19 = loop.load %11[] : memref<f32>
          %20 = arith.addf %19, %18 fastmath<reassoc,contract> : f32
          loop.store %20, %11[] : memref<f32>
        }
        %21 = loop.load %11[] : memref<f32>
        loop.store %21, %2[%8, %9] : memref<?x13xf32>
      }
    }
    func.return
  }
  func.func @relu_0(%0: memref<?x13xf32>, %1: memref<?x13xf32>) attributes {tk.kernel = "relu", tk.anchor = "relu"} {
    %3 = loop.dim %1, 0 : memref<?x13xf32>
    %4 = arith.constant 13 : index
    %5 = arith.constant 0 : index
    %6 = arith.constant 1 : index
    %10 = arith.constant 0.000000e+00 : f32
    loop.for %7 = %5 to %3 step %6 name("i0") role(spatial) {
      loop.for %8 = %5 to %4 step %6 name("i1") role(spatial) {
        %9 = loop.load %0[%7, %8] : memref<?x13xf32>
        %11 = arith.maximumf %9, %10 : f32
        loop.store %11, %1[%7, %8] : memref<?x13xf32>
      }
    }
    func.return
  }
  func.func @rowdot_0(%0: memref<?x13x37xf32>, %1: memref<?x37xf32>, %2: memref<?x13xf32>) attributes {tk.kernel = "dense", tk.anchor = "dense"} {
    %4 = loop.dim %2, 0 : memref<?x13xf32>
    %5 = arith.constant 13 : index
    %6 = arith.constant 0 : index
    %7 = arith.constant 1 : index
    %10 = arith.constant 37 : index
    %12 = arith.constant 0.000000e+00 : f32
    loop.for %8 = %6 to %4 step %7 name("i0") role(spatial) {
      loop.for %9 = %6 to %5 step %7 name("i1") role(spatial) {
        %11 = loop.alloc() {scope = "local"} : memref<f32>
        loop.store %12, %11[] : memref<f32>
        loop.for %15 = %6 to %10 step %7 name("k0") role(reduction) {
          %16 = loop.load %0[%8, %9, %15] : memref<?x13x37xf32>
          %17 = loop.load %1[%8, %15] : memref<?x37xf32>
          %18 = arith.mulf %16, %17 fastmath<contract> : f32
          %19 = loop.load %11[] : memref<f32>
          %20 = arith.addf %19, %18 fastmath<reassoc,contract> : f32
          loop.store %20, %11[] : memref<f32>
        }
        %21 = loop.load %11[] : memref<f32>
        loop.store %21, %2[%8, %9] : memref<?x13xf32>
      }
    }
    func.return
  }
}

// The host: grids from the batch size %0 (64-row tiles), one block of 16 x 16 threads.
// CHECK:      func.func @main
// CHECK:      %[[N:.*]] = loop.dim %x, 0
// CHECK:      arith.divui
// CHECK:      "gpu.launch_func"
// CHECK-SAME: kernel = @kernels::@dense_0
// CHECK:      "gpu.launch_func"
// CHECK-SAME: kernel = @kernels::@relu_0
// CHECK:      "gpu.launch_func"
// CHECK-SAME: kernel = @kernels::@rowdot_0

// CHECK:      "gpu.module"() <{sym_name = "kernels"}>
// CHECK:      "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK:      "gpu.block_id"() <{dimension = #gpu<dim y>}>
// CHECK:      memref.alloca() : memref<16x68xf32, 3 : i32>
// CHECK:      memref.alloca() : memref<16x68xf32, 3 : i32>
// CHECK:      memref.alloca() : memref<4x4xf32>
// The first boxes go to registers (clamped loads, 0 outside); each k step stores them
// in shared memory, then fetches the next ones before the barrier and the compute.
// CHECK:      %[[RA:.*]] = memref.alloca() : memref<4xf32>
// CHECK:      %[[RB:.*]] = memref.alloca() : memref<4xf32>
// CHECK:      loop.for {{.*}} name("fetch_a.part")
// CHECK:        arith.minsi
// CHECK:        memref.load %{{.*}} : memref<?x37xf32>
// CHECK:        arith.select
// CHECK:        memref.store {{.*}}, %[[RA]]
// CHECK:      loop.for {{.*}} name("fetch_b.part")
// CHECK:        memref.load %{{.*}} : memref<13x37xf32>
// CHECK:      loop.for {{.*}} name("k.outer")
// CHECK-NOT:    "gpu.barrier"()
// CHECK:        memref.load %[[RA]]
// CHECK-NEXT:   memref.store {{.*}} : memref<16x68xf32, 3 : i32>
// CHECK-NOT:    "gpu.barrier"()
// CHECK:        memref.load %[[RB]]
// CHECK-NEXT:   memref.store {{.*}} : memref<16x68xf32, 3 : i32>
// CHECK-NOT:    "gpu.barrier"()
// CHECK:        memref.load %{{.*}} : memref<?x37xf32>
// CHECK:        memref.store {{.*}}, %[[RA]]
// CHECK-NOT:    "gpu.barrier"()
// CHECK:        memref.load %{{.*}} : memref<13x37xf32>
// CHECK:        memref.store {{.*}}, %[[RB]]
// CHECK:        "gpu.barrier"()
// CHECK:        loop.for {{.*}} unrolled name("k.inner")
// CHECK:          memref.load {{.*}} : memref<16x68xf32, 3 : i32>
// CHECK:          arith.mulf
// CHECK:          arith.addf
// CHECK:        "gpu.barrier"()
// CHECK-NEXT: }
// CHECK:      loop.for {{.*}} name("in_bounds")
// CHECK:        memref.store {{.*}} : memref<?x13xf32>
// CHECK:      gpu.known_block_size = array<i32: 16, 16, 1>
// CHECK-SAME: tk.gpu_strategy = "gemm_shared"

// CHECK:      arith.minsi %{{.*}}, %{{.*}} : index
// CHECK:      "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK:      "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK:      loop.for {{.*}} name("elements")
// CHECK:        arith.remui
// CHECK:        arith.maximumf
// CHECK:      {sym_name = "relu_0", gpu.known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: tk.gpu_strategy = "grid_stride"

// rowdot: no shared tiles, no barrier: a warp per output, its lanes striding over k
// and combining with xor shuffles
// CHECK-NOT:  3 : i32>
// CHECK-NOT:  "gpu.barrier"
// CHECK:      loop.for {{.*}} name("k0")
// CHECK:      loop.shuffle_xor {{.*}} 16
// CHECK:      loop.shuffle_xor {{.*}} 1
// CHECK:      loop.for {{.*}} name("write")
// CHECK:      tk.gpu_strategy = "warp_reduction"

// CUDA:       extern "C" __global__ void __launch_bounds__(256) dense_0(const float* __restrict__ {{.*}}, int {{.*}}_d0, const float* __restrict__ {{.*}}, float* __restrict__ {{.*}}, int {{.*}}_d0)
// CUDA:       __shared__ __align__(16) float {{.*}}[1088];
// CUDA:       float {{.*}}[16];
// CUDA:       #pragma unroll
// CUDA:       __syncthreads();
// CUDA:       __global__ void __launch_bounds__(256) relu_0(
// CUDA:       (int)blockIdx.x
// CUDA:       (int)threadIdx.x
// CUDA:       for (int elements = 
