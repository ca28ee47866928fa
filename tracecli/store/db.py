"""Open a tracecli database: pysqlite3 with sqlite-vec loaded, WAL, foreign keys."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pysqlite3.dbapi2 as sqlite3

from tracecli.errors import ModelMismatch, StoreError
from tracecli.store.schema import MIGRATION_SET, SCHEMA

if TYPE_CHECKING:
    from sqlite_utils import Database

VECTOR_TABLES = {"note_vectors": "notes"}

def utc_now() -> str:
    """The current UTC time as ISO-8601 text with a trailing Z."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class Store:
    """A handle on one tracecli database file."""

    conn: sqlite3.Connection
    path: Path
    _db: Database | None = field(default=None, repr=False)

    @property
    def db(self) -> Database:
        """sqlite-utils' view of the connection, made on first use (commands that only read never need it)."""
        if self._db is None:
            from sqlite_utils import Database

            self._db = Database(self.conn)
        return self._db

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def query(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        """Run a read query and return rows as dicts."""
        cur = self.conn.execute(sql, params)
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
        return len(applied_migrations(self.conn))

    # -- embeddings ---------------------------------------------------------
    def embedding_model(self) -> tuple[str, int] | None:
        model = self.get_meta("embed_model")
        dim = self.get_meta("embed_dim")
        if model is None or dim is None:
            return None
        return model, int(dim)

    def model_mismatch(self, model_id: str, dim: int) -> ModelMismatch:
        """The error for vectors of `model_id` (`dim`-d) offered to a file bound to another model."""
        current = self.embedding_model() or ("?", 0)
        return ModelMismatch(
            f"{self.path.name} holds vectors of {current[0]} ({current[1]}-d); "
            f"refusing to mix in vectors of {model_id} ({dim}-d). "
            "Use the same embedder, or a new database file."
        )

    def bind_embedding_model(self, model_id: str, dim: int) -> None:
        """Record the embedding model on first use; refuse a different one later."""
        current = self.embedding_model()
        if current is None:
            self.set_meta("embed_model", model_id)
            self.set_meta("embed_dim", str(dim))
            current = (model_id, dim)
        elif current != (model_id, dim):
            raise self.model_mismatch(model_id, dim)
        for table in VECTOR_TABLES:
            self.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
                f"conversation_id TEXT PARTITION KEY, "
                f"embedding float[{dim}] distance_metric=cosine)"
            )

    def has_table(self, name: str) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def vec0_path() -> str:
    """Where sqlite-vec's loadable extension lies: `sqlite_vec.loadable_path()` without importing `sqlite_vec`.

    The package's `__init__` imports numpy (about 90 ms) for an optional helper; commands that only read
    (stats, trace, wiki show) need neither, and pay that on every start. The extension sits next to it.
    """
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        raise StoreError("the sqlite-vec package is not installed; pip install sqlite-vec")
    return os.path.normpath(os.path.join(os.path.dirname(spec.origin), "vec0"))


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
        conn.enable_load_extension(True)
        conn.load_extension(vec0_path())
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
    if not path.parent.is_dir():
        missing = "is not a directory" if path.parent.exists() else "does not exist"
        raise StoreError(f"{path}: directory {path.parent} {missing}")
    if not create and path.is_file() and path.stat().st_size == 0:
        # SQLite would take an empty file for a new database and write a schema into it
        raise StoreError(f"{path}: empty file, not a tracecli database; run `tracecli ingest` to create one")
    if not create and not path.exists():
        raise StoreError(f"{path}: no such database; run `tracecli ingest` first")
    if path.exists() and path.is_dir():
        raise StoreError(f"{path}: is a directory, not a database file")
    conn = _connect(path)
    store = Store(conn=conn, path=path)
    try:
        applied = applied_migrations(conn)
        unknown = set(applied) - set(SCHEMA)
        if unknown:
            raise StoreError(
                f"{path}: written by a newer tracecli (unknown migrations: "
                f"{', '.join(sorted(unknown))}); upgrade tracecli"
            )
        if set(applied) != set(SCHEMA):
            from tracecli.store.migrations import migrations

            migrations.apply(store.db)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: not a tracecli database ({exc})") from exc
    return store


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    """Names of tracecli's migrations applied to the file, in order (sqlite-utils' `Migrations.applied`)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlite_migrations'").fetchone() is None:
        return []
    rows = conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY rowid", (MIGRATION_SET,))
    return [r[0] for r in rows]


def placeholders(values: Sequence[Any]) -> str:
    """'?,?,?' for an `IN (...)` clause with one bound parameter per value."""
    return ",".join("?" * len(values))


#: values bound per statement by `execute_in` (SQLite allows 32,766 parameters; short lists keep plans simple)
IN_CHUNK = 500


def execute_in(store: Store, sql: str, values: Sequence[Any], chunk: int = IN_CHUNK) -> list[tuple[Any, ...]]:
    """Run `sql` once per chunk of `values` and return every row (none for a DELETE or UPDATE).

    `sql` marks where the chunk's placeholders go with `{marks}`; each occurrence binds the chunk again.
    """
    values = list(values)
    times = sql.count("{marks}")
    rows: list[tuple[Any, ...]] = []
    for start in range(0, len(values), chunk):
        part = values[start : start + chunk]
        rows.extend(store.execute(sql.replace("{marks}", placeholders(part)), part * times).fetchall())
    return rows


def dumps(value: Any) -> str:
    """Compact, key-sorted JSON for columns that hold lists or objects."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


__all__ = ["Store", "open_store", "utc_now", "dumps", "placeholders", "execute_in", "MIGRATION_SET"]
