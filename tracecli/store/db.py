"""Open a tracecli database: pysqlite3 with sqlite-vec loaded, WAL, foreign keys.

A file is tracecli's when its `meta` table says so (the `application` row, written when tracecli
creates the file) or, for files made before that row existed, when it records tracecli's migrations.
Any other SQLite file is refused before anything is written to it: no migration, no journal-mode
switch. Commands that only read never create, upgrade or change a file.

Writes are transactions begun IMMEDIATE, so a second writer queues for the lock (up to the busy
timeout) instead of failing half-way; readers in WAL mode never wait for a writer.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import itertools
import json
import os
import re
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pysqlite3.dbapi2 as sqlite3

from tracecli.errors import BadInput, ModelMismatch, StoreBusy, StoreError, StoreReadOnly
from tracecli.store.schema import MIGRATION_SET, SCHEMA

if TYPE_CHECKING:
    from sqlite_utils import Database

VECTOR_TABLES = {"note_vectors": "notes"}
#: The meta row that marks a file as tracecli's.
APPLICATION_KEY, APPLICATION = "application", "tracecli"
#: The first 16 bytes of every SQLite 3 database file (sqlite.org/fileformat.html, "The Database Header").
SQLITE_HEADER = b"SQLite format 3\x00"
#: Seconds a write waits for another command's write lock before giving up (env TRACECLI_BUSY_TIMEOUT).
BUSY_TIMEOUT_ENV = "TRACECLI_BUSY_TIMEOUT"
DEFAULT_BUSY_TIMEOUT = 60.0
#: Seconds a write that only records or caches something (ask's answer, event vectors, the LLM ledger)
#: waits for the lock: a question is answered without it rather than after a long wait.
ASIDE_WAIT = 2.0
#: The commands that upgrade an older file (named when a reading command finds one).
WRITING_COMMANDS = "`tracecli ingest`, `build-graph`, `compile-wiki` or `forget`"


def utc_now() -> str:
    """The current UTC time as ISO-8601 text with a trailing Z."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class Store:
    """A handle on one tracecli database file."""

    conn: sqlite3.Connection
    path: Path
    _db: Database | None = field(default=None, repr=False)
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    read_only: bool = False  # opened read-only: the file (or its folder) may not be written by this process
    _savepoints: itertools.count[int] = field(default_factory=itertools.count, repr=False)

    #: which engine holds the data ("sqlite" here, "postgresql" for `tracecli.store.pg.PgStore`)
    backend = "sqlite"
    #: an SQL expression that grows with every insert into any table (SQLite's implicit rowid)
    row_version = "rowid"

    @property
    def label(self) -> str:
        """How reports name the database: the file's path, or a URL without its password."""
        return str(self.path)

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
    def transaction(self, *, wait: float | None = None) -> Iterator[Store]:
        """One atomic write; nested calls become savepoints.

        The outermost call begins IMMEDIATE: it takes the write lock first, waiting up to `wait`
        seconds (default: the busy timeout) for another command's, so a deferred read never has to
        be upgraded to a write after someone else committed. StoreBusy when the lock stays taken,
        StoreReadOnly when this process may not write the file.
        """
        conn = self.conn
        if conn.in_transaction:
            name = f"tracecli_{next(self._savepoints)}"
            conn.execute(f"SAVEPOINT {name}")
            try:
                yield self
            except BaseException:
                if conn.in_transaction:  # an error can end the whole transaction, savepoints included
                    conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
                    conn.execute(f"RELEASE SAVEPOINT {name}")
                raise
            conn.execute(f"RELEASE SAVEPOINT {name}")
            return
        self._begin_immediate(wait)
        try:
            yield self
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _begin_immediate(self, wait: float | None) -> None:
        if self.read_only:
            raise StoreReadOnly(f"{self.path}: cannot write: the file is read-only for this user")
        timeout = self.busy_timeout if wait is None else wait
        if wait is not None:
            self.conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise self.failure(exc, waited=timeout) from None
        finally:
            if wait is not None:
                self.conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")

    @contextmanager
    def snapshot(self) -> Iterator[Store]:
        """Read inside one transaction, so every query sees the same committed state while others write.

        A no-op inside a transaction. Nothing may be written in the block.
        """
        conn = self.conn
        if conn.in_transaction:
            yield self
            return
        self._begin_snapshot()
        try:
            yield self
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def _begin_snapshot(self) -> None:
        self.conn.execute("BEGIN")

    def failure(self, exc: BaseException, *, waited: float | None = None) -> StoreError:
        """The one-line error for an SQLite failure on this file (busy, read-only, damaged)."""
        return store_failure(exc, self.path, waited=self.busy_timeout if waited is None else waited)

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
        return len(self.applied_migrations())

    def applied_migrations(self) -> list[str]:
        """Names of tracecli's migrations applied to this database, in order."""
        return applied_migrations(self.conn)

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
            self.ensure_vector_table(table, dim)

    # -- what differs between the backends (tracecli.store.pg.PgStore overrides each) --------
    def has_table(self, name: str) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None

    def table_columns(self, table: str) -> list[tuple[int, str, str, int, Any, int]]:
        """(cid, name, type, notnull, default, pk) per column, as `PRAGMA table_info` gives them."""
        return [tuple(r) for r in self.execute(f"PRAGMA table_info({table})").fetchall()]

    def trigger_names(self) -> set[str]:
        return {r[0] for r in self.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}

    def data_version(self) -> int:
        """A number that moves when another connection commits a change."""
        return int(self.execute("PRAGMA data_version").fetchone()[0])

    def integrity_errors(self) -> list[str]:
        """What the engine's own page check finds wrong (empty when sound)."""
        return [r[0] for r in self.execute("PRAGMA integrity_check").fetchall() if r[0] != "ok"]

    def foreign_key_errors(self) -> list[tuple[str, Any, str, Any]]:
        """(table, rowid, parent table, key index) for every row whose parent is missing."""
        return [tuple(r) for r in self.execute("PRAGMA foreign_key_check").fetchall()]

    def vector_dim(self, table: str) -> int | None:
        """The dimension the vector table was declared with."""
        row = self.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        m = re.search(r"float\[(\d+)\]", row[0] or "") if row else None
        return int(m.group(1)) if m else None

    def vector_bytes_sql(self, column: str) -> str:
        """SQL for the size in bytes of a stored float32 vector."""
        return f"length({column})"

    def vector_value(self, vec: Sequence[float]) -> Any:
        """`vec` as the parameter a vector column takes."""
        import sqlite_vec

        return sqlite_vec.serialize_float32([float(x) for x in vec])

    def ensure_vector_table(self, table: str, dim: int) -> None:
        """Create the vector table `table` (rowid, conversation_id, embedding) for `dim`-d cosine search."""
        self.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
            f"conversation_id TEXT PARTITION KEY, embedding float[{int(dim)}] distance_metric=cosine)"
        )

    @contextmanager
    def bulk_vectors(self, table: str, rows: int) -> Iterator[Store]:
        """Around inserting `rows` rows into the vector table `table` in the current transaction: the engine may
        index them at the end instead of one by one (PostgreSQL's HNSW); nothing to do for sqlite-vec."""
        yield self

    def knn(self, table: str, vec: Sequence[float], k: int, conversation_id: str) -> list[tuple[int, float]]:
        """The k nearest (rowid, cosine distance) of one conversation in a vector table, nearest first."""
        rows = self.execute(
            f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? AND conversation_id = ? "
            "ORDER BY distance", (self.vector_value(vec), k, conversation_id)).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def fts_search(self, table: str, expr: str, *, join: str = "", where: str = "", params: Sequence[Any] = (),
                   limit: int | None = None) -> list[tuple[int, float]]:
        """(rowid, score; higher is better) of the full-text table `table` (aliased `f`) matching `expr`, best
        first, ties by rowid. `join` adds one joined table (`notes n ON n.rowid = f.rowid`), `where` a condition
        with `params`. `expr` is `tracecli.text.fts_query`'s: quoted words or phrases joined by OR."""
        sql = (self._fts_select(table, join) + (f" AND {where}" if where else "") + " ORDER BY s DESC, f.rowid"
               + (" LIMIT ?" if limit is not None else ""))
        args = [expr, *params] + ([limit] if limit is not None else [])
        return [(int(r[0]), float(r[1])) for r in self.execute(sql, args).fetchall()]

    def _fts_select(self, table: str, join: str) -> str:
        """`SELECT f.rowid, <score> AS s FROM … WHERE <match ?>` for `fts_search`."""
        # CROSS JOIN keeps the full-text match as the outer loop: with a plain JOIN the planner walks the
        # joined rows and re-runs the MATCH once per row (~16 ms instead of ~1 ms on 400 notes).
        return (f"SELECT f.rowid, -bm25({table}) AS s FROM {table} f " + (f"CROSS JOIN {join} " if join else "")
                + f"WHERE {table} MATCH ?")

    def json_each(self, expr: str, alias: str) -> str:
        """A FROM item `alias` with one row per element of the JSON array `expr`, in column `value`."""
        return f"json_each({expr}) AS {alias}"

    def json_first(self, expr: str) -> str:
        """SQL for the first element of the JSON array `expr`, as text."""
        return f"json_extract({expr}, '$[0]')"

    def next_rowid(self, table: str) -> int:
        """One more than the largest rowid of `table`, every namespace's rows counted (INTEGER PRIMARY KEY's rule)."""
        return int(self.execute(f"SELECT COALESCE(MAX(rowid), 0) + 1 FROM {table}").fetchone()[0])

    def rowids_taken(self, table: str, rowids: Sequence[int]) -> bool:
        """Whether a row of any namespace holds one of `rowids` in `table`."""
        return bool(execute_in(self, f"SELECT 1 FROM {table} WHERE rowid IN ({{marks}}) LIMIT 1", rowids))

    def bind_namespace(self, namespace: str) -> None:
        """Tell the engine which namespace this connection works in from now on.

        A no-op on SQLite, where the queries' own filters are the whole guard; on PostgreSQL the row-level
        policies then hold every statement to `namespace` (StoreError for a role bound to another one)."""

    def defer_foreign_keys(self) -> None:
        """Check foreign keys at commit, not per statement, for the rest of this transaction."""
        self.execute("PRAGMA defer_foreign_keys = ON")

    def reclaim(self, tables: Sequence[str], vacuum: bool) -> tuple[bool, str]:
        """After deleting: merge full-text segments, rewrite the file when `vacuum`, empty the WAL.

        (True when the storage was rewritten, a sentence on what that promises); sqlite3.OperationalError
        when another command holds the file.
        """
        for table in ("notes_fts", "wiki_fts"):
            if table in tables and self.has_table(table):
                self.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        if vacuum:
            self.execute("VACUUM")
        self.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if vacuum:
            return True, ("SQLite: the file was rewritten (VACUUM) and its WAL emptied, so the deleted text is gone "
                          "from it; copies and backups of the file still hold it")
        return False, ("SQLite: the deleted text's pages are free but not overwritten; run forget with --vacuum "
                       "to rewrite the file")

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


def _connect(path: Path, *, wal: bool = True, read_only: bool = False, timeout: float = DEFAULT_BUSY_TIMEOUT) -> sqlite3.Connection:
    """A connection with sqlite-vec loaded and foreign keys on; `wal` also switches the file to WAL."""
    try:
        if read_only:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, timeout=timeout)
        else:
            conn = sqlite3.connect(str(path), isolation_level=None, timeout=timeout)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot be opened ({exc})") from None
    try:
        conn.enable_load_extension(True)
        conn.load_extension(vec0_path())
        conn.enable_load_extension(False)
        if wal:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: not a tracecli database ({exc})") from exc
    return conn


def busy_timeout_from_env() -> float:
    """The busy timeout in seconds: TRACECLI_BUSY_TIMEOUT, else 60."""
    raw = os.environ.get(BUSY_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_BUSY_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86400:  # also refuses nan and inf
        raise BadInput(f"{BUSY_TIMEOUT_ENV}={raw!r}: give the seconds to wait for another command's write lock (0–86400)")
    return value


def _file_kind(path: Path) -> str:
    """'missing', 'empty' (0 bytes) or 'sqlite'; StoreError for a directory, a FIFO or device, or another format."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        raise StoreError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{path}: is a directory, not a database file")
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"{path}: is not a regular file (a FIFO, socket or device); give --db a database file")
    if st.st_size == 0:
        return "empty"
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if head != SQLITE_HEADER:
        raise StoreError(f"{path}: not a tracecli database (not an SQLite file); tracecli left it unchanged")
    return "sqlite"


def _writable(path: Path) -> bool:
    """Whether this process may write the file and create its -wal and -shm files next to it."""
    return os.access(path, os.W_OK) and os.access(path.parent if str(path.parent) else Path("."), os.W_OK)


def _identify(conn: sqlite3.Connection, path: Path) -> list[str] | None:
    """tracecli's migrations applied to the file, None for a blank SQLite file; StoreError for another program's file."""
    tables = {r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")}
    recorded: list[tuple[str, str]] = []
    if "_sqlite_migrations" in tables:
        recorded = [(r[0], r[1]) for r in conn.execute("SELECT migration_set, name FROM _sqlite_migrations ORDER BY rowid")]
    ours = [name for mset, name in recorded if mset == MIGRATION_SET]
    marked = "meta" in tables and conn.execute(
        "SELECT 1 FROM meta WHERE key = ? AND value = ?", (APPLICATION_KEY, APPLICATION)).fetchone() is not None
    if marked or (ours and "meta" in tables):
        return ours
    if not tables - {"_sqlite_migrations"} and not recorded:
        return None
    others = sorted(tables - {"_sqlite_migrations"})
    listed = ", ".join(others[:5]) + (" …" if len(others) > 5 else "")
    raise StoreError(f"{path}: not a tracecli database (it holds other tables: {listed or 'none'}); "
                     "tracecli left it unchanged — give --db another file")


def is_pg_url(target: object) -> bool:
    """Whether `--db` names a PostgreSQL database (a `postgresql://` URL) rather than an SQLite file."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def open_store(path: str | Path, *, create: bool = True, upgrade: bool = True, busy_timeout: float | None = None) -> Store:
    """Open the tracecli SQLite file at `path` (`tracecli.store.open_store` also takes a PostgreSQL URL): with `create`, make it when missing; with `upgrade`, apply pending migrations.

    Commands that only read pass create=False, upgrade=False: then nothing is ever written, and an
    older file is refused with the commands that upgrade it. A file that is not tracecli's is refused
    before anything is written, whatever the flags. A file this process may not write is opened
    read-only (its writes raise StoreReadOnly).
    """
    path = Path(path)
    if not path.parent.is_dir():
        missing = "is not a directory" if path.parent.exists() else "does not exist"
        raise StoreError(f"{path}: directory {path.parent} {missing}")
    timeout = busy_timeout_from_env() if busy_timeout is None else busy_timeout
    kind = _file_kind(path)
    if kind == "missing" and not create:
        raise StoreError(f"{path}: no such database; run `tracecli ingest` first")
    if kind == "empty" and not create:
        # SQLite would take an empty file for a new database and write a schema into it
        raise StoreError(f"{path}: empty file, not a tracecli database; run `tracecli ingest` to create one")
    read_only = kind != "missing" and not _writable(path)
    conn = _connect(path, wal=False, read_only=read_only, timeout=timeout)
    store = Store(conn=conn, path=path, busy_timeout=timeout, read_only=read_only)
    try:
        applied = _identify(conn, path) if kind == "sqlite" else None
        if applied is None and not create:
            raise StoreError(f"{path}: holds no tracecli data yet; run `tracecli ingest` first")
        _check_known(path, applied or [])
        if applied is None or set(applied) != set(SCHEMA):
            if not upgrade:
                raise StoreError(f"{path}: written by an older tracecli (schema v{len(applied or [])}, this one reads "
                                 f"v{len(SCHEMA)}); run {WRITING_COMMANDS} once to upgrade it")
            _migrate(store)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise store.failure(exc) from None
    except BaseException:
        conn.close()
        raise
    return store


def _check_known(path: Path, applied: Sequence[str]) -> None:
    unknown = set(applied) - set(SCHEMA)
    if unknown:
        raise StoreError(
            f"{path}: written by a newer tracecli (unknown migrations: "
            f"{', '.join(sorted(unknown))}); upgrade tracecli"
        )


def _migrate(store: Store) -> None:
    """Make a blank file tracecli's, or bring an older one up to date, holding the write lock throughout."""
    conn = store.conn
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    with store.transaction():
        # again under the lock: another command may have created or upgraded the file meanwhile
        applied = _identify(conn, store.path) or []
        _check_known(store.path, applied)
        if set(applied) != set(SCHEMA):
            from tracecli.store.migrations import migrations

            migrations.apply(store.db)
            store.set_meta(APPLICATION_KEY, APPLICATION)


def store_failure(exc: BaseException, path: str | Path, *, waited: float | None = None) -> StoreError:
    """One line for an SQLite error (or undecodable text) met while using the database at `path`."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    path = getattr(path, "name", path) if is_pg_url(path) else path  # a URL's password is never shown
    if isinstance(exc, UnicodeDecodeError):
        return StoreError(f"{path}: holds text that is not valid UTF-8 (byte {exc.start} of a value): the file is "
                          "damaged; restore it from a copy")
    if name.startswith("SQLITE_BUSY") or name.startswith("SQLITE_LOCKED") or "database is locked" in str(exc):
        wait = f" for {waited:g} s" if waited is not None else ""
        return StoreBusy(f"{path}: another command is writing it and held the lock{wait}; try again when it "
                         f"finishes (or set {BUSY_TIMEOUT_ENV} to wait longer)")
    if name.startswith("SQLITE_READONLY") or "readonly database" in str(exc):
        return StoreReadOnly(f"{path}: cannot write: the file is read-only for this user")
    if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or "malformed" in str(exc) or "not a database" in str(exc):
        return StoreError(f"{path}: the database file is damaged ({exc}); restore it from a copy")
    return StoreError(f"{path}: database error ({exc})")


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    """Names of tracecli's migrations applied to the file, in order (sqlite-utils' `Migrations.applied`)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlite_migrations'").fetchone() is None:
        return []
    rows = conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY rowid", (MIGRATION_SET,))
    return [r[0] for r in rows]


def placeholders(values: Sequence[Any]) -> str:
    """'?,?,?' for an `IN (...)` clause with one bound parameter per value."""
    return ",".join("?" * len(values))


def like_escape(text: str) -> str:
    """`text` for a LIKE pattern written with `ESCAPE '\\'`: its %, _ and \\ match only themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


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


def upsert_set(key: str, columns: Sequence[str]) -> str:
    """`ON CONFLICT(key) DO UPDATE SET c = excluded.c, …`: an upsert both SQLite and PostgreSQL run."""
    return f"ON CONFLICT({key}) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in columns)


def dumps(value: Any) -> str:
    """Compact, key-sorted JSON for columns that hold lists or objects."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


__all__ = ["Store", "open_store", "store_failure", "utc_now", "dumps", "upsert_set", "is_pg_url", "placeholders", "like_escape", "execute_in", "MIGRATION_SET",
           "ASIDE_WAIT"]
