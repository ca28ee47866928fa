"""Export: the chosen conversations and their derived rows out of the store, as JSON or JSONL text."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracecli.errors import BadInput, NotFound
from tracecli.files import write_out
from tracecli.ingest.pipeline import message_hash
from tracecli.store.db import Store
from tracecli.text import json_text
from tracecli.transfer.model import (
    DERIVED_TABLES, EXPORT_FORMAT, EXPORT_VERSION, FORMATS, PARENT, ExportConversation, ExportData, ExportMessage,
    ExportResult, ExportSession, TableCount, primary_key,
)

# -- export -----------------------------------------------------------------------------------


def _selection(store: Store, namespace: str | None, conversation_id: str | None) -> tuple[str, list[str]]:
    """(SQL condition on conversations, params) for the chosen conversations; NotFound when none."""
    if namespace and conversation_id:
        raise BadInput("give --namespace or --conversation, not both")
    if conversation_id:
        cond, params = "id = ?", [conversation_id]
        missing = f"no conversation '{conversation_id}' in {store.path.name}; `tracecli stats` lists them"
    elif namespace:
        store.bind_namespace(namespace)
        cond, params = "namespace = ?", [namespace]
        missing = f"no conversations in namespace '{namespace}' in {store.path.name}; `tracecli stats` lists them"
    else:
        cond, params = "1 = 1", []
        missing = f"{store.path.name} holds no conversations; nothing to export"
    if store.execute(f"SELECT COUNT(*) FROM conversations WHERE {cond}", params).fetchone()[0] == 0:
        raise NotFound(missing)
    return cond, params


def _ingest_timestamps(cid: str, rows: Sequence[dict[str, Any]]) -> list[str | None]:
    """The timestamp ingest must read for each message so that it hashes to the stored content hash.

    Ingest stores a message without a timestamp under its session's start, but
    hashes it without one; the hash tells which case each message was.
    """
    counts: dict[tuple[Any, ...], int] = {}
    out: list[str | None] = []
    for r in rows:
        chosen = r["timestamp"]
        for ts in ((r["timestamp"], None) if r["timestamp"] else (None,)):
            occurrence = counts.get((r["speaker"], r["text"], ts, r["source_ref"]), 0)
            if message_hash(cid, r["speaker"], r["text"], ts, r["source_ref"], occurrence) == r["content_hash"]:
                chosen = ts
                break
        key = (r["speaker"], r["text"], chosen, r["source_ref"])
        counts[key] = counts.get(key, 0) + 1
        out.append(chosen)
    return out


def read_conversation(store: Store, cid: str) -> ExportConversation:
    row = store.query(
        "SELECT id, namespace, participants, source_format, source_file, created_at FROM conversations WHERE id = ?", (cid,)
    )[0]
    conv = ExportConversation(
        conversation_id=row["id"], namespace=row["namespace"], participants=json.loads(row["participants"]),
        source_format=row["source_format"], source_file=row["source_file"], created_at=row["created_at"],
    )
    sessions = {}
    for s in store.query("SELECT id, idx, source_id, started_at FROM sessions WHERE conversation_id = ? ORDER BY idx, id", (cid,)):
        sessions[s["id"]] = ExportSession(source_id=s["source_id"], idx=s["idx"], started_at=s["started_at"])
    order = {sid: n for n, sid in enumerate(sessions)}
    msgs = store.query(
        "SELECT id, session_id, seq, turn, speaker, text, timestamp, source_ref, content_hash FROM messages "
        "WHERE conversation_id = ?", (cid,)
    )
    # Session by session, in message order: the order ingest reads them in, which fixes duplicate messages' hashes.
    msgs.sort(key=lambda m: (order[m["session_id"]], m["seq"], m["id"]))
    for m, ts in zip(msgs, _ingest_timestamps(cid, msgs)):
        sessions[m["session_id"]].messages.append(ExportMessage(
            message_id=m["id"], source_ref=m["source_ref"], speaker=m["speaker"], text=m["text"],
            timestamp=ts, seq=m["seq"], turn=m["turn"],
        ))
    conv.sessions = list(sessions.values())
    return conv


def _derived_rows(store: Store, table: str, cond: str, params: list[str]) -> list[dict[str, Any]]:
    owners = f"(SELECT id FROM conversations WHERE {cond})"
    if table in PARENT:
        parent, col = PARENT[table]
        where = f"{col} IN (SELECT id FROM {parent} WHERE conversation_id IN {owners})"
    else:
        where = f"conversation_id IN {owners}"
    order = ", ".join(primary_key(store, table))
    rows = store.query(f"SELECT * FROM {table} WHERE {where} ORDER BY {order}", params)
    return [{k: r[k] for k in sorted(r)} for r in rows]


def collect(store: Store, *, namespace: str | None = None, conversation_id: str | None = None, derived: bool = False) -> ExportData:
    """Read the chosen conversations (and with `derived`, their derived rows) out of the store."""
    cond, params = _selection(store, namespace, conversation_id)
    # In the order they were first ingested (their first note), so that an import, which ingests them in file
    # order, gives the notes the same relative order (retrieval breaks exact ties by note rowid).
    cids = [r[0] for r in store.execute(
        "SELECT c.id FROM conversations c LEFT JOIN notes n ON n.conversation_id = c.id "
        f"WHERE c.id IN (SELECT id FROM conversations WHERE {cond}) GROUP BY c.id ORDER BY MIN(n.rowid), c.id", params)]
    data = ExportData(
        source=store.path.name, conversations=[read_conversation(store, c) for c in cids], derived=derived,
        embedding_model=store.embedding_model(),
    )
    if derived:
        data.tables = {t: _derived_rows(store, t, cond, params) for t in DERIVED_TABLES}
    return data


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v for k, v in row.items()}


def _message_json(m: ExportMessage) -> dict[str, Any]:
    return {"id": m.source_ref, "message_id": m.message_id, "speaker": m.speaker, "text": m.text,
            "timestamp": m.timestamp, "seq": m.seq, "turn": m.turn}


def _conversation_head(c: ExportConversation) -> dict[str, Any]:
    return {"conversation_id": c.conversation_id, "namespace": c.namespace, "participants": c.participants,
            "source_format": c.source_format, "source_file": c.source_file, "created_at": c.created_at}


def _header(data: ExportData) -> dict[str, Any]:
    model = None if data.embedding_model is None else {"id": data.embedding_model[0], "dimension": data.embedding_model[1]}
    return {"format": EXPORT_FORMAT, "version": EXPORT_VERSION, "derived": data.derived, "embedding_model": model}


def serialize(data: ExportData, fmt: str = "json") -> str:
    """The export as text: one JSON document (`json`) or one record per line (`jsonl`)."""
    if fmt == "json":
        doc = _header(data)
        doc["conversations"] = [
            {**_conversation_head(c), "sessions": [
                {"id": s.source_id, "idx": s.idx, "started_at": s.started_at, "messages": [_message_json(m) for m in s.messages]}
                for s in c.sessions
            ]}
            for c in data.conversations
        ]
        if data.derived:
            doc["tables"] = {t: [_json_row(r) for r in data.tables.get(t, [])] for t in DERIVED_TABLES}
        return json_text(doc, indent=2) + "\n"
    if fmt != "jsonl":
        raise BadInput(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)}")
    records: list[dict[str, Any]] = [{"record": "header", **_header(data)}]
    for c in data.conversations:
        records.append({"record": "conversation", **_conversation_head(c)})
        for s in c.sessions:
            records.append({"record": "session", "conversation_id": c.conversation_id, "id": s.source_id, "idx": s.idx,
                            "started_at": s.started_at})
        for s in c.sessions:
            for m in s.messages:
                records.append({"record": "message", "conversation_id": c.conversation_id, "session_id": s.source_id,
                                **_message_json(m)})
    if data.derived:
        for t in DERIVED_TABLES:
            records.extend({"record": "row", "table": t, "row": _json_row(r)} for r in data.tables.get(t, []))
    return "".join(json_text(r, separators=(",", ":")) + "\n" for r in records)


def _counts(data: ExportData) -> list[TableCount]:
    out = [
        TableCount("conversations", len(data.conversations)),
        TableCount("sessions", sum(len(c.sessions) for c in data.conversations)),
        TableCount("messages", sum(len(s.messages) for c in data.conversations for s in c.sessions)),
    ]
    if data.derived:
        out.extend(TableCount(t, len(data.tables.get(t, []))) for t in DERIVED_TABLES)
    return out


def export_data(
    store: Store,
    fmt: str = "json",
    *,
    namespace: str | None = None,
    conversation_id: str | None = None,
    derived: bool = False,
    out: str | Path | None = None,
) -> tuple[str, ExportResult]:
    """Export the chosen conversations (and derived rows); write them to `out` when given. Returns (text, result)."""
    started = time.perf_counter()
    if fmt not in FORMATS:
        raise BadInput(f"unknown export format '{fmt}'; choose one of {', '.join(FORMATS)}")
    data = collect(store, namespace=namespace, conversation_id=conversation_id, derived=derived)
    text = serialize(data, fmt)
    raw = text.encode("utf-8")
    if out is not None:
        write_out(out, raw)
    result = ExportResult(
        format=fmt, out=None if out is None else str(out), derived=derived,
        conversations=[c.conversation_id for c in data.conversations], tables=_counts(data), bytes=len(raw),
        elapsed_s=time.perf_counter() - started,
    )
    return text, result
