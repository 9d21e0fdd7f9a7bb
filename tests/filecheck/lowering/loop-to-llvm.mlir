// RUN: tensorkiln-opt %s -p loop-to-llvm | filecheck %s
// RUN: tensorkiln-opt %s -p loop-to-llvm -t llvm | filecheck %s --check-prefix=LLVMIR

// Buffers become a pointer plus one i64 per dynamic dim; loops become blocks with
// the induction variable as a block argument; accesses are inbounds GEPs on the
// row-major offset; local buffers are entry-block allocas, global ones aligned_alloc.

func.func @scale(%A: memref<?x8xf32>, %B: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = loop.dim %A, 0 : memref<?x8xf32>
  %two = arith.constant 2.0 : f32
  %acc = loop.alloc() {scope = "local"} : memref<f32>
  %t = loop.alloc(%n) {scope = "global"} : memref<?x8xf32>
  loop.for %i = %c0 to %n step %c1 name("i") {
    loop.for %j = %c0 to %c8 step %c1 name("j") {
      %x = loop.load %A[%i, %j] : memref<?x8xf32>
      %y = arith.mulf %x, %two fastmath<contract> : f32
      %e = math.tanh %y : f32
      loop.store %e, %B[%i, %j] : memref<?x8xf32>
    }
  }
  loop.free %t : memref<?x8xf32>
  func.return
}

// CHECK-LABEL: llvm.func @scale(
// CHECK-SAME:      %A: !llvm.ptr {llvm.noalias}, %[[N:.*]]: i64, %B: !llvm.ptr {llvm.noalias}, %{{.*}}: i64) {
// CHECK:         %[[A:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 64 : i64}
// CHECK-NEXT:    llvm.bitcast %[[A]] : !llvm.ptr to !llvm.ptr
// CHECK-NEXT:    llvm.br ^[[CODE:.*]]
// CHECK:       ^[[CODE]]:
// CHECK:         %[[HEAP:.*]] = llvm.call @aligned_alloc(%{{.*}}, %{{.*}}) : (i64, i64) -> !llvm.ptr
// CHECK:         llvm.br ^[[HEADER:.*]](%{{.*}} : i64)
// CHECK-NEXT:  ^[[HEADER]](%[[I:.*]]: i64):
// CHECK-NEXT:    %[[IN:.*]] = llvm.icmp "slt" %[[I]], %[[N]] : i64
// CHECK-NEXT:    llvm.cond_br %[[IN]], ^{{.*}}, ^[[EXIT:.*]]
// CHECK:         %[[ROW:.*]] = llvm.mul %[[I]], %{{.*}} : i64
// CHECK-NEXT:    %[[OFF:.*]] = llvm.add %{{.*}}, %[[ROW]] : i64
// CHECK-NEXT:    %[[PTR:.*]] = llvm.getelementptr inbounds %A[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[PTR]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[Y:.*]] = llvm.fmul %[[X]], %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK:         llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK:         llvm.add %{{.*}}, %{{.*}} overflow<nsw> : i64
// CHECK:       ^[[EXIT]]:
// CHECK-NEXT:    llvm.call @free(%[[HEAP]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-DAG:   llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK-DAG:   llvm.func @free(!llvm.ptr)
// CHECK-NOT:   loop.

// LLVMIR:      define void @"scale"(ptr noalias %{{.*}}, i64 %{{.*}}, ptr noalias %{{.*}}, i64 %{{.*}})
// LLVMIR:        alloca float, i64 1, align 64
// LLVMIR:        phi i64
// LLVMIR:        getelementptr inbounds float, ptr
// LLVMIR:        fmul contract float
// LLVMIR:        call ccc void @"free"
