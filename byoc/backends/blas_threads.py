"""The thread count of the BLAS the ``blas`` backend calls, kept equal to tensorkiln's.

An optimized BLAS runs ``sgemm`` on its own threads (OpenBLAS: as many as cores, which
spin after a call). Next to tensorkiln's pool that oversubscribes the cores, and with
another process busy on a core it collapses: a BLAS-offloaded MLP took 0.21 ms quiet and
47 ms with the second core busy (0.38 ms with ``OPENBLAS_NUM_THREADS=1``). So the glue
code sets the BLAS's thread count to tensorkiln's current one (``tk_num_threads``:
``set_num_threads``, or the default that backs off on a busy machine,
``runtime/threads.py``) before its calls, whenever that count changed since its last
call: the library's own setter, found among the libraries loaded in this process
(scipy's bundled OpenBLAS exports ``scipy_openblas_set_num_threads``; a system OpenBLAS
``openblas_set_num_threads``; MKL ``MKL_Set_Num_Threads``), as threadpoolctl does.
"""

from __future__ import annotations

import ctypes
import os
from functools import lru_cache

#: (setter, getter) names by library family, the prefixed ones first
THREAD_FUNCTIONS = (
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("MKL_Set_Num_Threads", "MKL_Get_Max_Threads"),
)
#: words in the file name of a library that may be the BLAS
_BLAS_WORDS = ("openblas", "mkl_rt", "blas")


def loaded_libraries() -> list[str]:
    """Paths of the shared libraries loaded in this process (Linux: ``/proc/self/maps``)."""
    try:
        with open("/proc/self/maps") as f:
            paths = [line.split(None, 5)[-1].strip() for line in f if "/" in line]
    except OSError:
        return []
    return list(dict.fromkeys(p for p in paths if ".so" in os.path.basename(p)))


@lru_cache(maxsize=1)
def blas_thread_functions() -> tuple[int, int, str] | None:
    """(setter address, getter address, library path) of the BLAS scipy's ``sgemm``
    runs on, or None when none is found (its threads then follow its own controls).
    Libraries under scipy's directories come first (numpy's OpenBLAS is another copy)."""
    candidates = [p for p in loaded_libraries() if any(w in os.path.basename(p).lower() for w in _BLAS_WORDS)]
    candidates.sort(key=lambda p: "scipy" not in p)
    for path in candidates:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for setter, getter in THREAD_FUNCTIONS:
            if hasattr(library, setter) and hasattr(library, getter):
                address = ctypes.cast(getattr(library, setter), ctypes.c_void_p).value
                read = ctypes.cast(getattr(library, getter), ctypes.c_void_p).value
                return address, read, path
    return None


def blas_num_threads() -> int | None:
    """The BLAS's current thread count (None: not known here)."""
    found = blas_thread_functions()
    if found is None:
        return None
    return ctypes.CFUNCTYPE(ctypes.c_int)(found[1])()


__all__ = ["THREAD_FUNCTIONS", "blas_num_threads", "blas_thread_functions", "loaded_libraries"]
