// RUN: tensorkiln-opt %s --split-input-file -p conv1x1-to-dense | filecheck %s

// A channels-last 1x1 conv is a dense layer over the pixels: reshape to (pixels, C),
// the HWIO weight as (O, C), the bias kept, and back to the image.

// CHECK-LABEL: func.func @pointwise
// CHECK-NEXT:    %[[P:.*]] = graph.reshape %x {shape = array<i64: 70, 8>} : tensor<2x5x7x8xf32> -> tensor<70x8xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.reshape %w {shape = array<i64: 8, 16>} : tensor<1x1x8x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT:    %[[WT:.*]] = graph.transpose %[[W]] {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
// CHECK-NEXT:    %[[D:.*]] = graph.dense %[[P]], %[[WT]], %b : tensor<70x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<70x16xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.reshape %[[D]] {shape = array<i64: 2, 5, 7, 16>} : tensor<70x16xf32> -> tensor<2x5x7x16xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @pointwise(%x: tensor<2x5x7x8xf32>, %w: tensor<1x1x8x16xf32>, %b: tensor<16xf32>) -> tensor<2x5x7x16xf32> {
  %y = graph.conv2d %x, %w, %b {layout = "NHWC"} : tensor<2x5x7x8xf32>, tensor<1x1x8x16xf32>, tensor<16xf32> -> tensor<2x5x7x16xf32>
  func.return %y : tensor<2x5x7x16xf32>
}

// -----

// Strided: every second pixel first; a symbolic batch gives a pixel count 12*n.

// CHECK-LABEL: func.func @strided
// CHECK-NEXT:    %[[S:.*]] = graph.slice %x {axes = array<i64: 1, 2>, starts = array<i64: 0, 0>, ends = array<i64: 5, 7>, steps = array<i64: 2, 2>} : {{.*}} -> tensor<?x3x4x8xf32, #graph.dims<n, _, _, _>>
// CHECK-NEXT:    %[[P:.*]] = graph.reshape %[[S]] {{.*}} -> tensor<?x8xf32, #graph.dims<"12*n", _>>
// CHECK:         graph.dense %[[P]], %{{.*}} : tensor<?x8xf32, #graph.dims<"12*n", _>>, tensor<16x8xf32> -> tensor<?x16xf32, #graph.dims<"12*n", _>>
// CHECK-NEXT:    graph.reshape {{.*}} -> tensor<?x3x4x16xf32, #graph.dims<n, _, _, _>>
func.func @strided(%x: tensor<?x5x7x8xf32, #graph.dims<n, _, _, _>>, %w: tensor<1x1x8x16xf32>) -> tensor<?x3x4x16xf32, #graph.dims<n, _, _, _>> {
  %y = graph.conv2d %x, %w {strides = array<i64: 2, 2>, layout = "NHWC"} : tensor<?x5x7x8xf32, #graph.dims<n, _, _, _>>, tensor<1x1x8x16xf32> -> tensor<?x3x4x16xf32, #graph.dims<n, _, _, _>>
  func.return %y : tensor<?x3x4x16xf32, #graph.dims<n, _, _, _>>
}

// -----

// Kept: NCHW (convert-layout has not run), grouped, padded.

// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: graph.conv2d
// CHECK-NOT:     graph.dense
func.func @kept(%x: tensor<2x8x5x7xf32>, %w: tensor<16x8x1x1xf32>, %v: tensor<2x5x7x8xf32>, %g: tensor<1x1x4x16xf32>, %p: tensor<1x1x8x16xf32>) -> (tensor<2x16x5x7xf32>, tensor<2x5x7x16xf32>, tensor<2x7x9x16xf32>) {
  %a = graph.conv2d %x, %w : tensor<2x8x5x7xf32>, tensor<16x8x1x1xf32> -> tensor<2x16x5x7xf32>
  %b = graph.conv2d %v, %g {groups = 2 : i64, layout = "NHWC"} : tensor<2x5x7x8xf32>, tensor<1x1x4x16xf32> -> tensor<2x5x7x16xf32>
  %c = graph.conv2d %v, %p {padding = array<i64: 1, 1, 1, 1>, layout = "NHWC"} : tensor<2x5x7x8xf32>, tensor<1x1x8x16xf32> -> tensor<2x7x9x16xf32>
  func.return %a, %b, %c : tensor<2x16x5x7xf32>, tensor<2x5x7x16xf32>, tensor<2x7x9x16xf32>
}
