"""Reading an export file back: parse JSON or JSONL and validate every field before anything is written."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from tracecli.errors import BadInput
from tracecli.ingest.formats import load_document, read_text, value_kind
from tracecli.transfer.model import (
    DERIVED_TABLES, EXPORT_FORMAT, EXPORT_VERSION, PARENT, ExportConversation, ExportData, ExportMessage, ExportSession,
    row_owners, schema_columns,
)

# -- reading an export --------------------------------------------------------------------------


class _Reader:
    """Typed field access that fails with the file name and the place."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, where: str, problem: str) -> BadInput:
        return BadInput(f"{self.name}: {where + ' ' if where else ''}{problem}")

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"is {value_kind(value)}, expected an object")
        return value

    def get(self, obj: dict[str, Any], key: str, where: str) -> Any:
        if key not in obj:
            raise self.fail(where, f"has no '{key}'")
        return obj[key]

    def text(self, obj: dict[str, Any], key: str, where: str, *, optional: bool = False, nonempty: bool = True) -> Any:
        value = self.get(obj, key, where)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(where, f"'{key}' is {value_kind(value)}, expected text")
        if nonempty and not value.strip():
            raise self.fail(where, f"has an empty '{key}'")
        return value

    def integer(self, obj: dict[str, Any], key: str, where: str) -> int:
        value = self.get(obj, key, where)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"'{key}' is {value_kind(value)}, expected a whole number")
        return value

    def items(self, obj: dict[str, Any], key: str, where: str) -> list[Any]:
        value = self.get(obj, key, where)
        if not isinstance(value, list):
            raise self.fail(where, f"'{key}' is {value_kind(value)}, expected a list")
        return value

    def header(self, obj: dict[str, Any], where: str) -> tuple[bool, tuple[str, int] | None]:
        if obj.get("format") != EXPORT_FORMAT:
            raise self.fail(where, f"is not a tracecli export (no \"format\": \"{EXPORT_FORMAT}\"); chat files go through `tracecli ingest`")
        version = obj.get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise self.fail(where, f"has no export 'version' (a whole number; this tracecli reads version {EXPORT_VERSION})")
        if version != EXPORT_VERSION:
            newer = "; upgrade tracecli" if version > EXPORT_VERSION else ""
            raise self.fail(where, f"is export version {version}; this tracecli reads version {EXPORT_VERSION}{newer}")
        derived = obj.get("derived", False)
        if not isinstance(derived, bool):
            raise self.fail(where, f"'derived' is {value_kind(derived)}, expected true or false")
        model = obj.get("embedding_model")
        if model is None:
            return derived, None
        model = self.obj(model, f"{where} 'embedding_model'".strip())
        return derived, (self.text(model, "id", "'embedding_model'"), self.integer(model, "dimension", "'embedding_model'"))

    def conversation(self, obj: dict[str, Any], where: str) -> ExportConversation:
        participants = self.items(obj, "participants", where)
        if not all(isinstance(p, str) for p in participants):
            raise self.fail(where, "'participants' must be a list of names")
        return ExportConversation(
            conversation_id=self.text(obj, "conversation_id", where), namespace=self.text(obj, "namespace", where),
            participants=participants, source_format=self.text(obj, "source_format", where, optional=True),
            source_file=self.text(obj, "source_file", where, optional=True), created_at=self.text(obj, "created_at", where),
        )

    def session(self, obj: dict[str, Any], where: str) -> ExportSession:
        return ExportSession(source_id=self.text(obj, "id", where), idx=self.integer(obj, "idx", where),
                             started_at=self.text(obj, "started_at", where, optional=True))

    def message(self, obj: dict[str, Any], where: str) -> ExportMessage:
        return ExportMessage(
            message_id=self.text(obj, "message_id", where), source_ref=self.text(obj, "id", where, optional=True, nonempty=False),
            speaker=self.text(obj, "speaker", where), text=self.text(obj, "text", where),
            timestamp=self.text(obj, "timestamp", where, optional=True), seq=self.integer(obj, "seq", where),
            turn=self.integer(obj, "turn", where),
        )

    def row(self, table: str, value: Any, where: str) -> dict[str, Any]:
        """A derived row checked against this tracecli's schema, blobs decoded."""
        schema = schema_columns().get(table)
        if schema is None:
            raise self.fail(where, f"names an unknown table '{table}' (exported tables: {', '.join(DERIVED_TABLES)})")
        row = self.obj(value, where)
        cols = {c.name: c for c in schema}
        unknown = sorted(set(row) - set(cols))
        if unknown:
            raise self.fail(where, f"has a column '{unknown[0]}' that table {table} does not have; upgrade tracecli")
        out: dict[str, Any] = {}
        for c in schema:
            if c.name not in row:
                if c.required:
                    raise self.fail(where, f"has no '{c.name}' (table {table} needs it)")
                continue
            v = row[c.name]
            if isinstance(v, (dict, list)):
                raise self.fail(where, f"'{c.name}' is {value_kind(v)}, expected a single value")
            if v is None and c.required:
                raise self.fail(where, f"'{c.name}' is null (table {table} needs a value)")
            if c.type == "BLOB" and v is not None:
                if not isinstance(v, str):
                    raise self.fail(where, f"'{c.name}' is {value_kind(v)}, expected base64 text")
                try:
                    v = base64.b64decode(v, validate=True)
                except (binascii.Error, ValueError):
                    raise self.fail(where, f"'{c.name}' is not valid base64") from None
            out[c.name] = v
        return out


def _from_json(r: _Reader, doc: Any) -> ExportData:
    doc = r.obj(doc, "the top level")
    derived, model = r.header(doc, "")
    data = ExportData(source=r.name, conversations=[], derived=derived, embedding_model=model)
    for i, raw in enumerate(r.items(doc, "conversations", "")):
        where = f"conversations[{i}]"
        conv = r.conversation(r.obj(raw, where), where)
        for j, raw_s in enumerate(r.items(raw, "sessions", where)):
            swhere = f"{where}.sessions[{j}]"
            session = r.session(r.obj(raw_s, swhere), swhere)
            session.messages = [r.message(r.obj(m, f"{swhere}.messages[{k}]"), f"{swhere}.messages[{k}]")
                                for k, m in enumerate(r.items(raw_s, "messages", swhere))]
            conv.sessions.append(session)
        data.conversations.append(conv)
    tables = doc.get("tables")
    if tables is not None:
        tables = r.obj(tables, "'tables'")
        for name, rows in tables.items():
            if not isinstance(rows, list):
                raise r.fail(f"tables.{name}", f"is {value_kind(rows)}, expected a list of rows")
            data.tables[name] = [r.row(name, row, f"tables.{name}[{k}]") for k, row in enumerate(rows)]
    return data


def _from_jsonl(r: _Reader, rows: list[Any]) -> ExportData:
    head = r.obj(rows[0], "line 1")
    if head.get("record") != "header":
        r.header(head, "line 1")  # says "not a tracecli export" when it is not one
        raise r.fail("line 1", "is not the export's header record")
    derived, model = r.header(head, "line 1")
    data = ExportData(source=r.name, conversations=[], derived=derived, embedding_model=model)
    convs: dict[str, ExportConversation] = {}
    sessions: dict[tuple[str, str], ExportSession] = {}
    for n, raw in enumerate(rows[1:], 2):
        where = f"line {n}"
        rec = r.obj(raw, where)
        kind = rec.get("record")
        if kind == "conversation":
            conv = r.conversation(rec, where)
            if conv.conversation_id in convs:
                raise r.fail(where, f"repeats conversation '{conv.conversation_id}'")
            convs[conv.conversation_id] = conv
            data.conversations.append(conv)
        elif kind in ("session", "message"):
            cid = r.text(rec, "conversation_id", where)
            if cid not in convs:
                raise r.fail(where, f"belongs to conversation '{cid}', which no earlier line declares")
            if kind == "session":
                session = r.session(rec, where)
                if (cid, session.source_id) in sessions:
                    raise r.fail(where, f"repeats session '{session.source_id}' of '{cid}'")
                sessions[(cid, session.source_id)] = session
                convs[cid].sessions.append(session)
            else:
                sid = r.text(rec, "session_id", where)
                if (cid, sid) not in sessions:
                    raise r.fail(where, f"belongs to session '{sid}' of '{cid}', which no earlier line declares")
                sessions[(cid, sid)].messages.append(r.message(rec, where))
        elif kind == "row":
            table = r.text(rec, "table", where)
            data.tables.setdefault(table, []).append(r.row(table, r.get(rec, "row", where), where))
        elif kind == "header":
            raise r.fail(where, "is a second header record")
        else:
            raise r.fail(where, f"has an unknown 'record' {kind!r} (expected conversation, session, message or row)")
    return data


def _check_references(r: _Reader, data: ExportData) -> None:
    """Conversation and session ids unique; every derived row belongs to a conversation of the file."""
    cids = [c.conversation_id for c in data.conversations]
    dupes = sorted({c for c in cids if cids.count(c) > 1})
    if dupes:
        raise r.fail("", f"holds conversation '{dupes[0]}' twice")
    for c in data.conversations:
        sids = [s.source_id for s in c.sessions]
        if len(set(sids)) != len(sids):
            raise r.fail("", f"conversation '{c.conversation_id}' has two sessions with the same id")
        mids = [m.message_id for s in c.sessions for m in s.messages]
        if len(set(mids)) != len(mids):
            raise r.fail("", f"conversation '{c.conversation_id}' holds a message id twice")
        if not mids:
            raise r.fail("", f"conversation '{c.conversation_id}' has no messages")
    for t in data.tables:
        if t not in DERIVED_TABLES:
            raise r.fail("", f"names an unknown table '{t}'")
    known = set(cids)
    for t, owners in row_owners(data).items():
        for i, (row, cid) in enumerate(zip(data.tables.get(t, []), owners)):
            if cid is None:
                parent, col = PARENT[t]
                raise r.fail(f"tables.{t}[{i}]", f"names {col} '{row[col]}', which is not among the file's {parent}")
            if cid not in known:
                raise r.fail(f"tables.{t}[{i}]", f"belongs to conversation '{cid}', which the file does not hold")


def read_export(path: str | Path) -> ExportData:
    """Read and fully validate an export file, or raise BadInput naming the file and the problem."""
    path = Path(path)
    text = read_text(path)
    doc, is_jsonl = load_document(path, text)
    r = _Reader(path.name)
    if not is_jsonl and isinstance(doc, dict) and "record" in doc:
        doc, is_jsonl = [doc], True  # a JSONL export of a single line
    data = _from_jsonl(r, doc) if is_jsonl else _from_json(r, doc)
    if not data.conversations:
        raise r.fail("", "holds no conversations")
    _check_references(r, data)
    data.format = "jsonl" if is_jsonl else "json"
    return data
