"""The manifest of an artifact directory: the SHA-256 of every file in it.

``export_library`` writes ``manifest.json`` last, over every file the export wrote
(``meta.json``, ``graph.json``, ``model.so``, ``weights.npz``, ``externals/*``; for a
VM model ``vm.json``, ``constants.npz`` and each function's own ``manifest.json``). The
loader checks every file against it before it parses any: a file that was edited,
damaged, added to the list or swapped for another's is an :class:`ArtifactError`
naming it, never a crash or a wrong answer. Stdlib only.

The manifest protects against damage and against edits that do not also rewrite it;
it is no signature: loading an artifact runs its native code, so load only artifacts
you trust (whoever can write the directory can write a matching manifest).

Example::

    seal("model.tk")                        # after writing the files
    files = verify("model.tk")              # {"graph.json": b"...", ...}: checked bytes
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "tensorkiln.manifest/1"


class ArtifactError(RuntimeError):
    """A deployed artifact that cannot be loaded: names the file and the problem."""


def _files(root: Path) -> list[str]:
    """Every regular file under ``root`` (relative, '/'-separated, sorted), the manifest aside."""
    found = []
    for directory, _, names in os.walk(root):
        for name in names:
            relative = (Path(directory) / name).relative_to(root).as_posix()
            if relative != MANIFEST and (Path(directory) / name).is_file():
                found.append(relative)
    return sorted(found)


def seal(root: str | os.PathLike[str]) -> None:
    """Write ``root/manifest.json``: the SHA-256 of every file under ``root``."""
    root = Path(root)
    digests = {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in _files(root)}
    (root / MANIFEST).write_text(json.dumps({"format": MANIFEST_FORMAT, "sha256": digests}, indent=1))


def inside(root: Path, name: object) -> Path:
    """``root / name`` for a relative path that stays inside ``root``; ArtifactError otherwise
    (an artifact names only its own files)."""
    if not isinstance(name, str) or not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ArtifactError(f"{root / 'meta.json'}: the file name {name!r} is not a path inside the artifact")
    path = root / name
    if not path.resolve().is_relative_to(root.resolve()):
        raise ArtifactError(f"{path}: leads outside the artifact directory (a link?)")
    return path


class Manifest:
    """The checked files of one artifact directory: ``read(name)`` gives a file's bytes
    once its SHA-256 matches the manifest's; ``require(name)`` checks it is listed."""

    def __init__(self, root: Path):
        self.root = root
        path = root / MANIFEST
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ArtifactError(
                f"{path}: missing (not a tensorkiln artifact, or one exported by a version without manifests: export it again)"
            ) from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ArtifactError(f"{path}: cannot be read ({e})") from e
        digests = data.get("sha256") if isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT else None
        if not isinstance(digests, dict) or not all(isinstance(v, str) for v in digests.values()):
            raise ArtifactError(f"{path}: not a {MANIFEST_FORMAT} manifest")
        self.digests: dict[str, str] = digests

    def read(self, name: str) -> bytes:
        """The bytes of file ``name``, which must be listed with its SHA-256."""
        path = inside(self.root, name)
        if name not in self.digests:
            raise ArtifactError(f"{path}: not listed in {self.root / MANIFEST} (added after export?)")
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ArtifactError(f"{path}: missing (the artifact is incomplete)") from None
        except OSError as e:
            raise ArtifactError(f"{path}: cannot be read ({e})") from e
        if hashlib.sha256(data).hexdigest() != self.digests[name]:
            raise ArtifactError(f"{path}: corrupt, truncated or edited (its SHA-256 differs from the one in {MANIFEST})")
        return data

    def text(self, name: str) -> str:
        """File ``name`` (checked) as UTF-8 text."""
        try:
            return self.read(name).decode()
        except UnicodeDecodeError as e:
            raise ArtifactError(f"{self.root / name}: not UTF-8 text ({e})") from e


__all__ = ["MANIFEST", "MANIFEST_FORMAT", "ArtifactError", "Manifest", "inside", "seal"]
