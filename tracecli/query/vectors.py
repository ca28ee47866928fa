"""Event-sentence vectors for `ask`'s re-rank step, cached in the `event_vectors` table (migration m007).

Re-ranking compares the question with each candidate event's own sentence.
Embedding those sentences on every question cost ~16 ms each (16 per
question); the vectors depend only on the sentence and the model, so they are
computed once, stored next to the event, and read back with the graph.

Each sentence is embedded on its own (a batch of one), so a stored vector does
not depend on which other sentences happened to share its batch: the same
database gives the same answers whichever questions filled the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pysqlite3.dbapi2 as sqlite3

from tracecli.query.paths import EventNode
from tracecli.errors import StoreError
from tracecli.store.db import ASIDE_WAIT, Store, placeholders
from tracecli.text import short_hash

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder


def quote_hash(quote: str) -> str:
    """What ties a stored vector to the sentence it was computed from."""
    return short_hash(quote, length=16)


def embedder_id(embedder: Embedder) -> str:
    """The model id vectors are stored under ('?' for an embedder that names none)."""
    return str(getattr(embedder, "id", "?"))


class EventVectors:
    """Event id → unit vector of the event's sentence, for the events of one scope.

    `load` reads what the table holds for the scope; `ensure` embeds and writes
    back the events that have no (or a stale) vector.
    """

    def __init__(self, store: Store, embedder: Embedder, conversation_ids: Sequence[str]) -> None:
        self.store = store
        self.embedder = embedder
        self.conversation_ids = list(conversation_ids)
        self.model = embedder_id(embedder)
        self._vecs: dict[str, np.ndarray] = {}
        self._hashes: dict[str, str] = {}
        self.pending: list[tuple[str, str, str, str, bytes]] = []  # computed, not yet stored

    def __len__(self) -> int:
        return len(self._vecs)

    def load(self, events: Iterable[EventNode]) -> None:
        """Read the stored vectors of `events` that match their sentence and this model."""
        if not self.store.has_table("event_vectors") or not self.conversation_ids:
            return
        marks = placeholders(self.conversation_ids)
        want = {ev.id: quote_hash(ev.quote) for ev in events}
        for eid, qhash, blob in self.store.execute(
            f"SELECT event_id, quote_hash, embedding FROM event_vectors WHERE conversation_id IN ({marks}) AND model = ?",
            (*self.conversation_ids, self.model),
        ):
            if want.get(eid) == qhash:
                self._vecs[eid] = np.frombuffer(blob, dtype=np.float32)
                self._hashes[eid] = qhash

    def ensure(self, events: Sequence[EventNode], progress: Callable[[int, int], None] | None = None) -> int:
        """Embed (one sentence per call) and store the events without a current vector; returns how many."""
        todo = list({ev.id: ev for ev in events if self._hashes.get(ev.id) != quote_hash(ev.quote)}.values())
        if not todo:
            return 0
        rows = []
        done: dict[str, np.ndarray] = {}  # events of one sentence (several frames) share its vector
        for n, ev in enumerate(todo, 1):
            vec = done.get(ev.quote)
            if vec is None:
                vec = done[ev.quote] = np.asarray(self.embedder.embed_batch([ev.quote])[0], dtype=np.float32)
            qhash = quote_hash(ev.quote)
            self._vecs[ev.id], self._hashes[ev.id] = vec, qhash
            rows.append((ev.id, ev.conversation_id, self.model, qhash, vec.tobytes()))
            if progress:
                progress(n, len(todo))
        self._write(rows)
        return len(todo)

    def matrix(self, events: Sequence[EventNode]) -> np.ndarray:
        """The vectors of `events`, one row each, in order (embedding any that are missing)."""
        self.ensure(events)
        return np.stack([self._vecs[ev.id] for ev in events])

    def _write(self, rows: list[tuple[str, str, str, str, bytes]]) -> None:
        """Store new vectors now, or, inside a transaction (ask reads in one snapshot), when `flush` is called."""
        self.pending.extend(rows)
        if not self.store.conn.in_transaction:
            try:
                with self.store.transaction(wait=ASIDE_WAIT):
                    self.flush()
            except (StoreError, sqlite3.OperationalError):
                # a read-only or busy file: the vectors still serve this process
                self.pending.clear()

    def flush(self) -> None:
        """Write the pending vectors (inside the caller's write transaction)."""
        rows, self.pending = self.pending, []
        if not rows or not self.store.has_table("event_vectors"):
            return
        try:
            with self.store.transaction():
                self.store.conn.executemany(
                    "INSERT INTO event_vectors(event_id, conversation_id, model, quote_hash, embedding) "
                    "SELECT ?,?,?,?,? WHERE EXISTS (SELECT 1 FROM events WHERE id = ?) "
                    "ON CONFLICT(event_id) DO UPDATE SET conversation_id = excluded.conversation_id, "
                    "model = excluded.model, quote_hash = excluded.quote_hash, embedding = excluded.embedding",
                    [(*r, r[0]) for r in rows],
                )
        except sqlite3.IntegrityError:
            pass  # an event removed meanwhile (forget, rebuild): its vector is not needed


__all__ = ["EventVectors", "embedder_id", "quote_hash"]
