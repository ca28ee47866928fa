"""compile-wiki with an LLM: a structured reply per exchange becomes claims, validated like the offline ones.

A reply's claims must cite a line of the exchange and quote it verbatim (`grounded`); a
claim whose quote sits in a faceted sentence is left to the offline templated claims,
which carry the lifecycle. An unusable reply keeps the exchange's offline claims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tracecli.text import short_hash
from tracecli.wiki.claims import (
    PHOTO,
    ClaimDraft,
    EventRow,
    Extraction,
    MessageRow,
    display_item,
    clean_value,
    free_family,
    grounded,
    norm_text,
    readable,
)

if TYPE_CHECKING:
    from tracecli.providers.llm import ChatModel


CLAIM_SCHEMA: dict[str, Any] = {
    "title": "exchange_claims",
    "type": "object",
    "properties": {
        "claims": {
            "type": "array",
            "maxItems": 40,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 3, "maxLength": 400},
                    "subject": {"type": "string"},
                    "source": {"type": "string"},
                    "supporting_quote": {"type": "string", "minLength": 2, "maxLength": 600},
                    "status": {"type": "string", "enum": ["active", "needs-confirmation"]},
                },
                "required": ["text", "subject", "source", "supporting_quote", "status"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["claims"],
    "additionalProperties": False,
}

_CLAIM_SYSTEM = """\
You turn one exchange of a conversation into atomic memory claims.
Each claim is one complete third-person sentence a reader understands without the chat:
name people instead of using I/you/we/my (the speaker of each line is given), and keep the
exact names, titles, places, counts and items the speakers used. A list of things in one
line ("I love X, Y and Z") becomes one claim per item. Only state what the lines say.
Skip greetings, questions, reactions and small talk.
For every claim give: `source` = the label of the line it comes from (e.g. "M2"),
`supporting_quote` = a span copied character for character from that line,
`subject` = the person the claim is about, and `status` = "needs-confirmation" when the
speaker hedges (probably, maybe, if ...), else "active". Reply with JSON only."""


def claim_prompt(exchange: Sequence[MessageRow], participants: Sequence[str]) -> list[dict[str, str]]:
    """The chat messages asking for an exchange's claims."""
    lines = [f"Participants: {', '.join(participants)}"]
    for n, m in enumerate(exchange, 1):
        when = (m.timestamp or "")[:10]
        lines.append(f"M{n} [{when}] {m.speaker}: {m.text[:2000]}")
    return [{"role": "system", "content": _CLAIM_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def check_llm_claims(
    value: Any, exchange: Sequence[MessageRow], events_by_seq: Mapping[int, Sequence[EventRow]], participants: Sequence[str]
) -> tuple[list[ClaimDraft], int]:
    """Validated drafts from a structured reply, and how many were dropped as ungrounded."""
    labels = {f"M{n}": m for n, m in enumerate(exchange, 1)}
    msgs = {m.id: m for m in exchange}
    names = set(participants) | {m.speaker for m in exchange}
    drafts: list[ClaimDraft] = []
    dropped = 0
    for n, raw in enumerate(value.get("claims", []) if isinstance(value, dict) else []):
        msg = labels.get(str(raw.get("source", "")).strip())
        quote = str(raw.get("supporting_quote", ""))
        text = readable(str(raw.get("text", "")))
        subject = str(raw.get("subject", "")).strip()
        if msg is None or not text:
            dropped += 1
            continue
        if quote not in msg.text:
            stripped = quote.strip().strip("\"'“”")
            if stripped and stripped in msg.text:
                quote = stripped
        if subject not in names:
            subject = msg.speaker
        events = events_by_seq.get(msg.seq, [])
        host = next((e for e in events if quote and quote in e.quote), None)
        if host is not None and host.facet and host.value and clean_value(host.value) is not None:
            continue  # a faceted sentence: its templated claims carry the lifecycle
        fam_item = free_family(text)
        d = ClaimDraft(
            key=f"llm|{msg.id}|{short_hash(text, quote)}", text=text, subject=subject, source_message_ids=[msg.id],
            supporting_quote=quote, status=str(raw.get("status") or "active"), event_id=host.id if host else None,
            family=fam_item[0] if fam_item else None, item=display_item(fam_item[1]) if fam_item else None,
            origin="llm", order=(msg.seq, host.sentence_idx if host else 500 + n, n),
        )
        if d.status not in ("active", "needs-confirmation"):
            d.status = "active"
        if not grounded(d, msgs):
            dropped += 1
            continue
        drafts.append(d)
    return drafts, dropped


def extract_with_llm(
    llm: ChatModel,
    exchanges: Sequence[Sequence[MessageRow]],
    events_by_seq: Mapping[int, Sequence[EventRow]],
    participants: Sequence[str],
    offline: Sequence[Extraction],
    stage: str = "compile-wiki",
) -> list[Extraction]:
    """LLM claims for each exchange, merged with the offline faceted claims; offline claims when a reply is unusable."""
    from tracecli.providers.llm import LLMRequest

    todo = [n for n, ex in enumerate(exchanges) if any(events_by_seq.get(m.seq) for m in ex) or any(PHOTO.search(m.text) for m in ex)]
    requests = [LLMRequest(claim_prompt(exchanges[n], participants), CLAIM_SCHEMA, stage) for n in todo]
    results = llm.complete_many(requests, stage=stage) if requests else []
    out = [Extraction(drafts=list(o.drafts), ungrounded=o.ungrounded) for o in offline]
    for n, result in zip(todo, results):
        if not result.ok:
            out[n].llm_fallback = True
            continue
        drafts, dropped = check_llm_claims(result.value, exchanges[n], events_by_seq, participants)
        if not drafts:
            out[n].llm_fallback = True
            out[n].ungrounded += dropped
            continue
        keep = [d for d in offline[n].drafts if d.facet and d.event_id and not d.key.startswith("photo|")]
        keep += [d for d in offline[n].drafts if d.key.startswith("photo|")]
        seen = {norm_text(d.text) for d in keep}
        merged = list(keep)
        for d in drafts:
            if norm_text(d.text) not in seen:
                seen.add(norm_text(d.text))
                merged.append(d)
        out[n] = Extraction(drafts=sorted(merged, key=lambda d: d.order), ungrounded=offline[n].ungrounded + dropped,
                            llm_used=True)
    return out
