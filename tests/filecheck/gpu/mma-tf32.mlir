// One warp multiplies a 16 x 8 tile A by an 8 x 8 tile B on the tensor cores: each
// lane loads its 4 elements of A and 2 of B at the places PTX's m16n8k8 layout gives
// (g = lane / 4, t = lane % 4: a0 at (g, t), a1 (g + 8, t), a2 (g, t + 4), a3
// (g + 8, t + 4); b0 at (t, g), b1 (t + 4, g)) and stores its 4 elements of D (c0 at
// (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1)). loop-to-gpu keeps
// loop.mma_tf32; emulate-gpu splits the code there (every lane stores its operands, A
// and B rounded to TF32, then each lane sums its 4 results from its warp's lanes); -t
// cuda prints the inline mma.sync.
// RUN: tensorkiln-opt %s -p loop-to-gpu | filecheck %s
// RUN: tensorkiln-opt %s -p loop-to-gpu,emulate-gpu | filecheck %s --check-prefix=EMU
// RUN: tensorkiln-opt %s -p loop-to-gpu -t cuda | filecheck %s --check-prefix=CUDA

builtin.module {
  func.func @main(%A: memref<16x8xf32>, %B: memref<8x8xf32>, %D: memref<16x8xf32>) {
    func.call @mma(%A, %B, %D) : (memref<16x8xf32>, memref<8x8xf32>, memref<16x8xf32>) -> ()
    func.return
  }
  func.func @mma(%A: memref<16x8xf32>, %B: memref<8x8xf32>, %D: memref<16x8xf32>) attributes {tk.kernel = "mma"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %zero = arith.constant 0.0 : f32
    loop.for %b = %c0 to %c1 step %c1 blockIdx.x name("b") {
      loop.for %lane = %c0 to %c32 step %c1 threadIdx.x name("lane") {
        %g = arith.divui %lane, %c4 : index
        %t = arith.remui %lane, %c4 : index
        %g8 = arith.addi %g, %c8 : index
        %t4 = arith.addi %t, %c4 : index
        %a0 = loop.load %A[%g, %t] : memref<16x8xf32>
        %a1 = loop.load %A[%g8, %t] : memref<16x8xf32>
        %a2 = loop.load %A[%g, %t4] : memref<16x8xf32>
        %a3 = loop.load %A[%g8, %t4] : memref<16x8xf32>
        %b0 = loop.load %B[%t, %g] : memref<8x8xf32>
        %b1 = loop.load %B[%t4, %g] : memref<8x8xf32>
        %d0, %d1, %d2, %d3 = loop.mma_tf32 %a0, %a1, %a2, %a3, %b0, %b1, %zero, %zero, %zero, %zero
        %n0 = arith.muli %t, %c2 : index
        %n1 = arith.addi %n0, %c1 : index
        loop.store %d0, %D[%g, %n0] : memref<16x8xf32>
        loop.store %d1, %D[%g, %n1] : memref<16x8xf32>
        loop.store %d2, %D[%g8, %n0] : memref<16x8xf32>
        loop.store %d3, %D[%g8, %n1] : memref<16x8xf32>
      }
    }
    func.return
  }
}

// CHECK:      "gpu.func"
// CHECK:        %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = loop.mma_tf32 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}
// CHECK:      gpu.known_block_size = array<i32: 32, 1, 1>

// EMU:        func.func @mma
// The operands of every lane (A and B rounded: + 2^12, low 13 bits cleared)
// EMU:          %[[S:.*]] = loop.alloc() {scope = "local"} : memref<10x32xf32>
// EMU:          loop.for {{.*}} name("threadIdx.x")
// EMU:            arith.bitcast {{.*}} : f32 to i32
// EMU:            arith.constant 4096 : i32
// EMU:            arith.constant -8192 : i32
// EMU:            loop.store {{.*}}, %[[S]]
// Then each lane's results, from the lanes of its warp
// EMU:          loop.for {{.*}} name("threadIdx.x")
// EMU:            loop.load %[[S]]
// EMU:            arith.mulf
// EMU:            arith.addf
// EMU:            loop.store {{.*}} : memref<16x8xf32>
// EMU-NOT:      loop.mma_tf32

// CUDA:       unsigned tk_tf32(float x)
// CUDA:       asm("cvt.rna.tf32.f32
// CUDA:       asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CUDA:       extern "C" __global__ void __launch_bounds__(32) mma(
// CUDA:         float [[D0:.*]], [[D1:.*]], [[D2:.*]], [[D3:.*]];
// CUDA-NEXT:    tk_mma_tf32([[D0]], [[D1]], [[D2]], [[D3]], {{.*}});
