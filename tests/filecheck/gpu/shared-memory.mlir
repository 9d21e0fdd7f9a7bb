// Row sums through a shared-memory chunk: barriers go between the phase that fills
// the chunk and the phase that reads it, and at the end of the serial loop around
// them (the next iteration overwrites the chunk). emulate-gpu then runs each phase
// for every thread before the next; -t cuda prints __shared__ and __syncthreads().
// RUN: tensorkiln-opt %s -p loop-to-gpu | filecheck %s
// RUN: tensorkiln-opt %s -p loop-to-gpu,emulate-gpu | filecheck %s --check-prefix=EMU
// RUN: tensorkiln-opt %s -p loop-to-gpu -t cuda | filecheck %s --check-prefix=CUDA

builtin.module {
  func.func @main(%A: memref<?x?xf32>, %B: memref<?xf32>) {
    func.call @rowsum(%A, %B) : (memref<?x?xf32>, memref<?xf32>) -> ()
    func.return
  }
  func.func @rowsum(%A: memref<?x?xf32>, %B: memref<?xf32>) attributes {tk.kernel = "rowsum"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    %rows = loop.dim %A, 0 : memref<?x?xf32>
    %cols = loop.dim %A, 1 : memref<?x?xf32>
    loop.for %r = %c0 to %rows step %c1 blockIdx.x name("r") {
      %chunk = loop.alloc() {scope = "shared"} : memref<32xf32>
      %acc = loop.alloc() {scope = "local"} : memref<f32>
      loop.store %zero, %acc[] : memref<f32>
      loop.for %k = %c0 to %cols step %c32 name("k") {
        %left = arith.subi %cols, %k : index
        %m = arith.minsi %c32, %left : index
        loop.for %t = %c0 to %m step %c1 threadIdx.x name("fill") {
          %col = arith.addi %k, %t : index
          %x = loop.load %A[%r, %col] : memref<?x?xf32>
          loop.store %x, %chunk[%t] : memref<32xf32>
        }
        loop.for %t0 = %c0 to %c1 step %c1 threadIdx.x name("add") {
          loop.for %j = %c0 to %m step %c1 name("j") {
            %y = loop.load %chunk[%j] : memref<32xf32>
            %s = loop.load %acc[] : memref<f32>
            %s2 = arith.addf %s, %y : f32
            loop.store %s2, %acc[] : memref<f32>
          }
        }
      }
      loop.for %t1 = %c0 to %c1 step %c1 threadIdx.x name("write") {
        %total = loop.load %acc[] : memref<f32>
        loop.store %total, %B[%r] : memref<?xf32>
      }
    }
    func.return
  }
}

// CHECK:      builtin.module attributes {gpu.container_module}
// CHECK:      "gpu.launch_func"
// CHECK-SAME: kernel = @kernels::@rowsum
// CHECK:      "gpu.module"() <{sym_name = "kernels"}>
// CHECK:      "gpu.block_id"() <{dimension = #gpu<dim x>}>
// CHECK:      memref.alloca() : memref<32xf32, 3 : i32>
// CHECK:      memref.alloca() : memref<f32>
// CHECK:      loop.for {{.*}} name("k") {
// CHECK:        "gpu.thread_id"() <{dimension = #gpu<dim x>}>
// CHECK:        scf.if
// CHECK:          memref.store {{.*}} : memref<32xf32, 3 : i32>
// CHECK:        "gpu.barrier"()
// CHECK:        "gpu.thread_id"()
// CHECK:        memref.load {{.*}} : memref<32xf32, 3 : i32>
// CHECK:        "gpu.barrier"()
// CHECK-NEXT: }
// CHECK-NOT:  "gpu.barrier"
// CHECK:      gpu.known_block_size = array<i32: 32, 1, 1>

// EMU-NOT:    gpu.
// EMU:        func.call @rowsum({{.*}}) : (memref<?x?xf32>, memref<?xf32>, index, index, index) -> ()
// EMU:        func.func @rowsum(
// EMU:        loop.for {{.*}} name("blockIdx.x")
// EMU:          loop.alloc() {scope = "local"} : memref<32xf32>
// EMU:          loop.alloc() {scope = "local"} : memref<32xf32>
// EMU:          loop.for {{.*}} name("k")
// EMU:            loop.for {{.*}} name("threadIdx.x")
// EMU:            loop.for {{.*}} name("threadIdx.x")

// CUDA:       extern "C" __global__ void __launch_bounds__(32) rowsum(const float* __restrict__ A, int A_d0, int A_d1, float* __restrict__ B, int B_d0)
// CUDA:       __shared__ __align__(16) float {{.*}}[32];
// CUDA:       __syncthreads();
// CUDA:       __syncthreads();
