"""Note retrieval for `ask` (TRACE Eq. 13): dense (sqlite-vec), sparse (FTS5/BM25), reciprocal rank fusion."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.register_assert_rewrite("ask_fixtures")

from ask_fixtures import ALICE, LENA, MAYA  # noqa: E402

from tracecli.query.retrieve import dense_search, hybrid_search, rrf, sparse_search  # noqa: E402

pytest_plugins = ["ask_fixtures"]


def test_rrf_golden() -> None:
    scores = rrf([[1, 2, 3], [3, 1]], k=60)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[2] == pytest.approx(1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert rrf([]) == {}


@pytest.fixture(scope="module")
def qvec(embedder: Any) -> Any:
    return lambda q: np.asarray(embedder.embed_batch([q])[0], dtype=np.float32)


def test_dense_is_ordered_and_scoped(ask_store: Any, qvec: Any) -> None:
    hits = dense_search(ask_store, qvec("Where is Alice moving?"), [ALICE, LENA], 15)
    assert len(hits) == 15
    assert [c for _, c in hits] == sorted((c for _, c in hits), reverse=True)
    cids = {r[0] for r in ask_store.execute(
        f"SELECT conversation_id FROM notes WHERE rowid IN ({','.join(str(r) for r, _ in hits)})")}
    assert cids <= {ALICE, LENA}


def test_sparse_needs_content_words(ask_store: Any) -> None:
    assert sparse_search(ask_store, "what is it and why?", [ALICE], 10) == []
    hits = sparse_search(ask_store, "Khruangbin", [ALICE, MAYA], 10)
    assert len(hits) == 1
    text = ask_store.execute("SELECT text FROM notes WHERE rowid = ?", (hits[0][0],)).fetchone()[0]
    assert "Khruangbin" in text


def test_hybrid_fuses_both_rankings(ask_store: Any, qvec: Any) -> None:
    q = "What is Alice's favourite band?"
    hits = hybrid_search(ask_store, q, qvec(q), [ALICE], k_dense=20, k_sparse=20)
    assert hits and hits[0].source_ref == "s2-m16"
    for h in hits:
        want = sum(1 / (60 + r) for r in (h.dense_rank, h.sparse_rank) if r is not None)
        assert h.score == pytest.approx(want)
        assert h.conversation_id == ALICE
    keys = [(-h.score, h.rowid) for h in hits]
    assert keys == sorted(keys), "total order: score, then rowid"
    dense_only = hybrid_search(ask_store, q, qvec(q), [ALICE], mode="dense")
    assert all(h.sparse_rank is None for h in dense_only)
    sparse_only = hybrid_search(ask_store, q, qvec(q), [ALICE], mode="sparse")
    assert all(h.dense_rank is None for h in sparse_only)
    assert all(-1.0 <= h.cosine <= 1.0 for h in sparse_only)


def test_speaker_names_do_not_drown_the_evidence(ask_store: Any, qvec: Any) -> None:
    q = "What sport does Maya do now?"
    dense = hybrid_search(ask_store, q, qvec(q), [MAYA], mode="dense")
    assert "s5-m7" in [h.source_ref for h in dense[:3]]
    hybrid = hybrid_search(ask_store, q, qvec(q), [MAYA])
    assert "s5-m7" in [h.source_ref for h in hybrid[:10]]
