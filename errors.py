"""Errors shared across the compiler's layers."""

from __future__ import annotations


class UnsupportedOperatorError(NotImplementedError):
    """A model uses ops that cannot be imported or compiled; lists them all at once."""


class UnreadableInputError(ValueError):
    """IR text that cannot be read at all: not UTF-8 (a binary file?), or nested too
    deeply for the parser (which recurses once per level of nesting)."""


def unreadable_input(error: BaseException) -> str | None:
    """What is wrong with an input that raised ``error`` while being read or parsed, in
    words (``"not UTF-8 text (byte 24: ...); is it a binary file?"``), or None when
    ``error`` is not one of those failures (a parse error says what it is itself)."""
    if isinstance(error, RecursionError):
        return "nested too deeply to be parsed (a constant or region nested hundreds of levels or more?)"
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 text (byte {error.start}: {error.reason}); is it a binary file?"
    return None
