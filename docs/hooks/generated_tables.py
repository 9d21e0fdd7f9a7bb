"""MkDocs hook: tables generated from the code, so the docs cannot drift from it.

A page asks for one with a marker line, ``<!-- generated: NAME -->``; the hook replaces it
with the table :data:`TABLES` makes for NAME when the site is built (``mkdocs build``):

- ``torch-ops``: every ATen overload the PyTorch frontend converts, from its converter
  registry (``tensorkiln.frontends.torch.registry.CONVERTERS``), grouped by family;
- ``onnx-ops``: every ONNX op the ONNX frontend converts, from its registry, by family;
- ``graph-ops``: the graph dialect's ops, each with the first line of its docstring;
- ``passes``: every pass ``tensorkiln-opt`` knows by name, and what it does;
- ``cli``: the ``tensorkiln`` subcommands with their one-line help;
- ``benchmarks``: the headings and tables of ``BENCHMARKS.md`` (its prose left out);
- ``architecture``: ``ARCHITECTURE.md`` at the repository root (its title left out).
"""

from __future__ import annotations

import atexit
import json
import re
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

#: the repository root (this file is docs/hooks/generated_tables.py)
ROOT = Path(__file__).resolve().parent.parent.parent

MARKER = re.compile(r"^<!-- generated: ([\w-]+) -->$", re.MULTILINE)


def _first_line(obj: Any) -> str:
    """The first paragraph of a docstring, as one line of Markdown fit for a table cell."""
    doc = (getattr(obj, "__doc__", None) or "").strip()
    paragraph = " ".join(doc.split("\n\n")[0].split())
    return paragraph.replace("``", "`").replace("|", "\\|")


def torch_ops() -> str:
    """The ATen overloads with a converter, one row per family (the converter's file)."""
    from tensorkiln.frontends.torch import ops  # noqa: F401  (registers every converter)
    from tensorkiln.frontends.torch.registry import CONVERTERS

    families: dict[str, list[str]] = defaultdict(list)
    for name, fn in CONVERTERS.items():
        families[fn.__module__.rsplit(".", 1)[-1]].append(name)
    rows = ["| family | count | ATen overloads |", "|---|---:|---|"]
    for family in sorted(families):
        names = sorted(families[family])
        rows.append(f"| {family.replace('_', ' ')} | {len(names)} | {', '.join(f'`{n}`' for n in names)} |")
    rows.append(f"| **all** | **{len(CONVERTERS)}** | |")
    return "\n".join(rows)


def onnx_ops() -> str:
    """The ONNX ops the ONNX frontend converts, from its registry
    (``tensorkiln.frontends.onnx.registry.CONVERTERS``), one row per family (the converter's
    file), each op with the schema versions its converters start at."""
    try:
        from tensorkiln.frontends.onnx import ops  # noqa: F401  (registers every converter)
        from tensorkiln.frontends.onnx.registry import CONVERTERS, DEFAULT_DOMAIN
    except ImportError as e:  # (the onnx package is not installed where the site is built)
        return f"*The table needs the `onnx` package to be generated ({e}).*"
    families: dict[str, list[str]] = defaultdict(list)
    for (domain, op_type), entries in CONVERTERS.items():
        name = op_type if domain == DEFAULT_DOMAIN else f"{domain}.{op_type}"
        since = "/".join(str(c.since) for c in entries)
        families[entries[0].fn.__module__.rsplit(".", 1)[-1]].append(f"`{name}` {since}")
    rows = ["| family | count | ops (and the opset versions their converters start at) |", "|---|---:|---|"]
    for family in sorted(families):
        ops_ = sorted(families[family], key=str.lower)
        rows.append(f"| {family.replace('_', ' ')} | {len(ops_)} | {', '.join(ops_)} |")
    # ONNX ops defined as functions of others, with no converter of their own: their body
    # converts, unless it uses what is refused (Bernoulli: random draws; SequenceMap: sequences),
    # which the node suite's results show (every case of the op refused)
    import onnx

    newest = {(s.domain or "", s.name): s for s in onnx.defs.get_all_schemas()}
    statuses: dict[str, set[str]] = defaultdict(set)
    for case in json.loads((ROOT / "benchmarks" / "onnx_conformance_expected.json").read_text())["cases"].values():
        statuses[case["stratum"]].add(case["status"])
    bodies = sorted(name for (domain, name), s in newest.items()
                    if not domain and (s.has_function or s.has_context_dependent_function)
                    and (DEFAULT_DOMAIN, name) not in CONVERTERS and statuses.get(name) != {"refused"})  # fmt: skip
    rows.append(f"| *as their ONNX function body* | {len(bodies)} | {', '.join(f'`{n}`' for n in bodies)} |")
    rows.append(f"| **all** | **{len(CONVERTERS) + len(bodies)}** | |")
    return "\n".join(rows)


def graph_ops() -> str:
    from tensorkiln.dialects.graph import Graph

    rows = ["| op | what it computes | defined in |", "|---|---|---|"]
    for op in sorted(Graph.operations, key=lambda o: o.name):
        module = op.__module__.removeprefix("tensorkiln.").replace(".", "/") + ".py"
        rows.append(f"| `{op.name}` | {_first_line(op)} | `{module}` |")
    return "\n".join(rows)


def passes() -> str:
    """tensorkiln's own passes (xDSL's, such as ``cse`` and ``dce``, are not listed)."""
    from tensorkiln.universe import TENSORKILN_UNIVERSE

    rows = ["| pass | what it does |", "|---|---|"]
    for name, load in sorted(TENSORKILN_UNIVERSE.all_passes.items()):
        rows.append(f"| `{name}` | {_first_line(load())} |")
    return "\n".join(rows)


def cli() -> str:
    from tensorkiln.tools.cli.commands import COMMANDS

    rows = ["| command | what it does |", "|---|---|"]
    rows += [f"| `tensorkiln {c.NAME}` | {c.HELP} |" for c in COMMANDS]
    return "\n".join(rows)


def benchmarks() -> str:
    """Every heading (below the title) and table of BENCHMARKS.md, in order; its prose,
    code blocks and notes stay there (a table is a run of lines starting with ``|``)."""
    keep: list[str] = []
    in_fence = False
    for line in (ROOT / "BENCHMARKS.md").read_text().splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif in_fence or line.startswith("# "):
            continue
        elif line.startswith("#"):
            keep += ["", line, ""]
        elif line.startswith("|"):
            keep.append(line)
        elif keep and keep[-1].startswith("|"):
            keep.append("")
    return "\n".join(keep).strip()


#: what the page says where ARCHITECTURE.md is not there (a checkout older than it)
_LAYOUT = """## Layout

The repository root is the package `tensorkiln`: `dialects/` (IR definitions only),
`frontends/` (the builder, torch.export, ONNX), `passes/` (graph optimization and the pass
pipeline), `lowering/` (passes between levels), `schedule/` (schedule primitives and
default strategies), `backends/llvm/` (LLVM IR, llvmlite JIT) and `backends/cuda/` (CUDA C),
`byoc/` (bring your own codegen), `driver/` (targets, the build pipeline, export),
`tuning/` (auto-tuning), `runtime/` (calling compiled code with numpy and ctypes; no
compiler imports), `tools/` (`tensorkiln`, `tensorkiln-opt`), `tests/` (pytest;
`tests/filecheck/` for lit).

Who may import whom, top to bottom: api/tools -> tuning -> driver -> backends ->
lowering/schedule -> passes/frontends/byoc -> dialects -> runtime; no cycles, and
`runtime/` imports no compiler code (`tests/test_layering.py` checks it)."""


def architecture() -> str:
    """ARCHITECTURE.md without its first heading (the page has its own)."""
    path = ROOT / "ARCHITECTURE.md"
    if not path.exists():
        return _LAYOUT
    lines = path.read_text().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines)


TABLES: dict[str, Callable[[], str]] = {
    "torch-ops": torch_ops, "onnx-ops": onnx_ops, "graph-ops": graph_ops, "passes": passes, "cli": cli, "benchmarks": benchmarks,
    "architecture": architecture,
}


def render(markdown: str) -> str:
    """``markdown`` with every marker replaced by its table (an unknown name is an error)."""

    def table(match: re.Match[str]) -> str:
        name = match[1]
        if name not in TABLES:
            raise KeyError(f"<!-- generated: {name} -->: no such table (known: {', '.join(TABLES)})")
        return TABLES[name]()

    return MARKER.sub(table, markdown)


@event_priority(100)  # before mkdocstrings' own on_config, which sets up its handler
def on_config(config: Any, **_: Any) -> Any:
    """Let mkdocstrings find the package by its name: the repository root IS the package
    ``tensorkiln`` but its folder may have any name (a clone's), so the API reference
    reads it through a link ``tensorkiln`` -> the root in a temporary folder (outside the
    repository: a link inside it would make every recursive walk of the tree loop).
    Without it, the loader takes ``.venv/bin/tensorkiln`` (the command) for the package."""
    link_dir = Path(tempfile.mkdtemp(prefix="tk-docs-"))
    (link_dir / "tensorkiln").symlink_to(ROOT, target_is_directory=True)
    atexit.register(shutil.rmtree, link_dir, ignore_errors=True)
    sys.path.insert(0, str(link_dir))  # the tables below import it by that name too
    handlers = config["plugins"]["mkdocstrings"].config["handlers"]
    handlers.setdefault("python", {})["paths"] = [str(link_dir)]
    return config


def on_page_markdown(markdown: str, **_: Any) -> str:
    return render(markdown)
