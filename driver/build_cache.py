"""Whole builds in the disk cache: a rebuild of an unchanged model runs no pass at all.

The object-code cache (``compile_cache.py``) is keyed by the scheduled loop IR, so a
rebuild still ran the graph passes, lowering and scheduling to find its key (most of a
warm build's time). A *build entry* is keyed by what ``tk.build`` was given, before any
pass: the graph module's text (each weight by a digest of its data, not its name), the
function, the target (CPU, features, opt level, layout), the options that change the
code (opt level, disabled passes, pass config, precision) and the compiler's
fingerprint (its sources, llvmlite's and LLVM's versions). It holds what the build's
result is made of below the passes: the signature, the graph executor's program, the
weights as the build left them (folded, packed, in the kernels' layouts) and the key of
the object code's entry. A hit loads those and the object code: no pass, no LLVM.

Not cached: builds calling BYOC external modules (live objects), tuning-log schedules,
dumps and instrumented builds (they want every pass to run).

Example::

    lib = tk.build(module)        # cold: passes, LLVM; a build entry written
    lib = tk.build(module)        # warm: lib.cache_hit, lib.pass_timings ~ ["build-cache", ...]
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import numpy as np
from xdsl.dialects.builtin import ModuleOp

from ..backends.llvm.jit import CPUTarget
from ..backends.llvm.object_code import ObjectModule
from ..dialects.byoc import CallOp
from ..dialects.graph.types import WeightAttr, bfloat16_dtype
from ..passes.pipeline import PassContext
from ..runtime.graph_program import GraphProgram, ProgramFormatError
from ..runtime.module import CompiledModule
from ..runtime.signature import Signature
from . import compile_cache
from .native_build import NativeBuild, load_compiled, weight_array

#: build entries' file suffix (object-code entries are ``.tkc``)
SUFFIX = ".tkb"

_WEIGHT_REFERENCE = re.compile(r'#graph\.weight<("(?:[^"\\]|\\.)*")>')


def build_key(module: ModuleOp, function: str, cpu: CPUTarget, ctx: PassContext, precision: str) -> str | None:
    """The build entry's key for ``module`` as given to ``tk.build`` (None: a build that
    is not cached, see the module doc)."""
    digests: dict[str, str] = {}  # each weight's data, in order of appearance
    for op in module.walk():
        if isinstance(op, CallOp):
            return None
        for value in (*op.properties.values(), *op.attributes.values()):
            if isinstance(value, WeightAttr) and value.data.name not in digests:
                digests[value.data.name] = _digest(value.array)
    # weights in the text numbered in order of appearance: names differ between two
    # imports of one model in one process (each registers its own)
    numbers: dict[str, int] = {}
    text = _WEIGHT_REFERENCE.sub(
        lambda m: f"#graph.weight<{numbers.setdefault(m.group(1), len(numbers))}>", str(module)
    )
    options = {
        "function": function,
        "target": [cpu.cpu, cpu.features, cpu.opt_level, list(cpu.options), cpu.layout],
        "opt_level": ctx.opt_level,
        "disabled_passes": sorted(ctx.disabled_passes),
        "config": ctx.config,
        "precision": precision,
    }
    return compile_cache.module_key(["build", json.dumps(options, sort_keys=True, default=repr), text, *digests.values()])


def _digest(array: np.ndarray) -> str:
    data = np.ascontiguousarray(array)
    h = hashlib.sha256(f"{data.dtype.str}{data.shape}".encode())
    h.update(data.view(np.uint8).reshape(-1) if data.size else b"")
    return h.hexdigest()


def store_build(key: str, native: NativeBuild, signature: Signature) -> None:
    """Write ``native``'s build entry under ``key`` (needs its object code's entry)."""
    directory = compile_cache.cache_dir()
    if directory is None or native.cache_key is None or native.program is None:
        return
    weights = [np.ascontiguousarray(weight_array(w)) for w in native.weight_data]
    header = {
        "object_key": native.cache_key,
        "function": native.function,
        "temporaries": native.temporaries,
        "signature": signature.to_json(),
        "program": native.program.to_json(),
        "weights": [{"dtype": str(w.dtype), "shape": list(w.shape)} for w in weights],
    }
    blobs = [w.view(np.uint8).reshape(-1).data if w.size else b"" for w in weights]
    if compile_cache.write_entry(compile_cache.entry_path(directory, key, SUFFIX), key, "build", header, blobs):
        compile_cache.count(build_writes=1)


def load_build(key: str, cpu: CPUTarget) -> CompiledModule | None:
    """The build stored under ``key``, loaded (None: a miss, counted)."""
    directory = compile_cache.cache_dir()
    if directory is None:
        return None
    start = time.perf_counter()
    entry = compile_cache.read_entry(compile_cache.entry_path(directory, key, SUFFIX), key, "build")
    built = _loaded(entry, cpu, start) if entry is not None else None
    compile_cache.count(build_hits=1) if built is not None else compile_cache.count(build_misses=1)
    return built


def _loaded(entry: compile_cache.Entry, cpu: CPUTarget, start: float) -> CompiledModule | None:
    header = entry.header
    try:
        signature = Signature.from_json(header["signature"])
        program = GraphProgram.from_json(header["program"])
        program.signature = signature  # (one object, as in a build: it holds the random-number state)
        weights = [
            np.frombuffer(blob, dtype=_dtype(spec["dtype"])).reshape(spec["shape"])
            for spec, blob in zip(header["weights"], entry.blobs, strict=True)
        ]
        function, temporaries, object_key = str(header["function"]), int(header["temporaries"]), header["object_key"]
    except (KeyError, TypeError, ValueError, ProgramFormatError):
        return None
    code = compile_cache.load(object_key, counted=False)  # (its own checks; a miss rebuilds everything)
    if code is None:
        return None
    compile_cache.count(disk_hits=1)
    read = time.perf_counter()
    native = NativeBuild(
        ObjectModule(code, cpu), code, program, weights, function, cpu, True, temporaries,
        timings=[("build-cache", read - start)], cache_key=object_key,
    )  # fmt: skip
    native.timings.append(("load-object", time.perf_counter() - read))
    return load_compiled(native, signature)


def _dtype(name: str) -> np.dtype:
    return bfloat16_dtype() if name == "bfloat16" else np.dtype(name)


__all__ = ["SUFFIX", "build_key", "load_build", "store_build"]
