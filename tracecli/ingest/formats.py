"""Input formats → `ParsedConversation`s: native, LoCoMo, LongMemEval, ChatGPT export, JSONL.

Every parser validates as it reads and raises `BadInput` with the file name and
the place ("chat.json: sessions[3].messages[7] has no 'text'"). Parsers are
lenient where users want it: extra keys are ignored and missing timestamps are
allowed (session order is kept).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracecli.errors import BadInput
from tracecli.scope import DEFAULT_NAMESPACE, check_namespace
from tracecli.ingest.model import ParsedConversation, ParsedMessage, ParsedSession
from tracecli.jsonio import parse_json
from tracecli.text import strip_controls
from tracecli.timeutil import iso, parse_iso, parse_timestamp

FORMATS = ("auto", "native", "locomo", "longmemeval", "chatgpt", "jsonl")
DEFAULT_GAP_HOURS = 4.0
MAX_MESSAGE_BYTES = 1_000_000


class _Ctx:
    """Where we are in the file, for error messages."""

    def __init__(self, path: Path, gap_hours: float, max_message_bytes: int) -> None:
        self.path = path
        self.name = path.name
        self.gap_hours = gap_hours
        self.max_message_bytes = max_message_bytes

    def fail(self, where: str, problem: str) -> BadInput:
        place = f"{where} " if where else ""
        return BadInput(f"{self.name}: {place}{problem}")

    def text(self, obj: Any, key: str, where: str, *, allow_empty: bool = False) -> str:
        if not isinstance(obj, dict):
            raise self.fail(where, f"is {value_kind(obj)}, expected an object")
        if key not in obj or obj[key] is None:
            raise self.fail(where, f"has no '{key}'")
        value = obj[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise self.fail(where, f"'{key}' is {value_kind(value)}, expected text")
        if not allow_empty and not value.strip():
            raise self.fail(where, f"has an empty '{key}'")
        self.check_size(value, where)
        return value

    def ident(self, value: Any, where: str, default: str | None = None) -> str:
        """An id the file gives (conversation, session, message): text or a whole number, printable."""
        if value is None or value == "":
            if default is not None:
                return default
            raise self.fail(where, "is missing")
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise self.fail(where, f"is {value_kind(value)}, expected an id (text or a whole number)")
        if not value.strip():
            raise self.fail(where, "is blank")
        if strip_controls(value) != value:
            raise self.fail(where, f"{strip_controls(value)!r} holds a control character or a lone surrogate")
        self.check_size(value, where)
        return value

    def check_size(self, value: str, where: str) -> None:
        size = len(value.encode("utf-8"))
        if size > self.max_message_bytes:
            raise self.fail(
                where,
                f"is {size / 1_000_000:.1f} MB; a message may be at most "
                f"{self.max_message_bytes / 1_000_000:.1f} MB",
            )

    def timestamp(self, value: Any, where: str) -> str | None:
        if value is None or value == "":
            return None
        try:
            return parse_timestamp(value)
        except ValueError as exc:
            raise self.fail(where, f"has an unknown date: {exc}") from None


def value_kind(value: Any) -> str:
    """How a bad field reads in an error: 'an object', 'a list', 'text', 'a boolean', 'null' or 'a number'."""
    return {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


# -- reading -------------------------------------------------------------------


def read_text(path: Path) -> str:
    """Read a regular file as UTF-8 or raise BadInput naming the byte offset.

    A FIFO, socket or device is refused before it is opened: reading one could wait forever.
    """
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            raise BadInput(f"{path}: is a directory, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{path}: is not a regular file (a FIFO, socket or device); save the input to a file first")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path.name}: not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise BadInput(f"{path.name}: the file is empty")
    return text


def load_document(path: Path, text: str) -> tuple[Any, bool]:
    """Parse the file as one JSON document, or as JSON Lines; returns (data, is_jsonl)."""
    try:
        return parse_json(text, path.name), False
    except BadInput as exc:
        first_error = exc
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) > 1 and _is_json_object(lines[0][1]):
        return [parse_json(line, path.name, f"line {n}") for n, line in lines], True
    raise first_error


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


def detect_format(data: Any, is_jsonl: bool) -> str | None:
    """Guess the format from the content; None when nothing fits."""
    if is_jsonl:
        return "jsonl"
    items = data if isinstance(data, list) else [data]
    first = items[0] if items else None
    if not isinstance(first, dict):
        return None
    if "conversation" in first and isinstance(first["conversation"], dict) and "speaker_a" in first["conversation"]:
        return "locomo"
    if "haystack_sessions" in first:
        return "longmemeval"
    if "mapping" in first and isinstance(first["mapping"], dict):
        return "chatgpt"
    if isinstance(data, dict) and ("sessions" in data or "messages" in data or isinstance(data.get("conversations"), list)):
        return "native"
    if isinstance(data, list) and ("speaker" in first or "role" in first) and ("text" in first or "content" in first):
        return "native"
    return None


def parse_file(
    path: str | Path,
    fmt: str = "auto",
    *,
    conversation_id: str | None = None,
    namespace: str | None = None,
    gap_hours: float = DEFAULT_GAP_HOURS,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> list[ParsedConversation]:
    """Read one input file into conversations, or raise BadInput."""
    path = Path(path)
    if fmt not in FORMATS:
        raise BadInput(f"unknown format '{fmt}'; choose one of {', '.join(FORMATS)}")
    text = read_text(path)
    data, is_jsonl = load_document(path, text)
    if path.suffix.lower() == ".jsonl" and not is_jsonl:
        # A one-line JSON Lines file parses as a single document.
        data, is_jsonl = (data if isinstance(data, list) else [data]), True
    chosen = detect_format(data, is_jsonl) if fmt == "auto" else fmt
    if chosen is None:
        raise BadInput(
            f"{path.name}: no known format fits (expected native, LoCoMo, LongMemEval, "
            "ChatGPT export or JSONL messages); pass --format to say which"
        )
    if fmt == "jsonl" and not is_jsonl:
        data = data if isinstance(data, list) else [data]
    ctx = _Ctx(path, gap_hours, max_message_bytes)
    convs = _PARSERS[chosen](ctx, data)
    if not convs:
        raise BadInput(f"{path.name}: holds no conversations")
    if conversation_id:
        if len(convs) > 1:
            raise BadInput(f"{path.name}: holds {len(convs)} conversations; --conversation needs a file with one")
        convs[0].conversation_id = ctx.ident(conversation_id, "--conversation")
    ids = [c.conversation_id for c in convs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise BadInput(f"{path.name}: conversation id '{dupes[0]}' appears more than once")
    for conv in convs:
        conv.namespace = check_namespace(namespace) if namespace is not None else conv.namespace
        if not any(s.messages for s in conv.sessions):
            raise BadInput(f"{path.name}: conversation '{conv.conversation_id}' has no messages")
        conv.sessions = [s for s in conv.sessions if s.messages]
        _check_unique_refs(ctx, conv)
    return convs


def _check_unique_refs(ctx: _Ctx, conv: ParsedConversation) -> None:
    """Refuse a message id given twice in one conversation: `forget message ID` must name one message."""
    first: dict[str, str] = {}
    for session in conv.sessions:
        for msg in session.messages:
            if msg.source_ref is None:
                continue
            if msg.source_ref in first:
                raise ctx.fail(msg.where or f"conversation '{conv.conversation_id}'",
                               f"repeats the message id '{msg.source_ref}' of {first[msg.source_ref] or 'an earlier message'}")
            first[msg.source_ref] = msg.where


# -- native ----------------------------------------------------------------------


def _native_message(ctx: _Ctx, raw: Any, where: str) -> ParsedMessage:
    if not isinstance(raw, dict):
        raise ctx.fail(where, f"is {value_kind(raw)}, expected a message object")
    speaker_key = next((k for k in ("speaker", "role", "author", "name") if k in raw), "speaker")
    text_key = next((k for k in ("text", "content") if k in raw), "text")
    speaker = ctx.text(raw, speaker_key, where)
    text = ctx.text(raw, text_key, where)
    ts = ctx.timestamp(raw.get("timestamp", raw.get("time")), where)
    ref = raw.get("id")
    return ParsedMessage(speaker=speaker.strip(), text=text.strip(), timestamp=ts,
                         source_ref=None if ref is None else ctx.ident(ref, f"{where} 'id'"), where=where)


def split_by_gap(messages: list[ParsedMessage], gap_hours: float) -> list[ParsedSession]:
    """Split a flat, ordered message list into sessions where the time gap exceeds `gap_hours`."""
    sessions: list[ParsedSession] = []
    last: dt.datetime | None = None
    for msg in messages:
        when = parse_iso(msg.timestamp) if msg.timestamp else None
        new = not sessions or (
            when is not None and last is not None and (when - last).total_seconds() > gap_hours * 3600
        )
        if new:
            # Identify a gap-split session by its first timestamp so that a
            # re-ingest of a longer file maps old messages to the same session.
            source_id = f"t{msg.timestamp}" if msg.timestamp else f"s{len(sessions) + 1}"
            sessions.append(ParsedSession(source_id=source_id, started_at=msg.timestamp))
        sessions[-1].messages.append(msg)
        if when is not None:
            last = when
    return sessions


def _participants(ctx: _Ctx, raw: Any, sessions: list[ParsedSession]) -> list[str]:
    if raw is None:
        seen: dict[str, None] = {}
        for s in sessions:
            for m in s.messages:
                seen.setdefault(m.speaker, None)
        return list(seen)
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise ctx.fail("'participants'", "must be a list of names")
    return [p.strip() for p in raw]


def _parse_native(ctx: _Ctx, data: Any) -> list[ParsedConversation]:
    if isinstance(data, dict) and "conversations" in data and "sessions" not in data and "messages" not in data:
        # A bundle of native conversations: what `tracecli export --format json` writes.
        raw_convs = data["conversations"]
        if not isinstance(raw_convs, list):
            raise ctx.fail("'conversations'", f"is {value_kind(raw_convs)}, expected a list")
        convs: list[ParsedConversation] = []
        for i, raw in enumerate(raw_convs):
            if not isinstance(raw, dict):
                raise ctx.fail(f"conversations[{i}]", f"is {value_kind(raw)}, expected a conversation object")
            convs.extend(_parse_native_conversation(ctx, raw, f"conversations[{i}].", f"{ctx.path.stem}-{i}"))
        return convs
    return _parse_native_conversation(ctx, data, "", ctx.path.stem)


def _file_namespace(ctx: _Ctx, value: Any, where: str) -> str:
    if value is None or value == "":
        return DEFAULT_NAMESPACE
    if not isinstance(value, str):
        raise ctx.fail(where, f"is {value_kind(value)}, expected text")
    return check_namespace(value, f"{ctx.name}: {where}")


def _parse_native_conversation(ctx: _Ctx, data: Any, prefix: str, default_id: str) -> list[ParsedConversation]:
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict):
        raise ctx.fail("", f"top level is {value_kind(data)}, expected an object or a list of messages")
    id_key = "conversation_id" if data.get("conversation_id") not in (None, "") else "id"
    conv_id = ctx.ident(data.get(id_key), f"'{prefix}{id_key}'", default_id)
    if "sessions" in data:
        raw_sessions = data["sessions"]
        if not isinstance(raw_sessions, list):
            raise ctx.fail(f"'{prefix}sessions'", f"is {value_kind(raw_sessions)}, expected a list")
        sessions = []
        for i, raw in enumerate(raw_sessions):
            where = f"{prefix}sessions[{i}]"
            if not isinstance(raw, dict):
                raise ctx.fail(where, f"is {value_kind(raw)}, expected a session object")
            msgs_raw = raw.get("messages")
            if not isinstance(msgs_raw, list):
                raise ctx.fail(where, "has no 'messages' list")
            msgs = [_native_message(ctx, m, f"{where}.messages[{j}]") for j, m in enumerate(msgs_raw)]
            started = ctx.timestamp(raw.get("started_at"), where) or next(
                (m.timestamp for m in msgs if m.timestamp), None
            )
            sid = ctx.ident(raw.get("id"), f"{where} 'id'", f"s{i + 1}")
            sessions.append(ParsedSession(source_id=sid, started_at=started, messages=msgs))
        ids = [s.source_id for s in sessions]
        if len(set(ids)) != len(ids):
            raise ctx.fail(f"'{prefix}sessions'", "has two sessions with the same id")
    elif "messages" in data:
        raw_msgs = data["messages"]
        if not isinstance(raw_msgs, list):
            raise ctx.fail(f"'{prefix}messages'", f"is {value_kind(raw_msgs)}, expected a list")
        msgs = [_native_message(ctx, m, f"{prefix}messages[{j}]") for j, m in enumerate(raw_msgs)]
        sessions = split_by_gap(msgs, ctx.gap_hours)
    else:
        raise ctx.fail(prefix.rstrip("."), "has neither 'sessions' nor 'messages'")
    return [
        ParsedConversation(
            conversation_id=conv_id,
            participants=_participants(ctx, data.get("participants"), sessions),
            sessions=sessions,
            source_format="native",
            namespace=_file_namespace(ctx, data.get("namespace"), f"'{prefix}namespace'"),
        )
    ]


# -- LoCoMo ------------------------------------------------------------------------

_LOCOMO_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)


def parse_locomo_date(text: str) -> str:
    """'1:56 pm on 8 May, 2023' → '2023-05-08T13:56:00Z' (exactly, or ValueError)."""
    m = _LOCOMO_DATE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a LoCoMo date like '1:56 pm on 8 May, 2023'")
    hour, minute, ampm, day, month, year = m.groups()
    value = dt.datetime.strptime(f"{hour}:{minute} {ampm.upper()} {day} {month} {year}", "%I:%M %p %d %B %Y")
    return iso(value)


def _parse_locomo(ctx: _Ctx, data: Any) -> list[ParsedConversation]:
    samples = data if isinstance(data, list) else [data]
    convs = []
    for n, sample in enumerate(samples):
        where = f"[{n}]"
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise ctx.fail(where, "has no 'conversation' object")
        conv = sample["conversation"]
        speakers = [ctx.text(conv, "speaker_a", f"{where}.conversation"), ctx.text(conv, "speaker_b", f"{where}.conversation")]
        keys = sorted(
            (k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])
        )
        sessions = []
        for key in keys:
            swhere = f"{where}.conversation.{key}"
            turns = conv[key]
            if not isinstance(turns, list):
                raise ctx.fail(swhere, f"is {value_kind(turns)}, expected a list of turns")
            date_raw = conv.get(f"{key}_date_time")
            started = None
            if date_raw is not None:
                try:
                    if not isinstance(date_raw, str):
                        raise ValueError(f"{value_kind(date_raw)} is not a LoCoMo date like '1:56 pm on 8 May, 2023'")
                    started = parse_locomo_date(date_raw)
                except ValueError as exc:
                    raise ctx.fail(f"{where}.conversation.{key}_date_time", f"has an unknown date: {exc}") from None
            msgs = []
            for j, turn in enumerate(turns):
                twhere = f"{swhere}[{j}]"
                speaker = ctx.text(turn, "speaker", twhere)
                text = ctx.text(turn, "text", twhere, allow_empty=True).strip()
                caption = turn.get("blip_caption")
                if isinstance(caption, str) and caption.strip():
                    photo = f"[shares a photo: {caption.strip()}]"
                    text = f"{text} {photo}" if text else photo
                if not text:
                    raise ctx.fail(twhere, "has an empty 'text'")
                ctx.check_size(text, twhere)
                ref = turn.get("dia_id")
                msgs.append(ParsedMessage(speaker=speaker.strip(), text=text, timestamp=started,
                                          source_ref=None if ref is None else ctx.ident(ref, f"{twhere} 'dia_id'"),
                                          where=twhere))
            sessions.append(ParsedSession(source_id=key, started_at=started, messages=msgs))
        convs.append(
            ParsedConversation(
                conversation_id=ctx.ident(sample.get("sample_id"), f"{where} 'sample_id'", f"{ctx.path.stem}-{n}"),
                participants=speakers,
                sessions=sessions,
                source_format="locomo",
            )
        )
    return convs


# -- LongMemEval -------------------------------------------------------------------


def parse_longmemeval_date(text: str) -> str:
    """'2023/05/20 (Sat) 02:21' → '2023-05-20T02:21:00Z'."""
    cleaned = re.sub(r"\([A-Za-z]+\)", "", text).strip()
    value = dt.datetime.strptime(re.sub(r"\s+", " ", cleaned), "%Y/%m/%d %H:%M")
    return iso(value)


def _list_or(ctx: _Ctx, item: dict[str, Any], key: str, where: str, default: list[Any]) -> list[Any]:
    value = item.get(key)
    if value is None or value == []:
        return default
    if not isinstance(value, list):
        raise ctx.fail(f"{where}.{key}", f"is {value_kind(value)}, expected a list")
    return value


def _parse_longmemeval(ctx: _Ctx, data: Any) -> list[ParsedConversation]:
    items = data if isinstance(data, list) else [data]
    convs = []
    for n, item in enumerate(items):
        where = f"[{n}]"
        if not isinstance(item, dict):
            raise ctx.fail(where, f"is {value_kind(item)}, expected a LongMemEval object")
        qid = ctx.ident(item.get("question_id"), f"{where} 'question_id'")
        hs = item.get("haystack_sessions")
        if not isinstance(hs, list):
            raise ctx.fail(where, "has no 'haystack_sessions' list")
        ids = [ctx.ident(v, f"{where}.haystack_session_ids[{i}]")
               for i, v in enumerate(_list_or(ctx, item, "haystack_session_ids", where, [f"s{i + 1}" for i in range(len(hs))]))]
        dates = _list_or(ctx, item, "haystack_dates", where, [None] * len(hs))
        if len(ids) != len(hs) or len(dates) != len(hs):
            raise ctx.fail(where, "haystack_sessions, haystack_session_ids and haystack_dates differ in length")
        seen_ids: dict[str, int] = {}
        for i, sid in enumerate(ids):
            if seen_ids.setdefault(sid, i) != i:
                raise ctx.fail(f"{where}.haystack_session_ids[{i}]", f"repeats the session id '{sid}' of [{seen_ids[sid]}]")
        sessions = []
        for i, turns in enumerate(hs):
            swhere = f"{where}.haystack_sessions[{i}]"
            started = None
            if dates[i]:
                try:
                    if not isinstance(dates[i], str):
                        raise ValueError(dates[i])
                    started = parse_longmemeval_date(dates[i])
                except ValueError:
                    raise ctx.fail(f"{where}.haystack_dates[{i}]", f"has an unknown date: {dates[i]!r}") from None
            if not isinstance(turns, list):
                raise ctx.fail(swhere, f"is {value_kind(turns)}, expected a list of turns")
            msgs = []
            for j, turn in enumerate(turns):
                twhere = f"{swhere}[{j}]"
                role = ctx.text(turn, "role", twhere)
                content = ctx.text(turn, "content", twhere, allow_empty=True).strip()
                if not content:
                    continue
                msgs.append(ParsedMessage(speaker=role, text=content, timestamp=started, source_ref=f"{ids[i]}:{j}",
                                          where=twhere))
            sessions.append(ParsedSession(source_id=str(ids[i]), started_at=started, messages=msgs))
        convs.append(
            ParsedConversation(conversation_id=qid, participants=["user", "assistant"], sessions=sessions, source_format="longmemeval")
        )
    return convs


# -- ChatGPT export ---------------------------------------------------------------


def _create_time(node: Any) -> float:
    """A node's create_time as a number for ordering (0 when it has none, or not as epoch seconds)."""
    message = node.get("message") if isinstance(node, dict) else None
    value = message.get("create_time") if isinstance(message, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value else 0.0


def _chatgpt_branch(mapping: dict[str, Any], current: str | None) -> list[tuple[str, dict[str, Any]]]:
    """(key, node) of the nodes on the current branch, root first."""
    if current is None or current not in mapping:
        # No pointer to the current node: take the latest leaf.
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        current = max(leaves, key=lambda k: (_create_time(mapping[k]), k), default=None)
    chain = []
    seen = set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current]
        if not isinstance(node, dict):
            break
        chain.append((current, node))
        current = node.get("parent")
    return list(reversed(chain))


def _parse_chatgpt(ctx: _Ctx, data: Any) -> list[ParsedConversation]:
    items = data if isinstance(data, list) else [data]
    convs = []
    for n, item in enumerate(items):
        where = f"[{n}]"
        if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
            raise ctx.fail(where, "has no 'mapping' object")
        current = item.get("current_node")
        if current is not None and not isinstance(current, str):
            raise ctx.fail(f"{where}.current_node", f"is {value_kind(current)}, expected a node id")
        msgs = []
        for key, node in _chatgpt_branch(item["mapping"], current):
            message = node.get("message")
            if message is None:
                continue
            mwhere = f"{where}.mapping[{strip_controls(key)[:40]!r}]"
            if not isinstance(message, dict):
                raise ctx.fail(f"{mwhere}.message", f"is {value_kind(message)}, expected an object")
            author = message.get("author")
            if author is not None and not isinstance(author, dict):
                raise ctx.fail(f"{mwhere}.message.author", f"is {value_kind(author)}, expected an object with a 'role'")
            role = (author or {}).get("role")
            if role not in ("user", "assistant"):
                continue  # system, tool and hidden nodes carry no conversation
            content = message.get("content")
            if content is not None and not isinstance(content, dict):
                raise ctx.fail(f"{mwhere}.message.content", f"is {value_kind(content)}, expected an object with 'parts'")
            parts = (content or {}).get("parts")
            if parts is not None and not isinstance(parts, list):
                raise ctx.fail(f"{mwhere}.message.content.parts", f"is {value_kind(parts)}, expected a list")
            text = "\n".join(p for p in (parts or []) if isinstance(p, str)).strip()
            if not text:
                continue
            ctx.check_size(text, mwhere)
            ts = ctx.timestamp(message.get("create_time"), f"{mwhere}.message.create_time")
            ref = message.get("id") if message.get("id") not in (None, "") else node.get("id")
            msgs.append(ParsedMessage(speaker=role, text=text, timestamp=ts,
                                      source_ref=None if ref in (None, "") else ctx.ident(ref, f"{mwhere} 'id'"),
                                      where=mwhere))
        id_key = "conversation_id" if item.get("conversation_id") not in (None, "") else "id"
        conv_id = ctx.ident(item.get(id_key), f"{where} '{id_key}'", f"{ctx.path.stem}-{n}")
        convs.append(
            ParsedConversation(
                conversation_id=conv_id,
                participants=["user", "assistant"],
                sessions=split_by_gap(msgs, ctx.gap_hours),
                source_format="chatgpt",
            )
        )
    return convs


# -- JSONL -------------------------------------------------------------------------


def _parse_jsonl(ctx: _Ctx, rows: Any) -> list[ParsedConversation]:
    by_conv: dict[str, dict[str, list[ParsedMessage]]] = {}
    for n, row in enumerate(rows, 1):
        where = f"line {n}"
        msg = _native_message(ctx, row, where)
        conv_id = ctx.ident(row.get("conversation_id"), f"{where} 'conversation_id'", ctx.path.stem)
        session = ctx.ident(row.get("session_id"), f"{where} 'session_id'", "")
        by_conv.setdefault(conv_id, {}).setdefault(session, []).append(msg)
    convs = []
    for conv_id, groups in by_conv.items():
        sessions: list[ParsedSession] = []
        for sid, msgs in groups.items():
            if sid:
                sessions.append(ParsedSession(source_id=sid, started_at=next((m.timestamp for m in msgs if m.timestamp), None), messages=msgs))
            else:
                sessions.extend(split_by_gap(msgs, ctx.gap_hours))
        convs.append(
            ParsedConversation(
                conversation_id=conv_id,
                participants=_participants(ctx, None, sessions),
                sessions=sessions,
                source_format="jsonl",
            )
        )
    return convs


_PARSERS: dict[str, Callable[[_Ctx, Any], list[ParsedConversation]]] = {
    "native": _parse_native,
    "locomo": _parse_locomo,
    "longmemeval": _parse_longmemeval,
    "chatgpt": _parse_chatgpt,
    "jsonl": _parse_jsonl,
}
