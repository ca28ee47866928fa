"""Append-only, numbered schema migrations; never edit one that has shipped.

Each migration is recorded in `_sqlite_migrations` by sqlite-utils'
`Migrations`, so a file written by an older tracecli opens and upgrades.
Virtual tables whose shape depends on the embedding model (the `vec0` table)
are created lazily by the store once the dimension is known.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from tracecli.store.schema import MIGRATION_SET

migrations = Migrations(MIGRATION_SET)


def _run_all(db: Database, script: str) -> None:
    """Run `;`-separated DDL one statement at a time, inside the migration's transaction.

    (`executescript` would COMMIT the transaction before the migration is recorded.)
    """
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


@migrations(name="m001_core")
def m001_core(db: Database) -> None:
    """Conversations, sessions, messages, notes with FTS5, and meta."""
    _run_all(
        db,
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


@migrations(name="m002_llm")
def m002_llm(db: Database) -> None:
    """The LLM reply cache and the per-call ledger behind `tracecli stats`."""
    # One statement at a time: executescript() would COMMIT the migration's
    # transaction before it is recorded.
    db.execute(
        """
        CREATE TABLE llm_cache (
            key TEXT PRIMARY KEY,
            model TEXT,
            schema_hash TEXT,
            prompt_hash TEXT,
            reply TEXT,
            created_at TEXT
        )
        """
    )
    db.execute(
        """
        CREATE TABLE llm_ledger (
            id INTEGER PRIMARY KEY,
            stage TEXT,
            model TEXT,
            tokens_in INTEGER,
            tokens_out INTEGER,
            latency_ms REAL,
            cache_hit INTEGER,
            fallback INTEGER,
            ok INTEGER,
            created_at TEXT
        )
        """
    )
    db.execute("CREATE INDEX idx_llm_ledger_stage ON llm_ledger(stage)")


@migrations(name="m003_graph")
def m003_graph(db: Database) -> None:
    """TRACE's evidence graph: events, typed edges, topics, and which sessions are built."""
    _run_all(
        db,
        """
        CREATE TABLE events (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            session_id TEXT NOT NULL REFERENCES sessions(id),
            type TEXT NOT NULL,
            subject TEXT NOT NULL,
            speaker TEXT NOT NULL DEFAULT '',
            participants TEXT NOT NULL DEFAULT '[]',
            description TEXT NOT NULL,
            quote TEXT NOT NULL,
            time_anchor TEXT,
            event_time TEXT,
            event_time_granularity TEXT,
            seq INTEGER NOT NULL,
            sentence_idx INTEGER NOT NULL DEFAULT 0,
            facet TEXT,
            value TEXT,
            value_norm TEXT,
            negated INTEGER NOT NULL DEFAULT 0,
            cue TEXT,
            confidence REAL NOT NULL DEFAULT 0.6,
            provenance TEXT NOT NULL DEFAULT 'rules',
            topic_id TEXT,
            valid_until TEXT,
            validity REAL NOT NULL DEFAULT 1.0,
            created_at TEXT NOT NULL
        );
        CREATE INDEX idx_events_conv_seq ON events(conversation_id, seq, sentence_idx);
        CREATE INDEX idx_events_facet ON events(conversation_id, subject, facet, seq);
        CREATE INDEX idx_events_session ON events(session_id);
        CREATE TABLE event_notes (
            event_id TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
            note_id TEXT NOT NULL REFERENCES notes(id),
            PRIMARY KEY (event_id, note_id)
        );
        CREATE INDEX idx_event_notes_note ON event_notes(note_id);
        CREATE TABLE edges (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            src TEXT NOT NULL,
            dst TEXT NOT NULL,
            label TEXT NOT NULL,
            family TEXT NOT NULL,
            confidence REAL NOT NULL,
            justification TEXT NOT NULL DEFAULT '',
            invalidated_at TEXT,
            provenance TEXT NOT NULL DEFAULT 'rules',
            created_at TEXT NOT NULL,
            UNIQUE (src, dst, label)
        );
        CREATE INDEX idx_edges_src ON edges(src, label);
        CREATE INDEX idx_edges_dst ON edges(dst, label);
        CREATE INDEX idx_edges_conv_label ON edges(conversation_id, label);
        CREATE TABLE topics (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            label TEXT NOT NULL,
            keywords TEXT NOT NULL DEFAULT '[]',
            centroid BLOB,
            size INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE session_topics (
            session_id TEXT PRIMARY KEY REFERENCES sessions(id),
            topic_id TEXT NOT NULL REFERENCES topics(id)
        );
        CREATE TABLE graph_sessions (
            session_id TEXT PRIMARY KEY REFERENCES sessions(id),
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            extractor TEXT NOT NULL,
            message_count INTEGER NOT NULL DEFAULT 0,
            built_at TEXT NOT NULL
        )
        """,
    )


@migrations(name="m004_answers")
def m004_answers(db: Database) -> None:
    """Every `ask`: the question, the answer and the context items `trace` replays."""
    _run_all(
        db,
        """
        CREATE TABLE answers (
            id TEXT PRIMARY KEY,
            conversation_id TEXT,
            question TEXT NOT NULL,
            answer TEXT NOT NULL,
            abstained INTEGER NOT NULL DEFAULT 0,
            plan TEXT NOT NULL,
            as_of TEXT,
            payload TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE answer_items (
            answer_id TEXT NOT NULL REFERENCES answers(id) ON DELETE CASCADE,
            rank INTEGER NOT NULL,
            kind TEXT NOT NULL,
            ref_id TEXT,
            text TEXT NOT NULL,
            score REAL NOT NULL,
            source_refs TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (answer_id, rank)
        )
        """,
    )


@migrations(name="m005_wiki")
def m005_wiki(db: Database) -> None:
    """TrajWiki: snapshots, trajectories, claims with an append-only op log, and wiki pages.

    `claim_ops` refuses UPDATE and DELETE; `claims` refuses DELETE and any change
    other than `status` / `successor_id` (which only the op log moves). The
    `wiki_vectors` vec0 table is created by `tracecli.wiki.pages` once the
    embedding dimension is known, like `note_vectors`.
    """
    # One statement per execute: executescript() would COMMIT mid-migration.
    db.execute(
        """
        CREATE TABLE trajectories (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            idx INTEGER NOT NULL,
            first_snapshot_id TEXT NOT NULL,
            latest_snapshot_id TEXT NOT NULL,
            n_snapshots INTEGER NOT NULL DEFAULT 0,
            keywords TEXT NOT NULL DEFAULT '{}',
            entities TEXT NOT NULL DEFAULT '[]',
            terms TEXT NOT NULL DEFAULT '[]',
            facets TEXT NOT NULL DEFAULT '[]',
            sum_vector BLOB,
            latest_vector BLOB,
            first_at TEXT,
            last_at TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (conversation_id, idx)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE snapshots (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            session_id TEXT NOT NULL REFERENCES sessions(id),
            idx INTEGER NOT NULL,
            trajectory_id TEXT REFERENCES trajectories(id),
            position INTEGER,
            message_ids TEXT NOT NULL,
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            timestamp TEXT,
            text TEXT NOT NULL,
            keywords TEXT NOT NULL DEFAULT '[]',
            entities TEXT NOT NULL DEFAULT '[]',
            terms TEXT NOT NULL DEFAULT '[]',
            facets TEXT NOT NULL DEFAULT '[]',
            vector BLOB,
            match_score REAL,
            match_reason TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            UNIQUE (conversation_id, idx)
        )
        """
    )
    db.execute("CREATE INDEX idx_snapshots_trajectory ON snapshots(trajectory_id, position)")
    db.execute(
        """
        CREATE TABLE claims (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            idx INTEGER NOT NULL,
            snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
            trajectory_id TEXT REFERENCES trajectories(id),
            event_id TEXT,
            subject TEXT NOT NULL DEFAULT '',
            facet TEXT,
            fact_key TEXT,
            item TEXT,
            family TEXT,
            negated INTEGER NOT NULL DEFAULT 0,
            text TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'deprecated', 'contradictory', 'needs-confirmation')),
            source_message_ids TEXT NOT NULL,
            supporting_quote TEXT NOT NULL,
            origin TEXT NOT NULL DEFAULT 'rules',
            predecessor_id TEXT,
            successor_id TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (conversation_id, idx)
        )
        """
    )
    db.execute("CREATE INDEX idx_claims_trajectory ON claims(trajectory_id, idx)")
    db.execute("CREATE INDEX idx_claims_event ON claims(event_id)")
    db.execute("CREATE INDEX idx_claims_fact ON claims(conversation_id, fact_key)")
    db.execute(
        """
        CREATE TABLE claim_ops (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            n INTEGER NOT NULL,
            op TEXT NOT NULL CHECK (op IN ('ADD', 'REVISE', 'DEPRECATE')),
            claim_id TEXT NOT NULL REFERENCES claims(id),
            target_id TEXT REFERENCES claims(id),
            status TEXT NOT NULL,
            snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
            event_id TEXT,
            source_message_ids TEXT NOT NULL DEFAULT '[]',
            quote TEXT NOT NULL DEFAULT '',
            reason TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            UNIQUE (conversation_id, n)
        )
        """
    )
    db.execute("CREATE INDEX idx_claim_ops_claim ON claim_ops(claim_id)")
    db.execute("CREATE INDEX idx_claim_ops_target ON claim_ops(target_id)")
    db.execute(
        "CREATE TRIGGER claim_ops_no_update BEFORE UPDATE ON claim_ops "
        "BEGIN SELECT RAISE(ABORT, 'claim_ops is append-only'); END"
    )
    db.execute(
        "CREATE TRIGGER claim_ops_no_delete BEFORE DELETE ON claim_ops "
        "BEGIN SELECT RAISE(ABORT, 'claim_ops is append-only'); END"
    )
    db.execute(
        "CREATE TRIGGER claims_no_delete BEFORE DELETE ON claims "
        "BEGIN SELECT RAISE(ABORT, 'claims are never deleted'); END"
    )
    db.execute(
        """
        CREATE TRIGGER claims_immutable BEFORE UPDATE ON claims
        WHEN NEW.id IS NOT OLD.id OR NEW.text IS NOT OLD.text OR NEW.supporting_quote IS NOT OLD.supporting_quote
          OR NEW.source_message_ids IS NOT OLD.source_message_ids OR NEW.snapshot_id IS NOT OLD.snapshot_id
          OR NEW.trajectory_id IS NOT OLD.trajectory_id OR NEW.event_id IS NOT OLD.event_id
          OR NEW.predecessor_id IS NOT OLD.predecessor_id OR NEW.idx IS NOT OLD.idx
          OR NEW.conversation_id IS NOT OLD.conversation_id
        BEGIN SELECT RAISE(ABORT, 'claims are immutable; only the op log moves status and successor_id'); END
        """
    )
    db.execute(
        """
        CREATE TABLE snapshot_claims (
            snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
            claim_id TEXT NOT NULL REFERENCES claims(id),
            role TEXT NOT NULL,
            event_id TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (snapshot_id, claim_id, role, event_id)
        )
        """
    )
    db.execute("CREATE INDEX idx_snapshot_claims_claim ON snapshot_claims(claim_id)")
    db.execute(
        """
        CREATE TABLE wiki_sessions (
            session_id TEXT PRIMARY KEY REFERENCES sessions(id),
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            compiled_at TEXT NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE wiki_pages (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            slug TEXT NOT NULL,
            type TEXT NOT NULL CHECK (type IN ('index', 'entity', 'topic', 'inventory')),
            title TEXT NOT NULL,
            markdown TEXT NOT NULL,
            routing_text TEXT NOT NULL DEFAULT '',
            keywords TEXT NOT NULL DEFAULT '[]',
            entities TEXT NOT NULL DEFAULT '[]',
            items TEXT NOT NULL DEFAULT '[]',
            links TEXT NOT NULL DEFAULT '[]',
            rescue INTEGER NOT NULL DEFAULT 0,
            origin TEXT NOT NULL DEFAULT 'rules',
            content_hash TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (conversation_id, slug)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE wiki_page_trajectories (
            page_id TEXT NOT NULL REFERENCES wiki_pages(id) ON DELETE CASCADE,
            trajectory_id TEXT NOT NULL REFERENCES trajectories(id),
            PRIMARY KEY (page_id, trajectory_id)
        )
        """
    )
    db.execute("CREATE INDEX idx_wiki_page_trajectories_traj ON wiki_page_trajectories(trajectory_id)")
    db.execute(
        "CREATE VIRTUAL TABLE wiki_fts USING fts5("
        "title, body, keywords, conversation_id UNINDEXED, tokenize = 'porter unicode61')"
    )


@migrations(name="m006_lifecycle")
def m006_lifecycle(db: Database) -> None:
    """Namespaces in the LLM cache, the forget log, and a sanctioned erasure path.

    `llm_cache` rows record the namespace and conversations whose text the prompt
    carried, so a cached reply is never served across namespaces and `forget`
    can drop every reply built from forgotten text. `forget_log` keeps deletion
    receipts (ids and counts only, never the forgotten text).

    Claims and their op log stay append-only for every writer except `forget`:
    the triggers now let a DELETE through only while the `erasing` row exists
    in `meta`, which `tracecli.forget` sets and clears inside its own transaction.
    """
    db.execute("ALTER TABLE llm_cache ADD COLUMN namespace TEXT")
    db.execute("ALTER TABLE llm_cache ADD COLUMN conversation_ids TEXT NOT NULL DEFAULT '[]'")
    db.execute(
        """
        CREATE TABLE forget_log (
            id TEXT PRIMARY KEY,
            target_kind TEXT NOT NULL,
            target TEXT NOT NULL,
            namespace TEXT,
            conversation_ids TEXT NOT NULL DEFAULT '[]',
            message_ids TEXT NOT NULL DEFAULT '[]',
            counts TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        )
        """
    )
    for name, table in (("claim_ops_no_delete", "claim_ops"), ("claims_no_delete", "claims")):
        db.execute(f"DROP TRIGGER {name}")
        db.execute(
            f"CREATE TRIGGER {name} BEFORE DELETE ON {table} "
            "WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'erasing') "
            f"BEGIN SELECT RAISE(ABORT, '{table} are only removed by tracecli forget'); END"
        )


@migrations(name="m007_event_vectors")
def m007_event_vectors(db: Database) -> None:
    """Embeddings of event sentences, so `ask` re-ranks candidate events without re-embedding them.

    A cache derived from `events.quote`: `ask` writes a row the first time it
    needs an event's vector (`tracecli.query.vectors`). `quote_hash` ties the
    row to the sentence it was computed from and `model` to the embedder;
    a row that matches neither is recomputed. Rows go with their event
    (ON DELETE CASCADE), so a rebuild or `forget` leaves none behind.
    """
    _run_all(
        db,
        """
        CREATE TABLE event_vectors (
            event_id TEXT PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
            conversation_id TEXT NOT NULL,
            model TEXT NOT NULL,
            quote_hash TEXT NOT NULL,
            embedding BLOB NOT NULL
        );
        CREATE INDEX idx_event_vectors_conv ON event_vectors(conversation_id)
        """,
    )


@migrations(name="m008_event_frames")
def m008_event_frames(db: Database) -> None:
    """The open statement frame an event states (`tracecli.graph.frames`): key, value type, cues, as JSON.

    NULL for events that state no frame about a participant. Revision linking
    (`tracecli.graph.revise`) and `ask` read it; the value itself stays in `events.value`.
    """
    if "frame" not in {r[1] for r in db.execute("PRAGMA table_info(events)").fetchall()}:
        _run_all(db, "ALTER TABLE events ADD COLUMN frame TEXT")
