"""The ``tensorkiln`` command: compile, run, benchmark, tune and draw models.

    tensorkiln                                   # the demo: bundled models built, checked, timed
    tensorkiln compile model.pt2 -o model.tk     # .pt2 (torch.export.save), .onnx or .mlir
    tensorkiln run model.tk --input x.npy --output y.npy
    tensorkiln bench model.pt2 --compare torch   # a table: tensorkiln vs torch eager
    tensorkiln tune model.mlir --trials 64 --log tune.jsonl
    tensorkiln show model.tk --svg graph.svg     # the compiled graph, one box per kernel

Exit codes: 0 success, 1 a user error (one line on stderr; ``--traceback`` shows the
Python traceback), 2 a usage error (argparse's).
"""

from .main import main

__all__ = ["main"]
