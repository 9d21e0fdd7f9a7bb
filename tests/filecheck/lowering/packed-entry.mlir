// RUN: tensorkiln-opt %s -p loop-to-llvm | filecheck %s
// RUN: tensorkiln-opt %s -p loop-to-llvm -t llvm | filecheck %s --check-prefix=LLVMIR

// A function marked tk.packed_entry (the model's entry and kernels, external modules'
// functions) gets a companion @<name>_packed(ptr) that loads its ABI arguments -- each
// buffer's pointer, then its dynamic dims -- from consecutive 8-byte slots and calls it:
// the runtime calls it with one array (ctypes calls at most 1024 arguments).

func.func @entry(%A: memref<?x3xf32>, %B: memref<4xf32>) attributes {tk.packed_entry} {
  func.call @external(%B) : (memref<4xf32>) -> ()
  func.return
}
func.func private @external(memref<4xf32>) attributes {tk.packed_entry}

// CHECK-LABEL: llvm.func @entry(
// CHECK-SAME:      %A: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %B: !llvm.ptr {llvm.noalias})
// CHECK-LABEL: llvm.func @entry_packed(%arguments: !llvm.ptr) {
// CHECK:         %[[S0:.*]] = llvm.getelementptr inbounds %arguments[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[A:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[S1:.*]] = llvm.getelementptr inbounds %arguments[1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[N:.*]] = llvm.load %[[S1]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[S2:.*]] = llvm.getelementptr inbounds %arguments[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[B:.*]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.call @entry(%[[A]], %[[N]], %[[B]])
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func @external_packed(%arguments{{.*}}: !llvm.ptr) {
// CHECK:         %[[S:.*]] = llvm.getelementptr inbounds %arguments{{.*}}[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P:.*]] = llvm.load %[[S]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.call @external(%[[P]])
// CHECK:       llvm.func @external(!llvm.ptr)

// LLVMIR-LABEL: define void @"entry_packed"(ptr
// LLVMIR:         call ccc void @"entry"(ptr %{{.*}}, i64 %{{.*}}, ptr %{{.*}})
