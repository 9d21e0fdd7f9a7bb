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

// A split loop: `co + ci < 32` with co stepping by 16 and 0 <= ci < 16 is decided
// for whole tiles, so the tile loop is cut at 32.

func.func @split_concat_0(%a: memref<32xf32>, %b: memref<16xf32>, %out: memref<48xf32>) attributes {tk.kernel = "split_concat"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %c16 = arith.constant 16 : index
  %c31 = arith.constant 31 : index
  %c32 = arith.constant 32 : index
  %c48 = arith.constant 48 : index
  loop.for %co = %c0 to %c48 step %c16 name("i0.outer") {
    loop.for %ci = %c0 to %c16 step %c1 vectorized name("i0.inner") {
      %c = arith.addi %co, %ci : index
      %ia0 = arith.maxsi %c, %c0 : index
      %ia = arith.minsi %ia0, %c31 : index
      %va = loop.load %a[%ia] : memref<32xf32>
      %ib0 = arith.subi %c, %c32 : index
      %ib1 = arith.maxsi %ib0, %c0 : index
      %ib = arith.minsi %ib1, %c15 : index
      %vb = loop.load %b[%ib] : memref<16xf32>
      %first = arith.cmpi slt, %c, %c32 : index
      %v = arith.select %first, %va, %vb : f32
      loop.store %v, %out[%c] : memref<48xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @split_concat_0
// CHECK:      loop.for %[[CO:.*]] = %{{.*}} to %[[C32:.*]] step %[[C16:.*]] name("i0.outer") {
// CHECK-NEXT:   loop.for %[[CI:.*]] = %{{.*}} to %[[C16]] step %{{.*}} vectorized name("i0.inner") {
// CHECK-NEXT:     %[[C:.*]] = arith.addi %[[CO]], %[[CI]] : index
// CHECK-NEXT:     %[[VA:.*]] = loop.load %{{.*}}[%[[C]]] : memref<32xf32>
// CHECK-NEXT:     loop.store %[[VA]]
// CHECK:      loop.for %[[CO2:.*]] = %[[C32]] to %{{.*}} step %[[C16]] name("i0.outer") {
// CHECK-NEXT:   loop.for %[[CI2:.*]] = %{{.*}} to %[[C16]] step %{{.*}} vectorized name("i0.inner") {
// CHECK-NEXT:     %[[C2:.*]] = arith.addi %[[CO2]], %[[CI2]] : index
// CHECK-NEXT:     %[[B:.*]] = arith.subi %[[C2]], %[[C32]] : index
// CHECK-NEXT:     %[[VB:.*]] = loop.load %{{.*}}[%[[B]]] : memref<16xf32>
// CHECK-NEXT:     loop.store %[[VB]]

// A padded border (`0 <= h + k - 1` with 0 <= k < 3) is not decided for whole
// iterations of h near the border: nothing is cut.

func.func @border_0(%x: memref<8xf32>, %out: memref<8xf32>) attributes {tk.kernel = "border"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  loop.for %h = %c0 to %c8 step %c1 name("i0") {
    loop.for %k = %c0 to %c3 step %c1 name("k0") {
      %hk = arith.addi %h, %k : index
      %src = arith.subi %hk, %c1 : index
      %inside = arith.cmpi sge, %src, %c0 : index
      %s0 = arith.maxsi %src, %c0 : index
      %s1 = arith.minsi %s0, %c7 : index
      %v = loop.load %x[%s1] : memref<8xf32>
      %r = arith.select %inside, %v, %zero : f32
      %acc = loop.load %out[%h] : memref<8xf32>
      %sum = arith.addf %acc, %r : f32
      loop.store %sum, %out[%h] : memref<8xf32>
    }
  }
  func.return
}

// CHECK-LABEL: func.func @border_0
// CHECK:       loop.for
// CHECK-NEXT:    loop.for
// CHECK:         arith.cmpi sge
// CHECK-NOT:   loop.for
// CHECK:       func.return

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
