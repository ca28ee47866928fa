"""Append-only, numbered schema migrations; never edit one that has shipped.

Each migration is recorded in `_sqlite_migrations` by sqlite-utils'
`Migrations`, so a file written by an older tracecli opens and upgrades.
Virtual tables whose shape depends on the embedding model (the `vec0` table)
are created lazily by the store once the dimension is known.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

MIGRATION_SET = "tracecli"
migrations = Migrations(MIGRATION_SET)


@migrations(name="m001_core")
def m001_core(db: Database) -> None:
    """Conversations, sessions, messages, notes with FTS5, and meta."""
    db.executescript(
        """
        CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            namespace TEXT NOT NULL DEFAULT 'default',
            participants TEXT NOT NULL DEFAULT '[]',
            source_format TEXT,
            source_file TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            idx INTEGER NOT NULL,
            source_id TEXT NOT NULL,
            started_at TEXT,
            UNIQUE (conversation_id, source_id)
        );
        CREATE INDEX idx_sessions_conv ON sessions(conversation_id, idx);
        CREATE TABLE messages (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            session_id TEXT NOT NULL REFERENCES sessions(id),
            seq INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            speaker TEXT NOT NULL,
            text TEXT NOT NULL,
            timestamp TEXT,
            source_ref TEXT,
            content_hash TEXT NOT NULL,
            UNIQUE (conversation_id, content_hash)
        );
        CREATE INDEX idx_messages_conv_seq ON messages(conversation_id, seq);
        CREATE INDEX idx_messages_session ON messages(session_id, turn);
        CREATE INDEX idx_messages_source_ref ON messages(conversation_id, source_ref);
        CREATE TABLE notes (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            message_id TEXT NOT NULL UNIQUE REFERENCES messages(id),
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            text TEXT NOT NULL,
            keywords TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX idx_notes_conv ON notes(conversation_id);
        CREATE VIRTUAL TABLE notes_fts USING fts5(
            text, keywords, tokenize = 'porter unicode61'
        );
        """
    )
