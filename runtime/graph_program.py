"""The graph executor's program: kernel calls over tensors, and the JSON format it is saved in.

Pure stdlib + numpy: a deployed model reads this without the compiler. The compiler
derives a program from a lowered host function (``tensorkiln.driver.host_program``).

Format (``graph.json``, ``"format": "tensorkiln.graph/1"``)::

    {
      "format": "tensorkiln.graph/1",
      "signature": {"inputs": [{"name": "x", "shape": ["n", 8], "dtype": "float32"}],
                    "outputs": [{"name": "output0", "shape": ["n", 6], "dtype": "float32"}]},
      "tensors": [
        {"name": "x",  "kind": "input",  "index": 0, "shape": ["n", 8], "dtype": "float32",
         "dynamic_axes": [0]},
        {"name": "w0", "kind": "weight", "index": 0, "shape": [6, 8], "dtype": "float32",
         "dynamic_axes": []},
        {"name": "t0", "kind": "temp", "storage": 0, "shape": ["n", 6], "dtype": "float32",
         "dynamic_axes": [0]},
        {"name": "out0", "kind": "output", "index": 0, ...}
      ],
      "storages": [{"id": 0, "tensors": [2, 5]}],
      "nodes": [{"kernel": "dense_0", "args": [0, 1, 2]}, ...]
    }

- ``tensors``: every buffer a kernel touches. ``kind`` says who owns it: the caller's
  ``input``/``output`` number ``index``, the ``weight`` number ``index`` (the order of
  the weights file), or a ``temp`` living in ``storage``. Dims are ints or symbol names
  (bound from the inputs at call time). ``dynamic_axes``: the axes the kernels receive
  as ``int64`` arguments (the ``?`` dims of the buffer type).
- ``storages``: the static memory plan. A storage is one allocation shared by tensors
  whose lifetimes do not overlap; its size is the largest of theirs (in bytes, for the
  symbol values of the call).
- ``nodes``: kernel calls in execution order. ``args`` are tensor ids; a kernel is called
  with, for each argument, its data pointer followed by its dynamic dims (the calling
  convention of every generated function). The last argument is the one written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dim_expr import evaluate
from .signature import Dim, Signature
from .sizes import buffer_bytes

FORMAT = "tensorkiln.graph/1"

TENSOR_KINDS = ("input", "output", "weight", "temp")


class ProgramFormatError(ValueError):
    """A graph program (JSON) that is malformed: names the field that is wrong."""


@dataclass
class GraphTensor:
    """One buffer of the program (see the module docstring)."""

    name: str
    kind: str
    shape: tuple[Dim, ...]
    dtype: np.dtype
    dynamic_axes: tuple[int, ...] = ()
    index: int = -1
    storage: int = -1

    def nbytes(self, symbols: dict[str, int]) -> int:
        """Its size in bytes for ``symbols``; a TensorTooLargeError (naming it) past 64 bits."""
        return buffer_bytes(self.concrete_shape(symbols), self.dtype.itemsize, self.name)

    def concrete_shape(self, symbols: dict[str, int]) -> tuple[int, ...]:
        return tuple(evaluate(d, symbols) if isinstance(d, str) else d for d in self.shape)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "shape": list(self.shape),
            "dtype": str(self.dtype),
            "dynamic_axes": list(self.dynamic_axes),
        }
        if self.kind == "temp":
            d["storage"] = self.storage
        else:
            d["index"] = self.index
        return d


@dataclass
class GraphNode:
    """One kernel call: the kernel's symbol and the tensor ids of its arguments."""

    kernel: str
    args: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "args": list(self.args)}


@dataclass
class GraphProgram:
    """Kernel calls over tensors, with a memory plan (``storages``)."""

    signature: Signature
    tensors: list[GraphTensor]
    nodes: list[GraphNode]
    storages: list[list[int]] = field(default_factory=list)

    @property
    def kernels(self) -> list[str]:
        """The distinct kernel symbols the program calls, in first-call order."""
        return list(dict.fromkeys(n.kernel for n in self.nodes))

    @property
    def temporaries(self) -> list[int]:
        return [k for k, t in enumerate(self.tensors) if t.kind == "temp"]

    def storage_bytes(self, symbols: dict[str, int]) -> list[int]:
        """The size of each storage for the given symbol values."""
        return [max((self.tensors[t].nbytes(symbols) for t in members), default=0) for members in self.storages]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "signature": self.signature.to_json(),
            "tensors": [t.to_json() for t in self.tensors],
            "storages": [{"id": k, "tensors": list(m)} for k, m in enumerate(self.storages)],
            "nodes": [n.to_json() for n in self.nodes],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)

    @staticmethod
    def from_json(d: Any) -> GraphProgram:
        """Read a program, checking every field (a ProgramFormatError names the bad one)."""
        try:
            return _from_json(d)
        except ProgramFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise ProgramFormatError(f"malformed graph program: {type(e).__name__}: {e}") from e

    @staticmethod
    def loads(text: str) -> GraphProgram:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ProgramFormatError(f"graph program is not valid JSON: {e}") from e
        return GraphProgram.from_json(data)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ProgramFormatError(message)


def _from_json(d: Any) -> GraphProgram:
    _check(isinstance(d, dict), "graph program: expected a JSON object")
    _check(d.get("format") == FORMAT, f"graph program: format {d.get('format')!r}, expected {FORMAT!r}")
    signature = Signature.from_json(d["signature"])
    tensors = []
    for k, t in enumerate(d["tensors"]):
        _check(t["kind"] in TENSOR_KINDS, f"tensor {k}: unknown kind {t['kind']!r}")
        shape = tuple(t["shape"])
        _check(
            all(isinstance(s, str) or (isinstance(s, int) and s >= 0) for s in shape),
            f"tensor {k} ('{t['name']}'): bad shape {list(shape)}",
        )
        axes = tuple(int(a) for a in t["dynamic_axes"])
        _check(all(0 <= a < len(shape) for a in axes), f"tensor {k}: dynamic axes {list(axes)} out of range")
        tensors.append(
            GraphTensor(
                str(t["name"]),
                t["kind"],
                shape,
                np.dtype(t["dtype"]),
                axes,
                int(t.get("index", -1)),
                int(t.get("storage", -1)),
            )
        )
    storages = [list(s["tensors"]) for s in d["storages"]]
    for k, members in enumerate(storages):
        for t in members:
            _check(0 <= t < len(tensors) and tensors[t].storage == k, f"storage {k}: bad member {t}")
    nodes = []
    for k, n in enumerate(d["nodes"]):
        args = tuple(int(a) for a in n["args"])
        _check(all(0 <= a < len(tensors) for a in args), f"node {k} ('{n['kernel']}'): argument out of range")
        nodes.append(GraphNode(str(n["kernel"]), args))
    counts = {"input": len(signature.inputs), "output": len(signature.entry_outputs)}
    for k, t in enumerate(tensors):
        if t.kind in counts:
            _check(0 <= t.index < counts[t.kind], f"tensor {k}: {t.kind} index {t.index} out of range")
        if t.kind == "temp":
            _check(0 <= t.storage < len(storages), f"tensor {k}: storage {t.storage} out of range")
    return GraphProgram(signature, tensors, nodes, storages)


__all__ = ["FORMAT", "GraphNode", "GraphProgram", "GraphTensor", "ProgramFormatError"]
