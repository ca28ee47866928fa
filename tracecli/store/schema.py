"""The names of tracecli's schema migrations: what `store.db` checks a file against and `store.migrations` runs.

Kept apart from both so that neither imports the other: `store.db` must not import sqlite-utils to open a
file that is up to date, and `store.migrations` must not depend on the connection code.
"""

from __future__ import annotations

#: The schema migrations of `tracecli.store.migrations`, in order (a test keeps the two equal). Opening a
#: database compares this with `_sqlite_migrations` in plain SQL, so a file that is up to date opens
#: without importing sqlite-utils, which imports numpy and tries pandas (~100 ms of every start).
SCHEMA = ("m001_core", "m002_llm", "m003_graph", "m004_answers", "m005_wiki", "m006_lifecycle", "m007_event_vectors",
          "m008_event_frames")
#: sqlite-utils' migration set the names are recorded under in `_sqlite_migrations`
MIGRATION_SET = "tracecli"
