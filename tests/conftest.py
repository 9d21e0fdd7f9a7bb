"""Shared pytest fixtures: an xDSL context with every dialect, a seeded numpy generator."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from xdsl.context import Context

from tensorkiln.universe import make_context


@pytest.fixture
def ctx() -> Context:
    """A Context with every dialect tensorkiln-opt loads (xDSL's and ours), loaded lazily."""
    return make_context()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A numpy Generator seeded from the test's id: repeatable, and different per test."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
