// RUN: tensorkiln-opt %s -p bf16-storage | filecheck %s

// bfloat16 buffers become i16; extf widens the bits into a float32's high half,
// truncf rounds to nearest even (NaN -> 0x7FC0), a constant becomes its bits, a
// select moves bits.

// CHECK-LABEL: func.func @kernel(%x: memref<7xi16>, %y: memref<7xi16>)
// CHECK:         %[[V:.*]] = loop.load %x[%{{.*}}] : memref<7xi16>
// CHECK-NEXT:    %[[W:.*]] = arith.extui %[[V]] : i16 to i32
// CHECK-NEXT:    %[[S16:.*]] = arith.constant 16 : i32
// CHECK-NEXT:    %[[H:.*]] = arith.shli %[[W]], %[[S16]] : i32
// CHECK-NEXT:    %[[F:.*]] = arith.bitcast %[[H]] : i32 to f32
// CHECK-NEXT:    %[[E:.*]] = math.exp %[[F]] : f32
// CHECK-NEXT:    %[[B:.*]] = arith.bitcast %[[E]] : f32 to i32
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : i32
// CHECK-NEXT:    %[[SH:.*]] = arith.shrui %[[B]], %[[C16]] : i32
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[LSB:.*]] = arith.andi %[[SH]], %[[ONE]] : i32
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant 32767 : i32
// CHECK-NEXT:    %[[INC:.*]] = arith.addi %[[LSB]], %[[HALF]] : i32
// CHECK-NEXT:    %[[RND:.*]] = arith.addi %[[B]], %[[INC]] : i32
// CHECK-NEXT:    %[[TOP:.*]] = arith.shrui %[[RND]], %[[C16]] : i32
// CHECK-NEXT:    %[[T16:.*]] = arith.trunci %[[TOP]] : i32 to i16
// CHECK-NEXT:    %[[NAN:.*]] = arith.cmpf uno, %[[E]], %[[E]] : f32
// CHECK-NEXT:    %[[QNAN:.*]] = arith.constant 32704 : i16
// CHECK-NEXT:    %[[R:.*]] = arith.select %[[NAN]], %[[QNAN]], %[[T16]] : i16
// CHECK-NEXT:    %[[K:.*]] = arith.constant 16320 : i16
// CHECK-NEXT:    %[[P:.*]] = arith.cmpf ogt, %[[F]], %[[F]] : f32
// CHECK-NEXT:    %[[SEL:.*]] = arith.select %[[P]], %[[R]], %[[K]] : i16
// CHECK-NEXT:    loop.store %[[SEL]], %y[%{{.*}}] : memref<7xi16>
// CHECK-NOT:     bf16
func.func @kernel(%x: memref<7xbf16>, %y: memref<7xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  loop.for %i = %c0 to %c7 step %c1 name("i0") {
    %v = loop.load %x[%i] : memref<7xbf16>
    %f = arith.extf %v : bf16 to f32
    %e = math.exp %f : f32
    %r = arith.truncf %e : f32 to bf16
    %k = arith.constant 1.5 : bf16
    %p = arith.cmpf ogt, %f, %f : f32
    %s = arith.select %p, %r, %k : bf16
    loop.store %s, %y[%i] : memref<7xbf16>
  }
  func.return
}
