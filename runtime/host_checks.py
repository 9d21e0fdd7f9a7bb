"""What the host checks between compiled functions, shared by every executor (pure numpy):
a size read from data lies in its symbol's range (``graph.data_size``), a model's
run-time assertion holds (``graph.check``)."""

from __future__ import annotations

import numpy as np


class RuntimeCheckError(RuntimeError):
    """A model's run-time assertion failed (``graph.check``)."""


class IndexCheckError(RuntimeCheckError, IndexError):
    """An index a model was given is outside the axis it indexes (torch raises IndexError)."""


#: the errors a ``graph.check`` may raise, by the name its ``error`` property gives
CHECK_ERRORS: dict[str, type[RuntimeCheckError]] = {"RuntimeError": RuntimeCheckError, "IndexError": IndexCheckError}


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


def check(pred: np.ndarray, message: str, error: str = "RuntimeError") -> None:
    """Raise ``CHECK_ERRORS[error](message)`` (a RuntimeCheckError) unless ``pred`` (one
    element; a numpy or cupy array) is nonzero.

    Example: ``check(np.array(True), "never raised")``
    """
    pred = np.asarray(pred.get() if hasattr(pred, "get") else pred)  # (cupy: to the host)
    if pred.size != 1:
        raise ValueError(f"a run-time check's predicate has {pred.size} elements, expected one")
    if not bool(pred.reshape(-1)[0]):
        raise CHECK_ERRORS[error](message)


__all__ = ["CHECK_ERRORS", "DataDependentSizeError", "IndexCheckError", "RuntimeCheckError", "check", "checked_size", "size_carrier"]
