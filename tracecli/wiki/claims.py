"""Snapshots' raw material: exchanges of messages and the atomic claims they ground (TrajWiki A.1).

A session is cut into *exchanges* (one speaker's run of messages and the reply run
after it). Each exchange yields claims: readable third-person sentences with their
source message ids and a `supporting_quote` that occurs verbatim in one of those
messages; claims failing that check are dropped and counted, whoever wrote them.

Offline, claims come from build-graph's events, so the lifecycle can follow the
graph's `updates` edges: a faceted event with a clean value becomes a templated
claim ("Alice is moving to Porto."), one per item for list facets ("I love
pottery, hiking and painting" → three claims); any other event becomes its
sentence in the third person (I/my/you resolved to names), split per item when it
holds a list of things or actions; a shared photo becomes "X shared a photo of …".
With an LLM, a structured reply replaces the sentence claims of non-faceted
sentences, validated the same way (offline claims when the reply is unusable);
faceted events keep their templated claims in both modes: they carry the lifecycle.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracecli.graph import facets as F
from tracecli.store.db import Store
from tracecli.text import STOPWORDS, short_hash

if TYPE_CHECKING:
    from tracecli.providers.llm import ChatModel

# -- rows ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MessageRow:
    """The slice of a stored message that compile-wiki reads."""

    id: str
    session_id: str
    seq: int
    turn: int
    speaker: str
    text: str
    timestamp: str | None
    source_ref: str | None


@dataclass(frozen=True)
class EventRow:
    """The slice of a graph event that compile-wiki reads."""

    id: str
    seq: int
    sentence_idx: int
    subject: str
    speaker: str
    type: str
    facet: str | None
    value: str | None
    value_norm: str | None
    negated: bool
    quote: str
    description: str
    provenance: str


def load_messages(store: Store, session_id: str) -> list[MessageRow]:
    """A session's messages in turn order."""
    return [
        MessageRow(*r)
        for r in store.execute(
            "SELECT id, session_id, seq, turn, speaker, text, timestamp, source_ref FROM messages "
            "WHERE session_id = ? ORDER BY turn, seq",
            (session_id,),
        )
    ]


def load_events(store: Store, session_id: str) -> dict[int, list[EventRow]]:
    """A session's events grouped by message seq, in sentence order."""
    out: dict[int, list[EventRow]] = {}
    for r in store.execute(
        "SELECT id, seq, sentence_idx, subject, speaker, type, facet, value, value_norm, negated, quote, description, "
        "provenance FROM events WHERE session_id = ? ORDER BY seq, sentence_idx, id",
        (session_id,),
    ):
        ev = EventRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10], r[11], r[12])
        out.setdefault(ev.seq, []).append(ev)
    return out


# -- exchanges -------------------------------------------------------------------------


def split_exchanges(messages: Sequence[MessageRow], max_messages: int = 6) -> list[list[MessageRow]]:
    """Cut a session into exchanges: a run of one speaker's messages plus the reply run after it."""
    out: list[list[MessageRow]] = []
    current: list[MessageRow] = []
    phase = 0  # 0: opening run, 1: reply run
    for msg in messages:
        if not current:
            current = [msg]
            phase = 0
            continue
        last = current[-1]
        if msg.speaker == last.speaker:
            pass
        elif phase == 0:
            phase = 1
        else:
            out.append(current)
            current = [msg]
            phase = 0
            continue
        if len(current) >= max_messages:
            out.append(current)
            current = [msg]
            phase = 0
            continue
        current.append(msg)
    if current:
        out.append(current)
    return out


def snapshot_id(conversation_id: str, messages: Sequence[MessageRow]) -> str:
    """A stable snapshot id from its message ids."""
    return "sn_" + short_hash(conversation_id, *[m.id for m in messages])


# -- drafts ----------------------------------------------------------------------------

STATUSES = ("active", "deprecated", "contradictory", "needs-confirmation")


@dataclass
class ClaimDraft:
    """A claim before the lifecycle decides what to do with it."""

    key: str  # unique within its exchange; part of the claim id
    text: str
    subject: str
    source_message_ids: list[str]
    supporting_quote: str
    status: str = "active"
    event_id: str | None = None
    facet: str | None = None
    item: str | None = None
    family: str | None = None
    negated: bool = False
    origin: str = "rules"
    order: tuple[int, int, int] = (0, 0, 0)

    @property
    def fact_key(self) -> str | None:
        """(subject, facet) for faceted claims: the thread whose history `claims history` lists."""
        return f"{self.subject}|{self.facet}" if self.facet else None


@dataclass
class Extraction:
    """The claims of one exchange and what was thrown away."""

    drafts: list[ClaimDraft] = field(default_factory=list)
    ungrounded: int = 0
    llm_used: bool = False
    llm_fallback: bool = False


def norm_text(text: str) -> str:
    """Comparable form of a claim: lower case, no punctuation, single spaces."""
    t = text.lower().replace("’", "'")
    t = re.sub(r"[^\w\s']", " ", t)
    return re.sub(r"\s+", " ", t).strip()


def grounded(draft: ClaimDraft, messages: Mapping[str, MessageRow]) -> bool:
    """True when the draft cites known messages and its quote occurs verbatim in one of them."""
    quote = draft.supporting_quote
    if not draft.text.strip() or len(quote.strip()) < 2 or not draft.source_message_ids:
        return False
    return any(mid in messages and quote in messages[mid].text for mid in draft.source_message_ids)


# -- claim text ------------------------------------------------------------------------

_PHOTO = re.compile(r"\[shares? (?:a )?(?:photo|picture|image)s?:\s*(?P<cap>[^\]]+)\]")
_EMOJI = re.compile(
    "[\U0001F000-\U0001FAFF\U00002600-\U000027BF\U0000FE0F\U0001F1E6-\U0001F1FF\u200d\u2764\u2b50\u2705]+"
)
_LEAD = re.compile(
    r"^(?:(?:also|so|and|but|oh|ok|okay|yes|yeah|yep|well|anyway|anyways|actually|honestly|haha+|lol|hey|"
    r"wow|omg|ugh|hmm|right|plus|btw|by the way|other \w+ news:?)\b[,!:]?\s+)+",
    re.I,
)
_HEDGE = re.compile(
    r"\b(probably|maybe|might|perhaps|possibly|not sure|unsure|thinking (?:about|of)|considering|hopefully|"
    r"likely|fingers crossed|tentatively|in theory)\b",
    re.I,
)
_IF = re.compile(r"\b(\w+)?\s*\bif (?:the|it|we|i|they|he|she|all|everything|things)\b", re.I)
_NOT_CONDITIONAL = frozenset("ask asked asks asking wonder wondered wondering know see check checked checking whether even as".split())


def hedged(quote: str) -> bool:
    """True when the source sentence hedges or makes a claim conditional (the claim then needs confirmation)."""
    if _HEDGE.search(quote):
        return True
    return any((m.group(1) or "").lower() not in _NOT_CONDITIONAL for m in _IF.finditer(quote))


def readable(text: str) -> str:
    """Polish a rewritten sentence into a claim: no emoji, no discourse openers, full stop."""
    t = _PHOTO.sub("", text)
    t = re.sub(r"(?<=\w)\s*(?:" + _EMOJI.pattern + r")\s+(?=[A-Z])", ". ", t)
    t = _EMOJI.sub("", t)
    t = re.sub(r"\s+", " ", t).strip(" -–—,;:")
    t = _LEAD.sub("", t)
    t = re.sub(r"(?:[\s,]+(?:lol|haha+|tbh|lmao|xx?|eh))+[\s!?.]*$", "", t, flags=re.I)
    # contractions left behind by the pronoun rewrite ("Bob'll", "Alice and co.'ve")
    t = re.sub(r"(?<=[\w.])['’]ll\b", " will", t)
    t = re.sub(r"(?<=[\w.])['’]ve\b", " have", t)
    t = re.sub(r"(?<=\.)['’]re\b", " are", t)
    t = re.sub(r"\s+([,.!?;:])", r"\1", t)
    t = re.sub(r"\s+", " ", t).strip(" -–—,;:")
    if not t:
        return ""
    t = t[0].upper() + t[1:]
    t = re.sub(r"[!?.…]+$", "", t).rstrip()
    return t + "." if t else ""


def _a(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


_TRAILING_TIME = re.compile(
    r"\s+(?:yesterday|today|tomorrow|tonight|last (?:week|month|year|night)|this (?:week|month|year)|"
    r"next (?:week|month|year)|again|now|lately|recently)$",
    re.I,
)


def clean_value(value: str) -> str | None:
    """A facet value fit for a claim, or None (then the sentence itself is used)."""
    v = _TRAILING_TIME.sub("", value.strip()).strip(" ,.;:!?")
    if not v or len(v) > 60:
        return None
    first = v.split()[0].lower()
    if first in ("my", "our", "your", "his", "her", "their", "this", "that", "these", "those", "it", "the") and not v[:1].isupper():
        return None
    if first in ("my", "our", "your", "this", "that", "it"):
        return None
    if all(w.lower() in STOPWORDS for w in v.split()):
        return None
    return v


def split_items(value: str) -> list[str]:
    """Items of a list value ('pottery, hiking and painting' → three)."""
    parts = re.split(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or|&)\s+", value)
    return [p.strip(" ,.") for p in parts if p.strip(" ,.")]


_FAMILY_BY_FACET = {
    "hobbies": "hobbies", "sport": "sports", "instrument": "instruments", "trip_destination": "places",
    "club": "clubs", "car": "cars",
}


def facet_family(facet: str) -> str | None:
    """The inventory a faceted claim counts towards, if any."""
    if facet.startswith("pet_name:"):
        return "pets"
    if facet.startswith("family:"):
        return "family"
    if facet.startswith("favourite:"):
        return "favourites"
    return _FAMILY_BY_FACET.get(facet)


_BALL_GAMES = frozenset("squash padel tennis badminton football five-a-side soccer basketball volleyball golf rugby "
                        "cricket hockey netball".split()) | {"table tennis", "ping pong"}


# (positive, negative) templates: {s} subject, {v} value, {a} "a"/"an" for the value, {p} the facet's parameter
_TEMPLATES = {
    "residence": ("{s} lives in {v}", "{s} no longer lives in {v}"),
    "moving_to": ("{s} is moving to {v}", "{s} is no longer moving to {v}"),
    "hometown": ("{s} is originally from {v}", "{s} is not originally from {v}"),
    "instrument": ("{s} plays the {v}", "{s} no longer plays the {v}"),
    "club": ("{s} is a member of {v}", "{s} is no longer a member of {v}"),
    "employer": ("{s} works at {v}", "{s} no longer works at {v}"),
    "occupation": ("{s} works as {a} {v}", "{s} no longer works as {a} {v}"),
    "study": ("{s} studies {v}", "{s} no longer studies {v}"),
    "course": ("{s} is taking {a} {v}", "{s} is no longer taking {a} {v}"),
    "diet": ("{s} is {v}", "{s} is no longer {v}"),
    "diet_word": ("{s} follows {a} {v} diet", "{s} is no longer {v}"),
    "coffee": ("{s}'s usual drink is {a} {v}", "{s} no longer drinks {v}"),
    "sport": ("{s} does {v}", "{s} no longer does {v}"),
    "ball_game": ("{s} plays {v}", "{s} no longer plays {v}"),
    "hobbies": ("{s} enjoys {v}", "{s} no longer enjoys {v}"),
    "partner": ("{s}'s partner is {v}", "{v} is no longer {s}'s partner"),
    "relationship": ("{s} is {v}", "{s} is no longer {v}"),
    "trip_destination": ("{s} is travelling to {v}", "{s} is no longer travelling to {v}"),
    "car": ("{s} drives {a} {v}", "{s} no longer drives {a} {v}"),
    "pet_name": ("{s} has {ap} {p} named {v}", "{s} no longer has {ap} {p} named {v}"),
    "family": ("{s}'s {p} is named {v}", "{s}'s {p} is not named {v}"),
    "date": ("{s}'s {p} is set for {v}", "{s}'s {p} is no longer set for {v}"),
    "venue": ("{s}'s {p} is at {v}", "{s}'s {p} is no longer at {v}"),
    "favourite": ("{s}'s favourite {p} is {v}", "{v} is no longer {s}'s favourite {p}"),
}
_COURSE = re.compile(r"(?i)\b(certificate|course|degree|diploma|masters|msc|ma|phd|bootcamp|programme|program|classe?s?)$")


def facet_text(subject: str, facet: str, value: str, negated: bool) -> str:
    """A templated claim for (subject, facet, value)."""
    base, _, param = facet.partition(":")
    param = param if param not in ("?", "*") else "pet"
    key = base
    if facet == "study" and _COURSE.search(value):
        key = "course"
    elif facet == "diet" and value.lower() in F.DIETS:
        key = "diet_word"
    elif facet == "sport" and value.lower() in _BALL_GAMES:
        key = "ball_game"
    if key in _TEMPLATES:
        text = _TEMPLATES[key][1 if negated else 0].format(s=subject, v=value, a=_a(value), p=param, ap=_a(param))
    else:
        label = F.facet_label(facet)
        text = f"{subject} {'no longer ' if negated else ''}{label} {value}"
    return readable(text)


# -- inventory families of free sentences ------------------------------------------------

_INSTRUMENT_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, F.INSTRUMENTS), key=len, reverse=True)) + r")\b", re.I)
_SPECIES_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, F.SPECIES), key=len, reverse=True)) + r")s?\b", re.I)
_ACTIVITIES = tuple(F.SPORTS) + (
    "painting", "pottery", "drawing", "sketching", "knitting", "crochet", "sewing", "baking", "cooking", "gardening",
    "photography", "writing", "poetry", "camping", "fishing", "birdwatching", "woodworking", "calligraphy",
    "meditation", "singing", "reading", "gaming", "volunteering", "journaling", "sculpting", "ceramics",
)
_ACTIVITY_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _ACTIVITIES), key=len, reverse=True)) + r")\b", re.I)
_BOOK_CUE = re.compile(r"\b(read|reading|book|books|novel|novels|author)\b", re.I)
_TITLE = re.compile(r"[\"“'‘](?P<t>[A-Z][^\"”'’]{1,60})[\"”'’]")
_PLACE_CUE = re.compile(r"\b(visited|visiting|went to|been to|trip to|travel(?:l)?ed to|flew to|holiday in|vacation in)\s+(?P<p>[A-Z][\w'’\-]+(?:\s+[A-Z][\w'’\-]+){0,2})")
_ENJOY_CUE = re.compile(r"\b(love|loves|loved|enjoy|enjoys|enjoyed|took up|taken up|into|hobby|hobbies|passion|do|does|doing|started|tried|muses?|signed up)\b", re.I)


def free_family(text: str) -> tuple[str, str] | None:
    """(inventory family, item) for a free sentence that names a countable thing, else None."""
    m = _TITLE.search(text)
    if m and _BOOK_CUE.search(text):
        return "books", m.group("t").strip()
    m = _PLACE_CUE.search(text)
    if m:
        return "places", m.group("p")
    m = _INSTRUMENT_RE.search(text)
    if m and re.search(r"\b(play|plays|playing|played|learn|learning|lessons?|practi[cs]e)\b", text, re.I):
        return "instruments", m.group(1).lower()
    m = _SPECIES_RE.search(text)
    if m and re.search(r"\b(my|our|has|have|had|got|adopted|named|called)\b", text, re.I):
        return "pets", F.SPECIES.get(m.group(1).lower(), m.group(1).lower())
    m = _ACTIVITY_RE.search(text)
    if m and _ENJOY_CUE.search(text):
        return "activities", m.group(1).lower()
    return None


# -- sentence rewriting with list splitting ------------------------------------------------


class _Tok:
    """A spaCy token with an overridable trailing whitespace (for spliced token runs)."""

    __slots__ = ("tok", "whitespace_")

    def __init__(self, tok: Any, whitespace: str) -> None:
        self.tok = tok
        self.whitespace_ = whitespace

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tok, name)


_CUE_VERBS = frozenset(
    "love loves loved enjoy enjoys enjoyed like likes liked play plays played read reads visit visits visited "
    "adopted collect collects collected tried try learned learning bought baked painted made".split()
)
_BOUNDARY = frozenset("which who whom because so but while when where although though since that if".split())
_CC = frozenset(("and", "or", "&"))
_FINITE = ("VBD", "VBZ", "VBP", "VB", "VBN")
_NOUNISH = ("NOUN", "PROPN", "ADJ", "NUM", "DET", "PART", "X")


def _is_stop(tok: Any) -> bool:
    if tok.text == "-":
        return bool(tok.whitespace_)  # a spaced dash ends a clause; "me-time" does not
    return bool(tok.is_punct and tok.text not in ("'", "’")) or tok.lower_ in _BOUNDARY or tok.lower_ in _CC


def _verb_start(toks: Sequence[Any], s: int, e: int, loose: bool = False) -> bool:
    i = s
    while i <= e and toks[i].pos_ in ("ADV", "PART"):
        i += 1
    if i > e:
        return False
    if toks[i].pos_ in ("VERB", "AUX") and toks[i].tag_ in _FINITE:
        return True
    # the small model tags some past-tense verbs after a comma as adjectives ("roasted marshmallows")
    return loose and toks[i].pos_ in ("VERB", "ADJ") and toks[i].lower_.endswith("ed")


def _noun_like(toks: Sequence[Any], s: int, e: int) -> bool:
    return all(t.pos_ in _NOUNISH or t.tag_ == "VBG" or t.pos_ == "ADP" for t in toks[s:e + 1]) and any(
        t.pos_ in ("NOUN", "PROPN", "NUM") or t.tag_ == "VBG" for t in toks[s:e + 1])


def find_list(doc: Any) -> tuple[list[tuple[int, int]], bool] | None:
    """Item spans (token index ranges) of the first splittable list in a parsed sentence, and whether they are verb phrases.

    Works on part-of-speech tags and punctuation rather than the dependency
    parse, which the small English model often gets wrong for lists: the
    last item runs from the conjunction to the next clause boundary, middle
    items sit between commas, and the first item is the noun phrase (or the
    verb phrase, when the other items start with a verb) before the first comma.
    """
    toks = list(doc)
    n = len(toks)
    for ci, c in enumerate(toks):
        if c.lower_ not in _CC or ci == 0:
            continue
        end = ci + 1
        while end < n and not _is_stop(toks[end]):
            end += 1
        final = (ci + 1, end - 1)
        if final[1] < final[0] or final[1] - final[0] > 10:
            continue
        verbs = _verb_start(toks, *final)
        k = ci - 1
        comma = False
        if toks[k].text == ",":
            k -= 1
            comma = True
        middle: list[tuple[int, int]] = []
        seg_end = k
        i = k
        region: tuple[int, int] | None = None
        while i >= 0:
            if toks[i].text == ",":
                seg = (i + 1, seg_end)
                ok = seg[0] <= seg[1] and seg[1] - seg[0] <= 8 and (
                    _verb_start(toks, *seg, loose=True) if verbs else _noun_like(toks, *seg))
                if not ok:
                    region = seg
                    break
                middle.insert(0, seg)
                comma = True
                seg_end = i - 1
            elif _is_stop(toks[i]):
                break
            i -= 1
        if region is None:
            region = (i + 1, seg_end)
        if region[0] > region[1]:
            continue
        if verbs:
            starts = [j for j in range(region[0], region[1] + 1) if toks[j].pos_ in ("VERB", "AUX") and toks[j].tag_ in _FINITE]
            if not starts:
                continue
            first = (starts[-1], region[1])
            while first[0] > region[0] and toks[first[0] - 1].pos_ in ("AUX",) and toks[first[0] - 1].tag_ in _FINITE:
                break
        else:
            j = region[1]
            while j >= region[0] and (toks[j].pos_ in _NOUNISH or toks[j].tag_ == "VBG") and not _is_stop(toks[j]):
                j -= 1
            first = (j + 1, region[1])
            while first[0] <= first[1] and toks[first[0]].pos_ == "PART":
                first = (first[0] + 1, first[1])
            if first[0] > first[1] or not _noun_like(toks, *first):
                continue
        spans = [first, *middle, final]
        if any(e - s > 10 for s, e in spans):
            continue
        if not verbs and toks[final[0]].tag_ == "VBG" and not toks[first[0]].lower_.endswith("ing"):
            continue  # not parallel: "hiking in the mountains and exploring forests"
        after_colon = first[0] > 0 and toks[first[0] - 1].text == ":"
        cue = any(t.pos_ == "VERB" and t.lower_ in _CUE_VERBS for t in toks[max(0, first[0] - 3):first[0]])
        if len(spans) >= 3 or (verbs and comma) or (not verbs and (after_colon or cue)):
            return spans, verbs
    return None


def rewrite_sentence(doc: Any, speaker: str, other: str | None) -> list[tuple[str, str | None]]:
    """(third-person claim text, list item or None) for a parsed sentence; one per list item if it holds a list."""
    from tracecli.graph.extract import third_person

    toks = list(doc)
    whole = readable(third_person(toks, speaker, other))
    found = find_list(doc)
    if found is None:
        return [(whole, None)]
    spans, _ = found
    start, end = spans[0][0], spans[-1][1]
    prefix = [_Tok(t, t.whitespace_) for t in toks[:start]]
    suffix = toks[end + 1:]
    out: list[tuple[str, str | None]] = []
    glue = toks[end].whitespace_  # what followed the list in the source
    for s, e in spans:
        run = [_Tok(t, t.whitespace_) for t in toks[s:e + 1]]
        run[-1] = _Tok(toks[e], glue)
        text = readable(third_person(prefix + run + [_Tok(t, t.whitespace_) for t in suffix], speaker, other))
        item = "".join(t.text_with_ws for t in toks[s:e + 1]).strip()
        if text:
            out.append((text, item))
    return out or [(whole, None)]


# -- offline extraction -------------------------------------------------------------------


_LOWER_FACETS = ("coffee", "diet", "sport", "hobbies", "instrument")


def _display_item(item: str) -> str:
    """An item as shown on pages: the speaker's words without articles or possessives in front."""
    v = re.sub(r"^(?:the|a|an|my|our|his|her|their|some)\s+", "", item.strip(), flags=re.I)
    return v.strip(" ,.;:!?\"'“”") or item.strip()


def _other(participants: Sequence[str], speaker: str) -> str | None:
    others = [p for p in participants if p != speaker]
    return others[0] if len(others) == 1 else None


def _strip_photo(quote: str) -> str:
    m = _PHOTO.search(quote)
    return quote[: m.start()].rstrip() if m else quote


def photo_drafts(msg: MessageRow) -> list[ClaimDraft]:
    """'X shared a photo of …' claims for photo captions in a message."""
    out = []
    for n, m in enumerate(_PHOTO.finditer(msg.text)):
        cap = m.group("cap").strip()
        cap = re.sub(r"^(?:a\s+)?(?:photo|photograph|photography|picture|image|pic)\s+of\s+", "", cap, flags=re.I)
        if not cap:
            continue
        out.append(
            ClaimDraft(
                key=f"photo|{msg.id}|{n}", text=readable(f"{msg.speaker} shared a photo of {cap}"), subject=msg.speaker,
                source_message_ids=[msg.id], supporting_quote=m.group(0), order=(msg.seq, 10_000 + n, 0),
            )
        )
    return out


def _sentence_parses(texts: Sequence[str]) -> dict[str, Any]:
    """Full spaCy parses of the texts, by text (shared Docs: read them, never change them).

    From the process's DocCache, which build-graph fills: after it in one process (`tracecli update`) an
    event quote is the sentence build-graph parsed, and is not parsed again.
    """
    from tracecli.graph.nlp import shared_docs

    uniq = list(dict.fromkeys(t for t in texts if t))
    return dict(zip(uniq, shared_docs().parse(uniq))) if uniq else {}


def _usable_events(events: Sequence[EventRow]) -> list[EventRow]:
    """Drop cause fragments whose whole sentence is already a non-faceted event of the same message."""
    out = []
    for ev in events:
        covered = any(
            o.id != ev.id and o.facet is None and o.sentence_idx == ev.sentence_idx and ev.quote != o.quote
            and ev.quote in o.quote
            for o in events
        )
        if not covered:
            out.append(ev)
    return out


def extract_offline(
    exchanges: Sequence[Sequence[MessageRow]],
    events_by_seq: Mapping[int, Sequence[EventRow]],
    participants: Sequence[str],
) -> list[Extraction]:
    """Claims of each exchange from the graph's events (one parse pass for the whole batch)."""
    plans: list[list[tuple[MessageRow, EventRow, str | None]]] = []
    to_parse: list[str] = []
    for ex in exchanges:
        plan = []
        for msg in ex:
            for ev in _usable_events(events_by_seq.get(msg.seq, [])):
                value = clean_value(ev.value) if ev.facet and ev.value else None
                if ev.facet and ev.value and value is not None:
                    plan.append((msg, ev, value))
                else:
                    plan.append((msg, ev, None))
                    if not (ev.provenance == "llm" and ev.facet is None):
                        to_parse.append(_strip_photo(ev.quote))
        plans.append(plan)
    parses = _sentence_parses(to_parse)
    out = []
    for ex, plan in zip(exchanges, plans):
        msgs = {m.id: m for m in ex}
        res = Extraction()
        drafts: list[ClaimDraft] = []
        for msg, ev, value in plan:
            drafts.extend(_event_drafts(msg, ev, value, participants, parses))
        for msg in ex:
            drafts.extend(photo_drafts(msg))
        seen: set[str] = set()
        for d in sorted(drafts, key=lambda d: d.order):
            if not grounded(d, msgs):
                res.ungrounded += 1
                continue
            k = norm_text(d.text)
            if k in seen:
                continue
            seen.add(k)
            res.drafts.append(d)
        out.append(res)
    return out


def _event_drafts(
    msg: MessageRow, ev: EventRow, value: str | None, participants: Sequence[str], parses: Mapping[str, Any]
) -> list[ClaimDraft]:
    status = "needs-confirmation" if hedged(ev.quote) else "active"
    base = dict(subject=ev.subject, source_message_ids=[msg.id], event_id=ev.id, facet=ev.facet, negated=ev.negated,
                status=status)
    quote = _strip_photo(ev.quote) or ev.quote
    drafts: list[ClaimDraft] = []
    if ev.facet and value is not None:
        fam = facet_family(ev.facet)
        if ev.facet in _LOWER_FACETS and not re.search(r"[A-Z]", value[1:]):
            value = value.lower()
        items = split_items(value) if ev.facet == "hobbies" else [value]
        if ev.facet == "hobbies" and any(clean_value(i) is None or len(i.split()) > 4 for i in items):
            items = []
        for n, item in enumerate(items):
            text = facet_text(ev.subject, ev.facet, item, ev.negated)
            drafts.append(ClaimDraft(key=f"ev|{ev.id}|{n}", text=text, supporting_quote=quote, item=_display_item(item),
                                     family=fam, order=(ev.seq, ev.sentence_idx, n), **base))  # type: ignore[arg-type]
        if drafts:
            return drafts
    if ev.provenance == "llm" and ev.facet is None:
        desc = re.split(r"\s+—\s+\"", ev.description)[0]
        rewritten = [(readable(desc), None)]
    else:
        doc = parses.get(quote)
        if doc is None:
            return []
        rewritten = rewrite_sentence(doc, msg.speaker, _other(participants, msg.speaker))
    for n, (text, item) in enumerate(rewritten):
        if len(text.split()) < 3:
            continue
        fam_item = (free_family(item) if item else None) or free_family(text)
        family, inv_item = fam_item if fam_item else (None, None)
        shown = inv_item if family and not (item and fam_item == free_family(item)) else item
        drafts.append(ClaimDraft(key=f"ev|{ev.id}|{n}", text=text, supporting_quote=quote,
                                 item=_display_item(shown) if shown else None,
                                 family=family, order=(ev.seq, ev.sentence_idx, n), **base))  # type: ignore[arg-type]
    return drafts


# -- LLM extraction -------------------------------------------------------------------------

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
            family=fam_item[0] if fam_item else None, item=_display_item(fam_item[1]) if fam_item else None,
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

    todo = [n for n, ex in enumerate(exchanges) if any(events_by_seq.get(m.seq) for m in ex) or any(_PHOTO.search(m.text) for m in ex)]
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
