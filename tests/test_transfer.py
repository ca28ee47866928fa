"""`tracecli export` / `tracecli import`: round trips byte for byte, same ids, same answers, clean refusals."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from tracecli.cli import app
from tracecli.graph.build import build_graph
from tracecli.ingest import ingest_parsed, parse_inputs
from tracecli.store import Store, open_store
from tracecli.transfer import DERIVED_TABLES, EXPORT_FORMAT, EXPORT_VERSION, read_export
from tracecli.wiki import compile_wiki

ROOT = Path(__file__).resolve().parent.parent
CAUSAL = ROOT / "sample_conversations" / "causal_chains.json"
NATIVE = Path(__file__).parent / "fixtures" / "native_sessions.json"

runner = CliRunner()

# Messages without timestamps in a dated session (stored under the session start, hashed without one),
# exact duplicates (told apart by their occurrence), a session with no dates at all.
EDGE_V1 = {
    "conversation_id": "edge-cases",
    "participants": ["Ana", "Ben"],
    "sessions": [
        {"id": "one", "started_at": "2024-01-05T10:00:00Z", "messages": [
            {"speaker": "Ana", "text": "ok"},
            {"speaker": "Ana", "text": "ok"},
            {"id": "b1", "speaker": "Ben", "text": "I moved to Oslo last week.", "timestamp": "2024-01-05T10:02:00Z"},
        ]},
        {"id": "two", "messages": [{"speaker": "Ana", "text": "No timestamps here at all."}]},
    ],
}
# A later file appends to the first session: its seq comes after session two's, not in session order.
EDGE_V2 = json.loads(json.dumps(EDGE_V1))
EDGE_V2["sessions"][0]["messages"].append({"id": "b2", "speaker": "Ben", "text": "Actually Bergen, not Oslo.",
                                           "timestamp": "2024-01-05T10:05:00Z"})
QUESTIONS = [
    ("Why did Maya miss the Manchester half marathon?", "maya-sam-project", "default"),
    ("How did Maya end up meeting her co-founder Jonas?", "maya-sam-project", "default"),
    ("Where is Alice moving?", "trip-planning", "work"),
    ("Where did Ben move?", "edge-cases", "default"),
]


def invoke(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def ingest(store: Store, path: Path, embedder: Any, namespace: str | None = None) -> None:
    for p, convs in parse_inputs([path], namespace=namespace):
        ingest_parsed(store, p, convs, embedder)


def checkpoint(path: Path) -> None:
    store = open_store(path, create=False)
    try:
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()


def copy_db(src: Path, dst: Path) -> Path:
    shutil.copy(src, dst)
    return dst


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("transfer")


@pytest.fixture(scope="module")
def source_db(work: Path, embedder: Any) -> Path:
    """Three conversations in two namespaces, one ingested in two steps; graph and wiki built."""
    path = work / "source.db"
    v1, v2 = work / "edge_v1.json", work / "edge_v2.json"
    v1.write_text(json.dumps(EDGE_V1), encoding="utf-8")
    v2.write_text(json.dumps(EDGE_V2), encoding="utf-8")
    store = open_store(path)
    try:
        ingest(store, CAUSAL, embedder)
        ingest(store, NATIVE, embedder, namespace="work")
        ingest(store, v1, embedder)
        ingest(store, v2, embedder)
        for cid in ("maya-sam-project", "trip-planning", "edge-cases"):
            build_graph(store, cid)
            compile_wiki(store, cid, embedder=embedder)
    finally:
        store.close()
    checkpoint(path)
    return path


@pytest.fixture(scope="module")
def exports(work: Path, source_db: Path, embedder: Any) -> dict[str, dict[str, Path]]:
    """For json and jsonl: the export of the source, the database it was imported into, and that database's export."""
    out: dict[str, dict[str, Path]] = {}
    for fmt in ("json", "jsonl"):
        first, again, db = work / f"first.{fmt}", work / f"again.{fmt}", work / f"imported_{fmt}.db"
        ok(invoke("export", "--derived", "--format", fmt, "--db", source_db, "--out", first))
        ok(invoke("import", first, "--db", db))
        checkpoint(db)
        ok(invoke("export", "--derived", "--format", fmt, "--db", db, "--out", again))
        out[fmt] = {"first": first, "again": again, "db": db}
    return out


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    store = open_store(path, create=False)
    try:
        return [tuple(r) for r in store.execute(sql)]
    finally:
        store.close()


def fingerprint(path: Path) -> str:
    """Everything an import could change: the derived export plus the rebuilt index sizes."""
    counts = [rows(path, f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("notes", "notes_fts", "note_vectors", "wiki_fts")]
    result = ok(invoke("export", "--derived", "--db", path))
    return hashlib.sha256((result.stdout + json.dumps(counts)).encode()).hexdigest()


# -- round trip ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_round_trip_is_byte_identical(exports: dict[str, dict[str, Path]], fmt: str) -> None:
    e = exports[fmt]
    assert e["first"].read_bytes() == e["again"].read_bytes()
    data = read_export(e["first"])
    assert data.derived and data.embedding_model == ("all-MiniLM-L6-v2", 384)
    # in the order they were ingested
    assert [c.conversation_id for c in data.conversations] == ["maya-sam-project", "trip-planning", "edge-cases"]
    for table in ("events", "edges", "claims", "claim_ops", "trajectories", "snapshots", "wiki_pages", "wiki_page_trajectories"):
        assert data.tables[table], table


def test_json_and_jsonl_hold_the_same_content(exports: dict[str, dict[str, Path]]) -> None:
    a, b = read_export(exports["json"]["first"]), read_export(exports["jsonl"]["first"])
    assert a.conversations == b.conversations and a.tables == b.tables


def test_import_keeps_ids_and_rebuilds_indexes(source_db: Path, exports: dict[str, dict[str, Path]]) -> None:
    for fmt in ("json", "jsonl"):
        db = exports[fmt]["db"]
        for sql in (
            "SELECT id, namespace, participants, source_format, source_file, created_at FROM conversations ORDER BY id",
            "SELECT id, conversation_id, idx, source_id, started_at FROM sessions ORDER BY id",
            "SELECT id, session_id, seq, turn, speaker, text, timestamp, source_ref, content_hash FROM messages ORDER BY id",
            "SELECT id, message_id, conversation_id, text, keywords FROM notes ORDER BY id",
            "SELECT rowid, id, content_hash FROM wiki_pages ORDER BY rowid",
            "SELECT rowid, title, body, keywords FROM wiki_fts ORDER BY rowid",
            "SELECT rowid, conversation_id FROM wiki_vectors ORDER BY rowid",
            "SELECT rowid, conversation_id FROM note_vectors ORDER BY rowid",
            "SELECT key, value FROM meta ORDER BY key",
        ):
            assert rows(db, sql) == rows(source_db, sql), (fmt, sql)
    # the appended message keeps its out-of-session-order seq
    seqs = rows(source_db, "SELECT s.source_id, m.seq FROM messages m JOIN sessions s ON s.id = m.session_id "
                           "WHERE m.conversation_id = 'edge-cases' ORDER BY m.seq")
    assert [s for s, _ in seqs] == ["one", "one", "one", "two", "one"]


def test_ask_gives_the_same_answers(source_db: Path, exports: dict[str, dict[str, Path]]) -> None:
    for question, cid, ns in QUESTIONS:
        before = invoke("ask", question, "--conversation", cid, "--namespace", ns, "--db", source_db, "--json")
        after = invoke("ask", question, "--conversation", cid, "--namespace", ns, "--db", exports["json"]["db"], "--json")
        assert before.exit_code == after.exit_code and before.exit_code in (0, 1), before.output
        b, a = json.loads(before.stdout), json.loads(after.stdout)
        for key in ("answer", "plan", "source_refs", "abstained"):
            assert b[key] == a[key], (question, key)
        assert not b["abstained"] or cid == "edge-cases", question


# -- ingestible, filters, summaries -------------------------------------------------------------


def test_conversations_only_export_is_an_ingest_input(source_db: Path, tmp_path: Path) -> None:
    out, db = tmp_path / "convs.json", tmp_path / "ingested.db"
    ok(invoke("export", "--db", source_db, "--out", out))
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["format"] == EXPORT_FORMAT and doc["version"] == EXPORT_VERSION and "tables" not in doc
    ok(invoke("ingest", out, "--db", db, "--json"))
    for sql in (
        "SELECT id, namespace, participants FROM conversations ORDER BY id",
        "SELECT id, conversation_id, source_id, started_at FROM sessions ORDER BY id",
        "SELECT id, session_id, speaker, text, timestamp, source_ref, content_hash FROM messages ORDER BY id",
    ):
        assert rows(db, sql) == rows(source_db, sql), sql


def test_namespace_filter(source_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "work.jsonl"
    summary = json.loads(ok(invoke("export", "--namespace", "work", "--derived", "--db", source_db, "--out", out, "--json")).stdout)
    assert summary["format"] == "jsonl" and summary["conversations"] == ["trip-planning"]
    data = read_export(out)
    assert [c.namespace for c in data.conversations] == ["work"]
    assert {r["conversation_id"] for t in DERIVED_TABLES for r in data.tables.get(t, []) if "conversation_id" in r} <= {"trip-planning"}


def test_conversation_filter_takes_only_its_derived_rows(source_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "maya.json"
    ok(invoke("export", "--conversation", "maya-sam-project", "--derived", "--db", source_db, "--out", out))
    data = read_export(out)
    assert [c.conversation_id for c in data.conversations] == ["maya-sam-project"]
    events = {r["id"] for r in data.tables["events"]}
    assert events and all(r["event_id"] in events for r in data.tables["event_notes"])
    assert all(r["conversation_id"] == "maya-sam-project" for t in DERIVED_TABLES for r in data.tables[t] if "conversation_id" in r)
    total = rows(source_db, "SELECT COUNT(*) FROM events WHERE conversation_id = 'maya-sam-project'")[0][0]
    assert len(events) == total


@pytest.mark.parametrize("args", [
    ["--conversation", "nope"],
    ["--namespace", "nobody"],
    ["--conversation", "edge-cases", "--namespace", "default"],
    ["--format", "xml"],
    ["--json", "--format", "jsonl"],  # --json alone prints the export itself, which JSONL is not
])
def test_bad_export_options_exit_2(source_db: Path, args: list[str]) -> None:
    result = invoke("export", "--db", source_db, *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and "Traceback" not in result.stderr


def test_export_to_stdout_is_the_file(source_db: Path, exports: dict[str, dict[str, Path]]) -> None:
    result = ok(invoke("export", "--derived", "--db", source_db))
    assert result.stdout.encode("utf-8") == exports["json"]["first"].read_bytes()


def test_export_json_without_out_is_the_json_export(source_db: Path, exports: dict[str, dict[str, Path]]) -> None:
    result = ok(invoke("export", "--derived", "--json", "--db", source_db))
    assert result.stdout.encode("utf-8") == exports["json"]["first"].read_bytes()
    assert json.loads(result.stdout)["format"] == "tracecli-export"


def test_import_json_summary(source_db: Path, exports: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    out = tmp_path / "trip.json"
    ok(invoke("export", "--conversation", "trip-planning", "--derived", "--db", source_db, "--out", out))
    summary = json.loads(ok(invoke("import", out, "--db", tmp_path / "t.db", "--json")).stdout)
    assert set(summary) == {"file", "format", "conversations", "tables", "elapsed_s"} and summary["format"] == "json"
    assert summary["conversations"] == [{"conversation_id": "trip-planning", "namespace": "work", "status": "imported", "messages": 4}]
    counts = {t["table"]: t["rows"] for t in summary["tables"]}
    assert counts["messages"] == 4 and set(DERIVED_TABLES) <= set(counts)


# -- existing conversations -------------------------------------------------------------------------


def test_import_of_identical_conversations_is_a_no_op(exports: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    db = copy_db(exports["json"]["db"], tmp_path / "copy.db")
    before = fingerprint(db)
    summary = json.loads(ok(invoke("import", exports["jsonl"]["first"], "--db", db, "--json")).stdout)
    assert {c["status"] for c in summary["conversations"]} == {"unchanged"}
    assert all(t["rows"] == 0 for t in summary["tables"])
    assert fingerprint(db) == before


def test_import_of_a_different_conversation_with_the_same_id_is_refused(exports: dict[str, dict[str, Path]], tmp_path: Path) -> None:
    db = copy_db(exports["json"]["db"], tmp_path / "copy.db")
    doc = json.loads(exports["json"]["first"].read_text(encoding="utf-8"))
    doc["conversations"] = [c for c in doc["conversations"] if c["conversation_id"] == "trip-planning"]
    doc["conversations"][0]["participants"].append("Carol")
    del doc["tables"]
    bad = tmp_path / "changed.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    before = fingerprint(db)
    result = invoke("import", bad, "--db", db)
    assert result.exit_code == 2
    assert "changed.json" in result.stderr and "trip-planning" in result.stderr and "already in" in result.stderr
    assert fingerprint(db) == before


def test_page_rowids_taken_in_the_target_are_renumbered(source_db: Path, tmp_path: Path) -> None:
    a, b, db = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "both.db"
    ok(invoke("export", "--conversation", "maya-sam-project", "--derived", "--db", source_db, "--out", a))
    ok(invoke("export", "--conversation", "trip-planning", "--derived", "--db", source_db, "--out", b))
    doc = json.loads(b.read_text(encoding="utf-8"))
    first_rowids = [p["rowid"] for p in json.loads(a.read_text(encoding="utf-8"))["tables"]["wiki_pages"]]
    for p, rowid in zip(doc["tables"]["wiki_pages"], first_rowids):
        p["rowid"] = rowid  # collide with the pages of the first import
    b.write_text(json.dumps(doc), encoding="utf-8")
    ok(invoke("import", a, "--db", db))
    ok(invoke("import", b, "--db", db))
    pages = rows(db, "SELECT rowid, conversation_id, title FROM wiki_pages ORDER BY rowid")
    assert len(pages) == len(first_rowids) + len(doc["tables"]["wiki_pages"])
    assert rows(db, "SELECT rowid, conversation_id, title FROM wiki_fts ORDER BY rowid") == pages
    assert [r[:2] for r in rows(db, "SELECT rowid, conversation_id FROM wiki_vectors ORDER BY rowid")] == [p[:2] for p in pages]


# -- bad files ----------------------------------------------------------------------------------------


def _edit(doc: dict[str, Any], how: str) -> Any:
    if how == "version":
        doc["version"] = 99
    elif how == "format":
        del doc["format"]
    elif how == "no_messages_key":
        del doc["conversations"][0]["sessions"][0]["messages"][0]["message_id"]
    elif how == "seq_text":
        doc["conversations"][0]["sessions"][0]["messages"][0]["seq"] = "first"
    elif how == "unknown_table":
        doc["tables"]["answers"] = []
    elif how == "unknown_column":
        doc["tables"]["events"][0]["colour"] = "red"
    elif how == "bad_base64":
        doc["tables"]["trajectories"][0]["sum_vector"] = "%%%"
    elif how == "orphan_row":
        doc["tables"]["events"][0]["conversation_id"] = "someone-else"
    elif how == "orphan_child":
        doc["tables"]["event_notes"][0]["event_id"] = "ev_missing"
    elif how == "edited_text":
        # Passes every shape check; fails when the ingested id does not match: after embedding, inside the transaction.
        doc["conversations"][0]["sessions"][0]["messages"][0]["text"] += " (edited)"
    elif how == "duplicate_event":
        doc["tables"]["events"].append(dict(doc["tables"]["events"][0]))
    elif how == "not_export":
        return {"conversation_id": "x", "messages": [{"speaker": "a", "text": "b"}]}
    return doc


BAD = ["version", "format", "no_messages_key", "seq_text", "unknown_table", "unknown_column", "bad_base64",
       "orphan_row", "orphan_child", "edited_text", "duplicate_event", "not_export"]


@pytest.fixture(scope="module")
def small(work: Path, source_db: Path) -> dict[str, Path]:
    """A derived export of the small conversation, and a target database that holds another conversation."""
    trip, edge, target = work / "trip.json", work / "edge.json", work / "target.db"
    ok(invoke("export", "--conversation", "trip-planning", "--derived", "--db", source_db, "--out", trip))
    ok(invoke("export", "--conversation", "edge-cases", "--derived", "--db", source_db, "--out", edge))
    ok(invoke("import", edge, "--db", target))
    checkpoint(target)
    return {"trip": trip, "target": target}


@pytest.mark.parametrize("how", BAD)
def test_bad_import_files_exit_2_and_leave_the_db_untouched(how: str, small: dict[str, Path], tmp_path: Path) -> None:
    db = copy_db(small["target"], tmp_path / "target.db")
    before = fingerprint(db)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edit(json.loads(small["trip"].read_text(encoding="utf-8")), how)), encoding="utf-8")
    result = invoke("import", bad, "--db", db)
    assert result.exit_code == 2, (how, result.stdout, result.stderr)
    assert result.stdout == ""
    line = result.stderr.strip()
    assert "\n" not in line and "bad.json" in line and "Traceback" not in line, line
    assert fingerprint(db) == before


def test_the_small_export_imports_cleanly(small: dict[str, Path], tmp_path: Path) -> None:
    db = copy_db(small["target"], tmp_path / "target.db")
    ok(invoke("import", small["trip"], "--db", db))
    assert rows(db, "SELECT id FROM conversations ORDER BY id") == [("edge-cases",), ("trip-planning",)]


@pytest.mark.parametrize("content,problem", [
    ("{not json", "malformed JSON"),
    ("", "empty"),
    ('{"record":"header","format":"tracecli-export","version":1}\n{"record":"message","conversation_id":"x"}\n', "no earlier line"),
    ('{"record":"header","format":"tracecli-export","version":1}\n', "no conversations"),
])
def test_unreadable_files_do_not_create_the_db(tmp_path: Path, content: str, problem: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    db = tmp_path / "never.db"
    result = invoke("import", bad, "--db", db)
    assert result.exit_code == 2 and problem in result.stderr and "bad.jsonl" in result.stderr, result.stderr
    assert not db.exists()


def test_jsonl_message_lines_are_a_jsonl_ingest_input(source_db: Path, tmp_path: Path) -> None:
    out, msgs, db = tmp_path / "edge.jsonl", tmp_path / "msgs.jsonl", tmp_path / "ingested.db"
    ok(invoke("export", "--conversation", "edge-cases", "--db", source_db, "--out", out))
    msgs.write_text("".join(line for line in out.read_text(encoding="utf-8").splitlines(keepends=True)
                            if '"record":"message"' in line), encoding="utf-8")
    ok(invoke("ingest", msgs, "--db", db, "--json"))
    sql = "SELECT id, speaker, text, source_ref, content_hash FROM messages WHERE conversation_id = 'edge-cases' ORDER BY id"
    assert rows(db, sql) == rows(source_db, sql)


def test_native_bundle_errors_name_the_conversation(tmp_path: Path) -> None:
    from tracecli.errors import BadInput
    from tracecli.ingest import parse_file

    path = tmp_path / "bundle.json"
    path.write_text(json.dumps({"conversations": [
        {"conversation_id": "a", "messages": [{"speaker": "Ann", "text": "hi"}]},
        {"conversation_id": "b", "sessions": [{"id": "s", "messages": [{"speaker": "Bo"}]}]},
    ]}), encoding="utf-8")
    with pytest.raises(BadInput, match=r"bundle\.json: conversations\[1\]\.sessions\[0\]\.messages\[0\] has no 'text'"):
        parse_file(path)
    path.write_text(json.dumps({"conversations": [{"conversation_id": "a", "namespace": "x", "messages": [{"speaker": "Ann", "text": "hi"}]}]}))
    [conv] = parse_file(path)
    assert (conv.conversation_id, conv.namespace, conv.source_format) == ("a", "x", "native")
