"""``lib.export_library(path)``: a built model as a deployable artifact directory.

::

    path/
      meta.json     format, entry function, signature, target, file names, the library's
                    SHA-256, the weights' names, shapes and dtypes
      graph.json    the graph executor's program (runtime/graph_program.py documents it)
      model.so      the native code: the object code of the build linked by the system
                    C compiler (``cc -shared``), every kernel and the AOT entry exported,
                    each with its ``<name>_packed`` companion taking one argument array
                    (what the runtime calls: ``runtime/packed_call.py``), and the SHA-256
                    of graph.json and meta.json it belongs to (``tk_artifact_sha256``)
      weights.npz   the weights, ``w0``, ``w1``... (numpy's format; read with
                    ``allow_pickle=False``), replaceable by others of the same shapes
      externals/    only when the model calls BYOC external modules: ``<k>.bin``, each
                    module's own serialization (the library links a trampoline per module,
                    bound to the deserialized module at load)

``tensorkiln.runtime.load_module(path)`` loads it with numpy and ctypes only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends.llvm.thread_pool import calls_pool, pool_object
from ..backends.llvm.native_entry import entry_object
from ..byoc.deploy import trampoline_source
from ..runtime.artifact import ARTIFACT_FORMAT, EXTERNALS, LIBRARY, META, PROGRAM, WEIGHTS, binding_source
from ..runtime.npz import save_arrays

if TYPE_CHECKING:  # (native_build calls export_library)
    from .native_build import NativeBuild

#: what loads a deployed model's external modules and binds them to its library
EXTERNAL_LOADER = "tensorkiln.byoc.deploy:load_external_modules"

#: defines the thread-count variable the code of parallel loops reads (the JIT binds it
#: to the runtime's; a shared library owns one, which the runtime keeps in step)
_THREAD_COUNT_C = "int tk_num_threads = 0;\n"


class ExportError(RuntimeError):
    """The artifact could not be written (no C compiler, linker error...)."""


def c_compiler() -> str:
    """The system C compiler driver used as linker: ``$CC``, else ``cc``/``gcc``/``clang``."""
    for candidate in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if candidate and shutil.which(candidate):
            return candidate
    raise ExportError("export_library needs a C compiler to link the shared library (cc, gcc or clang; or set CC)")


def link_shared_library(native: NativeBuild, out: Path, c_source: str = "") -> None:
    """Link the build's object code (and ``c_source``: glue such as external modules'
    trampolines) into the shared library ``out``."""
    with tempfile.TemporaryDirectory(prefix="tk-export-") as tmp:
        objects = []
        for k, code in enumerate(native.code.objects):  # (one per group of kernels)
            objects.append(Path(tmp) / f"model{k}.o")
            objects[-1].write_bytes(code)
        # --no-undefined: a symbol nothing provides (an external codegen's kernel, say) fails
        # the export here, not the dlopen of a deployed model
        command = [c_compiler(), "-shared", "-Wl,--no-undefined", "-o", str(out), *map(str, objects)]
        entry = Path(tmp) / "native_entry.o"  # the runtime's native call entry (runtime/native_call.py)
        entry.write_bytes(entry_object(native.target))
        command.append(str(entry))
        if calls_pool(native.code.externals):  # parallel loops: the library's own thread pool
            pool = Path(tmp) / "thread_pool.o"
            pool.write_bytes(pool_object())
            command += [str(pool), "-pthread"]
        glue = (_THREAD_COUNT_C if native.code.reads_thread_count else "") + c_source
        if glue:
            stub = Path(tmp) / "glue.c"
            stub.write_text(glue)
            command.insert(-1, str(stub))
            command[1:1] = ["-fPIC"]
        if native.code.uses_openmp:
            command.append("-lgomp")
        command.append("-lm")
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise ExportError(f"linking {out.name} failed ({' '.join(command)}):\n{done.stderr.strip()}")


def export_library(
    path: str | os.PathLike[str], native: NativeBuild, weights: Sequence[np.ndarray], external_modules: Sequence[Any] = ()
) -> None:
    """Write ``native`` (with its ``weights`` and the BYOC ``external_modules`` it calls)
    as an artifact directory at ``path``."""
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise ExportError(f"export_library: {root} exists and is not a directory")
    root.mkdir(parents=True, exist_ok=True)
    library = root / LIBRARY
    externals = _write_external_modules(root, external_modules)
    arrays = {f"w{k}": np.asarray(w, order="C") for k, w in enumerate(weights)}
    program = native.program.dumps()
    meta = {
        "format": ARTIFACT_FORMAT,
        "entry": native.function,
        "signature": native.program.signature.to_json(),
        "target": native.target.describe(),
        "library": LIBRARY,
        "program": PROGRAM,
        "weights": WEIGHTS,
        "weight_specs": [{"name": k, "shape": list(a.shape), "dtype": str(a.dtype)} for k, a in arrays.items()],
        "reads_thread_count": native.code.reads_thread_count,
        "uses_openmp": native.code.uses_openmp,
        # the entry's trailing arguments: the program's temporaries, in its planned storages
        "entry_temporaries": native.temporaries,
    }
    if externals:
        meta["externals"] = externals
    meta_text = json.dumps(meta, indent=1)
    # the library records which program and meta it belongs to (runtime/artifact.py: binding)
    glue = binding_source(program, meta_text) + (trampoline_source(external_modules) if external_modules else "")
    link_shared_library(native, library, glue)
    with open(root / WEIGHTS, "wb") as f:
        save_arrays(f, arrays)
    (root / PROGRAM).write_bytes(program.encode())
    (root / META).write_bytes(meta_text.encode())


def _write_external_modules(root: Path, modules: Sequence[Any]) -> dict[str, Any] | None:
    """Each external module's bytes in ``externals/<k>.bin``; the meta entry naming them
    and the function that loads and binds them (a plugin the runtime imports by name)."""
    if not modules:
        return None
    folder = root / EXTERNALS
    folder.mkdir(exist_ok=True)
    files = []
    for k, module in enumerate(modules):
        data = module.serialize()
        name = f"{EXTERNALS}/{k}.bin"
        (root / name).write_bytes(data)
        files.append({"file": name, "symbol": module.symbol, "sha256": hashlib.sha256(data).hexdigest()})
    return {"loader": EXTERNAL_LOADER, "modules": files}


__all__ = ["ExportError", "c_compiler", "export_library", "link_shared_library"]
