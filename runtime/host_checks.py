"""What the host checks between compiled functions, shared by every executor (pure numpy):
a size read from data lies in its symbol's range (``graph.data_size``), a model's
run-time assertion holds (``graph.check``)."""

from __future__ import annotations

import numpy as np


class RuntimeCheckError(RuntimeError):
    """A model's run-time assertion failed (``graph.check``)."""


class DataDependentSizeError(RuntimeCheckError):
    """A size read from data is outside the range the model was exported for."""


def checked_size(value: np.ndarray, symbol: str, lower: int, upper: int | None) -> int:
    """The count in ``value`` (one integer element) as the size ``symbol``, within
    ``[lower, upper]``; DataDependentSizeError otherwise.

    Example: ``checked_size(np.array(3), "u0", 0, 12) == 3``
    """
    size = int(np.asarray(value).reshape(-1)[0])
    if size < lower or (upper is not None and size > upper):
        bound = f"[{lower}, {upper}]" if upper is not None else f">= {lower}"
        raise DataDependentSizeError(f"the data-dependent size {symbol} is {size} at run time, outside its range {bound}")
    return size


def size_carrier(size: int) -> np.ndarray:
    """An array with no elements whose first dim is ``size``: it gives the functions it is
    passed to the value of a data-dependent size."""
    return np.empty((size, 0), np.int8)


def check(pred: np.ndarray, message: str) -> None:
    """Raise RuntimeCheckError(message) unless ``pred`` (one element) is nonzero."""
    pred = np.asarray(pred)
    if pred.size != 1:
        raise ValueError(f"a run-time check's predicate has {pred.size} elements, expected one")
    if not bool(pred.reshape(-1)[0]):
        raise RuntimeCheckError(message)


__all__ = ["DataDependentSizeError", "RuntimeCheckError", "check", "checked_size", "size_carrier"]
