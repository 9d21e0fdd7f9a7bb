// RUN: tensorkiln-opt %s -p 'apply-schedule{kernel="relu_0" trace="[{\"primitive\": \"split\", \"args\": {\"loop\": \"i1\", \"factor\": 4}}, {\"primitive\": \"vectorize\", \"args\": {\"loop\": \"i1.inner\"}}, {\"primitive\": \"parallel\", \"args\": {\"loop\": \"i0\"}}]"}' | filecheck %s
// RUN: not tensorkiln-opt %s -p 'apply-schedule{kernel="relu_0" trace="[{\"primitive\": \"split\", \"args\": {\"loop\": \"k9\", \"factor\": 4}}]"}' 2>&1 | filecheck %s --check-prefix=ERROR

// A stored trace (JSON, quotes escaped in the pass option) replayed on one kernel.

func.func @relu_0(%x: memref<?x7xf32>, %y: memref<?x7xf32>) attributes {tk.kernel = "relu"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %zero = arith.constant 0.0 : f32
  %n = loop.dim %y, 0 : memref<?x7xf32>
  loop.for %i = %c0 to %n step %c1 name("i0") {
    loop.for %j = %c0 to %c7 step %c1 name("i1") {
      %v = loop.load %x[%i, %j] : memref<?x7xf32>
      %r = arith.maximumf %v, %zero : f32
      loop.store %r, %y[%i, %j] : memref<?x7xf32>
    }
  }
  func.return
}

// CHECK:      loop.for %[[I:.*]] = {{.*}} parallel name("i0") {
// CHECK-NEXT:   loop.for %[[JO:.*]] = {{.*}} name("i1.outer") {
// CHECK-NEXT:     %{{.*}} = arith.subi
// CHECK-NEXT:     %[[T:.*]] = arith.minsi
// CHECK-NEXT:     loop.for %[[JI:.*]] = %{{.*}} to %[[T]] step %{{.*}} vectorized name("i1.inner") {
// CHECK-NEXT:       %[[J:.*]] = arith.addi %[[JO]], %[[JI]] : index
// CHECK-NEXT:       %{{.*}} = loop.load %{{.*}}[%[[I]], %[[J]]] : memref<?x7xf32>

// ERROR: apply-schedule on 'relu_0': split: (replaying step 0) split: no loop named 'k9' in kernel 'relu_0' (loops: i0, i1)
