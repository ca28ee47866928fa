"""LLM event distillation (TRACE Eq. 9): one structured call per session, every field checked.

The model sees the session's numbered messages, the participants, the facet
vocabulary and what is already known about each person's facets (so it can
mark revisions). Its reply is trusted only as far as the source text backs it:

* each event cites 1–2 messages of the session by their number;
* the description's content words (names of the subject and the speakers
  removed, light stemming) overlap the cited messages' words by at least
  `SUPPORT_THRESHOLD`;
* the subject and every participant is a speaker or a person named in the
  cited messages;
* a value occurs (case-insensitively) in a cited message and is stored as the
  source spells it;
* times are anchored to the text: a date phrase (or an ISO date the model
  worked out) is resolved with `find_dates` against the message timestamp.

Invalid events are dropped and counted; an unknown facet only loses the facet.
A reply that cannot be used at all (the client fell back, or every proposed
event was dropped) yields None and the caller runs the rule extractor for the
session. Events are built like the rule extractor's: same value normalisation,
cue detection and ordering fields, with provenance "llm".
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.graph import facets as F
from tracecli.graph.dates import DateMention, find_dates, format_date
from tracecli.graph.extract import EventOut, MessageIn
from tracecli.providers.llm import ChatModel, complete_or_fallback
from tracecli.text import content_words, short_hash, stem
from tracecli.timeutil import parse_iso

logger = logging.getLogger("tracecli.graph.llm_extract")

STAGE = "build-graph"
EVENT_TYPES = ("action", "state_change", "preference", "plan")
CAUSAL_LABELS = ("causes", "enables", "prevents")
SUPPORT_THRESHOLD = 0.5
MAX_SOURCES = 2
CONFIDENCE_RANGE = (0.3, 0.95)
# Prompt bounds: a message longer than this is cut in the prompt (validation
# still reads the whole text); at most this many known facts are listed.
MAX_MESSAGE_CHARS = 2000
MAX_KNOWN_FACTS = 80

FIXED_FACETS = tuple(F.FACETS)
PARAM_FACETS = ("pet_name", "family", "date", "venue", "favourite")

_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
# Every property is required (nullable where optional) so the schema is also
# accepted by servers that enforce OpenAI's strict structured-output mode.
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "type": {"type": "string", "enum": list(EVENT_TYPES)},
        "subject": {"type": "string", "minLength": 1},
        "participants": {"type": "array", "items": {"type": "string"}},
        "description": {"type": "string", "minLength": 1},
        # no "minimum": a bad number drops one event (source_missing), not the whole reply
        "sources": {"type": "array", "minItems": 1, "items": {"type": "integer"}},
        "time": _NULLABLE_STRING,
        "facet": _NULLABLE_STRING,
        "value": _NULLABLE_STRING,
        "negated": {"type": "boolean"},
        "revision_cue": _NULLABLE_STRING,
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": [
        "id", "type", "subject", "participants", "description", "sources", "time", "facet", "value", "negated",
        "revision_cue", "confidence",
    ],
    "additionalProperties": False,
}
LINK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "cause": {"type": "string"},
        "effect": {"type": "string"},
        "label": {"type": "string", "enum": list(CAUSAL_LABELS)},
        "cue": _NULLABLE_STRING,
    },
    "required": ["cause", "effect", "label", "cue"],
    "additionalProperties": False,
}
SESSION_SCHEMA: dict[str, Any] = {
    "title": "session_events",
    "type": "object",
    "properties": {
        "events": {"type": "array", "items": EVENT_SCHEMA},
        "links": {"type": "array", "items": LINK_SCHEMA},
    },
    "required": ["events", "links"],
    "additionalProperties": False,
}

_SYSTEM = """\
You build the memory of a long chat. You read one session and list its events: \
facts about people that may matter in later sessions.

Event types:
- action: something a person did or that happened to them.
- state_change: something about a person that now holds or has changed (home, job, relationship, a pet).
- preference: something a person likes, dislikes, eats, drinks or does for fun.
- plan: something a person intends or has arranged to do.

For every event give:
- id: a short label of your choice ("e1", "e2", ...), unique in your reply.
- subject: the person the fact is about, by name: a speaker, or someone named in the messages. \
"I" is the speaker of that message; "you" is the person spoken to.
- participants: every person involved, by name (the subject included); only speakers or people \
named in the cited messages.
- description: one short sentence in the third person, using the words of the messages \
(no dates you worked out, no interpretation).
- sources: the numbers of the one or two messages that state the fact. Never more than two.
- time: when it happens or happened, as the date phrase used in the message ("next Friday", \
"in June", "2023-05-07"), or null.
- facet: when the event sets a fact that can change over time, one name from the facet list; \
otherwise null.
- value: the facet's value copied exactly from the message text (e.g. "Lisbon", "flat white"); \
null without a facet.
- negated: true when the message says the fact no longer holds ("I'm not vegetarian any more").
- revision_cue: when the event replaces a known fact, the word or phrase of the message that \
signals it ("instead", "switched to", "no longer"); otherwise null.
- confidence: 0 to 1, how clearly the messages state it.

Links: when one event of this session caused, enabled or prevented another, add \
{"cause": id, "effect": id, "label": "causes" | "enables" | "prevents", "cue": the linking words \
of the message, such as "because" or "so"}.

Skip greetings, small talk, questions, hypotheticals and facts nobody states. \
Reply with JSON only."""


_FACET_HINTS = {
    "residence": "where the person lives now",
    "moving_to": "where the person plans to move",
    "hometown": "where the person is originally from",
    "instrument": "a musical instrument the person plays",
    "club": "a club, team or society the person belongs to",
    "employer": "the company or organisation the person works for",
    "occupation": "the person's job or profession",
    "study": "what the person studies",
    "diet": "the person's diet (vegan, vegetarian, ...)",
    "coffee": "the person's usual coffee or tea",
    "sport": "a sport the person does",
    "hobbies": "the person's hobbies, as the message lists them",
    "partner": "the name of the person's partner",
    "relationship": "relationship status (single, engaged, married, ...)",
    "trip_destination": "where the person is travelling to",
    "car": "the car the person drives",
}


def facet_vocabulary() -> str:
    """The facet names the prompt offers, one per line."""
    lines = [f"- {name}: {_FACET_HINTS.get(name, spec.label)}" for name, spec in F.FACETS.items()]
    lines += [
        "- pet_name:<species>: a pet's name (e.g. pet_name:dog)",
        "- family:<relation>: the name of a relative or close person (e.g. family:sister)",
        "- date:<event>: when a planned event happens; the value is the date phrase (e.g. date:wedding)",
        "- venue:<event>: where a planned event happens (e.g. venue:wedding)",
        "- favourite:<category>: a favourite thing (e.g. favourite:book)",
    ]
    return "\n".join(lines)


# -- result ----------------------------------------------------------------------------
@dataclass
class LLMExtraction:
    """What one session's call produced: events (None → use the rules) and what was dropped, by reason."""

    events: list[EventOut] | None
    proposed: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    links_proposed: int = 0
    links_dropped: int = 0
    fallback: bool = False
    reason: str | None = None

    @property
    def dropped_total(self) -> int:
        """All events dropped, whatever the reason."""
        return sum(self.dropped.values())


class _Invalid(Exception):
    """One proposed event fails a check; the message is the drop reason."""


# -- prompt ----------------------------------------------------------------------------
def _known_facts(history: Sequence[EventOut]) -> list[str]:
    latest: dict[tuple[str, str], EventOut] = {}
    for ev in history:
        if ev.facet and ev.value:
            latest.pop((ev.subject, ev.facet), None)
            latest[(ev.subject, ev.facet)] = ev  # re-insert: dict order = recency
    facts = list(latest.values())[-MAX_KNOWN_FACTS:]
    facts.sort(key=lambda e: (e.subject, e.facet or ""))
    lines = []
    for ev in facts:
        value = f"no longer {ev.value}" if ev.negated else ev.value
        when = f" (as of {ev.time_anchor[:10]})" if ev.time_anchor else ""
        lines.append(f"- {ev.subject} | {ev.facet} | {value}{when}")
    return lines


def build_prompt(
    messages: Sequence[MessageIn], participants: Sequence[str], history: Sequence[EventOut]
) -> list[dict[str, str]]:
    """The chat messages of one session's extraction call (deterministic, so the cache can hit)."""
    known = _known_facts(history)
    numbered = []
    for i, msg in enumerate(messages, 1):
        text = msg.text if len(msg.text) <= MAX_MESSAGE_CHARS else msg.text[:MAX_MESSAGE_CHARS] + " [...]"
        when = msg.timestamp or "no date"
        numbered.append(f"[{i}] ({when}) {msg.speaker}: {text}")
    user = "\n".join(
        [
            f"Speakers: {', '.join(participants) or 'unknown'}",
            "",
            "Facets:",
            facet_vocabulary(),
            "",
            "Already known (the latest value of each person's facets; mark a change with revision_cue):",
            *(known or ["- nothing yet"]),
            "",
            "Session messages:",
            *numbered,
        ]
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


# -- text checks -----------------------------------------------------------------------
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")


def sentences(text: str) -> list[str]:
    """The text's sentences (a light splitter; the quote only needs to be a verbatim span)."""
    parts = [p.strip() for p in _SENTENCE_END.split(text.strip())]
    return [p for p in parts if p] or [text.strip()]


def _stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


def _strip_names(text: str, names: Sequence[str]) -> str:
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w]){re.escape(name)}(?:['’]s)?(?![\w])", " ", text, flags=re.IGNORECASE)
    return text


def support(description: str, source_text: str, names: Sequence[str]) -> float:
    """Share of the description's content words (names removed) found in the source text."""
    desc = _stems(_strip_names(description, names))
    if not desc:
        return 0.0
    return len(desc & _stems(source_text)) / len(desc)


# Case-sensitive on purpose: "US" the country is not "us".
_FIRST_PERSON = re.compile(r"\b(?:I|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e|us|[Oo]ur|[Oo]urs)\b")


def _named_in(name: str, text: str) -> bool:
    return bool(re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text))


def _find_ci(needle: str, text: str) -> re.Match[str] | None:
    """`needle` in `text`, ignoring case, as whole words ("so" is not found in "also", "Lis" not in "Lisbon")."""
    needle = needle.strip()
    if not needle:
        return None
    return re.search(rf"(?<![\w]){re.escape(needle)}(?![\w])", text, re.IGNORECASE)


def normalise_facet(raw: str | None) -> str | None:
    """The vocabulary's spelling of a facet name, or None if it is not in the vocabulary."""
    if not raw:
        return None
    text = raw.strip().lower().replace(" :", ":").replace(": ", ":")
    if text in F.FACETS:
        return text
    head, sep, param = text.partition(":")
    param = param.strip()
    if not sep or head not in PARAM_FACETS or not re.fullmatch(r"[a-z][a-z \-]{0,29}", param):
        return None
    builders = {
        "pet_name": F.pet_facet,
        "family": F.family_facet,
        "date": F.date_facet,
        "venue": F.venue_facet,
        "favourite": F.favourite_facet,
    }
    return builders[head](param)


_ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


def _iso_mention(text: str) -> tuple[dt.date, str] | None:
    m = _ISO_DATE.match(text.strip())
    if not m:
        return None
    try:
        if m.group(3):
            return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))), "day"
        if m.group(2):
            return dt.date(int(m.group(1)), int(m.group(2)), 1), "month"
        return dt.date(int(m.group(1)), 1, 1), "year"
    except ValueError:
        return None


def _same_period(a: tuple[dt.date, str], b: DateMention) -> bool:
    if a[1] == "year" or b.granularity == "year":
        return a[0].year == b.date.year
    if a[1] == "month" or b.granularity == "month":
        return (a[0].year, a[0].month) == (b.date.year, b.date.month)
    if b.granularity == "week":
        return abs((a[0] - b.date).days) <= 6
    return a[0] == b.date


def resolve_time(
    time_text: str | None, source_text: str, base: dt.datetime | None, *, future: bool
) -> tuple[dt.date, str] | None:
    """(date, granularity) for the model's time, anchored to a date expression of the source text."""
    if not time_text or not time_text.strip():
        return None
    in_source = find_dates(source_text, base, future=future)
    iso = _iso_mention(time_text)
    if iso is not None:
        # The model did the arithmetic: keep its date only if the text says the same.
        if time_text.strip() in source_text:
            return iso
        agreeing = next((m for m in in_source if _same_period(iso, m)), None)
        if agreeing is not None:
            return agreeing.date, agreeing.granularity  # the text's own precision ("next month")
        return (in_source[0].date, in_source[0].granularity) if in_source else None
    if _find_ci(time_text, source_text):
        mentions = find_dates(time_text, base, future=future) or find_dates("in " + time_text, base, future=future)
        if mentions:
            return mentions[0].date, mentions[0].granularity
    # A paraphrase ("2 weeks ago" for "two weeks ago"): trust the text's own expression.
    return (in_source[0].date, in_source[0].granularity) if in_source else None


# -- validation ------------------------------------------------------------------------
def _quote(
    cited: Sequence[MessageIn], description: str, value: str, subject: str, speakers: Sequence[str]
) -> tuple[MessageIn, int, str]:
    """(host message, sentence index, sentence): the sentence stating the event, preferring the subject's own words."""
    names = [subject, *speakers]
    best: tuple[tuple[bool, float, int, int], MessageIn, int, str] | None = None
    for msg in cited:
        for s_idx, sent in enumerate(sentences(msg.text)):
            if value and not _find_ci(value, sent):
                continue
            key = (msg.speaker == subject, support(description, sent, names), msg.seq, -s_idx)
            if best is None or key > best[0]:
                best = (key, msg, s_idx, sent)
    if best is not None:
        return best[1], best[2], best[3]
    # The value spans a sentence break: quote the whole message that holds it.
    host = next((m for m in reversed(cited) if _find_ci(value, m.text)), cited[-1])
    return host, 0, host.text.strip()


def _check_event(
    raw: Mapping[str, Any],
    messages: Sequence[MessageIn],
    speakers: Sequence[str],
) -> tuple[EventOut, str]:
    """One proposed event → an EventOut, or _Invalid naming why it is dropped."""
    idx = sorted({int(i) for i in raw["sources"]})
    if any(i < 1 or i > len(messages) for i in idx):
        raise _Invalid("source_missing")
    if len(idx) > MAX_SOURCES:
        raise _Invalid("too_many_sources")
    cited = [messages[i - 1] for i in idx]
    source_text = "\n".join(m.text for m in cited)

    def person(name: str) -> str | None:
        """The name as the conversation spells it, if it is a speaker or named in the cited text."""
        name = " ".join(name.split())
        if not name:
            return None
        spelled = next((s for s in speakers if s.lower() == name.lower()), None)
        if spelled is not None:
            return spelled
        return name if _named_in(name, source_text) else None

    subject = person(raw["subject"])
    if subject is None:
        raise _Invalid("unknown_subject")
    people: list[str] = []
    for raw_name in raw["participants"]:
        if not raw_name.strip():
            continue
        name = person(raw_name)
        if name is None:
            raise _Invalid("unknown_participant")
        people.append(name)
    description = " ".join(raw["description"].split())
    if _FIRST_PERSON.search(description):
        raise _Invalid("not_third_person")
    if support(description, source_text, [subject, *speakers]) < SUPPORT_THRESHOLD:
        raise _Invalid("unsupported_description")

    etype = raw["type"]
    negated = bool(raw["negated"])
    facet = normalise_facet(raw.get("facet"))
    raw_value = (raw.get("value") or "").strip().strip("\"'“”‘’")
    if raw_value and not _find_ci(raw_value, source_text):
        raise _Invalid("value_not_in_source")
    host, s_idx, quote = _quote(cited, description, raw_value, subject, speakers)
    # Stored as the source spells it.
    found = _find_ci(raw_value, host.text) if raw_value else None
    value: str | None = found.group(0) if found else None
    if facet is None or value is None:
        facet, value = None, None  # a value means nothing without its facet, and vice versa

    base = parse_iso(host.timestamp) if host.timestamp else None
    future = etype == "plan"
    when = resolve_time(raw.get("time"), source_text, base, future=future)
    if facet is not None and F.facet_kind(facet) == "date":
        # A date facet's value is the date itself, resolved and written as the rules write it.
        mentions = find_dates(value or "", base, future=future) or find_dates("in " + (value or ""), base, future=future)
        if not mentions:
            facet, value = None, None
        else:
            dm = mentions[0]
            when = when or (dm.date, dm.granularity)
            value = format_date(dm.date, dm.granularity if dm.granularity != "week" else "day")
    if when is None:
        # Like the rule extractor: a date expression in the quoted sentence anchors the event.
        in_quote = find_dates(quote, base, future=future)
        when = (in_quote[0].date, in_quote[0].granularity) if in_quote else None

    value_norm = F.normalise_value(value) if value else None
    if facet == "hobbies" and value:
        parts = re.split(r",\s*(?:and\s+)?|\s+(?:and|&)\s+", value)
        value_norm = ",".join(sorted(F.normalise_value(v) for v in parts if v.strip()))
    if negated and value_norm is not None:
        value_norm = f"not:{value_norm}"
    cue = None
    raw_cue = (raw.get("revision_cue") or "").strip()
    if raw_cue and _find_ci(raw_cue, source_text):
        cue = raw_cue.lower()
    elif facet:
        cue_m = F.STRONG_CUES.search(quote)
        cue = cue_m.group(0).lower() if cue_m else None

    lo, hi = CONFIDENCE_RANGE
    confidence = round(min(hi, max(lo, float(raw["confidence"]))), 3)
    if not cue:
        # linking reads confidence >= 0.9 as an explicit revision; a model's certainty is not a cue word
        confidence = min(confidence, 0.89)
    eid = "ev_" + short_hash(host.message_id, s_idx, facet or "", value_norm or "", description.lower(), "llm")
    event = EventOut(
        id=eid,
        type=etype,
        subject=subject,
        participants=sorted({subject, *people}),
        description=description,
        time_anchor=host.timestamp,
        event_time=when[0].isoformat() if when else None,
        event_time_granularity=when[1] if when else None,
        seq=host.seq,
        sentence_idx=s_idx,
        source_note_ids=[m.note_id for m in cited],
        source_message_ids=[m.message_id for m in cited],
        quote=quote,
        facet=facet,
        value=value,
        value_norm=value_norm,
        negated=negated,
        cue=cue,
        confidence=confidence,
        provenance="llm",
        speaker=host.speaker,
    )
    return event, source_text


def check_reply(
    reply: Mapping[str, Any], messages: Sequence[MessageIn], participants: Sequence[str]
) -> LLMExtraction:
    """Turn a schema-valid reply into checked events; drops are counted by reason."""
    speakers = list(dict.fromkeys([*participants, *(m.speaker for m in messages)]))
    out = LLMExtraction(events=[])
    checked: dict[str, tuple[EventOut, str]] = {}  # the reply's id → (event, cited text)
    kept: dict[str, EventOut] = {}  # event id → event
    events: list[EventOut] = []
    for raw in reply.get("events", []):
        out.proposed += 1
        try:
            event, source_text = _check_event(raw, messages, speakers)
        except _Invalid as exc:
            out.dropped[str(exc)] += 1
            continue
        if event.id in kept:
            # The same event twice: links naming either copy go to the one kept.
            out.dropped["duplicate"] += 1
            checked.setdefault(raw["id"], (kept[event.id], source_text))
            continue
        kept[event.id] = event
        events.append(event)
        checked.setdefault(raw["id"], (event, source_text))
    for link in reply.get("links", []):
        out.links_proposed += 1
        cause, effect = checked.get(link["cause"]), checked.get(link["effect"])
        cue = (link.get("cue") or "").strip()
        if (
            cause is None
            or effect is None
            or cause[0].id == effect[0].id
            or not cue
            or not (_find_ci(cue, effect[1]) or _find_ci(cue, cause[1]))
        ):
            out.links_dropped += 1
            continue
        entry = (link["label"], cause[0].id, cue.lower())
        if entry not in effect[0].causal:
            effect[0].causal.append(entry)
    events.sort(key=lambda e: (e.seq, e.sentence_idx))  # stable: the reply's order within a sentence
    if out.proposed and not events:
        out.events, out.fallback, out.reason = None, True, "every proposed event failed validation"
    else:
        out.events = events
    return out


# -- entry points ----------------------------------------------------------------------
def _no_reply() -> Mapping[str, Any] | None:
    return None


def distill_session(
    llm: ChatModel,
    messages: Sequence[MessageIn],
    participants: Sequence[str],
    history: Sequence[EventOut] = (),
) -> LLMExtraction:
    """One structured call for one session, with every event checked against the messages."""
    if not messages:
        return LLMExtraction(events=[])
    prompt = build_prompt(messages, participants, history)
    reply = complete_or_fallback(llm, prompt, SESSION_SCHEMA, _no_reply, stage=STAGE)
    if reply is None:
        return LLMExtraction(events=None, fallback=True, reason="the LLM reply was unusable")
    result = check_reply(reply, messages, participants)
    if result.dropped or result.links_dropped:
        logger.info(
            "session %s: dropped %d of %d LLM events (%s) and %d of %d links",
            messages[0].session_id,
            result.dropped_total,
            result.proposed,
            ", ".join(f"{k} {v}" for k, v in sorted(result.dropped.items())),
            result.links_dropped,
            result.links_proposed,
        )
    return result


def extract_with_llm(
    llm: ChatModel,
    messages: Sequence[MessageIn],
    participants: Sequence[str],
    history: Sequence[EventOut],
) -> list[EventOut] | None:
    """The session's events from the LLM, or None when the caller should use the rule extractor."""
    return distill_session(llm, messages, participants, history).events


__all__ = [
    "CAUSAL_LABELS",
    "EVENT_TYPES",
    "LLMExtraction",
    "SESSION_SCHEMA",
    "STAGE",
    "SUPPORT_THRESHOLD",
    "build_prompt",
    "check_reply",
    "distill_session",
    "extract_with_llm",
    "normalise_facet",
    "resolve_time",
    "sentences",
    "support",
]
