"""The PostgreSQL backend: the same `Store` over psycopg 3, a connection pool and pgvector.

`--db postgresql://…` (or `TRACECLI_DB`) opens this backend; any other value is an SQLite file path.

Stage code writes one SQL dialect, the subset SQLite and PostgreSQL share (`?` parameters,
`INSERT … ON CONFLICT`, `RETURNING`, `COALESCE`), and calls the store for what differs:

* parameters: `PgConnection` rewrites `?` to psycopg's `%s` (and a literal `%` to `%%`);
* `rowid`: the tables that name one (`notes`, `wiki_pages`, the full-text and vector tables) get a
  real `rowid` column, filled like SQLite's INTEGER PRIMARY KEY (one more than the largest) when an
  insert leaves it out; `Store.row_version` stands in for the implicit rowid of other tables;
* full-text search: each FTS5 table becomes a table with a generated `tsvector` column and a GIN index,
  queried with `websearch_to_tsquery` and ranked by `ts_rank_cd` (`Store.fts_search`);
* vectors: pgvector `vector(dim)` columns with an HNSW index on cosine distance (`Store.knn`); they
  read back as the float32 bytes sqlite-vec returns, so code that decodes vectors does not change;
* JSON functions (`Store.json_each`, `Store.json_first`), schema introspection (`Store.table_columns`,
  `Store.has_table`, `Store.trigger_names`), migrations (`Store.applied_migrations`);
* errors: psycopg's exceptions are raised as the `sqlite3` module's classes of the same meaning
  (IntegrityError, OperationalError, …), so the callers' error handling is the same on both.

Transactions keep SQLite's semantics: one writer at a time (a transaction-scoped advisory lock,
waited for up to the busy timeout, then StoreBusy), every write all-or-nothing, readers see one
committed snapshot (REPEATABLE READ) and never wait for the writer.

The schema is the SQLite migrations themselves, run through `PgSchema`, which translates their DDL
(types, FTS5 and vec0 tables, triggers); each applied migration is recorded in `tracecli_migrations`.
PostgreSQL's own migrations (`PG_SCHEMA`) follow them, recorded there under `PG_MIGRATION_SET`.

Row-level security per namespace (`p001_namespace_rls`): every table that holds a namespace's rows
has a policy that shows (and lets a statement write) only the rows of the namespace
`tracecli_namespace()` names: the namespace the connected login role is bound to in
`tracecli_role_namespaces` (an administrator's choice the role cannot change), else the session
setting `tracecli.namespace`, which `PgStore.bind_namespace` sets to each command's namespace. The
tables' owner (the role that ran the migrations) bypasses the policies as PostgreSQL owners do, so a
deployment that runs tracecli as the owner sees no change; a role given access with `tracecli_grant`
is held to its namespace by the server, whatever SQL it sends. `TRACECLI_PG_RLS=1` makes tracecli
refuse to run as a role that would bypass the policies (the owner, a superuser, BYPASSRLS).
"""

from __future__ import annotations

import re
import threading
import zlib
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pysqlite3.dbapi2 as sqlite3

from tracecli.errors import StoreBusy, StoreError, StoreReadOnly
from tracecli.store.db import APPLICATION, APPLICATION_KEY, DEFAULT_BUSY_TIMEOUT, WRITING_COMMANDS, Store, utc_now
from tracecli.store.schema import MIGRATION_SET, SCHEMA

#: pool size per URL (one process); env TRACECLI_PG_POOL overrides
DEFAULT_POOL_MAX = 10
#: the advisory lock every write transaction holds, so writers queue as on SQLite
WRITE_LOCK_KEY = zlib.crc32(b"tracecli-writer")
FTS_CONFIG = "english"
#: a load of this many vectors or more that at least doubles its table builds the HNSW index once, at the end
BULK_VECTOR_ROWS = 1000
#: memory for that build (the session's default, often 64 MB, is less than 50K 384-d vectors and their graph)
BULK_INDEX_MEMORY = "512MB"
#: the set PostgreSQL's own migrations (`PG_MIGRATIONS`) are recorded under in `tracecli_migrations`
PG_MIGRATION_SET = "tracecli-pg"
#: the session setting that names the namespace a connection works in (read by the row-level policies)
NAMESPACE_SETTING = "tracecli.namespace"
#: env: "1" refuses to run as a role that bypasses row-level security
RLS_ENV = "TRACECLI_PG_RLS"
#: tables that hold no namespace's rows: the schema's bookkeeping and the LLM call ledger (counts, no text)
GLOBAL_TABLES = frozenset({"meta", "tracecli_migrations", "tracecli_role_namespaces", "llm_ledger"})
#: tables without a conversation id or a namespace: a row belongs to the namespace of its parent row
PARENT_ROWS = {"answer_items": ("answer_id", "answers", "id"), "event_notes": ("event_id", "events", "id"),
               "session_topics": ("session_id", "sessions", "id"), "snapshot_claims": ("snapshot_id", "snapshots", "id"),
               "wiki_page_trajectories": ("page_id", "wiki_pages", "id"), "notes_fts": ("rowid", "notes", "rowid")}


class PgUrl(str):
    """A PostgreSQL URL; `.name` is what messages show (the password left out)."""

    @property
    def name(self) -> str:  # like Path.name, what messages call the database
        parts = urlsplit(str(self))
        netloc = parts.netloc.rsplit("@", 1)
        host = netloc[-1]
        user = netloc[0].split(":", 1)[0] if len(netloc) == 2 else ""
        shown = f"{user}@{host}" if user else host
        return urlunsplit((parts.scheme, shown, parts.path, "", ""))


# -- parameters and errors -------------------------------------------------------------
@lru_cache(maxsize=4096)
def to_pyformat(sql: str) -> str:
    """`?` placeholders outside quoted text become `%s`; every `%` becomes `%%` (psycopg's literal percent)."""
    out: list[str] = []
    quote = ""
    for ch in sql:
        if ch == "%":
            out.append("%%")
            continue
        if quote:
            if ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "?":
            out.append("%s")
            continue
        out.append(ch)
    return "".join(out)


def _as_sqlite_error(exc: BaseException) -> BaseException:
    """psycopg's error as the sqlite3 class of the same meaning (what stage code already catches)."""
    import psycopg

    text = f"{exc}".strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return sqlite3.OperationalError(f"database is locked ({text})")
    if "row-level security" in text:  # a write into another namespace than the connection's (see PARENT_ROWS)
        return sqlite3.IntegrityError(f"{text}: this role may write only its own namespace's rows")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction | psycopg.errors.InsufficientPrivilege):
        return sqlite3.OperationalError(f"attempt to write a readonly database ({text})")
    for pg_cls, lite_cls in ((psycopg.IntegrityError, sqlite3.IntegrityError),
                             (psycopg.OperationalError, sqlite3.OperationalError),
                             (psycopg.ProgrammingError, sqlite3.OperationalError),
                             (psycopg.DataError, sqlite3.DataError),
                             (psycopg.InternalError, sqlite3.DatabaseError)):
        if isinstance(exc, pg_cls):
            return lite_cls(text)
    return sqlite3.DatabaseError(text)


@contextmanager
def _translated() -> Iterator[None]:
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise _as_sqlite_error(exc) from exc


class PgCursor:
    """psycopg's cursor as sqlite3's behaves: fetching from a statement that returns no rows gives none."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    @property
    def description(self) -> Any:
        return self._cur.description

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    def fetchone(self) -> Any:
        if self._cur.description is None:
            return None
        with _translated():
            return self._cur.fetchone()

    def fetchall(self) -> list[Any]:
        if self._cur.description is None:
            return []
        with _translated():
            return self._cur.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class PgConnection:
    """The part of an sqlite3 connection stage code uses, over one pooled psycopg connection."""

    def __init__(self, raw: Any, pool: Any) -> None:
        self.raw = raw
        self._pool = pool
        self.total_changes = 0  # rows this connection inserted, updated or deleted (like sqlite3's)

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw is not None and self.raw.info.transaction_status != TransactionStatus.IDLE

    def execute(self, sql: str, params: Any = ()) -> Any:
        cur = self.raw.cursor()
        with _translated():
            if params:
                cur.execute(to_pyformat(sql), list(params))
            else:
                cur.execute(sql)
        if cur.description is None and cur.rowcount > 0:
            self.total_changes += cur.rowcount
        return PgCursor(cur)

    def executemany(self, sql: str, rows: Any) -> Any:
        rows = [list(r) for r in rows]
        cur = self.raw.cursor()
        if rows:
            with _translated():
                cur.executemany(to_pyformat(sql), rows)
            self.total_changes += max(cur.rowcount, 0)
        return PgCursor(cur)

    def close(self) -> None:
        if self.raw is None:
            return
        raw, self.raw = self.raw, None
        if self._pool is None:
            raw.close()
        else:
            self._pool.putconn(raw)  # the pool rolls back anything left open


# -- types -----------------------------------------------------------------------------
def _register_types(conn: Any) -> None:
    """bool as 0/1 (SQLite has no booleans), numeric as int/float, pgvector's vector as float32 bytes."""
    from psycopg.adapt import Dumper, Loader
    from psycopg.types import TypeInfo

    class BoolAsInt(Dumper):
        oid = conn.adapters.types["int8"].oid

        def dump(self, obj: bool) -> bytes:
            return b"1" if obj else b"0"

    class NumericAsNumber(Loader):
        def load(self, data: Any) -> int | float:
            text = bytes(data).decode()
            return int(text) if text.lstrip("-").isdigit() else float(text)

    class VectorAsBytes(Loader):
        def load(self, data: Any) -> bytes:
            text = bytes(data).decode()
            return np.array(text[1:-1].split(",") if len(text) > 2 else [], dtype=np.float32).tobytes()

    conn.adapters.register_dumper(bool, BoolAsInt)
    conn.adapters.register_loader("numeric", NumericAsNumber)
    info = TypeInfo.fetch(conn, "vector")
    if info is not None:
        conn.adapters.register_loader(info.oid, VectorAsBytes)


def vector_text(vec: Sequence[float]) -> str:
    """pgvector's text form of a float32 vector, exact (9 significant digits round-trip a float32)."""
    return "[" + ",".join(f"{float(x):.9g}" for x in np.asarray(vec, dtype=np.float32)) + "]"


# -- the schema: SQLite's migrations translated ----------------------------------------
_TRIGGER = re.compile(
    r"CREATE TRIGGER (\w+) BEFORE (UPDATE|DELETE) ON (\w+)\s+(?:WHEN (.*?))?\s*BEGIN SELECT RAISE\(ABORT, '([^']*)'\); END",
    re.S | re.I)
_FTS = re.compile(r"CREATE VIRTUAL TABLE (\w+) USING fts5\((.*)\)", re.S | re.I)
_INT_PK = re.compile(r"^\s*(\w+) INTEGER PRIMARY KEY,", re.M)


def _rowid_trigger(table: str, column: str) -> list[str]:
    """SQLite's INTEGER PRIMARY KEY: an insert that leaves the key out gets one more than the largest."""
    fn = f"tracecli_{table}_{column}"
    return [
        f"CREATE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"IF NEW.{column} IS NULL THEN SELECT COALESCE(MAX({column}), 0) + 1 INTO NEW.{column} FROM {table}; END IF; "
        f"RETURN NEW; END $$",
        f"CREATE TRIGGER {fn} BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {fn}()",
    ]


def translate_ddl(sql: str) -> list[str]:
    """One SQLite DDL statement of `tracecli.store.migrations` as PostgreSQL statements."""
    sql = sql.strip()
    if m := _FTS.match(sql):
        table = m.group(1)
        cols = [c.strip() for c in m.group(2).split(",") if c.strip() and not c.strip().startswith("tokenize")]
        names = [c.split()[0] for c in cols]
        indexed = [c.split()[0] for c in cols if "UNINDEXED" not in c.upper()]
        doc = " || ' ' || ".join(f"coalesce({c}, '')" for c in indexed)
        return [
            f"CREATE TABLE {table} (rowid BIGINT PRIMARY KEY, {', '.join(f'{n} TEXT' for n in names)}, "
            f"tsv tsvector GENERATED ALWAYS AS (to_tsvector('{FTS_CONFIG}', {doc})) STORED)",
            f"CREATE INDEX {table}_tsv ON {table} USING GIN (tsv)",
        ]
    if m := _TRIGGER.match(sql):
        name, when, table, cond, message = m.groups()
        cond = re.sub(r"\bIS NOT\b", "IS DISTINCT FROM", cond or "TRUE")
        ret = "OLD" if when.upper() == "DELETE" else "NEW"
        return [
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"IF {cond} THEN RAISE EXCEPTION '{message}' USING ERRCODE = 'integrity_constraint_violation'; END IF; "
            f"RETURN {ret}; END $$",
            f"CREATE TRIGGER {name} BEFORE {when} ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()",
        ]
    if m := re.match(r"DROP TRIGGER (\w+)$", sql, re.I):
        return [f"DO $$ DECLARE t regclass; BEGIN SELECT tgrelid::regclass INTO t FROM pg_trigger "
                f"WHERE tgname = '{m.group(1)}'; EXECUTE format('DROP TRIGGER {m.group(1)} ON %s', t); END $$"]
    if m := re.match(r"PRAGMA table_info\((\w+)\)$", sql, re.I):
        return [f"SELECT ordinal_position, column_name FROM information_schema.columns "
                f"WHERE table_schema = current_schema() AND table_name = '{m.group(1)}'"]
    extra: list[str] = []
    if m := re.match(r"CREATE TABLE (\w+)", sql, re.I):
        pk = _INT_PK.search(sql)
        if pk:
            extra = _rowid_trigger(m.group(1), pk.group(1))
            sql = _INT_PK.sub(lambda k: f"{k.group(1)} BIGINT PRIMARY KEY,", sql)
    sql = re.sub(r"\bINTEGER\b", "BIGINT", sql)
    sql = re.sub(r"\bREAL\b", "DOUBLE PRECISION", sql)
    sql = re.sub(r"\bBLOB\b", "BYTEA", sql)
    # deferrable, so `forget` can defer the checks to its commit as SQLite's defer_foreign_keys does
    sql = re.sub(r"(REFERENCES \w+\(\w+\)(?: ON DELETE CASCADE)?)", r"\1 DEFERRABLE INITIALLY IMMEDIATE", sql)
    return [sql, *extra]


class PgSchema:
    """What a migration of `tracecli.store.migrations` is given on PostgreSQL: `execute` translates its DDL."""

    def __init__(self, store: PgStore) -> None:
        self.store = store

    def execute(self, sql: str, params: Any = ()) -> Any:
        cur = None
        for statement in translate_ddl(sql):
            cur = self.store.conn.execute(statement, params)
        return cur


# -- row-level security per namespace --------------------------------------------------
def rls_condition(table: str, columns: Collection[str]) -> str | None:
    """The policy expression that keeps `table` to the bound namespace's rows; None for a table of no namespace."""
    if table in GLOBAL_TABLES:
        return None
    if table == "conversations":
        return "namespace = (SELECT tracecli_namespace())"
    if table == "answers":  # asked over the comma-joined conversations: every one must be the namespace's
        return "conversation_id <> '' AND string_to_array(conversation_id, ',') <@ ARRAY(SELECT id FROM conversations)"
    if "conversation_id" in columns:  # `conversations` is itself under its policy: only the namespace's ids
        return "conversation_id IN (SELECT id FROM conversations)"
    if "namespace" in columns:  # the LLM cache (a reply to no conversation's text has none) and the forget log
        return "namespace IS NULL OR namespace = (SELECT tracecli_namespace())"
    if table in PARENT_ROWS:
        column, parent, key = PARENT_ROWS[table]
        return f"{column} IN (SELECT {key} FROM {parent})"
    return None


def _schema_oid() -> str:
    return "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"


def secure_tables(store: PgStore) -> None:
    """Row-level security on every namespaced table of the schema that lacks it (idempotent: run after the
    migrations and for each vector table made later), and the rowid triggers run as their owner, so a row
    inserted by a confined role is numbered past every namespace's rows, not only past those it sees."""
    rows = store.execute(
        "SELECT c.relname, array_agg(a.attname::text), c.relrowsecurity, "
        "EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = 'tracecli_namespace') "
        "FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
        f"WHERE c.relnamespace = {_schema_oid()} AND c.relkind IN ('r', 'p') "
        "GROUP BY c.oid, c.relname, c.relrowsecurity").fetchall()
    for table, columns, enabled, has_policy in rows:
        condition = rls_condition(table, columns)
        if condition is None:
            continue
        if not has_policy:
            store.execute(f"CREATE POLICY tracecli_namespace ON {table} USING ({condition})")
        if not enabled:
            store.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    schema = store.execute("SELECT quote_ident(current_schema())").fetchone()[0]
    for (function,) in store.execute(
            "SELECT DISTINCT p.oid::regprocedure::text FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid "
            f"JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = {_schema_oid()} "
            "AND t.tgname = p.proname AND p.proname LIKE 'tracecli\\_%' AND NOT p.prosecdef").fetchall():
        store.execute(f"ALTER FUNCTION {function} SECURITY DEFINER SET search_path = {schema}, pg_temp")


def _p001_namespace_rls(store: PgStore) -> None:
    """Row-level security per namespace: the role bindings, the namespace function, the grant helper, the policies."""
    schema = store.execute("SELECT quote_ident(current_schema())").fetchone()[0]
    store.execute("CREATE TABLE tracecli_role_namespaces (role_name TEXT PRIMARY KEY, namespace TEXT NOT NULL)")
    # a SQL-standard body is bound at creation, so no search_path of the caller can redirect its table
    store.execute(
        "CREATE FUNCTION tracecli_namespace() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER "
        f"SET search_path = {schema}, pg_temp RETURN COALESCE("
        "(SELECT namespace FROM tracecli_role_namespaces WHERE role_name = session_user), "
        f"NULLIF(current_setting('{NAMESPACE_SETTING}', true), ''))")
    store.execute(
        "CREATE FUNCTION tracecli_grant(grantee text, bound_namespace text DEFAULT NULL) RETURNS void "
        f"LANGUAGE plpgsql SET search_path = {schema}, pg_temp AS $$ DECLARE t text; BEGIN "
        "EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), grantee); "
        "FOR t IN SELECT relname FROM pg_class WHERE relnamespace = (SELECT oid FROM pg_namespace "
        "WHERE nspname = current_schema()) AND relkind IN ('r', 'p') "
        "AND relname NOT IN ('tracecli_role_namespaces', 'tracecli_migrations') LOOP "
        "EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO %I', t, grantee); END LOOP; "
        "EXECUTE format('GRANT SELECT ON tracecli_migrations TO %I', grantee); "
        "EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %I', "
        "current_schema(), grantee); "
        "DELETE FROM tracecli_role_namespaces WHERE role_name = grantee; "
        "IF bound_namespace IS NOT NULL THEN "
        "INSERT INTO tracecli_role_namespaces(role_name, namespace) VALUES (grantee, bound_namespace); END IF; "
        "END $$")
    store.execute("REVOKE ALL ON FUNCTION tracecli_grant(text, text) FROM PUBLIC")
    # the rowids a confined role must number past: of every namespace, read as the owner (rowid tables only)
    rowid_table = ("IF NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
                   f"WHERE c.oid = t AND c.relnamespace = {_schema_oid()} AND a.attname = 'rowid') THEN "
                   "RAISE EXCEPTION 'not a tracecli table with rowids: %', t; END IF; ")
    store.execute(
        "CREATE FUNCTION tracecli_next_rowid(t regclass) RETURNS bigint LANGUAGE plpgsql STABLE SECURITY DEFINER "
        f"SET search_path = {schema}, pg_temp AS $$ DECLARE n bigint; BEGIN {rowid_table}"
        "EXECUTE format('SELECT COALESCE(MAX(rowid), 0) + 1 FROM %s', t) INTO n; RETURN n; END $$")
    store.execute(
        "CREATE FUNCTION tracecli_rowids_taken(t regclass, ids bigint[]) RETURNS boolean LANGUAGE plpgsql STABLE "
        f"SECURITY DEFINER SET search_path = {schema}, pg_temp AS $$ DECLARE b boolean; BEGIN {rowid_table}"
        "EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE rowid = ANY($1))', t) INTO b USING ids; RETURN b; END $$")
    secure_tables(store)


#: PostgreSQL's own migrations, in order, after the shared ones (append-only, as those are)
PG_MIGRATIONS = {"p001_namespace_rls": _p001_namespace_rls}


def rls_required() -> bool:
    """Whether TRACECLI_PG_RLS asks tracecli to refuse a role that bypasses row-level security."""
    import os

    value = os.environ.get(RLS_ENV, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise StoreError(f"{RLS_ENV}={value!r}: give 1 (refuse a role that bypasses row-level security) or 0")


def _check_rls(store: PgStore) -> None:
    """With TRACECLI_PG_RLS=1: StoreError when the connected role would not be held by the policies."""
    user, bypass = store.execute(
        "SELECT current_user, r.rolsuper OR r.rolbypassrls OR pg_has_role(current_user, c.relowner, 'USAGE') "
        "FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = to_regclass('conversations')").fetchone()
    if bypass:
        raise StoreError(f"{store.label}: {RLS_ENV}=1 but the role {user} bypasses row-level security (it owns "
                         "the tables, is a superuser or has BYPASSRLS); connect as a role given access with "
                         "tracecli_grant (see README, PostgreSQL)")


# -- the pool ----------------------------------------------------------------------------
_POOLS: dict[str, Any] = {}
_POOLS_LOCK = threading.Lock()


def _pool(url: str, timeout: float) -> Any:
    """The process's pool for `url`, opened on first use (a failed first connection is one clear error)."""
    import os

    import psycopg
    from psycopg_pool import ConnectionPool

    with _POOLS_LOCK:
        pool = _POOLS.get(url)
        if pool is not None:
            return pool
        try:  # fail fast, with the server's own reason, before a pool starts retrying in the background
            psycopg.connect(url, connect_timeout=max(1, int(min(timeout, 30))), autocommit=True).close()
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise StoreError(f"{PgUrl(url).name}: cannot connect ({reason})") from None
        size = int(os.environ.get("TRACECLI_PG_POOL", DEFAULT_POOL_MAX))
        pool = ConnectionPool(url, min_size=1, max_size=max(1, size), kwargs={"autocommit": True},
                              configure=_register_types, reset=_reset, open=True, name="tracecli")
        _POOLS[url] = pool
        return pool


def _reset(conn: Any) -> None:
    """A connection back in the pool forgets the namespace its last command bound (the URL's or role's stays)."""
    conn.execute(f"RESET {NAMESPACE_SETTING}")


def close_pools() -> None:
    """Close every pool this process opened (tests, benchmarks)."""
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close()
        _POOLS.clear()


# -- the store ---------------------------------------------------------------------------
class PgStore(Store):
    """A `Store` on a PostgreSQL database (see the module's docstring for what differs)."""

    backend = "postgresql"

    @property
    def label(self) -> str:
        return self.path.name
    row_version = "xmin::text::bigint"  # the inserting (or last updating) transaction: moves on every write

    # -- transactions --------------------------------------------------------------
    def _begin_immediate(self, wait: float | None) -> None:
        if self.read_only:
            raise StoreReadOnly(f"{self.path.name}: cannot write: connected read-only")
        timeout = self.busy_timeout if wait is None else wait
        self.conn.execute("BEGIN")
        try:
            self.conn.execute(f"SET LOCAL lock_timeout = '{max(1, int(timeout * 1000))}ms'")
            self.conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))
        except sqlite3.OperationalError as exc:
            self.conn.execute("ROLLBACK")
            raise self.failure(exc, waited=timeout) from None

    def _begin_snapshot(self) -> None:
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")

    # -- introspection -------------------------------------------------------------
    def has_table(self, name: str) -> bool:
        return self.execute("SELECT to_regclass(?) IS NOT NULL", (name,)).fetchone()[0]

    def table_columns(self, table: str) -> list[tuple[int, str, str, int, Any, int]]:
        rows = self.execute(
            "SELECT c.ordinal_position, c.column_name, c.data_type, (c.is_nullable = 'NO')::int, c.column_default, "
            "COALESCE((SELECT k.ordinal_position FROM information_schema.key_column_usage k "
            "JOIN information_schema.table_constraints t ON t.constraint_name = k.constraint_name "
            "AND t.table_schema = k.table_schema WHERE t.constraint_type = 'PRIMARY KEY' "
            "AND k.table_schema = c.table_schema AND k.table_name = c.table_name AND k.column_name = c.column_name), 0) "
            "FROM information_schema.columns c WHERE c.table_schema = current_schema() AND c.table_name = ? "
            "AND c.column_name <> 'tsv' ORDER BY c.ordinal_position", (table,)).fetchall()
        kinds = {"bigint": "INTEGER", "integer": "INTEGER", "double precision": "REAL", "bytea": "BLOB", "text": "TEXT"}
        return [(i - 1, n, kinds.get(t, t.upper()), nn, d, pk) for i, n, t, nn, d, pk in rows]

    def trigger_names(self) -> set[str]:
        return {r[0] for r in self.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")}

    def applied_migrations(self, migration_set: str = MIGRATION_SET) -> list[str]:
        if not self.has_table("tracecli_migrations"):
            return []
        return [r[0] for r in self.execute(
            "SELECT name FROM tracecli_migrations WHERE migration_set = ? ORDER BY n", (migration_set,))]

    def next_rowid(self, table: str) -> int:
        # as the tables' owner: a role held to one namespace does not see the other namespaces' rowids
        return int(self.execute("SELECT tracecli_next_rowid(?::regclass)", (table,)).fetchone()[0])

    def rowids_taken(self, table: str, rowids: Sequence[int]) -> bool:
        return bool(self.execute("SELECT tracecli_rowids_taken(?::regclass, ?::bigint[])", (table, list(rowids))).fetchone()[0])

    def bind_namespace(self, namespace: str) -> None:
        # the policies read the setting; a role an administrator bound to a namespace keeps that one
        user, bound = self.execute("SELECT session_user, tracecli_namespace() FROM (SELECT set_config(?, ?, false)) s",
                                   (NAMESPACE_SETTING, namespace)).fetchone()
        if bound != namespace:
            raise StoreError(f"{self.label}: the role {user} is bound to namespace '{bound}' by row-level security; "
                             f"it cannot work in '{namespace}' (give --namespace {bound})")

    def data_version(self) -> int:
        # the next transaction id: moves whenever any session of the server commits a write
        return int(self.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()[0])

    def integrity_errors(self) -> list[str]:
        return []  # the server checks pages itself (checksums, WAL); there is no file to check from here

    def foreign_key_errors(self) -> list[tuple[str, Any, str, Any]]:
        return []  # foreign keys are constraints the server enforces on every commit

    def vector_dim(self, table: str) -> int | None:
        row = self.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = to_regclass(?) "
            "AND attname = 'embedding'", (table,)).fetchone()
        m = re.search(r"\((\d+)\)", row[0]) if row else None
        return int(m.group(1)) if m else None

    def vector_bytes_sql(self, column: str) -> str:
        return f"vector_dims({column}) * 4"

    # -- dialect -------------------------------------------------------------------
    def vector_value(self, vec: Sequence[float]) -> Any:
        return vector_text(vec)

    def ensure_vector_table(self, table: str, dim: int) -> None:
        if self.has_table(table):
            return
        user, may_create = self.execute("SELECT current_user, has_schema_privilege(current_schema(), 'CREATE')").fetchone()
        if not may_create:  # a role given access with tracecli_grant: the tables' owner makes the table once
            raise StoreError(f"{self.label}: the table {table} does not exist yet and the role {user} may not create it; "
                             "the tables' owner creates it by running `tracecli update` (or ingest and compile-wiki) once")
        self.execute(f"CREATE TABLE IF NOT EXISTS {table} (rowid BIGINT PRIMARY KEY, conversation_id TEXT NOT NULL, "
                     f"embedding vector({int(dim)}) NOT NULL)")
        self.execute(_hnsw_index(table))
        self.execute(f"CREATE INDEX IF NOT EXISTS {table}_conv ON {table}(conversation_id)")
        secure_tables(self)

    @contextmanager
    def bulk_vectors(self, table: str, rows: int) -> Iterator[PgStore]:
        # Growing an HNSW graph one row at a time costs ~8x what building it over the same rows does
        # (pgvector), so a load that at least doubles the table drops the index and builds it at the end,
        # in the same transaction: a failed load rolls the drop back too. Readers of that table wait for
        # the commit meanwhile (the drop locks it), which is why small loads keep the index.
        big = rows >= BULK_VECTOR_ROWS and self.execute(
            "SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class WHERE oid = to_regclass(?)",
            (table,)).fetchone() == (True,)
        if not big or self.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > rows:
            yield self
            return
        self.execute(f"DROP INDEX IF EXISTS {table}_hnsw")
        yield self
        self.execute(f"SET LOCAL maintenance_work_mem = '{BULK_INDEX_MEMORY}'")
        self.execute(_hnsw_index(table))

    def knn(self, table: str, vec: Sequence[float], k: int, conversation_id: str) -> list[tuple[int, float]]:
        q = vector_text(vec)
        sql = (f"SELECT rowid, embedding <=> ? AS d FROM {table} WHERE conversation_id = ? "
               f"ORDER BY {{order}}, rowid LIMIT ?")
        rows = self.execute(sql.format(order="d"), (q, conversation_id, k)).fetchall()
        if len(rows) < k:
            # HNSW filters after its search: a conversation that is a small part of the table can get
            # fewer than k of its rows back. Then rank that conversation's rows exactly (as sqlite-vec does).
            n = self.execute(f"SELECT COUNT(*) FROM {table} WHERE conversation_id = ?", (conversation_id,)).fetchone()[0]
            if n > len(rows):
                rows = self.execute(sql.format(order="d + 0"), (q, conversation_id, k)).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def _fts_select(self, table: str, join: str) -> str:
        # the same expression syntax: quoted words or phrases joined by OR is what websearch_to_tsquery reads
        return (f"WITH q AS (SELECT websearch_to_tsquery('{FTS_CONFIG}', ?) AS q) "
                f"SELECT f.rowid, ts_rank_cd(f.tsv, q.q) AS s FROM q, {table} f " + (f"JOIN {join} " if join else "")
                + "WHERE f.tsv @@ q.q")

    def json_each(self, expr: str, alias: str) -> str:
        return f"jsonb_array_elements_text(({expr})::jsonb) AS {alias}(value)"

    def json_first(self, expr: str) -> str:
        return f"(({expr})::jsonb ->> 0)"

    def defer_foreign_keys(self) -> None:
        self.execute("SET CONSTRAINTS ALL DEFERRED")

    def reclaim(self, tables: Sequence[str], vacuum: bool) -> tuple[bool, str]:
        present = [t for t in tables if self.has_table(t)]
        owned = {r[0] for r in self.execute(
            f"SELECT relname FROM pg_class WHERE relnamespace = {_schema_oid()} AND pg_has_role(current_user, relowner, 'USAGE')")}
        command = "VACUUM (FULL, ANALYZE)" if vacuum else "VACUUM (ANALYZE)"
        for table in present:
            if table in owned:
                self.execute(f"{command} {table}")
        if any(t not in owned for t in present):  # PostgreSQL lets only a table's owner vacuum it
            return False, ("PostgreSQL: the rows are deleted, but this role does not own the tables and only their "
                           "owner may VACUUM them: the deleted rows' bytes stay in the table files until the owner "
                           "runs VACUUM FULL (autovacuum only marks the space reusable), and in WAL, replicas and backups")
        if vacuum:
            note = ("PostgreSQL: the affected tables were rewritten (VACUUM FULL), so the deleted rows are gone "
                    "from their files; the server's WAL, WAL archive, replicas and backups may still hold them "
                    "until they are recycled or expire, and freed disk blocks keep old bytes until reused")
        else:
            note = ("PostgreSQL: VACUUM marked the deleted rows' space reusable; their bytes stay in the table "
                    "files until overwritten (use --vacuum to rewrite the tables), and in WAL, replicas and backups")
        return vacuum, note


def _hnsw_index(table: str) -> str:
    return f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)"


def _tables(conn: PgConnection) -> set[str]:
    return {r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").fetchall()}


def describe(url: str) -> tuple[list[str], dict[str, str]]:
    """(applied migrations, embedding meta) of the database at `url`, read without writing (for `doctor`)."""
    store = PgStore(conn=PgConnection(_pool(url, DEFAULT_BUSY_TIMEOUT).getconn(timeout=30), _POOLS[url]), path=PgUrl(url))
    try:
        if not store.has_table("meta"):
            return [], {}
        meta = dict(store.execute("SELECT key, value FROM meta WHERE key IN ('embed_model', 'embed_dim')").fetchall())
        return store.applied_migrations(), meta
    finally:
        store.close()


def open_pg_store(url: str, *, create: bool, upgrade: bool, busy_timeout: float) -> Any:
    """Open (with `create`, make; with `upgrade`, migrate) the tracecli database at a PostgreSQL URL."""
    url = PgUrl(url)
    pool = _pool(str(url), busy_timeout)
    try:
        raw = pool.getconn(timeout=max(busy_timeout, 1.0))
    except Exception as exc:  # the pool's timeout: every connection is in use
        raise StoreBusy(f"{url.name}: no free connection in the pool ({exc})") from None
    conn = PgConnection(raw, pool)
    store = PgStore(conn=conn, path=url, busy_timeout=busy_timeout)
    try:
        _open_checks(store, url, create=create, upgrade=upgrade)
    except BaseException:
        conn.close()
        raise
    return store


def _identify(store: Any, url: PgUrl) -> list[str] | None:
    """tracecli's migrations applied to the database, None for an empty schema; StoreError for anything else."""
    tables = _tables(store.conn)
    if "meta" in tables and store.execute("SELECT 1 FROM meta WHERE key = ? AND value = ?",
                                          (APPLICATION_KEY, APPLICATION)).fetchone():
        return store.applied_migrations()
    if not tables:
        return None
    listed = ", ".join(sorted(tables)[:5]) + (" …" if len(tables) > 5 else "")
    raise StoreError(f"{url.name}: not a tracecli database (its schema holds other tables: {listed}); tracecli left "
                     "it unchanged — give --db another database, or a URL whose search_path names an empty schema")


def _open_checks(store: Any, url: PgUrl, *, create: bool, upgrade: bool) -> None:
    """Refuse what is not tracecli's (or not there, for a reader), and migrate when allowed (as `db.open_store`)."""
    applied = _identify(store, url)
    if applied is None and not create:
        raise StoreError(f"{url.name}: holds no tracecli data yet; run `tracecli ingest` first")
    applied = [*(applied or []), *(store.applied_migrations(PG_MIGRATION_SET) if applied is not None else [])]
    known = (*SCHEMA, *PG_MIGRATIONS)
    unknown = set(applied) - set(known)
    if unknown:
        raise StoreError(f"{url.name}: written by a newer tracecli (unknown migrations: {', '.join(sorted(unknown))}); "
                         "upgrade tracecli")
    if set(applied) != set(known):
        if not upgrade:
            raise StoreError(f"{url.name}: written by an older tracecli (schema v{len(applied)}, this one reads "
                             f"v{len(known)}); run {WRITING_COMMANDS} once to upgrade it")
        _migrate(store)
    else:
        _register_types(store.conn.raw)
    if rls_required():
        _check_rls(store)


def _migrate(store: Any) -> None:
    """Create the schema or apply pending migrations, under the write lock, each recorded in `tracecli_migrations`."""
    from tracecli.store.migrations import migrations

    with store.transaction():
        store.execute("CREATE EXTENSION IF NOT EXISTS vector")
        store.execute("CREATE TABLE IF NOT EXISTS tracecli_migrations (n BIGINT PRIMARY KEY, migration_set TEXT NOT NULL, "
                      "name TEXT NOT NULL, applied_at TEXT NOT NULL, UNIQUE (migration_set, name))")
        applied = set(store.applied_migrations())  # again under the lock: another process may have migrated
        schema = PgSchema(store)
        for migration in migrations._migrations:
            if migration.name not in applied:
                migration.fn(schema)
                _record(store, MIGRATION_SET, migration.name)
        applied = set(store.applied_migrations(PG_MIGRATION_SET))
        for name, fn in PG_MIGRATIONS.items():
            if name not in applied:
                fn(store)
                _record(store, PG_MIGRATION_SET, name)
        secure_tables(store)  # the tables a later shared migration adds get their policy too
        store.set_meta(APPLICATION_KEY, APPLICATION)
    _register_types(store.conn.raw)  # the vector type exists now


def _record(store: Any, migration_set: str, name: str) -> None:
    store.execute("INSERT INTO tracecli_migrations(n, migration_set, name, applied_at) "
                  "SELECT COALESCE(MAX(n), 0) + 1, ?, ?, ? FROM tracecli_migrations", (migration_set, name, utc_now()))
