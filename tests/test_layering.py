"""The package's import graph keeps the layering of ARCHITECTURE.md.

Read from the source (``ast`` over every ``.py`` of the package, nothing imported), each
import is an edge between two *parts* (a top-level folder, or a top-level file), and:

- the parts form no cycle;
- no import points back up the layers (``LAYERS``, top first): api/tools -> tuning ->
  driver -> backends -> lowering/schedule -> passes/frontends/byoc -> dialects ->
  runtime/common; parts of one layer may import each other (without a cycle);
- ``runtime/`` imports no compiler code and none of xDSL, llvmlite or torch (a deployed
  model runs on numpy and ctypes alone);
- no import sits inside a function to dodge a cycle: an import of ours inside a function
  never closes a cycle of modules (it would be one at module level), and one of a third
  party is of an optional or heavy package (``LAZY_THIRD_PARTY``, with its reason).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "tensorkiln"

#: folders of the checkout that are not the package's code
NOT_PACKAGE = {"tests", "benchmarks", "build", "dist", "docs", "site"}

#: each part's layer, top first; a part may import its own layer's or a lower one's
LAYERS: list[set[str]] = [
    {"__init__", "api", "build", "interpreter", "tools", "examples", "quantization", "frontend_backends"},
    {"tuning"},
    {"driver"},
    {"backends"},
    {"lowering", "schedule"},
    {"passes", "frontends", "byoc"},
    {"dialects"},
    {"runtime", "errors", "universe", "signature"},
]

#: third-party packages the runtime must not import (at any depth)
COMPILER_ONLY = {"xdsl", "llvmlite", "torch", "onnx", "onnxruntime", "onnxscript"}

#: third-party packages that may be imported inside a function: optional, or heavy and
#: needed by one feature only
LAZY_THIRD_PARTY = {
    "torch": "optional (frontends/torch, DLPack inputs); heavy to import",
    "cupy": "optional: the CUDA backend's runtime, only with a GPU",
    "onnx": "optional: the ONNX frontend",
    "onnxruntime": "optional: ONNX Runtime as a reference / peer",
    "onnxscript": "optional: torch.onnx's exporter",
    "matplotlib": "optional: plots (tuning, profiler)",
    "graphviz": "optional: drawing graphs",
    "scipy": "optional: the BLAS BYOC backend, special functions in tests of references",
    "xgboost": "optional: the tuning cost model",
    "dask": "optional: the distributed tuning runner",
    "distributed": "optional: the distributed tuning runner",
    "sklearn": "optional: a tuning cost model",
    "tqdm": "optional: progress bars",
    "rich": "optional: progress bars",
    "llvmlite": "the LLVM binding: loaded by the first build, not by importing the compiler",
    "ml_dtypes": "numpy's bfloat16, only where bfloat16 arrays are made",
    "sympy": "comes with torch: the symbolic shapes of torch.export, read by the torch frontend",
    "transformers": "optional model zoo (tools/hf_sweep.py)",
    "timm": "optional model zoo (tools/timm_sweep.py)",
    "torchvision": "optional model zoo (tools/tv_sweep.py)",
}

@dataclass(frozen=True)
class Import:
    source: str  # dotted module name of the importing file (without the package)
    target: str  # dotted name imported (ours: without the package; third party: as written)
    ours: bool
    in_function: bool
    line: int
    path: str  # the importing file, relative to the package root

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def _python_files() -> list[Path]:
    files = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] in NOT_PACKAGE or any(p.startswith(".") or p.endswith(".egg-info") or p == "__pycache__" for p in parts):
            continue
        files.append(path)
    return files


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


@cache
def _existing_module(dotted: str) -> str:
    """The module a dotted name of ours lives in: ``a.b.c`` is the module ``a.b.c`` when
    such a file or package exists, else a name defined in ``a.b`` (the package's own
    ``__init__`` for the empty name)."""
    parts = dotted.split(".") if dotted else []
    while parts:
        base = ROOT.joinpath(*parts)
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return ".".join(parts)
        parts.pop()
    return "__init__"


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, package: bool, path: str = "") -> None:
        self.module, self.package, self.path = module, package, path
        self.imports: list[Import] = []
        self.depth = 0  # functions entered

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        # ``if TYPE_CHECKING:`` imports are for type checkers only: not edges
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def _add(self, name: str, line: int) -> None:
        ours = name == PACKAGE or name.startswith(PACKAGE + ".")
        target = _existing_module(name[len(PACKAGE) + 1 :]) if ours else name
        self.imports.append(Import(self.module, target, ours, self.depth > 0, line, self.path))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0:
            base = node.module or ""
        else:
            here = self.module.split(".") if self.module != "__init__" else []
            if not self.package:
                here = here[:-1]
            up = node.level - 1
            if up > len(here):
                raise AssertionError(f"{self.module}: relative import beyond the package")
            base = ".".join([PACKAGE, *here[: len(here) - up], *([node.module] if node.module else [])])
        # ``from a import b``: the module ``a.b`` where there is one, else a name in ``a``
        for alias in node.names:
            self._add(f"{base}.{alias.name}" if alias.name != "*" else base, node.lineno)


@cache
def all_imports() -> tuple[Import, ...]:
    found: list[Import] = []
    for path in _python_files():
        collector = _Collector(_module_name(path), _is_package(path), str(path.relative_to(ROOT)))
        collector.visit(ast.parse(path.read_text(), str(path)))
        found += collector.imports
    return tuple(found)


#: a frontend's ``backend.py`` is the ``onnx.backend.base.Backend`` adapter: it imports a model
#: *and builds it* (ONNX's backend test runner calls it), so it is a user-facing entry point
#: like ``api.py``, kept at ``tensorkiln.frontends.<name>.backend`` because that is the path
#: users know; it belongs to the top layer, and nothing in ``frontends/`` may import it
FRONTEND_BACKEND = re.compile(r"frontends\.\w+\.backend")


def part(module: str) -> str:
    """The top-level folder or file a module belongs to (a frontend's Backend adapter: its own part)."""
    if FRONTEND_BACKEND.fullmatch(module):
        return "frontend_backends"
    return module.split(".")[0]


def layer(name: str) -> int:
    for k, parts in enumerate(LAYERS):
        if name in parts:
            return k
    raise AssertionError(f"'{name}' is in no layer of LAYERS: add it (ARCHITECTURE.md says where)")


def _edges() -> dict[tuple[str, str], list[Import]]:
    edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for imp in all_imports():
        if imp.ours and part(imp.source) != part(imp.target) and imp.source != "__init__":
            edges[part(imp.source), part(imp.target)].append(imp)
    return edges


def _cycles(edges: dict[tuple[str, str], list[Import]] | set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected parts with more than one member (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_part_has_a_layer() -> None:
    for path in _python_files():
        layer(part(_module_name(path)))


def test_no_cycles_between_parts() -> None:
    edges = _edges()
    problems = []
    for component in _cycles(edges):
        members = set(component)
        lines = [
            f"  {imp.where} imports {imp.target}"
            for (a, b), imps in sorted(edges.items())
            if a in members and b in members
            for imp in imps
        ]
        problems.append(f"cycle between {', '.join(component)}:\n" + "\n".join(lines))
    assert not problems, "\n".join(problems)


def test_no_import_points_up() -> None:
    upward = [
        f"{imp.where} ({part(imp.source)}) imports {imp.target} ({part(imp.target)}, a higher layer)"
        for (a, b), imps in sorted(_edges().items())
        if layer(b) < layer(a)
        for imp in imps
    ]
    assert not upward, "\n".join(upward)


def test_runtime_imports_no_compiler() -> None:
    bad = [
        f"{imp.where} imports {imp.target}"
        for imp in all_imports()
        if part(imp.source) == "runtime"
        and (
            (imp.ours and part(imp.target) != "runtime")
            or (not imp.ours and imp.target.split(".")[0] in COMPILER_ONLY)
        )
    ]
    assert not bad, "runtime/ must run on numpy and ctypes alone:\n" + "\n".join(bad)


def test_no_imports_inside_functions_to_dodge_cycles() -> None:
    """An import of ours inside a function must not close a cycle of modules (counting
    every import, in functions or not): that is a cycle merely hidden from Python."""
    edges = {(imp.source, imp.target) for imp in all_imports() if imp.ours and imp.source != imp.target}
    in_cycle = {m: k for k, component in enumerate(_cycles(edges)) for m in component}
    bad = [
        f"{imp.where} imports {imp.target} inside a function: it closes a cycle of modules "
        f"({', '.join(sorted(m for m, k in in_cycle.items() if k == in_cycle[imp.source]))})"
        for imp in all_imports()
        if imp.ours and imp.in_function and imp.source in in_cycle and in_cycle.get(imp.target) == in_cycle[imp.source]
    ]
    assert not bad, "\n".join(bad)


def test_third_party_imports_inside_functions_are_optional_ones() -> None:
    bad = [
        f"{imp.where} imports {imp.target} inside a function: import it at the top, or list it in LAZY_THIRD_PARTY with why"
        for imp in all_imports()
        if imp.in_function and not imp.ours and imp.target.split(".")[0] not in LAZY_THIRD_PARTY and not _is_stdlib(imp.target)
    ]
    assert not bad, "\n".join(bad)


def _is_stdlib(name: str) -> bool:
    import sys

    return name.split(".")[0] in sys.stdlib_module_names


def test_the_checker_sees_imports() -> None:
    """The collector resolves relative imports and tells function-level ones apart."""
    source = "from ..dialects import loop\nimport numpy\ndef f():\n    from .native_build import x\n"
    collector = _Collector("driver.cpu", package=False)
    collector.visit(ast.parse(source))
    got = [(i.target, i.ours, i.in_function) for i in collector.imports]
    assert got == [("dialects.loop", True, False), ("numpy", False, False), ("driver.native_build", True, True)]
    assert _cycles({("a", "b"): [], ("b", "c"): [], ("c", "a"): [], ("c", "d"): []}) == [["a", "b", "c"]]
    assert part("frontends.onnx.backend") == "frontend_backends" and part("frontends.onnx.importer") == "frontends"
    assert layer("frontend_backends") < layer("frontends")  # so frontends/ importing it is an upward import
