"""``walk_ops(root)``: every op under ``root`` in pre-order, as a list, without xDSL's
nested generators.

``Operation.walk()`` chains one generator per op, region and block down to each op it
yields, so each op costs as many generator resumptions as it is deep (a scheduled
kernel is ~10 loops deep); the compiler walks every kernel many times per build (each
schedule primitive normalizes constants and erases dead code twice). This walk keeps an
explicit stack: the same ops in the same order, ~4x faster on kernels.

Example::

    loops = [op for op in walk_ops(kernel) if isinstance(op, loop.ForOp)]
"""

from __future__ import annotations

from xdsl.ir import Operation


def walk_ops(root: Operation) -> list[Operation]:
    """``list(root.walk())``: ``root`` and every op nested in it, in pre-order."""
    found: list[Operation] = []
    stack = [root]
    while stack:
        op = stack.pop()
        found.append(op)
        if op.regions:
            children = []
            for region in op.regions:
                for block in region.blocks:
                    child = block.first_op  # (block.ops' iterator costs twice as much)
                    while child is not None:
                        children.append(child)
                        child = child.next_op
            children.reverse()
            stack.extend(children)
    return found


__all__ = ["walk_ops"]
