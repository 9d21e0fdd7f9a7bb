// RUN: tensorkiln-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Malformed loop-dialect ops are reported by the verifier with the op's name, what
// was expected and what was found.

// A shuffle offset that is not a power of two: lane ^ 3 is no butterfly step.
func.func @offset_not_power_of_two(%x: f32) {
  %a = loop.shuffle_xor %x, 3, 32 : f32
  func.return
}
// CHECK: loop.shuffle_xor: offset 3 is not a power of two below the width 32 (the partner lane would leave its segment)

// -----

// The partner lane (lane ^ 16) would leave a segment of 8 lanes.
func.func @offset_past_width(%x: f32) {
  %a = loop.shuffle_xor %x, 16, 8 : f32
  func.return
}
// CHECK: loop.shuffle_xor: offset 16 is not a power of two below the width 8

// -----

// A warp has 32 lanes.
func.func @width_past_warp(%x: f32) {
  %a = loop.shuffle_xor %x, 32, 64 : f32
  func.return
}
// CHECK: loop.shuffle_xor: width 64 is not a power of two from 1 to 32

// -----

// Index values do not travel through shuffles (their C width is the printer's choice).
func.func @index_value(%x: index) {
  %a = loop.shuffle_xor %x, 1, 32 : index
  func.return
}
// CHECK: loop.shuffle_xor: cannot shuffle index (expected f16, f32, f64 or i1/i8/i16/i32/i64)

// -----

// The result has the value's type.
func.func @result_type(%x: f32) {
  %a = "loop.shuffle_xor"(%x) <{offset = 1 : i64, width = 32 : i64}> : (f32) -> i32
  func.return
}
// CHECK: loop.shuffle_xor: result i32 vs value f32

// -----

// A loop's role is one of the loop dialect's roles.
func.func @unknown_role(%A: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  loop.for %i = %c0 to %c4 step %c1 name("i0") role(diagonal) {
    %a = loop.load %A[%i] : memref<4xf32>
    loop.store %a, %A[%i] : memref<4xf32>
  }
  func.return
}
// CHECK: loop.for: unknown role 'diagonal' (expected one of spatial, reduction, scan, update, init)
