"""Import: a validated export into the store, in one transaction, with the same ids."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as sqlite3

from tracecli.errors import BadInput, ModelMismatch
from tracecli.ingest.model import ParsedConversation, ParsedMessage, ParsedSession
from tracecli.ingest.pipeline import ingest_parsed, message_hash, session_id
from tracecli.providers.embeddings import Embedder
from tracecli.scope import bind_namespaces
from tracecli.store.db import Store, dumps, placeholders
from tracecli.transfer.export import read_conversation
from tracecli.transfer.model import (
    DERIVED_TABLES, ConversationImport, ExportConversation, ExportData, ExportMessage, ExportSession, ImportResult,
    TableCount, row_owners,
)
from tracecli.wiki.pages import ensure_wiki_vectors, index_page

# -- import -------------------------------------------------------------------------------------


def _runs(c: ExportConversation, by_seq: bool) -> list[tuple[ExportSession, list[ExportMessage]]]:
    """The order to feed messages to ingest: session by session, or by `seq` in runs of one session."""
    if not by_seq:
        return [(s, s.messages) for s in c.sessions if s.messages]
    runs: list[tuple[ExportSession, list[ExportMessage]]] = []
    for s, m in sorted(((s, m) for s in c.sessions for m in s.messages), key=lambda sm: (sm[1].seq, sm[1].message_id)):
        if runs and runs[-1][0] is s:
            runs[-1][1].append(m)
        else:
            runs.append((s, [m]))
    return runs


def _hashes_match(cid: str, runs: list[tuple[ExportSession, list[ExportMessage]]]) -> bool:
    """Whether ingest, reading messages in this order, gives every message its exported id."""
    seen: dict[tuple[Any, ...], int] = {}
    for _, msgs in runs:
        for m in msgs:
            key = (m.speaker, m.text, m.timestamp, m.source_ref)
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            if "m_" + message_hash(cid, m.speaker, m.text, m.timestamp, m.source_ref, occurrence)[:12] != m.message_id:
                return False
    return True


def _feed(source: str, c: ExportConversation) -> ParsedConversation:
    """The conversation as ingest reads it, in an order that reproduces every message id; BadInput when none does.

    Message order (`seq`) first: it also gives the notes their original order. Session order is how
    an export computes duplicate messages' occurrences, so it works whenever the ids are intact.
    """
    for by_seq in (True, False):
        runs = _runs(c, by_seq)
        if _hashes_match(c.conversation_id, runs):
            break
    else:
        raise BadInput(
            f"{source}: conversation '{c.conversation_id}': some messages do not hash to their 'message_id' "
            "(speaker, text, timestamp or id changed); the file was edited or written by another tool"
        )
    return ParsedConversation(
        conversation_id=c.conversation_id,
        participants=list(c.participants),
        sessions=[
            ParsedSession(source_id=s.source_id, started_at=s.started_at, messages=[
                ParsedMessage(speaker=m.speaker, text=m.text, timestamp=m.timestamp, source_ref=m.source_ref) for m in msgs
            ])
            for s, msgs in runs
        ],
        source_format=c.source_format or "native",
        namespace=c.namespace,
    )


def _restore(store: Store, data: ExportData, c: ExportConversation) -> None:
    """Check the ingested ids against the export; put back order columns, empty sessions and metadata."""
    cid = c.conversation_id
    stored = {r[0]: (r[1], r[2], r[3]) for r in store.execute(
        "SELECT id, session_id, seq, turn FROM messages WHERE conversation_id = ?", (cid,))}
    fixes = []
    for s in c.sessions:
        sid = session_id(cid, s.source_id)
        for i, m in enumerate(s.messages):
            got = stored.get(m.message_id)
            if got is None or got[0] != sid:
                raise BadInput(
                    f"{data.source}: conversation '{cid}', session '{s.source_id}', message {i} ('{m.message_id}') "
                    "does not hash to its id; the file was edited or written by another tool"
                )
            if (got[1], got[2]) != (m.seq, m.turn):
                fixes.append((m.seq, m.turn, m.message_id))
    store.conn.executemany("UPDATE messages SET seq = ?, turn = ? WHERE id = ?", fixes)
    for s in c.sessions:
        sid = session_id(cid, s.source_id)
        if s.messages:
            store.execute("UPDATE sessions SET idx = ?, started_at = ? WHERE id = ?", (s.idx, s.started_at, sid))
        else:
            store.execute("INSERT INTO sessions(id, conversation_id, idx, source_id, started_at) VALUES (?,?,?,?,?)",
                          (sid, cid, s.idx, s.source_id, s.started_at))
    store.execute(
        "UPDATE conversations SET participants = ?, source_format = ?, source_file = ?, created_at = ? WHERE id = ?",
        (dumps(c.participants), c.source_format, c.source_file, c.created_at, cid),
    )


def _insert_rows(store: Store, data: ExportData, table: str, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        cols = list(row)
        try:
            store.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({placeholders(cols)})",
                          [row[c] for c in cols])
        except sqlite3.IntegrityError as exc:
            key = row.get("id") or ", ".join(f"{k}={row[k]}" for k in cols[:2])
            raise BadInput(f"{data.source}: {table} row '{key}' cannot be stored: {exc}") from None


def _renumber_pages(store: Store, pages: list[dict[str, Any]]) -> None:
    """Keep the exported page rowids (routing breaks ties by them) unless one is taken; then append, in order."""
    wanted = [p["rowid"] for p in pages if p.get("rowid") is not None]
    taken = store.rowids_taken("wiki_pages", wanted)
    if not taken and len(set(wanted)) == len(wanted) == len(pages):
        return
    nxt = store.next_rowid("wiki_pages")
    for p in sorted(pages, key=lambda p: (p.get("rowid") is None, p.get("rowid") or 0, p["id"])):
        p["rowid"] = nxt
        nxt += 1


def _index_pages(store: Store, data: ExportData, pages: list[dict[str, Any]], embedder: Embedder) -> None:
    """Embed and index the imported pages, one batch per conversation as compile-wiki does."""
    ensure_wiki_vectors(store, int(embedder.dimension))
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for p in pages:
        by_conv.setdefault(p["conversation_id"], []).append(p)
    for group in by_conv.values():
        # The embedder may pick its backend by batch size: the same batches give the same vectors.
        vectors = embedder.embed_batch([p.get("routing_text", "") for p in group])
        for p, vec in zip(group, vectors):
            try:
                words = [str(w) for w in json.loads(p.get("keywords", "[]")) + json.loads(p.get("items", "[]"))]
            except (TypeError, ValueError):
                raise BadInput(f"{data.source}: wiki page '{p['id']}' has keywords or items that are not JSON lists") from None
            index_page(store, p["rowid"], p["conversation_id"], p["title"], p.get("routing_text", ""), words, vec)


def import_data(store: Store, data: ExportData, embedder: Embedder) -> ImportResult:
    """Write a validated export into the store in one transaction (the rules: see `tracecli.transfer`)."""
    started = time.perf_counter()
    result = ImportResult(file=data.source, format=data.format, conversations=[], tables=[])
    new: list[ExportConversation] = []
    bind_namespaces(store, (c.namespace for c in data.conversations))
    for c in data.conversations:
        row = store.execute("SELECT namespace FROM conversations WHERE id = ?", (c.conversation_id,)).fetchone()
        n = sum(len(s.messages) for s in c.sessions)
        if row is None:
            new.append(c)
            result.conversations.append(ConversationImport(c.conversation_id, c.namespace, "imported", n))
            continue
        if read_conversation(store, c.conversation_id).content() != c.content():
            where = f"namespace '{row[0]}'" + (" with different messages" if row[0] == c.namespace else "")
            raise BadInput(
                f"{data.source}: conversation '{c.conversation_id}' is already in {store.path.name} ({where}); "
                f"import into a new file, or remove it first with `tracecli forget conversation {c.conversation_id}"
                f"{'' if row[0] == 'default' else ' --namespace ' + row[0]}`"
            )
        result.conversations.append(ConversationImport(c.conversation_id, c.namespace, "unchanged", n))
    keep = {c.conversation_id for c in new}
    rows = {t: [dict(r) for r, cid in zip(data.tables.get(t, []), owners) if cid in keep] for t, owners in row_owners(data).items()}
    has_rows = any(rows.values())
    bound = store.embedding_model()
    mine = (embedder.id, int(embedder.dimension))
    if new and bound is not None and bound != mine:
        raise store.model_mismatch(*mine)
    if has_rows and data.embedding_model is not None and data.embedding_model != mine:
        raise ModelMismatch(
            f"{data.source} was built with {data.embedding_model[0]} ({data.embedding_model[1]}-d) and its derived rows "
            f"hold that model's vectors; import it with the same embedder (now {mine[0]}), or export without --derived"
        )
    pages = rows["wiki_pages"]
    parsed = [_feed(data.source, c) for c in new]
    with store.transaction():
        if new:
            ingest_parsed(store, Path(data.source), parsed, embedder)
            for c in new:
                _restore(store, data, c)
        if pages:
            _renumber_pages(store, pages)
        for t in DERIVED_TABLES:
            _insert_rows(store, data, t, rows[t])
        if pages:
            _index_pages(store, data, pages, embedder)
    result.tables = [
        TableCount("conversations", len(new)),
        TableCount("sessions", sum(len(c.sessions) for c in new)),
        TableCount("messages", sum(len(s.messages) for c in new for s in c.sessions)),
        *(TableCount(t, len(rows[t])) for t in DERIVED_TABLES if data.derived or rows[t]),
    ]
    result.elapsed_s = time.perf_counter() - started
    return result
