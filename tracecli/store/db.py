"""Open a tracecli database: pysqlite3 with sqlite-vec loaded, WAL, foreign keys."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as sqlite3
import sqlite_vec
from sqlite_utils import Database

from tracecli.errors import ModelMismatch, StoreError
from tracecli.store.migrations import MIGRATION_SET, migrations

VECTOR_TABLES = {"note_vectors": "notes"}


def utc_now() -> str:
    """The current UTC time as ISO-8601 text with a trailing Z."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class Store:
    """A handle on one tracecli database file."""

    db: Database
    path: Path

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        return self.db.conn.execute(sql, params)

    def query(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        """Run a read query and return rows as dicts."""
        cur = self.db.conn.execute(sql, params)
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """One atomic write; nested calls become savepoints."""
        with self.db.atomic():
            yield self

    # -- meta ---------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def schema_version(self) -> int:
        return len(migrations.applied(self.db))

    # -- embeddings ---------------------------------------------------------
    def embedding_model(self) -> tuple[str, int] | None:
        model = self.get_meta("embed_model")
        dim = self.get_meta("embed_dim")
        if model is None or dim is None:
            return None
        return model, int(dim)

    def bind_embedding_model(self, model_id: str, dim: int) -> None:
        """Record the embedding model on first use; refuse a different one later."""
        current = self.embedding_model()
        if current is None:
            self.set_meta("embed_model", model_id)
            self.set_meta("embed_dim", str(dim))
            current = (model_id, dim)
        elif current != (model_id, dim):
            raise ModelMismatch(
                f"{self.path.name} holds vectors of {current[0]} ({current[1]}-d); "
                f"refusing to mix in vectors of {model_id} ({dim}-d). "
                "Use the same embedder, or a new database file."
            )
        for table in VECTOR_TABLES:
            self.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
                f"conversation_id TEXT PARTITION KEY, "
                f"embedding float[{dim}] distance_metric=cosine)"
            )

    def has_table(self, name: str) -> bool:
        return self.db[name].exists()

    def close(self) -> None:
        self.db.conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a tracecli database ({exc})") from exc
    return conn


def open_store(path: str | Path, *, create: bool = True) -> Store:
    """Open (and if needed create and upgrade) the database at `path`."""
    path = Path(path)
    if not create and not path.exists():
        raise StoreError(f"{path}: no such database; run `tracecli ingest` first")
    if path.exists() and path.is_dir():
        raise StoreError(f"{path}: is a directory, not a database file")
    conn = _connect(path)
    db = Database(conn)
    store = Store(db=db, path=path)
    try:
        known = {m.name for m in migrations._migrations}
        applied = {m.name for m in migrations.applied(db)}
        unknown = applied - known
        if unknown:
            raise StoreError(
                f"{path}: written by a newer tracecli (unknown migrations: "
                f"{', '.join(sorted(unknown))}); upgrade tracecli"
            )
        if migrations.pending(db):
            migrations.apply(db)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: not a tracecli database ({exc})") from exc
    return store


def placeholders(values: Sequence[Any]) -> str:
    """'?,?,?' for an `IN (...)` clause with one bound parameter per value."""
    return ",".join("?" * len(values))


def dumps(value: Any) -> str:
    """Compact, key-sorted JSON for columns that hold lists or objects."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


__all__ = ["Store", "open_store", "utc_now", "dumps", "placeholders", "MIGRATION_SET"]
