"""Note retrieval: dense (the store's vector search), sparse (its full-text search), fused by reciprocal rank fusion.

Also the flat baselines of the eval (the same retrieval without the graph).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tracecli.store.db import Store, placeholders
from tracecli.text import fts_query


@dataclass
class NoteHit:
    """A retrieved note with its fused score and the ranks that produced it."""

    rowid: int
    note_id: str
    message_id: str
    conversation_id: str
    text: str
    source_ref: str | None
    timestamp: str | None
    speaker: str
    score: float
    dense_rank: int | None = None
    sparse_rank: int | None = None
    cosine: float = 0.0


def dense_search(store: Store, query_vec: np.ndarray, conversation_ids: Sequence[str], k: int) -> list[tuple[int, float]]:
    """(note rowid, cosine) best first, over the given conversations."""
    if not store.has_table("note_vectors"):
        return []
    vec = np.asarray(query_vec, dtype=np.float32).tolist()
    hits: list[tuple[int, float]] = []
    for cid in conversation_ids:
        hits.extend((rowid, 1.0 - distance) for rowid, distance in store.knn("note_vectors", vec, k, cid))
    hits.sort(key=lambda h: (-h[1], h[0]))
    return hits[:k]


def sparse_search(store: Store, question: str, conversation_ids: Sequence[str], k: int) -> list[tuple[int, float]]:
    """(note rowid, full-text score (bm25 on SQLite, ts_rank_cd on PostgreSQL); higher is better) best first."""
    expr = fts_query(question)
    if not expr:
        return []
    return store.fts_search("notes_fts", expr, join="notes n ON n.rowid = f.rowid",
                            where=f"n.conversation_id IN ({placeholders(conversation_ids)})", params=conversation_ids, limit=k)


def mentions(store: Store, word: str, conversation_ids: Sequence[str]) -> bool:
    """Whether any message of the conversations contains `word` (full-text, any case)."""
    phrase = '"' + word.replace('"', " ") + '"'
    return bool(store.fts_search("notes_fts", phrase, join="notes n ON n.rowid = f.rowid",
                                 where=f"n.conversation_id IN ({placeholders(conversation_ids)})",
                                 params=conversation_ids, limit=1))


def rrf(rankings: Sequence[Sequence[int]], k: int = 60) -> dict[int, float]:
    """Reciprocal rank fusion of several rankings of ids."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return scores


def note_rows(store: Store, rowids: Sequence[int]) -> dict[int, dict]:
    """Note and message fields for the given note rowids."""
    if not rowids:
        return {}
    marks = placeholders(rowids)
    return {
        r["rowid"]: r
        for r in store.query(
            f"SELECT n.rowid AS rowid, n.id AS note_id, n.message_id, n.conversation_id, n.text, m.source_ref, "
            f"m.timestamp, m.speaker FROM notes n JOIN messages m ON m.id = n.message_id WHERE n.rowid IN ({marks})",
            list(rowids),
        )
    }


def note_vectors(store: Store, rowids: Sequence[int]) -> dict[int, np.ndarray]:
    """Stored vectors of notes by rowid."""
    if not rowids:
        return {}
    marks = placeholders(rowids)
    return {
        int(r[0]): np.frombuffer(r[1], dtype=np.float32)
        for r in store.execute(f"SELECT rowid, embedding FROM note_vectors WHERE rowid IN ({marks})", list(rowids))
    }


def hybrid_search(
    store: Store, question: str, query_vec: np.ndarray, conversation_ids: Sequence[str], *, k_dense: int = 40,
    k_sparse: int = 40, rrf_k: int = 60, mode: str = "hybrid",
) -> list[NoteHit]:
    """Notes ranked by dense, sparse or both fused (mode: dense | sparse | hybrid)."""
    dense = dense_search(store, query_vec, conversation_ids, k_dense) if mode in ("dense", "hybrid") else []
    sparse = sparse_search(store, question, conversation_ids, k_sparse) if mode in ("sparse", "hybrid") else []
    dense_ids = [d[0] for d in dense]
    sparse_ids = [s[0] for s in sparse]
    fused = rrf([r for r in (dense_ids, sparse_ids) if r], rrf_k)
    rows = note_rows(store, list(fused))
    cos = dict(dense)
    missing = [r for r in fused if r not in cos]
    if missing:
        vecs = note_vectors(store, missing)
        q = np.asarray(query_vec, dtype=np.float32)
        cos.update({r: float(np.dot(v, q)) for r, v in vecs.items()})
    d_rank = {r: i for i, r in enumerate(dense_ids, 1)}
    s_rank = {r: i for i, r in enumerate(sparse_ids, 1)}
    hits = [
        NoteHit(
            rowid=r, note_id=rows[r]["note_id"], message_id=rows[r]["message_id"],
            conversation_id=rows[r]["conversation_id"], text=rows[r]["text"], source_ref=rows[r]["source_ref"],
            timestamp=rows[r]["timestamp"], speaker=rows[r]["speaker"], score=score,
            dense_rank=d_rank.get(r), sparse_rank=s_rank.get(r), cosine=cos.get(r, 0.0),
        )
        for r, score in fused.items()
        if r in rows
    ]
    hits.sort(key=lambda h: (-h.score, h.rowid))
    return hits
