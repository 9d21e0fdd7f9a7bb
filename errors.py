"""Errors shared across the compiler's layers."""

from __future__ import annotations


class UnsupportedOperatorError(NotImplementedError):
    """A model uses ops that cannot be imported or compiled; lists them all at once."""
