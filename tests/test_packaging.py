"""The wheel holds every package of the tree: pyproject lists packages explicitly
(the repository root is the package), so a new subpackage left out of that list works
in an editable install and is missing from ``pip install .`` (as frontends/torch and
schedule/strategies once were: a built wheel could not import the torch frontend nor
schedule any kernel)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_PACKAGED = {"tests", "benchmarks", "build", ".venv"}


def test_every_package_is_listed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = set()
    for init in ROOT.rglob("__init__.py"):
        parts = init.parent.relative_to(ROOT).parts
        if parts and (parts[0] in NOT_PACKAGED or parts[0].startswith(".")):
            continue
        if any((ROOT / Path(*parts[:k]) / "pyproject.toml").exists() for k in range(1, len(parts) + 1)):
            continue  # a project of its own (examples/my_passes/): installed on its own
        found.add(".".join(("tensorkiln", *parts)))
    assert found - listed == set(), "packages missing from pyproject's [tool.setuptools] packages"
    assert listed - found == set(), "pyproject lists packages that do not exist"
