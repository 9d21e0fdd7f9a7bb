"""What a kernel made of graph ops computes, recorded on it by te-to-loop (``tk.ops``,
``tk.anchor``, ``tk.epilogue``: ``dialects/loop.py``'s :class:`KernelAnchor`), so that
schedules read it instead of parsing kernel names.

A kernel's tag names the graph ops of its group in order (``fuse-ops`` joins their
names: ``dense_add_relu``); te-to-loop, which knows the graph dialect, reads it back
here once::

    anchor_of_tag("dense_add_relu")
    # KernelAnchor(ops=("dense", "add", "relu"), op="dense", epilogue=("add", "relu"))
    anchor_of_tag("batch_matmul_transpose_reshape").epilogue    # None: not elementwise
    anchor_of_tag("sort")                                        # None: not graph ops
"""

from __future__ import annotations

from functools import lru_cache

from xdsl.dialects import func

from ..dialects import loop
from ..dialects.graph import GRAPH_OPS, OpPatternKind


@lru_cache(maxsize=1)
def _pattern_kinds() -> dict[str, int]:
    """Graph op name (without ``graph.``) -> its fusion pattern kind."""
    return {op.name.removeprefix("graph."): int(op.PATTERN_KIND) for op in GRAPH_OPS}


@lru_cache(maxsize=1)
def _most_words() -> int:
    """The most ``_``-separated words in a graph op's name (``batch_matmul``: 2)."""
    return max(name.count("_") + 1 for name in _pattern_kinds())


def op_names(tag: str) -> list[str] | None:
    """The graph ops a kernel tag names (``matmul_add_relu`` -> matmul, add, relu), or
    None if a part is not a graph op. At each place the longest op name that fits is
    taken (``reduce_mean``, not ``reduce``): a few set lookups per op, so the tag of a
    group of thousands of ops reads in linear time."""
    known = _pattern_kinds()
    words = tag.split("_") if tag else []
    names, at = [], 0
    while at < len(words):
        for count in range(min(_most_words(), len(words) - at), 0, -1):
            name = "_".join(words[at : at + count])
            if name in known:
                names.append(name)
                at += count
                break
        else:
            return None
    return names


def anchor_of_tag(tag: str) -> loop.KernelAnchor | None:
    """The :class:`KernelAnchor` of a kernel tagged ``tag``, or None when the tag does not
    name graph ops. The anchor is the first op of highest pattern kind; the epilogue the
    ops after it if each is elementwise or broadcast."""
    ops = op_names(tag)
    if not ops:
        return None
    kinds = _pattern_kinds()
    anchor = max(ops, key=lambda n: kinds[n])
    rest = tuple(ops[ops.index(anchor) + 1 :])
    elementwise = all(kinds[n] <= OpPatternKind.BROADCAST for n in rest)
    return loop.KernelAnchor(tuple(ops), anchor, rest if elementwise else None)


def record_anchor(kernel: func.FuncOp) -> None:
    """Record on ``kernel`` what its tag says it computes (nothing for a tag that does
    not name graph ops)."""
    tag = loop.kernel_tag(kernel)
    anchor = anchor_of_tag(tag) if tag is not None else None
    if anchor is not None:
        loop.set_kernel_anchor(kernel, anchor)


__all__ = ["anchor_of_tag", "op_names", "record_anchor"]
