"""The library's exception hierarchy; the CLI maps each class to an exit code."""

from __future__ import annotations


class TraceError(Exception):
    """Base class of every error tracecli raises on purpose."""

    exit_code = 2


class BadInput(TraceError):
    """Raised when an input file or argument cannot be used (exit 2)."""


class NotFound(TraceError):
    """Raised when a named conversation, answer, event or page does not exist (exit 2)."""


class StoreError(TraceError):
    """Raised when the database file cannot be opened or is of an unknown schema (exit 2)."""


class StoreBusy(StoreError):
    """Raised when another command held the database's write lock longer than the busy timeout (exit 2)."""


class StoreReadOnly(StoreError):
    """Raised when a command must write to a database file it may only read (exit 2)."""


class ModelMismatch(TraceError):
    """Raised when vectors of one embedding model would be mixed with another's (exit 2)."""


class ProviderError(TraceError):
    """Raised when a configured provider (LLM or embeddings endpoint) cannot be used (exit 2)."""


class NoAnswer(TraceError):
    """Raised when there is not enough evidence to answer (exit 1)."""

    exit_code = 1


class CheckFailed(TraceError):
    """Raised when an audit or doctor check fails (exit 1)."""

    exit_code = 1
