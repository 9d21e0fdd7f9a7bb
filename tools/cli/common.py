"""What the subcommands share: loading models and compiled artifacts, reading and making inputs.

Every failure a user can cause (a missing file, a model we cannot read, an input of the
wrong shape) surfaces as :class:`UserError` or one of the compiler's own errors, which
``main`` prints as one line.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ParseError, VerifyException

import tensorkiln as tk
from tensorkiln.dialects.graph import ConstantOp
from tensorkiln.dialects.graph.types import WeightAttr, register_weight
from tensorkiln.errors import UnreadableInputError, UnsupportedOperatorError, unreadable_input
from tensorkiln.runtime import ArtifactError, load_module
from tensorkiln.runtime.host_checks import RuntimeCheckError
from tensorkiln.runtime.dim_expr import evaluate, free_symbols, is_symbol
from tensorkiln.runtime.signature import Signature


class UserError(Exception):
    """A mistake in how the command was called or in the files it was given."""


#: errors a user's input causes (a bad file, an unsupported op, a wrong input shape): reported
#: as one line, without the hint that it may be a bug of ours
USER_ERRORS: tuple[type[BaseException], ...] = (
    UserError, OSError, ValueError, IndexError, UnsupportedOperatorError, ArtifactError,
    RuntimeCheckError, ParseError, VerifyException,
)


#: a compiled model written by ``tensorkiln compile`` / ``lib.export_library``
ARTIFACT_SUFFIX = ".tk"


@dataclass
class LoadedModel:
    """A model read from a file: its graph module, and what runs the original (for ``--compare``)."""

    module: ModuleOp
    path: Path
    #: name -> ``make(threads)``: a callable running the model as its own framework does
    #: (numpy in), on ``threads`` threads (None: the framework's default)
    references: Mapping[str, Callable[[int | None], Callable[..., Any]]]


#: how printed IR refers to a weight held by reference
_WEIGHT_REFERENCE = re.compile(r'#graph\.weight<"([^"]*)">')


def weights_file(mlir: Path) -> Path:
    """The weights beside an ``.mlir`` model: ``model.mlir`` -> ``model.npz`` (arrays by name)."""
    return mlir.with_suffix(".npz")


def _load_mlir(path: Path) -> LoadedModel:
    """IR text; its ``#graph.weight<"name">`` constants are read from ``weights_file(path)``."""
    sidecar = weights_file(path)
    weights: dict[str, np.ndarray] = {}
    if sidecar.exists():
        with np.load(sidecar, allow_pickle=False) as arrays:
            weights = {name: arrays[name] for name in arrays.files}
    # the table of live weights is weak: ``weights`` keeps them alive until parsed; a name
    # already taken in this process (by another model) is given a fresh one in the text
    renamed = {name: register_weight(name, array) for name, array in weights.items()}
    try:
        text = path.read_text()
    except UnicodeDecodeError as error:
        raise UserError(f"{path}: {unreadable_input(error)}") from None
    text = _WEIGHT_REFERENCE.sub(lambda m: f'#graph.weight<"{renamed.get(m[1], m[1])}">', text)
    try:
        return LoadedModel(tk.parse_module(text), path, {})
    except UnreadableInputError as error:
        raise UserError(f"{path}: {error}") from None


def save_mlir(module: ModuleOp, path: str | Path) -> Path:
    """Write ``module`` as IR text and its weights (held by reference) beside it, as
    ``tensorkiln compile`` reads them back: ``model.mlir`` and ``model.npz``."""
    path = Path(path)
    weights = {
        op.value.data.name: op.value.array for op in module.walk() if isinstance(op, ConstantOp) and isinstance(op.value, WeightAttr)
    }
    path.write_text(str(module))
    if weights:
        np.savez(weights_file(path), **weights)
    return path


def _load_exported_program(path: Path) -> LoadedModel:
    try:
        import torch
    except ImportError as e:
        raise UserError(f"{path}: reading a .pt2 file needs torch (pip install 'tensorkiln[torch]')") from e
    from tensorkiln.frontends.torch import from_exported_program

    if not zipfile.is_zipfile(path):  # torch would log a traceback, then fail inside its loader
        raise UserError(f"{path}: not a .pt2 archive (torch.export.save writes a zip archive)")
    try:
        program = torch.export.load(str(path))
    except (RuntimeError, zipfile.BadZipFile, KeyError, ValueError, EOFError) as e:
        raise UserError(f"{path}: not a readable .pt2 file ({type(e).__name__}: {e})") from e
    module = from_exported_program(program)

    def torch_eager(threads: int | None) -> Callable[..., Any]:
        if threads is not None:
            torch.set_num_threads(threads)
        eager = program.module()

        def run_torch(*arrays: np.ndarray) -> Any:
            with torch.no_grad():
                return eager(*(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays))

        return run_torch

    return LoadedModel(module, path, {"torch": torch_eager})


def _load_onnx(path: Path) -> LoadedModel:
    try:
        from tensorkiln.frontends.onnx import from_onnx
    except ImportError as e:
        raise UserError(f"{path}: reading an .onnx file needs onnx (pip install 'tensorkiln[onnx]'): {e}") from e
    def onnx_runtime(threads: int | None) -> Callable[..., Any]:
        try:
            import onnxruntime
        except ImportError as e:
            raise UserError("--compare onnxruntime needs onnxruntime (pip install onnxruntime)") from e
        options = onnxruntime.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda *arrays: session.run(None, dict(zip(names, arrays)))

    return LoadedModel(from_onnx(str(path)), path, {"onnxruntime": onnx_runtime})


#: file suffix -> loader of a model (graph module + references)
MODEL_LOADERS: dict[str, Callable[[Path], LoadedModel]] = {
    ".mlir": _load_mlir,
    ".pt2": _load_exported_program,
    ".onnx": _load_onnx,
}


def existing(path: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise UserError(f"{path}: no such file or directory")
    return p


def is_artifact(path: str) -> bool:
    """A compiled model directory (``export_library``'s), whatever its name."""
    p = Path(path)
    return p.is_dir() and (p / "meta.json").exists()


def load_model(path: str) -> LoadedModel:
    """A model file (.pt2 from ``torch.export.save``, .onnx, .mlir) as a graph module."""
    p = existing(path)
    loader = MODEL_LOADERS.get(p.suffix)
    if loader is None:
        kinds = ", ".join(MODEL_LOADERS)
        raise UserError(f"{path}: unknown model file type '{p.suffix}' (expected one of {kinds}, or a compiled {ARTIFACT_SUFFIX})")
    return loader(p)


def load_compiled(path: str) -> Any:
    """A compiled model directory (``tensorkiln compile``'s output) loaded for running."""
    existing(path)
    if not is_artifact(path):
        raise UserError(f"{path}: not a compiled model (no meta.json); make one with 'tensorkiln compile MODEL -o {Path(path).stem}{ARTIFACT_SUFFIX}'")
    return load_module(path)


def model_or_compiled(path: str, build: Callable[[ModuleOp], Any]) -> tuple[Any, LoadedModel | None]:
    """``(runnable, model)``: a compiled directory loaded (model None), or a model file built with ``build``."""
    if is_artifact(path):
        return load_compiled(path), None
    model = load_model(path)
    return build(model.module), model


def parse_dims(items: Sequence[str]) -> dict[str, int]:
    """``["n=4", "seq=128"]`` -> ``{"n": 4, "seq": 128}`` (sizes of symbolic dims)."""
    dims = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not is_symbol(name.strip()) or not value.strip().isdigit():
            raise UserError(f"--dim {item!r}: expected NAME=SIZE, e.g. --dim n=4")
        dims[name.strip()] = int(value)
    return dims


#: the size of a symbolic dim that --dim does not give
DEFAULT_DIM = 2


def _symbol_values(signature: Signature, dims: Mapping[str, int]) -> dict[str, int]:
    lowest = {name: low for name, low, _ in signature.ranges}
    symbols: dict[str, int] = {}
    for spec in signature.inputs:
        for d in spec.shape:
            for name in free_symbols(d) if isinstance(d, str) else ():
                symbols.setdefault(name, dims.get(name, max(DEFAULT_DIM, lowest.get(name, 0))))
    unknown = set(dims) - set(symbols)
    if unknown:
        raise UserError(f"--dim {', '.join(sorted(unknown))}: the model has no such symbolic dim (it has: {', '.join(symbols) or 'none'})")
    return symbols


def random_inputs(signature: Signature, dims: Mapping[str, int] | None = None, seed: int = 0) -> list[np.ndarray]:
    """Random arrays for every input the caller gives (the random-number state left out):
    floats normal, integers in [0, 2) (valid as indices), booleans random."""
    rng = np.random.default_rng(seed)
    symbols = _symbol_values(signature, dims or {})
    arrays = []
    for k, spec in enumerate(signature.inputs):
        if k == signature.random_state:
            continue
        shape = tuple(evaluate(d, symbols) if isinstance(d, str) else d for d in spec.shape)
        if spec.dtype.kind == "f" or spec.dtype.name == "bfloat16":
            arrays.append(rng.standard_normal(shape).astype(spec.dtype))
        elif spec.dtype.kind == "b":
            arrays.append(rng.random(shape) < 0.5)
        else:
            arrays.append(rng.integers(0, 2, shape).astype(spec.dtype))
    return arrays


def read_inputs(paths: Sequence[str]) -> list[np.ndarray]:
    """Arrays from ``.npy`` files, in the order given."""
    arrays = []
    for path in paths:
        p = existing(path)
        try:
            arrays.append(np.load(p, allow_pickle=False))
        except ValueError as e:
            raise UserError(f"{path}: not a .npy array ({e})") from e
    return arrays


def inputs_for(signature: Signature, paths: Sequence[str], dims: Sequence[str]) -> list[np.ndarray]:
    """The ``--input`` files when given, else random inputs (``--dim`` sizes symbolic dims)."""
    return read_inputs(paths) if paths else random_inputs(signature, parse_dims(dims))


def as_outputs(result: Any) -> list[np.ndarray]:
    """A model's result (an array, or a tuple/list of them, torch tensors too) as numpy arrays."""
    items = result if isinstance(result, list | tuple) else [result]
    return [np.asarray(r.detach().numpy() if hasattr(r, "detach") else r) for r in items]


def signature_of(runnable: Any) -> Signature:
    signature = getattr(runnable, "signature", None)
    if signature is None:
        raise UserError(f"{type(runnable).__name__} has no signature to make inputs from: pass --input")
    return signature
