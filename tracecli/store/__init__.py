"""The store: one interface (`Store`), two backends — an SQLite file (`db`) or a PostgreSQL database (`pg`).

`open_store` and `read_store` take either: a `postgresql://` URL opens PostgreSQL, anything else is a file path.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tracecli.store import db
from tracecli.store.db import Store, busy_timeout_from_env, is_pg_url, utc_now


def open_store(target: str | Path, *, create: bool = True, upgrade: bool = True,
               busy_timeout: float | None = None) -> Store:
    """Open the tracecli database at `target`: with `create`, make it when missing; with `upgrade`, apply
    pending migrations. Commands that only read pass create=False, upgrade=False and never write."""
    if is_pg_url(target):
        from tracecli.store.pg import open_pg_store

        return open_pg_store(str(target), create=create, upgrade=upgrade,
                             busy_timeout=busy_timeout_from_env() if busy_timeout is None else busy_timeout)
    return db.open_store(target, create=create, upgrade=upgrade, busy_timeout=busy_timeout)


@contextmanager
def read_store(target: str | Path) -> Iterator[Store]:
    """The store for a command that only reads: never created or upgraded, one consistent snapshot throughout."""
    with open_store(target, create=False, upgrade=False) as store, store.snapshot():
        yield store


__all__ = ["Store", "open_store", "read_store", "utc_now", "is_pg_url"]
