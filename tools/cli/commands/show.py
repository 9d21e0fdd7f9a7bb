"""Show a compiled model's graph: one box per kernel (fused group) with its ops, the
tensors between kernels with their shapes, BYOC regions with their backend.

    tensorkiln show model.tk                          # a text listing of the kernels
    tensorkiln show model.pt2 --svg graph.svg         # Graphviz (or tensorkiln's own layout)
    tensorkiln show model.onnx --html graph.html --profile   # shaded by measured time

``--profile`` runs the model (on ``--input`` files, or random inputs) and shades each
kernel by its time per call.
"""

from __future__ import annotations

import argparse

import tensorkiln as tk
from tensorkiln.tools.visualize import graph_of

from ..common import UserError, inputs_for, model_or_compiled, signature_of
from .compile import add_build_options, build_options
from .run import add_input_options

NAME = "show"
HELP = "draw MODEL or OUT.tk: kernels, their ops and tensors (--svg, --html, or text)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL|OUT.tk", help="a model file (.pt2, .onnx, .mlir) or a compiled directory")
    picture = parser.add_mutually_exclusive_group()
    picture.add_argument("--svg", metavar="FILE", help="write an SVG picture")
    picture.add_argument("--html", metavar="FILE", help="write a self-contained HTML page")
    parser.add_argument("--profile", action="store_true", help="run the model and shade kernels by their time")
    add_input_options(parser)
    add_build_options(parser)


def run(args: argparse.Namespace) -> int:
    lib, _ = model_or_compiled(args.model, lambda module: tk.build(module, **build_options(args)))
    profile = None
    if args.profile:
        if not hasattr(lib, "profile"):
            raise UserError(f"--profile: {type(lib).__name__} (a loaded control-flow model) has no profiler; give the model file instead")
        profile = lib.profile(*inputs_for(signature_of(lib), args.input, args.dim))
    graph = graph_of(lib, profile, title=args.model)
    if profile is not None and all(k.seconds is None for k in graph.kernels):
        print(profile)  # the VM times whole compiled functions, not kernels: shown as a table
    path = args.svg or args.html
    if path:
        written = tk.visualize(lib, path, profile=profile, title=args.model)
        print(f"wrote {written} ({len(graph.kernels)} kernel calls)")
        return 0
    for section in graph.sections:
        if len(graph.sections) > 1:
            print(f"{section.title}:")
        writes = {e.source: e.tensor for e in section.edges}
        for kernel in section.kernels:
            what = f"BYOC {kernel.backend}" if kernel.backend else " -> ".join(kernel.ops)
            out = writes.get(kernel.id)
            timing = "" if kernel.seconds is None else f"  {kernel.seconds * 1e6:9.2f} us"
            print(f"  {kernel.symbol:<36} {what:<40} {out.label if out else ''}{timing}")
    return 0
