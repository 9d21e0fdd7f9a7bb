"""Measuring on a Dask cluster: a user with identical machines measures in parallel.

Why Dask rather than Ray: it is pure Python and light to install, its
``Client.get_executor()`` *is* a ``concurrent.futures`` executor (what
:class:`~tensorkiln.tuning.runner.Runner` takes), and ``LocalCluster`` gives tests a
real scheduler and workers in-process. Dask workers do not isolate a call that
segfaults, so each candidate runs in a fresh process on its worker
(``isolate=True``)::

    from dask.distributed import Client
    runner = dask_runner(Client("tcp://scheduler:8786"))
    tk.tune(module, trials=500, runner=runner)
"""

from __future__ import annotations

from typing import Any

from .runner import Runner


def dask_runner(client: Any, **options: Any) -> Runner:
    """A Runner measuring on the workers of a ``dask.distributed.Client``."""
    try:
        import distributed  # noqa: F401
    except ImportError as error:
        raise ImportError("the Dask runner needs dask.distributed (pip install 'tensorkiln[tuning]')") from error
    options.setdefault("isolate", True)
    return Runner(client.get_executor(pure=False), **options)
