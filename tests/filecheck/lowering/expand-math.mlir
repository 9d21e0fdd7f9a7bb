// RUN: tensorkiln-opt %s -p expand-math | filecheck %s

// f32 exp/log/tanh/erf/expm1/log1p/powf become branch-free arith code (exponent bits handled as i32
// through bitcasts); f64 math is left to the intrinsics/libm.

func.func @exp32(%x: f32) -> f32 {
  %y = math.exp %x : f32
  func.return %y : f32
}

// CHECK-LABEL: func.func @exp32(%x: f32) -> f32 {
// CHECK-NOT:     math.exp
// CHECK:         arith.cmpf olt, %x, %{{.*}} : f32
// CHECK:         arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK:         arith.bitcast %{{.*}} : f32 to i32
// CHECK:         arith.shli %{{.*}}, %{{.*}} : i32
// CHECK:         arith.bitcast %{{.*}} : i32 to f32
// CHECK:         %[[SCALE:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT:    %y = arith.mulf %{{.*}}, %[[SCALE]] fastmath<contract> : f32
// CHECK-NEXT:    func.return %y : f32

func.func @exp64(%x: f64) -> f64 {
  %y = math.exp %x : f64
  func.return %y : f64
}

// CHECK-LABEL: func.func @exp64(%x: f64) -> f64 {
// CHECK-NEXT:    %y = math.exp %x : f64
// CHECK-NEXT:    func.return %y : f64

func.func @log_tanh_erf(%x: f32) -> f32 {
  %a = math.log %x : f32
  %b = math.tanh %a : f32
  %c = math.erf %b : f32
  func.return %c : f32
}

// CHECK-LABEL: func.func @log_tanh_erf(
// CHECK-NOT:     math.log
// CHECK-NOT:     math.tanh
// CHECK-NOT:     math.erf
// CHECK:         func.return %c : f32

func.func @expm1_log1p(%x: f32) -> (f32, f32, f64) {
  %a = math.expm1 %x : f32
  %b = math.log1p %x : f32
  %w = arith.extf %x : f32 to f64
  %c = math.expm1 %w : f64
  func.return %a, %b, %c : f32, f32, f64
}

// expm1 keeps +-0 (select on x == 0); log1p maps -1 to -inf; the f64 op stays.
// CHECK-LABEL: func.func @expm1_log1p(
// CHECK-NOT:     math.expm1 %x
// CHECK-NOT:     math.log1p
// CHECK:         arith.cmpf oeq, %x, %{{.*}} : f32
// CHECK:         %a = arith.select %{{.*}}, %x, %{{.*}} : f32
// CHECK:         arith.cmpf oeq, %x, %{{.*}} : f32
// CHECK:         %b = arith.select
// CHECK:         %c = math.expm1 %w : f64
// CHECK-NEXT:    func.return %a, %b, %c : f32, f32, f64

func.func @cube(%x: f32) -> f32 {
  %c = arith.constant 3.0 : f32
  %y = math.powf %x, %c : f32
  func.return %y : f32
}

// CHECK-LABEL: func.func @cube(%x: f32) -> f32 {
// CHECK:         %[[SQ:.*]] = arith.mulf %x, %x fastmath<contract> : f32
// CHECK-NEXT:    %y = arith.mulf %[[SQ]], %x fastmath<contract> : f32
// CHECK-NEXT:    func.return %y : f32

func.func @pow(%a: f32, %b: f32) -> f32 {
  %y = math.powf %a, %b : f32
  func.return %y : f32
}

// CHECK-LABEL: func.func @pow(%a: f32, %b: f32) -> f32 {
// CHECK-NOT:     math.powf
// CHECK:         arith.extf %a : f32 to f64
// CHECK:         arith.bitcast %{{.*}} : f64 to i64
// CHECK:         arith.truncf %{{.*}} : f64 to f32
// CHECK:         func.return %y : f32
