"""Pictures of a compiled model: ``tk.visualize(module_or_lib, "graph.svg")``.

The graph after optimization, one box per kernel (a fused group) listing the ops it
computes, edges labelled with tensor shapes and dtypes, weights folded into the kernels
that read them, BYOC regions outlined with their backend's name, and boxes shaded by
measured time when a profile is given. ``.svg``/``.png``/``.pdf``/``.dot`` are drawn by
Graphviz when its ``dot`` program and the ``graphviz`` package are installed (an ``.svg``
falls back to tensorkiln's own layout otherwise); ``.html`` is a self-contained page that
needs nothing to view.

Example::

    lib = tk.build(module)
    tk.visualize(lib, "graph.html", profile=lib.profile(x))
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from tensorkiln.build import build
from tensorkiln.runtime import load_module
from tensorkiln.runtime.profiler import ProfileReport

from .dot import dot_available, render_dot
from .html_page import render_html, render_svg
from .kernel_graph import KernelGraph, kernel_graph

#: suffixes only Graphviz can write
GRAPHVIZ_ONLY = (".png", ".pdf", ".dot")


def compiled_model(model: Any) -> Any:
    """A graph module built with ``tk.build``; a path to an exported artifact loaded; else ``model``."""
    if isinstance(model, ModuleOp):
        return build(model)
    if isinstance(model, str | os.PathLike):
        return load_module(model)
    return model


def graph_of(model: Any, profile: ProfileReport | None = None, title: str | None = None) -> KernelGraph:
    """The :class:`KernelGraph` of ``model`` (a graph module, ``tk.build``'s result, a
    loaded artifact or its path), its kernels timed by ``profile`` (``lib.profile(x)``)."""
    name = title or (Path(model).name if isinstance(model, str | os.PathLike) else "model")
    graph = kernel_graph(compiled_model(model), name)
    if profile is not None:
        graph.apply_profile({k.name: k.mean_seconds for k in profile.kernels})
    return graph


def visualize(
    model: Any, path: str | os.PathLike[str], *, profile: ProfileReport | None = None, title: str | None = None
) -> Path:
    """Draw ``model``'s compiled graph to ``path`` (.svg, .html, or with Graphviz .png/.pdf/.dot);
    returns the path written.

    Example::

        tk.visualize(module, "graph.svg")                       # builds it first
        tk.visualize(lib, "graph.html", profile=lib.profile(x))  # shaded by time
    """
    out = Path(path)
    graph = graph_of(model, profile, title)
    suffix = out.suffix.lower()
    if suffix == ".html":
        return render_html(graph, out)
    if suffix == ".svg":
        return render_dot(graph, out) if dot_available() else render_svg(graph, out)
    if suffix in GRAPHVIZ_ONLY:
        if not dot_available():
            raise RuntimeError(
                f"visualize: {suffix} needs Graphviz (pip install graphviz; apt-get install graphviz); "
                ".svg and .html need nothing"
            )
        return render_dot(graph, out)
    raise ValueError(f"visualize: unknown picture type {out.suffix!r} for {path} (expected .svg, .html, .png, .pdf or .dot)")


__all__ = ["KernelGraph", "dot_available", "graph_of", "kernel_graph", "visualize"]
