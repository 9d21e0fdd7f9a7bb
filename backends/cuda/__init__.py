"""The CUDA backend: gpu dialect -> CUDA C (``printer.py``), the host side as Python
(``host.py``), loading and launching with cupy (``runtime.py``, imported only for
``tk.build(..., target="cuda")``), and the compilation pipeline (``pipeline.py``)."""
