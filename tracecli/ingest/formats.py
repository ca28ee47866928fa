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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracecli.errors import BadInput
from tracecli.ingest.model import ParsedConversation, ParsedMessage, ParsedSession
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
    """Read a file as UTF-8 or raise BadInput naming the byte offset."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot be read ({exc.strerror})") from None
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
        return json.loads(text), False
    except json.JSONDecodeError as exc:
        first_error = exc
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) > 1 and _is_json_object(lines[0][1]):
        rows = []
        for n, line in lines:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise BadInput(f"{path.name}: line {n} is not valid JSON ({exc.msg})") from None
        return rows, True
    raise BadInput(
        f"{path.name}: malformed JSON at line {first_error.lineno} column {first_error.colno} ({first_error.msg})"
    ) from None


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
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
        convs[0].conversation_id = conversation_id
    ids = [c.conversation_id for c in convs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise BadInput(f"{path.name}: conversation id '{dupes[0]}' appears more than once")
    for conv in convs:
        if namespace:
            conv.namespace = namespace
        if not any(s.messages for s in conv.sessions):
            raise BadInput(f"{path.name}: conversation '{conv.conversation_id}' has no messages")
        conv.sessions = [s for s in conv.sessions if s.messages]
    return convs


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
    return ParsedMessage(speaker=speaker.strip(), text=text.strip(), timestamp=ts, source_ref=None if ref is None else str(ref))


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


def _parse_native_conversation(ctx: _Ctx, data: Any, prefix: str, default_id: str) -> list[ParsedConversation]:
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict):
        raise ctx.fail("", f"top level is {value_kind(data)}, expected an object or a list of messages")
    conv_id = str(data.get("conversation_id") or data.get("id") or default_id)
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
            sid = raw.get("id")
            sessions.append(ParsedSession(source_id=str(sid) if sid is not None else f"s{i + 1}", started_at=started, messages=msgs))
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
            namespace=str(data.get("namespace") or "default"),
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
                    started = parse_locomo_date(str(date_raw))
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
                msgs.append(ParsedMessage(speaker=speaker.strip(), text=text, timestamp=started, source_ref=None if ref is None else str(ref)))
            sessions.append(ParsedSession(source_id=key, started_at=started, messages=msgs))
        convs.append(
            ParsedConversation(
                conversation_id=str(sample.get("sample_id") or f"{ctx.path.stem}-{n}"),
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


def _parse_longmemeval(ctx: _Ctx, data: Any) -> list[ParsedConversation]:
    items = data if isinstance(data, list) else [data]
    convs = []
    for n, item in enumerate(items):
        where = f"[{n}]"
        qid = ctx.text(item, "question_id", where)
        hs = item.get("haystack_sessions")
        if not isinstance(hs, list):
            raise ctx.fail(where, "has no 'haystack_sessions' list")
        ids = item.get("haystack_session_ids") or [f"s{i + 1}" for i in range(len(hs))]
        dates = item.get("haystack_dates") or [None] * len(hs)
        if len(ids) != len(hs) or len(dates) != len(hs):
            raise ctx.fail(where, "haystack_sessions, haystack_session_ids and haystack_dates differ in length")
        sessions = []
        for i, turns in enumerate(hs):
            swhere = f"{where}.haystack_sessions[{i}]"
            started = None
            if dates[i]:
                try:
                    started = parse_longmemeval_date(str(dates[i]))
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
                msgs.append(ParsedMessage(speaker=role, text=content, timestamp=started, source_ref=f"{ids[i]}:{j}"))
            sessions.append(ParsedSession(source_id=str(ids[i]), started_at=started, messages=msgs))
        convs.append(
            ParsedConversation(conversation_id=qid, participants=["user", "assistant"], sessions=sessions, source_format="longmemeval")
        )
    return convs


# -- ChatGPT export ---------------------------------------------------------------


def _chatgpt_branch(mapping: dict[str, Any], current: str | None) -> list[dict[str, Any]]:
    """The nodes on the current branch, root first."""
    if current is None or current not in mapping:
        # No pointer to the current node: take the latest leaf.
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        current = max(
            leaves,
            key=lambda k: ((mapping[k].get("message") or {}).get("create_time") or 0, k),
            default=None,
        )
    chain = []
    seen = set()
    while current is not None and current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current]
        chain.append(node)
        current = node.get("parent")
    return list(reversed(chain))


def _parse_chatgpt(ctx: _Ctx, data: Any) -> list[ParsedConversation]:
    items = data if isinstance(data, list) else [data]
    convs = []
    for n, item in enumerate(items):
        where = f"[{n}]"
        if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
            raise ctx.fail(where, "has no 'mapping' object")
        msgs = []
        for node in _chatgpt_branch(item["mapping"], item.get("current_node")):
            message = node.get("message") if isinstance(node, dict) else None
            if not isinstance(message, dict):
                continue
            role = (message.get("author") or {}).get("role")
            if role not in ("user", "assistant"):
                continue  # system, tool and hidden nodes carry no conversation
            content = message.get("content") or {}
            parts = content.get("parts") if isinstance(content, dict) else None
            text = "\n".join(p for p in (parts or []) if isinstance(p, str)).strip()
            if not text:
                continue
            mwhere = f"{where}.mapping[{node.get('id', '?')!r}]"
            ctx.check_size(text, mwhere)
            ts = ctx.timestamp(message.get("create_time"), mwhere)
            msgs.append(ParsedMessage(speaker=role, text=text, timestamp=ts, source_ref=str(message.get("id") or node.get("id"))))
        conv_id = str(item.get("conversation_id") or item.get("id") or f"{ctx.path.stem}-{n}")
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
        conv_id = str(row.get("conversation_id") or ctx.path.stem)
        session = row.get("session_id")
        by_conv.setdefault(conv_id, {}).setdefault("" if session is None else str(session), []).append(msg)
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
