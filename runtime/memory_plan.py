"""Static memory plan of a graph program: temporaries share storage by liveness.

A temporary lives from the node that writes it to the last node that reads it. Nodes
run in order; at each node its results take free storages (best fit by size, else the
largest free one, which grows), then the storages of the temporaries whose last use
was that node go back to the free pool. A node's result never shares storage with its
own arguments (the kernels take ``noalias`` pointers): storages are released only
after the node has run.

Sizes may be symbolic: the choice uses the sizes at ``nominal`` symbol values, and a
storage's real size is the largest of its tensors' for the symbols of each call, so
the plan is right for every binding.
"""

from __future__ import annotations

from .dim_expr import free_symbols
from .graph_program import GraphProgram

#: the value symbols take when plans compare symbolic sizes
NOMINAL_SYMBOL_VALUE = 64


def plan_memory(program: GraphProgram) -> list[list[int]]:
    """Assign each temporary of ``program`` a storage; returns (and sets) ``program.storages``.

    Example: ``plan_memory(p); assert len(p.storages) <= len(p.temporaries)``
    """
    temps = set(program.temporaries)
    last_use: dict[int, int] = {}
    for k, node in enumerate(program.nodes):
        for t in node.args:
            if t in temps:
                last_use[t] = k
    nominal = {}
    for t in temps:
        for d in program.tensors[t].shape:
            if isinstance(d, str):  # a symbol, or an expression over symbols (4*s0)
                nominal.update(dict.fromkeys(free_symbols(d), NOMINAL_SYMBOL_VALUE))
    storages: list[list[int]] = []
    sizes: list[int] = []
    free: list[int] = []
    for k, node in enumerate(program.nodes):
        # a temporary's first appearance is where it is written (a node may write several:
        # an external module with many results)
        for written in [t for t in dict.fromkeys(node.args) if t in temps and program.tensors[t].storage < 0]:
            need = program.tensors[written].nbytes(nominal)
            fitting = [s for s in free if sizes[s] >= need]
            if fitting:
                sid = min(fitting, key=lambda s: sizes[s])
            elif free:
                sid = max(free, key=lambda s: sizes[s])
            else:
                sid = len(storages)
                storages.append([])
                sizes.append(0)
            if sid in free:
                free.remove(sid)
            storages[sid].append(written)
            sizes[sid] = max(sizes[sid], need)
            program.tensors[written].storage = sid
        for t in dict.fromkeys(node.args):
            if t in temps and last_use.get(t) == k:
                free.append(program.tensors[t].storage)
    unwritten = [program.tensors[t].name for t in temps if program.tensors[t].storage < 0]
    if unwritten:
        raise ValueError(f"memory plan: temporaries no kernel uses: {', '.join(unwritten)}")
    program.storages = storages
    return storages


__all__ = ["NOMINAL_SYMBOL_VALUE", "plan_memory"]
