// RUN: tensorkiln-opt %s -p graph-to-te | filecheck %s
// RUN: tensorkiln-opt %s -p graph-to-te,te-to-loop,default-schedule | filecheck %s --check-prefix=LOOPS

// graph.grouped_matmul: each row reads its group id, clamps it into [0, G) for the read
// of its matrix (never out of bounds), and is zero where the id is out of range. The
// default schedule is the GEMM register tile, B read per row (no packed panel).

func.func @main(%x: tensor<?x40xf32, #graph.dims<s, _>>, %w: tensor<5x40x70xf32>, %g: tensor<?xi32, #graph.dims<s>>) -> tensor<?x70xf32, #graph.dims<s, _>> {
  %y = graph.grouped_matmul %x, %w, %g : tensor<?x40xf32, #graph.dims<s, _>>, tensor<5x40x70xf32>, tensor<?xi32, #graph.dims<s>> -> tensor<?x70xf32, #graph.dims<s, _>>
  func.return %y : tensor<?x70xf32, #graph.dims<s, _>>
}

// CHECK:       %y = te.compute(%x, %w, %g) {{.*}} attributes {tag = "grouped_matmul"} {
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index, %[[J:.*]]: index, %[[X:.*]]: tensor<{{.*}}>, %[[W:.*]]: tensor<5x40x70xf32>, %[[G:.*]]: tensor<{{.*}}>):
// CHECK-NEXT:    %[[ID:.*]] = te.read %[[G]][%[[I]]]
// CHECK-NEXT:    %[[GROUP:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:         %[[BELOW:.*]] = arith.cmpi slt, %[[GROUP]], %{{.*}} : index
// CHECK:         %[[INSIDE:.*]] = arith.cmpi slt, %[[GROUP]], %{{.*}} : index
// CHECK-NEXT:    %[[VALID:.*]] = arith.select %[[BELOW]], %{{.*}}, %[[INSIDE]] : i1
// CHECK:         %[[AT:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
// CHECK:         %[[ACC:.*]] = te.reduce add
// CHECK:           te.read %[[X]][%[[I]], %{{.*}}]
// CHECK:           te.read %[[W]][%[[AT]], %{{.*}}, %[[J]]]
// CHECK:         %[[OUT:.*]] = arith.select %[[VALID]], %[[ACC]], %{{.*}} : f32
// CHECK-NEXT:    te.yield %[[OUT]] : f32

// LOOPS:       func.func @grouped_matmul_0(
// LOOPS-SAME:      tk.strategy = "grouped_gemm_register_tile"
// LOOPS:         loop.alloc() {scope = "local"}
// LOOPS-NOT:     loop.alloc
// LOOPS:         loop.for {{.*}} name("k0") role(reduction) {
// LOOPS-NEXT:      loop.for {{.*}} unrolled name("i0.inner") role(spatial) {
// LOOPS-NEXT:        loop.for {{.*}} vectorized name("i1.inner") role(spatial) {
// LOOPS:               loop.load %{{.*}}[%{{.*}}] : memref<?xi32>
// LOOPS:               loop.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<5x40x70xf32>
