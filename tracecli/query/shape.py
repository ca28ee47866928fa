"""Query shape (TRACE §II-F): answer plan, expected answer type, people named, time scope.

Detection reads only the question text, never benchmark labels.
"""

from __future__ import annotations

import datetime as dt
import re
from calendar import monthrange
from collections.abc import Sequence
from dataclasses import dataclass, field

from tracecli.graph.dates import find_dates
from tracecli.graph.facets import question_facets

PLANS = ("temporal", "preference", "multi-hop", "factual")

PLAN_TEXT = {
    "temporal": "Compare timestamps before asserting what is current; answer with an absolute date; "
    "prefer the latest valid event unless the question is scoped to an earlier time.",
    "preference": "Aggregate the person's statements over time; the latest valid preference wins; "
    "mention an earlier one only as outdated.",
    "multi-hop": "Follow the evidence chain step by step along its relation labels; every step must be cited.",
    "factual": "Answer directly and briefly with the value asked for, from the best currently-valid evidence.",
}

_TEMPORAL = re.compile(r"\b(when|what date|which date|what day|what year|what month|how long|since when|before|after|"
                       r"as of|until|by the time|first|last time|ago|dates?)\b", re.I)
_PREFERENCE = re.compile(r"\b(favou?rite|prefer\w*|like|likes|love|loves|enjoy\w*|hobb\w+|diet|taste|into|fan of|"
                         r"rather|usually|order)\b", re.I)
_MULTIHOP = re.compile(r"\b(why|how come|what led|what caused|because|reason|result|lead to|led to|end up|ended up|"
                       r"after .* what|both|relationship between|how did .* (?:meet|get|end))\b", re.I)
#: words that ask for the state now, as against what holds in general ("Where does she work now?")
_NOW = re.compile(r"\b(now|nowadays|currently|current|these days|at the moment|at present|at this point|today|still|anymore|any more|latest|end up|ended up)\b", re.I)
_SCOPE = re.compile(
    r"\b(?:as of|as at|in|on|by|during|back in|around|at the (?:start|end|beginning) of|early|mid|late)\s+"
    r"(?:(?:early|mid|late|the start of|the end of)\s+)?"
    r"(?:(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)"
    r"(?:\s+\d{1,2}(?:st|nd|rd|th)?)?(?:,?\s+\d{4})?|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?[a-z]+(?:,?\s+\d{4})?|\d{4}(?:-\d{2}(?:-\d{2})?)?|"
    r"last (?:year|month|week|spring|summer|autumn|fall|winter)|(?:january|february|march|april|may|june|july|august|"
    r"september|october|november|december) last year)\b",
    re.I,
)
_SAYS_BEFORE = re.compile(r"(?i)\bbefore\b")


def asks_before(question: str) -> bool:
    """Does the question ask what held before something ("… before the camper van?", "… before she moved?")?
    (`QueryShape.before_event_verb` is only ever set for such a question.)"""
    return _SAYS_BEFORE.search(question) is not None


_BEFORE_EVENT = re.compile(r"\bbefore\s+(?:she|he|they|[A-Z][a-z]+)\s+(moved|switched|changed|started|left|got|quit|renamed|rebooked|went)\b", re.I)
#: a closing clause that says at which event the question is asked ("… back when she lived in Leeds?", "… when her
#: car failed its MOT?", "… while the choir was learning the Requiem?", "… around the time X quit?"); not an opening
#: "When …?", which asks for a time
_BACK_WHEN = re.compile(r"(?<=\w)[\s,]+(?:back\s+)?(?:when|while|whilst|around the time|at the time|by the time)\s+"
                        r"(?P<rest>\w+\s+\w.*)$", re.I)
#: the same clause opening the question ("When her car failed its MOT, which plot did Noor have?", "Around the time X
#: quit, where …?"): a clause, not "When did …" (its first word after the conjunction is no auxiliary), then a comma
#: and a question
_OPENING_WHEN = re.compile(
    r"^\s*(?:back\s+)?(?:when|while|whilst|around the time|at the time|by the time)\s+"
    r"(?P<rest>(?!(?:did|does|do|is|was|were|are|will|would|has|have|had|can|could|should|shall|may|might)\b)"
    r"\w[\w'’]*\s+\w[^,?]*?)\s*,\s*"
    r"(?P<main>(?:what|which|who|whom|whose|where|how|when|why|did|does|do|is|was|were|are|had|has|have)\b.+)$",
    re.I)


@dataclass
class QueryShape:
    """What the question asks, read from its text."""

    plan: str
    wh: str  # where | when | who | what | which | why | how | yesno
    facets: list[str] = field(default_factory=list)
    people: list[str] = field(default_factory=list)
    as_of: dt.datetime | None = None
    as_of_source: str | None = None  # "option" | "question" | None
    scope_phrase: str | None = None
    wants_current: bool = True
    says_now: bool = False  # the question itself asks for the state now ("… now?", "… these days?")
    before_event_verb: str | None = None
    back_when: str | None = None
    #: the event clause ("… when her car failed its MOT?", "When her car failed its MOT, …?"), also when a date
    #: was given with the question; the message it is found in (set at query time) says when, so its sentences are
    #: no answer
    event_clause: str | None = None
    anchor_note: int | None = None
    #: capitalised words that look like names of someone or something but are not a known person
    #: ("Where is Alice going?" over a chat between Erin and Maya); see `unknown_names`
    unknown: list[str] = field(default_factory=list)


def detect_wh(question: str) -> str:
    """The question word that comes first ('What was … back when …' is a what-question)."""
    q = question.strip().lower()
    found = [(m.start(), m.group(1)) for m in re.finditer(r"\b(where|when|who|whose|which|what|why|how)\b", q)]
    if not found:
        return "yesno"
    wh = min(found)[1]
    return "who" if wh == "whose" else wh


def detect_plan(question: str) -> str:
    """temporal | preference | multi-hop | factual, from the question's words."""
    if _MULTIHOP.search(question):
        return "multi-hop"
    if _TEMPORAL.search(question):
        return "temporal"
    if _PREFERENCE.search(question):
        return "preference"
    return "factual"


def people_in(question: str, names: Sequence[str]) -> list[str]:
    """Known people named in the question (participants, event subjects)."""
    found = []
    for name in sorted(set(names), key=len, reverse=True):
        if name and re.search(rf"\b{re.escape(name)}(?:'s|’s)?\b", question, re.I):
            found.append(name)
    return found


def addressed(question: str, person: str) -> str:
    """The question put to `person` in the second person: "What is Noor's job?" → "What is your job?",
    "Where does Noor live?" → "Where does you live?" (the agreement is left as it falls: only the embedding
    reads it)."""
    name = re.escape(person)
    text = re.sub(rf"\b{name}(?:'s|’s)(?!\w)", "your", question, flags=re.I)
    return re.sub(rf"\b{name}\b", "you", text, flags=re.I)


def habitual(clause: str) -> bool:
    """Does an event clause tell a habit rather than an event: its first verb in the simple present ("… when he
    visits his gran?", "… while she's at work?")? Such a clause names no moment to scope the question to."""
    from tracecli.graph.nlp import get_nlp

    for tok in get_nlp()(clause):
        if tok.tag_ in ("VBD", "VBN", "MD"):  # "failed", "was learning", "had moved", "would"
            return False
        if tok.tag_ in ("VBZ", "VBP"):
            return True
    return False


def event_clause_dropped(question: str) -> str:
    """The question without a closing event clause ("Which plot did Noor have when her car failed its MOT?" →
    "Which plot did Noor have?"): the clause says when, not what; sentences about that event are not the answer.
    (A habitual clause, `habitual`, is dropped too: it scopes nothing, and its words pull towards sentences on
    the habit rather than on what is asked.)"""
    m = _BACK_WHEN.search(question)
    if m is None:
        opening = _OPENING_WHEN.match(question)
        if opening is None:
            return question
        main = opening.group("main")
        return main[0].upper() + main[1:] if len(main.split()) >= 3 else question
    cut = question[: m.start()].rstrip(" ,") + ("?" if question.rstrip().endswith("?") else "")
    return cut if len(cut.split()) >= 3 else question


def before_clause_dropped(question: str) -> str:
    """The question without a closing "before X" clause ("What car did Noor have before the camper van?" → "What car did
    Noor have?"): X marks where the answer ends, and sentences about X are the ones that cannot answer."""
    cut = re.sub(r"(?i)[\s,]+before\b[^?]*(\?)?\s*$", lambda m: m.group(1) or "", question)
    return cut if len(cut.split()) >= 3 else question


_CALENDAR_WORDS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday "
    "christmas easter eve halloween thanksgiving new year years ramadan diwali hanukkah".split()
)
_NAME_TOKEN = re.compile(r"(?<![\w'’-])([A-Z](?:[a-z]+|['’][A-Z][a-z]+)(?:-[A-Za-z][a-z]+)*)")
# capitalised only because they open the question
_OPENERS = frozenset(
    "where when who whose whom which what why how is are was were am do does did has have had can could will would "
    "should shall may might must tell list show give name remind please and but so if in on at by for from since "
    "during after before as according the a an any anything everything someone somebody".split()
)


def unknown_names(question: str, names: Sequence[str]) -> list[str]:
    """Capitalised words of the question that are no known name, month, day, holiday or question opener.

    These are what the question is about when it names nobody the conversation knows; the asker checks
    whether the conversation mentions them at all before answering about someone else.
    """
    known = {w.lower() for n in names for w in re.findall(r"[\w'’-]+", n)}
    out: list[str] = []
    for m in _NAME_TOKEN.finditer(question):
        word, low = m.group(1), m.group(1).lower()
        if low in known or low in _CALENDAR_WORDS or low in _OPENERS or word in out:
            continue
        out.append(word)
    return out


def _end_of(date: dt.date, granularity: str, phrase: str) -> dt.datetime:
    p = phrase.lower()
    if granularity == "year" and not re.search(r"[a-z]{3,}\s+\d{4}|\d{4}-\d{2}", p):
        end = dt.date(date.year, 12, 31)
    elif granularity in ("month", "year") or re.fullmatch(r".*\b[a-z]+\s+\d{4}$", p) and not re.search(r"\d{1,2}(?:st|nd|rd|th)?\s+[a-z]", p):
        last = monthrange(date.year, date.month)[1]
        day = 10 if "early" in p or "start" in p or "beginning" in p else 20 if "mid" in p else last
        end = dt.date(date.year, date.month, day)
    else:
        end = date
    return dt.datetime(end.year, end.month, end.day, 23, 59, 59, tzinfo=dt.timezone.utc)


def time_scope(question: str, now: dt.datetime | None) -> tuple[dt.datetime | None, str | None]:
    """An as-of date stated in the question ('as of 2 Feb 2024', 'in March last year'), resolved against `now`."""
    for m in _SCOPE.finditer(question):
        phrase = m.group(0)
        core = re.sub(r"^(?:as of|as at|in|on|by|during|back in|around)\s+", "", phrase, flags=re.I)
        mentions = find_dates(core, now) or find_dates(phrase, now)
        if not mentions:
            # a bare month name: the latest such month not after `now`
            mm = re.fullmatch(r"(?i)(?:(early|mid|late|the start of|the end of)\s+)?([a-z]+)", core)
            if mm and now is not None:
                try:
                    month = dt.datetime.strptime(mm.group(2)[:3].title(), "%b").month
                except ValueError:
                    continue
                year = now.year if month <= now.month else now.year - 1
                return _end_of(dt.date(year, month, 1), "month", phrase), phrase
            continue
        dm = mentions[0]
        gran = dm.granularity
        if re.fullmatch(r"(?i)(?:early|mid|late|the start of|the end of)?\s*[a-z]+", core.strip()):
            gran = "month"
        end = _end_of(dm.date, gran, phrase)
        if now is not None and end > now + dt.timedelta(days=31) and not re.search(r"\d{4}", phrase):
            # "in March" asked in November means the March that has been, not the next one
            end = _end_of(dm.date.replace(year=dm.date.year - 1), gran, phrase)
        return end, phrase
    return None, None


def shape_of(question: str, names: Sequence[str], now: dt.datetime | None, as_of: dt.datetime | None = None) -> QueryShape:
    """Read the question: plan, answer type, facets, people, time scope."""
    opening = _OPENING_WHEN.match(question)
    asked = opening.group("main") if opening else question  # "When X, where …?" asks where, not when
    shape = QueryShape(plan=detect_plan(asked), wh=detect_wh(asked), facets=question_facets(question),
                       people=people_in(question, names), unknown=unknown_names(question, names))
    if as_of is not None:
        shape.as_of, shape.as_of_source = as_of, "option"
    else:
        scoped, phrase = time_scope(question, now)
        if scoped is not None:
            shape.as_of, shape.as_of_source, shape.scope_phrase = scoped, "question", phrase
    m = _BEFORE_EVENT.search(question)
    if m and shape.as_of is None:
        shape.before_event_verb = m.group(1).lower()
    m = _BACK_WHEN.search(question) or opening
    if m and not habitual(m.group("rest")):
        shape.event_clause = m.group("rest").strip(" ?")
        if shape.as_of is None:
            shape.back_when = shape.event_clause
    shape.says_now = bool(_NOW.search(question))
    shape.wants_current = shape.as_of is None and shape.before_event_verb is None and shape.back_when is None
    if (shape.as_of is not None or shape.event_clause) and shape.plan == "factual":
        shape.plan = "temporal"
    return shape
