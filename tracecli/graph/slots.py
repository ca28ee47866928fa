"""Generic typed slots: a facet cue word plus a value of the facet's kind in the same sentence.

The specific patterns of `extract.RULES` are precise but miss the many ways
people state a fact in chat ("still out in <town>", "<employer> is quiet this week",
"climbing four nights a week", "knitting and salsa."). This layer reads a sentence for cue words of each facet and takes a
value of the right kind from the sentence itself: a place or organisation from
spaCy's entities or capitalised runs, a date from `dates.find_dates`, a word
from a lexicon (diets, drinks, sports, cars, instruments), a short list for
hobbies. Confidence is lower than a specific pattern's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from tracecli.graph import facets as F
from tracecli.graph.dates import find_dates, format_date


def _alt(words: Sequence[str]) -> str:
    return "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))


_TRIP = re.compile(r"\b(trip to|holiday (?:in|to)|vacation (?:in|to)|honeymoon (?:in|to)|flights? to|fly(?:ing)? (?:out )?to|flew to|"
                   r"travel\w* to|visit(?:ing)?|getaway to|tour of|backpacking (?:in|around|through)|cruise to|heading to|"
                   r"off to|going to|we[’']re doing|booked)\b", re.I)
_RESIDENCE = re.compile(r"\b(live|lives|living|lived|(?:my|our|new|student)\s+(?:\w+\s+)?(?:flat|apartment|house|halls|place|digs)|the\s+\w+\s+(?:flat|apartment|house)|"
                        r"(?<!back )home (?:in|is)|neighbou?rhood|rent|lease|landlord|keys|unpack\w*|moved (?:to|into|across|in)|"
                        r"based (?:in|out of)|settled (?:in|into)|still (?:in|out in)|out in)\b", re.I)
_MOVE_PLAN = re.compile(r"\b(moving (?:\w+ )?(?:to|there)|move (?:\w+ )?to|relocat\w+ to|transferr\w+ (?:me|us)? ?to|sending (?:me|us) to|settle (?:down )?in|emigrat\w+ to)\b", re.I)
_EMPLOY = re.compile(r"\b(work|working|worked|job|office|boss|manager|team|colleagues?|hired|joined|role|"
                     r"position|promot\w+|shifts?|contract|employer|company|firm|payroll|interns?\w*|first (?:day|week|month)|"
                     r"clients?|salary|pay rise|raise|transferr\w+|start(?:ed|ing)? at|crew|"
                     r"on the \w+ team|at work|deadline at|canteen|"
                     r"payday|at work)\b", re.I)
_NOT_EMPLOY = re.compile(r"\b(interview\w*|applied|applying|nearly|almost|turned (?:it |them )?down|"
                         r"customer|client of|bank account|shopping|bought|visit\w*)\b", re.I)
_LEAVE = re.compile(r"\b(quit|left|leaving|resign\w*|handed in (?:my|our) notice|fired|laid off|made redundant|"
                    r"no longer (?:at|with|working))\b", re.I)
_SPORT_CUE = re.compile(r"\b(play|plays|playing|practice|training|train|league|club|team|match|matches|session|"
                        r"nights? a week|times a week|twice a week|once a week|a week now|every (?:morning|evening|week|\w+day)|took up|taken up|started|"
                        r"joined|got into|hooked|obsessed|season|coach|lessons?|on (?:mon|tues|wednes|thurs|fri|satur|sun)days)\b", re.I)
_DRINK_CUE = re.compile(r"\b(for me|my usual|usual|order|ordering|drink|drinking|forever|always|every (?:morning|day)|"
                        r"now|these days|switched|hooked|obsessed|addicted|living on|go-to|cup of|glass of|round|one|religiously|habit|"
                        r"to wake up|then an?)\b", re.I)
_HOBBY_CUE = re.compile(r"\b(free time|spare time|evenings?|weekends?|my week|for fun|these days|my life|hobb\w+|"
                        r"switch off|unwind|relax|that's me|that[’']s me|that[’']s my|that's my|keeps? me sane|now|for me|"
                        r"as always|every week|mostly)\b", re.I)
_HOBBY_Q = re.compile(r"\b(free time|spare time|for fun|hobb\w+|weekends?|evenings|up to|doing these days|keeping you busy|"
                      r"filling|unwind)\b", re.I)
_PARTNER_ROLE = r"(?:boyfriend|girlfriend|partner|husband|wife|fianc[eé]e?|other half)"
_STUDY_CUE = re.compile(r"\b(stud(?:y|ying|ied|ies)|degree|master'?s|masters|msc|mba|ma|ba|bsc|phd|doctorate|course|"
                        r"certificate|diploma|bootcamp|modules?|major|thesis|dissertation|uni|university|college|"
                        r"class(?:es)?|programme|program)\b", re.I)
_DEGREE = r"(?:master'?s|masters|msc|mba|ma|ba|bsc|phd|doctorate|degree|course|certificate|certification|diploma|bootcamp|programme|program|exams|qualification)"
_DATE_EVENT_ALIASES = {"gig": "concert", "show": "concert", "tickets": "concert", "vacation": "holiday", "flight": "trip",
                       "flights": "trip", "defense": "defence", "operation": "surgery", "viva": "viva", "test": "test"}
_EVENTS = tuple(F.EVENT_NOUNS) + ("driving test", "test", "viva", "tickets", "defence", "thesis defence", "exam",
                                  "party", "launch party", "opening night", "audition", "recital", "birthday")
_EVENT_RE = re.compile(r"\b(" + _alt(_EVENTS) + r")\b", re.I)
_QUALIFIERS = r"spring|summer|autumn|fall|winter|christmas|easter|school|work|office|leaving|engagement|farewell|end-of-year|final|first"
_DATE_CHANGE = re.compile(r"\b(moved|moving|pushed|postponed|rescheduled|rebooked|changed|shifted|bumped|brought forward|"
                          r"delayed|now|again|instead|new date)\b", re.I)
_CAR = re.compile(r"\b(?:(" + F.CAR_MAKES_RE + r")\s+)?(" + _alt(F.CAR_MODELS) + r")\b")
_CAR_MAKE_ONLY = re.compile(r"\b(?:an?|the|my|our|new|old)\s+(?:new\s+|old\s+|used\s+|second-hand\s+)?((?:" + F.CAR_MAKES_RE + r")(?:\s+(?:estate|hatchback|saloon|SUV|van|convertible|wagon))?)\b")
_NOT_VALUE = frozenset(
    "I We You He She They It The A An My Our This That There Here Monday Tuesday Wednesday Thursday Friday Saturday "
    "Sunday January February March April May June July August September October November December Christmas Easter "
    "Spring Summer Autumn Winter Next Last Mum Mom Dad Also So And But Oh Still Just Anyway Honestly Okay Ok Yes No "
    "Well Big Small Good Bad Great Thanks Sorry Lol Haha Wow Nice Cool Ha Hey Hi Hello Guess Remember Sure Fancy "
    "Bless Congrats Congratulations New Old Finally Officially Scratch Forget Changed Instead Q1 Q2 Q3 Q4 UK US USA EU "
    "App Wifi Google Instagram Netflix Spotify Whatsapp WhatsApp Airbnb Uber Amazon".split()
)
_TWO_DRINKS = re.compile(r"(?i)\b(" + _alt(F.COFFEES) + r")\s+for me\b.*?\b(?:an?\s+)?(" + _alt(F.COFFEES) + r")\s+for you\b")
_CAPRUN = re.compile(r"(?<![\w'’])(?:the\s+)?[A-Z][\w'’\-]*(?:\s+(?:of|de|da|del|la|le|upon|on|am|and|&)\s+[A-Z][\w'’\-]*|\s+[A-Z][\w'’\-]*){0,3}")


def _caps(text: str, sentence_start_ok: bool = False) -> list[tuple[str, int]]:
    """Capitalised runs that could be names of places, organisations or people."""
    out = []
    for m in _CAPRUN.finditer(text):
        run = m.group(0)
        words = run.split()
        while words and (words[0] in _NOT_VALUE or words[0].lower() == "the"):
            words = words[1:]
        while words and words[-1] in _NOT_VALUE:
            words = words[:-1]
        if not words:
            continue
        start = m.start() + run.find(words[0])
        if start == 0 and not sentence_start_ok and len(words) == 1:
            continue
        out.append((" ".join(words), start))
    return out


def _ents(sent: Any, labels: tuple[str, ...]) -> list[tuple[str, int]]:
    base = sent.start_char
    out = []
    for e in sent.ents:
        if e.label_ in labels:
            text = re.sub(r"^(?:the|The)\s+", "", e.text).strip(" ,.!?")
            if text and text.split()[0] not in _NOT_VALUE:
                out.append((text, e.start_char - base))
    return out


def places(sent: Any, text: str, participants: Sequence[str]) -> list[tuple[str, int]]:
    """Places in the sentence: known place names (gazetteer), spaCy GPE/LOC/FAC, capitalised runs after in/to."""
    from tracecli.graph.gazetteer import is_place

    people = set(participants)
    found: list[tuple[str, int]] = []
    for v, p in _caps(text, sentence_start_ok=True):
        words = v.split()
        for n in range(len(words), 0, -1):  # longest known prefix: "Scottish Highlands", "Manchester"
            cand = " ".join(words[:n])
            if is_place(cand):
                found.append((cand, p))
                break
    ner_people = {e.text for e in sent.ents if e.label_ == "PERSON"}
    for v, p in _ents(sent, ("GPE", "LOC", "FAC")):
        if not any(v in f or f in v for f, _ in found):
            found.append((v, p))
    for m in re.finditer(r"\b(?:in|to|near|out in|across|around)\s+((?:the\s+)?[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*){0,2})", text):
        cand = re.sub(r"^the\s+", "", m.group(1))
        if cand.split()[0] not in _NOT_VALUE and cand not in ner_people and not any(cand in f or f in cand for f, _ in found):
            found.append((cand, m.start(1)))
    return [(v, p) for v, p in found if v not in people and not find_dates(v, None)]


def orgs(sent: Any, text: str, participants: Sequence[str]) -> list[tuple[str, int]]:
    from tracecli.graph.gazetteer import is_place

    people = {e.text for e in sent.ents if e.label_ == "PERSON"} | set(participants)
    gpe = {e.text for e in sent.ents if e.label_ in ("GPE", "LOC")}
    found = [(v, p) for v, p in _ents(sent, ("ORG",)) if v not in people and not is_place(v)]
    for v, p in _caps(text, sentence_start_ok=True):
        if v in people or v in gpe or is_place(v) or any(v in f or f in v for f, _ in found):
            continue
        multi = len(v.split()) >= 2
        after_at = bool(re.search(r"\b(?:at|for|with|joined|join)\s+(?:the\s+)?$", text[:p]))
        if multi or after_at or re.match(r"\s+(?:is|are|has|had|promoted|offered|hired|transferr\w+|owns)\b", text[p + len(v):]):
            found.append((v, p))
    m = re.search(r"\bwork\w*\b[^.!?]{0,40}?\bat the ([a-z]+(?: [a-z]+){0,2})\b", text)
    if m:
        found.append((m.group(1), m.start(1)))
    return found


@lru_cache(maxsize=64)
def _lexicon_re(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"(?i)\b(" + _alt(words) + r")\b")


def lexicon(text: str, words: Sequence[str]) -> list[tuple[str, int]]:
    return [(m.group(1), m.start(1)) for m in _lexicon_re(tuple(words)).finditer(text)]


def hobby_list(text: str) -> tuple[str, int] | None:
    """'Knitting and salsa', 'pottery, hiking and painting', 'chess and sourdough' (2–4 short items)."""
    item = r"[A-Za-z][a-z\-]+(?: [a-z\-]+)?"
    m = re.search(rf"(?:^|\b(?i:it[’']s|is|are|love|enjoy|like|into|doing)\s+|:\s*)({item}(?:, {item}){{0,2}},? (?:and|&) {item})\b", text)
    if not m:
        return None
    value = m.group(1)
    words = re.split(r",\s*|\s+(?:and|&)\s+", value)
    if any(w.lower() in ("i", "me", "you", "we", "the", "a") or len(w) < 3 for w in words):
        return None
    return value, m.start(1)


def nearest(cands: list[tuple[str, int]], pos: int) -> str | None:
    if not cands:
        return None
    return min(cands, key=lambda c: (abs(c[1] - pos), c[1]))[0]


def slot_hits(sent: Any, text: str, *, subject: str, speaker: str, other: str | None, participants: Sequence[str],
              base: Any, prev_text: str, prev_other_question: str, last_event_noun: str | None,
              known: Sequence[Any], prev_text_other: str = "") -> list[dict[str, Any]]:
    """Facet hits of this sentence from cue words and typed values (see module doc)."""
    hits: list[dict[str, Any]] = []
    low = text.lower()

    def add(facet: str, value: str | None, kind: str, conf: float, etype: str, negated: bool = False) -> None:
        if value:
            hits.append(dict(subject=subject, facet=facet, value=value, kind=kind, confidence=conf,
                             event_type=etype, negated=negated))

    # places: where someone lives / is moving / travels to
    pl = places(sent, text, participants)
    if pl:
        cue = _RESIDENCE.search(text)
        plan = _MOVE_PLAN.search(text)
        trip = _TRIP.search(text)
        from tracecli.graph.gazetteer import is_place

        employer_like = {v for v, _ in _ents(sent, ("ORG",)) if not is_place(v)}
        pl = [(v, p) for v, p in pl if v not in employer_like]
        after = lambda m: [(v, p) for v, p in pl if 0 <= p - m.end() <= 30]  # noqa: E731 - value right after the cue
        if plan and not re.search(r"\bmoved\b", low) and after(plan):
            add("moving_to", nearest(after(plan), plan.end()), "place", 0.75, "plan")
        elif cue and not re.search(r"\b(went back|go back|visit\w*|for the weekend|for \w+[’']s birthday|on holiday|trip)\b", low) and not (trip and not re.search(r"\b(live|living|flat|apartment|house|keys|moved|home)\b", low)):
            verb = re.match(r"(?i)(live|living|lived|moved|based|settled|still|out)", cue.group(0))
            cands = after(cue) if verb else pl
            if cands:
                add("residence", nearest(cands, cue.start()), "place", 0.7, "state_change")
        elif trip and after(trip) and re.search(r"\b(i|i[’']m|i[’']ll|we|we[’']re|we[’']ll|my|our)\b", low) and not re.search(r"\b(back from|got back|came back|returned|from)\b", low[: trip.start()]):
            add("trip_destination", nearest(after(trip), trip.end()), "place", 0.65, "plan")
    hm = re.search(r"([A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)?)\s+(?i:is\s+(?:now\s+)?(?:my\s+|our\s+)?home(?:\s+now)?)\b", text)
    if hm and hm.group(1).split()[0] not in _NOT_VALUE:
        add("residence", hm.group(1), "place", 0.8, "state_change")
    # employer
    emp = _EMPLOY.search(text)
    if emp and not _NOT_EMPLOY.search(text):
        og = orgs(sent, text, participants)
        if og:
            value = nearest(og, emp.start())
            leave = _LEAVE.search(text)
            add("employer", value, "org", 0.7, "state_change", negated=bool(leave and leave.start() < text.find(value or "") ))
    # dates of planned events
    em = _EVENT_RE.search(text) or re.search(r"(?i)\b(?P<x>fly(?:ing)? (?:out )?to|flying out|leaving for|departing for|heading (?:out )?to)\b", text)
    dm = [d for d in find_dates(text, base, future=True)
          if d.granularity != "year" and not re.search(r"(?i)\b(ago|yesterday|today|tonight|tomorrow|last (?:week|month|year))\b", d.phrase)]
    third = em is not None and re.search(r"\b[A-Z][a-z]+[’']s\s+(?:\w+\s+)?$", text[: em.start()])
    ctx_cue = re.search(r"\b(moved (?:it|the \w+)?\s*(?:again,?\s*)?(?:to)?|pushed (?:it|the \w+)?\s*(?:back\s*)?(?:to)?|postponed(?: it)?(?: to| until)?|rescheduled(?: it)?(?: for| to)?|rebooked(?: it)?(?: for| to)?|it[’']s now|is now|now on|new date(?: is)?|picked a date|set a date|got a date|chose a date|fixed a date|booked it for|confirmed for)\b", low)
    near_cue = bool(ctx_cue and dm and 0 <= text.find(dm[0].phrase) - ctx_cue.end() <= 25)
    if dm and not third and (em or (last_event_noun and near_cue)):
        noun = (em.group(1).lower() if em.re is _EVENT_RE else "trip") if em else last_event_noun
        if em is not None and em.re is _EVENT_RE:
            q = re.search(r"(?i)\b(" + _QUALIFIERS + r")\s+$", text[: em.start()])
            if q:
                noun = f"{q.group(1).lower()} {noun}"
        noun = _DATE_EVENT_ALIASES.get(noun or "", noun)
        if noun and noun not in ("start date", "deadline", "meeting", "game", "match", "shoot"):
            d = dm[0]
            add(F.date_facet(noun), format_date(d.date, d.granularity if d.granularity != "week" else "day"), "date", 0.7, "plan")
    # lexicon facets
    diets = [(v, p) for v, p in lexicon(text, list(F.DIETS))
             if p == 0 or re.search(r"(?i)\b(i[’']?m|i am|we[’']re|we are|being|been|went|gone|go|going|turned|stay\w*|switched to|as an?|fully|strictly|mostly|now|so|totally|properly|becoming|became)\s+(?:\w+\s+)?$", text[:p])
             or re.match(r"(?i)\s+(now|since|these days|again|for (?:a|the))\b", text[p + len(v):])]
    for value, pos in diets:
        negated = bool(re.search(r"\b(not|no longer|never|stopped being|gave up being)\s+(?:\w+\s+){0,2}$", low[:pos]))
        add("diet", F.DIETS.get(value.lower(), value.lower()), "thing", 0.7, "preference", negated)
    drinks = lexicon(text, F.COFFEES)
    if drinks:
        two = _TWO_DRINKS.search(text)
        if two and other:
            add("coffee", two.group(1), "thing", 0.75, "preference")
            hits.append(dict(subject=other, facet="coffee", value=two.group(2), kind="thing", confidence=0.6,
                             event_type="preference", negated=False))
        elif _DRINK_CUE.search(text) or text.lower().startswith(drinks[0][0].lower()):
            value, pos = drinks[0]
            negated = bool(re.search(r"\b(cancel|no more|not|gave up|given up|quit)\b[^.]{0,20}$", low[:pos]))
            add("coffee", value, "thing", 0.65, "preference", negated)
    sports = lexicon(text, F.SPORTS)
    if hobby_list(text):
        sports = []
    if sports and (_SPORT_CUE.search(text) or (text.lower().startswith(sports[0][0].lower())
                                               and re.search(r"\b(my|me|i|we|our)\b", low))):
        value, pos = sports[-1] if re.search(r"\b(instead|switched|swapped|now)\b", low) else sports[0]
        negated = bool(re.search(r"\b(quit|stopped|gave up|given up|no longer|not|don[’']t|no more)\b[^.]{0,25}$", low[:pos]))
        add("sport", value.lower(), "thing", 0.6, "preference", negated)
    instruments = lexicon(text, F.INSTRUMENTS)
    if instruments and re.search(r"\b(play|playing|lessons?|practi[cs]e|solo|orchestra|band|learning|recital)\b", low):
        add("instrument", instruments[0][0].lower(), "thing", 0.65, "preference")
    m = _CAR.search(text)
    if m and re.search(r"\b(car|drive|driving|drove|bought|got|sold|picked up|dealer|the|my|our|a|an)\b", low):
        value = " ".join(x for x in m.groups() if x)
        add("car", value, "thing", 0.65, "state_change")
    elif (mm := _CAR_MAKE_ONLY.search(text)) and re.search(r"\b(car|drive|driving|bought|sold|dealer|picked up)\b", low):
        add("car", mm.group(1), "thing", 0.6, "state_change")
    # hobbies
    hl = hobby_list(text)
    if hl and (_HOBBY_CUE.search(text) or (prev_other_question and _HOBBY_Q.search(prev_other_question))):
        add("hobbies", hl[0], "list", 0.65, "preference")
    # partner / relationship
    pm = re.search(rf"(?i:\bmy\s+(?:new\s+)?({_PARTNER_ROLE}))\s*,?\s*([A-Z][a-z]+)", text)
    if pm:
        add("partner", f"{pm.group(1).lower()} {pm.group(2)}", "name", 0.7, "state_change")
    else:
        pm = re.search(r"(?i:\b(?:seeing|dating|going out with|together with|with)\s+)([A-Z][a-z]+)(?i:\s+now\b|\s+since\b|\s*,?\s+(?:she|he)[’']s\b)", text)
        if pm and pm.group(1) not in participants:
            add("partner", pm.group(1), "name", 0.65, "state_change")
    if re.search(r"\b(?:still single|single again|i[’']m single|am single|single now|(?:split|broke) up)\b", low):
        add("partner", "single", "thing", 0.7, "state_change")
    elif re.search(r"\bno longer with ([A-Z][a-z]+)|\bnot with ([A-Z][a-z]+) anymore", text):
        pass  # handled as a retraction of the named partner by the caller's RETRACTIONS
    # study
    sm = re.search(rf"(?i:\b(?:{_DEGREE})\s+in\s+)([a-zA-Z][a-z\-]+(?:\s+[a-z\-]+){{0,2}})", text) or \
        re.search(rf"(?i:\b(?:my|the|a|an)\s+(?:part-time\s+|online\s+|first-year\s+)?)([a-zA-Z][a-zA-Z\-]+(?:\s+[a-zA-Z][a-z\-]+){{0,2}}?\s+(?i:certificate|certification|diploma|bootcamp|mba|msc|phd|masters|course))\b", text) or \
        re.search(rf"(?i:\b(?:my|the|a|an)\s+(?:part-time\s+|online\s+|first-year\s+)?)([a-zA-Z][a-zA-Z\-]+(?:\s+[a-zA-Z][a-z\-]+){{0,2}}?)\s+(?i:{_DEGREE})\b", text)
    if sm and _STUDY_CUE.search(text):
        value = sm.group(1)
        if value.split()[0].lower() not in ("whole", "entire", "new", "first", "second", "last", "same", "my", "the", "old", "this", "that", "next"):
            add("study", value, "thing", 0.6, "state_change")
    # a reaction to what the other person just said ("Vegan! Brave.") is not a statement about oneself
    if prev_text_other and not re.search(r"\b(i|i[’']m|i[’']ve|my|me|we|our)\b", low) and (
            len(text.split()) <= 4 or text.rstrip().endswith(("!", "?"))):
        hits = [h for h in hits if h["value"].lower() not in prev_text_other.lower()]
    return hits
