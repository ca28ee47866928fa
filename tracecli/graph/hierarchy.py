"""Hierarchy (TRACE Eq. 8): sessions grouped into topics by their note embeddings.

Topics come from online leader clustering in session order: a session joins
the nearest existing topic whose centroid is within `threshold` cosine, or
starts a new one. Processing sessions in order makes an incremental build give
exactly the topics of a full rebuild (a batch method such as agglomerative
clustering would reshuffle old topics whenever a session arrives). Above
`window` sessions, only topics whose last session is within the most recent
`window` sessions are candidates, the paper's chronological windows at scale.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import sqlite_vec

from tracecli.store.db import Store, dumps
from tracecli.text import content_words, short_hash


@dataclass
class TopicSettings:
    threshold: float = 0.55  # cosine of a session mean to a topic centroid to join it
    window: int = 50  # sessions; older topics stop accepting members


def session_vector(store: Store, session_id: str, dim: int) -> np.ndarray | None:
    """Mean of the session's note vectors, unit-normalised."""
    rows = store.execute(
        "SELECT v.embedding FROM notes n JOIN messages m ON m.id = n.message_id "
        "JOIN note_vectors v ON v.rowid = n.rowid WHERE m.session_id = ?",
        (session_id,),
    ).fetchall()
    if not rows:
        return None
    mat = np.stack([np.frombuffer(r[0], dtype=np.float32) for r in rows])
    mean = mat.mean(axis=0)
    norm = float(np.linalg.norm(mean)) or 1.0
    return (mean / norm).astype(np.float32)


def assign_topics(store: Store, conversation_id: str, session_ids: list[str], settings: TopicSettings) -> dict[str, str]:
    """Give each new session a topic; creates or grows topics in the store. Returns session → topic."""
    model = store.embedding_model()
    dim = model[1] if model else 0
    topics = store.query(
        "SELECT id, centroid, size FROM topics WHERE conversation_id = ? ORDER BY id", (conversation_id,)
    )
    last_idx = {
        r[0]: r[1]
        for r in store.execute(
            "SELECT st.topic_id, MAX(s.idx) FROM session_topics st JOIN sessions s ON s.id = st.session_id "
            "WHERE s.conversation_id = ? GROUP BY st.topic_id",
            (conversation_id,),
        )
    }
    centroids = {t["id"]: (np.frombuffer(t["centroid"], dtype=np.float32).copy(), t["size"]) for t in topics if t["centroid"]}
    out: dict[str, str] = {}
    for sid in session_ids:
        idx = store.execute("SELECT idx FROM sessions WHERE id = ?", (sid,)).fetchone()[0]
        vec = session_vector(store, sid, dim) if dim else None
        best, best_sim = None, -1.0
        if vec is not None:
            for tid, (cen, _size) in sorted(centroids.items()):
                if idx - last_idx.get(tid, idx) > settings.window:
                    continue
                sim = float(np.dot(vec, cen) / ((np.linalg.norm(cen) or 1.0)))
                if sim > best_sim:
                    best, best_sim = tid, sim
        if best is None or best_sim < settings.threshold:
            best = "tp_" + short_hash(conversation_id, sid)
            centroids[best] = (vec if vec is not None else np.zeros(dim or 1, dtype=np.float32), 0)
            store.execute(
                "INSERT INTO topics(id, conversation_id, label, keywords, centroid, size) VALUES (?,?,?,?,?,0)",
                (best, conversation_id, "", "[]", None),
            )
        cen, size = centroids[best]
        if vec is not None:
            cen = (cen * size + vec) / (size + 1)
        centroids[best] = (cen, size + 1)
        last_idx[best] = idx
        store.execute(
            "UPDATE topics SET centroid = ?, size = ? WHERE id = ?",
            (sqlite_vec.serialize_float32(cen.tolist()) if vec is not None else None, size + 1, best),
        )
        store.execute("INSERT INTO session_topics(session_id, topic_id) VALUES (?, ?) "
                      "ON CONFLICT(session_id) DO UPDATE SET topic_id = excluded.topic_id", (sid, best))
        out[sid] = best
    _relabel(store, conversation_id, sorted(set(out.values())))  # a label reads only its own topic's messages
    return out


def refresh_topics(store: Store, conversation_id: str) -> int:
    """After sessions or messages were removed: drop empty topics, recompute centroids and labels.

    A centroid is the running mean of its sessions' vectors, so recomputing it
    from the remaining sessions gives what an incremental build would have.
    Returns the number of topics removed.
    """
    model = store.embedding_model()
    dim = model[1] if model else 0
    empty = [r[0] for r in store.execute(
        "SELECT t.id FROM topics t WHERE t.conversation_id = ? AND NOT EXISTS "
        "(SELECT 1 FROM session_topics st WHERE st.topic_id = t.id) ORDER BY t.id", (conversation_id,))]
    for tid in empty:
        store.execute("DELETE FROM topics WHERE id = ?", (tid,))
    for (tid,) in store.execute("SELECT id FROM topics WHERE conversation_id = ? ORDER BY id", (conversation_id,)).fetchall():
        members = [r[0] for r in store.execute(
            "SELECT st.session_id FROM session_topics st JOIN sessions s ON s.id = st.session_id "
            "WHERE st.topic_id = ? ORDER BY s.idx", (tid,))]
        vecs = [v for v in (session_vector(store, sid, dim) for sid in members) if v is not None] if dim else []
        centroid = sqlite_vec.serialize_float32(np.mean(vecs, axis=0).tolist()) if vecs else None
        store.execute("UPDATE topics SET centroid = ?, size = ? WHERE id = ?", (centroid, len(members), tid))
    _relabel(store, conversation_id)
    return len(empty)


def _relabel(store: Store, conversation_id: str, topic_ids: list[str] | None = None) -> None:
    """Label each topic (or only `topic_ids`, those that gained sessions) by its most frequent content words."""
    if topic_ids is None:
        topic_ids = [r[0] for r in store.execute("SELECT id FROM topics WHERE conversation_id = ?", (conversation_id,))]
    for tid in topic_ids:
        counts: Counter[str] = Counter()
        for (text,) in store.execute(
            "SELECT m.text FROM messages m JOIN session_topics st ON st.session_id = m.session_id WHERE st.topic_id = ?",
            (tid,),
        ):
            counts.update(w for w in content_words(text) if len(w) > 3)
        top = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:6]]
        store.execute("UPDATE topics SET label = ?, keywords = ? WHERE id = ?", (" / ".join(top[:3]), dumps(top), tid))
