"""Helpers shared by the graph-op test files: build ops on fresh block arguments, check
the textual round trip, and parse the examples in the ops' docstrings."""

from __future__ import annotations

import re

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.ir import Block, Region
from xdsl.parser import Parser

from tensorkiln.dialects.graph import Graph
from tensorkiln.dialects.graph.types import tensor_type


def args(*types):
    """Fresh block arguments of these types."""
    return Block(arg_types=list(types)).args


def t(shape, element=f32):
    return tensor_type(shape, element)


def context() -> Context:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, Graph):
        ctx.load_dialect(dialect)
    return ctx


def module_of(ops, block: Block | None = None) -> ModuleOp:
    """The ops (built on the args of ``block``, by default the block of the first op's
    first operand) in a func.func returning their results."""
    block = block if block is not None else ops[0].operands[0].owner
    block.add_ops([*ops, func.ReturnOp(*(op.results[0] for op in ops))])
    f = func.FuncOp(
        "f", ([a.type for a in block.args], [op.results[0].type for op in ops]), Region(block)
    )
    module = ModuleOp([f])
    module.verify()
    return module


def assert_round_trip(ops, block: Block | None = None) -> str:
    text = str(module_of(ops, block))
    parsed = Parser(context(), text).parse_module()
    parsed.verify()
    assert str(parsed) == text
    return text


def parse_and_verify(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for c in text:
        depth += c in "<([{"
        depth -= c in ">)]}"
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    return [*parts, cur.strip()] if cur.strip() else parts


def doc_examples(module) -> list[str]:
    """Every ``%x = graph.op ...`` line in the docstrings of a family module and its ops."""
    docs = [module.__doc__ or ""] + [
        v.__doc__ or "" for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__
    ]
    found = []
    for doc in docs:
        found += [m.strip().rstrip("`") for m in re.findall(r"(%\w+ = graph\.\w+ [^\n]*)", doc)]
    return list(dict.fromkeys(found))


def check_doc_example(line: str) -> None:
    """Parse and verify a docstring example, its operands as function arguments."""
    body = line.split(" = ", 1)[1]
    attr_start = body.find("{")
    colon = body.rfind("} : ") + 1 if attr_start >= 0 else body.find(" : ")
    head, types = body[:colon], body[colon:].strip()[1:].strip()
    operands = list(dict.fromkeys(re.findall(r"%\w+", head)))
    in_types = _split_top(types.split(" -> ")[0].strip().removeprefix("(").removesuffix(")"))
    names = re.findall(r"%\w+", head)
    typ = {n: ty for n, ty in zip(names, in_types)} if len(in_types) == len(names) else {n: in_types[0] for n in names}
    sig = ", ".join(f"{n}: {typ[n]}" for n in operands)
    parse_and_verify(f"builtin.module {{\n func.func @f({sig}) {{\n  {line}\n  func.return\n }}\n}}")
