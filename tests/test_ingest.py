"""Library-level ingest with the real MiniLM embedder: rows, idempotence, appends, search, models."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlite_vec

from tracecli.errors import BadInput, ModelMismatch
from tracecli.ingest import ingest_parsed, parse_inputs
from tracecli.ingest.pipeline import IngestResult
from tracecli.store.db import Store, open_store

FIXTURES = Path(__file__).parent / "fixtures"
ROW_TABLES = ("conversations", "sessions", "messages", "notes", "notes_fts", "note_vectors")


def ingest(store: Store, path: Path, embedder: Any, **kwargs: Any) -> list[IngestResult]:
    return [ingest_parsed(store, p, convs, embedder) for p, convs in parse_inputs([path], **kwargs)]


def counts(store: Store) -> dict[str, int]:
    return {t: store.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ROW_TABLES if store.has_table(t)}


def dump(store: Store) -> list[tuple]:
    return [tuple(r) for r in store.execute("SELECT * FROM messages ORDER BY id")]


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


class TinyEmbedder:
    """Another model: a different id and dimension (only for the mismatch tests)."""

    id = "tiny-test-model"
    dimension = 8

    def __init__(self) -> None:
        self.calls = 0

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return np.full((len(texts), self.dimension), 1 / np.sqrt(self.dimension), dtype=np.float32)


@pytest.fixture
def store(db_path: Path):
    st = open_store(db_path)
    yield st
    st.close()


# -- rows ------------------------------------------------------------------------------


def test_rows_match_across_tables(store: Store, embedder: Any) -> None:
    [res] = ingest(store, FIXTURES / "native_sessions.json", embedder)
    [conv] = res.conversations
    assert (conv.conversation_id, conv.new_messages, conv.skipped_messages, conv.new_sessions, conv.created) == (
        "trip-planning", 4, 0, 2, True
    )
    assert counts(store) == {"conversations": 1, "sessions": 2, "messages": 4, "notes": 4, "notes_fts": 4, "note_vectors": 4}

    msgs = store.query("SELECT * FROM messages ORDER BY seq")
    assert [m["seq"] for m in msgs] == [0, 1, 2, 3]
    assert [m["turn"] for m in msgs] == [0, 1, 0, 1]
    assert [m["source_ref"] for m in msgs] == ["m1", "m2", "m3", "m4"]
    assert [m["timestamp"] for m in msgs][2] == "2024-04-10T16:30:00Z"
    sessions = store.query("SELECT id, idx, source_id, started_at FROM sessions ORDER BY idx")
    assert [(s["idx"], s["source_id"], s["started_at"]) for s in sessions] == [
        (0, "first", "2024-03-01T08:55:00Z"),
        (1, "second", "2024-04-10T16:30:00Z"),
    ]
    assert [m["session_id"] for m in msgs] == [sessions[0]["id"]] * 2 + [sessions[1]["id"]] * 2

    conv_row = store.query("SELECT * FROM conversations")[0]
    assert (conv_row["id"], conv_row["namespace"], conv_row["source_format"], conv_row["source_file"]) == (
        "trip-planning", "default", "native", "native_sessions.json"
    )
    assert json.loads(conv_row["participants"]) == ["Alice", "Bob"]

    # One note per message; notes, FTS rows and vectors share the rowid.
    joined = store.query(
        "SELECT n.rowid AS rowid, n.text AS note, f.text AS fts, m.id AS mid, m.text AS message FROM notes n "
        "JOIN messages m ON m.id = n.message_id JOIN notes_fts f ON f.rowid = n.rowid ORDER BY m.seq"
    )
    assert len(joined) == 4
    # FTS indexes the message text alone (not the note's "[date] Speaker:" prefix)
    assert all(r["message"] == r["fts"] and r["note"].endswith(r["fts"]) for r in joined)
    vec_rowids = {r[0] for r in store.execute("SELECT rowid FROM note_vectors")}
    assert vec_rowids == {r["rowid"] for r in joined}


def test_note_text_has_date_and_speaker(store: Store, embedder: Any, tmp_path: Path) -> None:
    ingest(store, FIXTURES / "native_sessions.json", embedder)
    notes = [r[0] for r in store.execute("SELECT n.text FROM notes n JOIN messages m ON m.id = n.message_id ORDER BY m.seq")]
    assert notes == [
        "[2024-03-01] Alice: I am moving to Lisbon in June.",
        "[2024-03-01] Bob: Lisbon! Will you keep the flat in Berlin?",
        "[2024-04-10] Alice: Change of plan: Porto instead of Lisbon.",
        "[2024-04-10] Bob: Porto has better wine anyway.",
    ]
    undated = write_json(tmp_path / "undated.json", [{"speaker": "Zoe", "text": "no clock here"}])
    ingest(store, undated, embedder)
    assert store.execute("SELECT text FROM notes WHERE conversation_id = 'undated'").fetchone()[0] == "[undated] Zoe: no clock here"


def test_meta_records_the_embedding_model(store: Store, embedder: Any) -> None:
    assert store.embedding_model() is None
    ingest(store, FIXTURES / "locomo.json", embedder)
    assert store.get_meta("embed_model") == embedder.id == "all-MiniLM-L6-v2"
    assert store.get_meta("embed_dim") == str(embedder.dimension) == "384"
    assert store.embedding_model() == ("all-MiniLM-L6-v2", 384)


# -- idempotence and appends ---------------------------------------------------------------


def test_reingest_adds_nothing(store: Store, embedder: Any) -> None:
    ingest(store, FIXTURES / "native_sessions.json", embedder)
    before_counts, before_dump = counts(store), dump(store)
    [res] = ingest(store, FIXTURES / "native_sessions.json", embedder)
    [conv] = res.conversations
    assert (conv.new_messages, conv.skipped_messages, conv.new_sessions, conv.created) == (0, 4, 0, False)
    assert res.new_messages == 0
    assert counts(store) == before_counts
    assert dump(store) == before_dump


@pytest.mark.parametrize("fixture", ["locomo.json", "longmemeval.json", "chatgpt.json", "messages.jsonl", "native_flat.json"])
def test_every_format_ingests_and_reingests_to_nothing(store: Store, embedder: Any, fixture: str) -> None:
    [first] = ingest(store, FIXTURES / fixture, embedder)
    n = first.new_messages
    assert n > 0 and all(c.created for c in first.conversations)
    assert counts(store)["messages"] == counts(store)["note_vectors"] == n
    [again] = ingest(store, FIXTURES / fixture, embedder)
    assert again.new_messages == 0
    assert sum(c.skipped_messages for c in again.conversations) == n
    assert counts(store)["messages"] == n


def test_same_conversation_with_new_messages_appends_only_those(store: Store, embedder: Any, tmp_path: Path) -> None:
    ingest(store, FIXTURES / "native_sessions.json", embedder)
    old = {r[0]: r for r in dump(store)}
    data = json.loads((FIXTURES / "native_sessions.json").read_text())
    longer = copy.deepcopy(data)
    longer["sessions"][1]["messages"].append(
        {"id": "m5", "speaker": "Alice", "text": "I'll book a wine tour.", "timestamp": "2024-04-10T18:40:00+02:00"}
    )
    longer["sessions"].append(
        {"id": "third", "messages": [{"id": "m6", "speaker": "Carol", "text": "Hi both, I'm in Porto too!", "timestamp": "2024-05-02T10:00:00Z"}]}
    )
    [res] = ingest(store, write_json(tmp_path / "longer.json", longer), embedder)
    [conv] = res.conversations
    assert (conv.new_messages, conv.skipped_messages, conv.new_sessions, conv.created) == (2, 4, 1, False)
    assert counts(store) == {"conversations": 1, "sessions": 3, "messages": 6, "notes": 6, "notes_fts": 6, "note_vectors": 6}
    # The old rows are untouched.
    now = {r[0]: r for r in dump(store)}
    assert {k: now[k] for k in old} == old
    new = store.query(
        "SELECT m.seq, m.turn, m.source_ref, s.source_id, s.idx FROM messages m JOIN sessions s ON s.id = m.session_id "
        "WHERE m.source_ref IN ('m5', 'm6') ORDER BY m.seq"
    )
    assert [(r["seq"], r["turn"], r["source_ref"], r["source_id"], r["idx"]) for r in new] == [
        (4, 2, "m5", "second", 1),
        (5, 0, "m6", "third", 2),
    ]
    participants = json.loads(store.execute("SELECT participants FROM conversations").fetchone()[0])
    assert participants == ["Alice", "Bob"]  # the file's own list; Carol is not declared there
    # And once more: still nothing new.
    [res] = ingest(store, tmp_path / "longer.json", embedder)
    assert res.new_messages == 0 and counts(store)["messages"] == 6


def test_flat_list_last_session_grows_and_new_session_after_gap(store: Store, embedder: Any, tmp_path: Path) -> None:
    ingest(store, FIXTURES / "native_flat.json", embedder)
    sessions_before = store.query("SELECT id, source_id FROM sessions ORDER BY idx")
    assert len(sessions_before) == 2
    flat = json.loads((FIXTURES / "native_flat.json").read_text())
    grown = flat + [
        {"speaker": "Alice", "text": "Glad to hear it.", "timestamp": "2024-05-01T20:30:00Z"},
        {"speaker": "Bob", "text": "Tomorrow: bouldering?", "timestamp": "2024-05-02T07:00:00Z"},
        {"speaker": "Alice", "text": "Yes, at eight.", "timestamp": "2024-05-02T07:01:00Z"},
    ]
    path = tmp_path / "native_flat.json"  # same stem → same conversation id
    [res] = ingest(store, write_json(path, grown), embedder)
    [conv] = res.conversations
    assert (conv.conversation_id, conv.new_messages, conv.skipped_messages, conv.new_sessions) == ("native_flat", 3, 5, 1)
    rows = store.query(
        "SELECT m.text, m.turn, s.source_id, s.idx FROM messages m JOIN sessions s ON s.id = m.session_id ORDER BY m.seq"
    )
    assert [(r["idx"], r["turn"]) for r in rows] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1)]
    assert rows[5]["text"] == "Glad to hear it."
    assert rows[5]["source_id"] == sessions_before[1]["source_id"]
    assert rows[6]["source_id"] == "t2024-05-02T07:00:00Z"
    assert counts(store)["sessions"] == 3


def test_two_conversations_stay_apart(store: Store, embedder: Any) -> None:
    [res] = ingest(store, FIXTURES / "longmemeval.json", embedder)
    assert [(c.conversation_id, c.new_messages, c.new_sessions) for c in res.conversations] == [
        ("q-update-1", 4, 2),
        ("q-single-2", 2, 1),
    ]
    per_conv = dict(store.execute("SELECT conversation_id, COUNT(*) FROM note_vectors GROUP BY conversation_id").fetchall())
    assert per_conv == {"q-update-1": 4, "q-single-2": 2}


def test_namespace_conflict_is_refused(store: Store, embedder: Any) -> None:
    ingest(store, FIXTURES / "native_flat.json", embedder)
    before = counts(store)
    with pytest.raises(BadInput, match="already exists in namespace 'default', not 'alice'"):
        ingest(store, FIXTURES / "native_flat.json", embedder, namespace="alice")
    assert counts(store) == before


# -- search -----------------------------------------------------------------------------


def _knn(store: Store, vector: Sequence[float], conversation_id: str, k: int = 3) -> list[tuple[int, float]]:
    return [
        (r[0], r[1])
        for r in store.execute(
            f"SELECT rowid, distance FROM note_vectors WHERE embedding MATCH ? AND k = {int(k)} AND conversation_id = ?",
            (sqlite_vec.serialize_float32(list(vector)), conversation_id),
        )
    ]


def test_vectors_are_searchable(store: Store, embedder: Any) -> None:
    ingest(store, FIXTURES / "native_sessions.json", embedder)
    ingest(store, FIXTURES / "longmemeval.json", embedder)
    note = store.query("SELECT rowid, text FROM notes WHERE message_id = (SELECT id FROM messages WHERE source_ref = 'm4')")[0]
    # The note's own text comes back first, at distance ~0: the stored vector is the note's embedding.
    hits = _knn(store, embedder.embed_batch([note["text"]])[0], "trip-planning")
    assert len(hits) == 3
    assert hits[0][0] == note["rowid"]
    assert hits[0][1] < 1e-4
    assert [d for _, d in hits] == sorted(d for _, d in hits)
    # A paraphrase finds the right message.
    [(rowid, _), *_] = _knn(store, embedder.embed_batch(["Which drink is Porto known for?"])[0], "trip-planning")
    assert store.execute("SELECT text FROM notes WHERE rowid = ?", (rowid,)).fetchone()[0].endswith("Porto has better wine anyway.")
    # The partition key keeps conversations apart.
    other = {r for r, _ in _knn(store, embedder.embed_batch([note["text"]])[0], "q-single-2", k=5)}
    other_conv = {r[0] for r in store.execute("SELECT conversation_id FROM notes WHERE rowid IN (%s)" % ",".join(map(str, other)))}
    assert other_conv == {"q-single-2"}


def test_fts_finds_a_keyword(store: Store, embedder: Any) -> None:
    ingest(store, FIXTURES / "native_sessions.json", embedder)

    def fts(q: str) -> list[str]:
        return [
            r[0]
            for r in store.execute(
                "SELECT m.source_ref FROM notes_fts f JOIN notes n ON n.rowid = f.rowid JOIN messages m ON m.id = n.message_id "
                "WHERE notes_fts MATCH ? ORDER BY m.seq",
                (q,),
            )
        ]

    assert fts("wine") == ["m4"]
    assert fts("lisbon") == ["m1", "m2", "m3"]
    assert fts("move") == ["m1"]  # porter stemming: "moving"
    assert fts("Alice") == []  # the "[date] Speaker:" prefix is not indexed: names would match every message of that speaker
    assert fts("keywords:berlin") == ["m2"]  # the keywords column is filled
    assert fts("tokyo") == []


# -- embedding model ---------------------------------------------------------------------


def test_a_different_model_is_refused(store: Store, embedder: Any, tmp_path: Path) -> None:
    ingest(store, FIXTURES / "native_sessions.json", embedder)
    before_counts, before_dump = counts(store), dump(store)
    tiny = TinyEmbedder()
    with pytest.raises(ModelMismatch) as info:
        store.bind_embedding_model(tiny.id, tiny.dimension)
    msg = str(info.value)
    assert "all-MiniLM-L6-v2 (384-d)" in msg and "tiny-test-model (8-d)" in msg

    new_file = write_json(tmp_path / "new.json", {"conversation_id": "fresh", "messages": [{"speaker": "A", "text": "hello"}]})
    with pytest.raises(ModelMismatch) as info:
        ingest(store, new_file, tiny)
    assert "all-MiniLM-L6-v2" in str(info.value) and "tiny-test-model" in str(info.value)
    assert tiny.calls == 0  # refused before any embedding work
    assert counts(store) == before_counts and dump(store) == before_dump
    assert store.embedding_model() == ("all-MiniLM-L6-v2", 384)


def test_refusal_through_ingest_states_the_new_models_dimension(store: Store, embedder: Any, tmp_path: Path) -> None:
    ingest(store, FIXTURES / "native_sessions.json", embedder)
    new_file = write_json(tmp_path / "new.json", {"conversation_id": "fresh", "messages": [{"speaker": "A", "text": "hello"}]})
    with pytest.raises(ModelMismatch) as info:
        ingest(store, new_file, TinyEmbedder())
    assert "tiny-test-model (8-d)" in str(info.value)


def test_a_different_model_may_reingest_known_messages(store: Store, embedder: Any) -> None:
    """Nothing to embed → nothing to mix: a no-op re-ingest does not need the same model."""
    ingest(store, FIXTURES / "native_sessions.json", embedder)
    [res] = ingest(store, FIXTURES / "native_sessions.json", TinyEmbedder())
    assert res.new_messages == 0
    assert store.embedding_model() == ("all-MiniLM-L6-v2", 384)


# -- the real LoCoMo dev file (ingested once per session) -------------------------------------


@pytest.fixture(scope="session")
def locomo_db(tmp_path_factory: pytest.TempPathFactory, locomo_dev: Path, embedder: Any) -> Path:
    path = tmp_path_factory.mktemp("locomo") / "locomo.db"
    st = open_store(path)
    try:
        ingest(st, locomo_dev, embedder)
    finally:
        st.close()  # checkpoints the WAL, so copying the main file is enough
    return path


@pytest.fixture
def locomo_store(locomo_db: Path, tmp_path: Path):
    path = tmp_path / "copy.db"
    shutil.copy(locomo_db, path)
    st = open_store(path)
    yield st
    st.close()


def test_locomo_dev_rows(locomo_store: Store) -> None:
    assert counts(locomo_store) == {
        "conversations": 2, "sessions": 38, "messages": 788, "notes": 788, "notes_fts": 788, "note_vectors": 788
    }
    per_conv = dict(locomo_store.execute("SELECT conversation_id, COUNT(*) FROM messages GROUP BY conversation_id").fetchall())
    assert per_conv == {"conv-26": 419, "conv-30": 369}
    row = locomo_store.query("SELECT source_ref, speaker, timestamp FROM messages WHERE conversation_id = 'conv-26' AND seq = 0")[0]
    assert row == {"source_ref": "D1:1", "speaker": "Caroline", "timestamp": "2023-05-08T13:56:00Z"}
    # dia_ids are unique within a conversation
    dupes = locomo_store.execute(
        "SELECT COUNT(*) FROM (SELECT conversation_id, source_ref FROM messages GROUP BY 1, 2 HAVING COUNT(*) > 1)"
    ).fetchone()[0]
    assert dupes == 0


def test_locomo_dev_reingest_is_a_no_op(locomo_store: Store, locomo_dev: Path, embedder: Any) -> None:
    before = counts(locomo_store)
    [res] = ingest(locomo_store, locomo_dev, embedder)
    assert [(c.conversation_id, c.new_messages, c.skipped_messages, c.created) for c in res.conversations] == [
        ("conv-26", 0, 419, False),
        ("conv-30", 0, 369, False),
    ]
    assert counts(locomo_store) == before


def test_locomo_dev_semantic_search(locomo_store: Store, embedder: Any) -> None:
    hits = _knn(locomo_store, embedder.embed_batch(["LGBTQ support group"])[0], "conv-26")
    texts = [locomo_store.execute("SELECT text FROM notes WHERE rowid = ?", (r,)).fetchone()[0] for r, _ in hits]
    assert any("support group" in t for t in texts), texts
    assert all(t.startswith("[2023-") for t in texts)
    assert locomo_store.execute("SELECT COUNT(*) FROM notes_fts WHERE notes_fts MATCH 'adoption'").fetchone()[0] > 0


# -- embedding order ----------------------------------------------------------------------


class LengthEmbedder:
    """Encodes each text's length and position in its batch; records the batches it was given."""

    id = "length-test-model"
    dimension = 2

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        return np.array([[len(t), i] for i, t in enumerate(texts)], dtype=np.float32)


def test_embedding_runs_shortest_first_and_returns_vectors_in_message_order(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracecli.ingest import pipeline

    monkeypatch.setattr(pipeline, "EMBED_CHUNK", 3)
    texts = ["x" * n for n in (9, 2, 7, 2, 30, 1, 5)]
    emb = LengthEmbedder()
    seen: list[tuple[int, int]] = []
    vectors = pipeline.embed_by_length(emb, texts, lambda done, total: seen.append((done, total)))
    assert [int(v[0]) for v in vectors] == [len(t) for t in texts]  # each vector is its own text's
    assert [[len(t) for t in b] for b in emb.batches] == [[1, 2, 2], [5, 7, 9], [30]]  # padded to similar lengths
    assert seen == [(3, 7), (6, 7), (7, 7)]
    assert pipeline.embed_by_length(emb, [], None) == []


# -- planning once when nothing else wrote ----------------------------------------------------------


class _WritesMeanwhile:
    """The real embedder; while it embeds, `during` (if set) runs once: another connection's write."""

    def __init__(self, inner: Any, during: Any = None) -> None:
        self.inner, self.during = inner, during
        self.id, self.dimension = inner.id, inner.dimension

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if self.during is not None:
            during, self.during = self.during, None
            during()
        return self.inner.embed_batch(texts)


def _count_plans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from tracecli.ingest import pipeline

    calls: list[str] = []
    real = pipeline._plan

    def counted(store: Store, conv: Any, name: str) -> Any:
        calls.append(conv.conversation_id)
        return real(store, conv, name)

    monkeypatch.setattr(pipeline, "_plan", counted)
    return calls


def test_the_plan_stands_when_no_other_connection_wrote(store: Store, embedder: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_plans(monkeypatch)
    [res] = ingest(store, FIXTURES / "native_sessions.json", _WritesMeanwhile(embedder))
    assert calls == ["trip-planning"]  # matched against the store once, not again under the lock
    assert res.conversations[0].new_messages == 4 and counts(store)["messages"] == 4


def test_a_write_by_another_connection_while_embedding_is_planned_again(store: Store, db_path: Path, embedder: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Another ingest of the same file commits while this one embeds: this one plans again under the lock
    and stores nothing twice (no duplicate rows, no clash)."""
    def other_ingest() -> None:
        other = open_store(db_path)
        try:
            ingest(other, FIXTURES / "native_sessions.json", embedder)
        finally:
            other.close()

    calls = _count_plans(monkeypatch)
    [res] = ingest(store, FIXTURES / "native_sessions.json", _WritesMeanwhile(embedder, other_ingest))
    assert calls.count("trip-planning") == 3  # ours, the other ingest's, ours again under the lock
    assert (res.conversations[0].new_messages, res.conversations[0].skipped_messages) == (0, 4)
    assert counts(store) == {"conversations": 1, "sessions": 2, "messages": 4, "notes": 4, "notes_fts": 4, "note_vectors": 4}
