"""LLVM CPU targets and their target machines (llvmlite only: the code-generation worker
processes import this without xDSL).

Targets are strings like TVM's: ``"llvm"`` (the host CPU, its real name and features),
``"llvm -mcpu=skylake-avx512"``, ``"llvm -mattr=+avx2,-avx512f"``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from functools import lru_cache

import llvmlite.binding as llvm


@dataclass(frozen=True)
class CPUTarget:
    """Where code will run: CPU name, features, optimisation level, and the data layout
    its convolutions run in (``layout``: NHWC, whose channels the conv strategy
    vectorizes; ``-layout=NCHW`` keeps the model's own)."""

    cpu: str
    features: str
    opt_level: int = 3
    options: tuple[tuple[str, str], ...] = field(default=())
    layout: str = "NHWC"

    @staticmethod
    def parse(target: str) -> CPUTarget:
        """Parse ``"llvm [-mcpu=NAME] [-mattr=+f,-g] [-opt-level=N] [-layout=NHWC|NCHW]"``."""
        words = shlex.split(target)
        if not words or words[0] != "llvm":
            raise ValueError(f"not an LLVM CPU target: {target!r} (expected 'llvm ...')")
        cpu, host_features = host_cpu()
        extra = []
        opt = 3
        layout = "NHWC"
        for word in words[1:]:
            key, _, value = word.partition("=")
            if key == "-mcpu":
                cpu = value
                host_features = ""
            elif key == "-mattr":
                extra.append(value)
            elif key == "-opt-level":
                opt = int(value)
            elif key == "-layout" and value in ("NHWC", "NCHW"):
                layout = value
            else:
                raise ValueError(
                    f"unknown option {word!r} in target {target!r} "
                    "(known: -mcpu, -mattr, -opt-level, -layout=NHWC|NCHW)"
                )
        features = ",".join(f for f in [host_features, *extra] if f)
        # LLVM prefers 256-bit vectors on AVX-512 CPUs; our kernels are wide enough for zmm.
        if _enabled(features).get("avx512f") and "prefer-256-bit" not in features:
            features += ",-prefer-256-bit"
        return CPUTarget(cpu, features, opt, layout=layout)

    def describe(self) -> str:
        return f"llvm -mcpu={self.cpu}"

    @property
    def enabled_features(self) -> frozenset[str]:
        """The features code may use, ``+``-prefixed (``{"+avx2", "+fma", ...}``): the
        last mention of each in the feature string wins."""
        return frozenset(f"+{name}" for name, on in _enabled(self.features).items() if on)

    @property
    def vector_bits(self) -> int:
        """The SIMD register width ``vectorized`` loops should use (loop-to-llvm's
        ``vector_bits``): 512 with AVX-512, 256 with AVX, else 128."""
        enabled = _enabled(self.features)
        if enabled.get("avx512f"):
            return 512
        if enabled.get("avx") or enabled.get("avx2"):
            return 256
        return 128


def _enabled(features: str) -> dict[str, bool]:
    """Each feature of an LLVM feature string, enabled or not: the last mention wins, as
    in LLVM (``"+avx512f,...,-avx512f"``: the host's, then the target's ``-mattr``)."""
    return {f[1:]: f[0] == "+" for f in features.split(",") if f[:1] in ("+", "-")}


@lru_cache(maxsize=1)
def host_cpu() -> tuple[str, str]:
    """This machine's CPU name and LLVM feature string (asked once per process)."""
    _initialize()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


@lru_cache(maxsize=1)
def _initialize() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@lru_cache(maxsize=8)
def target_machine(target: CPUTarget) -> llvm.TargetMachine:
    """A shared target machine for ``target`` (never hand it to an execution engine)."""
    return new_target_machine(target)


def new_target_machine(target: CPUTarget) -> llvm.TargetMachine:
    """A fresh target machine; an MCJIT engine takes ownership of the one it is given."""
    _initialize()
    triple = llvm.get_process_triple()
    return llvm.Target.from_triple(triple).create_target_machine(
        cpu=target.cpu, features=target.features, opt=target.opt_level, jit=True
    )


@lru_cache(maxsize=8)
def pic_target_machine(target: CPUTarget) -> llvm.TargetMachine:
    """A target machine emitting position-independent objects (for shared libraries) whose
    references all have 64 bits: MCJIT's loader places an object's code, constant pools
    and unwind tables in separate mappings, which can land more than 2 GiB apart in a
    crowded address space (seen with torch's CUDA build loaded: 32-bit PC-relative
    relocations overflowed and LLVM aborted the process)."""
    _initialize()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=target.cpu, features=target.features, opt=target.opt_level, reloc="pic", codemodel="large"
    )


__all__ = ["CPUTarget", "host_cpu", "new_target_machine", "pic_target_machine", "target_machine"]
