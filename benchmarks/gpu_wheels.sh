#!/usr/bin/env bash
# Run HERE (a machine with network access to PyPI), before a GPU session: fetches the
# pure-Python wheels the GPU machine lacks (xdsl and its two small dependencies) into
# .whl/ (git-ignored through .git/info/exclude), which the device run carries.
# tensorkiln itself travels as the working tree (gpu_check.sh links it as a package).
#
#   bash benchmarks/gpu_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
PY=${PYTHON:-python3}
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl xdsl==0.74.0 immutabledict==4.2.1 ordered-set==4.1.0
ls -la .whl
