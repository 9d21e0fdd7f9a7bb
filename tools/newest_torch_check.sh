#!/usr/bin/env bash
# The torch frontend's tests on the newest torch the package registry serves (issue #39 item 7),
# for a nightly job, so that a torch release that breaks the import is caught the day it lands.
# CI (.ci/run) tests the pinned torch of the README's test command; this is the other half.
#
#   tools/newest_torch_check.sh                 # a fresh venv in $TK_NEWEST_TORCH_VENV (default /tmp/tk-newest-torch)
#   TK_TORCH_SPEC='torch==2.15.0' tools/newest_torch_check.sh
#
# Installing torch from the registry is a CUDA build of ~5.5 GB (about 2 minutes from a local
# pip cache on a 2-core machine; a download first without one). The tests take about 7 minutes
# on 2 shared cores (229 tests, measured on torch 2.14.1). Exit status: pytest's.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${TK_NEWEST_TORCH_VENV:-/tmp/tk-newest-torch}
spec=${TK_TORCH_SPEC:-torch}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade "$spec" -e '.[test]'
"$venv/bin/python" -c 'import torch; print("newest torch check: torch", torch.__version__)'
# the frontend tests torch releases have broken before: decompositions (test_torch_ops_core),
# the shape environment (test_symbolic_*, test_data_dependent), Dim names, torch's warnings
exec "$venv/bin/pytest" -n 2 -q -p no:cacheprovider \
  tests/test_torch_frontend.py tests/test_torch_ops_core.py tests/test_symbolic_slicing.py \
  tests/test_symbolic_shapes.py tests/test_data_dependent.py tests/test_torch_dim_names.py \
  tests/test_torch_import_quiet.py "$@"
