"""Live turns → a conversation to append: what `Memory.add` and the MCP `remember` tool ingest.

The turns are validated like a native file's `messages` list (speaker, text,
optional timestamp and id) and split into sessions at gaps, like a flat file.
Each session is keyed by the content of its turns, not by its first
timestamp, so a call never grows a session that an earlier call stored and
build-graph and compile-wiki have already read: the new turns arrive as new
sessions, which both stages process incrementally. Sending the same turns
again adds nothing (ingest skips stored messages by content hash).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracecli.errors import BadInput
from tracecli.ingest.formats import DEFAULT_GAP_HOURS, MAX_MESSAGE_BYTES, _Ctx, _parse_native_conversation, value_kind
from tracecli.ingest.model import ParsedConversation
from tracecli.text import short_hash


def parse_messages(
    messages: Sequence[Any],
    conversation_id: str,
    *,
    namespace: str,
    gap_hours: float = DEFAULT_GAP_HOURS,
    name: str = "messages",
) -> ParsedConversation:
    """Validate live turns ({speaker, text, timestamp?, id?}) into one conversation of new sessions, or BadInput."""
    if not isinstance(conversation_id, str) or not conversation_id.strip():
        raise BadInput("name the conversation the messages belong to (conversation='...')")
    if not isinstance(messages, list) or isinstance(messages, (str, bytes)):
        raise BadInput(f"{name}: is {value_kind(messages)}, expected a list of {{speaker, text, timestamp}} objects")
    if not messages:
        raise BadInput(f"{name}: the list is empty; give at least one message")
    ctx = _Ctx(Path(name), gap_hours, MAX_MESSAGE_BYTES)
    cid = conversation_id.strip()
    [conv] = _parse_native_conversation(ctx, {"messages": list(messages)}, "", cid)
    conv.conversation_id = cid
    conv.namespace = namespace
    conv.source_format = "live"
    for session in conv.sessions:
        session.source_id = "live-" + short_hash(
            *[f"{m.speaker}\x1e{m.text}\x1e{m.timestamp or ''}\x1e{m.source_ref or ''}" for m in session.messages],
            length=16,
        )
    return conv


__all__ = ["parse_messages"]
