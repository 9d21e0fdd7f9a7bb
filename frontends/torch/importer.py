"""torch.export's ExportedProgram -> a graph-dialect module.

The program is first decomposed to Core ATen (keeping a few ops whole that map onto
one graph op, such as ``linear``); then every fx node is converted by the converter
registered for its ATen overload (``registry.py``; the converters live in ``ops/``).
"""

from __future__ import annotations

import os
import re
import warnings
from collections import Counter
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, NameLoc, NoneAttr, StringAttr
from xdsl.ir import SSAValue

from ...dialects.graph.types import format_shape, shape_of
from ...errors import UnsupportedOperatorError
from ...runtime.dim_expr import free_symbols
from ...dialects.functions import set_dim_ranges
from ..builder import GraphBuilder
from . import ops  # noqa: F401  (registers the converters)
from .complex import COMPLEX_CONVERTERS, Complex, convert_complex, has_complex, is_complex_node
from .context import ImportContext, UnsupportedDtypeError, numpy_dtype_of_torch, symbol_name, tensor_to_numpy
from .dim_names import dim_text, user_dim_names
from .opmath import CONVERSION_ERRORS, convert_node, ops_after
from .ops.checks import CHECKED_INFO
from .norm_decompositions import norm_decompositions
from .python_decompositions import python_decompositions
from .registry import CONVERTERS, target_name

#: ATen ops kept whole instead of decomposed: each maps onto one graph op, or a short pattern
#: of them (attention), where the decomposition would be longer or need more ops.
KEEP_WHOLE = (
    "linear.default",
    "scaled_dot_product_attention.default",
    "_upsample_nearest_exact2d.vec",
    "upsample_nearest1d.vec",
    "_upsample_nearest_exact1d.vec",
    "upsample_linear1d.vec",
    "softplus.default",
    "mish.default",
    "celu.default",
    "eye.default",
    "eye.m",
    "take.default",
    # torch 2.14 added it to the default decompositions (ops/reduce.py converts it whole)
    "linalg_vector_norm.default",
    # recurrent layers: one graph.rnn per layer and direction (ops/recurrent.py), a loop
    # over time, where the decomposition unrolls the cell into kernels per step
    "lstm.input",
    "gru.input",
    "rnn_tanh.input",
    "rnn_relu.input",
    # group norm without reshaping the activation (ops/normalization.py): the decomposition's
    # (N, groups, rest) view forced NCHW around every norm (instance norm: norm_decompositions.py)
    "group_norm.default",
)

#: fx call_function targets handled by the importer itself, not by converters.
_STRUCTURAL = {"_operator.getitem", "aten.sym_size.int"}


def _is_size_arithmetic(node: Any) -> bool:
    """Arithmetic on symbolic sizes (``batch * 4`` for a view): export records the result
    as a SymInt; its value is that size's expression (``4*s0``), which converters read
    from the shapes export recorded, so the node itself computes nothing."""
    import torch

    name = target_name(node.target)
    sized = name.startswith(("_operator.", "torch.sym_"))  # + - * // on sizes, torch.sym_ite / sym_max
    return sized and isinstance(node.meta.get("val"), torch.SymInt | torch.SymBool)


def _size_value(val: Any) -> Any:
    """What size arithmetic gives converters: a graph dim (``4*s0``) where it is one; a
    condition (``u0 <= 12``, for ``_assert_scalar``) or a piecewise size stays sympy."""
    import torch

    if isinstance(val, torch.SymInt):
        try:
            return symbol_name(val)
        except NotImplementedError:
            pass
    return val.node.expr


#: ops kept though nothing uses their result: run-time assertions
_CHECKS = {
    "aten._assert_scalar.default",
    "aten._assert_async.default",
    "aten._assert_async.msg",
    "aten.sym_constrain_range_for_size.default",
    "aten.sym_constrain_range.default",
    "aten._linalg_check_errors.default",
}


def _is_dead(node: Any) -> bool:
    """A computation nothing uses (export leaves e.g. symbolic size arithmetic behind)."""
    return node.op == "call_function" and not node.users and target_name(node.target) not in _CHECKS


class TorchImportError(ValueError):
    """A node could not be converted; says which node, where in the user's code, and why."""


#: the FutureWarning torch's own run_decompositions raises (filtered where we call it)
TORCH_LEAFSPEC_WARNING = r"`isinstance\(treespec, LeafSpec\)` is deprecated"


def _decompose(ep: Any) -> Any:
    import torch

    table = torch.export.default_decompositions()
    for name in KEEP_WHOLE:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload)
        if op in table:
            del table[op]
    table.update(python_decompositions())
    table.update(norm_decompositions())
    with warnings.catch_warnings():
        # torch 2.13's run_decompositions deep-copies its own pytree specs, which warns on
        # every model (a deprecation inside torch, not in anything the user wrote)
        warnings.filterwarnings("ignore", message=TORCH_LEAFSPEC_WARNING, category=FutureWarning)
        decomposed = ep.run_decompositions(table)
    return _without_error_checks(decomposed)


def _without_error_checks(ep: Any) -> Any:
    """``ep`` without the effect tokens that thread the ``_linalg_check_errors`` decomposed
    linalg functions (``inv``, ``solve``, ``cholesky``) run on their ``info`` result, and
    without the checks themselves where we do not compute ``info`` (``ops/dense_linalg.py``
    says what singular inputs give instead): the tokens are inputs and outputs."""
    import torch

    check = torch.ops.aten._linalg_check_errors.default
    effects = [n for n in ep.graph.nodes if n.op == "call_function" and n.target is torch.ops.higher_order.with_effects]
    if not any(len(n.args) > 1 and n.args[1] is check for n in effects):
        return ep
    from torch.export._remove_effect_tokens_pass import _remove_effect_tokens

    ep = _remove_effect_tokens(ep)
    for node in [n for n in ep.graph.nodes if n.op == "call_function" and n.target is check]:
        info = node.args[0]
        producer = info.args[0] if info.op == "call_function" and info.args else None
        if getattr(producer, "op", None) != "call_function" or target_name(producer.target) not in CHECKED_INFO:
            ep.graph.erase_node(node)
    ep.graph.eliminate_dead_code()
    return ep


def _user_frame(node: Any) -> tuple[str, int] | None:
    """The innermost frame of the user's code that created ``node`` (file, line): frames
    inside torch itself (an nn.Module's forward) are skipped."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    own = [f for f in frames if f"{os.sep}torch{os.sep}" not in f[0]] or frames
    return (own[-1][0], int(own[-1][1])) if own else None


def _where(node: Any) -> str:
    frame = _user_frame(node)
    return f" at {frame[0]}:{frame[1]}" if frame else ""


def _location(node: Any) -> NameLoc:
    frame = _user_frame(node)
    child = FileLineColLoc(StringAttr(frame[0]), IntAttr(frame[1]), IntAttr(0)) if frame else None
    return NameLoc(StringAttr(node.name), child if child is not None else NoneAttr())


def unsupported_nodes(graph: Any) -> dict[str, list[str]]:
    """ATen overloads without a converter -> the names of the nodes using them."""
    missing: dict[str, list[str]] = {}
    for node in graph.nodes:
        if node.op == "call_function" and not _is_dead(node):
            name = target_name(node.target)
            known = name in CONVERTERS or name in COMPLEX_CONVERTERS or name in _STRUCTURAL
            if not known and not _is_size_arithmetic(node):
                missing.setdefault(name, []).append(node.name)
    return missing


class _Importer:
    def __init__(self, ep: Any, keep_params_as_input: bool, function_name: str, state_as_io: bool = False):
        self.ep = ep
        self.keep_params_as_input = keep_params_as_input
        self.state_as_io = state_as_io
        self.builder = GraphBuilder(function_name)
        self.ctx = ImportContext(self.builder)
        self.values: dict[Any, Any] = {}
        self.params: dict[str, np.ndarray] = {}
        #: buffers the model updates in place (with ``state_as_io``): name -> initial value
        self.state: dict[str, np.ndarray] = {}
        # higher-order ops (torch.cond, while_loop) convert their branch graphs with this
        self.ctx.convert_subgraph = self.convert_subgraph
        self.ctx.symbol_ranges = _symbol_ranges(ep)
        self.ctx.range_constraints = dict(getattr(ep, "range_constraints", {}))

    # -- placeholders ----------------------------------------------------------------

    def placeholders(self) -> None:
        from torch.export.graph_signature import InputKind

        specs = {spec.arg.name: spec for spec in self.ep.graph_signature.input_specs}
        nodes = [n for n in self.ep.graph.nodes if n.op == "placeholder"]
        user = [n for n in nodes if specs[n.name].kind == InputKind.USER_INPUT]
        lifted = [n for n in nodes if specs[n.name].kind != InputKind.USER_INPUT]
        for node in user:
            val = node.meta.get("val")
            if not hasattr(val, "shape"):
                raise TorchImportError(f"input '{node.name}' is not a tensor ({type(val).__name__}): not supported")
            if is_complex_node(node):
                raise TorchImportError(
                    f"input '{node.name}' is a complex tensor ({val.dtype}): complex inputs are not supported, pass "
                    "torch.view_as_real of it (complex values are computed inside a model only)"
                )
            self.values[node] = self.builder.input(node.name, self.ctx.shape(node), self._dtype(node))
        updated = self._updated_buffers() if self.state_as_io else set()
        for node in [n for n in lifted if specs[n.name].target not in updated]:
            spec = specs[node.name]
            if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                raise TorchImportError(f"input '{node.name}' of kind {spec.kind.name} is not supported")
            if is_complex_node(node) and not self.keep_params_as_input:  # two constants
                data = self._tensor(spec).detach().resolve_conj().numpy()
                parts = (np.ascontiguousarray(p) for p in (data.real, data.imag))
                self.values[node] = Complex(*(self.builder.constant(p) for p in parts))
                continue
            try:
                array = self._tensor_data(spec)
            except UnsupportedDtypeError as e:
                raise TorchImportError(str(e)) from None
            if self.keep_params_as_input:
                self.params[spec.target] = array
                self.values[node] = self.builder.input(_param_name(spec.target), array.shape, array.dtype)
            else:
                self.values[node] = self.builder.constant(array, spec.target)
                self.values[node].owner.location = NameLoc(StringAttr(node.name), NoneAttr())
        for node in [n for n in lifted if specs[n.name].target in updated]:  # state inputs come last
            target = specs[node.name].target
            self.state[target] = np.array(self._tensor_data(specs[node.name]))  # a copy: the caller's to update
            self.values[node] = self.builder.input(_param_name(target), self.ctx.shape(node), self._dtype(node))

    def _updated_buffers(self) -> set[str]:
        from torch.export.graph_signature import OutputKind

        specs = self.ep.graph_signature.output_specs
        return {s.target for s in specs if s.kind in (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION)}

    def _tensor(self, spec: Any) -> Any:
        tensor = self.ep.state_dict.get(spec.target)
        return self.ep.constants[spec.target] if tensor is None else tensor

    def _tensor_data(self, spec: Any) -> np.ndarray:
        tensor = self._tensor(spec)
        numpy_dtype_of_torch(tensor.dtype, f"{spec.target}: ")
        return tensor_to_numpy(tensor)  # shares memory with the torch tensor: no copy of the weights

    def _dtype(self, node: Any) -> np.dtype:
        try:
            return self.ctx.dtype(node)
        except UnsupportedDtypeError as e:
            raise TorchImportError(str(e)) from None

    # -- nodes -------------------------------------------------------------------------

    def arg(self, a: Any) -> Any:
        import torch

        if isinstance(a, torch.fx.Node):
            if a.op == "get_attr":  # a subgraph of a higher-order op (torch.cond's branches)
                return getattr(self.ep.graph_module, a.target)
            value = self.values[a]
            return self.ctx.unaliased(value) if isinstance(value, SSAValue) else value
        if isinstance(a, list | tuple):
            return type(a)(self.arg(x) for x in a)
        if isinstance(a, dict):
            return {k: self.arg(v) for k, v in a.items()}
        return a

    def call(self, node: Any) -> None:
        name = target_name(node.target)
        args = [self.arg(a) for a in node.args]
        kwargs = {k: self.arg(v) for k, v in node.kwargs.items()}
        if name == "_operator.getitem":
            value = args[0][args[1]]
            if value is None:
                producer = node.args[0]
                raise TorchImportError(
                    f"cannot import node '{node.name}'{_where(node)}: result #{args[1]} of "
                    f"'{producer.name}' ({target_name(producer.target)}) is not computed by tensorkiln"
                )
            self.values[node] = value
            return
        if name == "aten.sym_size.int":
            self.values[node] = self.ctx.shape(node.args[0])[args[1]]
            return
        if _is_size_arithmetic(node):
            self.values[node] = _size_value(node.meta["val"])
            return
        block = self.builder._block
        before = block.last_op
        empty = _statically_empty(node)
        try:
            if empty is not None and not is_complex_node(node):
                result = [self.ctx.constant(array) for array in empty]
                result = result[0] if hasattr(node.meta["val"], "shape") else result
            elif has_complex((args, kwargs)) or is_complex_node(node):
                result = convert_complex(self.ctx, node, name, args, kwargs)
            else:
                result = convert_node(self.ctx, node, CONVERTERS[name], args, kwargs)
        except CONVERSION_ERRORS as e:
            raise TorchImportError(f"cannot import node '{node.name}' ({name}){_where(node)}: {e}") from e
        _check_shapes(node, name, result)
        self.values[node] = result
        for op in ops_after(block, before):
            op.location = _location(node)

    def convert_subgraph(self, graph_module: Any, inputs: list[SSAValue]) -> list[SSAValue]:
        """Convert a higher-order op's subgraph at the builder's insertion point, its
        placeholders bound to ``inputs``; returns its outputs."""
        missing = unsupported_nodes(graph_module.graph)
        if missing:
            listed = "; ".join(f"{name} ({', '.join(nodes[:5])})" for name, nodes in missing.items())
            raise UnsupportedOperatorError(f"unsupported operators in a control-flow subgraph: {listed}")
        saved, self.values = self.values, {}
        try:
            placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
            if len(placeholders) != len(inputs):
                raise TorchImportError(f"subgraph takes {len(placeholders)} inputs, given {len(inputs)}")
            self.values.update(zip(placeholders, inputs))
            outputs: list[SSAValue] = []
            for node in graph_module.graph.nodes:
                if node.op == "call_function" and not _is_dead(node):
                    self.call(node)
                elif node.op == "output":
                    outputs = _flatten_outputs(self.arg(node.args[0]))
            return outputs
        finally:
            self.values = saved

    def run(self) -> ModuleOp:
        missing = unsupported_nodes(self.ep.graph)
        if missing:
            counts = Counter({name: len(nodes) for name, nodes in missing.items()})
            listed = "; ".join(
                f"{name} x{n} ({', '.join(missing[name][:5])}{', ...' if n > 5 else ''})"
                for name, n in counts.most_common()
            )
            raise UnsupportedOperatorError(
                f"{len(missing)} unsupported operators ({sum(counts.values())} nodes): {listed}"
            )
        self.placeholders()
        outputs: list[SSAValue] = []
        for node in self.ep.graph.nodes:
            if node.op == "call_function" and not _is_dead(node):
                self.call(node)
            elif node.op == "output":
                outputs = _flatten_outputs(self.arg(self.user_outputs(node.args[0])))
        return self.builder.finish(*outputs)

    def user_outputs(self, returned: Any) -> list[Any]:
        """The values the model returns, without the new values of inputs it updates in
        place (``x.add_(1)``: torch.export returns them first; a compiled model does not
        write them back). A buffer or parameter updated in place (a KV cache, batch norm's
        running statistics in train()) would not keep its new value between calls: with
        ``state_as_io`` its new value is an output after the model's own, else refused."""
        from torch.export.graph_signature import OutputKind

        specs = self.ep.graph_signature.output_specs
        mutations = (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION)
        updates = {s.target: value for value, s in zip(returned, specs, strict=True) if s.kind in mutations}
        if updates and not self.state_as_io:
            raise TorchImportError(
                f"the model updates {', '.join(updates)} in place: a compiled model keeps no state between calls; "
                "import with from_exported_program(ep, state_as_io=True) to pass that state in and get it back "
                "at each call (batch norm in train() updates its running statistics: export the model in eval())"
            )
        kept = (OutputKind.USER_INPUT_MUTATION, *mutations)
        own = [value for value, spec in zip(returned, specs, strict=True) if spec.kind not in kept]
        return own + [updates[name] for name in self.state]


def _symbol_ranges(ep: Any) -> dict[str, tuple[int | None, int | None]]:
    """torch.export's range of each symbol, ``(lowest, highest)``, None where unbounded:
    export proved the program right for those values only (``x[:, 2:7]`` needs 7)."""
    ranges = {}
    for symbol, bounds in getattr(ep, "range_constraints", {}).items():
        finite = [None if str(b) in ("int_oo", "oo", "-int_oo", "-oo") else int(b) for b in (bounds.lower, bounds.upper)]
        ranges[dim_text(str(symbol))] = (finite[0], finite[1])
    return ranges


def _input_ranges(ranges: dict[str, tuple[int | None, int | None]], function: func.FuncOp) -> dict[str, tuple[int, int | None]]:
    """The ranges of the symbols the inputs of ``function`` use (sizes: never below 0;
    checked at every call)."""
    used = {s for arg in function.body.block.args for d in shape_of(arg.type) if isinstance(d, str) for s in free_symbols(d)}
    return {name: (max(lowest or 0, 0), highest) for name, (lowest, highest) in ranges.items() if name in used}


def _statically_empty(node: Any) -> list[np.ndarray] | None:
    """Empty arrays of the shapes and dtypes of the node's results when every one is a
    tensor of no elements at compile time (nonzero of an empty input, a batch of no
    matrices): nothing to compute, and no op need handle it. Not where an integer input
    has elements: indices, which the op's converter checks (torch raises for any index
    into an empty tensor)."""
    if any(_has_integer_elements(a) for a in node.all_input_nodes):
        return None
    metas = node.meta.get("val")
    metas = metas if isinstance(metas, list | tuple) else [metas]
    if not metas or not all(hasattr(m, "shape") and hasattr(m, "dtype") for m in metas):
        return None
    shapes = [tuple(m.shape) for m in metas]  # (a static dim is an int, a symbolic one a SymInt)
    if not all(all(type(d) is int for d in shape) and 0 in shape for shape in shapes):
        return None
    try:
        return [np.zeros(shape, numpy_dtype_of_torch(m.dtype)) for shape, m in zip(shapes, metas)]
    except UnsupportedDtypeError:
        return None


def _has_integer_elements(node: Any) -> bool:
    meta = node.meta.get("val")
    if not hasattr(meta, "dtype") or meta.dtype.is_floating_point or meta.dtype.is_complex:
        return False
    return not any(isinstance(d, int) and d == 0 for d in meta.shape)


def _check_shapes(node: Any, name: str, result: Any) -> None:
    """The converted values have the shapes torch.export recorded: a symbolic dim we
    computed differently from torch (a slice torch clamped) would read out of bounds."""
    values = result if isinstance(result, list | tuple) else [result]
    metas = node.meta.get("val")
    metas = metas if isinstance(metas, list | tuple) else [metas]
    for k, (value, meta) in enumerate(zip(values, metas)):
        value = value.real if isinstance(value, Complex) else value
        if not isinstance(value, SSAValue) or not hasattr(meta, "shape") or not hasattr(value.type, "get_shape"):
            continue
        ours, theirs = shape_of(value.type), tuple(symbol_name(d) for d in meta.shape)
        if tuple(ours) != theirs:
            raise TorchImportError(
                f"cannot import node '{node.name}' ({name}){_where(node)}: result {k} has shape "
                f"{format_shape(ours)} here but {format_shape(theirs)} in torch.export's graph"
            )


def _flatten_outputs(result: Any) -> list[SSAValue]:
    """The model's returned tensors in order; None results are dropped."""
    if result is None:
        return []
    if isinstance(result, SSAValue):
        return [result]
    if isinstance(result, Complex):
        raise TorchImportError("the model returns a complex tensor: return torch.view_as_real of it instead")
    if isinstance(result, list | tuple):
        return [v for r in result for v in _flatten_outputs(r)]
    raise TorchImportError(f"the model returns a {type(result).__name__}, not a tensor: not supported")


def _param_name(target: str) -> str:
    """An input's name for a parameter or buffer: ``layers.0.weight`` -> ``layers_0_weight``
    (an ``nn.Sequential``'s ``0.weight`` -> ``p_0_weight``: a name may not start with a digit)."""
    name = re.sub(r"\W", "_", target)
    return f"p_{name}" if name[:1].isdigit() else name


def from_exported_program(
    ep: Any,
    *,
    keep_params_as_input: bool = False,
    decompose: bool = True,
    function_name: str = "main",
    state_as_io: bool = False,
    check_indices: bool = True,
) -> ModuleOp | tuple[ModuleOp, dict[str, np.ndarray]] | tuple[ModuleOp, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Import a ``torch.export.ExportedProgram`` as a graph-dialect module.

    Parameters and buffers become constants held by reference (the torch tensors'
    memory, not a copy), or, with ``keep_params_as_input=True``, extra function inputs
    after the model's own; the params are then returned too, to bind at call time::

        ep = torch.export.export(model.eval(), (x,))
        module = from_exported_program(ep)
        module, params = from_exported_program(ep, keep_params_as_input=True)

    A model that updates buffers in place (a KV cache written at each step, a counter)
    is refused, since a compiled model keeps no state; with ``state_as_io=True`` each such
    buffer is an input after all others and its new value an output after the model's
    own, and the buffers' initial values are returned too (last), to pass back in::

        module, state = from_exported_program(ep, state_as_io=True)
        lib = tk.build(module)
        for token in tokens:
            logits, *new = lib(token, *state.values())
            state = dict(zip(state, new))

    Indices the model is given (embedding ids, gather and scatter indices, ``x[idx]``)
    are checked as torch checks them: a call with one out of range raises IndexError.
    ``check_indices=False`` leaves the checks out (an index out of range then reads or
    writes the nearest element in range, never outside a buffer): one reduction over
    each index tensor less.

    Raises UnsupportedOperatorError listing every unsupported ATen op (with counts and
    node names) before converting anything, and TorchImportError naming the node and
    the line of the model's code when a node cannot be converted.
    """
    if decompose:
        ep = _decompose(ep)
    with user_dim_names(ep):  # shapes and range errors say Dim("batch")'s name, not torch's s77
        importer = _Importer(ep, keep_params_as_input, function_name, state_as_io)
        importer.ctx.check_indices = check_indices
        module = importer.run()
    function = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == function_name)
    set_dim_ranges(function, _input_ranges(importer.ctx.symbol_ranges, function))
    extra = ((importer.params,) if keep_params_as_input else ()) + ((importer.state,) if state_as_io else ())
    return (module, *extra) if extra else module
