"""Loading a deployed model (``lib.export_library(path)``) with numpy and ctypes only.

``load_module(path)`` reads the artifact directory (``driver/export.py`` describes
it), checks everything before any native code runs (a corrupt or truncated file, a
missing or reshaped weight gives an :class:`ArtifactError` naming the file and what is
wrong, never a crash), loads the shared library with ``dlopen`` and returns a callable
module: the AOT entry by default, the graph executor with ``executor="graph"``.
Weights are read from the weights file at load time, so new weights of the same
shapes and dtypes take effect without a rebuild.

Example::

    from tensorkiln.runtime import load_module
    lib = load_module("model.tk")
    y = lib(x)
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import json
import os
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from . import threads
from .elf_check import elf_problem
from .graph_program import GraphProgram, ProgramFormatError
from .module import CompiledModule
from .npz import load_arrays
from .packed_call import packed_entry_name
from .signature import Signature
from .vm import VirtualMachine, VMProgram

ARTIFACT_FORMAT = "tensorkiln.artifact/1"
#: a VM model: ``vm.json`` (bytecode), ``constants.npz``, one artifact per function in ``functions/<k>``
VM_ARTIFACT_FORMAT = "tensorkiln.vm-artifact/1"
VM_PROGRAM = "vm.json"
VM_CONSTANTS = "constants.npz"
META = "meta.json"
PROGRAM = "graph.json"
LIBRARY = "model.so"
WEIGHTS = "weights.npz"
EXTERNALS = "externals"

EXECUTORS = ("aot", "graph")


class ArtifactError(RuntimeError):
    """A deployed artifact that cannot be loaded: names the file and the problem."""


class _SharedLibrary:
    """A ``dlopen``-ed library; ``address(name)`` of an exported function."""

    def __init__(self, path: Path, uses_openmp: bool, reads_thread_count: bool):
        if uses_openmp and threads._libgomp() is None:  # noqa: SLF001 (our own runtime)
            raise ArtifactError(f"{path}: the model uses OpenMP but libgomp could not be loaded")
        try:
            self.cdll = ctypes.CDLL(str(path), mode=getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 2))
        except OSError as e:
            raise ArtifactError(f"{path}: not a loadable shared library ({e})") from e
        self.thread_count = ctypes.c_int32.in_dll(self.cdll, threads.NUM_THREADS_SYMBOL) if reads_thread_count else None

    def address(self, name: str) -> int:
        try:
            return ctypes.cast(getattr(self.cdll, name), ctypes.c_void_p).value
        except AttributeError:
            raise ArtifactError(f"the shared library exports no function '{name}'") from None


class DeployedModule(CompiledModule):
    """A model loaded from an artifact: callable like ``tk.build``'s result.

    ``executor``: ``"aot"`` (one native call) or ``"graph"``; ``load_seconds``: how long
    loading took."""

    def __init__(
        self,
        library: _SharedLibrary,
        meta: dict[str, Any],
        program: GraphProgram,
        weights: list[np.ndarray],
        executor: str,
        external_modules: list[Any] = (),
    ):
        try:
            entry = library.address(packed_entry_name(meta["entry"]))
        except ArtifactError as error:
            raise ArtifactError(f"{error} (an artifact exported before entries had packed companions: export it again)") from None
        super().__init__(
            entry, program.signature, weights, keep_alive=library,
            temporaries=program if meta.get("entry_temporaries") else None,
        )
        self.external_modules = list(external_modules)  # kept alive: the library calls them
        self.graph_program = program
        self.executor = executor
        self.meta = meta
        self.load_seconds = 0.0
        self._thread_count = library.thread_count
        self._threads_requested = ctypes.c_int32.from_address(threads.native_address())
        self._default = self._run if executor == "aot" else self.graph_executor()

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        if self._thread_count is not None and self._thread_count.value != self._threads_requested.value:
            self._thread_count.value = self._threads_requested.value
        if self.first_run_seconds is None:
            start = time.perf_counter()
            result = self._default(*args)
            self.first_run_seconds = time.perf_counter() - start
        else:
            result = self._default(*args)
        for module in self.external_modules:
            module.raise_pending()  # an error inside an external module, raised here
        return result


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ArtifactError(f"{path}: missing (not a tensorkiln artifact, or an incomplete one)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{path}: cannot be read ({e})") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ArtifactError(f"{path}: not valid JSON ({e})") from e


def _read_meta(root: Path) -> dict[str, Any]:
    meta = _read_json(root / META)
    if not isinstance(meta, dict) or meta.get("format") not in (ARTIFACT_FORMAT, VM_ARTIFACT_FORMAT):
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise ArtifactError(f"{root / META}: format {found!r}, expected {ARTIFACT_FORMAT!r} or {VM_ARTIFACT_FORMAT!r}")
    if meta["format"] == VM_ARTIFACT_FORMAT:
        for key in ("program", "constants", "functions"):
            if key not in meta:
                raise ArtifactError(f"{root / META}: no '{key}' entry")
        return meta
    for key in ("entry", "signature", "library", "library_sha256", "program", "weights", "weight_specs"):
        if key not in meta:
            raise ArtifactError(f"{root / META}: no '{key}' entry")
    return meta


def _read_weights(path: Path, specs: list[dict[str, Any]]) -> list[np.ndarray]:
    try:
        arrays = load_arrays(path)
    except FileNotFoundError:
        raise ArtifactError(f"{path}: weights file missing") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ArtifactError(f"{path}: not a readable .npz weights file ({e})") from e
    weights = []
    for spec in specs:
        name, shape, dtype = spec["name"], tuple(spec["shape"]), np.dtype(spec["dtype"])
        if name not in arrays:
            raise ArtifactError(f"{path}: weight '{name}' missing (has: {', '.join(sorted(arrays)) or 'none'})")
        array = arrays[name]
        if array.shape != shape or array.dtype != dtype:
            raise ArtifactError(
                f"{path}: weight '{name}' is {array.dtype}{list(array.shape)}, the model needs {dtype}{list(shape)}"
            )
        weights.append(np.asarray(array, order="C"))
    return weights


class DeployedVM(VirtualMachine):
    """A VM model loaded from an artifact (its functions are deployed AOT modules)."""

    load_seconds: float = 0.0


def _load_vm(root: Path, meta: dict[str, Any]) -> DeployedVM:
    try:
        arrays = load_arrays(root / meta["constants"])
        constants = [arrays[f"c{k}"] for k in range(len(arrays))]
    except FileNotFoundError:
        raise ArtifactError(f"{root / meta['constants']}: constants file missing") from None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
        raise ArtifactError(f"{root / meta['constants']}: not a readable .npz constants file ({e})") from e
    try:
        program = VMProgram.from_json(_read_json(root / meta["program"]), constants)
    except (KeyError, TypeError, ValueError) as e:
        raise ArtifactError(f"{root / meta['program']}: {e}") from e
    functions = [load_module(root / f) for f in meta["functions"]]
    if len(functions) != len(program.function_names):
        raise ArtifactError(f"{root / META}: {len(functions)} functions, the program calls {len(program.function_names)}")
    return DeployedVM(program, functions)


def _read_checked(path: Path, sha256: str) -> bytes:
    """The bytes of ``path``, which must have the SHA-256 the artifact's meta records."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ArtifactError(f"{path}: cannot be read ({e})") from e
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ArtifactError(f"{path}: corrupt or truncated (its SHA-256 differs from the one in {META})")
    return data


def _load_external_modules(root: Path, meta: dict[str, Any], library: _SharedLibrary) -> list[Any]:
    """The BYOC external modules the library calls (``externals/``), loaded and bound by
    the loader function the artifact names (``module:function``): a plugin, imported only
    for such artifacts, so plain models never import anything beyond numpy and ctypes."""
    entry = meta.get("externals")
    if not entry:
        return []
    blobs = []
    try:
        for spec in entry["modules"]:
            blobs.append(_read_checked(root / spec["file"], spec["sha256"]))
        module_name, _, function = entry["loader"].partition(":")
    except (KeyError, TypeError, AttributeError) as e:
        raise ArtifactError(f"{root / META}: malformed 'externals' entry ({e})") from e
    try:
        loader = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as e:
        raise ArtifactError(f"{root}: its external modules need {entry['loader']}, which cannot be imported ({e})") from e
    try:
        return loader(library.cdll, blobs)
    except (ValueError, OSError) as e:
        raise ArtifactError(f"{root}: an external module could not be loaded ({e})") from e


def load_module(path: str | os.PathLike[str], executor: str | None = None) -> DeployedModule | DeployedVM:
    """Load an artifact written by ``export_library`` (see the module docstring).
    ``executor``: ``"aot"`` (the default) or ``"graph"``; a VM artifact runs in the VM.

    Example: ``y = load_module("model.tk")(x)``
    """
    start = time.perf_counter()
    if executor is not None and executor not in (*EXECUTORS, "vm"):
        raise ValueError(f"unknown executor {executor!r} (expected one of {', '.join((*EXECUTORS, 'vm'))})")
    root = Path(path)
    if not root.is_dir():
        raise ArtifactError(f"{root}: no such artifact directory")
    meta = _read_meta(root)
    if meta["format"] == VM_ARTIFACT_FORMAT:
        if executor not in (None, "vm"):
            raise ValueError(f"{root} holds a VM program (control flow): it runs in the 'vm' executor, not {executor!r}")
        vm = _load_vm(root, meta)
        vm.load_seconds = time.perf_counter() - start
        return vm
    executor = executor or "aot"
    if executor == "vm":
        raise ValueError(f"{root} holds a graph/AOT model: load it with executor 'aot' or 'graph'")
    try:
        program = GraphProgram.from_json(_read_json(root / meta["program"]))
        signature = Signature.from_json(meta["signature"])
    except (ProgramFormatError, KeyError, TypeError, ValueError) as e:
        raise ArtifactError(f"{root / meta['program']}: {e}") from e
    if program.signature != signature:
        raise ArtifactError(f"{root / meta['program']}: its signature differs from {META}'s")
    weights = _read_weights(root / meta["weights"], meta["weight_specs"])
    n_weights = sum(1 for t in program.tensors if t.kind == "weight")
    if n_weights != len(weights):
        raise ArtifactError(f"{root / meta['program']}: uses {n_weights} weights, {META} lists {len(weights)}")
    library_path = root / meta["library"]
    blob = _read_checked(library_path, meta["library_sha256"])
    problem = elf_problem(blob)
    if problem is not None:
        raise ArtifactError(f"{library_path}: not a loadable shared library ({problem})")
    library = _SharedLibrary(library_path.resolve(), bool(meta.get("uses_openmp")), bool(meta.get("reads_thread_count")))
    externals = _load_external_modules(root, meta, library)
    for name in program.kernels:
        library.address(name)
    module = DeployedModule(library, meta, program, weights, executor, externals)
    module.load_seconds = time.perf_counter() - start
    return module


__all__ = ["ARTIFACT_FORMAT", "VM_ARTIFACT_FORMAT", "ArtifactError", "DeployedModule", "DeployedVM", "load_module"]
