"""Data layouts of 4-D image tensors: which axis holds batch, channels, height, width.

Window ops (conv2d, pooling) take a ``layout`` property, ``"NCHW"`` (torch's, the
default) or ``"NHWC"`` (channels last: what CPU convolutions vectorize best). A layout is
written as the NCHW axes it stores in order, so ``NHWC`` is ``(0, 2, 3, 1)``: its axis 1
is NCHW's axis 2 (height). conv2d's weight follows its data layout: OIHW with NCHW, HWIO
with NHWC (output channels last, contiguous like the output's).

Example::

    to_layout((8, 3, 32, 30), "NHWC")  # (8, 32, 30, 3)
    to_nchw((8, 32, 30, 3), "NHWC")    # (8, 3, 32, 30)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from xdsl.utils.exceptions import VerifyException

T = TypeVar("T")

#: layout -> the NCHW axis stored at each of its positions
LAYOUTS: dict[str, tuple[int, ...]] = {"NCHW": (0, 1, 2, 3), "NHWC": (0, 2, 3, 1)}

#: data layout -> (its weight layout's name, that layout as OIHW axes)
KERNEL_LAYOUTS: dict[str, tuple[str, tuple[int, ...]]] = {
    "NCHW": ("OIHW", (0, 1, 2, 3)),
    "NHWC": ("HWIO", (2, 3, 1, 0)),
}


def check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise VerifyException(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")


def to_layout(nchw: Sequence[T], layout: str) -> tuple[T, ...]:
    """Values given per NCHW axis, in ``layout``'s axis order."""
    return tuple(nchw[axis] for axis in LAYOUTS[layout])


def to_nchw(values: Sequence[T], layout: str) -> tuple[T, ...]:
    """Values given in ``layout``'s axis order, per NCHW axis."""
    out: list[T] = [values[0]] * 4
    for position, axis in enumerate(LAYOUTS[layout]):
        out[axis] = values[position]
    return tuple(out)


def weight_to_oihw(values: Sequence[T], layout: str) -> tuple[T, ...]:
    """conv2d weight values in the kernel layout of data ``layout``, in OIHW order."""
    out: list[T] = [values[0]] * 4
    for position, axis in enumerate(KERNEL_LAYOUTS[layout][1]):
        out[axis] = values[position]
    return tuple(out)


def weight_from_oihw(oihw: Sequence[T], layout: str) -> tuple[T, ...]:
    """OIHW weight values in the kernel layout of data ``layout``."""
    return tuple(oihw[axis] for axis in KERNEL_LAYOUTS[layout][1])


def channel_axis(layout: str) -> int:
    return LAYOUTS[layout].index(1)


def spatial_axes(layout: str) -> tuple[int, int]:
    perm = LAYOUTS[layout]
    return perm.index(2), perm.index(3)
