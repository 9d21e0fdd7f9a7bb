// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | tensorkiln-opt | filecheck %s --check-prefix=LOOP
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop,loop-to-llvm | filecheck %s --check-prefix=LLVM

// The math graph ops: one math op each (sin, atan2, asinh...), C's fmod as scalar.remf on floats
// and as a guarded arith.remsi on integers (neither x % 0 nor MIN % -1 reaches the
// division), erfc and lgamma as scalar.erfc/scalar.lgamma (xDSL's math has neither);
// then llvm intrinsics, libm calls and frem.

func.func @main(%x: tensor<4x8xf32>, %y: tensor<8xf32>, %i: tensor<8xi32>, %j: tensor<8xi32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = graph.sin %x : tensor<4x8xf32>
  %l = graph.log1p %x : tensor<4x8xf32>
  %f = graph.fmod %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %k = graph.fmod %i, %j : tensor<8xi32>, tensor<8xi32> -> tensor<8xi32>
  %a = graph.atan2 %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %h = graph.asinh %x : tensor<4x8xf32>
  %e = graph.erfc %x : tensor<4x8xf32>
  %g = graph.lgamma %x : tensor<4x8xf32>
  %c = graph.copysign %x, %y : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  func.return %s, %l, %f, %k, %a, %h, %e, %g, %c : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @main(
// CHECK:         %s = te.compute(%x) {{.*}} attributes {tag = "sin"} {
// CHECK:           math.sin %{{.*}} : f32
// CHECK:         %l = te.compute(%x) {{.*}} attributes {tag = "log1p"} {
// CHECK:           math.log1p %{{.*}} : f32
// CHECK:         %f = te.compute(%x, %y) {{.*}} attributes {tag = "fmod"} {
// CHECK:           scalar.remf %{{.*}}, %{{.*}} : f32
// CHECK:         %k = te.compute(%i, %j) {{.*}} attributes {tag = "fmod"} {
// CHECK:           %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:           %[[UNSAFE:.*]] = arith.ori
// CHECK:           %[[SAFE:.*]] = arith.select %[[UNSAFE]], %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:      %[[R:.*]] = arith.remsi %{{.*}}, %[[SAFE]] : i32
// CHECK-NEXT:      %{{.*}} = arith.select %[[UNSAFE]], %[[ZERO]], %[[R]] : i32
// CHECK:         %a = te.compute(%x, %y) {{.*}} attributes {tag = "atan2"} {
// CHECK:           math.atan2 %{{.*}}, %{{.*}} : f32
// CHECK:         %h = te.compute(%x) {{.*}} attributes {tag = "asinh"} {
// CHECK:           math.asinh %{{.*}} : f32
// CHECK:         %e = te.compute(%x) {{.*}} attributes {tag = "erfc"} {
// CHECK:           scalar.erfc %{{.*}} : f32
// CHECK:         %g = te.compute(%x) {{.*}} attributes {tag = "lgamma"} {
// CHECK:           scalar.lgamma %{{.*}} : f32
// CHECK:         %c = te.compute(%x, %y) {{.*}} attributes {tag = "copysign"} {
// CHECK:           math.copysign %{{.*}}, %{{.*}} : f32
// CHECK-NOT:     = graph.

// LOOP:          scalar.remf %{{.*}}, %{{.*}} : f32
// LOOP:          scalar.erfc %{{.*}} : f32
// LOOP:          scalar.lgamma %{{.*}} : f32

// LLVM-DAG:      llvm.call_intrinsic "llvm.sin.f32"
// LLVM-DAG:      llvm.call @log1pf(
// LLVM-DAG:      llvm.frem %{{.*}}, %{{.*}} : f32
// LLVM-DAG:      llvm.srem
// LLVM-DAG:      llvm.call @atan2f(
// LLVM-DAG:      llvm.call @asinhf(
// LLVM-DAG:      llvm.call @erfcf(
// LLVM-DAG:      llvm.call @lgammaf(
// LLVM-DAG:      llvm.call_intrinsic "llvm.copysign.f32"
// LLVM-DAG:      llvm.func @log1pf(f32) -> f32
// LLVM-DAG:      llvm.func @erfcf(f32) -> f32
