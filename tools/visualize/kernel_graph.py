"""What a picture of a compiled model shows: kernels (fused groups) and the tensors between them.

Read from the graph program that runs the model (``lib.graph_program``, or ``graph.json``
of an exported artifact), so the picture is the graph after optimization: one
:class:`Kernel` per kernel call, the graph ops it computes, the tensors it reads and
writes with their shapes and dtypes; weights are folded into the kernels that read them
(counted, not drawn); kernels of BYOC external modules carry their backend's name.
A model run by the VM (control flow) is one :class:`Section` per compiled function.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tensorkiln.dialects.graph import Graph
from tensorkiln.runtime.graph_program import GraphProgram, GraphTensor

#: graph op names without the dialect prefix, longest first (to split kernel names)
_OP_NAMES = sorted((op.name.removeprefix("graph.") for op in Graph.operations), key=len, reverse=True)

#: ``conv2d_relu_3`` -> ``conv2d_relu``: te-to-loop numbers the kernels of each group name
_KERNEL_NUMBER = re.compile(r"_\d+$")


def ops_of_kernel(kernel: str) -> list[str]:
    """The graph ops a kernel computes, read from its name (te-to-loop names a fused
    group's kernel after its ops, in order): ``conv2d_relu_0`` -> ``["conv2d", "relu"]``.
    A part that is no graph op (``copy``, a cut name's ``etc``) is kept as it is."""
    tag = _KERNEL_NUMBER.sub("", kernel)
    ops: list[str] = []
    rest = tag
    while rest:
        match = next((n for n in _OP_NAMES if rest == n or rest.startswith(n + "_")), None)
        part = match or rest.split("_", 1)[0]
        ops.append(part)
        rest = rest[len(part) + 1 :]
    return ops


@dataclass(frozen=True)
class Tensor:
    """A tensor drawn on an edge: its name, shape (ints, symbol names) and dtype."""

    name: str
    shape: tuple[int | str, ...]
    dtype: str

    @property
    def label(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclass
class Kernel:
    """One kernel call: the ops it computes, its weights, its measured time if profiled."""

    id: str
    symbol: str
    ops: list[str]
    weights: int = 0
    #: the BYOC backend that compiled it (None: tensorkiln's own code generation)
    backend: str | None = None
    #: mean seconds per call from a profile (None when not profiled)
    seconds: float | None = None


@dataclass(frozen=True)
class Edge:
    """A tensor from ``source`` to ``target`` (kernel ids, or ``input_k`` / ``output_k``)."""

    source: str
    target: str
    tensor: Tensor


@dataclass
class Section:
    """The kernels of one compiled function and the tensors between them."""

    title: str
    inputs: list[tuple[str, Tensor]] = field(default_factory=list)
    outputs: list[tuple[str, Tensor]] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)


@dataclass
class KernelGraph:
    """A compiled model as sections of kernels (one section unless the VM runs it)."""

    title: str
    sections: list[Section]

    @property
    def kernels(self) -> list[Kernel]:
        return [k for s in self.sections for k in s.kernels]

    def apply_profile(self, seconds_per_call: Mapping[str, float]) -> int:
        """Give each kernel its measured mean time (by kernel symbol); returns how many
        kernels were timed (none for the VM's profile, which times whole functions)."""
        for kernel in self.kernels:
            kernel.seconds = seconds_per_call.get(kernel.symbol)
        return sum(k.seconds is not None for k in self.kernels)


def _tensor(t: GraphTensor) -> Tensor:
    return Tensor(t.name, tuple(t.shape), str(t.dtype))


def section_of_program(program: GraphProgram, title: str, backends: Mapping[str, str], prefix: str = "") -> Section:
    """The kernels of a graph program and its data flow. A node's last argument is the
    tensor it writes, and so is a temporary or output it is the first to touch."""
    section = Section(title)
    producer: dict[int, str] = {}
    for k, t in enumerate(program.tensors):
        if t.kind == "input":
            node = f"{prefix}input_{t.index}"
            producer[k] = node
            section.inputs.append((node, _tensor(t)))
    for n, call in enumerate(program.nodes):
        kernel_id = f"{prefix}k{n}"
        backend = backends.get(call.kernel)
        ops = [call.kernel] if backend else ops_of_kernel(call.kernel)
        weights = sum(program.tensors[a].kind == "weight" for a in call.args)
        section.kernels.append(Kernel(kernel_id, call.kernel, ops, weights, backend))
        written = {call.args[-1]} if call.args else set()
        for a in call.args:
            if program.tensors[a].kind in ("temp", "output") and a not in producer:
                written.add(a)
        for a in dict.fromkeys(call.args):
            t = program.tensors[a]
            if a not in written and a in producer and t.kind != "weight":
                section.edges.append(Edge(producer[a], kernel_id, _tensor(t)))
        for a in written:
            producer[a] = kernel_id
    for k, t in enumerate(program.tensors):
        if t.kind == "output":
            node = f"{prefix}output_{t.index}"
            section.outputs.append((node, _tensor(t)))
            if k in producer:
                section.edges.append(Edge(producer[k], node, _tensor(t)))
    return section


def _backends(external_modules: Iterable[Any]) -> dict[str, str]:
    return {m.symbol: m.backend for m in external_modules}


def kernel_graph(compiled: Any, title: str = "model") -> KernelGraph:
    """The kernel graph of a compiled model: ``tk.build``'s result or a loaded artifact
    (``tensorkiln.runtime.load_module``), the VM's included (one section per function)."""
    functions: Sequence[Any] | None = getattr(compiled, "functions", None)
    if functions is not None:  # the VM: its straight-line functions, each compiled alone
        names = getattr(getattr(compiled, "program", None), "function_names", None) or [str(k) for k in range(len(functions))]
        sections = [_section(f, f"function {name}", prefix=f"f{k}.") for k, (f, name) in enumerate(zip(functions, names))]
        return KernelGraph(title, sections)
    return KernelGraph(title, [_section(compiled, title)])


def _section(compiled: Any, title: str, prefix: str = "") -> Section:
    program = getattr(compiled, "graph_program", None)
    if program is None:
        raise ValueError(
            f"visualize: {type(compiled).__name__} has no graph program to draw "
            "(expected a graph module, tk.build's result or a loaded .tk artifact)"
        )
    return section_of_program(program, title, _backends(getattr(compiled, "external_modules", ()) or ()), prefix)


__all__ = ["Edge", "Kernel", "KernelGraph", "Section", "Tensor", "kernel_graph", "ops_of_kernel", "section_of_program"]
