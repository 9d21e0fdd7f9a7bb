"""The packed calling convention of a model's entry function.

ctypes calls at most 1024 arguments (``_argtypes_ has too many arguments``), and a
model's entry function takes a pointer per weight: EfficientNet-B7's takes 1185. ctypes
also converts every argument at every call: 70 us for 1000 arguments, 10 us for 100.
So the compiler gives the entry ``@<name>`` a companion ``@<name>_packed(ptr)``
(``lowering/loop_to_llvm.py::packed_entry``) that loads the entry's arguments from
consecutive 8-byte slots of an array (each a pointer, or an ``int64``) and calls it; the
runtime fills a ``c_int64`` array and makes one ctypes call with it (2-4 us whatever the
count). Shared libraries exported by ``export_library`` carry it too.

Example::

    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(library.address(packed_entry_name("main")))
    call((ctypes.c_int64 * 3)(input_pointer, output_pointer, weight_pointer))
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any


def packed_entry_name(function: str) -> str:
    """The symbol of ``function``'s packed companion."""
    return f"{function}_packed"


def packed_caller(address: int) -> Callable[[Any], None]:
    """A ctypes function calling the packed entry at ``address`` with an argument array."""
    return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)


__all__ = ["packed_caller", "packed_entry_name"]
