"""Named arrays in an ``.npz`` file, bfloat16 included.

``np.savez`` writes an ml_dtypes bfloat16 array as raw 2-byte records that load back
as ``|V2``; here such arrays are stored as their bits (``uint16``) and an extra entry
records their dtypes, so that :func:`load_arrays` returns them as they were saved.
Files without bfloat16 arrays are plain ``np.savez`` files.

Example::

    save_arrays(f, {"w0": weights})
    arrays = load_arrays("weights.npz")
"""

from __future__ import annotations

import os
from typing import IO

import numpy as np

#: the entry listing "name:dtype" of each array stored as its bits
_DTYPES_ENTRY = "__dtypes__"


def save_arrays(file: IO[bytes] | str | os.PathLike[str], arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``file`` (a path or a binary file object) as an ``.npz``."""
    stored, dtypes = {}, []
    for name, array in arrays.items():
        array = np.asarray(array)
        if array.dtype.kind == "V":  # an ml_dtypes type: numpy would write raw records
            dtypes.append(f"{name}:{array.dtype.name}")
            array = array.view(np.dtype(f"u{array.dtype.itemsize}"))
        stored[name] = array
    if dtypes:
        stored[_DTYPES_ENTRY] = np.array(dtypes)
    np.savez(file, **stored)


def load_arrays(file: IO[bytes] | str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The arrays :func:`save_arrays` wrote, by name, with their dtypes."""
    with np.load(file, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    for entry in arrays.pop(_DTYPES_ENTRY, np.array([], str)):
        name, _, dtype = str(entry).rpartition(":")
        import ml_dtypes  # noqa: F401  (registers the "bfloat16" dtype name; slow to import)

        arrays[name] = arrays[name].view(np.dtype(dtype))
    return arrays
