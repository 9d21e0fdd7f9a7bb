"""Run every lit test under tests/filecheck, one pytest test per file.

Each file goes through lit itself (``tests/filecheck/lit.cfg``: tools, substitutions),
so ``pytest`` and ``lit -v tests/filecheck`` agree on what passes. A file is collected
when it has a ``RUN:`` line; lit then decides whether it is a test (suffix, config).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).parent / "filecheck"


def _lit_files() -> list[Path]:
    return sorted(
        p
        for p in FILECHECK_DIR.rglob("*")
        if p.is_file()
        and p.name != "lit.cfg"
        and "Output" not in p.relative_to(FILECHECK_DIR).parts
        and "RUN:" in p.read_text(errors="replace")
    )


LIT_FILES = _lit_files()


@pytest.mark.parametrize(
    "path", LIT_FILES, ids=[str(p.relative_to(FILECHECK_DIR)) for p in LIT_FILES]
)
def test_lit(path: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from lit.main import main; sys.exit(main())",
            "-v",
            "--param",
            f"exec_root={tmp_path}",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"lit failed on {path.relative_to(FILECHECK_DIR)}:\n{report}", pytrace=False)
    if "UNSUPPORTED:" in proc.stdout:
        pytest.skip(f"lit: unsupported here ({path.name})")
    assert "PASS:" in proc.stdout or "XFAIL:" in proc.stdout, report


def test_lit_files_found() -> None:
    """The round-trip tests of the three dialects are collected (guards the collector)."""
    names = {p.name for p in LIT_FILES}
    assert {"graph.mlir", "te.mlir", "loop.mlir", "graph-verify.mlir"} <= names
