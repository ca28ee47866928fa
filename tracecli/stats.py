"""`tracecli stats`: counts per table and per conversation, embedding model, schema version."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracecli.store.db import Store

# The tables worth counting, in pipeline order; absent ones are skipped.
COUNTED_TABLES = (
    "conversations", "sessions", "messages", "notes",
    "events", "edges", "topics",
    "claims", "claim_ops", "trajectories", "snapshots", "wiki_pages",
    "answers", "answer_items", "llm_cache", "llm_ledger",
)


@dataclass
class Stats:
    """What `tracecli stats` reports."""

    db: str
    schema_version: int
    embedding_model: str | None
    embedding_dim: int | None
    tables: dict[str, int] = field(default_factory=dict)
    conversations: list[dict[str, Any]] = field(default_factory=list)
    llm: list[dict[str, Any]] = field(default_factory=list)


def collect_stats(store: Store) -> Stats:
    """Count rows per table and per conversation."""
    model = store.embedding_model()
    st = Stats(
        db=store.label,
        schema_version=store.schema_version(),
        embedding_model=model[0] if model else None,
        embedding_dim=model[1] if model else None,
    )
    for name in COUNTED_TABLES:
        if store.has_table(name):
            st.tables[name] = store.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
    st.conversations = store.query(
        """
        SELECT c.id AS conversation_id, c.namespace,
               (SELECT COUNT(*) FROM sessions s WHERE s.conversation_id = c.id) AS sessions,
               COUNT(m.id) AS messages, MIN(m.timestamp) AS first, MAX(m.timestamp) AS last
        FROM conversations c LEFT JOIN messages m ON m.conversation_id = c.id
        GROUP BY c.id ORDER BY c.id
        """
    )
    if store.has_table("llm_ledger"):
        from tracecli.providers.llm import ledger_totals

        st.llm = [
            {k: v for k, v in row.__dict__.items()} if hasattr(row, "__dict__") else dict(row)
            for row in ledger_totals(store)
        ]
    return st
