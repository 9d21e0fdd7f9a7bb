"""Shared pytest fixtures: an xDSL context with every dialect, a seeded numpy generator."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import zlib

import numpy as np
import pytest
from xdsl.context import Context

from tensorkiln.driver import compile_cache
from tensorkiln.universe import make_context

# The disk compile cache of every build the tests make goes to a fresh directory of this
# run (never the user's ~/.cache: CI runs as root), removed at exit by the process that
# made it. pytest-xdist's workers inherit it from the controller (which loads this file
# first), so object code one worker compiled is not compiled again by the other.
_RUN_CACHE = "TK_TEST_RUN_CACHE_DIR"
if _RUN_CACHE not in os.environ:
    os.environ[_RUN_CACHE] = tempfile.mkdtemp(prefix="tk-test-cache-")
    atexit.register(shutil.rmtree, os.environ[_RUN_CACHE], ignore_errors=True)
os.environ["TK_CACHE_DIR"] = os.environ[_RUN_CACHE]


@pytest.fixture
def ctx() -> Context:
    """A Context with every dialect tensorkiln-opt loads (xDSL's and ours), loaded lazily."""
    return make_context()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A numpy Generator seeded from the test's id: repeatable, and different per test."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh, empty disk compile cache for this test (its counters cleared), the run's after."""
    compile_cache.set_cache_dir(tmp_path / "cache")
    compile_cache.clear_cache_info()
    yield tmp_path / "cache"
    compile_cache.reset_cache_dir()


@pytest.fixture
def no_disk_cache():
    """No disk compile cache for this test (every pass runs), the run's after. (Restoring
    with reset_cache_dir, not set_cache_dir(previous): that would pin the directory and
    make later tests' TK_CACHE settings moot.)"""
    compile_cache.set_cache_dir(None)
    yield
    compile_cache.reset_cache_dir()
