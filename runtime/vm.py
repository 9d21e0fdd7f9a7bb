"""The VM: a register machine running bytecode over tensors, for control flow and
dynamic shapes. Pure numpy (the functions it calls are compiled modules).

Registers hold numpy arrays (never written in place: every call returns fresh
arrays, so a register can be copied by reference). Instructions, as tuples:

- ``("call", f, (in regs...), (out regs...))``: call compiled function ``f`` on the
  input registers. The function checks its arguments against its signature, binds
  the symbolic dims (``n``, ``batch``) from them, and allocates its outputs by the
  shapes those symbols give: shapes are resolved at run time, call by call;
- ``("const", reg, k)``: load constant ``k``;
- ``("move", (dst...), (src...))``: parallel copy (all sources read first);
- ``("jump_unless", reg, target)``: go to ``target`` unless the predicate tensor in
  ``reg`` (one element) is nonzero;
- ``("jump", target)``;
- ``("size", reg, dst, symbol, lower, upper)``: read the count in ``reg`` (one integer)
  and put in ``dst`` a *size carrier* of it, an array of shape ``(count, 0)`` that gives
  the functions after it the symbol's value (``graph.data_size``); the count must be
  in ``[lower, upper]`` (``upper`` -1: unbounded);
- ``("check", reg, message, error)``: raise ``error`` (``host_checks.CHECK_ERRORS``, a
  RuntimeCheckError) with ``message`` unless the predicate in ``reg`` is nonzero
  (``graph.check``; ``error`` may be left out: RuntimeError);
- ``("ret", (regs...))``: the results.

``graph.if`` becomes ``jump_unless`` over the two branches, ``graph.while`` a
condition block, a ``jump_unless`` out of the loop, the body and a ``jump`` back; the
straight-line code between is compiled (``tensorkiln.driver.vm``).
A ``graph.data_size`` ends a function (what follows needs its size), a ``graph.check``
does not (its predicate is one more result of the function it is computed in).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .host_checks import CHECK_ERRORS, check, checked_size, size_carrier
from .profiler import BenchmarkResult, benchmark
from .signature import Signature
from .random_state import Seedable

OPCODES = ("call", "const", "move", "jump_unless", "jump", "size", "check", "ret")


@dataclass
class VMProgram:
    """Bytecode, register count, where the inputs go, and what each called function is."""

    signature: Signature
    code: list[tuple]
    n_registers: int
    input_registers: list[int]
    function_names: list[str]
    constants: list[np.ndarray] = field(default_factory=list)

    def disassemble(self) -> str:
        """One instruction a line: ``   3  call seg0 (r0, r1) -> (r2)``."""
        lines = []
        for pc, ins in enumerate(self.code):
            op = ins[0]
            if op == "call":
                text = f"call {self.function_names[ins[1]]} ({_regs(ins[2])}) -> ({_regs(ins[3])})"
            elif op == "move":
                text = f"move ({_regs(ins[1])}) <- ({_regs(ins[2])})"
            elif op == "const":
                text = f"const r{ins[1]} <- constant {ins[2]}"
            elif op == "jump_unless":
                text = f"jump_unless r{ins[1]} -> {ins[2]}"
            elif op == "size":
                upper = "" if ins[5] < 0 else f", {ins[5]}"
                text = f"size r{ins[2]} <- {ins[3]} = r{ins[1]} in [{ins[4]}{upper}]"
            elif op == "check":
                text = f"check r{ins[1]} {ins[2]!r}" + (f" {ins[3]}" if len(ins) > 3 else "")
            elif op == "jump":
                text = f"jump -> {ins[1]}"
            else:
                text = f"ret ({_regs(ins[1])})"
            lines.append(f"{pc:4d}  {text}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "signature": self.signature.to_json(),
            "code": [list(_jsonable(i)) for i in self.code],
            "n_registers": self.n_registers,
            "input_registers": self.input_registers,
            "function_names": self.function_names,
        }


    @staticmethod
    def from_json(d: dict[str, Any], constants: Sequence[np.ndarray] = ()) -> VMProgram:
        """Read a program written by :meth:`to_json` (instructions checked)."""
        code = []
        for pc, ins in enumerate(d["code"]):
            if not isinstance(ins, list) or not ins or ins[0] not in OPCODES:
                raise ValueError(f"VM program: instruction {pc} is not one of {', '.join(OPCODES)}: {ins!r}")
            code.append(tuple(tuple(a) if isinstance(a, list) else a for a in ins))
        program = VMProgram(
            Signature.from_json(d["signature"]),
            code,
            int(d["n_registers"]),
            [int(r) for r in d["input_registers"]],
            [str(n) for n in d["function_names"]],
            list(constants),
        )
        program.check()
        return program

    def check(self) -> None:
        """Raise ValueError if an instruction names a register, function, constant or
        target that does not exist (a corrupt program must not run)."""
        for pc, ins in enumerate(self.code):
            if not self._operands_ok(ins):
                raise ValueError(f"VM program: bad operands in instruction {pc}: {ins!r}")
        if not self.code or self.code[-1][0] not in ("ret", "jump"):
            raise ValueError("VM program: the code does not end with ret")
        if not self._registers_ok(self.input_registers) or len(self.input_registers) != len(self.signature.inputs):
            raise ValueError("VM program: bad input registers")

    def _registers_ok(self, regs: Sequence[Any]) -> bool:
        return all(isinstance(r, int) and 0 <= r < self.n_registers for r in regs)

    def _operands_ok(self, ins: tuple) -> bool:
        """Whether ``ins`` has the operands its opcode takes, all in range."""
        op, n = ins[0], len(self.code)
        if op == "call":
            return (
                len(ins) == 4
                and 0 <= ins[1] < len(self.function_names)
                and self._registers_ok(ins[2])
                and self._registers_ok(ins[3])
            )
        if op == "const":
            return len(ins) == 3 and self._registers_ok([ins[1]]) and 0 <= ins[2] < len(self.constants)
        if op == "move":
            return len(ins) == 3 and self._registers_ok(ins[1]) and self._registers_ok(ins[2]) and len(ins[1]) == len(ins[2])
        if op == "jump_unless":
            return len(ins) == 3 and self._registers_ok([ins[1]]) and isinstance(ins[2], int) and 0 <= ins[2] < n
        if op == "jump":
            return len(ins) == 2 and isinstance(ins[1], int) and 0 <= ins[1] < n
        if op == "size":
            return (
                len(ins) == 6
                and self._registers_ok(ins[1:3])
                and isinstance(ins[3], str)
                and all(isinstance(b, int) for b in ins[4:])
                and 0 <= ins[4]
            )
        if op == "check":
            return (
                len(ins) in (3, 4) and self._registers_ok([ins[1]]) and isinstance(ins[2], str)
                and (len(ins) == 3 or ins[3] in CHECK_ERRORS)
            )
        return len(ins) == 2 and self._registers_ok(ins[1]) and len(ins[1]) == len(self.signature.outputs)


def _regs(regs: Sequence[int]) -> str:
    return ", ".join(f"r{r}" for r in regs)


def _jsonable(ins: tuple) -> list:
    return [list(a) if isinstance(a, tuple) else a for a in ins]


def _truth(array: np.ndarray, pc: int) -> bool:
    if array.size != 1:
        raise ValueError(f"VM: the predicate at instruction {pc} has {array.size} elements, expected one")
    return bool(array.reshape(-1)[0])


class VirtualMachine(Seedable):
    """Runs a :class:`VMProgram` with its compiled functions.

    Example: ``y = VirtualMachine(program, functions)(x)``
    """

    def __init__(self, program: VMProgram, functions: Sequence[Callable[..., Any]]):
        if len(functions) != len(program.function_names):
            raise ValueError(f"VM: {len(functions)} functions for {len(program.function_names)} names")
        self.program = program
        self.signature = program.signature
        self.functions = list(functions)
        #: seconds spent in each function (when timed)
        self._timer: dict[str, list[float]] | None = None

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...]:
        arrays, _ = self.signature.bind(args)
        program = self.program
        regs: list[Any] = [None] * program.n_registers
        for r, a in zip(program.input_registers, arrays):
            regs[r] = a
        code, functions, timer = program.code, self.functions, self._timer
        pc = 0
        while True:
            ins = code[pc]
            op = ins[0]
            if op == "call":
                if timer is None:
                    out = functions[ins[1]](*[regs[r] for r in ins[2]])
                else:
                    start = time.perf_counter()
                    out = functions[ins[1]](*[regs[r] for r in ins[2]])
                    timer.setdefault(program.function_names[ins[1]], []).append(time.perf_counter() - start)
                if len(ins[3]) == 1:
                    regs[ins[3][0]] = out
                else:
                    for r, v in zip(ins[3], out):
                        regs[r] = v
            elif op == "jump_unless":
                if not _truth(regs[ins[1]], pc):
                    pc = ins[2]
                    continue
            elif op == "jump":
                pc = ins[1]
                continue
            elif op == "move":
                values = [regs[s] for s in ins[2]]
                for d, v in zip(ins[1], values):
                    regs[d] = v
            elif op == "const":
                regs[ins[1]] = program.constants[ins[2]]
            elif op == "size":
                upper = ins[5] if ins[5] >= 0 else None
                regs[ins[2]] = size_carrier(checked_size(regs[ins[1]], ins[3], ins[4], upper))
            elif op == "check":
                check(regs[ins[1]], *ins[2:])
            else:  # ret
                return self._results([regs[r] for r in ins[1]], arrays)
            pc += 1

    def _results(self, values: list[np.ndarray], inputs: list[np.ndarray]) -> np.ndarray | tuple[np.ndarray, ...]:
        # as every executor: each output a fresh array (not an input, constant or another output)
        seen = {id(a) for a in inputs} | {id(c) for c in self.program.constants}
        out = []
        for v, spec in zip(values, self.signature.outputs):
            v = np.asarray(v)
            if id(v) in seen or v.dtype != spec.dtype:
                v = v.astype(spec.dtype, copy=True)
            seen.add(id(v))
            out.append(v)
        return out[0] if len(out) == 1 else tuple(out)

    def run_timed(self, *args: Any) -> tuple[Any, dict[str, list[float]]]:
        """Run once, timing every function call: (outputs, seconds per call by function)."""
        self._timer = {}
        try:
            result = self(*args)
            return result, self._timer
        finally:
            self._timer = None

    def benchmark(self, *inputs: Any, number: int = 10, repeat: int = 5) -> BenchmarkResult:
        """Seconds per call (TVM's ``time_evaluator``): ``.median``, ``.mean``, ``.results``."""
        return benchmark(lambda: self(*inputs), number=number, repeat=repeat)


__all__ = ["OPCODES", "VMProgram", "VirtualMachine"]
