// RUN: tensorkiln-opt %s -p partition-loops | filecheck %s

// A concatenation of a 3- and a 5-wide input along the vectorized loop: every element
// reads both inputs (clamped) and selects. Cut at 3, each piece reads one input at an
// unclamped index (so it stays a contiguous vector load).

func.func @concat_0(%a: memref<2x3xf32>, %b: memref<2x5xf32>, %out: memref<2x8xf32>) attributes {tk.kernel = "concat"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  loop.for %i = %c0 to %c2 step %c1 name("i0") {
    loop.for %j = %c0 to %c8 step %c1 vectorized name("i1") {
      %jb = arith.subi %j, %c3 : index
      %jb0 = arith.maxsi %jb, %c0 : index
      %jb1 = arith.minsi %jb0, %c4 : index
      %vb = loop.load %b[%i, %jb1] : memref<2x5xf32>
      %ja0 = arith.maxsi %j, %c0 : index
      %ja1 = arith.minsi %ja0, %c2 : index
      %va = loop.load %a[%i, %ja1] : memref<2x3xf32>
      %first = arith.cmpi slt, %j, %c3 : index
      %v = arith.select %first, %va, %vb : f32
      loop.store %v, %out[%i, %j] : memref<2x8xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @concat_0
// CHECK:      loop.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} name("i0") {
// CHECK-NEXT:   loop.for %[[J:.*]] = %[[C0:.*]] to %[[C3:.*]] step %{{.*}} vectorized name("i1") {
// CHECK-NEXT:     %[[VA:.*]] = loop.load %{{.*}}[%[[I]], %[[J]]] : memref<2x3xf32>
// CHECK-NEXT:     loop.store %[[VA]], %{{.*}}[%[[I]], %[[J]]] : memref<2x8xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   loop.for %[[J2:.*]] = %[[C3]] to %{{.*}} step %{{.*}} vectorized name("i1") {
// CHECK-NEXT:     %[[JB:.*]] = arith.subi %[[J2]], %[[C3]] : index
// CHECK-NEXT:     %[[VB:.*]] = loop.load %{{.*}}[%[[I]], %[[JB]]] : memref<2x5xf32>
// CHECK-NEXT:     loop.store %[[VB]], %{{.*}}[%[[I]], %[[J2]]] : memref<2x8xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// A one-element zero border (padding): the tests `1 <= h` and `h < 5` cut the loop
// into the top border, the interior and the bottom border; only the interior reads.

func.func @pad_0(%x: memref<4xf32>, %out: memref<6xf32>) attributes {tk.kernel = "pad"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  loop.for %h = %c0 to %c6 step %c1 name("i0") {
    %inside_low = arith.cmpi sge, %h, %c1 : index
    %inside_high = arith.cmpi slt, %h, %c5 : index
    %inside = arith.andi %inside_low, %inside_high : i1
    %src = arith.subi %h, %c1 : index
    %src0 = arith.maxsi %src, %c0 : index
    %src1 = arith.minsi %src0, %c3 : index
    %v = loop.load %x[%src1] : memref<4xf32>
    %r = arith.select %inside, %v, %zero : f32
    loop.store %r, %out[%h] : memref<6xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @pad_0
// CHECK:      loop.for %[[H0:.*]] = %{{.*}} to %[[ONE:.*]] step %{{.*}} name("i0") {
// CHECK-NEXT:   loop.store %[[ZERO:.*]], %{{.*}}[%[[H0]]] : memref<6xf32>
// CHECK-NEXT: }
// CHECK-NEXT: loop.for %[[H1:.*]] = %[[ONE]] to %[[FIVE:.*]] step %{{.*}} name("i0") {
// CHECK-NEXT:   %[[SRC:.*]] = arith.subi %[[H1]], %[[ONE]] : index
// CHECK-NEXT:   %[[V:.*]] = loop.load %{{.*}}[%[[SRC]]] : memref<4xf32>
// CHECK-NEXT:   loop.store %[[V]], %{{.*}}[%[[H1]]] : memref<6xf32>
// CHECK-NEXT: }
// CHECK-NEXT: loop.for %[[H2:.*]] = %[[FIVE]] to %{{.*}} step %{{.*}} name("i0") {
// CHECK-NEXT:   loop.store %[[ZERO]], %{{.*}}[%[[H2]]] : memref<6xf32>
// CHECK-NEXT: }

// Symbolic bounds: no constant cut point, the kernel is left as it was.

func.func @symbolic_0(%a: memref<?xf32>, %out: memref<?xf32>) attributes {tk.kernel = "symbolic"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %n = loop.dim %out, 0 : memref<?xf32>
  loop.for %j = %c0 to %n step %c1 name("i0") {
    %v = loop.load %a[%j] : memref<?xf32>
    %first = arith.cmpi slt, %j, %c3 : index
    %r = arith.select %first, %v, %zero : f32
    loop.store %r, %out[%j] : memref<?xf32>
  }
  func.return
}

// CHECK-LABEL: func.func @symbolic_0
// CHECK:      loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} name("i0") {
// CHECK-NEXT:   loop.load
// CHECK-NEXT:   arith.cmpi slt
// CHECK-NEXT:   arith.select
// CHECK-NEXT:   loop.store
// CHECK-NEXT: }
// CHECK-NOT:  loop.for
