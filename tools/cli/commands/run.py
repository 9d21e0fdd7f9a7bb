"""Run a compiled model on inputs from ``.npy`` files; save or summarize its outputs.

    tensorkiln run model.tk --input x.npy --output y.npy
    tensorkiln run model.tk --input ids.npy --input mask.npy --output logits.npy --output cache.npy
    tensorkiln run model.tk --output out.npz        # random inputs; every output in one .npz

Inputs go in the model's order. Without ``--input``, inputs are random (``--dim n=4``
sizes a symbolic dim). Without ``--output``, each output's shape, dtype and a few values
are printed.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..common import UserError, as_outputs, inputs_for, load_compiled, signature_of

NAME = "run"
HELP = "run a compiled OUT.tk on .npy inputs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("artifact", metavar="OUT.tk", help="a directory written by 'tensorkiln compile'")
    add_input_options(parser)
    parser.add_argument("--output", action="append", default=[], metavar="Y.npy",
                        help="where to save the outputs: one .npy per output, in order, or one .npz for all")


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """``--input`` and ``--dim``, shared by the commands that run a model."""
    parser.add_argument("--input", action="append", default=[], metavar="X.npy",
                        help="an input array (repeat for several inputs, in the model's order); default: random")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                        help="the size of a symbolic dim for random inputs (default 2)")


def save_outputs(outputs: list[np.ndarray], paths: list[str]) -> None:
    if len(paths) == 1 and paths[0].endswith(".npz"):
        np.savez(paths[0], *outputs)
        return
    if len(paths) != len(outputs):
        raise UserError(f"--output: the model has {len(outputs)} outputs, {len(paths)} paths given (or give one .npz)")
    for array, path in zip(outputs, paths):
        np.save(path, array)


def run(args: argparse.Namespace) -> int:
    lib = load_compiled(args.artifact)
    inputs = inputs_for(signature_of(lib), args.input, args.dim)
    outputs = as_outputs(lib(*inputs))
    if args.output:
        save_outputs(outputs, args.output)
        print(f"wrote {len(outputs)} output(s) to {', '.join(args.output)}")
        return 0
    for k, array in enumerate(outputs):
        values = np.array2string(array.ravel()[:6], precision=4, separator=", ")
        print(f"output {k}: {array.dtype}{list(array.shape)} {values}{' ...' if array.size > 6 else ''}")
    return 0
