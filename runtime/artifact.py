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
import io
import json
import os
import time
import zipfile
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import numpy as np

from . import native_call, threads
from .elf_check import elf_problem
from .graph_program import GraphProgram, ProgramFormatError
from .manifest import MANIFEST, ArtifactError, Manifest, inside, seal
from .module import CompiledModule
from .npz import load_arrays, save_arrays
from .program_check import check_program
from .packed_call import packed_entry_name
from .signature import Signature
from .sizes import TensorTooLargeError
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

#: the library's record of the program and meta it was exported with: the SHA-256 of
#: ``graph.json`` and ``meta.json`` as written (:func:`binding_digest`), a C string the
#: export links in. Rewriting those files and the manifest to match does not change it.
BINDING_SYMBOL = "tk_artifact_sha256"

#: the loaders of BYOC external modules an artifact may name (``module:function``); plugins
#: add theirs to the ``tensorkiln.external_loaders`` entry point group
EXTERNAL_LOADERS = ("tensorkiln.byoc.deploy:load_external_modules",)
LOADER_GROUP = "tensorkiln.external_loaders"


class _SharedLibrary:
    """A ``dlopen``-ed library; ``address(name)`` of an exported function."""

    def __init__(self, path: Path, uses_openmp: bool, reads_thread_count: bool):
        if uses_openmp and threads._libgomp() is None:  # noqa: SLF001 (our own runtime)
            raise ArtifactError(f"{path}: the model uses OpenMP but libgomp could not be loaded")
        try:
            self.cdll = ctypes.CDLL(str(path), mode=getattr(os, "RTLD_LOCAL", 0) | getattr(os, "RTLD_NOW", 2))
        except OSError as e:
            # glibc says "No such file or directory" for some malformed headers: the file is there
            reason = str(e).replace(f"{path}: ", "").replace("cannot open shared object file: No such file or directory", "rejected by the dynamic loader")
            raise ArtifactError(f"{path}: not a loadable shared library ({reason})") from e
        self.thread_count = None
        if reads_thread_count:
            try:
                self.thread_count = ctypes.c_int32.in_dll(self.cdll, threads.NUM_THREADS_SYMBOL)
            except ValueError:
                raise ArtifactError(f"{path}: defines no '{threads.NUM_THREADS_SYMBOL}' (not this model's library)") from None

    def binding(self) -> str | None:
        """The digest the library was exported with (:data:`BINDING_SYMBOL`), or None."""
        try:
            return (ctypes.c_char * 65).in_dll(self.cdll, BINDING_SYMBOL).value.decode("ascii", "replace")
        except ValueError:
            return None

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
        self._plain_aot = executor == "aot" and not self.external_modules  # (errors of external modules are raised after a call)

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        if self._thread_count is not None and self._thread_count.value != self._threads_requested.value:
            self._thread_count.value = self._threads_requested.value
        native = self._native  # AOT, made at the second call: straight to native code
        if native is not None and self._plain_aot:
            result = native(*args)
            if result is not native_call.FALLBACK:
                return result
        if self.first_run_seconds is None:
            start = time.perf_counter()
            result = self._default(*args)
            self.first_run_seconds = time.perf_counter() - start
        else:
            result = self._default(*args)
        for module in self.external_modules:
            module.raise_pending()  # an error inside an external module, raised here
        return result


def _read_json(files: Manifest, name: str) -> Any:
    text = files.text(name)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ArtifactError(f"{files.root / name}: not valid JSON ({e})") from e
    except RecursionError:
        raise ArtifactError(f"{files.root / name}: nested too deeply to be read") from None


def _read_meta(files: Manifest) -> dict[str, Any]:
    root = files.root
    meta = _read_json(files, META)
    if not isinstance(meta, dict) or meta.get("format") not in (ARTIFACT_FORMAT, VM_ARTIFACT_FORMAT):
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise ArtifactError(f"{root / META}: format {found!r}, expected {ARTIFACT_FORMAT!r} or {VM_ARTIFACT_FORMAT!r}")
    if meta["format"] == VM_ARTIFACT_FORMAT:
        for key in ("program", "constants", "functions"):
            if key not in meta:
                raise ArtifactError(f"{root / META}: no '{key}' entry")
        return meta
    for key in ("entry", "signature", "library", "program", "weights", "weight_specs"):
        if key not in meta:
            raise ArtifactError(f"{root / META}: no '{key}' entry")
    return meta


def _read_arrays(files: Manifest, name: str, what: str) -> dict[str, np.ndarray]:
    data = files.read(name)
    try:
        return load_arrays(io.BytesIO(data))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
        raise ArtifactError(f"{files.root / name}: not a readable .npz {what} file ({e})") from e


def _weight_specs(path: Path, specs: Any) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    try:
        return [(str(s["name"]), tuple(int(d) for d in s["shape"]), np.dtype(s["dtype"])) for s in specs]
    except (KeyError, TypeError, ValueError) as e:
        raise ArtifactError(f"{path}: malformed 'weight_specs' ({e})") from e


def _read_weights(files: Manifest, file: str, specs: list[dict[str, Any]]) -> list[np.ndarray]:
    path = files.root / file
    arrays = _read_arrays(files, file, "weights")
    weights = []
    for name, shape, dtype in _weight_specs(files.root / META, specs):
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


def _load_vm(files: Manifest, meta: dict[str, Any]) -> DeployedVM:
    root = files.root
    arrays = _read_arrays(files, meta["constants"], "constants")
    try:
        constants = [arrays[f"c{k}"] for k in range(len(arrays))]
    except KeyError as e:
        raise ArtifactError(f"{root / meta['constants']}: constant {e} missing") from None
    try:
        program = VMProgram.from_json(_read_json(files, meta["program"]), constants)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise ArtifactError(f"{root / meta['program']}: {e}") from e
    if not isinstance(meta["functions"], list):
        raise ArtifactError(f"{root / META}: 'functions' is not a list")
    for f in meta["functions"]:
        files.read(f"{f}/{MANIFEST}")  # each function artifact is covered by this manifest too
    functions = [load_module(inside(root, f)) for f in meta["functions"]]
    if len(functions) != len(program.function_names):
        raise ArtifactError(f"{root / META}: {len(functions)} functions, the program calls {len(program.function_names)}")
    return DeployedVM(program, functions)


def binding_digest(program: bytes, meta: bytes) -> str:
    """The SHA-256 binding a library to the ``graph.json`` and ``meta.json`` it was
    exported with (their bytes, as written)."""
    return hashlib.sha256(b"tensorkiln.binding/1\0" + program + b"\0" + meta).hexdigest()


def binding_source(program: str, meta: str) -> str:
    """C source defining :data:`BINDING_SYMBOL` for these texts (the export links it)."""
    return f'const char {BINDING_SYMBOL}[] = "{binding_digest(program.encode(), meta.encode())}";\n'


def _check_binding(files: Manifest, meta: dict[str, Any], library: _SharedLibrary) -> None:
    """The program and meta must be the ones the library was exported with: an edit of
    either (with the manifest rewritten to match) would make the native code read
    buffers by another plan than its own."""
    recorded = library.binding()
    if recorded is None:
        raise ArtifactError(
            f"{files.root / meta['library']}: records no '{BINDING_SYMBOL}' (not a tensorkiln model library, "
            "or one exported by an older version: export it again)"
        )
    if recorded != binding_digest(files.read(meta["program"]), files.read(META)):
        raise ArtifactError(
            f"{files.root}: {meta['library']} was exported with another {meta['program']} and {META} than these "
            "(another model's library, or these files edited after the export and the manifest rewritten to match)"
        )


def registered_loaders() -> set[str]:
    """The ``module:function`` loaders of external modules an artifact may name."""
    return set(EXTERNAL_LOADERS) | {ep.value for ep in entry_points(group=LOADER_GROUP)}


def _registered_loader(files: Manifest, meta: dict[str, Any]) -> str:
    """The ``module:function`` loader of the artifact's external modules, which must be
    one of :func:`registered_loaders` (checked before any native code is loaded)."""
    try:
        loader_name = meta["externals"]["loader"]
    except (KeyError, TypeError) as e:
        raise ArtifactError(f"{files.root / META}: malformed 'externals' entry ({e})") from e
    if not isinstance(loader_name, str) or loader_name not in registered_loaders():
        raise ArtifactError(
            f"{files.root / META}: names the external-module loader {loader_name!r}, which is not registered "
            f"(registered: {', '.join(sorted(registered_loaders()))}; plugins register theirs in the "
            f"'{LOADER_GROUP}' entry point group)"
        )
    return loader_name


def _load_external_modules(files: Manifest, meta: dict[str, Any], library: _SharedLibrary) -> list[Any]:
    """The BYOC external modules the library calls (``externals/``), loaded and bound by
    the loader function the artifact names (``module:function``, one of
    :func:`registered_loaders`): a plugin, imported only for such artifacts, so plain
    models never import anything beyond numpy and ctypes."""
    root = files.root
    entry = meta.get("externals")
    if not entry:
        return []
    module_name, _, function = _registered_loader(files, meta).partition(":")
    try:
        blobs = [files.read(spec["file"]) for spec in entry["modules"]]
    except (KeyError, TypeError) as e:
        raise ArtifactError(f"{root / META}: malformed 'externals' entry ({e})") from e
    try:
        loader = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as e:
        raise ArtifactError(f"{root}: its external modules need {entry['loader']}, which cannot be imported ({e})") from e
    try:
        return loader(library.cdll, blobs)
    except (ValueError, OSError) as e:
        raise ArtifactError(f"{root}: an external module could not be loaded ({e})") from e


def _read_program(files: Manifest, meta: dict[str, Any]) -> GraphProgram:
    """The graph program, checked against the meta's signature and weights (``program_check.py``)."""
    path = files.root / str(meta["program"])
    try:
        program = GraphProgram.from_json(_read_json(files, meta["program"]))
        signature = Signature.from_json(meta["signature"])
        if program.signature != signature:
            raise ProgramFormatError(f"its signature differs from {META}'s")
        check_program(program, meta["weight_specs"])
    except (ProgramFormatError, TensorTooLargeError, KeyError, TypeError, ValueError, IndexError) as e:
        raise ArtifactError(f"{path}: {e}") from e  # (a dim past 64 bits is an edited plan, not the caller's sizes)
    n_weights = sum(1 for t in program.tensors if t.kind == "weight")
    if n_weights != len(meta["weight_specs"]):
        raise ArtifactError(f"{path}: uses {n_weights} weights, {META} lists {len(meta['weight_specs'])}")
    return program


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
    files = Manifest(root)
    meta = _read_meta(files)
    if meta["format"] == VM_ARTIFACT_FORMAT:
        if executor not in (None, "vm"):
            raise ValueError(f"{root} holds a VM program (control flow): it runs in the 'vm' executor, not {executor!r}")
        vm = _load_vm(files, meta)
        vm.load_seconds = time.perf_counter() - start
        return vm
    executor = executor or "aot"
    if executor == "vm":
        raise ValueError(f"{root} holds a graph/AOT model: load it with executor 'aot' or 'graph'")
    program = _read_program(files, meta)
    weights = _read_weights(files, meta["weights"], meta["weight_specs"])
    library_path = inside(root, meta["library"])
    if meta.get("externals"):
        _registered_loader(files, meta)
    problem = elf_problem(files.read(meta["library"]))
    if problem is not None:
        raise ArtifactError(f"{library_path}: not a loadable shared library ({problem})")
    library = _SharedLibrary(library_path.resolve(), bool(meta.get("uses_openmp")), bool(meta.get("reads_thread_count")))
    _check_binding(files, meta, library)
    externals = _load_external_modules(files, meta, library)
    for name in program.kernels:
        library.address(name)
    module = DeployedModule(library, meta, program, weights, executor, externals)
    module.load_seconds = time.perf_counter() - start
    return module


def replace_weights(path: str | os.PathLike[str], weights: dict[str, np.ndarray] | str | os.PathLike[str]) -> None:
    """Put new weights (same names, shapes and dtypes: ``w0``, ``w1``..., as in the
    artifact's ``weights.npz``) into the artifact at ``path`` and rewrite its manifest.
    ``weights``: the arrays by name, or an ``.npz`` file of them (another export's
    ``weights.npz``). The artifact is checked first (an ArtifactError if it is damaged).

    Example: ``replace_weights("a.tk", "b.tk/weights.npz")``
    """
    root = Path(path)
    files = Manifest(root)
    meta = _read_meta(files)
    if meta["format"] != ARTIFACT_FORMAT:
        raise ValueError(f"{root}: replace_weights takes a graph/AOT artifact (a VM artifact's functions each have their own)")
    _read_weights(files, meta["weights"], meta["weight_specs"])  # the artifact is intact
    arrays = load_arrays(weights) if not isinstance(weights, dict) else {k: np.asarray(v) for k, v in weights.items()}
    specs = _weight_specs(root / META, meta["weight_specs"])
    for name, shape, dtype in specs:
        got = arrays.get(name)
        if got is None or got.shape != shape or got.dtype != dtype:
            found = f"{got.dtype}{list(got.shape)}" if got is not None else "nothing"
            raise ValueError(f"replace_weights: weight '{name}' must be {dtype}{list(shape)}, got {found}")
    extra = sorted(set(arrays) - {name for name, _, _ in specs})
    if extra:
        raise ValueError(f"replace_weights: the model has no weights {', '.join(extra)}")
    with open(inside(root, meta["weights"]), "wb") as f:
        save_arrays(f, {name: arrays[name] for name, _, _ in specs})
    seal(root)


__all__ = [
    "ARTIFACT_FORMAT",
    "EXTERNAL_LOADERS",
    "VM_ARTIFACT_FORMAT",
    "ArtifactError",
    "DeployedModule",
    "DeployedVM",
    "load_module",
    "registered_loaders",
    "replace_weights",
]
