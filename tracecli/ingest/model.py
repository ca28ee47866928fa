"""Format-independent shapes that every input parser produces."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ParsedMessage:
    """One chat turn as read from a file."""

    speaker: str
    text: str
    timestamp: str | None = None  # UTC ISO-8601 with Z, or None when the input had none
    source_ref: str | None = None  # the id the input gave (LoCoMo dia_id, native id ...)
    where: str = field(default="", compare=False)  # its place in the file, for errors ("sessions[2].messages[5]")


@dataclass
class ParsedSession:
    """A run of messages; `source_id` identifies it across re-ingests."""

    source_id: str
    started_at: str | None
    messages: list[ParsedMessage] = field(default_factory=list)


@dataclass
class ParsedConversation:
    """A whole conversation read from a file."""

    conversation_id: str
    participants: list[str]
    sessions: list[ParsedSession]
    source_format: str
    namespace: str = "default"
