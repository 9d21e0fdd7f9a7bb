"""Storage for the AOT entry's temporaries: the memory plan's storages, kept between calls.

The compiler hoists the entry's intermediate tensors into trailing arguments
(``lowering/hoist_temporaries.py``); a :class:`Workspaces` passes them. A *workspace*
is one set of the plan's storages for one set of symbol values, with the argument list
(each temporary's storage pointer and dynamic dims) made once. A call takes a workspace
and gives it back afterwards, so concurrent calls from several threads never share one
(each gets its own, kept for later calls), and a model called at one size again and
again allocates nothing.

Example::

    workspaces = Workspaces(program)
    workspace = workspaces.take(symbols)
    try:
        entry(*call_args, *workspace.arguments)
    finally:
        workspaces.give_back(workspace)
"""

from __future__ import annotations

import ctypes

import numpy as np

from .binding_pool import BindingPool
from .graph_executor import allocate_storages
from .graph_program import GraphProgram


class _Workspace:
    """The storages of one binding and the entry's trailing arguments into them."""

    def __init__(self, program: GraphProgram, temporaries: list[int], symbols: dict[str, int]):
        self.key = tuple(sorted(symbols.items()))  # the pool's key (binding_pool.py)
        self.storages: list[np.ndarray] = allocate_storages(program, symbols)
        self.arguments: list[int] = []
        for k in temporaries:
            tensor = program.tensors[k]
            self.arguments.append(self.storages[tensor.storage].ctypes.data)
            shape = tensor.concrete_shape(symbols)
            self.arguments += [shape[a] for a in tensor.dynamic_axes]


class Workspaces:
    """Workspaces of a graph program's temporaries, pooled per set of symbol values
    (``binding_pool.py``)."""

    def __init__(self, program: GraphProgram):
        if not program.storages and any(t.kind == "temp" for t in program.tensors):
            raise ValueError("the program has temporaries but no memory plan (run plan_memory)")
        self.program = program
        self.temporaries = [k for k, t in enumerate(program.tensors) if t.kind == "temp"]
        self._pool: BindingPool[_Workspace] = BindingPool(lambda s: _Workspace(program, self.temporaries, s))

    def argument_types(self) -> list[type]:
        """The ctypes of the entry's trailing arguments: per temporary a pointer, then
        one ``int64`` per dynamic dim."""
        types: list[type] = []
        for k in self.temporaries:
            types += [ctypes.c_void_p] + [ctypes.c_int64] * len(self.program.tensors[k].dynamic_axes)
        return types

    def take(self, symbols: dict[str, int]) -> _Workspace:
        """A workspace for ``symbols`` that no other call is using (made if none is idle)."""
        return self._pool.take(symbols)[1]

    def give_back(self, workspace: _Workspace) -> None:
        """Return a workspace taken with :meth:`take` once its call has finished."""
        self._pool.give_back(workspace.key, workspace)


__all__ = ["Workspaces"]
