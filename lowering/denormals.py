"""Kernels that run with denormal floats flushed to zero (``tk.flush_denormals``).

On x86 an FMA with a denormal operand or result takes a microcode assist: a GEMM fed
denormals runs about 90x slower (Swin's shifted-window attention: its -100 mask gives
softmax weights around 1e-44, and ``attn @ v`` on them took 2.1 ms instead of 0.05;
weight decay leaves denormal weights in trained models too). Kernels marked by the
``flush_denormals`` schedule primitive set the MXCSR register's FTZ and DAZ bits on
entry and restore the caller's value on return, in the calling thread and in every
OpenMP worker that runs a chunk of their parallel loops. Inside them a denormal operand
counts as zero and a denormal result becomes zero: a change below 1.2e-38 per product.
The GEMM and convolution strategies mark only kernels of products and (piecewise-)
linear epilogues (``strategies/gemm.py``'s ``FLUSH_SAFE_OPS``): everywhere else (exp,
softmax, a GEMM with a sigmoid epilogue...) denormals stay exact. Other targets ignore
the mark.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import llvmlite.binding as llvm_binding
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from ..dialects import loop
from .scalar_to_llvm import int_constant

#: MXCSR bits: FTZ (flush results to zero, bit 15) and DAZ (read denormals as zero, bit 6)
FLUSH_BITS = 0x8040


@lru_cache(maxsize=1)
def _host_is_x86() -> bool:
    return llvm_binding.get_process_triple().startswith(("x86_64", "i686", "i386"))


def flushes_denormals(function: func.FuncOp) -> bool:
    """Whether ``function`` is marked and the target has the MXCSR to flush with."""
    return loop.flushes_denormals(function) and _host_is_x86()


@dataclass(frozen=True)
class FlushMode:
    """Stack slots of the caller's MXCSR and of the flushing one."""

    saved: SSAValue
    flushed: SSAValue


def enter_flush_mode(conv) -> FlushMode:
    """Save this thread's MXCSR and set FTZ and DAZ (``conv``: a ``loop_to_llvm``
    FunctionConverter, at the point to enter)."""
    one = int_constant(conv.alloca_builder, 1)
    saved = conv.alloca_builder.insert(llvm.AllocaOp(one, i32, alignment=4)).res
    flushed = conv.alloca_builder.insert(llvm.AllocaOp(one, i32, alignment=4)).res
    conv.emit(llvm.CallIntrinsicOp("llvm.x86.sse.stmxcsr", [saved], []))
    value = conv.emit(llvm.LoadOp(saved, i32))
    conv.emit(llvm.StoreOp(conv.emit(llvm.OrOp(value, int_constant(conv.b, FLUSH_BITS, i32))), flushed))
    mode = FlushMode(saved, flushed)
    resume_flush_mode(conv, mode)
    return mode


def leave_flush_mode(conv, mode: FlushMode) -> None:
    """Restore the caller's MXCSR: before a return, and around a parallel launch, since
    the OpenMP threads it creates inherit the launching thread's mode (the workers set
    it themselves, and must keep the caller's once the kernel is done)."""
    conv.emit(llvm.CallIntrinsicOp("llvm.x86.sse.ldmxcsr", [mode.saved], []))


def resume_flush_mode(conv, mode: FlushMode) -> None:
    """Set FTZ and DAZ again (after a parallel launch)."""
    conv.emit(llvm.CallIntrinsicOp("llvm.x86.sse.ldmxcsr", [mode.flushed], []))


__all__ = ["FLUSH_BITS", "FlushMode", "enter_flush_mode", "flushes_denormals", "leave_flush_mode", "resume_flush_mode"]
