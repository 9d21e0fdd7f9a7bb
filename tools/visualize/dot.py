"""Graphviz rendering (the ``graphviz`` Python package and the ``dot`` program)."""

from __future__ import annotations

import html
import shutil
from pathlib import Path
from typing import Any

from .kernel_graph import KernelGraph, Section
from .style import EXTERNAL, TERMINAL_FILL, fill, lines, slowest, terminals


def dot_available() -> bool:
    """Whether the ``graphviz`` package is installed and the ``dot`` program on the PATH."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


def _label(text: list[str]) -> str:
    """A Graphviz HTML-like label: the first line bold, the rest plain."""
    rows = [f"<B>{html.escape(text[0])}</B>"] + [
        f'<FONT COLOR="{EXTERNAL}">{html.escape(t)}</FONT>' if t.startswith("BYOC: ") else html.escape(t) for t in text[1:]
    ]
    return "<" + "<BR/>".join(rows) + ">"


def _add_section(graphviz: Any, graph: Any, section: Section, top: float) -> None:
    for node, name, tensor in terminals(section):
        graph.node(node, f"{name}\n{tensor.label}", shape="ellipse", style="filled", fillcolor=TERMINAL_FILL)
    for kernel in section.kernels:
        attributes = dict(shape="box", style="filled,rounded", fillcolor=fill(kernel, top), fontname="Helvetica")
        if kernel.backend:  # a BYOC region: outlined, named after its backend
            cluster = graphviz.Digraph(name=f"cluster_{kernel.id}")
            cluster.attr(label=f"BYOC: {kernel.backend}", style="dashed", color=EXTERNAL, fontcolor=EXTERNAL)
            cluster.node(kernel.id, _label(lines(kernel)), **attributes)
            graph.subgraph(cluster)
        else:
            graph.node(kernel.id, _label(lines(kernel)), **attributes)
    for edge in section.edges:
        graph.edge(edge.source, edge.target, label=edge.tensor.label, fontsize="10", fontname="Helvetica")


def render_dot(graph: KernelGraph, path: Path) -> Path:
    """Write ``path`` (.svg, .png, .pdf or .dot) with Graphviz."""
    import graphviz

    dot = graphviz.Digraph(name=graph.title, graph_attr=dict(rankdir="TB", label=graph.title, labelloc="t", fontname="Helvetica"))
    top = slowest(graph)
    if len(graph.sections) == 1:
        _add_section(graphviz, dot, graph.sections[0], top)
    else:
        for k, section in enumerate(graph.sections):
            sub = graphviz.Digraph(name=f"cluster_section{k}")
            sub.attr(label=section.title, style="rounded", color="#999999")
            _add_section(graphviz, sub, section, top)
            dot.subgraph(sub)
    if path.suffix == ".dot":
        path.write_text(dot.source)
    else:
        path.write_bytes(dot.pipe(format=path.suffix.lstrip(".")))
    return path
