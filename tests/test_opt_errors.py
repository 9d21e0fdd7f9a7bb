"""tensorkiln-opt reports an error as its diagnostic alone, with exit status 1 (issue #39:
a full traceback came before every error; deeply nested input gave a RecursionError,
binary input a UnicodeDecodeError); ``--traceback`` shows the traceback. A dim beyond
int64 fails the verifier."""

from __future__ import annotations

import subprocess
import sys

import pytest
from xdsl.utils.exceptions import VerifyException

import tensorkiln as tk

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
        ("func.func @main( {", "error"),
    ],
    ids=["verifier", "recursion", "binary", "dim-beyond-int64", "parse-error"],
)
def test_an_error_is_the_diagnostic_alone(tmp_path, content, message):
    import re

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
