"""Kernels and helpers shared by the schedule FileCheck tests (not a test itself)."""


def scheduled(module):
    """A graph module optimized at O2, lowered to loops and given its default schedules
    (AVX-512 widths, for a 2-core machine), in place."""
    from tensorkiln.driver.pipelines import TO_LOOPS
    from tensorkiln.driver.pipelines import optimize_graph
    from tensorkiln.passes.pipeline import PassContext, run_pipeline
    from tensorkiln.schedule.strategies.parallel import assumed_cores

    ctx = PassContext(opt_level=2, dump_ir=False)
    optimize_graph(module, ctx)
    with assumed_cores(2):
        run_pipeline(module, TO_LOOPS + ("default-schedule{vector_bits=512}",), ctx)
    return module

#: a 17x13 @ 13x31 matmul kernel with the default schedule
MATMUL = """
func.func @matmul(%A: memref<17x13xf32>, %B: memref<13x31xf32>, %C: memref<17x31xf32>) attributes {tk.kernel = "matmul"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c13 = arith.constant 13 : index
  %c17 = arith.constant 17 : index
  %c31 = arith.constant 31 : index
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %c17 step %c1 name("i0") {
    loop.for %j = %c0 to %c31 step %c1 name("i1") {
      %acc = loop.alloc() {scope = "local"} : memref<f32>
      loop.store %zero, %acc[] : memref<f32>
      loop.for %k = %c0 to %c13 step %c1 name("k0") {
        %a = loop.load %A[%i, %k] : memref<17x13xf32>
        %b = loop.load %B[%k, %j] : memref<13x31xf32>
        %p = arith.mulf %a, %b : f32
        %s = loop.load %acc[] : memref<f32>
        %n = arith.addf %s, %p fastmath<reassoc> : f32
        loop.store %n, %acc[] : memref<f32>
      }
      %r = loop.load %acc[] : memref<f32>
      loop.store %r, %C[%i, %j] : memref<17x31xf32>
    }
  }
  func.return
}
"""
