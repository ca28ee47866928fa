"""Offline event distillation (TRACE Eq. 9): one session's messages → state-bearing events.

Per sentence: resolve who it is about (I/my/we → the speaker, you → the other
participant), skip questions, counterfactuals and small talk, find changeable
facts through the facet patterns (subject, facet, value), resolve date
expressions against the session date, and write a third-person description.
Sentences that carry state but match no facet still become events (action,
plan, preference, state_change) so that multi-hop and temporal questions have
something to stand on.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.graph import facets as F
from tracecli.graph.dates import DateMention, find_dates, format_date
from tracecli.text import content_words, short_hash
from tracecli.timeutil import parse_iso


@dataclass
class MessageIn:
    """The slice of a stored message the extractor needs."""

    message_id: str
    note_id: str
    session_id: str
    seq: int
    speaker: str
    text: str
    timestamp: str | None
    source_ref: str | None = None


@dataclass
class EventOut:
    """One distilled event, before it is stored."""

    id: str
    type: str
    subject: str
    participants: list[str]
    description: str
    time_anchor: str | None
    event_time: str | None
    event_time_granularity: str | None
    seq: int
    sentence_idx: int
    source_note_ids: list[str]
    source_message_ids: list[str]
    quote: str
    facet: str | None = None
    value: str | None = None
    value_norm: str | None = None
    negated: bool = False
    cue: str | None = None
    confidence: float = 0.6
    provenance: str = "rules"
    causal: list[tuple[str, str, str]] = field(default_factory=list)  # (label, other_event_id, cue)


# -- patterns --------------------------------------------------------------------------

SUBJ = r"(?P<subj>\b(?:I|[Ww]e|[Yy]ou|[A-Z][a-z]+(?: and I)?)\b)"
_CI = lambda s: f"(?i:{s})"  # noqa: E731 - case-insensitive trigger, case-sensitive value

CAR_MAKES = (
    "Skoda|Škoda|Kia|Toyota|Ford|VW|Volkswagen|Tesla|Honda|BMW|Audi|Nissan|Hyundai|Renault|Peugeot|Fiat|Mazda|"
    "Volvo|Mercedes|Subaru|Vauxhall|Mini|Citroen|Citroën|Seat|SEAT|Lexus|Jeep|Polestar|BYD|MG|Dacia|Porsche|Cupra"
)
_DATE_TAIL = r"(?P<tail>.{1,60})"
_LIST = r"(?P<value>[a-z][\w\-]*(?: [a-z][\w\-]*)?(?:, (?:and )?[a-z][\w\-]*(?: [a-z][\w\-]*)?)*,? (?:and|&) [a-z][\w\-]*(?: [a-z][\w\-]*)?)"


def _species() -> str:
    return "|".join(sorted((re.escape(s) for s in F.SPECIES), key=len, reverse=True))


def _diets() -> str:
    return "|".join(sorted((re.escape(d) for d in F.DIETS), key=len, reverse=True))


def _coffees() -> str:
    return "|".join(sorted((re.escape(c) for c in F.COFFEES), key=len, reverse=True))


def _sports() -> str:
    return "|".join(sorted((re.escape(s) for s in F.SPORTS), key=len, reverse=True))


def _events() -> str:
    return "|".join(sorted((re.escape(e) for e in F.EVENT_NOUNS), key=len, reverse=True))



@dataclass(frozen=True)
class Rule:
    """One statement pattern: a facet (or a facet builder from named groups) and a regex."""

    facet: str | Callable[[re.Match[str]], str]
    regex: re.Pattern[str]
    kind: str
    confidence: float = 0.8
    event_type: str | None = None
    negated: bool = False
    subject_from: str = "subj"  # subj | speaker | other


def _r(facet: Any, pattern: str, kind: str, confidence: float = 0.8, event_type: str | None = None,
       negated: bool = False, subject_from: str = "subj") -> Rule:
    return Rule(facet, re.compile(pattern), kind, confidence, event_type, negated, subject_from)


_S = rf"{SUBJ}{_CI(F.AUX)}\s+{_CI(F.MODAL)}"
_MOVE = _CI(r"move|moving|moved|relocate|relocating|relocated|settle|settling|settled|live|living|lived|based|"
            r"stay(?:ed|ing)?(?: home)?|heading|emigrat\w+|end(?:ed)? up|landed")
_PREP = _CI(r"(?:(?:down|back|over|out|up|permanently|full[- ]time|for good|home)\s+)*(?:in|to|into|near|at)")

RULES: list[Rule] = [
    # residence
    _r("residence", rf"{_S}{_MOVE}\s+{_PREP}\s+{F.CAP}", "place", 0.85),
    _r("residence", rf"" + _CI(r'(?:new|our|my|own)\s+(?:own\s+)?(?:place|apartment|flat|house|home|digs|condo)\s+(?:in|at|near)') + rf"\s+{F.CAP}", "place", 0.85, "state_change", subject_from="speaker"),
    _r("residence", rf"" + _CI(r'(?:keys to|moved into|moving into)\s+(?:our|my|the)\s+(?:new\s+)?(?:place|apartment|flat|house|home)\s+in') + rf"\s+{F.CAP}", "place", 0.9, "state_change", subject_from="speaker"),
    _r("residence", rf"" + _CI(r'\b(?:the|our|my)\s+move\s+to') + rf"\s+{F.CAP}", "place", 0.75, "plan", subject_from="speaker"),
    _r("residence", rf"{_S}{_MOVE}\s+" + _CI(r'(?:(?:up|over|out|down|back)\s+)?there') + rf"(?P<value>)", "there", 0.75),
    # employer
    _r("employer", rf"{_S}" + _CI(r'work(?:ing|ed|s)?|start(?:ed|ing|s)?|join(?:ed|ing|s)?|employed|hired|interning|intern') + rf"\s+" + _CI(r'(?:full[- ]time\s+|part[- ]time\s+|remotely\s+)?(?:at|for|with|by)') + rf"\s+{F.CAP}", "org", 0.85),
    _r("employer", rf"{_S}" + _CI(r'joined|joining|join') + rf"\s+{F.CAP}", "org", 0.8),
    _r("employer", rf"" + _CI(r'(?:new\s+)?(?:job|role|position|internship|contract|gig)\s+(?:at|with)') + rf"\s+{F.CAP}", "org", 0.8, subject_from="speaker"),
    _r("employer", rf"{F.CAP}\s+" + _CI(r'(?:offered me|hired me|took me on|gave me)\s+(?:a|an|the)?') + rf"", "org", 0.75, "state_change", subject_from="speaker"),
    _r("employer", rf"" + _CI(r'(?:accepted|took|signed|took up)\s+(?:the|their|an?)\s+(?:job|offer|position|role)\s+(?:at|with|from)') + rf"\s+{F.CAP}", "org", 0.85, "state_change", subject_from="speaker"),
    _r("employer", rf"" + _CI(r'(?:handed in|gave|put in|handing in)\s+(?:my|our)\s+notice\s+(?:at|to)|quit(?:ting)?\s+(?:my job at\s+)?|resign(?:ed|ing)?\s+from|left my job at|leaving my job at') + rf"\s*{F.CAP}", "org", 0.85, "state_change", negated=True, subject_from="speaker"),
    # occupation
    _r("occupation", rf"{_S}" + _CI(r'work(?:ing|ed|s)?\s+as|train(?:ing|ed)?\s+(?:to be|as)|qualified as') + rf"\s+" + _CI(r'an?\s+') + rf"{F.PHRASE}", "thing", 0.75),
    # study
    _r("study", rf"{_S}" + _CI(r'stud(?:y|ying|ied|ies)|major(?:ing|ed)? in|learning|enrolled in|enrolling in|retraining in') + rf"\s+{F.PHRASE}", "thing", 0.75),
    _r("study", rf"" + _CI(r'(?:online\s+|evening\s+|part[- ]time\s+|night\s+)?(?:course|degree|masters?|msc|m\.sc|ma|phd|diploma|bootcamp|certificate|certification|programme|program|classes)\s+in') + rf"\s+{F.PHRASE}", "thing", 0.8, subject_from="speaker"),
    _r("study", rf"" + _CI(r'(?:my|an?|the)\s+') + rf"(?P<value>[a-z][a-z\-]+(?:\s+[a-z][a-z\-]+){{0,2}})\s+(?:MSc|MA|BSc|PhD|degree|course|masters|diploma|bootcamp)\b", "thing", 0.7, subject_from="speaker"),
    # pets
    _r(lambda m: F.pet_facet(m.group("species")), rf"" + _CI(r'(?:my|our|the|his|her|their)\s+(?:new\s+|little\s+|old\s+|\w+\s+)?(?P<species>' + _species() + r')(?:[’\']s name)?\s+(?:is\s+)?(?:named|called|is called|is named|name is|is)') + rf"\s+{F.NAME}", "name", 0.85, subject_from="speaker"),
    _r(lambda m: F.pet_facet(m.group("species")), rf"" + _CI(r'(?:a|an)\s+(?:new\s+)?(?:\w+\s+)?(?P<species>' + _species() + r')\s+(?:named|called)') + rf"\s+{F.NAME}", "name", 0.85, "state_change", subject_from="speaker"),
    _r(lambda m: F.pet_facet(m.group("species")), rf"" + _CI(r'(?:my|our)\s+(?:\w+\s+)?(?P<species>' + _species() + r'),?') + rf"\s+{F.NAME}\b", "name", 0.8, subject_from="speaker"),
    _r(lambda m: F.pet_facet(m.group("species")), rf"{F.NAME}\s+\(" + _CI(r'(?:my|our)\s+(?:[\w\-]+\s+){0,2}(?P<species>' + _species() + r')') + rf"\)", "name", 0.85, subject_from="speaker"),
    _r(lambda m: F.pet_facet(m.group("species")), rf"{F.NAME},\s+" + _CI(r'(?:my|our)\s+(?:[\w\-]+\s+){0,2}(?P<species>' + _species() + r')') + rf"\b", "name", 0.8, subject_from="speaker"),
    _r(lambda m: F.pet_facet(m.group("species")) if m.group("species") else "pet_name:?", rf"" + _CI(r'renam(?:ed|ing|e)\s+(?:her|him|it|them|(?:the|our|my)\s+(?P<species>' + _species() + r'))\s+(?:to\s+)?') + rf"{F.NAME}", "name", 0.9, "state_change", subject_from="speaker"),
    _r("pet_name:?", rf"" + _CI(r'(?:her|his|its)\s+name\s+is|(?:we|i)\s+(?:named|called)\s+(?:her|him|it)|(?:she|he|it)[’\']?s\s+called|(?:she|he|it)\s+is\s+called') + rf"\s+{F.NAME}", "name", 0.85, "state_change", subject_from="speaker"),
    # diet
    _r("diet", rf"{_S}" + _CI(r'(?:(?:gone|went|going|go|turned|become|became|being|stay(?:ing)?|been|trying|try)\s+)?(?:to\s+be\s+)?(?:fully\s+|strictly\s+|mostly\s+|completely\s+|a\s+|an\s+)?(?P<value>' + _diets() + r')') + rf"\b", "thing", 0.85),
    _r("diet", rf"" + _CI(r'(?:being|as an?|switched to(?: being)?|switching to(?: being)?|went|gone)\s+(?:fully\s+|strictly\s+)?(?P<value>' + _diets() + r')') + rf"\b", "thing", 0.75, subject_from="speaker"),
    _r("diet", rf"" + _CI(r'(?P<value>eating meat again|back on meat|started eating meat|eat meat again)') + rf"", "thing", 0.8, subject_from="speaker"),
    # coffee / usual drink
    _r("coffee", rf"" + _CI(r'(?P<value>' + _coffees() + r')') + rf"\s+" + _CI(r'for me|is my (?:go-to|usual|thing|order|drink)|all the way|every time|always|now|these days') + rf"", "thing", 0.8, subject_from="speaker"),
    _r("coffee", rf"" + _CI(r'(?:my\s+)?(?:usual|go-to|order|drink|coffee)\s+(?:is|[’\']s)\s+(?:now\s+|still\s+)?(?:an?\s+)?(?P<value>' + _coffees() + r')') + rf"", "thing", 0.85, subject_from="speaker"),
    _r("coffee", rf"{_S}" + _CI(r'(?:drink|drinking|order|ordering|get|getting|switched to|switching to|moved on to|into|hooked on|obsessed with|addicted to|having|living on|converted to)\s+(?:an?\s+|the\s+|my\s+)?(?:\w+\s+)?(?P<value>' + _coffees() + r')') + rf"", "thing", 0.8),
    _r("coffee", rf"^" + _CI(r'(?P<value>' + _coffees() + r')') + rf"[,!.]", "thing", 0.65, subject_from="speaker"),
    # sport
    _r("sport", rf"{_S}" + _CI(r'(?:play|playing|played|do|doing|took up|taken up|taking up|started|start|starting|got into|getting into|joined|signed up for|into|obsessed with|switched to|switching to|moved to|picked up|doing)\s+(?:some\s+|a\s+|the\s+)?(?P<value>' + _sports() + r')') + rf"\b", "thing", 0.75),
    _r("sport", rf"" + _CI(r'(?:i[’\']ve got|i have|got|i[’\']ve)\s+(?P<value>' + _sports() + r')\s+(?:tonight|tomorrow|later|practice|training|club|league|lessons?|this evening|on \w+day)') + rf"", "thing", 0.75, subject_from="speaker"),
    _r("sport", rf"" + _CI(r'(?:my|our)\s+(?P<value>' + _sports() + r')\s+(?:league|club|team|lessons?|sessions?|coach|partner|games?|matches)') + rf"", "thing", 0.7, subject_from="speaker"),
    # hobby lists ("I love pottery, hiking and painting")
    _r("hobbies", rf"{SUBJ}{_CI(F.AUX)}\s+" + _CI(r'(?:also\s+|really\s+)?(?:love|enjoy|like|adore|am into|[’\']m into|am really into|[’\']m really into)') + rf"\s+{_LIST}", "list", 0.8),
    _r("hobbies", rf"" + _CI(r'(?:my\s+)?(?:hobbies|hobby list|free time|spare time)\s+(?:are|is|now|these days|=|:)\s*(?:now\s+)?(?:mostly\s+)?') + rf"{_LIST}", "list", 0.8, subject_from="speaker"),
    # partner / relationship
    _r("partner", rf"" + _CI(r'(?:my|our)\s+(?:new\s+)?(?:boyfriend|girlfriend|partner|husband|wife|fianc[eé]e?)\s*(?:[,(]\s*)?') + rf"{F.NAME}", "name", 0.75, subject_from="speaker"),
    _r("partner", rf"{_S}" + _CI(r'(?:dating|seeing|engaged to|married to|marrying|going out with|moved in with)') + rf"\s+{F.NAME}", "name", 0.8),
    _r("relationship", rf"{_S}" + _CI(r'(?:now\s+|officially\s+|finally\s+|just\s+got\s+|got\s+)?(?P<value>engaged|married|single|divorced|separated)') + rf"\b", "thing", 0.85),
    # trips
    _r("trip_destination", rf"{_S}" + _CI(r'(?:booked|booking|book)\s+(?:a\s+|the\s+|our\s+|my\s+)?(?:\w+\s+)?(?:flights?|trip|tickets?|holiday|getaway|break)?\s*(?:to|for)?') + rf"\s*{F.CAP}", "place", 0.8, "plan"),
    _r("trip_destination", rf"{_S}" + _CI(r'(?:fly(?:ing)?|flew|travel(?:l?ing)?|heading|off|going)\s+(?:out\s+)?to') + rf"\s+{F.CAP}\s+" + _CI(r'(?:in|on|for|next|this|at the end|after)') + rf"", "place", 0.7, "plan"),
    _r("trip_destination", rf"" + _CI(r'(?:trip|holiday|vacation|flights?|getaway|honeymoon)\s+(?:to|in)') + rf"\s+{F.CAP}", "place", 0.75, "plan", subject_from="speaker"),
    # dates of planned events
    _r(lambda m: F.date_facet(m.group("event")), rf"" + _CI(r'(?:the|my|our|his|her|their)\s+(?P<event>' + _events() + r')\s+(?:date\s+)?(?:is|[’\']s|was|will be|has been)?\s*(?:now\s+|officially\s+|still\s+)?(?:on|for|set for|moved to|pushed (?:back )?to|postponed to|rescheduled (?:for|to)|booked for|happening on|planned for|confirmed for)') + rf"\s+{_DATE_TAIL}", "date", 0.85, "plan", subject_from="speaker"),
    _r(lambda m: F.date_facet(m.group("event")), rf"" + _CI(r'(?:moved|moving|pushed|pushing|postponed|postponing|rescheduled|rescheduling|rebooked|rebooking|changed|shifted|bumped|brought)\s+(?:back\s+|forward\s+)?(?:the|my|our)\s+(?P<event>' + _events() + r')\s+(?:date\s+)?(?:back\s+|forward\s+)?(?:to|for|until|till)') + rf"\s+{_DATE_TAIL}", "date", 0.9, "plan", subject_from="speaker"),
    _r(lambda m: F.date_facet(m.group("event")), rf"" + _CI(r'set\s+(?:a|the|our)\s+(?P<event>' + _events() + r')\s+date') + rf"[!:,.\s]*{_DATE_TAIL}", "date", 0.9, "plan", subject_from="speaker"),
    _r("date:trip", rf"" + _CI(r'(?:booked|rebooked|moved|changed|switched)\s+(?:the\s+|my\s+|our\s+)?(?:flights?|tickets?|trip)\s+(?:\w+\s+){0,3}?(?:for|to)') + rf"\s+{_DATE_TAIL}", "date", 0.85, "plan", subject_from="speaker"),
    _r("date:trip", rf"" + _CI(r'(?:leaving|departing|fly(?:ing)? out|flying out|we fly|i fly)\s+(?:on\s+)?') + rf"{_DATE_TAIL}", "date", 0.7, "plan", subject_from="speaker"),
    _r(lambda m: F.date_facet(m.group("event")), rf"" + _CI(r'(?P<event>' + _events() + r')\s+(?:is|[’\']s)\s+(?:now\s+)?(?:on|for)') + rf"\s+{_DATE_TAIL}", "date", 0.75, "plan", subject_from="speaker"),
    # venues
    _r(lambda m: F.venue_facet(m.group("event")), rf"" + _CI(r'(?:the|our|my)\s+(?P<event>wedding|party|reception|ceremony|housewarming)\s+(?:is|[’\']s|will be)\s+(?:now\s+)?(?:going to be\s+)?(?:at|in)') + rf"\s+(?P<value>[^.,!?;]{{3,60}})", "place", 0.8, "plan", subject_from="speaker"),
    # favourites
    _r(lambda m: F.favourite_facet(m.group("cat")), rf"" + _CI(r'(?:my|our)\s+(?:all-time\s+|new\s+|absolute\s+)?favou?rite\s+(?P<cat>[a-z]+(?:\s+[a-z]+)?)\s+(?:is|are|has to be|would be|[’\']s)\s+(?:now\s+|still\s+|probably\s+|definitely\s+)?') + rf"(?P<value>[^.,!?;]{{1,40}})", "thing", 0.85, "preference", subject_from="speaker"),
    _r(lambda m: F.favourite_facet(m.group("cat")), rf"{F.CAP}\s+" + _CI(r'(?:is|are)\s+(?:still\s+|now\s+)?(?:my|our)\s+(?:all-time\s+|new\s+)?favou?rite\s+(?P<cat>[a-z]+)') + rf"", "thing", 0.85, "preference", subject_from="speaker"),
    # cars
    _r("car", rf"{_S}" + _CI(r'(?:bought|buy|buying|get|getting|got|picked up|ended up with|ended up getting|drive|driving|leasing|leased|ordered|test drove|went for|going for)\s+(?:a|an|the|our|my)\s+(?:new\s+|used\s+|second-hand\s+|secondhand\s+|little\s+)?') + rf"(?P<value>(?:{CAR_MAKES})(?:\s+[A-Z0-9][\w\-]+){{0,2}})", "thing", 0.8, "state_change"),
]


# Explicit substitutions: "forget Oslo, it's Porto now", "Porto instead of Oslo", "switched from X to Y".
_V = r"[\w'’\-]+(?:\s+[\w'’\-]+){0,3}?"
SUBSTITUTIONS = [
    re.compile(rf"(?i:\b(?:forget|scrap|never mind|no more|not)\s+)(?P<old>{_V})(?i:\s*(?:anymore|any more)?[,;.!—–-]+\s*(?:it[’']?s|its|it is|we[’']re going with|going with|now it[’']?s|it[’']ll be|it will be|now|make that|i[’']m on|i[’']m doing|i[’']m having|we[’']re doing)\s+(?:now\s+)?(?:an?\s+|the\s+)?)(?P<new>{_V})(?=\s+(?:now|instead|then|this|at|in|for|because)\b|\s*[.,!?;]|\s*$)"),
    re.compile(rf"(?P<new>{_V})(?i:\s+instead of\s+(?:the\s+|an?\s+)?)(?P<old>{_V})(?=\s*[.,!?;]|\s+(?:now|this|because|since)\b|\s*$)"),
    re.compile(rf"(?i:\b(?:switch(?:ed|ing)?|chang(?:ed|ing)|mov(?:ed|ing)|went|going|upgraded|swapped)\s+(?:\w+\s+){{0,2}}?from\s+(?:the\s+|an?\s+)?)(?P<old>{_V})(?i:\s+to\s+(?:the\s+|an?\s+)?)(?P<new>{_V})(?=\s*[.,!?;]|\s+(?:now|this|because|since|and)\b|\s*$)"),
    re.compile(rf"(?i:\b(?:swapped|traded|ditched|dropped|replaced)\s+(?:the\s+|my\s+|our\s+)?)(?P<old>{_V})(?i:\s+(?:for|with)\s+(?:the\s+|an?\s+)?)(?P<new>{_V})(?=\s*[.,!?;]|\s+(?:now|this|because|since|and)\b|\s*$)"),
]
# Retractions with no new value: "I'm no longer vegetarian", "not doing squash anymore".
RETRACTIONS = [
    re.compile(rf"(?i:\b(?:no longer|not|never)\s+(?:doing\s+|playing\s+|going to\s+|moving to\s+|a\s+|an\s+|into\s+|at\s+|with\s+)?)(?P<old>{_V})(?i:\s+(?:anymore|any more))"),
    re.compile(rf"(?i:\b(?:no longer)\s+(?:doing\s+|playing\s+|a\s+|an\s+|into\s+|at\s+|with\s+|working at\s+|living in\s+)?)(?P<old>{_V})(?=\s*[.,!?;]|\s*$)"),
    re.compile(rf"(?i:\b(?:quit|gave up|stopped|called off|cancell?ed|scrapped)\s+(?:the\s+|my\s+|our\s+)?)(?P<old>{_V})(?=\s*[.,!?;]|\s+(?:for good|completely|because|after|since)\b|\s*$)"),
]

_QUESTION_START = re.compile(
    r"^(?:who|what|when|where|why|how|which|whose|did|do|does|are|is|was|were|have|has|can|could|will|would|should|shall|may|any|anything)\b",
    re.I,
)
_SMALLTALK = re.compile(
    r"^(?:ha+|he+h|lol|lmao|omg|oh|ah|aw+|wow|nice|cool|great|awesome|amazing|sure|yeah|yep|yes|no|nope|ok(?:ay)?|thanks|thank you|"
    r"congrats|congratulations|same|right|true|fair|good|lovely|sounds|night|morning|hey|hi|hello|bye|see you|speak soon|"
    r"ttyl|xx?|exactly|totally|definitely|absolutely|of course|me too|you too|go you|brave|classic|stop|rip|wait|hmm)\b",
    re.I,
)
_WEAK_VERBS = frozenset(
    "be have do say think know guess mean feel hope see look sound seem wish bet suppose imagine reckon "
    "tell ask talk chat speak text message call laugh cry hear want need let get go come make take".split()
)
_PLAN = re.compile(r"\b(will|[’']ll|going to|gonna|plan(?:ning)? to|plan on|planning on|hope to|hoping to|want to|intend to|about to|next (?:week|month|year|\w+day)|tomorrow|soon|this (?:weekend|summer|autumn|fall|winter|spring))\b", re.I)
_PREF = re.compile(r"\b(love|loves|loved|like|likes|enjoy|enjoys|prefer|prefers|hate|hates|favou?rite|fan of|into|obsessed with|can[’']t stand)\b", re.I)
_CHANGE = re.compile(r"\b(moved|started|quit|joined|became|become|bought|adopted|married|engaged|graduated|left|switched|changed|new|renamed|rebooked|got the|got a|finished|retired|hired|promoted|signed)\b", re.I)
_CAUSE_CUES = [
    (re.compile(r"^(?P<effect>.+?)\s*,?\s+because\s+(?:of\s+)?(?P<cause>.+)$", re.I), "causes", "because"),
    (re.compile(r"^because\s+(?:of\s+)?(?P<cause>.+?),\s*(?P<effect>.+)$", re.I), "causes", "because"),
    (re.compile(r"^(?P<cause>.+?),?\s+so\s+(?P<effect>(?:i|we|she|he|they|now|it)\b.+)$", re.I), "causes", "so"),
    (re.compile(r"^(?P<cause>.+?),?\s+which is why\s+(?P<effect>.+)$", re.I), "causes", "which is why"),
    (re.compile(r"^(?P<cause>.+?),?\s+(?:that[’']s|that is)\s+why\s+(?P<effect>.+)$", re.I), "causes", "that's why"),
    (re.compile(r"^(?:after|since)\s+(?P<cause>.+?),\s*(?P<effect>(?:i|we)\s+(?:decided|chose|ended up|started|switched|took|signed|joined|moved|went|quit|bought)\b.+)$", re.I), "causes", "after ... decided"),
    (re.compile(r"^thanks to\s+(?P<cause>.+?),\s*(?P<effect>.+)$", re.I), "enables", "thanks to"),
    (re.compile(r"^(?P<effect>.+?)\s+thanks to\s+(?P<cause>.+)$", re.I), "enables", "thanks to"),
    (re.compile(r"^(?P<cause>.+?)\s+(?:stopped|kept|prevented)\s+(?:me|us|him|her|them)\s+from\s+(?P<effect>.+)$", re.I), "prevents", "stopped ... from"),
    (re.compile(r"^(?P<cause>.+?),?\s+(?:which|that)\s+(?:meant|means)\s+(?P<effect>.+)$", re.I), "causes", "which meant"),
    (re.compile(r"^(?P<cause>.+?)\s+(?:made it possible|let me|let us|allowed me|allowed us)\s+(?:to\s+)?(?P<effect>.+)$", re.I), "enables", "let me"),
]
_CROSS_CAUSE = re.compile(r"^(?:so|that[’']s why|which is why|because of (?:that|this)|as a result|thanks to (?:that|this|which)|that meant|that[’']s how)\b[,]?\s*(?P<effect>.+)$", re.I)


# -- helpers ---------------------------------------------------------------------------


def _inflect_3sg(verb: str) -> str:
    low = verb.lower()
    irregular = {"am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "'m": "is", "’m": "is",
                 "'ve": "has", "’ve": "has", "'re": "is", "’re": "is", "don't": "doesn't", "don’t": "doesn’t"}
    if low in irregular:
        return irregular[low]
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(sent: Any, speaker: str, other: str | None) -> str:
    """Rewrite a spaCy sentence so I/my/we/you become names (with verb agreement)."""
    out: list[str] = []
    tokens = list(sent)
    fix_next_verb = False
    for i, tok in enumerate(tokens):
        low = tok.lower_
        text = tok.text
        repl = None
        if tok.pos_ == "PRON" or low in ("i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "you", "your", "yours"):
            if low == "i" or low == "me" or low == "myself":
                repl = speaker
                fix_next_verb = low == "i"
            elif low in ("my", "mine"):
                repl = f"{speaker}'s"
            elif low in ("we",):
                repl = f"{speaker} and co."
            elif low in ("us", "ourselves"):
                repl = f"{speaker} and co."
            elif low in ("our", "ours"):
                repl = f"{speaker}'s"
            elif other and low in ("you", "yourself"):
                repl = other
                fix_next_verb = tok.dep_ in ("nsubj", "nsubjpass")
            elif other and low in ("your", "yours"):
                repl = f"{other}'s"
        elif fix_next_verb and tok.tag_ in ("VBP",) or (fix_next_verb and low in ("'m", "’m", "am", "'re", "’re", "are", "'ve", "’ve")):
            repl = _inflect_3sg(text)
            if text in ("'m", "’m", "'ve", "’ve", "'re", "’re"):
                repl = " " + repl
            fix_next_verb = False
        elif fix_next_verb and tok.pos_ not in ("ADV", "PART"):
            fix_next_verb = False
        if repl is not None and i == 0 and repl and repl[0].islower():
            repl = repl[0].upper() + repl[1:]
        out.append((repl if repl is not None else text) + tok.whitespace_)
    return re.sub(r"\s+", " ", "".join(out)).strip()


def _subject_of(group: str | None, speaker: str, other: str | None, participants: Sequence[str]) -> str | None:
    if group is None:
        return speaker
    g = group.strip()
    low = g.lower()
    if low in ("i", "we") or low.endswith(" and i"):
        return speaker
    if low == "you":
        return other
    for p in participants:
        if p.lower() == low:
            return p
    return None  # some other capitalised word: not a subject we can resolve


def _is_question(text: str) -> bool:
    t = text.strip()
    return t.endswith("?") or bool(_QUESTION_START.match(t) and not t.endswith((".", "!")) and len(t.split()) < 14)


def _clean_value(value: str, kind: str) -> str:
    v = value.strip().strip("'\"’“”")
    v = re.sub(r"\s+(?:now|too|as well|again|then|though|tbh|lol|haha|anyway|instead)$", "", v, flags=re.I)
    v = re.sub(r"^(?:the|a|an)\s+(?=[a-z])", "", v) if kind in ("thing",) else v
    return v.strip(" ,.;:!?-–—")


_NOT_A_PLACE = frozenset(
    "I We You He She They It The A An My Our This That There Here Monday Tuesday Wednesday Thursday Friday Saturday "
    "Sunday January February March April May June July August September October November December Christmas Easter "
    "Spring Summer Autumn Winter Next Last Mum Mom Dad Tom".split()
)


@dataclass
class _Context:
    """What earlier sentences of the session said, for anaphora ('there', 'her name is')."""

    last_place: tuple[int, str] | None = None
    last_species: dict[str, str] = field(default_factory=dict)
    recent: list[EventOut] = field(default_factory=list)


# -- the extractor -----------------------------------------------------------------------


class RuleExtractor:
    """Deterministic event distillation over one session at a time."""

    name = "rules"

    def __init__(self, participants: Sequence[str]) -> None:
        self.participants = list(participants)

    def _other(self, speaker: str) -> str | None:
        others = [p for p in self.participants if p != speaker]
        return others[0] if len(others) == 1 else None

    def extract_session(self, messages: Sequence[MessageIn], history: Sequence[EventOut] = ()) -> list[EventOut]:
        """Events of one session; `history` (earlier faceted events) resolves 'forget Oslo'-style revisions."""
        from tracecli.graph.nlp import parse_many

        docs = parse_many([m.text for m in messages])
        ctx = _Context()
        known: list[EventOut] = list(history)
        events: list[EventOut] = []
        prev_msg_events: list[EventOut] = []
        for msg, doc in zip(messages, docs):
            base = parse_iso(msg.timestamp) if msg.timestamp else None
            msg_events: list[EventOut] = []
            for s_idx, sent in enumerate(doc.sents):
                msg_events.extend(self._sentence(msg, sent, s_idx, base, ctx, known + events + msg_events))
            # Cross-message causal cue: "So I took up swimming" after the cause.
            first = next(iter(doc.sents), None)
            if first is not None and _CROSS_CAUSE.match(first.text.strip()) and prev_msg_events and msg_events:
                cause = prev_msg_events[-1]
                if cause.subject == msg_events[0].subject:
                    msg_events[0].causal.append(("causes", cause.id, first.text.split()[0].lower()))
            for ev in msg_events:
                ctx.recent.append(ev)
            events.extend(msg_events)
            if msg_events:
                prev_msg_events = msg_events
        return events

    # one sentence → zero or more events
    def _sentence(self, msg: MessageIn, sent: Any, s_idx: int, base: dt.datetime | None, ctx: _Context, known: list[EventOut]) -> list[EventOut]:
        text = sent.text.strip()
        speaker = msg.speaker
        other = self._other(speaker)
        for ent in sent.ents:
            if ent.label_ in ("GPE", "LOC", "FAC"):
                ctx.last_place = (msg.seq, ent.text)
        low = text.lower()
        for w, species in F.SPECIES.items():
            if re.search(rf"\b{re.escape(w)}s?\b", low):
                ctx.last_species[speaker] = species
        if len(text) < 3 or _is_question(text) or F.COUNTERFACTUAL.search(text):
            return []
        dates = find_dates(text, base, future=bool(_PLAN.search(text)))
        out: list[EventOut] = []
        facet_hits = self._facets(msg, sent, text, ctx, known, other)
        description = third_person(sent, speaker, other)
        for hit in facet_hits:
            out.append(self._event(msg, s_idx, text, description, dates, **hit))
        if not out and self._informative(sent, text):
            subject = speaker
            if other and re.match(r"(?i)^(?:you|your)\b", text):
                subject = other
            out.append(self._event(msg, s_idx, text, description, dates, subject=subject, facet=None, value=None,
                                   kind="thing", confidence=0.6, event_type=None, negated=False))
        # Causal cues inside the sentence: split into cause and effect events.
        for regex, label, cue in _CAUSE_CUES:
            m = regex.match(text)
            if not m or not out:
                continue
            cause_text, effect_text = m.group("cause").strip(), m.group("effect").strip()
            if len(cause_text.split()) < 2 or len(effect_text.split()) < 2:
                continue
            host = out[0]
            part = self._event(msg, s_idx, cause_text, third_person_text(cause_text, speaker, other), dates,
                               subject=host.subject, facet=None, value=None, kind="thing", confidence=0.6,
                               event_type=None, negated=False, suffix="cause")
            if cue.startswith("stopped"):
                part.type = "action"
            host.causal.append((label, part.id, cue))
            out.insert(0, part)
            break
        return out

    def _informative(self, sent: Any, text: str) -> bool:
        if _SMALLTALK.match(text) and len(text.split()) < 8:
            return False
        words = content_words(text)
        if len(words) < 3:
            return False
        has_subject = any(t.dep_ in ("nsubj", "nsubjpass") and (t.lower_ in ("i", "we", "you") or t.ent_type_ == "PERSON" or t.pos_ == "PROPN") for t in sent)
        content_verb = any(t.pos_ == "VERB" and t.lemma_.lower() not in _WEAK_VERBS for t in sent) or any(
            t.pos_ == "VERB" and t.text.lower() not in _WEAK_VERBS for t in sent
        )
        return has_subject and (content_verb or len(words) >= 5)

    def _facets(self, msg: MessageIn, sent: Any, text: str, ctx: _Context, known: list[EventOut], other: str | None) -> list[dict[str, Any]]:
        speaker = msg.speaker
        hits: list[dict[str, Any]] = []
        taken: set[str] = set()
        ents = {e.text: e.label_ for e in sent.ents}
        about_other = other is not None and bool(re.search(r"\b(you|your)\b", text, re.I)) and not re.search(r"\b(i|my|we|our|me)\b", text, re.I)
        # 1. explicit substitutions resolve the facet through the old value
        for regex in SUBSTITUTIONS:
            for m in regex.finditer(text):
                old, new = m.group("old"), m.group("new")
                subject = other if about_other else speaker
                prior = _find_by_value(known, subject, old)
                if prior is None or not new.strip():
                    continue
                value = _clean_value(new, F.facet_kind(prior.facet or ""))
                if F.normalise_value(value) == prior.value_norm or not value:
                    continue
                if prior.facet and prior.facet not in taken:
                    taken.add(prior.facet)
                    hits.append(dict(subject=subject, facet=prior.facet, value=value, kind=F.facet_kind(prior.facet),
                                     confidence=0.95, event_type="state_change", negated=False))
        # 2. facet patterns
        for rule in RULES:
            for m in rule.regex.finditer(text):
                facet = rule.facet(m) if callable(rule.facet) else rule.facet
                if rule.subject_from == "subj":
                    subject = _subject_of(m.groupdict().get("subj"), speaker, other, self.participants)
                else:
                    subject = other if about_other else speaker
                if subject is None:
                    continue
                if facet == "pet_name:?":
                    species = ctx.last_species.get(speaker) or _latest_pet_species(known, subject)
                    facet = F.pet_facet(species) if species else "pet_name:pet"
                if facet in taken:
                    continue
                value = m.groupdict().get("value") or ""
                if rule.kind == "there":
                    if ctx.last_place is None or msg.seq - ctx.last_place[0] > 4:
                        continue
                    value = ctx.last_place[1]
                if rule.kind == "date":
                    mentions = find_dates(m.group("tail"), parse_iso(msg.timestamp) if msg.timestamp else None, future=True)
                    if not mentions:
                        continue
                    dm = mentions[0]
                    value = format_date(dm.date, dm.granularity if dm.granularity != "week" else "day")
                value = _clean_value(value, rule.kind)
                if not value or not self._valid_value(value, rule.kind, ents, facet):
                    continue
                negated = rule.negated or self._negated_before(text, m.start("value") if m.groupdict().get("value") is not None and m.start("value") >= 0 else m.start())
                taken.add(facet)
                hits.append(dict(subject=subject, facet=facet, value=value, kind=rule.kind, confidence=rule.confidence,
                                 event_type=rule.event_type, negated=negated))
        # 3. retractions of a known value with no new value ("I'm no longer vegetarian")
        for regex in RETRACTIONS:
            for m in regex.finditer(text):
                subject = other if about_other else speaker
                prior = _find_by_value(known, subject, m.group("old"))
                if prior is None or prior.facet in taken:
                    continue
                taken.add(prior.facet or "")
                hits.append(dict(subject=subject, facet=prior.facet, value=prior.value or "", kind=F.facet_kind(prior.facet or ""),
                                 confidence=0.85, event_type="state_change", negated=True))
        return hits

    @staticmethod
    def _negated_before(text: str, pos: int) -> bool:
        window = text[max(0, pos - 25):pos]
        return bool(re.search(r"\b(not|never|no longer|don[’']t|didn[’']t|isn[’']t|aren[’']t|won[’']t|wasn[’']t)\b", window, re.I)) and not re.search(r"\bnot only\b", window, re.I)

    @staticmethod
    def _valid_value(value: str, kind: str, ents: dict[str, str], facet: str) -> bool:
        first = value.split()[0]
        if kind in ("place", "org", "name", "there"):
            if first in _NOT_A_PLACE or not first[:1].isupper():
                return False
            label = next((lab for txt, lab in ents.items() if value in txt or txt in value), None)
            if kind == "org" and label in ("PERSON", "DATE", "TIME", "GPE") and not re.search(r"(?i)council|university|college|school|hospital|bank|ltd|inc|analytics|energy|health", value):
                return False
            if kind == "place" and label in ("PERSON", "DATE", "TIME", "ORG", "NORP") and label != "GPE":
                return label == "ORG" and facet.startswith("venue:")
            if kind == "name" and label in ("GPE", "DATE", "TIME", "ORG"):
                return False
        if kind == "thing" and len(value) < 2:
            return False
        if kind == "list" and value.count(",") + value.count(" and ") + value.count("&") < 1:
            return False
        return True

    def _event(self, msg: MessageIn, s_idx: int, text: str, description: str, dates: list[DateMention], *,
               subject: str, facet: str | None, value: str | None, kind: str, confidence: float,
               event_type: str | None, negated: bool, suffix: str = "") -> EventOut:
        cue_m = F.STRONG_CUES.search(text) if facet else None
        etype = event_type or _event_type(text)
        if facet and not event_type:
            spec = F.FACETS.get(facet)
            etype = spec.event_type if spec else etype
        if facet and _PLAN.search(text) and etype != "state_change":
            etype = "plan"
        dm = dates[0] if dates else None
        value_norm = F.normalise_value(value) if value else None
        if facet == "hobbies" and value:
            value_norm = ",".join(sorted(F.normalise_value(v) for v in re.split(r",\s*(?:and\s+)?|\s+(?:and|&)\s+", value) if v.strip()))
        if negated and value_norm is not None:
            value_norm = f"not:{value_norm}"
        if facet and value:
            if negated:
                description = f"{subject} no longer: {F.facet_label(facet)} {value} — \"{text}\""
            else:
                description = f"{subject} {F.facet_label(facet)} {value} — \"{text}\""
        participants = sorted({subject, *[p for p in self.participants if p != subject and re.search(rf"\b{re.escape(p)}\b", text)]})
        eid = "ev_" + short_hash(msg.message_id, s_idx, facet or "", value_norm or "", suffix)
        return EventOut(
            id=eid, type=etype, subject=subject, participants=participants, description=description,
            time_anchor=msg.timestamp, event_time=dm.date.isoformat() if dm else None,
            event_time_granularity=dm.granularity if dm else None, seq=msg.seq, sentence_idx=s_idx,
            source_note_ids=[msg.note_id], source_message_ids=[msg.message_id], quote=text,
            facet=facet, value=value, value_norm=value_norm, negated=negated,
            cue=cue_m.group(0).lower() if cue_m else None, confidence=confidence,
        )


def third_person_text(text: str, speaker: str, other: str | None) -> str:
    """Third-person rewrite of a plain string (parses it first)."""
    from tracecli.graph.nlp import get_nlp

    doc = get_nlp()(text)
    return third_person(doc[:], speaker, other)


def _event_type(text: str) -> str:
    if _PLAN.search(text):
        return "plan"
    if _PREF.search(text):
        return "preference"
    if _CHANGE.search(text):
        return "state_change"
    return "action"


def _find_by_value(known: Sequence[EventOut], subject: str, old: str) -> EventOut | None:
    """The subject's latest faceted event whose value matches `old`."""
    target = F.normalise_value(old)
    if not target:
        return None
    for ev in reversed(known):
        if ev.subject != subject or not ev.facet or not ev.value_norm or ev.negated:
            continue
        vn = ev.value_norm
        if vn == target or (len(target) >= 4 and (target in vn.split(",") or vn.endswith(" " + target) or target.endswith(" " + vn))):
            return ev
    return None


def _latest_pet_species(known: Sequence[EventOut], subject: str) -> str | None:
    for ev in reversed(known):
        if ev.subject == subject and ev.facet and ev.facet.startswith("pet_name:") and not ev.facet.endswith(":pet"):
            return ev.facet.split(":", 1)[1]
    return None
