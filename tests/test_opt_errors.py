"""tensorkiln-opt reports an error as its diagnostic alone, with exit status 1 (issue #39:
a full traceback came before every error; deeply nested input gave a RecursionError,
binary input a UnicodeDecodeError); ``--traceback`` shows the traceback. The same inputs
through the Python API (tk.parse_module) and ``tensorkiln compile`` are clear errors
too. A dim beyond int64 fails the verifier."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk
from tensorkiln.errors import UnreadableInputError

WRONG_RESULT_TYPE = """
func.func @main(%x: tensor<3xf32>) -> tensor<4xf32> {
  %0 = "graph.relu"(%x) : (tensor<3xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""

HUGE = "99999999999999999999"  # > 2**64
HUGE_DIM = f"""
func.func @main(%x: tensor<{HUGE}xf32>) -> tensor<{HUGE}xf32> {{
  %0 = "graph.relu"(%x) : (tensor<{HUGE}xf32>) -> tensor<{HUGE}xf32>
  func.return %0 : tensor<{HUGE}xf32>
}}
"""

#: no graph op: the dim is only in a function's signature and a memref's type
HUGE_DIM_PLAIN = f"""
func.func @main(%x: tensor<3x{2**63}xf32>) -> tensor<3x{2**63}xf32> {{
  func.return %x : tensor<3x{2**63}xf32>
}}
func.func @buffer() {{
  %0 = memref.alloc() : memref<{2**64}xi8>
  func.return
}}
"""


def _deeply_nested(levels: int = 3000) -> str:
    nested = "[" * levels + "1.0" + "]" * levels
    return f"func.func @main() -> tensor<1xf32> {{\n  %0 = arith.constant dense<{nested}> : tensor<1xf32>\n  func.return %0 : tensor<1xf32>\n}}\n"


def _opt(tmp_path, content: str | bytes, *args: str) -> subprocess.CompletedProcess:
    path = tmp_path / "input.mlir"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return subprocess.run(
        [sys.executable, "-m", "tensorkiln.tools.opt", str(path), *args], capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "content, message",
    [
        (WRONG_RESULT_TYPE, r"expected from variable 'T', but got tensor<4xf32>"),
        (_deeply_nested(), "nested too deeply"),
        (b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)), "not UTF-8 text"),
        (HUGE_DIM, r"a dim larger than 2\*\*63 - 1"),
        (HUGE_DIM_PLAIN, r"func.func: tensor<3x9223372036854775808xf32>: a dim larger than 2\*\*63 - 1"),
        ("func.func @main( {", "error"),
    ],
    ids=["verifier", "recursion", "binary", "dim-beyond-int64", "dim-beyond-int64-any-dialect", "parse-error"],
)
def test_an_error_is_the_diagnostic_alone(tmp_path, content, message):
    done = _opt(tmp_path, content)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("tensorkiln-opt: error: "), done.stderr
    assert re.search(message, done.stderr), done.stderr


def test_the_traceback_is_behind_a_flag(tmp_path):
    done = _opt(tmp_path, WRONG_RESULT_TYPE, "--traceback")
    assert done.returncode != 0 and "Traceback (most recent call last)" in done.stderr


def test_an_unknown_pass_and_a_missing_file_are_one_line(tmp_path):
    done = _opt(tmp_path, WRONG_RESULT_TYPE, "-p", "no-such-pass")
    assert done.returncode == 1 and "Traceback" not in done.stderr and "no-such-pass" in done.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "tensorkiln.tools.opt", str(tmp_path / "absent.mlir")], capture_output=True, text=True, timeout=300
    )
    assert missing.returncode != 0 and "Traceback" not in missing.stderr and "absent.mlir" in missing.stderr


def test_a_dim_beyond_int64_fails_the_verifier():
    with pytest.raises(VerifyException, match=r"a dim larger than 2\*\*63 - 1"):
        tk.parse_module(HUGE_DIM)
    tk.parse_module(HUGE_DIM.replace(HUGE, str(2**62)))  # large but representable: fine
    with pytest.raises(VerifyException, match=r"tensor<3x9223372036854775808xf32>: a dim larger"):
        tk.parse_module(HUGE_DIM_PLAIN)  # in any dialect's types, not only the graph dialect's
    with pytest.raises(VerifyException, match=r"memref.alloc: memref<18446744073709551616xi8>"):
        tk.parse_module(HUGE_DIM_PLAIN.replace(str(2**63), "4"))
    tk.parse_module(HUGE_DIM_PLAIN.replace(str(2**63), str(2**63 - 1)).replace(str(2**64), "8"))


BINARY = b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256))


@pytest.mark.parametrize("content, message", [(_deeply_nested(), "nested too deeply"), (BINARY, "not UTF-8 text")],
                         ids=["recursion", "binary"])
def test_the_python_api_names_unreadable_input(content, message):
    """tk.parse_module (text or bytes): an UnreadableInputError (a ValueError), not a
    RecursionError or UnicodeDecodeError from inside the parser."""
    with pytest.raises(UnreadableInputError, match=message):
        tk.parse_module(content)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("deep.mlir", _deeply_nested().encode(), r"deep\.mlir: the IR is nested too deeply"),
        ("binary.mlir", BINARY, r"binary\.mlir: not UTF-8 text \(byte 8: .*\); is it a binary file\?"),
        ("binary.pt2", BINARY, r"binary\.pt2: not a \.pt2 archive"),
        ("binary.onnx", BINARY, r"binary\.onnx is not a readable ONNX model"),
    ],
    ids=["recursion", "binary-mlir", "binary-pt2", "binary-onnx"],
)
def test_tensorkiln_compile_names_unreadable_input_in_one_line(tmp_path, name, content, message):
    if name.endswith(".pt2"):
        pytest.importorskip("torch")
    if name.endswith(".onnx"):
        pytest.importorskip("onnx")
    (tmp_path / name).write_bytes(content)
    done = subprocess.run(
        [sys.executable, "-m", "tensorkiln.tools.main", "compile", str(tmp_path / name), "-o", str(tmp_path / "out.tk")],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("tensorkiln compile: error: ")]
    assert len(lines) == 1 and "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert re.search(message, lines[0]), lines[0]
