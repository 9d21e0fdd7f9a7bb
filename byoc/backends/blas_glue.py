"""LLVM IR for a GEMM program: each step one (or, batched, a loop of) Fortran ``sgemm``
call(s), with the bias copied into the output first (beta = 1) and the activation
applied after -- the "generated code" of the ``blas`` backend.

The function takes the program's inputs then outputs in tensorkiln's calling
convention (a pointer, then an ``i64`` per symbolic dim); weights bound at compile time
are addresses baked into the code (the module owning the code owns the arrays).
``sgemm`` is called through the symbol ``tk_blas_sgemm`` (bound by the backend).

With ``size_threads``, the function first sets the BLAS's thread count to tensorkiln's
(``tk_num_threads``) through ``tk_blas_set_threads`` when that count changed since its
last call (``blas_threads.py`` says why).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..external import TensorSpec
from ..gemm_program import GemmProgram

SGEMM_SYMBOL = "tk_blas_sgemm"
GLUE_FUNCTION = "tk_blas_glue"
#: the BLAS's set-thread-count function (``void (int)``), bound by the backend
SET_THREADS_SYMBOL = "tk_blas_set_threads"
#: tensorkiln's thread count (``runtime/threads.py``)
NUM_THREADS_SYMBOL = "tk_num_threads"

_SIZE_THREADS_HEADER = f"""declare void @{SET_THREADS_SYMBOL}(i32)
@{NUM_THREADS_SYMBOL} = external global i32
@tk_blas_threads_set = internal global i32 0
"""
#: the prelude of a glue function sizing the BLAS's threads
_SIZE_THREADS = f"""  %threads.want = load i32, ptr @{NUM_THREADS_SYMBOL}
  %threads.have = load i32, ptr @tk_blas_threads_set
  %threads.differ = icmp ne i32 %threads.want, %threads.have
  br i1 %threads.differ, label %threads.set, label %threads.done
threads.set:
  call void @{SET_THREADS_SYMBOL}(i32 %threads.want)
  store i32 %threads.want, ptr @tk_blas_threads_set
  br label %threads.done
threads.done:
"""

_HEADER = f"""declare void @{SGEMM_SYMBOL}(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr)
declare ptr @malloc(i64)
declare void @free(ptr)
declare float @expf(float)
declare float @tanhf(float)
declare float @llvm.maxnum.f32(float, float)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
"""


class _Emitter:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def fresh(self, stem: str = "v") -> str:
        self.count += 1
        return f"%{stem}{self.count}"

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def label(self, name: str) -> None:
        self.lines.append(f"{name[1:]}:")

    def value(self, expr: str) -> str:
        name = self.fresh()
        self.emit(f"{name} = {expr}")
        return name

    def mul(self, *factors: str | int) -> str:
        consts = int(np.prod([f for f in factors if isinstance(f, int)], dtype=np.int64))
        result: str = str(consts)
        for f in factors:
            if isinstance(f, str):
                result = self.value(f"mul i64 {result}, {f}")
        return result

    def at_least_one(self, x: str) -> str:
        if not x.startswith("%"):
            return str(max(1, int(x)))
        small = self.value(f"icmp slt i64 {x}, 1")
        return self.value(f"select i1 {small}, i64 1, i64 {x}")

    def int_arg(self, x: str) -> str:
        """A pointer to ``x`` as a Fortran int (i32)."""
        slot = self.value("alloca i32")
        narrow = self.value(f"trunc i64 {x} to i32") if x.startswith("%") else x
        self.emit(f"store i32 {narrow}, ptr {slot}")
        return slot

    def loop(self, count: str, body) -> None:
        """``for i in [0, count): body(i)``"""
        head, work, done = self.fresh("loop"), self.fresh("body"), self.fresh("done")
        entry = self.fresh("pre")
        self.emit(f"br label {entry}")
        self.label(entry)
        self.emit(f"br label {head}")
        self.label(head)
        i, nxt = self.fresh("i"), self.fresh("next")
        self.emit(f"{i} = phi i64 [0, {entry}], [{nxt}, {work}_end]")
        more = self.value(f"icmp slt i64 {i}, {count}")
        self.emit(f"br i1 {more}, label {work}, label {done}")
        self.label(work)
        body(i)
        self.emit(f"br label {work}_end")
        self.label(f"{work}_end")
        self.emit(f"{nxt} = add nsw i64 {i}, 1")
        self.emit(f"br label {head}")
        self.label(done)


def glue_ir(program: GemmProgram, weight_addresses: Mapping[str, int], size_threads: bool = False) -> str:
    """The LLVM IR module of ``program`` (see the module docstring)."""
    e = _Emitter()
    params: list[str] = []
    pointers: dict[str, str] = {}
    symbols: dict[str, str] = {}
    for k, name in enumerate(program.inputs + program.outputs):
        spec = program.specs[name]
        pointers[name] = f"%arg{k}"
        params.append(f"ptr noalias %arg{k}")
        for axis in spec.symbolic:
            params.append(f"i64 %arg{k}_d{axis}")
            symbols.setdefault(str(spec.shape[axis]), f"%arg{k}_d{axis}")

    def dims(spec: TensorSpec) -> list[str | int]:
        return [d if isinstance(d, int) else symbols[d] for d in spec.shape]

    def count(ds: list[str | int]) -> str:
        return e.mul(*ds) if ds else "1"

    for name, address in weight_addresses.items():
        pointers[name] = e.value(f"inttoptr i64 {address} to ptr")
    temporaries = []
    one = e.value("alloca float")
    e.emit(f"store float 1.0, ptr {one}")
    chars = {}
    for c in "NT":
        chars[c] = e.value("alloca i8")
        e.emit(f"store i8 {ord(c)}, ptr {chars[c]}")
    for step in program.steps:
        a_spec, b_spec, out_spec = (program.specs[step[n]] for n in ("a", "b", "out"))
        out_dims = dims(out_spec)
        if step["out"] not in pointers:  # a temporary of a merged region
            nbytes = e.mul(4, *out_dims) if out_dims else "4"
            pointers[step["out"]] = e.value(f"call ptr @malloc(i64 {nbytes})")
            temporaries.append(pointers[step["out"]])
        a, b, c = pointers[step["a"]], pointers[step["b"]], pointers[step["out"]]
        a_dims, b_dims = dims(a_spec), dims(b_spec)
        kk = a_dims[-1]
        n = out_dims[-1]
        if step["op"] == "batch_matmul":
            m = out_dims[-2]
            batch = count(out_dims[:-2])
            a_stride = "0" if all(d == 1 for d in a_dims[:-2]) else e.mul(m, kk)
            b_stride = "0" if all(d == 1 for d in b_dims[:-2]) else e.mul(kk, n)
        else:
            m = count(out_dims[:-1])
            batch, a_stride, b_stride = "1", "0", "0"
        rows = e.mul(m, batch) if batch != "1" else str(m)
        beta = e.value("alloca float")
        if step["bias"] is not None:
            bias = pointers[step["bias"]]
            row_bytes = e.mul(4, n)

            def copy_bias(i: str, c=c, bias=bias, row_bytes=row_bytes) -> None:
                offset = e.value(f"mul i64 {i}, {row_bytes}")
                dst = e.value(f"getelementptr inbounds i8, ptr {c}, i64 {offset}")
                e.emit(f"call void @llvm.memcpy.p0.p0.i64(ptr {dst}, ptr {bias}, i64 {row_bytes}, i1 false)")

            e.loop(rows, copy_bias)
            e.emit(f"store float 1.0, ptr {beta}")
        else:
            e.emit(f"store float 0.0, ptr {beta}")
        # row-major C = A B is column-major C^T = B^T A^T: sgemm on (B, A) with m, n swapped
        if step["op"] == "dense":
            transa, lda = "T", e.at_least_one(str(kk))
        else:
            transa, lda = "N", e.at_least_one(str(n))
        ldb, ldc = e.at_least_one(str(kk)), e.at_least_one(str(n))
        n_arg, m_arg, k_arg = e.int_arg(str(n)), e.int_arg(str(m)), e.int_arg(str(kk))
        lda_arg, ldb_arg, ldc_arg = e.int_arg(lda), e.int_arg(ldb), e.int_arg(ldc)
        c_stride = e.mul(m, n)

        def gemm(i: str, a=a, b=b, c=c, a_stride=a_stride, b_stride=b_stride, c_stride=c_stride, transa=transa,
                 n_arg=n_arg, m_arg=m_arg, k_arg=k_arg, lda_arg=lda_arg, ldb_arg=ldb_arg, ldc_arg=ldc_arg, beta=beta):
            ai = e.value(f"getelementptr inbounds float, ptr {a}, i64 {e.value(f'mul i64 {i}, {a_stride}')}")
            bi = e.value(f"getelementptr inbounds float, ptr {b}, i64 {e.value(f'mul i64 {i}, {b_stride}')}")
            ci = e.value(f"getelementptr inbounds float, ptr {c}, i64 {e.value(f'mul i64 {i}, {c_stride}')}")
            e.emit(
                f"call void @{SGEMM_SYMBOL}(ptr {chars[transa]}, ptr {chars['N']}, ptr {n_arg}, ptr {m_arg}, "
                f"ptr {k_arg}, ptr {one}, ptr {bi}, ptr {lda_arg}, ptr {ai}, ptr {ldb_arg}, ptr {beta}, ptr {ci}, "
                f"ptr {ldc_arg})"
            )

        e.loop(batch, gemm)
        if step["act"] is not None:
            total = e.mul(rows, n) if rows != "1" else str(n)

            def activate(i: str, c=c, act=step["act"]) -> None:
                p = e.value(f"getelementptr inbounds float, ptr {c}, i64 {i}")
                x = e.value(f"load float, ptr {p}")
                if act == "relu":
                    y = e.value(f"call float @llvm.maxnum.f32(float {x}, float 0.0)")
                elif act == "tanh":
                    y = e.value(f"call float @tanhf(float {x})")
                else:  # sigmoid
                    ex = e.value(f"call float @expf(float {e.value(f'fneg float {x}')})")
                    y = e.value(f"fdiv float 1.0, {e.value(f'fadd float 1.0, {ex}')}")
                e.emit(f"store float {y}, ptr {p}")

            e.loop(total, activate)
    for t in temporaries:
        e.emit(f"call void @free(ptr {t})")
    e.emit("ret void")
    body = "\n".join(e.lines)
    header, prelude = (_HEADER + _SIZE_THREADS_HEADER, _SIZE_THREADS) if size_threads else (_HEADER, "")
    return f"{header}\ndefine void @{GLUE_FUNCTION}({', '.join(params)}) {{\nentry:\n{prelude}{body}\n}}\n"


__all__ = ["GLUE_FUNCTION", "NUM_THREADS_SYMBOL", "SET_THREADS_SYMBOL", "SGEMM_SYMBOL", "glue_ir"]
