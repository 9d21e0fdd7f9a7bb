// RUN: tensorkiln-opt %s -p 'partition{backend=example_npu},merge-composites,annotate-codegen,run-codegen' | filecheck %s
// RUN: tensorkiln-opt %s -p 'partition{backend=example_npu},merge-composites,annotate-codegen,run-codegen,graph-to-te,te-to-loop' | filecheck %s --check-prefix=LOOP
// RUN: tensorkiln-opt %s -p 'partition{backend=example_npu},merge-composites,annotate-codegen,run-codegen,graph-to-te,te-to-loop,loop-to-llvm' | filecheck %s --check-prefix=LLVM

// The region is compiled by the NPU codegen; what is left is a call of the external
// module, lowered like a kernel call to its symbol (declared, not defined, in the module).
func.func @main(%x: tensor<?x8xf32, #graph.dims<n, _>>) -> tensor<?x4xf32, #graph.dims<n, _>> {
  %w = graph.constant dense<0.5> : tensor<4x8xf32>
  %d = graph.dense %x, %w : tensor<?x8xf32, #graph.dims<n, _>>, tensor<4x8xf32> -> tensor<?x4xf32, #graph.dims<n, _>>
  %r = graph.relu %d : tensor<?x4xf32, #graph.dims<n, _>>
  %e = graph.exp %r : tensor<?x4xf32, #graph.dims<n, _>>
  func.return %e : tensor<?x4xf32, #graph.dims<n, _>>
}

// CHECK:       func.func @main
// CHECK-NEXT:    %[[C:.*]] = byoc.call #byoc.external<"example_npu_main_0"> (%x) : (tensor<?x8xf32, #graph.dims<n, _>>) -> (tensor<?x4xf32, #graph.dims<n, _>>)
// CHECK-NEXT:    %{{.*}} = graph.exp %[[C]]
// CHECK-NOT:     graph.constant

// LOOP:        func.func @main(%x: memref<?x8xf32>, %out0: memref<?x4xf32>)
// LOOP:          %[[T:.*]] = loop.alloc
// LOOP-NEXT:     func.call @example_npu_main_0(%x, %[[T]]) : (memref<?x8xf32>, memref<?x4xf32>) -> ()
// LOOP-NEXT:     func.call @{{.*}}(%[[T]], %out0)
// LOOP:        func.func private @example_npu_main_0(memref<?x8xf32>, memref<?x4xf32>) -> ()

// LLVM:        llvm.call @example_npu_main_0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, !llvm.ptr, i64) -> ()
// LLVM:        llvm.func @example_npu_main_0(!llvm.ptr, i64, !llvm.ptr, i64)
