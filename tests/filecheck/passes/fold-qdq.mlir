// RUN: tensorkiln-opt %s -p fold-qdq | filecheck %s

// A dequantize -> conv2d -> relu -> quantize island becomes one qconv2d with relu and an
// int32 bias; a matmul with a constant right operand becomes a qdense on its transpose; a
// product whose weight is not a constant stays float32 with the reason attached.

// CHECK-LABEL: func.func @conv
// CHECK:         %[[B:.*]] = graph.constant #graph.weight<"bias.q{{.*}}"> : tensor<4xi32>
// CHECK-NEXT:    %[[Y:.*]] = graph.qconv2d %x, %w, %[[B]] quant(%xs, %xz, %ws, %wz, %ys, %yz) {x_dtype = "ui8", y_dtype = "ui8", relu = true, padding = array<i64: 1, 1, 1, 1>}
// CHECK-NOT:     graph.conv2d
// CHECK-NOT:     graph.quantize
// CHECK:         func.return %[[Y]]
// CHECK-LABEL: func.func @matmul
// CHECK:         graph.matmul %xf, %vf {tk.qdq = "the weight is not a constant"}
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %w {perm = array<i64: 1, 0>} : tensor<5x3xi8> -> tensor<3x5xi8>
// CHECK-NEXT:    %[[Q:.*]] = graph.qdense %x, %[[T]] quant(%s, %z, %s, %z, %s, %z) : tensor<2x5xi8>, tensor<3x5xi8>
// CHECK:         func.return %[[Q]], %u

func.func @conv(%x: tensor<1x3x6x6xui8>) -> tensor<1x4x6x6xui8> {
  %xs = graph.constant dense<0.05> : tensor<f32>
  %xz = graph.constant dense<128> : tensor<ui8>
  %w = graph.constant dense<3> : tensor<4x3x3x3xi8>
  %ws = graph.constant dense<[0.01, 0.02, 0.01, 0.02]> : tensor<4xf32>
  %wz = graph.constant dense<0> : tensor<4xi8>
  %b = graph.constant dense<[0.5, -0.5, 1.0, 0.0]> : tensor<4xf32>
  %ys = graph.constant dense<0.1> : tensor<f32>
  %yz = graph.constant dense<0> : tensor<ui8>
  %xf = graph.dequantize %x, %xs, %xz {dtype = "ui8"} : tensor<1x3x6x6xui8>, tensor<f32>, tensor<ui8> -> tensor<1x3x6x6xf32>
  %wf = graph.dequantize %w, %ws, %wz {axis = 0 : i64} : tensor<4x3x3x3xi8>, tensor<4xf32>, tensor<4xi8> -> tensor<4x3x3x3xf32>
  %c = graph.conv2d %xf, %wf, %b {padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<1x4x6x6xf32>
  %r = graph.relu %c : tensor<1x4x6x6xf32>
  %y = graph.quantize %r, %ys, %yz {dtype = "ui8"} : tensor<1x4x6x6xf32>, tensor<f32>, tensor<ui8> -> tensor<1x4x6x6xui8>
  func.return %y : tensor<1x4x6x6xui8>
}

func.func @matmul(%x: tensor<2x5xi8>, %v: tensor<5x3xi8>) -> (tensor<2x3xi8>, tensor<2x3xi8>) {
  %s = graph.constant dense<0.1> : tensor<f32>
  %z = graph.constant dense<0> : tensor<i8>
  %w = graph.constant dense<1> : tensor<5x3xi8>
  %xf = graph.dequantize %x, %s, %z : tensor<2x5xi8>, tensor<f32>, tensor<i8> -> tensor<2x5xf32>
  %wf = graph.dequantize %w, %s, %z : tensor<5x3xi8>, tensor<f32>, tensor<i8> -> tensor<5x3xf32>
  %vf = graph.dequantize %v, %s, %z : tensor<5x3xi8>, tensor<f32>, tensor<i8> -> tensor<5x3xf32>
  %m = graph.matmul %xf, %wf : tensor<2x5xf32>, tensor<5x3xf32> -> tensor<2x3xf32>
  %n = graph.matmul %xf, %vf : tensor<2x5xf32>, tensor<5x3xf32> -> tensor<2x3xf32>
  %y = graph.quantize %m, %s, %z : tensor<2x3xf32>, tensor<f32>, tensor<i8> -> tensor<2x3xi8>
  %u = graph.quantize %n, %s, %z : tensor<2x3xf32>, tensor<f32>, tensor<i8> -> tensor<2x3xi8>
  func.return %y, %u : tensor<2x3xi8>, tensor<2x3xi8>
}

// A max pool between a dequantize and a quantize at the same scale and zero point pools the
// quantized bytes (passes/fold_qdq_selections.py).

// CHECK-LABEL: func.func @pool
// CHECK-NOT:     graph.dequantize
// CHECK:         %[[P:.*]] = graph.max_pool2d %q {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x5x7xi8> -> tensor<1x3x3x4xi8>
// CHECK-NEXT:    func.return %[[P]]

func.func @pool(%q: tensor<1x3x5x7xi8>) -> tensor<1x3x3x4xi8> {
  %s = graph.constant dense<0.1> : tensor<f32>
  %z = graph.constant dense<-5> : tensor<i8>
  %f = graph.dequantize %q, %s, %z : tensor<1x3x5x7xi8>, tensor<f32>, tensor<i8> -> tensor<1x3x5x7xf32>
  %p = graph.max_pool2d %f {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : tensor<1x3x5x7xf32> -> tensor<1x3x3x4xf32>
  %y = graph.quantize %p, %s, %z : tensor<1x3x3x4xf32>, tensor<f32>, tensor<i8> -> tensor<1x3x3x4xi8>
  func.return %y : tensor<1x3x3x4xi8>
}

// A quantized sum of two dequantized bytes multiplies by the reciprocal of its scale where that
// rounds all 65536 sums as the division does (passes/fold_qdq_reciprocal.py).

// CHECK-LABEL: func.func @sum
// CHECK:         %x = graph.add %af, %cf
// CHECK-NEXT:    %[[R:.*]] = graph.constant #graph.weight<"quantize.reciprocal"> : tensor<f32>
// CHECK-NEXT:    %[[ONE:.*]] = graph.constant #graph.weight<"one"> : tensor<f32>
// CHECK-NEXT:    %[[M:.*]] = graph.mul %x, %[[R]]
// CHECK-NEXT:    %[[Y:.*]] = graph.quantize %[[M]], %[[ONE]], %z {dtype = "ui8"}
// CHECK-NEXT:    func.return %[[Y]]

func.func @sum(%a: tensor<2x3xui8>, %c: tensor<2x3xui8>) -> tensor<2x3xui8> {
  %sa = graph.constant dense<0.05> : tensor<f32>
  %sc = graph.constant dense<0.04> : tensor<f32>
  %s = graph.constant dense<0.07> : tensor<f32>
  %za = graph.constant dense<120> : tensor<ui8>
  %zc = graph.constant dense<100> : tensor<ui8>
  %z = graph.constant dense<7> : tensor<ui8>
  %af = graph.dequantize %a, %sa, %za {dtype = "ui8"} : tensor<2x3xui8>, tensor<f32>, tensor<ui8> -> tensor<2x3xf32>
  %cf = graph.dequantize %c, %sc, %zc {dtype = "ui8"} : tensor<2x3xui8>, tensor<f32>, tensor<ui8> -> tensor<2x3xf32>
  %x = graph.add %af, %cf : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %y = graph.quantize %x, %s, %z {dtype = "ui8"} : tensor<2x3xf32>, tensor<f32>, tensor<ui8> -> tensor<2x3xui8>
  func.return %y : tensor<2x3xui8>
}
