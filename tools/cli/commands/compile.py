"""Compile a model file to a deployable directory (native library, graph program, weights).

    tensorkiln compile model.pt2 -o model.tk                 # from torch.export.save
    tensorkiln compile model.onnx -o model.tk --opt-level 3
    tensorkiln compile model.mlir -o model.tk --tuning-log tune.jsonl --dump-ir ir/

Load the result with ``tensorkiln run`` or, in Python, ``tensorkiln.runtime.load_module``
(numpy and ctypes only: no torch, xDSL or llvmlite needed where it runs).
"""

from __future__ import annotations

import argparse
import time

import tensorkiln as tk

from ..common import existing, load_model

NAME = "compile"
HELP = "compile MODEL (.pt2, .onnx, .mlir) to a deployable OUT.tk directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help=".pt2 (torch.export.save), .onnx or .mlir file")
    parser.add_argument("-o", "--output", metavar="OUT.tk", required=True, help="the directory to write")
    add_build_options(parser)
    parser.add_argument("--dump-ir", metavar="DIR", help="write the IR after every pass to DIR")


def add_build_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``tk.build`` that ``compile``, ``bench`` and ``show`` share."""
    parser.add_argument("--target", default="llvm", help='target string: "llvm" (host CPU), "llvm -mcpu=skylake-avx512", "cuda"')
    parser.add_argument("--opt-level", type=int, choices=range(4), default=None, metavar="{0,1,2,3}",
                        help="graph optimization level (default 2: folding, layout, fusion)")
    parser.add_argument("--tuning-log", metavar="FILE", help="a 'tensorkiln tune' log: each tuned kernel gets its best schedule")


def build_options(args: argparse.Namespace) -> dict:
    """``tk.build``'s keyword arguments from the options of :func:`add_build_options`."""
    if args.tuning_log is not None:
        existing(args.tuning_log)
    return dict(target=args.target, opt_level=args.opt_level, tuning_log=args.tuning_log)


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    start = time.perf_counter()
    lib = tk.build(model.module, dump_ir=args.dump_ir, **build_options(args))
    seconds = time.perf_counter() - start
    lib.export_library(args.output)
    print(f"compiled {args.model} -> {args.output} in {seconds * 1e3:.0f} ms ({args.target})")
    for spec in lib.signature.inputs:
        print(f"  input  {spec.name}: {spec.describe()}")
    for spec in lib.signature.outputs:
        print(f"  output {spec.name}: {spec.describe()}")
    return 0
