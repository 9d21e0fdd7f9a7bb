// softmax along rows of 300 (batch symbolic) is ONE kernel of row stages, and the GPU
// default schedule gives it one block per row (row_blocks): the row max as a block
// reduction (strided partials, warp shuffles, the warps' values combined by the first
// warp), a barrier, the sum of exp(x - max) the same way reading the max from shared
// memory, a barrier, then the row's 300 elements strided over the block's 256 threads.
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop,gpu-default-schedule,loop-to-gpu | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop,gpu-default-schedule,loop-to-gpu -t cuda | filecheck %s --check-prefix=CUDA

func.func @main(%x: tensor<?x300xf32, #graph.dims<n, _>>) -> tensor<?x300xf32, #graph.dims<n, _>> {
  %s = graph.softmax %x {axis = 1 : i64} : tensor<?x300xf32, #graph.dims<n, _>>
  func.return %s : tensor<?x300xf32, #graph.dims<n, _>>
}

// CHECK:       "gpu.launch_func"({{.*}}) <{kernel = @kernels::@softmax_0
// CHECK-NOT:   "gpu.launch_func"
// CHECK:       sym_name = "softmax_0"
// CHECK-SAME:    tk.gpu_strategy = "row_blocks"

// CUDA-LABEL: __global__ void __launch_bounds__(256) softmax_0(
// CUDA:         const int row = (int)blockIdx.x;
// CUDA:         const int stage0 = (int)threadIdx.x;
// CUDA:         for (int k0 = {{.*}}; k0 < {{.*}}; k0 += {{.*}}) {
// CUDA:           tk_maximumf(
// CUDA:         __shfl_xor_sync(0xffffffffu, {{.*}}, 16, 32);
// CUDA:         __syncthreads();
// CUDA:         const int stage0_warps = (int)threadIdx.x;
// CUDA:           v[[MAX:[0-9]+]][{{.*}}] = {{.*}};
// CUDA:         __syncthreads();
// CUDA-NEXT:    const int stage1 = (int)threadIdx.x;
// CUDA:         = v[[MAX]][{{.*}}];
// CUDA:         for (int k1 = {{.*}}) {
// CUDA:           expf(
// CUDA:         __syncthreads();
// CUDA:         const int stage1_warps = (int)threadIdx.x;
// CUDA:         __syncthreads();
// CUDA-NEXT:    const int elements = (int)threadIdx.x;
// CUDA:         for (int i1 = {{.*}}; i1 < {{.*}}; i1 += {{.*}}) {
// CUDA:           expf(
// CUDA:           a1[(row) * 300 + i1] =
// CUDA-NOT:     __syncthreads
// CUDA:       }
