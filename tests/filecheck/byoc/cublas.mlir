// RUN: tensorkiln-opt %s -p 'partition{backend=cublas}' | filecheck %s
// RUN: tensorkiln-opt %s -p 'partition{backend=example_npu},merge-composites,annotate-codegen,run-codegen,graph-to-te,te-to-loop,gpu-default-schedule,loop-to-gpu' | filecheck %s --check-prefix=GPU

// cuBLAS takes the GEMM patterns (the fused one first); the exp between the products
// stays ours, so the two composites are not merged.
func.func @main(%x: tensor<?x8xf32, #graph.dims<n, _>>) -> tensor<?x3xf32, #graph.dims<n, _>> {
  %w = graph.constant dense<0.5> : tensor<4x8xf32>
  %b = graph.constant dense<0.25> : tensor<4xf32>
  %d = graph.dense %x, %w, %b : tensor<?x8xf32, #graph.dims<n, _>>, tensor<4x8xf32>, tensor<4xf32> -> tensor<?x4xf32, #graph.dims<n, _>>
  %r = graph.relu %d : tensor<?x4xf32, #graph.dims<n, _>>
  %s = graph.exp %r : tensor<?x4xf32, #graph.dims<n, _>>
  %w2 = graph.constant dense<0.125> : tensor<3x4xf32>
  %e = graph.dense %s, %w2 : tensor<?x4xf32, #graph.dims<n, _>>, tensor<3x4xf32> -> tensor<?x3xf32, #graph.dims<n, _>>
  func.return %e : tensor<?x3xf32, #graph.dims<n, _>>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[R:.*]] = byoc.composite "cublas.dense_bias_act" (%x)
// CHECK:           graph.dense
// CHECK-NEXT:      graph.relu
// CHECK:         %[[S:.*]] = graph.exp %[[R]]
// CHECK-NEXT:    %{{.*}} = byoc.composite "cublas.dense" (%[[S]])

// On the CUDA target the host function calls each external module between the kernel
// launches, on the global buffers it allocated (the codegen here is the NPU's: cuBLAS's
// needs a GPU; the host IR is the same). backends/cuda/host.py prints each call as
// rt.call_external(symbol, buffers).
// GPU-LABEL:   func.func @main(%x: memref<?x8xf32>, %out0: memref<?x3xf32>)
// GPU:           %[[T:.*]] = loop.alloc(%{{.*}}) {scope = "global"} : memref<?x4xf32>
// GPU-NEXT:      func.call @example_npu_main_0(%x, %[[T]]) : (memref<?x8xf32>, memref<?x4xf32>) -> ()
// GPU:           %[[U:.*]] = loop.alloc(%{{.*}}) {scope = "global"} : memref<?x4xf32>
// GPU:           "gpu.launch_func"({{.*}}, %[[T]], %[[U]]) <{kernel = @kernels::@exp_0
// GPU-NEXT:      func.call @example_npu_main_1(%[[U]], %out0) : (memref<?x4xf32>, memref<?x3xf32>) -> ()
// GPU:         func.func private @example_npu_main_0(memref<?x8xf32>, memref<?x4xf32>) -> ()
// GPU-NEXT:    func.func private @example_npu_main_1(memref<?x4xf32>, memref<?x3xf32>) -> ()
// GPU:         "gpu.module"() <{sym_name = "kernels"}>
