"""`tracecli doctor`: is the configured LLM, embedder, SQLite build and database usable?

Every check returns a dataclass and never prints; `DoctorReport.ok` is False
when something that is configured does not work. Nothing here writes to the
database (it is opened read-only) or loads the embedding model unless asked.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tracecli.errors import TraceError
from tracecli.providers.llm import LLMSettings, get_chat_model, redact_url
from tracecli.store.db import is_pg_url

PROBE_MESSAGES = [{"role": "user", "content": "Reply with the single word: ok"}]


@dataclass
class LLMCheck:
    """The chat model settings and whether its endpoint answers (`ok`, else `error`)."""

    provider: str
    model: str | None
    url: str | None
    api_key_set: bool
    configured: bool
    latency_ms: float | None = None
    error: str | None = None
    ok: bool = True


@dataclass
class EmbedderCheck:
    """The embedder's id and dimension; `loaded` says whether it was actually run."""

    name: str
    id: str | None = None
    dimension: int | None = None
    loaded: bool = False
    error: str | None = None
    ok: bool = True


@dataclass
class SQLiteCheck:
    """The SQLite library and sqlite-vec extension versions."""

    sqlite_version: str | None = None
    vec_version: str | None = None
    error: str | None = None
    ok: bool = True


@dataclass
class DatabaseCheck:
    """The database file's schema version and bound embedding model."""

    path: str
    exists: bool
    schema_version: int | None = None
    latest_schema_version: int = 0
    pending_migrations: list[str] = field(default_factory=list)
    unknown_migrations: list[str] = field(default_factory=list)
    embedding_model: str | None = None
    embedding_dim: int | None = None
    error: str | None = None
    ok: bool = True


@dataclass
class DoctorReport:
    """All checks; `ok` is False if any configured part does not work."""

    llm: LLMCheck
    embedder: EmbedderCheck
    sqlite: SQLiteCheck
    database: DatabaseCheck | None = None

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        checks: list[Any] = [self.llm, self.embedder, self.sqlite, self.database]
        return all(c.ok for c in checks if c is not None)

    def problems(self) -> list[str]:
        """One line per failed check, for stderr."""
        out = []
        for name, check in (
            ("llm", self.llm),
            ("embedder", self.embedder),
            ("sqlite", self.sqlite),
            ("database", self.database),
        ):
            if check is not None and not check.ok:
                out.append(f"{name}: {check.error or 'failed'}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able report with stable snake_case keys (`database` is null without a path)."""
        return {
            "ok": self.ok,
            "llm": dataclasses.asdict(self.llm),
            "embedder": dataclasses.asdict(self.embedder),
            "sqlite": dataclasses.asdict(self.sqlite),
            "database": dataclasses.asdict(self.database) if self.database is not None else None,
        }


def check_llm(settings: LLMSettings, client: httpx.Client | None = None, *, timeout: float = 5.0) -> LLMCheck:
    """Describe the chat model and, if one is configured, send it one tiny request."""
    check = LLMCheck(
        provider=settings.provider,
        model=settings.model,
        url=redact_url(settings.url),
        api_key_set=bool(settings.api_key),
        configured=settings.provider != "none",
    )
    if not check.configured:
        return check
    probe = dataclasses.replace(settings, timeout=min(settings.timeout, timeout), max_retries=0, use_cache=False)
    try:
        model = get_chat_model(probe, None, client)
        try:
            result = model.complete(PROBE_MESSAGES, stage="doctor")
        finally:
            model.close()
    except TraceError as exc:
        check.error, check.ok = str(exc), False
        return check
    check.latency_ms = round(result.latency_ms, 1)
    if not result.ok:
        check.error, check.ok = result.error or "the endpoint sent an unusable reply", False
    return check


def check_embedder(name: str | None, *, probe: bool = False) -> EmbedderCheck:
    """The embedder's id and dimension, from class attributes unless `probe` runs it once."""
    from tracecli.providers.embeddings import EMBEDDERS, get_embedder

    name = name or os.environ.get("TRACECLI_EMBEDDER") or "minilm"
    check = EmbedderCheck(name=name)
    factory = EMBEDDERS.get(name)
    declared_id = getattr(factory, "id", None) if isinstance(factory, type) else None
    declared_dim = getattr(factory, "dimension", None) if isinstance(factory, type) else None
    if not probe and isinstance(declared_id, str) and isinstance(declared_dim, int):
        check.id, check.dimension = declared_id, declared_dim
        return check
    try:
        embedder = get_embedder(name)
        check.id = embedder.id
        if probe:
            vectors = embedder.embed_batch(["tracecli doctor probe"])
            check.dimension, check.loaded = int(vectors.shape[1]), True
        elif isinstance(declared_dim, int):
            check.dimension = declared_dim
    except TraceError as exc:
        check.error, check.ok = str(exc), False
    except Exception as exc:  # a broken model install must show up here, not as a traceback
        check.error, check.ok = f"embedder '{name}' failed to run ({type(exc).__name__})", False
    return check


def check_sqlite() -> SQLiteCheck:
    """`sqlite_version()` and `vec_version()` on a pysqlite3 connection with sqlite-vec loaded."""
    check = SQLiteCheck()
    try:
        import pysqlite3.dbapi2 as sqlite3
        import sqlite_vec

        conn = sqlite3.connect(":memory:")
        try:
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
            check.sqlite_version, check.vec_version = conn.execute("SELECT sqlite_version(), vec_version()").fetchone()
        finally:
            conn.close()
    except Exception as exc:  # missing wheel or an extension that will not load
        check.error, check.ok = f"SQLite with sqlite-vec is not usable ({type(exc).__name__}: {exc})", False
    return check


def _check_server(url: str, known: list[str]) -> DatabaseCheck:
    """`check_database` for a PostgreSQL URL: connects, reads the migrations and the model, writes nothing."""
    from tracecli.errors import TraceError
    from tracecli.store.pg import PgUrl, describe

    check = DatabaseCheck(path=PgUrl(url).name, exists=True, latest_schema_version=len(known))
    try:
        applied, meta = describe(url)
    except (TraceError, Exception) as exc:  # an unreachable server is the report, not a crash
        check.error, check.ok = str(exc), False
        return check
    check.exists = bool(applied)
    check.schema_version = len(applied)
    check.pending_migrations = [n for n in known if n not in applied]
    check.unknown_migrations = [n for n in applied if n not in known]
    check.embedding_model = meta.get("embed_model")
    check.embedding_dim = int(meta["embed_dim"]) if meta.get("embed_dim") else None
    if check.unknown_migrations:
        check.error, check.ok = f"{check.path}: written by a newer tracecli; upgrade tracecli", False
    return check


def check_database(path: str | Path) -> DatabaseCheck:
    """Schema version and embedding model of the file at `path`, read-only; a missing file is fine."""
    from tracecli.store.migrations import MIGRATION_SET, migrations

    known = [m.name for m in migrations._migrations]
    if is_pg_url(path):
        return _check_server(str(path), known)
    path = Path(path)
    check = DatabaseCheck(path=str(path), exists=path.exists(), latest_schema_version=len(known))
    if not check.exists:
        return check
    if path.is_dir():
        check.error, check.ok = f"{path}: is a directory, not a database file", False
        return check
    import pysqlite3.dbapi2 as sqlite3

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        check.error, check.ok = f"{path}: cannot be opened ({exc})", False
        return check
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        applied: list[str] = []
        if "_sqlite_migrations" in tables:
            applied = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY rowid", (MIGRATION_SET,)
                )
            ]
        check.schema_version = len(applied)
        check.pending_migrations = [n for n in known if n not in applied]
        check.unknown_migrations = [n for n in applied if n not in known]
        if "meta" in tables:
            meta = dict(
                conn.execute("SELECT key, value FROM meta WHERE key IN ('embed_model', 'embed_dim')").fetchall()
            )
            check.embedding_model = meta.get("embed_model")
            check.embedding_dim = int(meta["embed_dim"]) if meta.get("embed_dim") else None
    except (sqlite3.Error, ValueError) as exc:
        check.error, check.ok = f"{path}: not a tracecli database ({exc})", False
        return check
    finally:
        conn.close()
    if check.unknown_migrations:
        check.error, check.ok = (
            (
                f"{path}: written by a newer tracecli (unknown migrations: {', '.join(check.unknown_migrations)}); "
                "upgrade tracecli"
            ),
            False,
        )
    return check


def run_doctor(
    store_path: str | Path | None,
    settings: LLMSettings,
    embedder_name: str | None,
    client: httpx.Client | None = None,
    *,
    probe_embedder: bool = False,
    llm_timeout: float = 5.0,
) -> DoctorReport:
    """Check the LLM endpoint, the embedder, SQLite + sqlite-vec and (if given) the database file."""
    llm = check_llm(settings, client, timeout=llm_timeout)
    embedder = check_embedder(embedder_name, probe=probe_embedder)
    database = check_database(store_path) if store_path is not None else None
    if database is not None and database.ok and embedder.ok and database.embedding_model is not None:
        bound = (database.embedding_model, database.embedding_dim)
        configured = (embedder.id, embedder.dimension if embedder.dimension is not None else database.embedding_dim)
        if bound != configured:
            database.error, database.ok = (
                (
                    f"{database.path} holds vectors of {bound[0]} ({bound[1]}-d) but the configured embedder is "
                    f"{embedder.id}; use the same embedder, or a new database file"
                ),
                False,
            )
    return DoctorReport(llm=llm, embedder=embedder, sqlite=check_sqlite(), database=database)


__all__ = [
    "DatabaseCheck",
    "DoctorReport",
    "EmbedderCheck",
    "LLMCheck",
    "SQLiteCheck",
    "check_database",
    "check_embedder",
    "check_llm",
    "check_sqlite",
    "run_doctor",
]
