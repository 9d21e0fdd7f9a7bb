"""``tensorkiln``: the command line (``tools/cli/``); a bare ``tensorkiln`` runs the demo.

    tensorkiln                      # every bundled model (MLP, CNN) built, checked, timed
    tensorkiln --models mlp --repeat 200 --target "llvm -mcpu=skylake-avx512"
    tensorkiln compile model.pt2 -o model.tk && tensorkiln run model.tk --input x.npy
"""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
