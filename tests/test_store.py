"""The store: WAL, foreign keys, recorded migrations, upgrades of older files, refusals."""

from __future__ import annotations

import random
from pathlib import Path

import pysqlite3.dbapi2 as sqlite3
import pytest
from sqlite_utils import Database

from tracecli.errors import ModelMismatch, StoreError
from tracecli.store import db as store_db
from tracecli.store.db import MIGRATION_SET, open_store
from tracecli.store.migrations import migrations

MIGRATION_NAMES = [m.name for m in migrations._migrations]


def _schema(path: Path) -> list[tuple[str, str, str | None]]:
    conn = store_db._connect(path)
    try:
        return [tuple(r) for r in conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name")]
    finally:
        conn.close()


def _applied(path: Path) -> list[str]:
    conn = store_db._connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY rowid", (MIGRATION_SET,))]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def fresh_schema(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, str | None]]:
    path = tmp_path_factory.mktemp("fresh") / "fresh.db"
    open_store(path).close()
    return _schema(path)


def test_there_are_migrations() -> None:
    assert MIGRATION_NAMES, "no migrations registered"
    assert len(set(MIGRATION_NAMES)) == len(MIGRATION_NAMES)


def test_schema_constant_lists_every_migration_in_order() -> None:
    # open_store decides "up to date" from store_db.SCHEMA without importing the migrations module
    assert list(store_db.SCHEMA) == MIGRATION_NAMES


def test_store_applies_a_migration_missing_from_an_otherwise_current_file(db_path: Path) -> None:
    open_store(db_path).close()
    conn = store_db._connect(db_path)
    conn.execute("ALTER TABLE events DROP COLUMN frame")  # what the last migration (m008_event_frames) adds
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = ?", (MIGRATION_NAMES[-1],))
    conn.close()
    store = open_store(db_path)
    try:
        assert "frame" in {r[1] for r in store.execute("PRAGMA table_info(events)").fetchall()}
        assert store.schema_version() == len(MIGRATION_NAMES)
    finally:
        store.close()
    assert _applied(db_path)[-1] == MIGRATION_NAMES[-1]


def test_open_creates_wal_with_foreign_keys(db_path: Path) -> None:
    store = open_store(db_path)
    try:
        assert db_path.is_file()
        assert store.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        # Foreign keys are enforced, not just declared.
        with pytest.raises(sqlite3.IntegrityError):
            store.execute(
                "INSERT INTO sessions(id, conversation_id, idx, source_id) VALUES ('s', 'no-such-conversation', 0, 'x')"
            )
    finally:
        store.close()
    # WAL is a property of the file: a plain connection sees it too.
    conn = sqlite3.connect(str(db_path))
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_migrations_are_recorded(db_path: Path) -> None:
    store = open_store(db_path)
    try:
        assert store.schema_version() == len(MIGRATION_NAMES)
        for table in ("meta", "conversations", "sessions", "messages", "notes", "notes_fts"):
            assert store.has_table(table), table
    finally:
        store.close()
    assert _applied(db_path) == MIGRATION_NAMES


def test_reopen_applies_nothing_twice(db_path: Path) -> None:
    open_store(db_path).close()
    before = _schema(db_path)
    store = open_store(db_path)
    store.set_meta("k", "v")
    store.close()
    store = open_store(db_path)
    try:
        assert store.get_meta("k") == "v"
    finally:
        store.close()
    assert _applied(db_path) == MIGRATION_NAMES
    assert _schema(db_path) == before


@pytest.mark.parametrize("stop_before", MIGRATION_NAMES)
def test_older_file_upgrades_to_the_fresh_schema(
    tmp_path: Path, stop_before: str, fresh_schema: list[tuple[str, str, str | None]]
) -> None:
    path = tmp_path / f"old-{stop_before}.db"
    conn = store_db._connect(path)
    db = Database(conn)
    migrations.apply(db, stop_before=stop_before)
    applied = [m.name for m in migrations.applied(db)]
    assert applied == MIGRATION_NAMES[: MIGRATION_NAMES.index(stop_before)]
    keep_row = "conversations" in db.table_names()
    if keep_row:
        conn.execute("INSERT INTO conversations(id, created_at) VALUES ('old-conv', '2024-01-01T00:00:00Z')")
    conn.close()

    store = open_store(path)
    try:
        assert store.schema_version() == len(MIGRATION_NAMES)
        if keep_row:
            assert [r["id"] for r in store.query("SELECT id FROM conversations")] == ["old-conv"]
    finally:
        store.close()
    assert _schema(path) == fresh_schema
    assert _applied(path) == MIGRATION_NAMES


def test_newer_file_is_refused(db_path: Path) -> None:
    open_store(db_path).close()
    conn = store_db._connect(db_path)
    conn.execute(
        "INSERT INTO _sqlite_migrations(migration_set, name, applied_at) VALUES (?, 'm999_from_the_future', '2099-01-01')",
        (MIGRATION_SET,),
    )
    conn.close()
    with pytest.raises(StoreError) as info:
        open_store(db_path)
    assert "m999_from_the_future" in str(info.value)
    assert str(db_path) in str(info.value)


def test_other_migration_sets_are_not_ours(db_path: Path) -> None:
    open_store(db_path).close()
    conn = store_db._connect(db_path)
    conn.execute(
        "INSERT INTO _sqlite_migrations(migration_set, name, applied_at) VALUES ('some-plugin', 'p001', '2024-01-01')"
    )
    conn.close()
    store = open_store(db_path)
    try:
        assert store.schema_version() == len(MIGRATION_NAMES)
    finally:
        store.close()


def test_random_bytes_are_refused(db_path: Path) -> None:
    junk = random.Random(1234).randbytes(8192)
    assert not junk.startswith(b"SQLite format 3")
    db_path.write_bytes(junk)
    with pytest.raises(StoreError) as info:
        open_store(db_path)
    assert str(db_path) in str(info.value)
    assert "not a tracecli database" in str(info.value)
    assert db_path.read_bytes() == junk  # left untouched


def test_missing_file_without_create(db_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        open_store(db_path, create=False)
    assert str(db_path) in str(info.value)
    assert "tracecli ingest" in str(info.value)
    assert not db_path.exists()


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        open_store(tmp_path)


def test_transaction_rolls_back_and_nests(db_path: Path) -> None:
    store = open_store(db_path)
    try:
        with pytest.raises(RuntimeError):
            with store.transaction():
                store.set_meta("a", "1")
                raise RuntimeError("boom")
        assert store.get_meta("a") is None

        with store.transaction():
            store.set_meta("outer", "kept")
            with pytest.raises(RuntimeError):
                with store.transaction():
                    store.set_meta("inner", "dropped")
                    raise RuntimeError("boom")
        assert store.get_meta("outer") == "kept"
        assert store.get_meta("inner") is None
    finally:
        store.close()


def test_bind_embedding_model(db_path: Path) -> None:
    store = open_store(db_path)
    try:
        assert store.embedding_model() is None
        assert not store.has_table("note_vectors")
        store.bind_embedding_model("model-a", 16)
        assert store.embedding_model() == ("model-a", 16)
        assert (store.get_meta("embed_model"), store.get_meta("embed_dim")) == ("model-a", "16")
        assert store.has_table("note_vectors")
        store.bind_embedding_model("model-a", 16)  # same model: fine
        with pytest.raises(ModelMismatch) as info:
            store.bind_embedding_model("model-b", 32)
        msg = str(info.value)
        assert "model-a (16-d)" in msg and "model-b (32-d)" in msg
        with pytest.raises(ModelMismatch):
            store.bind_embedding_model("model-a", 32)  # same name, other dimension
        assert store.embedding_model() == ("model-a", 16)
    finally:
        store.close()


def test_utc_now_format() -> None:
    import re

    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", store_db.utc_now())


def test_store_closes_when_its_with_block_ends(db_path: Path) -> None:
    with open_store(db_path) as store:
        assert store.execute("SELECT 1").fetchone()[0] == 1
    with pytest.raises(sqlite3.ProgrammingError):
        store.execute("SELECT 1")
    with pytest.raises(RuntimeError), open_store(db_path) as again:
        raise RuntimeError("a command failed")
    with pytest.raises(sqlite3.ProgrammingError):
        again.execute("SELECT 1")
