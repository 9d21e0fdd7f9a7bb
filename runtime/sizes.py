"""Buffer sizes from symbol values, checked for overflow before anything is allocated.

The generated code computes sizes, offsets and indices in ``int64``: a buffer of more
than ``2**63 - 1`` bytes would wrap (four inputs of 2**16 broadcast together make a
2**64-element tensor, whose byte count wraps to 0: a one-byte buffer, then a segfault).
Sizes here are Python integers (exact), and a tensor whose size does not fit is a
:class:`TensorTooLargeError` naming it. Pure stdlib.

Example::

    nbytes = buffer_bytes((n, 4096), 4, "t5")   # TensorTooLargeError if it overflows
"""

from __future__ import annotations

from collections.abc import Sequence

#: the largest byte count (and dim) a buffer may have: what an ``int64`` holds
MAX_BYTES = 2**63 - 1


class TensorTooLargeError(MemoryError):
    """A tensor whose size, for the symbol values of a call, does not fit in 64 bits."""


def buffer_bytes(shape: Sequence[int], itemsize: int, name: str) -> int:
    """The bytes of a ``shape`` buffer of ``itemsize``-byte elements, exactly; a
    TensorTooLargeError naming tensor ``name`` when it or a dim exceeds :data:`MAX_BYTES`."""
    count = 1
    for d in shape:
        count *= d
    nbytes = count * itemsize
    if nbytes > MAX_BYTES or any(d > MAX_BYTES for d in shape):
        raise TensorTooLargeError(
            f"tensor '{name}' of shape {list(shape)} would need {count} elements ({nbytes} bytes), "
            f"more than a 64-bit size can count (2**63 - 1 bytes): the inputs' sizes are too large for the model"
        )
    return nbytes


__all__ = ["MAX_BYTES", "TensorTooLargeError", "buffer_bytes"]
