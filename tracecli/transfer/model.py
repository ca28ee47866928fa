"""The shape of an export in memory, the exported tables and their columns."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from tracecli.ingest.pipeline import session_id
from tracecli.store.db import Store

EXPORT_FORMAT = "tracecli-export"
EXPORT_VERSION = 1
FORMATS = ("json", "jsonl")

# In insert order: every table comes after the tables its foreign keys point at.
DERIVED_TABLES = (
    "events", "event_notes", "edges", "topics", "session_topics", "graph_sessions",
    "trajectories", "snapshots", "claims", "claim_ops", "snapshot_claims",
    "wiki_sessions", "wiki_pages", "wiki_page_trajectories",
)
# Derived tables without a conversation_id column: (parent table, column naming the parent's id).
PARENT = {
    "event_notes": ("events", "event_id"),
    "session_topics": ("sessions", "session_id"),
    "snapshot_claims": ("snapshots", "snapshot_id"),
    "wiki_page_trajectories": ("wiki_pages", "page_id"),
}


# -- the in-memory shape of an export -----------------------------------------------------


@dataclass
class ExportMessage:
    """One message as exported; `timestamp` is what ingest must read to hash it the same way."""

    message_id: str
    source_ref: str | None
    speaker: str
    text: str
    timestamp: str | None
    seq: int
    turn: int


@dataclass
class ExportSession:
    """One session: its source id (what ingest keys it by), order and start."""

    source_id: str
    idx: int
    started_at: str | None
    messages: list[ExportMessage] = field(default_factory=list)


@dataclass
class ExportConversation:
    """One conversation with its metadata and sessions."""

    conversation_id: str
    namespace: str
    participants: list[str]
    source_format: str | None
    source_file: str | None
    created_at: str
    sessions: list[ExportSession] = field(default_factory=list)

    def content(self) -> tuple[Any, ...]:
        """What makes two copies the same conversation (order columns and provenance aside)."""
        return (
            self.namespace,
            self.participants,
            [(s.source_id, s.started_at, [(m.message_id, m.source_ref, m.speaker, m.text, m.timestamp) for m in s.messages])
             for s in self.sessions],
        )


@dataclass
class ExportData:
    """A whole export: conversations plus (optionally) derived rows with database values (bytes for blobs)."""

    source: str
    conversations: list[ExportConversation]
    format: str = "json"
    derived: bool = False
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    embedding_model: tuple[str, int] | None = None


@dataclass
class TableCount:
    """Rows of one table written (export) or inserted (import)."""

    table: str
    rows: int


@dataclass
class ExportResult:
    """What `export_data` wrote."""

    format: str
    out: str | None
    derived: bool
    conversations: list[str]
    tables: list[TableCount]
    bytes: int
    elapsed_s: float = 0.0


@dataclass
class ConversationImport:
    """What import did with one conversation: `imported`, or `unchanged` (already there, identical)."""

    conversation_id: str
    namespace: str
    status: str
    messages: int


@dataclass
class ImportResult:
    """What `import_data` did; `format` is the file's shape, json or jsonl."""

    file: str
    format: str
    conversations: list[ConversationImport]
    tables: list[TableCount]
    elapsed_s: float = 0.0


# -- schema ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column of an exported table; `required` when a row must give it."""

    name: str
    type: str
    required: bool


def _columns(store: Store, table: str) -> list[Column]:
    out = []
    for _, name, ctype, notnull, default, pk in store.table_columns(table):
        # An INTEGER PRIMARY KEY (wiki_pages.rowid) is assigned when missing; other keys are needed
        # even where SQLite would let a TEXT primary key be NULL.
        required = (bool(notnull) and default is None) or bool(pk)
        if pk and str(ctype).upper() == "INTEGER":
            required = False
        out.append(Column(name, str(ctype).upper(), required))
    return out


def primary_key(store: Store, table: str) -> list[str]:
    """The table's primary-key columns, in key order (the export's row order)."""
    rows = sorted((pk, name) for _, name, _, _, _, pk in store.table_columns(table) if pk)
    return [name for _, name in rows] or ["rowid"]


@functools.lru_cache(maxsize=1)
def schema_columns() -> dict[str, list[Column]]:
    """The derived tables' columns in this tracecli's schema (read from a blank in-memory database)."""
    from tracecli.store.db import open_store

    with open_store(":memory:") as store:
        return {t: _columns(store, t) for t in DERIVED_TABLES}


def row_owners(data: ExportData) -> dict[str, list[str | None]]:
    """For every derived table, the conversation each row belongs to (None: its parent row is not in the file)."""
    ids: dict[str, dict[str, str]] = {
        "sessions": {session_id(c.conversation_id, s.source_id): c.conversation_id for c in data.conversations for s in c.sessions}
    }
    out: dict[str, list[str | None]] = {}
    for t in DERIVED_TABLES:
        rows = data.tables.get(t, [])
        if t in PARENT:
            parent, col = PARENT[t]
            out[t] = [ids.get(parent, {}).get(row[col]) for row in rows]
        else:
            out[t] = [row["conversation_id"] for row in rows]
            ids[t] = {row["id"]: row["conversation_id"] for row in rows if "id" in row}
    return out
