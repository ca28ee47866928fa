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
With an LLM (`llm_claims`), a structured reply replaces the sentence claims of
non-faceted sentences, validated the same way (offline claims when the reply is
unusable); faceted events keep their templated claims in both modes: they carry
the lifecycle. A claim's subject is whose fact it is, read from the statement's
clause (`graph.frames.statement_subject`), not who said it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.graph import facets as F
from tracecli.graph.frames import RELATION_FACETS, read_frames, statement_subject
from tracecli.store.db import Store
from tracecli.text import STOPWORDS, short_hash

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
    frame: str | None = None  # the statement frame's JSON (graph/frames.py), when the parse found one


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
        "provenance, frame FROM events WHERE session_id = ? ORDER BY seq, sentence_idx, id",
        (session_id,),
    ):
        ev = EventRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10], r[11], r[12], r[13])
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

PHOTO = re.compile(r"\[shares? (?:a )?(?:photo|picture|image)s?:\s*(?P<cap>[^\]]+)\]")
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
    t = PHOTO.sub("", text)
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


def facet_group(facet: str) -> str:
    """A reader's name for a family of facets ('moving_to' → 'home')."""
    if facet.startswith(("pet_name:", "family:", "favourite:")):
        return facet_family(facet) or facet
    if facet in ("trip_destination", "date:trip"):
        return "travel"
    if facet.startswith(("date:", "venue:")):
        return facet.split(":", 1)[1]
    return {
        "residence": "home", "moving_to": "home", "hometown": "origins", "employer": "work", "occupation": "work",
        "study": "studies", "diet": "food and drink", "coffee": "food and drink", "sport": "activities",
        "hobbies": "activities", "instrument": "activities", "club": "activities", "partner": "relationship",
        "relationship": "relationship", "car": "car",
    }.get(facet, facet)


_FACT_LABELS = {"residence": "home", "moving_to": "moving to", "hometown": "home town", "employer": "employer",
                "occupation": "job", "coffee": "usual drink", "trip_destination": "trip", "ball_game": "sport"}


def fact_label(facet: str) -> str:
    """A reader's name for one fact ('moving_to' → 'moving to', 'date:wedding' → 'wedding date')."""
    base, _, param = facet.partition(":")
    if param and param not in ("?", "*"):
        return {"date": f"{param} date", "venue": f"{param} venue", "favourite": f"favourite {param}",
                "pet_name": f"{param}'s name", "family": f"{param}'s name"}.get(base, f"{param} {base}")
    return _FACT_LABELS.get(base, base.replace("_", " "))


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


def display_item(item: str) -> str:
    """An item as shown on pages: the speaker's words without articles or possessives in front."""
    v = re.sub(r"^(?:the|a|an|my|our|his|her|their|some)\s+", "", item.strip(), flags=re.I)
    return v.strip(" ,.;:!?\"'“”") or item.strip()


def _other(participants: Sequence[str], speaker: str) -> str | None:
    others = [p for p in participants if p != speaker]
    return others[0] if len(others) == 1 else None


def _strip_photo(quote: str) -> str:
    m = PHOTO.search(quote)
    return quote[: m.start()].rstrip() if m else quote


def photo_drafts(msg: MessageRow) -> list[ClaimDraft]:
    """'X shared a photo of …' claims for photo captions in a message."""
    out = []
    for n, m in enumerate(PHOTO.finditer(msg.text)):
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
                plan.append((msg, ev, value if ev.facet and ev.value else None))
                if not (ev.provenance == "llm" and ev.facet is None):
                    to_parse.append(_strip_photo(ev.quote))  # faceted too: whose fact it is comes from the parse
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
    quote = _strip_photo(ev.quote) or ev.quote
    doc = parses.get(quote)
    other = _other(participants, msg.speaker)
    drafts: list[ClaimDraft] = []
    if ev.facet and value is not None:
        subject = _facet_subject(ev, doc, msg.speaker, other, participants)
        base = dict(subject=subject, source_message_ids=[msg.id], event_id=ev.id, facet=ev.facet, negated=ev.negated,
                    status=status)
        fam = facet_family(ev.facet)
        value = _whole_value(doc, value, msg.speaker, other, participants)
        if ev.facet in _LOWER_FACETS and not re.search(r"[A-Z]", value[1:]):
            value = value.lower()
        items = split_items(value) if ev.facet == "hobbies" else [value]
        if ev.facet == "hobbies" and any(clean_value(i) is None or len(i.split()) > 4 or not _nounish(doc, i) for i in items):
            items = []  # "lovely and lazy" is no list of pastimes: the sentence itself becomes the claim
        if subject is None:
            items = []  # the value sits in someone else's clause ("my brother is getting married on 5 May")
        for n, item in enumerate(items):
            text = facet_text(subject, ev.facet, item, ev.negated)  # type: ignore[arg-type]
            drafts.append(ClaimDraft(key=f"ev|{ev.id}|{n}", text=text, supporting_quote=quote,
                                     item=_facet_item(ev.facet, item), family=fam,
                                     order=(ev.seq, ev.sentence_idx, n), **base))  # type: ignore[arg-type]
        if drafts:
            return drafts
    base = dict(subject=ev.subject, source_message_ids=[msg.id], event_id=ev.id, facet=ev.facet, negated=ev.negated,
                status=status)
    if ev.provenance == "llm" and ev.facet is None:
        desc = re.split(r"\s+—\s+\"", ev.description)[0]
        rewritten = [(readable(desc), None)]
    else:
        if doc is None:
            return []
        rewritten = rewrite_sentence(doc, msg.speaker, other)
        who, _ = statement_subject(doc, msg.speaker, other, participants)
        if who is None and not _names_participant(ev.frame):
            who = ""  # about no participant ("it was pouring all day"): on no person's page
        base["subject"] = who if who is not None else ev.subject
    for n, (text, item) in enumerate(rewritten):
        if len(text.split()) < 3:
            continue
        fam_item = (free_family(item) if item else None) or free_family(text)
        family, inv_item = fam_item if fam_item else (None, None)
        shown = inv_item if family and not (item and fam_item == free_family(item)) else item
        drafts.append(ClaimDraft(key=f"ev|{ev.id}|{n}", text=text, supporting_quote=quote,
                                 item=display_item(shown) if shown else None,
                                 family=family, order=(ev.seq, ev.sentence_idx, n), **base))  # type: ignore[arg-type]
    return drafts


def _facet_subject(ev: EventRow, doc: Any, speaker: str, other: str | None, participants: Sequence[str]) -> str | None:
    """Whose fact a faceted event states, from the parse of the clause holding its value.

    The event's subject unless the clause says otherwise: "you moved to X" is the other participant's, a
    named participant's clause is theirs, and a value inside a relative's clause ("my brother is getting
    married on 5 May") is nobody's faceted fact (None).
    """
    if doc is None or not ev.value or ev.facet is None or ev.facet.startswith(RELATION_FACETS):
        return ev.subject
    who, how = statement_subject(doc, speaker, other, participants, value=ev.value)
    if how == "person" and who:
        return who
    if how in ("relative", "third"):
        return None
    return ev.subject


def _names_participant(frame: str | None) -> bool:
    """Does the event's statement frame say something about a participant (not an anaphoric 'it' or a retraction)?"""
    if not frame:
        return False
    try:
        key = json.loads(frame).get("key")
    except (ValueError, AttributeError):
        return False
    return bool(key) and key not in ("it", "retract")


_FUNCTION_POS = ("ADP", "DET", "CCONJ", "SCONJ", "PART", "PRON")


def _whole_value(doc: Any, value: str, speaker: str, other: str | None, participants: Sequence[str]) -> str:
    """A facet value cut off after a function word ("bakery on") becomes the frame's whole value phrase ("bakery on
    Quay Street"), or loses the dangling word when no frame holds it; any other value is kept as it is."""
    if doc is None:
        return value
    words = value.split()
    last = next((t for t in doc if t.text == words[-1] and doc[max(0, t.i - len(words) + 1): t.i + 1].text == value), None)
    if last is None or last.pos_ not in _FUNCTION_POS:
        return value
    for sent in doc.sents:
        for f in read_frames(sent, speaker, other, participants):
            if f.value.lower().find(value.lower()) >= 0 and f.value.lower() != value.lower():
                return display_item(f.value)
    return " ".join(words[:-1]) or value


def _nounish(doc: Any, item: str) -> bool:
    """Is a list item a noun phrase or a gerund in the parse (a pastime), not an adjective ("lazy")?"""
    if doc is None:
        return True
    words = item.split()
    toks = list(doc)
    for i, t in enumerate(toks):
        if words and t.text.lower() == words[0].lower() and " ".join(x.text.lower() for x in toks[i:i + len(words)]) == item.lower():
            span = toks[i:i + len(words)]
            return any(x.pos_ in ("NOUN", "PROPN") or x.tag_ == "VBG" for x in span)
    return True


def _facet_item(facet: str, value: str) -> str:
    """The item an inventory lists: the frame's value phrase ("dog Biscuit" for a named pet, not "Biscuit")."""
    base, _, param = facet.partition(":")
    item = display_item(value)
    if base == "pet_name" and param not in ("", "?", "*", "pet") and param.lower() not in item.lower():
        return f"{param} {item}"
    return item
