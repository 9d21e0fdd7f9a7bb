// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s --check-prefix=TE
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop | filecheck %s

// graph.fft and graph.rfft become te.dense_linalg routines reading a constant table of
// roots of unity (fft: w_8^t; rfft of 6 points: w_3^t, then the halves' cos/2, sin/2 of
// 2 pi k / 6 for k <= 3). Each kernel runs per matrix (i0) and per block of 8 lanes
// (scan0) its steps, each ending in a vectorized loop over the block's lanes: the
// 8-point inverse transform of the columns has two Stockham stages (radix 4, then 2:
// scan1/scan2 = p/q, then scan3/scan4), reading the input and writing the output
// directly; the rows' real transform copies the even + i odd samples into the workspace
// (copy0..2, the points vectorized), runs one radix-3 stage, separates the halves into 4
// bins (scan3) and copies them out (copy3..5). The host allocates two buffers of
// (2, points, lanes <= 8) per matrix. (No round trip through the parser: the tables are weights,
// held by reference.)

func.func @main(%re: tensor<?x8x6xf32, #graph.dims<n, _, _>>, %im: tensor<?x8x6xf32, #graph.dims<n, _, _>>) -> (tensor<?x2x8x6xf32, #graph.dims<n, _, _, _>>, tensor<?x2x8x4xf32, #graph.dims<n, _, _, _>>) {
  %y = graph.fft %re, %im {axis = -2 : i64, inverse = true} : tensor<?x8x6xf32, #graph.dims<n, _, _>>, tensor<?x8x6xf32, #graph.dims<n, _, _>> -> tensor<?x2x8x6xf32, #graph.dims<n, _, _, _>>
  %r = graph.rfft %re {axis = -1 : i64} : tensor<?x8x6xf32, #graph.dims<n, _, _>> -> tensor<?x2x8x4xf32, #graph.dims<n, _, _, _>>
  func.return %y, %r : tensor<?x2x8x6xf32, #graph.dims<n, _, _, _>>, tensor<?x2x8x4xf32, #graph.dims<n, _, _, _>>
}

// TE:       %[[ROOTS:.*]] = graph.constant #graph.weight<"roots_of_unity"> : tensor<2x8xf32>
// TE-NEXT:  %y = te.dense_linalg %re, %im, %[[ROOTS]] {routine = "fft", kind = "inverse columns"}
// TE-NEXT:  %[[TABLE:.*]] = graph.constant #graph.weight<"roots_of_unity.1"> : tensor<2x7xf32>
// TE-NEXT:  %r = te.dense_linalg %re, %[[TABLE]] {routine = "rfft", kind = "forward rows"}

// CHECK-LABEL: func.func @main(
// CHECK:         %[[W:.*]] = loop.alloc(%{{.*}}) {scope = "global"} : memref<?x2x2x8x6xf32>
// CHECK-NEXT:    func.call @fft_0(%re, %im, %w0, %out0, %[[W]])
// CHECK-NEXT:    %[[V:.*]] = loop.alloc(%{{.*}}) {scope = "global"} : memref<?x2x2x4x8xf32>
// CHECK-NEXT:    func.call @rfft_0(%re, %w1, %out1, %[[V]])

// CHECK-LABEL: func.func @fft_0(
// CHECK-SAME:    attributes {tk.kernel = "fft", tk.anchor = "fft"}
// CHECK:         name("i0") role(spatial)
// CHECK:           name("scan0") role(scan)
// CHECK:             name("scan1") role(scan)
// CHECK:               name("scan2") role(scan)
// CHECK:                 vectorized name("lane0")
// CHECK:             name("scan3") role(scan)
// CHECK:               name("scan4") role(scan)
// CHECK:                 vectorized name("lane1")
// CHECK-NOT:     name(
// CHECK:         func.return

// CHECK-LABEL: func.func @rfft_0(
// CHECK-SAME:    attributes {tk.kernel = "rfft", tk.anchor = "rfft"}
// CHECK:         name("i0") role(spatial)
// CHECK:           name("scan0") role(scan)
// CHECK:             name("copy0")
// CHECK:               name("copy1")
// CHECK:                 vectorized name("copy2")
// CHECK:             name("scan1") role(scan)
// CHECK:               name("scan2") role(scan)
// CHECK:                 vectorized name("lane0")
// CHECK:             name("scan3") role(scan)
// CHECK:               vectorized name("lane1")
// CHECK:             name("copy3")
// CHECK:               name("copy4")
// CHECK:                 vectorized name("copy5")
// CHECK-NOT:     name(
// CHECK:         func.return
