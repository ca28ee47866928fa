"""What `Asker` keeps between questions: per-scope caches that a new build invalidates, and stored event vectors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tracecli.query.frame_answer import TOP_CANDIDATES
import pytest
from test_graph_helpers import SAMPLES, UPDATE_HEAVY_ID, ingest_data

from tracecli.graph.build import build_graph
from tracecli.ingest import ingest_parsed, parse_file
from tracecli.query.ask import Asker
from tracecli.query.vectors import EventVectors, quote_hash
from tracecli.store.db import Store, open_store

CAT = "What is Alice's cat called?"


class CountingEmbedder:
    """The session embedder, counting the texts it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.id, self.dimension = inner, inner.id, inner.dimension
        self.texts: list[str] = []

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed_batch(list(texts))


def _first_sessions(store: Store, tmp_path: Path, embedder: Any, n: int) -> None:
    data = json.loads((SAMPLES / "update_heavy.json").read_text(encoding="utf-8"))
    ingest_data(store, tmp_path / "first.json", {**data, "sessions": data["sessions"][:n]}, embedder)
    build_graph(store, UPDATE_HEAVY_ID, extractor="rules")


@pytest.fixture
def store(tmp_path: Path, embedder: Any) -> Any:
    s = open_store(tmp_path / "cache.db")
    _first_sessions(s, tmp_path, embedder, 3)
    yield s
    s.close()


def test_a_new_build_reaches_the_same_asker(store: Store, embedder: Any) -> None:
    asker = Asker(store, embedder=embedder)
    assert "Biscuit" in asker.ask(CAT, conversation_id=UPDATE_HEAVY_ID).answer
    scope = asker._scope([UPDATE_HEAVY_ID])
    assert asker._scope([UPDATE_HEAVY_ID]) is scope  # nothing changed: the cached scope serves
    source = SAMPLES / "update_heavy.json"
    ingest_parsed(store, source, parse_file(source), embedder)
    assert asker._scope([UPDATE_HEAVY_ID]) is not scope  # new notes: reloaded
    build_graph(store, UPDATE_HEAVY_ID, extractor="rules")
    assert "Mochi" in asker.ask(CAT, conversation_id=UPDATE_HEAVY_ID).answer


def test_a_rebuild_invalidates_the_scope(store: Store, embedder: Any) -> None:
    asker = Asker(store, embedder=embedder)
    scope = asker._scope([UPDATE_HEAVY_ID])
    build_graph(store, UPDATE_HEAVY_ID, extractor="rules", rebuild=True)
    assert asker._scope([UPDATE_HEAVY_ID]) is not scope


def test_event_vectors_are_stored_once_and_reused(store: Store, embedder: Any) -> None:
    first = CountingEmbedder(embedder)
    asker = Asker(store, embedder=first)
    asker.ask(CAT, conversation_id=UPDATE_HEAVY_ID)
    rows = store.execute("SELECT event_id, model, quote_hash, embedding FROM event_vectors").fetchall()
    # the re-ranked top events and the answer step's candidate frames (tracecli.query.frame_answer)
    assert 0 < len(rows) <= 16 + TOP_CANDIDATES
    quotes = dict(store.execute("SELECT id, quote FROM events").fetchall())
    for eid, model, qhash, blob in rows:
        assert model == embedder.id and qhash == quote_hash(quotes[eid])
        # a vector is the sentence embedded on its own, whatever else the question needed
        np.testing.assert_allclose(np.frombuffer(blob, dtype=np.float32), embedder.embed_batch([quotes[eid]])[0], atol=1e-6)
    embedded = [q for q in first.texts if q in quotes.values()]
    # one sentence can state several frames (several events): each distinct sentence is embedded once
    # each distinct sentence is embedded once, even when it states several frames (several events)
    assert len(embedded) == len(set(embedded)) and set(embedded) == {quotes[eid] for eid, *_ in rows}

    again = CountingEmbedder(embedder)
    res = Asker(store, embedder=again).ask(CAT, conversation_id=UPDATE_HEAVY_ID)
    # only the question, as asked and put to the participant it names, and the noun phrase it asks for (the
    # learned choice reads each candidate's closeness to it): the sentences come from the table
    assert again.texts == [CAT, "What is your cat called?", "cat"]
    assert "Biscuit" in res.answer


def test_warm_fills_every_event_then_nothing(store: Store, embedder: Any) -> None:
    asker = Asker(store, embedder=embedder)
    n_events = store.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    assert asker.warm(conversation_id=UPDATE_HEAVY_ID, nlp=False) == n_events
    assert store.execute("SELECT COUNT(*) FROM event_vectors").fetchone()[0] == n_events
    assert Asker(store, embedder=embedder).warm(conversation_id=UPDATE_HEAVY_ID, nlp=False) == 0


def test_stale_or_foreign_vectors_are_recomputed(store: Store, embedder: Any) -> None:
    Asker(store, embedder=embedder).warm(conversation_id=UPDATE_HEAVY_ID, nlp=False)
    eid_a, eid_b = [r[0] for r in store.execute("SELECT event_id FROM event_vectors ORDER BY event_id LIMIT 2")]
    store.execute("UPDATE event_vectors SET quote_hash = 'x' WHERE event_id = ?", (eid_a,))
    store.execute("UPDATE event_vectors SET model = 'other-model' WHERE event_id = ?", (eid_b,))
    assert Asker(store, embedder=embedder).warm(conversation_id=UPDATE_HEAVY_ID, nlp=False) == 2
    assert store.execute("SELECT COUNT(*) FROM event_vectors WHERE quote_hash = 'x' OR model = 'other-model'").fetchone()[0] == 0


def test_vectors_go_with_their_events(store: Store, embedder: Any) -> None:
    Asker(store, embedder=embedder).warm(conversation_id=UPDATE_HEAVY_ID, nlp=False)
    store.execute("DELETE FROM event_notes")
    store.execute("DELETE FROM events")
    assert store.execute("SELECT COUNT(*) FROM event_vectors").fetchone()[0] == 0


def test_vectors_serve_the_process_when_they_cannot_be_stored(store: Store, embedder: Any) -> None:
    store.execute("DROP TABLE event_vectors")
    vectors = EventVectors(store, embedder, [UPDATE_HEAVY_ID])
    events = [ev for ev in Asker(store, embedder=embedder)._scope([UPDATE_HEAVY_ID]).graph.events.values()][:3]
    assert vectors.matrix(events).shape == (3, embedder.dimension) and len(vectors) == 3
    assert "Biscuit" in Asker(store, embedder=embedder).ask(CAT, conversation_id=UPDATE_HEAVY_ID, store_answer=False).answer


def test_ask_runs_blas_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole of `Asker.ask` (spaCy's parses of the question and candidates included) runs with BLAS on one
    thread, as build-graph's parses do; the limit is lifted afterwards."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    outside = blas_threads()
    if not outside or max(outside) == 1:
        pytest.skip("BLAS runs on one thread here anyway")
    monkeypatch.setattr(Asker, "_ask", lambda self, question, **kw: blas_threads())
    assert set(Asker.ask(object.__new__(Asker), "Where does Alice live?")) == {1}
    assert blas_threads() == outside
