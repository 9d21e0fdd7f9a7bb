// RUN: tensorkiln-opt %s -p loop-to-llvm | filecheck %s
// RUN: tensorkiln-opt %s -p 'loop-to-llvm{vector_bits=256}' | filecheck %s --check-prefix=AVX2
// RUN: tensorkiln-opt %s -p loop-to-llvm -t llvm | filecheck %s --check-prefix=LLVMIR

// Loop kinds. A parallel loop is outlined into a body function (captured values as
// arguments, buffer pointers still noalias) and a piece function that unpacks an array
// of 8-byte slots (the captures, then the step) and runs the body on [begin, end); the
// caller fills the slots and calls the thread pool's tk_parallel_for with the thread
// count read from @tk_num_threads and the loop's thread cap (none here). A vectorized loop is
// a main loop over 16 f32 lanes (8 with 256-bit vectors), then the scalar remainder. A
// reassociable reduction first runs 4 vectors per trip into 4 accumulators (independent
// adds), which are added up for a one-vector loop, whose accumulator is folded after it. A small unrolled loop is its
// body once per iteration with constant indices.

func.func @par(%A: memref<?x8xf32>, %B: memref<?x8xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = loop.dim %A, 0 : memref<?x8xf32>
  %scale = loop.load %s[] : memref<f32>
  loop.for %i = %c0 to %n step %c1 parallel name("i") {
    loop.for %j = %c0 to %c8 step %c1 name("j") {
      %x = loop.load %A[%i, %j] : memref<?x8xf32>
      %y = arith.mulf %x, %scale : f32
      loop.store %y, %B[%i, %j] : memref<?x8xf32>
    }
  }
  func.return
}

// CHECK-LABEL: llvm.func @par(
// CHECK-SAME:      %A: !llvm.ptr {llvm.noalias}, %[[N:.*]]: i64, %B: !llvm.ptr {llvm.noalias}, %[[NB:.*]]: i64, %s: !llvm.ptr {llvm.noalias}) {
// CHECK:         %[[SLOTS:.*]] = llvm.alloca %{{.*}} x !llvm.ptr {alignment = 8 : i64}
// CHECK:         %[[SCALE:.*]] = llvm.load %s : !llvm.ptr -> f32
// CHECK:         %[[P0:.*]] = llvm.getelementptr inbounds %[[SLOTS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %A, %[[P0]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr inbounds %[[SLOTS]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.store %[[N]], %[[P1]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[BITS:.*]] = llvm.bitcast %[[SCALE]] : f32 to i32
// CHECK-NEXT:    %[[WIDE:.*]] = llvm.zext %[[BITS]] : i32 to i64
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr inbounds %[[SLOTS]][2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.store %[[WIDE]], %[[P2]] : i64, !llvm.ptr
// CHECK:         llvm.store %B, %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK:         %[[P5:.*]] = llvm.getelementptr inbounds %[[SLOTS]][5] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    llvm.store %[[STEP:.*]], %[[P5]] : i64, !llvm.ptr
// CHECK-NEXT:    %[[NT:.*]] = llvm.mlir.addressof @tk_num_threads : !llvm.ptr
// CHECK-NEXT:    %[[THREADS:.*]] = llvm.load %[[NT]] : !llvm.ptr -> i32
// CHECK-NEXT:    %[[FN:.*]] = llvm.mlir.addressof @par_parallel0 : !llvm.ptr
// CHECK-NEXT:    %[[CAP:.*]] = llvm.mlir.constant(1073741824) : i64
// CHECK-NEXT:    llvm.call @tk_parallel_for(%[[FN]], %[[SLOTS]], %{{.*}}, %[[N]], %[[STEP]], %[[THREADS]], %[[CAP]]) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i32, i64) -> ()
// CHECK-NEXT:    llvm.return

func.func @vec(%A: memref<?xf32>, %b: memref<f32>, %C: memref<?xf32>, %acc: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = loop.dim %A, 0 : memref<?xf32>
  loop.for %i = %c0 to %n step %c1 vectorized name("i") {
    %x = loop.load %A[%i] : memref<?xf32>
    %y = loop.load %b[] : memref<f32>
    %z = arith.addf %x, %y : f32
    loop.store %z, %C[%i] : memref<?xf32>
    %o = loop.load %acc[] : memref<f32>
    %s = arith.addf %o, %z fastmath<reassoc> : f32
    loop.store %s, %acc[] : memref<f32>
  }
  func.return
}

// CHECK-LABEL: llvm.func @vec(
// CHECK-SAME:      %[[A:.*]]: !llvm.ptr {llvm.noalias}, %[[N:.*]]: i64, %b: !llvm.ptr {llvm.noalias}, %C: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %acc: !llvm.ptr {llvm.noalias}) {
// CHECK:         %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK:         %[[INIT:.*]] = llvm.mlir.constant(dense<-0.000000e+00> : vector<16xf32>) : vector<16xf32>
// CHECK-NEXT:    %[[W4:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[LIMIT4:.*]] = llvm.sub %[[N]], %[[W4]] : i64
// CHECK-NEXT:    llvm.br ^[[IHEAD:.*]](%[[ZERO]], %[[INIT]], %[[INIT]], %[[INIT]], %[[INIT]] : i64, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-NEXT:  ^[[IHEAD]](%[[I4:.*]]: i64, %[[A0:.*]]: vector<16xf32>, %[[A1:.*]]: vector<16xf32>, %[[A2:.*]]: vector<16xf32>, %[[A3:.*]]: vector<16xf32>):
// CHECK-NEXT:    %[[FITS4:.*]] = llvm.icmp "sle" %[[I4]], %[[LIMIT4]] : i64
// CHECK-NEXT:    llvm.cond_br %[[FITS4]], ^{{.*}}, ^[[IEXIT:.*]]
// CHECK:         %[[N0:.*]] = llvm.fadd %[[A0]], %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc>} : vector<16xf32>
// CHECK:         llvm.add %[[I4]], %{{.*}} overflow<nsw> : i64
// CHECK:         %[[N1:.*]] = llvm.fadd %[[A1]], %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc>} : vector<16xf32>
// CHECK:         %[[N2:.*]] = llvm.fadd %[[A2]], %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc>} : vector<16xf32>
// CHECK:         %[[N3:.*]] = llvm.fadd %[[A3]], %{{.*}} {fastmathFlags = #llvm.fastmath<reassoc>} : vector<16xf32>
// CHECK-NEXT:    %[[STEP4:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[NEXT4:.*]] = llvm.add %[[I4]], %[[STEP4]] overflow<nsw> : i64
// CHECK-NEXT:    llvm.br ^[[IHEAD]](%[[NEXT4]], %[[N0]], %[[N1]], %[[N2]], %[[N3]] : i64, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-NEXT:  ^[[IEXIT]]:
// CHECK-NEXT:    %[[S01:.*]] = llvm.fadd %[[A0]], %[[A1]] {fastmathFlags = #llvm.fastmath<reassoc>} : vector<16xf32>
// CHECK-NEXT:    %[[S012:.*]] = llvm.fadd %[[S01]], %[[A2]] {fastmathFlags = #llvm.fastmath<reassoc>} : vector<16xf32>
// CHECK-NEXT:    %[[S0123:.*]] = llvm.fadd %[[S012]], %[[A3]] {fastmathFlags = #llvm.fastmath<reassoc>} : vector<16xf32>
// CHECK-NEXT:    %[[W:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    %[[LIMIT:.*]] = llvm.sub %[[N]], %[[W]] : i64
// CHECK-NEXT:    llvm.br ^[[VHEAD:.*]](%[[I4]], %[[S0123]] : i64, vector<16xf32>)
// CHECK-NEXT:  ^[[VHEAD]](%[[I:.*]]: i64, %[[VACC:.*]]: vector<16xf32>):
// CHECK-NEXT:    %[[FITS:.*]] = llvm.icmp "sle" %[[I]], %[[LIMIT]] : i64
// CHECK-NEXT:    llvm.cond_br %[[FITS]], ^{{.*}}, ^[[VEXIT:.*]]
// CHECK:         %[[PA:.*]] = llvm.getelementptr inbounds %[[A]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[PA]] {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK-NEXT:    %[[Y:.*]] = llvm.load %b : !llvm.ptr -> f32
// CHECK:         %[[ONE:.*]] = llvm.insertelement %[[Y]], %{{.*}}[%{{.*}} : i32] : vector<16xf32>
// CHECK-NEXT:    %[[SPLAT:.*]] = llvm.shufflevector %[[ONE]], %[[ONE]] [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] : vector<16xf32>
// CHECK-NEXT:    %[[Z:.*]] = llvm.fadd %[[X]], %[[SPLAT]] : vector<16xf32>
// CHECK-NEXT:    %[[PC:.*]] = llvm.getelementptr inbounds %C[%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[Z]], %[[PC]] {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// CHECK-NEXT:    %[[NACC:.*]] = llvm.fadd %[[VACC]], %[[Z]] {fastmathFlags = #llvm.fastmath<reassoc>} : vector<16xf32>
// CHECK-NEXT:    %[[W2:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    %[[NEXT:.*]] = llvm.add %[[I]], %[[W2]] overflow<nsw> : i64
// CHECK-NEXT:    llvm.br ^[[VHEAD]](%[[NEXT]], %[[NACC]] : i64, vector<16xf32>)
// CHECK-NEXT:  ^[[VEXIT]]:
// CHECK-NEXT:    %[[OLD:.*]] = llvm.load %acc : !llvm.ptr -> f32
// CHECK-NEXT:    %[[SUM:.*]] = "llvm.intr.vector.reduce.fadd"(%[[OLD]], %[[VACC]]) {{.*}} : (f32, vector<16xf32>) -> f32
// CHECK-NEXT:    llvm.store %[[SUM]], %acc : f32, !llvm.ptr
// CHECK-NEXT:    llvm.br ^[[SHEAD:.*]](%[[I]] : i64)
// CHECK-NEXT:  ^[[SHEAD]](%[[J:.*]]: i64):
// CHECK-NEXT:    %{{.*}} = llvm.icmp "slt" %[[J]], %[[N]] : i64
// CHECK:         llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK:         llvm.return

// AVX2-LABEL: llvm.func @vec(
// AVX2:         llvm.mlir.constant(dense<-0.000000e+00> : vector<8xf32>) : vector<8xf32>
// AVX2:         llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>

func.func @unroll(%A: memref<3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1.0 : f32
  loop.for %i = %c0 to %c3 step %c1 unrolled name("i") {
    %x = loop.load %A[%i] : memref<3xf32>
    %y = arith.addf %x, %one : f32
    loop.store %y, %A[%i] : memref<3xf32>
  }
  func.return
}

// CHECK-LABEL: llvm.func @unroll(
// CHECK-NOT:     llvm.cond_br
// CHECK:         llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK-NEXT:    %[[K0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %{{.*}} = llvm.getelementptr inbounds %{{.*}}[%[[K0]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[K1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %{{.*}} = llvm.getelementptr inbounds %{{.*}}[%[[K1]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[K2:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %{{.*}} = llvm.getelementptr inbounds %{{.*}}[%[[K2]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NOT:     llvm.cond_br
// CHECK:         llvm.return

// The inner loop of a split (trip count min(2, n - xo), at most 2): two copies, each
// behind its guard iv < ub; the first failing guard leaves.

func.func @unroll_split(%A: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1.0 : f32
  %n = loop.dim %A, 0 : memref<?xf32>
  loop.for %xo = %c0 to %n step %c2 name("x.outer") {
    %rest = arith.subi %n, %xo : index
    %m = arith.minsi %c2, %rest : index
    loop.for %xi = %c0 to %m step %c1 unrolled name("x.inner") {
      %x = arith.addi %xo, %xi : index
      %a = loop.load %A[%x] : memref<?xf32>
      %b = arith.addf %a, %one : f32
      loop.store %b, %A[%x] : memref<?xf32>
    }
  }
  func.return
}

// CHECK-LABEL: llvm.func @unroll_split(
// CHECK:         %[[UB:.*]] = llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i64
// CHECK-NEXT:    %[[K0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[G0:.*]] = llvm.icmp "slt" %[[K0]], %[[UB]] : i64
// CHECK-NEXT:    llvm.cond_br %[[G0]], ^[[COPY0:.*]], ^[[DONE:.*]]
// CHECK-NEXT:  ^[[COPY0]]:
// CHECK:         llvm.fadd
// CHECK:         %[[K1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[G1:.*]] = llvm.icmp "slt" %[[K1]], %[[UB]] : i64
// CHECK-NEXT:    llvm.cond_br %[[G1]], ^[[COPY1:.*]], ^[[DONE]]
// CHECK-NEXT:  ^[[COPY1]]:
// CHECK:         llvm.fadd
// CHECK:         llvm.br ^[[DONE]]
// CHECK-NEXT:  ^[[DONE]]:
// CHECK-NOT:     llvm.fadd
// CHECK:         llvm.return

// CHECK:       llvm.mlir.global external @tk_num_threads() {addr_space = 0 : i32} : i32

// CHECK-LABEL: llvm.func @par_parallel0_body(
// CHECK-SAME:      %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %scale: f32, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: i64, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64, %[[STEP:.*]]: i64) {
// CHECK:         llvm.br ^[[HEAD:.*]](%[[BEGIN]] : i64)
// CHECK-NEXT:  ^[[HEAD]](%[[I:.*]]: i64):
// CHECK-NEXT:    llvm.icmp "slt" %[[I]], %[[END]] : i64
// CHECK:         llvm.fmul %{{.*}}, %scale : f32
// CHECK:         llvm.add %[[I]], %[[STEP]] overflow<nsw> : i64
// CHECK:         llvm.return

// CHECK-LABEL: llvm.func @par_parallel0(%data: !llvm.ptr, %begin: i64, %end: i64) {
// CHECK:         %[[A0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[S2:.*]] = llvm.getelementptr inbounds %data[2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[RAW:.*]] = llvm.load %[[S2]] : !llvm.ptr -> i64
// CHECK-NEXT:    %[[TRUNC:.*]] = llvm.trunc %[[RAW]] : i64 to i32
// CHECK-NEXT:    %[[SC:.*]] = llvm.bitcast %[[TRUNC]] : i32 to f32
// CHECK:         %[[S5:.*]] = llvm.getelementptr inbounds %data[5] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[ST:.*]] = llvm.load %[[S5]] : !llvm.ptr -> i64
// CHECK-NEXT:    llvm.call @par_parallel0_body(%[[A0]], %{{.*}}, %[[SC]], %{{.*}}, %{{.*}}, %begin, %end, %[[ST]]) : (!llvm.ptr, i64, f32, !llvm.ptr, i64, i64, i64, i64) -> ()
// CHECK-NEXT:    llvm.return

// CHECK-DAG:   llvm.func @tk_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64, i64, i32, i64)
// CHECK-NOT:   loop.

// LLVMIR:      @"tk_num_threads" = external global i32
// LLVMIR:      define void @"par"(
// LLVMIR:        call ccc void @"tk_parallel_for"({{.*}}@"par_parallel0", ptr %{{.*}}, i64 0, i64 %{{.*}}, i64 1, i32 %{{.*}}, i64 1073741824)
// LLVMIR:      define void @"vec"(
// LLVMIR:        load <16 x float>, ptr %{{.*}}, align 4
// LLVMIR:        fadd reassoc <16 x float>
// LLVMIR:        call float @"llvm.vector.reduce.fadd.v16f32"(float %{{.*}}, <16 x float> %{{.*}})
// LLVMIR:      define void @"par_parallel0"(ptr %{{.*}}, i64 %{{.*}}, i64 %{{.*}})
// LLVMIR:        call ccc void @"par_parallel0_body"({{.*}})
