"""Write parsed conversations into the store: messages, notes, FTS rows and vectors.

Idempotent (a content hash per message: re-ingesting adds nothing; a message
whose conversation, speaker, time and text are already stored is the same
message whichever file or format it comes from) and incremental (new messages
of a known conversation are appended). All parsing
and embedding happen before the write; the write is one transaction per file,
so an error, Ctrl-C or a crash leaves the file as it was.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from tracecli.errors import BadInput
from tracecli.ingest.formats import DEFAULT_GAP_HOURS, MAX_MESSAGE_BYTES, parse_file
from tracecli.ingest.model import ParsedConversation
from tracecli.providers.embeddings import Embedder, embedding_path
from tracecli.store.db import Store, dumps, utc_now
from tracecli.text import keywords, short_hash

ProgressFn = Callable[[int, int], None]


@dataclass
class ConversationResult:
    """What one ingest did to one conversation."""

    conversation_id: str
    namespace: str
    source_format: str
    new_messages: int
    skipped_messages: int
    new_sessions: int
    created: bool


@dataclass
class IngestResult:
    """What one ingest did to one file."""

    file: str
    conversations: list[ConversationResult] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def new_messages(self) -> int:
        return sum(c.new_messages for c in self.conversations)


@dataclass
class _PendingMessage:
    id: str
    session_key: str
    speaker: str
    text: str
    timestamp: str | None
    source_ref: str | None
    content_hash: str
    note_text: str


def message_hash(conversation_id: str, speaker: str, text: str, timestamp: str | None, source_ref: str | None, occurrence: int) -> str:
    """The content hash that makes re-ingest idempotent."""
    return short_hash(conversation_id, speaker, text, timestamp or "", source_ref or "", occurrence, length=32)


def note_text(speaker: str, text: str, timestamp: str | None) -> str:
    """TRACE's note: the message prefixed with its date and speaker."""
    date = timestamp[:10] if timestamp else "undated"
    return f"[{date}] {speaker}: {text}"


def _plan(store: Store, conv: ParsedConversation, name: str) -> tuple[list[_PendingMessage], int, dict[str, str | None]]:
    """New messages of `conv` (not yet stored), the count skipped, new session keys → start.

    A message is already stored when its content hash is (the same file again), or when the conversation
    holds more messages with its speaker, time and text than the file has shown so far (the same chat in
    another format, whose message ids differ). BadInput (naming file `name` and the place) for a new message
    whose id a stored message of the conversation already has: two messages under one id could not be told
    apart (`forget message ID`).
    """
    existing: set[str] = set()
    present: Counter[tuple[str, str, str | None]] = Counter()
    for h, speaker, text, timestamp in store.execute(
        "SELECT content_hash, speaker, text, timestamp FROM messages WHERE conversation_id = ?", (conv.conversation_id,)
    ):
        existing.add(h)
        present[(speaker, text, timestamp)] += 1
    stored_refs = {
        r[0] for r in store.execute("SELECT source_ref FROM messages WHERE conversation_id = ? AND source_ref IS NOT NULL",
                                    (conv.conversation_id,))
    }
    shown: Counter[tuple[str, str, str | None]] = Counter()
    known_sessions = {
        r[0] for r in store.execute("SELECT source_id FROM sessions WHERE conversation_id = ?", (conv.conversation_id,))
    }
    seen: dict[tuple, int] = {}
    pending: list[_PendingMessage] = []
    new_sessions: dict[str, str | None] = {}
    skipped = 0
    for session in conv.sessions:
        for msg in session.messages:
            key = (msg.speaker, msg.text, msg.timestamp, msg.source_ref)
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            h = message_hash(conv.conversation_id, msg.speaker, msg.text, msg.timestamp, msg.source_ref, occurrence)
            timestamp = msg.timestamp or session.started_at
            content = (msg.speaker, msg.text, timestamp)
            shown[content] += 1
            if h in existing or shown[content] <= present[content]:
                skipped += 1
                continue
            if msg.source_ref in stored_refs:
                raise BadInput(f"{name}: {msg.where or 'a message'} has the id '{msg.source_ref}' of a stored message of "
                               f"conversation '{conv.conversation_id}' with other content; give it a new id (or forget "
                               "the stored one first)")
            if session.source_id not in known_sessions:
                new_sessions.setdefault(session.source_id, session.started_at)
            pending.append(
                _PendingMessage(
                    id=f"m_{h[:12]}",
                    session_key=session.source_id,
                    speaker=msg.speaker,
                    text=msg.text,
                    timestamp=timestamp,
                    source_ref=msg.source_ref,
                    content_hash=h,
                    note_text=note_text(msg.speaker, msg.text, timestamp),
                )
            )
    return pending, skipped, new_sessions


def session_id(conversation_id: str, source_id: str) -> str:
    """The stable id of a session."""
    return f"s_{short_hash(conversation_id, source_id)}"


def _write(store: Store, conv: ParsedConversation, pending: list[_PendingMessage], new_sessions: dict[str, str | None], vectors: Sequence[Sequence[float]], source_file: str) -> bool:
    """Insert one conversation's new rows; caller holds the transaction."""
    cid = conv.conversation_id
    row = store.execute("SELECT namespace, participants FROM conversations WHERE id = ?", (cid,)).fetchone()
    created = row is None
    if created:
        store.execute(
            "INSERT INTO conversations(id, namespace, participants, source_format, source_file, created_at) VALUES (?,?,?,?,?,?)",
            (cid, conv.namespace, dumps(conv.participants), conv.source_format, source_file, utc_now()),
        )
    else:
        merged = list(dict.fromkeys([*json.loads(row[1]), *conv.participants]))
        store.execute("UPDATE conversations SET participants = ? WHERE id = ?", (dumps(merged), cid))
    next_idx = store.execute("SELECT COALESCE(MAX(idx), -1) + 1 FROM sessions WHERE conversation_id = ?", (cid,)).fetchone()[0]
    for key, started in new_sessions.items():
        store.execute(
            "INSERT INTO sessions(id, conversation_id, idx, source_id, started_at) VALUES (?,?,?,?,?)",
            (session_id(cid, key), cid, next_idx, key, started),
        )
        next_idx += 1
    seq = store.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE conversation_id = ?", (cid,)).fetchone()[0]
    turns: dict[str, int] = {}
    note_rowid = store.next_rowid("notes")
    msg_rows, note_rows, fts_rows, vec_rows = [], [], [], []
    for pm, vec in zip(pending, vectors):
        sid = session_id(cid, pm.session_key)
        if sid not in turns:
            turns[sid] = store.execute("SELECT COALESCE(MAX(turn), -1) + 1 FROM messages WHERE session_id = ?", (sid,)).fetchone()[0]
        msg_rows.append((pm.id, cid, sid, seq, turns[sid], pm.speaker, pm.text, pm.timestamp, pm.source_ref, pm.content_hash))
        kw = " ".join(keywords(pm.text))
        note_rows.append((note_rowid, f"n_{pm.id[2:]}", pm.id, cid, pm.note_text, kw))
        # FTS indexes the message text alone: the note's "[date] Speaker:" prefix would make every
        # question that names a person match all of that person's shortest messages.
        fts_rows.append((note_rowid, pm.text, kw))
        vec_rows.append((note_rowid, cid, store.vector_value(vec)))
        seq += 1
        turns[sid] += 1
        note_rowid += 1
    conn = store.conn
    conn.executemany(
        "INSERT INTO messages(id, conversation_id, session_id, seq, turn, speaker, text, timestamp, source_ref, content_hash) VALUES (?,?,?,?,?,?,?,?,?,?)",
        msg_rows,
    )
    conn.executemany("INSERT INTO notes(rowid, id, message_id, conversation_id, text, keywords) VALUES (?,?,?,?,?,?)", note_rows)
    conn.executemany("INSERT INTO notes_fts(rowid, text, keywords) VALUES (?,?,?)", fts_rows)
    conn.executemany("INSERT INTO note_vectors(rowid, conversation_id, embedding) VALUES (?,?,?)", vec_rows)
    return created


def count_new(store: Store, parsed: Sequence[tuple[Path, list[ParsedConversation]]]) -> int:
    """How many messages of the parsed files are not stored yet (what an ingest of them all would embed)."""
    return sum(len(_plan(store, conv, path.name)[0]) for path, convs in parsed for conv in convs)


def parse_inputs(
    paths: Sequence[str | Path],
    fmt: str = "auto",
    *,
    conversation_id: str | None = None,
    namespace: str | None = None,
    gap_hours: float = DEFAULT_GAP_HOURS,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> list[tuple[Path, list[ParsedConversation]]]:
    """Parse and validate every file before anything is written."""
    if conversation_id and len(paths) > 1:
        raise BadInput("--conversation names one conversation; give one file with it")
    return [
        (
            Path(p),
            parse_file(p, fmt, conversation_id=conversation_id, namespace=namespace, gap_hours=gap_hours, max_message_bytes=max_message_bytes),
        )
        for p in paths
    ]


def check_parsed(store: Store | None, parsed: Sequence[tuple[Path, list[ParsedConversation]]]) -> None:
    """Refuse, before anything is written, conversations that clash with stored ones or with each other.

    Without a store only clashes between the files are found (so a refused ingest need not create its file).
    """
    seen: dict[str, tuple[str, str]] = {}
    for path, convs in parsed:
        for conv in convs:
            row = None if store is None else store.execute(
                "SELECT namespace FROM conversations WHERE id = ?", (conv.conversation_id,)).fetchone()
            if row is not None and row[0] != conv.namespace:
                raise BadInput(
                    f"{path.name}: conversation '{conv.conversation_id}' already exists in namespace '{row[0]}', not '{conv.namespace}'"
                )
            earlier = seen.get(conv.conversation_id)
            if earlier is not None and earlier[1] != conv.namespace:
                raise BadInput(
                    f"{path.name}: conversation '{conv.conversation_id}' already exists in namespace '{earlier[1]}' "
                    f"({earlier[0]}), not '{conv.namespace}'"
                )
            seen[conv.conversation_id] = (path.name, conv.namespace)


#: Texts per embedder call when ingesting: large enough that the length-sorted chunks pad little, small
#: enough that the progress bar moves.
EMBED_CHUNK = 256


def embed_by_length(embedder: Embedder, texts: Sequence[str], progress: ProgressFn | None = None,
                    total: int | None = None) -> list[Any]:
    """One vector per text, in the order of `texts`, computed shortest text first.

    A batch is padded to its longest text, so chunks of similar length waste little: on synthetic chat
    this embeds about 1.3× faster than chunks taken in conversation order (benchmarks/ingest_bench.py).
    `total`: how many texts the whole run embeds (several files of one `update`), which decides the
    embedder's path (MiniLM: the numpy port up to a thousand, else torch) once for all of them.
    """
    order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
    vectors: list[Any] = [None] * len(texts)
    embed = embedding_path(embedder, max(total or 0, len(texts)))
    for start in range(0, len(order), EMBED_CHUNK):
        chunk = order[start : start + EMBED_CHUNK]
        for i, vec in zip(chunk, embed([texts[i] for i in chunk])):
            vectors[i] = vec
        if progress:
            progress(min(start + EMBED_CHUNK, len(order)), len(order))
    return vectors


def ingest_parsed(
    store: Store,
    path: Path,
    convs: list[ParsedConversation],
    embedder: Embedder,
    progress: ProgressFn | None = None,
    embed_total: int | None = None,
    on_new: Callable[[int], None] | None = None,
) -> IngestResult:
    """Embed the new messages of one parsed file and write them in one transaction.

    `embed_total`: how many messages the whole run may embed (all its files), for `embed_by_length`.
    `on_new(n)`: called before a file with new messages embeds them; n is the count that decides the embedding
    path (`embed_total` when given, else the file's new messages).
    """
    started = time.perf_counter()
    result = IngestResult(file=str(path))
    check_parsed(store, [(path, convs)])
    version = store.data_version()
    plans = [(conv, *_plan(store, conv, path.name)) for conv in convs]
    total = sum(len(p[1]) for p in plans)
    bound = store.embedding_model()
    if total and bound is not None and bound[0] != embedder.id:
        raise store.model_mismatch(embedder.id, embedder.dimension)
    if on_new is not None and total:
        on_new(max(total, embed_total or 0))
    # embedding is the slow part: it happens before the write lock is taken, so other commands keep writing
    pending_all = [pm for _, pending, _, _ in plans for pm in pending]
    vectors = dict(zip((pm.content_hash for pm in pending_all),
                       embed_by_length(embedder, [pm.note_text for pm in pending_all], progress,
                                                       embed_total)))
    with store.transaction():
        # planned again under the lock if another connection wrote meanwhile (another ingest of the same file,
        # a `forget`); otherwise the plan stands (matching a 10K-message file against the store is ~0.15 s)
        check_parsed(store, [(path, convs)])
        if store.data_version() != version:
            plans = [(conv, *_plan(store, conv, path.name)) for conv in convs]
        late = [pm for _, pending, _, _ in plans for pm in pending if pm.content_hash not in vectors]
        if late:  # messages removed by a `forget` since the first plan
            vectors.update(zip((pm.content_hash for pm in late), embedder.embed_batch([pm.note_text for pm in late])))
        new_rows = sum(len(p[1]) for p in plans)
        if new_rows:
            store.bind_embedding_model(embedder.id, embedder.dimension)
        with store.bulk_vectors("note_vectors", new_rows):
            _write_all(store, plans, vectors, path.name, result)
    result.elapsed_s = time.perf_counter() - started
    return result


def _write_all(store: Store, plans: list[tuple[Any, ...]], vectors: dict[str, Any], source: str,
               result: IngestResult) -> None:
    """Write each conversation's planned messages (one transaction, the caller's); add its counts to `result`."""
    for conv, pending, skipped, new_sessions in plans:
        created = False
        if pending:
            created = _write(store, conv, pending, new_sessions, [vectors[pm.content_hash] for pm in pending], source)
        result.conversations.append(
            ConversationResult(
                conversation_id=conv.conversation_id,
                namespace=conv.namespace,
                source_format=conv.source_format,
                new_messages=len(pending),
                skipped_messages=skipped,
                new_sessions=len(new_sessions),
                created=created,
            )
        )
