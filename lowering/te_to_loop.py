"""te -> loop: each tensor-level op becomes kernels (loop nests over buffers), and the
graph function becomes a host function that allocates buffers and calls the kernels.

Which kernels an op becomes is its kernel rule's business (``kernel_registry.py``):
``te.compute`` and fused groups one loop nest each (``compute_kernel.py``: the plain
schedule, one serial loop per result dim named ``i0``, ``i1``, ..., reductions over
loops ``k0``...), ``te.scan``, ``te.scatter``, ``te.sort`` and ``te.dense_linalg``
theirs (``scan_kernel.py``, ``scatter_kernel.py``, ``sort_kernel.py``,
``dense_linalg/``). Schedules (split, reorder, vectorize, parallel, ...) transform
these loop nests later: they read what each kernel computes (``tk.ops``, ``tk.anchor``,
``tk.epilogue``: ``kernel_anchor.py``) and each loop's role (``role(spatial)``,
``role(reduction)``...: ``dialects/loop.py``), not names.

After the pass, the function ``main(inputs) -> outputs`` reads::

    func.func @main(%x: memref<...>, ..., %out0: memref<...>, ..., %w0: memref<...>, ...)
        attributes {tk.entry = {inputs = 1, outputs = 1}, tk.weights = [...]}

inputs first, then the buffers the outputs are written to, then one buffer per
constant (its data listed in ``tk.weights``, in order), so the caller binds weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder, InsertPoint
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from ..dialects import loop
from ..dialects.byoc import CallOp as ExternalCallOp
from ..dialects.graph import ConstantOp
from ..dialects.graph.types import shape_of
from . import compute_kernel, dense_linalg, rnn_kernel, scan_kernel, scatter_kernel, sort_kernel  # noqa: F401  (register their kernel rules)
from .copy_kernel import copy_kernel
from .kernel_anchor import record_anchor
from .kernel_registry import KERNEL_RULES
from .loop_nest import buffer_type
from .symbol_sizes import SymbolSizes, gives_symbol, unsized_symbols

#: kernel names longer than this are cut (``_HostLowering.kernel_name``)
_LONGEST_NAME = 96


def _has_kernel_rule(op: Operation) -> bool:
    return type(op) in KERNEL_RULES


class _HostLowering:
    """Rewrites one tensor-level function into a buffer-level host function + kernels
    (the :class:`~.kernel_registry.KernelHost` the kernel rules build through)."""

    def __init__(self, function: func.FuncOp, stash_rows: bool = False):
        self.function = function
        self.stash_rows = stash_rows
        self.kernels: list[func.FuncOp] = []
        self.names: dict[str, int] = {}
        #: set by :meth:`lower`: where host code goes, the buffer of each tensor, the
        #: sizes of symbolic dims, the temporaries to free at the end
        self.b: Builder
        self.buffers: dict[SSAValue, SSAValue] = {}
        self.symbols: SymbolSizes
        self.temporaries: list[SSAValue] = []

    # -- what kernel rules ask for (KernelHost) ------------------------------------

    def kernel_name(self, tag: str) -> str:
        """A unique function name from ``tag`` (``<tag>_<k>``); a fused group of many ops
        (a special function's: hundreds of op names, thousands of characters) keeps its
        first ops and ``etc``, for symbols and profiles one can read (the whole tag stays
        the kernel's ``tk.kernel``)."""
        if len(tag) > _LONGEST_NAME:
            cut = tag.rfind("_", 0, _LONGEST_NAME // 2)
            tag = tag[: cut if cut > 0 else _LONGEST_NAME // 2] + "_etc"
        k = self.names.get(tag, 0)
        self.names[tag] = k + 1
        return f"{tag}_{k}"

    def buffer(self, value: SSAValue) -> SSAValue:
        return self.buffers[value]

    def temporary(self, t: TensorType) -> SSAValue:
        buffer = self.b.insert(loop.AllocOp(buffer_type(t), self.dynamic_sizes(t))).result
        self.temporaries.append(buffer)
        return buffer

    def call(self, kernel: func.FuncOp, arguments: Sequence[SSAValue]) -> None:
        record_anchor(kernel)
        self.kernels.append(kernel)
        self.b.insert(func.CallOp(kernel.sym_name.data, list(arguments), []))

    def carriers(self, op: Operation) -> list[SSAValue]:
        """Function inputs a kernel of ``op`` is passed for their sizes (one for each
        symbol its own tensors do not give; every symbol is some input's size)."""
        inputs = self.function.body.block.args
        dims = (d for v in inputs if isinstance(v.type, TensorType) for d in shape_of(v.type))
        if not any(isinstance(d, str) for d in dims):
            return []  # (static shapes: nothing to look for)
        carriers: list[SSAValue] = []
        for symbol in sorted(unsized_symbols(op, [*op.inputs, op.result])):
            if any(gives_symbol(c.type, symbol) for c in carriers):
                continue
            carriers += [v for v in inputs if gives_symbol(v.type, symbol)][:1]
        return carriers

    def dynamic_sizes(self, t: TensorType) -> list[SSAValue]:
        return [self.symbols.size(self.b, d, t) for d in shape_of(t) if isinstance(d, str)]

    # -- the host function -----------------------------------------------------------

    def lower(self) -> None:
        f = self.function
        old_block = f.body.block
        ret = old_block.last_op
        if not isinstance(ret, func.ReturnOp):
            raise PassFailedException(f"te-to-loop: function '{f.sym_name.data}' must end with func.return")
        for op in old_block.ops:
            if not (_has_kernel_rule(op) or isinstance(op, ConstantOp | ExternalCallOp | func.ReturnOp)):
                raise PassFailedException(
                    f"te-to-loop: '{op.name}' in '{f.sym_name.data}' is not lowered to te yet (run graph-to-te first)"
                )
        constants = [op for op in old_block.ops if isinstance(op, ConstantOp)]
        input_types = [buffer_type(a.type) for a in old_block.args]
        output_types = [buffer_type(v.type) for v in ret.arguments]
        weight_types = [buffer_type(c.result.type) for c in constants]
        entry = Block(arg_types=input_types + output_types + weight_types)
        n_in, n_out = len(input_types), len(output_types)
        for new, old in zip(entry.args, old_block.args):
            new.name_hint = old.name_hint
        for k, arg in enumerate(entry.args[n_in : n_in + n_out]):
            arg.name_hint = f"out{k}"
        for k, arg in enumerate(entry.args[n_in + n_out :]):
            arg.name_hint = f"w{k}"
        self.buffers = dict(zip(old_block.args, entry.args[:n_in]))
        self.buffers.update(zip((c.result for c in constants), entry.args[n_in + n_out :]))
        outputs = list(entry.args[n_in : n_in + n_out])

        self.b = Builder(InsertPoint.at_end(entry))
        self.symbols = SymbolSizes(self.b, old_block.args, entry.args[:n_in])
        # A compute returned from the function writes straight into its output buffer.
        written_to: dict[SSAValue, SSAValue] = {}
        for value, out in zip(ret.arguments, outputs):
            owner = value.owner
            if (_has_kernel_rule(owner) or isinstance(owner, ExternalCallOp)) and value not in written_to:
                written_to[value] = out
        for op in old_block.ops:
            if isinstance(op, ExternalCallOp):
                self.external_call(op, written_to)
            elif _has_kernel_rule(op):
                target = written_to[op.result] if op.result in written_to else self.temporary(op.result.type)
                KERNEL_RULES[type(op)](self, op, target)
                self.buffers[op.result] = target
        for value, out in zip(ret.arguments, outputs):
            if written_to.get(value) is not out:
                self.call(copy_kernel(out.type, self.kernel_name("copy")), [self.buffers[value], out])
        for t in self.temporaries:
            self.b.insert(loop.FreeOp(t))
        self.b.insert(func.ReturnOp())

        new_function = func.FuncOp(f.sym_name.data, (entry.arg_types, []), Region(entry))
        loop.set_entry(new_function, n_in, n_out, [c.value for c in constants])
        Rewriter.replace_op(f, [new_function, *self.kernels])

    def external_call(self, op: ExternalCallOp, written_to: dict[SSAValue, SSAValue]) -> None:
        """An external module (byoc): a call of its native symbol, declared here, with the
        same buffer arguments as a kernel (inputs, then outputs)."""
        targets = [written_to[r] if r in written_to else self.temporary(r.type) for r in op.outputs]
        symbol = op.external.symbol
        arg_types = [buffer_type(v.type) for v in op.inputs] + [t.type for t in targets]
        if symbol not in {k.sym_name.data for k in self.kernels}:
            self.kernels.append(func.FuncOp.external(symbol, arg_types, []))
        self.b.insert(func.CallOp(symbol, [self.buffers[v] for v in op.inputs] + targets, []))
        self.buffers.update(zip(op.outputs, targets))


@dataclass(frozen=True)
class TEToLoopPass(ModulePass):
    """Turn each tensor-level op into kernels by its kernel rule and each function into
    buffer code. ``stash_rows`` (the CPU pipeline's): a row kernel stores an expensive
    producer its stages and output both read in the output row
    (:func:`~.compute_kernel.stashed_producer`); off by default, for the GPU, whose row
    schedules expect the stages and the element loop only."""

    name = "te-to-loop"
    stash_rows: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            signature = (*function.function_type.inputs.data, *function.function_type.outputs.data)
            # a function of no inputs whose outputs fold to constants is an entry too, as
            # is one of no inputs and no outputs (a model that computes nothing)
            if not signature or any(isinstance(t, TensorType) for t in signature) or any(
                _has_kernel_rule(o) for o in function.body.walk()
            ):
                _HostLowering(function, self.stash_rows).lower()


__all__ = ["TEToLoopPass"]
