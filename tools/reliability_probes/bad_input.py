"""Bad input: IR text that is binary, deeply nested, truncated or has random bytes
changed (through ``tk.parse_module``, some through ``tensorkiln-opt``, which must print
its one-line diagnostic without a traceback), and compiled models called with the wrong
arguments (count, rank, shape, dtype, Python objects, non-contiguous and broadcast
arrays) in every executor. A clear error (a parse error, a verifier diagnostic, a
``ValueError``/``TypeError`` naming the argument) or the right answer; never a crash or
another exception."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

import tensorkiln as tk
from tensorkiln.errors import UnreadableInputError
from tensorkiln.runtime import load_module

from . import RIGHT, WRONG, Probe, same
from .models import FEATURES, chain, reference

#: what parsing bad IR may raise: xDSL's parse errors and diagnostics, our verifiers'
PARSE_ERRORS = (ParseError, VerifyException, DiagnosticException, UnreadableInputError, ValueError)
CALL_ERRORS = (ValueError, TypeError)


def _parses(text: str | bytes) -> tuple[str, str]:
    tk.parse_module(text)
    return RIGHT, "parsed (the change kept it valid IR)"


def _nested(levels: int) -> str:
    nested = "[" * levels + "1.0" + "]" * levels
    return f"func.func @main() -> tensor<1xf32> {{\n  %0 = arith.constant dense<{nested}> : tensor<1xf32>\n  func.return %0 : tensor<1xf32>\n}}\n"


def _parse_probes(rng: np.random.Generator, quick: bool) -> list[Probe]:
    text = str(chain(rng, "n"))
    data = text.encode()
    found = [Probe(f"IR nested {n} levels", lambda n=n: _parses(_nested(n)), PARSE_ERRORS) for n in (500, 3000, 20000)]
    for k in range(3 if quick else 10):
        blob = rng.integers(0, 256, int(rng.integers(1, 4000)), dtype=np.uint8).tobytes()
        found.append(Probe(f"random bytes #{k} ({len(blob)})", lambda b=blob: _parses(b), PARSE_ERRORS))
    for cut in rng.integers(1, len(data), 4 if quick else 25):
        found.append(Probe(f"IR cut at byte {cut}", lambda c=int(cut): _parses(data[:c]), PARSE_ERRORS))
    for k in range(6 if quick else 60):
        blob = bytearray(data)
        printable = k % 4 != 0  # mostly printable characters: past the UTF-8 check, into the parser
        for at in rng.integers(0, len(blob), int(rng.integers(1, 4))):
            blob[at] = int(rng.integers(32, 127) if printable else rng.integers(0, 256))
        kind = "printable characters" if printable else "random bytes"
        found.append(Probe(f"IR with {kind} changed #{k}", lambda b=bytes(blob): _parses(b), PARSE_ERRORS))
    return found


class OptRefused(Exception):
    """``tensorkiln-opt`` exited 1 with its one-line diagnostic (a clear refusal)."""


def _opt(path: Path, *options: str) -> tuple[str, str]:
    """``tensorkiln-opt path options``: a bad input must give ``tensorkiln-opt: error: ...``
    alone (no traceback, issue #39 item 8) and exit status 1."""
    command = [sys.executable, "-m", "tensorkiln.tools.opt", str(path), *options]
    done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=240)
    if "Traceback" in done.stderr:
        raise RuntimeError(f"a traceback: {done.stderr.strip().splitlines()[-1]}")
    if done.returncode == 0:
        return WRONG, "accepted: " + done.stdout.strip()[:100]
    if done.returncode != 1 or not done.stderr.startswith("tensorkiln-opt: error: "):
        raise RuntimeError(f"exit status {done.returncode}: {done.stderr.strip()[:200]}")
    raise OptRefused(done.stderr.strip().splitlines()[0])


def _opt_probes(workdir: Path) -> list[Probe]:
    big = "tensor<99999999999999999999xf32>"
    inputs = {
        "binary": bytes(range(256)) * 4,
        "nested 20000 levels": _nested(20000).encode(),
        "a dim past 64 bits": (f'func.func @f(%a: {big}) -> {big} {{\n  %0 = "graph.relu"(%a) : ({big}) -> {big}\n'
                               f"  func.return %0 : {big}\n}}\n").encode(),
        "truncated": _nested(3)[:60].encode(),
    }
    found = []
    for name, data in inputs.items():
        path = workdir / f"opt-{name.replace(' ', '-')}.mlir"
        path.write_bytes(data)
        found.append(Probe(f"tensorkiln-opt on {name} input", lambda p=path: _opt(p), (OptRefused,)))
    valid = workdir / "opt-valid.mlir"
    valid.write_text(_nested(1))
    found.append(Probe("tensorkiln-opt with an unknown pass", lambda: _opt(valid, "-p", "no-such-pass"), (OptRefused,)))
    found.append(Probe("tensorkiln-opt on a missing file", lambda: _opt(workdir / "missing.mlir"), (OptRefused,)))
    return found


def _bad_calls(x: np.ndarray) -> dict[str, tuple]:
    """name -> the arguments of a bad call (or a good one in an unusual form)."""
    return {
        "no arguments": (),
        "two arguments": (x, x),
        "rank 1": (x[0],),
        "rank 3": (x[None],),
        "wrong width": (np.ones((x.shape[0], FEATURES + 1), "f4"),),
        "float64": (x.astype("f8"),),
        "int32": (x.astype("i4"),),
        "bool": (x > 0,),
        "a list": (x.tolist(),),
        "None": (None,),
        "a string": ("x",),
        "0 rows": (x[:0],),
        "Fortran order (right answer)": (np.asfortranarray(x),),
        "every other row (right answer)": (x[::2],),
        "reversed columns (right answer)": (x[:, ::-1],),
        "a broadcast view (right answer)": (np.broadcast_to(x[:1], x.shape),),
        "read-only (right answer)": (_read_only(x),),
    }


def _read_only(x: np.ndarray) -> np.ndarray:
    y = x.copy()
    y.flags.writeable = False
    return y


def _call(run, expected_of, args: tuple) -> tuple[str, str]:
    got = run(*args)
    return same(got, expected_of(*(np.asarray(a) for a in args)))


def probes(rng: np.random.Generator, workdir: Path, quick: bool) -> list[Probe]:
    found = _parse_probes(rng, quick) + _opt_probes(workdir)
    module = chain(rng, "n")
    expected = reference(module)
    tk.build(module).export_library(workdir / "chain.tk")
    runners = {
        "aot": lambda: tk.build(module),
        "graph": lambda: tk.create_executor("graph", module).evaluate(),
        "vm": lambda: tk.create_executor("vm", module).evaluate(),
        "loaded": lambda: load_module(workdir / "chain.tk"),
    }
    if quick:
        runners = {k: runners[k] for k in ("aot", "loaded")}
    x = rng.standard_normal((6, FEATURES)).astype("f4")
    for kind, make in runners.items():
        made: list = []

        def run(*args, make=make, made=made):
            if not made:
                made.append(make())
            return made[0](*args)

        for name, args in _bad_calls(x).items():
            found.append(Probe(f"{kind} called with {name}", lambda run=run, args=args: _call(run, expected, args), CALL_ERRORS))
    return found
