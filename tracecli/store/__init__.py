"""The SQLite store: connection, schema migrations and meta settings."""

from tracecli.store.db import Store, open_store, read_store, utc_now

__all__ = ["Store", "open_store", "read_store", "utc_now"]
