"""`tracecli forget`: cascading deletion, validity re-propagation, receipts, dry run, and bytes gone from the file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tracecli.audit import run_audit
from tracecli.errors import BadInput, NotFound
from tracecli.forget import COUNTED, forget, forgotten_references, resolve_messages
from tracecli.graph.build import build_graph
from tracecli.ingest import ingest_parsed, parse_file
from tracecli.query.ask import Asker
from tracecli.store import open_store
from tracecli.wiki import compile_wiki

runner = CliRunner()
MARKER = "Zanzibarquokka"  # a word no other message holds, to look for in the raw file

TRAVEL = {
    "conversation_id": "travel",
    "namespace": "alice",
    "participants": ["Alice", "Bob"],
    "sessions": [
        {"id": "s1", "started_at": "2024-03-01T10:00:00Z", "messages": [
            {"id": "s1-m1", "speaker": "Alice", "text": "I'm moving to Oslo in June for the new job.", "timestamp": "2024-03-01T10:00:00Z"},
            {"id": "s1-m2", "speaker": "Bob", "text": "Oslo! That's exciting, congrats.", "timestamp": "2024-03-01T10:01:00Z"},
            {"id": "s1-m3", "speaker": "Alice", "text": "My cat is called Biscuit, she hates travelling.", "timestamp": "2024-03-01T10:02:00Z"},
        ]},
        {"id": "s2", "started_at": "2024-04-10T09:00:00Z", "messages": [
            {"id": "s2-m1", "speaker": "Alice", "text": f"Forget Oslo, I'm moving to Porto now. The {MARKER} office closed.", "timestamp": "2024-04-10T09:00:00Z"},
            {"id": "s2-m2", "speaker": "Bob", "text": "Porto is lovely, good call.", "timestamp": "2024-04-10T09:02:00Z"},
        ]},
        {"id": "s3", "started_at": "2024-05-02T19:00:00Z", "messages": [
            {"id": "s3-m1", "speaker": "Bob", "text": "I started learning the cello last week.", "timestamp": "2024-05-02T19:00:00Z"},
            {"id": "s3-m2", "speaker": "Alice", "text": "Nice! How are the lessons going?", "timestamp": "2024-05-02T19:01:00Z"},
        ]},
    ],
}
OTHER = {
    "conversation_id": "other",
    "namespace": "bob",
    "participants": ["Carol", "Dan"],
    "sessions": [{"id": "s1", "started_at": "2024-03-01T10:00:00Z", "messages": [
        {"id": "s1-m1", "speaker": "Carol", "text": "I'm moving to Lisbon in July.", "timestamp": "2024-03-01T10:00:00Z"},
        {"id": "s1-m2", "speaker": "Dan", "text": "Lisbon sounds great.", "timestamp": "2024-03-01T10:01:00Z"},
    ]}],
}


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """Both conversations ingested, graphed and compiled, with a stored answer per conversation."""
    root = tmp_path_factory.mktemp("forget")
    db = root / "built.db"
    store = open_store(db)
    try:
        for doc in (TRAVEL, OTHER):
            f = _write(root / f"{doc['conversation_id']}.json", doc)
            ingest_parsed(store, f, parse_file(f), embedder)
        for cid in ("travel", "other"):
            build_graph(store, cid, extractor="rules")
            compile_wiki(store, cid, embedder=embedder)
        asker = Asker(store, embedder=embedder)
        for cid, question in (("travel", "Where is Alice moving?"), ("other", "Where is Carol moving?")):
            asker.ask(question, conversation_id=cid)  # stores the answer
    finally:
        store.close()
    return db


@pytest.fixture
def db(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "trace.db"
    target.write_bytes(built.read_bytes())
    return target


def _ask(store: Any, embedder: Any, question: str, cid: str = "travel") -> Any:
    return Asker(store, embedder=embedder).ask(question, conversation_id=cid)


def _recompile(embedder: Any) -> Any:
    def recompile(store: Any, cids: list[str]) -> None:
        for cid in cids:
            compile_wiki(store, cid, embedder=embedder)

    return recompile


def _events(store: Any, value: str) -> list[dict[str, Any]]:
    return store.query("SELECT id, validity, value FROM events WHERE conversation_id = 'travel' AND value = ?", (value,))


def _file_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


def test_forgetting_the_revision_makes_the_older_fact_current(db: Path, embedder: Any) -> None:
    store = open_store(db, create=False)
    try:
        assert "Porto" in _ask(store, embedder, "Where is Alice moving now?").answer
        [oslo] = _events(store, "Oslo")
        assert oslo["validity"] == 0.0, "the graph should have Oslo superseded before forgetting"
        pages = dict(store.execute("SELECT slug, content_hash FROM wiki_pages WHERE conversation_id = 'travel'").fetchall())
        receipt = forget(store, "message", ["s2-m1"], conversation_id="travel", recompile=_recompile(embedder))
        after = dict(store.execute("SELECT slug, content_hash FROM wiki_pages WHERE conversation_id = 'travel'").fetchall())
        assert after != pages and any(after.get(slug) == h for slug, h in pages.items()), "only changed pages are rewritten"
        # nothing in the wiki rests on the forgotten message any more; Bob's own remark about Porto stays
        assert not store.execute("SELECT 1 FROM wiki_pages WHERE markdown LIKE '%s2-m1%' OR markdown LIKE '%moving to Porto%' "
                                 "OR markdown LIKE ?", (f"%{MARKER}%",)).fetchall()
        [oslo] = _events(store, "Oslo")
        assert oslo["validity"] == 1.0
        assert _events(store, "Porto") == []
        assert store.execute("SELECT COUNT(*) FROM edges WHERE label = 'updates' AND conversation_id = 'travel'").fetchone()[0] == 0
        result = _ask(store, embedder, "Where is Alice moving now?")
        assert "Oslo" in result.answer and "Porto" not in result.answer
        claims = store.query("SELECT subject, text, status FROM claims WHERE conversation_id = 'travel'")
        assert claims and not [c for c in claims if "Porto" in c["text"] and "Alice" in (c["subject"], c["text"])]
        assert [c["text"] for c in claims if "Porto" in c["text"]] == ["Porto is lovely, good call."]  # Bob's, kept
        assert any("Oslo" in c["text"] and c["status"] == "active" for c in claims)
        assert receipt.wiki_recompiled == ["travel"]
    finally:
        store.close()


def test_receipt_counts_every_table_and_the_log_keeps_ids_not_text(db: Path, embedder: Any) -> None:
    store = open_store(db, create=False)
    try:
        before = {t: store.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in COUNTED}
        receipt = forget(store, "message", ["travel:s2-m1"], recompile=_recompile(embedder))
        after = {t: store.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in COUNTED}
        counts = {c.table: c for c in receipt.counts}
        for table in COUNTED:
            assert before[table] - counts[table].removed + counts[table].added == after[table], table
        for table in ("messages", "notes", "notes_fts", "note_vectors"):
            assert counts[table].removed == 1, table
        assert counts["events"].removed >= 1 and counts["answers"].removed == 1  # the travel answer cited it
        assert store.execute("SELECT COUNT(*) FROM answers WHERE conversation_id = 'other'").fetchone()[0] == 1
        [logged] = store.execute("SELECT message_ids FROM forget_log").fetchall()
        assert json.loads(logged[0]) == receipt.message_ids and len(receipt.message_ids) == 1
        log = store.execute("SELECT * FROM forget_log").fetchone()
        assert MARKER not in json.dumps(list(log)) and "Porto" not in json.dumps(list(log))
        assert receipt.vacuumed and receipt.created_at.endswith("Z")
    finally:
        store.close()


def test_forgotten_text_leaves_the_file(db: Path, embedder: Any) -> None:
    assert MARKER.encode() in _file_bytes(db)
    store = open_store(db, create=False)
    try:
        forget(store, "message", ["s2-m1"], conversation_id="travel", recompile=_recompile(embedder))
        report = run_audit(store)
        assert report.ok, [f.message for f in report.findings]
        assert {c.name: c.status for c in report.checks}["storage.forgotten"] == "ok"
        assert store.execute("SELECT COUNT(*) FROM notes_fts WHERE notes_fts MATCH ?", (MARKER,)).fetchone()[0] == 0
    finally:
        store.close()
    raw = _file_bytes(db)
    for needle in (MARKER, MARKER.lower(), "Forget Oslo"):
        assert needle.encode() not in raw, needle
    # every table, FTS shadow tables included, searched through plain sqlite3 as well
    conn = sqlite3.connect(db)
    try:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            try:
                rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            except sqlite3.OperationalError:
                continue  # vec0 / fts5 front tables need their modules; their shadow tables are read directly
            assert MARKER.lower() not in repr(rows).lower(), table
    finally:
        conn.close()


def test_dry_run_changes_nothing_and_reports_the_same_removals(db: Path, embedder: Any) -> None:
    before = db.read_bytes()
    store = open_store(db, create=False)
    try:
        dry = forget(store, "speaker", ["Bob"], conversation_id="travel", dry_run=True)
        assert dry.dry_run and not dry.vacuumed
        assert store.execute("SELECT COUNT(*) FROM forget_log").fetchone()[0] == 0
        assert store.execute("SELECT COUNT(*) FROM messages WHERE speaker = 'Bob'").fetchone()[0] == 3
        real = forget(store, "speaker", ["Bob"], conversation_id="travel", recompile=_recompile(embedder))
        assert sorted(dry.message_ids) == sorted(real.message_ids) and len(real.message_ids) == 3
        for d, r in zip(dry.counts, real.counts):
            if d.table not in ("snapshots", "trajectories", "claims", "claim_ops", "snapshot_claims", "wiki_sessions",
                               "wiki_pages", "wiki_page_trajectories", "wiki_fts", "wiki_vectors"):
                assert (d.table, d.removed) == (r.table, r.removed)
        assert store.execute("SELECT COUNT(*) FROM messages WHERE speaker = 'Bob'").fetchone()[0] == 0
        assert json.loads(store.execute("SELECT participants FROM conversations WHERE id = 'travel'").fetchone()[0]) == ["Alice"]
    finally:
        store.close()
    assert before != db.read_bytes()


def test_forgetting_a_whole_session_removes_it_and_bridges_the_session_chain(db: Path, embedder: Any) -> None:
    store = open_store(db, create=False)
    try:
        receipt = forget(store, "session", ["s2"], conversation_id="travel", recompile=_recompile(embedder))
        assert len(receipt.sessions_removed) == 1
        sessions = [r[0] for r in store.execute("SELECT id FROM sessions WHERE conversation_id = 'travel' ORDER BY idx")]
        assert len(sessions) == 2
        nxt = store.execute("SELECT src, dst FROM edges WHERE conversation_id = 'travel' AND label = 'next'").fetchall()
        assert nxt == [(sessions[0], sessions[1])]
        assert forgotten_references(store) == []
        assert run_audit(store).ok
    finally:
        store.close()


def test_forgetting_a_conversation_or_namespace_removes_every_row(db: Path, embedder: Any) -> None:
    store = open_store(db, create=False)
    try:
        receipt = forget(store, "namespace", ["alice"])
        assert receipt.conversations_removed == ["travel"] and receipt.wiki_recompiled == []
        for table in ("conversations", "sessions", "messages", "notes", "events", "edges", "topics", "claims",
                      "claim_ops", "snapshots", "trajectories", "wiki_pages", "answers"):
            col = "id" if table == "conversations" else "conversation_id"
            n = store.execute(f"SELECT COUNT(*) FROM {table} WHERE {col} = 'travel'").fetchone()[0]
            assert n == 0, table
        assert store.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = 'other'").fetchone()[0] == 2
        assert store.execute("SELECT COUNT(*) FROM notes_fts").fetchone()[0] == 2
        assert store.execute("SELECT COUNT(*) FROM note_vectors").fetchone()[0] == 2
        assert run_audit(store).ok
        forget(store, "conversation", ["other"])
        assert store.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    finally:
        store.close()


def test_claims_stay_undeletable_outside_forget(db: Path) -> None:
    store = open_store(db, create=False)
    try:
        with pytest.raises(Exception, match="only removed by tracecli forget"):
            store.execute("DELETE FROM claims WHERE conversation_id = 'travel'")
        with pytest.raises(Exception, match="only removed by tracecli forget"):
            store.execute("DELETE FROM claim_ops WHERE conversation_id = 'travel'")
        assert store.get_meta("erasing") is None
    finally:
        store.close()


@pytest.mark.parametrize(
    ("kind", "targets", "kwargs", "error", "words"),
    [
        ("message", ["s9-m9"], {"conversation_id": "travel"}, NotFound, ["no message 's9-m9'"]),
        ("message", ["s1-m1"], {}, BadInput, ["several conversations", "--conversation"]),
        ("speaker", ["Carol"], {"namespace": "alice"}, NotFound, ["no speaker 'Carol'", "namespace 'alice'"]),
        ("conversation", ["other"], {"namespace": "alice"}, NotFound, ["no conversation 'other'"]),
        ("message", ["s1-m1"], {"conversation_id": "other", "namespace": "alice"}, NotFound, ["namespace 'bob'"]),
        ("namespace", ["nobody"], {}, NotFound, ["no namespace 'nobody'"]),
        ("everything", ["x"], {}, BadInput, ["unknown thing to forget"]),
    ],
)
def test_bad_targets_are_refused(db: Path, kind: str, targets: list[str], kwargs: dict[str, Any],
                                 error: type[Exception], words: list[str]) -> None:
    store = open_store(db, create=False)
    try:
        with pytest.raises(error) as info:
            resolve_messages(store, kind, targets, **kwargs)
        for w in words:
            assert w in str(info.value)
    finally:
        store.close()


def test_cli_receipt_json_and_exit_codes(db: Path) -> None:
    from tracecli.cli import app

    before = db.read_bytes()
    bad = runner.invoke(app, ["forget", "message", "s9-m9", "--conversation", "travel", "--db", str(db)])
    assert bad.exit_code == 2 and bad.stdout == "" and "Traceback" not in bad.output
    assert bad.stderr.strip().startswith("error:") and len(bad.stderr.strip().splitlines()) == 1
    assert db.read_bytes() == before
    dry = runner.invoke(app, ["forget", "speaker", "Dan", "--namespace", "bob", "--dry-run", "--json", "--db", str(db)])
    assert dry.exit_code == 0, dry.output
    data = json.loads(dry.stdout)
    assert data["dry_run"] is True and data["conversation_ids"] == ["other"] and len(data["message_ids"]) == 1
    assert {c["table"] for c in data["counts"]} >= {"messages", "notes", "notes_fts", "note_vectors", "events"}
    real = runner.invoke(app, ["forget", "speaker", "Dan", "--namespace", "bob", "--db", str(db)])
    assert real.exit_code == 0, real.output
    assert "forget receipt fg_" in real.stderr and "messages" in real.stderr
