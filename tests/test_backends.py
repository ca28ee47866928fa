"""The store on both backends (an SQLite file and a PostgreSQL database from pgserver): schema, transactions,
vector and full-text search, the dialect helpers, and the refusals."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from tracecli.errors import StoreBusy, StoreError
from tracecli.store import open_store
from tracecli.store.schema import SCHEMA

ROOT = Path(__file__).resolve().parent.parent


def _conversation(store, cid: str, namespace: str = "default") -> None:
    store.execute("INSERT INTO conversations(id, namespace, created_at) VALUES (?, ?, 'now')", (cid, namespace))
    store.execute("INSERT INTO sessions(id, conversation_id, idx, source_id) VALUES (?, ?, 0, 's')", (f"s_{cid}", cid))


def _note(store, rowid: int, cid: str, text: str, vec: list[float] | None = None) -> None:
    mid = f"m_{cid}_{rowid}"
    store.execute("INSERT INTO messages(id, conversation_id, session_id, seq, turn, speaker, text, content_hash) "
                  "VALUES (?,?,?,?,?,?,?,?)", (mid, cid, f"s_{cid}", rowid, rowid, "A", text, mid))
    store.execute("INSERT INTO notes(rowid, id, message_id, conversation_id, text) VALUES (?,?,?,?,?)",
                  (rowid, f"n_{rowid}", mid, cid, text))
    store.execute("INSERT INTO notes_fts(rowid, text, keywords) VALUES (?,?,'')", (rowid, text))
    if vec is not None:
        store.execute("INSERT INTO note_vectors(rowid, conversation_id, embedding) VALUES (?,?,?)",
                      (rowid, cid, store.vector_value(vec)))


def test_schema_is_created_once_and_recorded(any_db: str) -> None:
    with open_store(any_db) as store:
        assert store.applied_migrations() == list(SCHEMA)
        assert store.get_meta("application") == "tracecli"
        assert {"claim_ops_no_update", "claim_ops_no_delete", "claims_no_delete", "claims_immutable"} <= store.trigger_names()
    with open_store(any_db, create=False, upgrade=False) as store:  # opens as it is: nothing pending
        assert store.schema_version() == len(SCHEMA)


def test_a_failed_transaction_leaves_the_last_committed_state(any_db: str) -> None:
    with open_store(any_db) as store:
        with store.transaction():
            _conversation(store, "c1")
        with pytest.raises(RuntimeError), store.transaction():
            _conversation(store, "c2")
            raise RuntimeError("half-way")
        with store.transaction():  # a savepoint rolls back alone
            _conversation(store, "c3")
            with pytest.raises(Exception), store.transaction():
                _conversation(store, "c1")  # duplicate key
        assert [r[0] for r in store.execute("SELECT id FROM conversations ORDER BY id")] == ["c1", "c3"]


def test_a_killed_writer_leaves_the_last_committed_state(any_db: str) -> None:
    """A process killed in the middle of a write transaction commits none of it."""
    with open_store(any_db) as store, store.transaction():
        _conversation(store, "kept")
    script = textwrap.dedent(f"""
        import os, signal, sys
        from tracecli.store import open_store
        store = open_store({any_db!r})
        with store.transaction():
            store.execute("INSERT INTO conversations(id, created_at) VALUES ('lost', 'now')")
            store.execute("UPDATE conversations SET namespace = 'changed'")
            sys.stdout.write("inside\\n"); sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.stdout == "inside\n" and proc.returncode == -9, proc.stderr
    with open_store(any_db) as store:
        assert store.query("SELECT id, namespace FROM conversations") == [{"id": "kept", "namespace": "default"}]


def test_writers_queue_and_give_up_with_store_busy(any_db: str) -> None:
    first, second = open_store(any_db), open_store(any_db)
    try:
        with first.transaction():
            _conversation(first, "c1")
            with pytest.raises(StoreBusy), second.transaction(wait=0.2):
                pass
        with second.transaction(wait=0.2):  # free again
            _conversation(second, "c2")
        assert first.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 2
    finally:
        first.close()
        second.close()


def test_a_snapshot_does_not_see_later_commits(any_db: str) -> None:
    reader, writer = open_store(any_db), open_store(any_db)
    try:
        with writer.transaction():
            _conversation(writer, "c1")
        with reader.snapshot():
            assert reader.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 1
            with writer.transaction():  # a writer is never blocked by the reader
                _conversation(writer, "c2")
            assert reader.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 1
        assert reader.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == 2
    finally:
        reader.close()
        writer.close()


def test_vector_search_ranks_by_cosine_within_one_conversation(any_db: str) -> None:
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(60, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with open_store(any_db) as store, store.transaction():
        store.bind_embedding_model("test-model", 8)
        for cid in ("a", "b"):
            _conversation(store, cid)
        for i, v in enumerate(vecs, 1):
            _note(store, i, "a" if i % 2 else "b", f"note {i}", v.tolist())
    query = vecs[4] + 0.05 * vecs[10]
    with open_store(any_db) as store:
        hits = store.knn("note_vectors", query.tolist(), 5, "a")
        own = [i for i in range(1, 61) if i % 2]
        cos = {i: float(np.dot(vecs[i - 1], query) / np.linalg.norm(query)) for i in own}
        expected = sorted(own, key=lambda i: -cos[i])[:5]
        assert [r for r, _ in hits] == expected  # the conversation's rows only, nearest first
        for rowid, distance in hits:
            assert distance == pytest.approx(1 - cos[rowid], abs=1e-5)
        assert store.knn("note_vectors", query.tolist(), 5, "nobody") == []
        # vectors come back as the float32 bytes that went in
        stored = store.execute("SELECT embedding FROM note_vectors WHERE rowid = 3").fetchone()[0]
        assert np.frombuffer(stored, dtype=np.float32).tolist() == vecs[2].tolist()
        assert store.vector_dim("note_vectors") == 8


def test_full_text_search_stems_ranks_and_filters(any_db: str) -> None:
    with open_store(any_db) as store, store.transaction():
        for cid in ("a", "b"):
            _conversation(store, cid)
        _note(store, 1, "a", "We are moving to Lisbon in spring")
        _note(store, 2, "a", "The cat sleeps all day")
        _note(store, 3, "a", "Moving moving moving: boxes everywhere, we moved the sofa")
        _note(store, 4, "b", "Other people are moving too")
    with open_store(any_db) as store:
        hits = store.fts_search("notes_fts", '"moves"', join="notes n ON n.rowid = f.rowid",
                                where="n.conversation_id IN (?)", params=["a"])
        assert [r for r, _ in hits] == [3, 1]  # stemmed, more mentions first, conversation b left out
        assert hits[0][1] > hits[1][1] > 0
        either = store.fts_search("notes_fts", '"cat" OR "lisbon"', limit=5)
        assert sorted(r for r, _ in either) == [1, 2]
        assert store.fts_search("notes_fts", '"submarine"') == []


def test_rowids_json_helpers_and_upserts(any_db: str) -> None:
    with open_store(any_db) as store, store.transaction():
        _conversation(store, "c")
        rowids = []
        for slug in ("one", "two"):
            cur = store.execute(
                "INSERT INTO wiki_pages(id, conversation_id, slug, type, title, markdown, content_hash, created_at, updated_at) "
                "VALUES (?, 'c', ?, 'topic', ?, '', 'h', 'now', 'now') RETURNING rowid", (f"wp_{slug}", slug, slug))
            rowids.append(cur.fetchone()[0])
        assert rowids[1] == rowids[0] + 1  # SQLite's INTEGER PRIMARY KEY: one more than the largest
        store.execute("INSERT INTO meta(key, value) VALUES ('j', ?)", ('["x", "y"]',))
        values = [r[0] for r in store.execute(f"SELECT j.value FROM meta m, {store.json_each('m.value', 'j')} "
                                              "WHERE m.key = 'j' ORDER BY j.value")]
        assert values == ["x", "y"]
        assert store.execute(f"SELECT {store.json_first('value')} FROM meta WHERE key = 'j'").fetchone()[0] == "x"
        store.set_meta("j", "replaced")
        assert store.get_meta("j") == "replaced"


def test_the_op_log_refuses_edits_on_both(any_db: str) -> None:
    with open_store(any_db) as store, store.transaction():
        _conversation(store, "c")
        store.execute("INSERT INTO snapshots(id, conversation_id, session_id, idx, message_ids, first_seq, last_seq, text, "
                      "created_at) VALUES ('sn', 'c', 's_c', 0, '[]', 0, 0, '', 'now')")
        store.execute("INSERT INTO claims(id, conversation_id, idx, snapshot_id, text, status, source_message_ids, "
                      "supporting_quote, created_at) VALUES ('cl', 'c', 0, 'sn', 't', 'active', '[]', 'q', 'now')")
        store.execute("INSERT INTO claim_ops(id, conversation_id, n, op, claim_id, status, snapshot_id, created_at) "
                      "VALUES ('op', 'c', 0, 'ADD', 'cl', 'active', 'sn', 'now')")
    with open_store(any_db) as store:
        for sql in ("UPDATE claim_ops SET reason = 'x'", "DELETE FROM claim_ops", "UPDATE claims SET text = 'x'"):
            with pytest.raises(Exception, match="append-only|only removed by tracecli forget|immutable"), store.transaction():
                store.execute(sql)
        with store.transaction():  # the status may move; forget's erasing marker lets a delete through
            store.execute("UPDATE claims SET status = 'deprecated'")
            store.set_meta("erasing", "test")
            store.execute("DELETE FROM claim_ops")
        assert store.execute("SELECT COUNT(*) FROM claim_ops").fetchone()[0] == 0


def test_concurrent_readers_while_a_writer_appends(any_db: str) -> None:
    with open_store(any_db) as store, store.transaction():
        _conversation(store, "c")
    errors: list[BaseException] = []
    seen: list[int] = []

    def read() -> None:
        try:
            with open_store(any_db, create=False) as s:
                for _ in range(20):
                    with s.snapshot():
                        seen.append(s.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(4)]
    for t in readers:
        t.start()
    with open_store(any_db) as w:
        for i in range(1, 31):
            with w.transaction():
                _note(w, i, "c", f"message {i}")
    for t in readers:
        t.join()
    assert not errors, errors
    assert seen and all(0 <= n <= 30 for n in seen)


def test_a_database_of_another_program_is_refused(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(StoreError, match="not a tracecli database .*invoices"):
        open_store(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # untouched
        assert [r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables "
                                           "WHERE table_schema = 'public'")] == ["invoices"]


def test_reading_an_empty_database_creates_nothing(pg_url: str) -> None:
    import psycopg

    with pytest.raises(StoreError, match="holds no tracecli data yet"):
        open_store(pg_url, create=False, upgrade=False)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'").fetchone()[0] == 0


def test_an_unreachable_server_is_one_line(pg_server) -> None:
    bad = pg_server.get_uri().replace("postgres:@", "nobody:secret@", 1)
    with pytest.raises(StoreError) as err:
        open_store(bad)
    assert "cannot connect" in str(err.value) and "secret" not in str(err.value)


def test_vector_search_of_a_small_conversation_in_a_big_table(any_db: str) -> None:
    """On PostgreSQL the HNSW index filters by conversation after its search; a conversation that is a sliver of
    the table must still get all of its nearest rows back (as sqlite-vec's partitioned search gives them).
    (Sequential scans and the conversation index are taken away there, so the planner uses HNSW on this small table.)"""
    rng = np.random.default_rng(11)
    vecs = rng.normal(size=(400, 8)).astype(np.float32)
    with open_store(any_db) as store, store.transaction():
        store.bind_embedding_model("test-model", 8)
        for cid in ("big", "small"):
            _conversation(store, cid)
        for i, v in enumerate(vecs, 1):
            _note(store, i, "small" if i % 100 == 0 else "big", f"note {i}", v.tolist())
    with open_store(any_db) as store:
        if store.backend == "postgresql":
            store.execute("SET enable_seqscan = off")
            store.execute("DROP INDEX note_vectors_conv")  # leaves the HNSW index as the planner's only way in
            index_only = store.execute("SELECT rowid FROM note_vectors WHERE conversation_id = 'small' "
                                       "ORDER BY embedding <=> ? LIMIT 10", (store.vector_value(vecs[0]),)).fetchall()
            assert len(index_only) < 4  # what the index alone gives: the case the store must make up for
        hits = store.knn("note_vectors", vecs[0].tolist(), 10, "small")
        assert sorted(r for r, _ in hits) == [100, 200, 300, 400]
        assert [d for _, d in hits] == sorted(d for _, d in hits)


def test_a_big_vector_load_builds_the_hnsw_index_once(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load that at least doubles the table drops the index and builds it at commit; a failed one keeps it."""
    from tracecli.store import pg

    monkeypatch.setattr(pg, "BULK_VECTOR_ROWS", 3)

    def indexed(store) -> bool:
        return store.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'note_vectors_hnsw'").fetchone() is not None

    with open_store(pg_url) as store:
        with store.transaction():
            store.bind_embedding_model("test", 3)
            _conversation(store, "c")
        with store.transaction(), store.bulk_vectors("note_vectors", 2):  # below the threshold: row by row
            assert indexed(store)
            _note(store, 1, "c", "one", [1.0, 0.0, 0.0])
        with pytest.raises(RuntimeError), store.transaction(), store.bulk_vectors("note_vectors", 3):
            assert not indexed(store)
            _note(store, 2, "c", "two", [0.0, 1.0, 0.0])
            raise RuntimeError("killed half-way")
        assert indexed(store) and store.execute("SELECT count(*) FROM note_vectors").fetchone()[0] == 1
        with store.transaction(), store.bulk_vectors("note_vectors", 3):
            assert not indexed(store)
            for rowid, vec in ((2, [0.0, 1.0, 0.0]), (3, [0.6, 0.8, 0.0]), (4, [0.0, 0.0, 1.0])):
                _note(store, rowid, "c", f"note {rowid}", vec)
        assert indexed(store)
        assert [r for r, _ in store.knn("note_vectors", [0.0, 1.0, 0.0], 2, "c")] == [2, 3]
        with store.transaction(), store.bulk_vectors("note_vectors", 3):  # would not double the 4 rows: kept
            assert indexed(store)
