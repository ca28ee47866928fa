"""The statement patterns of the offline extractor: facet rules, substitutions, retractions, cue words.

Split from `tracecli.graph.extract` (which applies them sentence by sentence). `_scan` runs every pattern
over a sentence once and caches the matches by text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from tracecli.graph import facets as F


SUBJ = r"(?P<subj>\b(?:I|[Ww]e|[Yy]ou|[A-Z][a-z]+(?: and I)?)\b)"
_CI = lambda s: f"(?i:{s})"  # noqa: E731 - case-insensitive trigger, case-sensitive value

CAR_MAKES = F.CAR_MAKES_RE
#: a car named by its make, the whole word ("MG4", not "MG" inside it), and up to two model words after it
_CAR_VALUE = r"(?P<value>(?:" + CAR_MAKES + r")(?:\d[\w\-]*)?\b(?:\s+[A-Z0-9][\w\-]+){0,2})"



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
    # a cheap pattern that every match of `regex` contains (a mandatory part of it, same flags): a text
    # without it is not scanned with the costly one
    needs: re.Pattern[str] | None = None


def _r(facet: Any, pattern: str, kind: str, confidence: float = 0.8, event_type: str | None = None,
       negated: bool = False, subject_from: str = "subj", needs: str | None = None) -> Rule:
    return Rule(facet, re.compile(pattern), kind, confidence, event_type, negated, subject_from,
                re.compile(needs) if needs else None)


def _alt(words: Any) -> str:
    return "|".join(sorted((re.escape(w) for w in words), key=len, reverse=True))


_SPECIES_ALT = _alt(F.SPECIES)
_DIET_ALT = _alt(F.DIETS)
_COFFEE_ALT = _alt(F.COFFEES)
_SPORT_ALT = _alt(F.SPORTS)
_EVENT_ALT = _alt(F.EVENT_NOUNS)
_INSTRUMENT_ALT = _alt(F.INSTRUMENTS)
_RELATIVE_ALT = _alt(F.RELATIVES)
CAP, NAME, PHRASE = F.CAP, F.NAME, F.PHRASE
_S = SUBJ + _CI(F.AUX) + r"\s+" + _CI(F.MODAL)
_PLACE_NOUN = r"(?:place|apartment|flat|house|home|digs|condo|studio)"
_MOVE_PLAN = _CI(r"move|moving|relocate|relocating|settle|settling|emigrate|emigrating|heading")
_LIVE = _CI(r"live|living|lived|based|settled|moved|relocated|stay(?:ed|ing)? home|landed|ended up|now live|now living|emigrated")
_PREP = _CI(r"(?:(?:down|back|over|out|up|permanently|full[- ]time|for good)\s+)*(?:in|to|into|near)")
_DATE_TAIL = r"(?P<tail>.{1,60})"
_LIST = (r"(?P<value>[A-Za-z][\w\-]*(?: [a-z][\w\-]*)?(?:, (?:and )?[a-z][\w\-]*(?: [a-z][\w\-]*)?)*,? (?:and|&) "
         r"[a-z][\w\-]*(?: [a-z][\w\-]*)?)(?=\s*[.,!?;]|\s+(?:mostly|these days|now|at the moment|lately)\b|\s+(?:and|but|so|because)\s+(?:I|we|i)\b|\s*$)")
_SPECIES_G = r"(?P<species>" + _SPECIES_ALT + r")"
# the last species word (in lexicon order) a sentence names; the combined pattern only says whether there is one
_SPECIES_WORDS = [(re.compile(rf"\b{re.escape(w)}s?\b"), species) for w, species in F.SPECIES.items()]
_ANY_SPECIES = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in F.SPECIES) + r")s?\b")
_EVENT_G = r"(?P<event>" + _EVENT_ALT + r")"


def _pet(m: re.Match[str]) -> str:
    return F.pet_facet(m.group("species")) if m.group("species") else "pet_name:?"


def _date_of(m: re.Match[str]) -> str:
    return F.date_facet(m.group("event"))


RULES: list[Rule] = [
    # where someone lives now (state) ...
    _r("residence", _S + _LIVE + r"\s+" + _PREP + r"\s+" + CAP, "place", 0.85, "state_change"),
    _r("residence", _CI(r"(?:new|our|my|own)\s+(?:own\s+)?" + _PLACE_NOUN + r"\s+(?:in|at|near)") + r"\s+" + CAP, "place", 0.85, "state_change", subject_from="speaker"),
    _r("residence", _CI(r"(?:keys to|moved into|moving into|settled into)\s+(?:our|my|the)\s+(?:new\s+)?" + _PLACE_NOUN + r"\s+in") + r"\s+" + CAP, "place", 0.9, "state_change", subject_from="speaker"),
    _r("residence", _CI(r"\b(?:our|my|the|new)\s+") + CAP + r"\s+" + _CI(_PLACE_NOUN) + r"\b(?!\s+hunt)", "place", 0.7, "state_change", subject_from="speaker"),
    _r("residence", _CI(r"\bhome\s+(?:is|[’']s)\s+(?:now\s+)?") + CAP, "place", 0.8, subject_from="speaker"),
    # ... and where they plan to move
    _r("moving_to", _S + _MOVE_PLAN + r"\s+" + _PREP + r"\s+" + CAP, "place", 0.85, "plan"),
    _r("moving_to", _CI(r"\b(?:the|our|my)\s+move\s+to") + r"\s+" + CAP, "place", 0.75, "plan", subject_from="speaker"),
    _r("moving_to", _S + _MOVE_PLAN + r"\s+" + _CI(r"(?:(?:up|over|out|down|back)\s+)?there") + r"(?P<value>)", "there", 0.75, "plan"),
    # where someone is from
    _r("hometown", _CI(r"\b(?:back home in|grew up in|originally from|i[’']m from|i am from|born and raised in|my hometown(?:,| is)?|home town(?:,| is)?)") + r"\s+" + CAP, "place", 0.85, "state_change", subject_from="speaker"),
    # employer
    _r("employer", _S + _CI(r"work(?:ing|ed|s)?|start(?:ed|ing|s)?|join(?:ed|ing|s)?|employed|hired|interning|intern") + r"\s+" + _CI(r"(?:full[- ]time\s+|part[- ]time\s+|remotely\s+)?(?:at|for|with|by)") + r"\s+" + CAP, "org", 0.85, "state_change"),
    _r("employer", _S + _CI(r"joined|joining|join") + r"\s+" + CAP, "org", 0.8, "state_change"),
    _r("employer", _CI(r"(?:new\s+)?(?:job|role|position|internship|contract)\s+(?:at|with)") + r"\s+" + CAP, "org", 0.8, "state_change", subject_from="speaker"),
    _r("employer", _CI(r"\b(?:\w+\s+)?(?:years?|months?)\s+(?:at|with|working for)") + r"\s+" + CAP, "org", 0.75, "state_change", subject_from="speaker"),
    _r("employer", _CI(r"\b(?:first|1st|second|last)\s+(?:day|week|month)\s+(?:at|with)") + r"\s+" + CAP, "org", 0.85, "state_change", subject_from="speaker"),
    _r("employer", CAP + r"\s+" + _CI(r"(?:offered me|hired me|took me on|gave me)\s+(?:a|an|the)?"), "org", 0.75, "state_change", subject_from="speaker"),
    _r("employer", _CI(r"(?:accepted|took|signed|took up)\s+(?:the|their|an?)\s+(?:job|offer|position|role)\s+(?:at|with|from)") + r"\s+" + CAP, "org", 0.85, "state_change", subject_from="speaker"),
    _r("employer", _CI(r"(?:handed in|gave|put in|handing in)\s+(?:my|our)\s+notice\s+(?:at|to)|quit(?:ting)?\s+(?:my job at\s+)?|resign(?:ed|ing)?\s+from|left my job at|leaving my job at") + r"\s*" + CAP, "org", 0.85, "state_change", negated=True, subject_from="speaker"),
    # occupation
    _r("employer", _S + _CI(r"work(?:ing|ed|s)?\s+as|train(?:ing|ed)?\s+(?:to be|as)|qualified as") + r"\s+" + _CI(r"an?\s+") + PHRASE, "thing", 0.75, "state_change"),
    # study
    _r("study", _S + _CI(r"stud(?:y|ying|ied|ies)|major(?:ing|ed)? in|enrolled in|enrolling in|retraining in") + r"\s+" + _CI(r"(?:an?\s+)?(?:online\s+)?(?:course\s+in\s+)?") + PHRASE, "thing", 0.75, "state_change"),
    _r("study", _CI(r"\b(?:enrolled|enrolling|signed up|signing up)\s+(?:in|for|on)\s+(?:an?\s+|the\s+)?(?:online\s+)?(?:course\s+in\s+)?") + PHRASE, "thing", 0.75, "state_change", subject_from="speaker"),
    _r("study", _CI(r"(?:online\s+|evening\s+|part[- ]time\s+|night\s+)?(?:course|degree|masters?|msc|ma|phd|diploma|bootcamp|certificate|certification|programme|program|classes)\s+in") + r"\s+" + PHRASE, "thing", 0.8, "state_change", subject_from="speaker"),
    _r("study", _CI(r"\b(?:my|an?)\s+") + r"(?P<value>(?!whole\b|entire\b|new\b|first\b|online\b)[a-z][a-z\-]+(?:\s+[a-z][a-z\-]+){0,2})\s+(?:MSc|MA|BSc|PhD|degree|masters|diploma|bootcamp)\b", "thing", 0.7, "state_change", subject_from="speaker"),
    # pets
    _r(_pet, _CI(r"(?:my|our|the|his|her|their)\s+(?:new\s+|little\s+|old\s+|\w+\s+)?" + _SPECIES_G + r"(?:[’']s name)?\s+(?:is\s+)?(?:named|called|is called|is named|name is|is)") + r"\s+" + NAME, "name", 0.85, subject_from="speaker"),
    _r(_pet, _CI(r"(?:a|an)\s+(?:new\s+)?(?:\w+\s+)?" + _SPECIES_G + r"\s+(?:named|called)") + r"\s+" + NAME, "name", 0.85, "state_change", subject_from="speaker"),
    _r(_pet, _CI(r"(?:my|our)\s+(?:\w+\s+)?" + _SPECIES_G + r",?") + r"\s+" + NAME + r"\b", "name", 0.8, subject_from="speaker"),
    _r(_pet, NAME + r"\s+\(" + _CI(r"(?:my|our)\s+(?:[\w\-]+\s+){0,2}" + _SPECIES_G) + r"\)", "name", 0.85, subject_from="speaker"),
    _r(_pet, NAME + r",\s+" + _CI(r"(?:my|our)\s+(?:[\w\-]+\s+){0,2}" + _SPECIES_G) + r"\b", "name", 0.8, subject_from="speaker"),
    _r(_pet, NAME + r"\s+" + _CI(r"the\s+" + _SPECIES_G) + r"\b", "name", 0.75, subject_from="speaker"),
    _r(_pet, NAME + r"\s+" + _CI(r"is\s+(?:a|an|my|our)\s+(?:[\w\-]+\s+){0,2}" + _SPECIES_G) + r"\b", "name", 0.75, subject_from="speaker"),
    _r(_pet, _CI(r"\bthe\s+" + _SPECIES_G + r"\s+is\s+(?:now\s+)?(?:called\s+)?") + r"(?P<value>[A-Z][a-zA-Z'’\-]+(?:\s+[A-Z][a-zA-Z'’\-]+)?)\s+" + _CI(r"now"), "name", 0.85, "state_change", subject_from="speaker"),
    _r(_pet, _CI(r"renam(?:ed|ing|e)\s+(?:her|him|it|them|(?:the|our|my)\s+" + _SPECIES_G + r")\s+(?:to\s+)?") + NAME, "name", 0.9, "state_change", subject_from="speaker"),
    _r("pet_name:?", _CI(r"(?:her|his|its)\s+name\s+is|(?:we|i)\s+(?:named|called)\s+(?:her|him|it)|(?:she|he|it)[’']?s\s+called|(?:she|he|it)\s+is\s+called") + r"\s+" + NAME, "name", 0.85, "state_change", subject_from="speaker"),
    # family members
    _r(lambda m: F.family_facet(m.group("rel")), _CI(r"\b(?:my|our)\s+(?:little\s+|big\s+|older\s+|younger\s+|baby\s+|twin\s+)?(?P<rel>" + _RELATIVE_ALT + r")") + r",?\s+" + NAME, "name", 0.85, subject_from="speaker"),
    # instrument
    _r("instrument", _S + _CI(r"(?:play|playing|played|learning|learn|practi[cs]e|practi[cs]ing|took up|started)\s+(?:the\s+)?(?P<value>" + _INSTRUMENT_ALT + r")") + r"\b", "thing", 0.85, "preference"),
    _r("instrument", _CI(r"\b(?:my|our|i[’']ve got an?|i have an?|got an?)\s+(?P<value>" + _INSTRUMENT_ALT + r")\s+(?:lessons?|teacher|practice|recital|exam|solo|part|audition)"), "thing", 0.75, "preference", subject_from="speaker"),
    # diet
    _r("diet", _S + _CI(r"(?:(?:gone|went|going|go|turned|become|became|being|stay(?:ing)?|been|trying|try)\s+)?(?:to\s+be\s+)?(?:fully\s+|strictly\s+|mostly\s+|completely\s+|a\s+|an\s+)?(?P<value>" + _DIET_ALT + r")") + r"\b", "thing", 0.85, "preference"),
    _r("diet", _CI(r"(?:being|as an?|switched to(?: being)?|switching to(?: being)?|went|gone)\s+(?:fully\s+|strictly\s+)?(?P<value>" + _DIET_ALT + r")") + r"\b", "thing", 0.75, "preference", subject_from="speaker"),
    _r("diet", _CI(r"(?P<value>eating meat again|back on meat|started eating meat|eat meat again)"), "thing", 0.8, "preference", subject_from="speaker"),
    # usual coffee / drink
    _r("coffee", _CI(r"(?P<value>" + _COFFEE_ALT + r")\s+(?:for me|is my (?:go-to|usual|thing|order|drink)|all the way|every time|always|these days)"), "thing", 0.8, "preference", subject_from="speaker",
       needs=_CI(r"\s+(?:for me|is my (?:go-to|usual|thing|order|drink)|all the way|every time|always|these days)")),
    _r("coffee", _CI(r"(?:my\s+)?(?:usual|go-to|order|drink|coffee)\s+(?:is|[’']s)\s+(?:now\s+|still\s+)?(?:an?\s+)?(?P<value>" + _COFFEE_ALT + r")"), "thing", 0.85, "preference", subject_from="speaker"),
    _r("coffee", _S + _CI(r"(?:drink|drinking|order|ordering|get|getting|switched to|switching to|moved on to|into|hooked on|obsessed with|addicted to|having|living on|converted to|stick to|sticking to|stick with)\s+(?:an?\s+|the\s+|my\s+)?(?:\w+\s+)??(?P<value>" + _COFFEE_ALT + r")"), "thing", 0.8, "preference"),
    _r("coffee", _CI(r"\b(?:it[’']s|its)\s+(?:an?\s+)?(?P<value>" + _COFFEE_ALT + r")\s+(?:every|each)\s+(?:morning|day)"), "thing", 0.8, "preference", subject_from="speaker"),
    _r("coffee", r"^" + _CI(r"(?P<value>" + _COFFEE_ALT + r")") + r"[,!.]", "thing", 0.65, "preference", subject_from="speaker"),
    # sport
    _r("sport", _S + _CI(r"(?:play|playing|played|do|doing|took up|taken up|taking up|started|start|starting|got into|getting into|joined|signed up for|into|obsessed with|switched to|switching to|moved to|picked up)\s+(?:some\s+|a\s+|the\s+)?(?P<value>" + _SPORT_ALT + r")") + r"\b", "thing", 0.75, "preference"),
    _r("sport", _CI(r"(?:i[’']ve got|i have|got|i[’']ve)\s+(?P<value>" + _SPORT_ALT + r")\s+(?:tonight|tomorrow|later|practice|training|club|league|lessons?|this evening|on \w+day)"), "thing", 0.75, "preference", subject_from="speaker"),
    _r("sport", _CI(r"(?:my|our|joined an?|joining an?|signed up for an?)\s+(?:local\s+)?(?P<value>" + _SPORT_ALT + r")\s+(?:league|club|team|lessons?|sessions?|coach|partner|games?|matches|group)"), "thing", 0.75, "preference", subject_from="speaker"),
    _r("sport", _S + _CI(r"(?:sticking with|stick with|stuck with|staying with|back to|into|loving|love)\s+(?P<value>" + _SPORT_ALT + r")") + r"\b", "thing", 0.8, "preference"),
    _r("sport", _CI(r"\b(?:a|an)\s+(?:keen\s+|proper\s+|real\s+)?(?P<value>swimmer|runner|cyclist|climber|boulderer|surfer|skier|golfer|rower|boxer|skater|dancer)\s+now\b"), "thing", 0.75, "preference", subject_from="speaker"),
    _r("sport", _CI(r"\bwho[’']s\s+(?:a|an)\s+(?P<value>swimmer|runner|cyclist|climber|boulderer|surfer|skier|golfer|rower|boxer|skater|dancer)\s+now\b"), "thing", 0.75, "preference", subject_from="speaker"),
    _r("sport", _CI(r"^no\s+(?P<value>" + _SPORT_ALT + r")\b"), "thing", 0.7, "preference", negated=True, subject_from="speaker"),
    # hobby lists ("I love pottery, hiking and painting")
    _r("hobbies", SUBJ + _CI(F.AUX) + r"\s+" + _CI(r"(?:also\s+|really\s+)?(?:love|enjoy|like|adore|am into|[’']m into|am really into|[’']m really into)") + r"\s+" + _LIST, "list", 0.8, "preference"),
    _r("hobbies", _CI(r"(?:my\s+)?(?:hobbies|hobby list|free time|spare time|weekends)\s+(?:are|is|now|these days|=|:)\s*(?:now\s+)?(?:mostly\s+|all about\s+)?") + _LIST, "list", 0.8, "preference", subject_from="speaker"),
    # partner / relationship
    _r("partner", _CI(r"(?:my|our)\s+(?:new\s+)?(?:boyfriend|girlfriend|partner|husband|wife|fianc[eé]e?)\s*(?:[,(]\s*)?") + NAME, "name", 0.75, "state_change", subject_from="speaker"),
    _r("partner", r"\(" + _CI(r"(?:boyfriend|girlfriend|partner|husband|wife|fianc[eé]e?)") + r"\s+" + NAME, "name", 0.75, "state_change", subject_from="speaker"),
    _r("partner", _S + _CI(r"(?:dating|seeing|engaged to|married to|marrying|going out with|moved in with)") + r"\s+" + NAME, "name", 0.8, "state_change"),
    _r("relationship", _S + _CI(r"(?:now\s+|officially\s+|finally\s+|just\s+got\s+|got\s+)?(?P<value>engaged|married|single|divorced|separated)") + r"\b", "thing", 0.85, "state_change"),
    # trips
    _r("trip_destination", _S + _CI(r"(?:booked|booking|book)\s+(?:a\s+|the\s+|our\s+|my\s+)?(?:\w+\s+)?(?:flights?|trip|tickets?|holiday|getaway|break)\s+(?:to|for|in)") + r"\s+" + CAP, "place", 0.8, "plan"),
    _r("trip_destination", _S + _CI(r"(?:booked|booking)") + r"\s+" + CAP, "place", 0.75, "plan"),
    _r("trip_destination", _S + _CI(r"(?:fly(?:ing)?|flew|travel(?:l?ing)?|heading|off|going)\s+(?:out\s+)?to") + r"\s+" + CAP + r"\s+" + _CI(r"(?:in|on|for|next|this|at the end|after)"), "place", 0.7, "plan"),
    _r("trip_destination", _CI(r"(?:trip|holiday|vacation|flights?|getaway|honeymoon)\s+(?:to|in)") + r"\s+" + CAP, "place", 0.75, "plan", subject_from="speaker"),
    _r("trip_destination", _S + _CI(r"(?:doing|going to|visiting|going with|chose|picked)") + r"\s+" + CAP + r"\s+" + _CI(r"instead"), "place", 0.8, "plan"),
    # dates of planned events
    _r(_date_of, _CI(r"(?:the|my|our|his|her|their)\s+" + _EVENT_G + r"\s+(?:date\s+)?(?:is|[’']s|was|will be|has been)?\s*(?:now\s+|officially\s+|still\s+)?(?:on|for|set for|moved to|pushed (?:back )?to|postponed to|rescheduled (?:for|to)|booked for|happening on|planned for|confirmed for)") + r"\s+" + _DATE_TAIL, "date", 0.85, "plan", subject_from="speaker"),
    _r(_date_of, _CI(r"(?:moved|moving|pushed|pushing|postponed|postponing|rescheduled|rescheduling|rebooked|rebooking|changed|shifted|bumped|brought)\s+(?:back\s+|forward\s+)?(?:the|my|our)\s+" + _EVENT_G + r"\s+(?:date\s+)?(?:back\s+|forward\s+)?(?:to|for|until|till)") + r"\s+" + _DATE_TAIL, "date", 0.9, "plan", subject_from="speaker"),
    _r(_date_of, _CI(r"set\s+(?:a|the|our)\s+" + _EVENT_G + r"\s+date") + r"[!:,.\s]*" + _DATE_TAIL, "date", 0.9, "plan", subject_from="speaker"),
    _r(_date_of, _CI(r"\bnew\s+" + _EVENT_G + r"\s+date\s+(?:is|[’']s)") + r"\s+" + _DATE_TAIL, "date", 0.9, "plan", subject_from="speaker"),
    _r("date:trip", _CI(r"(?:booked|rebooked|moved|changed|switched)\s+(?:the\s+|my\s+|our\s+)?(?:[\w’'\-]+\s+)?(?:flights?|tickets?|trip)\s+(?:\w+\s+){0,3}?(?:for|to)") + r"\s+" + _DATE_TAIL, "date", 0.85, "plan", subject_from="speaker"),
    _r("date:trip", _CI(r"\b(?:new\s+)?(?:departure|flight|travel|leaving)\s+date\s+(?:is|[’']s)") + r"\s+" + _DATE_TAIL, "date", 0.85, "plan", subject_from="speaker"),
    _r("date:trip", _CI(r"(?:leaving|departing|fly(?:ing)? out|flying out|we fly|i fly)\s+(?:on\s+)?") + _DATE_TAIL, "date", 0.7, "plan", subject_from="speaker"),
    _r("date:wedding", _CI(r"\b(?:getting married|get married|tying the knot)\b") + r"\s+" + _DATE_TAIL, "date", 0.8, "plan", subject_from="speaker"),
    _r(_date_of, _CI(r"\b" + _EVENT_G + r"\s+(?:is|[’']s)\s+(?:now\s+)?(?:on|for)") + r"\s+" + _DATE_TAIL, "date", 0.75, "plan", subject_from="speaker"),
    _r(_date_of, _CI(r"\b(?:aiming|planning|hoping|due|set|scheduled|going|ready|plan|hope)\s+to\s+(?P<event>launch|open|release|ship|go live|graduate|move|finish)\b(?:\s+[\w'’]+){0,3}?\s+(?:in|on|for|by|around)") + r"\s+" + _DATE_TAIL, "date", 0.8, "plan", subject_from="speaker"),
    _r(_date_of, _CI(r"\b(?:we|i|they|she|he)\s+(?P<event>launched|opened|released|graduated|moved|shipped|went live)\s+(?:on|in)") + r"\s+" + _DATE_TAIL, "date", 0.85, "state_change", subject_from="speaker"),
    _r("date:?", _CI(r"\b(?:aiming for|going for|targeting|now looking at|pushed to|pushed back to|moved to|slipped to|postponed to|now set for)") + r"\s+" + _DATE_TAIL, "date", 0.75, "plan", subject_from="speaker"),
    # venues
    _r(lambda m: F.venue_facet(m.group("event")), _CI(r"(?:the|our|my)\s+(?P<event>wedding|party|reception|ceremony|housewarming)\s+(?:is|[’']s|will be)\s+(?:now\s+)?(?:going to be\s+)?(?:at|in)") + r"\s+(?P<value>[^.,!?;]{3,60}?)(?=\s+(?:in the end|instead|now|then)\b|[.,!?;]|$)", "venue", 0.8, "plan", subject_from="speaker"),
    _r("venue:wedding", _CI(r"\b(?:it[’']s|it is|it[’']ll be|it will be)\s+(?:now\s+)?(?:going to be\s+)?at") + r"\s+(?P<value>[^.,!?;]{3,60}?)(?=\s+(?:in the end|instead|now|then)\b|[.,!?;]|$)", "venue", 0.75, "plan", subject_from="speaker"),
    _r("venue:wedding", _CI(r"\b(?:a\s+)?(?:small|big|tiny|quiet|little|low-key)\s+(?:thing|do|affair|ceremony|party)\s+at") + r"\s+(?P<value>[^.,!?;]{3,60}?)(?=[.,!?;]|$)", "venue", 0.7, "plan", subject_from="speaker"),
    # favourites
    _r(lambda m: F.favourite_facet(m.group("cat")), _CI(r"(?:my|our)\s+(?:all-time\s+|new\s+|absolute\s+)?favou?rite\s+(?P<cat>[a-z]+(?:\s+[a-z]+)?)\s+(?:is|are|has to be|would be|[’']s)\s+(?:now\s+|still\s+|probably\s+|definitely\s+)?") + r"(?P<value>[^.,!?;]{1,40})", "thing", 0.85, "preference", subject_from="speaker"),
    _r(lambda m: F.favourite_facet(m.group("cat")), CAP + r"\s+" + _CI(r"(?:is|are)\s+(?:still\s+|now\s+)?(?:my|our)\s+(?:all-time\s+|new\s+)?favou?rite\s+(?P<cat>[a-z]+)"), "thing", 0.85, "preference", subject_from="speaker"),
    _r(lambda m: F.favourite_facet(m.group("cat")), r"^" + _CI(r"(?:still|now|definitely|easily)?\s*(?:my|our)\s+(?:all-time\s+|new\s+)?favou?rite\s+(?P<cat>[a-z]+)") + r"(?P<value>)", "prev", 0.75, "preference", subject_from="speaker"),
    # cars
    _r("car", _S + _CI(r"(?:bought|buy|buying|get|getting|got|picked up|ended up with|ended up getting|drive|driving|leasing|leased|ordered|went for|going for)\s+(?:a|an|the|our|my)\s+(?:new\s+|used\s+|second-hand\s+|secondhand\s+|little\s+)?") + _CAR_VALUE, "thing", 0.8, "state_change"),
    _r("car", _CI(r"\b(?:a|an|the|our|my|new)\s+(?:new\s+|used\s+|second-hand\s+)?") + _CAR_VALUE, "thing", 0.65, "state_change", subject_from="speaker"),
]


# Explicit substitutions: "forget Oslo, it's Porto now", "Porto instead of Oslo", "switched from X to Y".
_V = r"[\w'’\-]+(?:\s+[\w'’\-]+){0,3}?"
SUBSTITUTIONS = [
    re.compile(rf"(?i:\b(?:forget|scrap|never mind|no more|not)\s+)(?P<old>{_V})(?i:\s*(?:anymore|any more)?[,;.!—–-]+\s*(?:it[’']?s|its|it is|we[’']re going with|going with|now it[’']?s|it[’']ll be|it will be|now|make that|i[’']m on|i[’']m doing|i[’']m having|we[’']re doing)\s+(?:now\s+)?(?:an?\s+|the\s+)?)(?P<new>{_V})(?=\s+(?:now|instead|then|this|at|in|for|because)\b|\s*[.,!?;]|\s*$)"),
    re.compile(rf"(?P<new>{_V})(?i:\s+instead of\s+(?:the\s+|an?\s+)?)(?P<old>{_V})(?=\s*[.,!?;]|\s+(?:now|this|because|since)\b|\s*$)"),
    re.compile(rf"(?i:\b(?:switch(?:ed|ing)?|chang(?:ed|ing)|mov(?:ed|ing)|went|going|upgraded|swapped)\s+(?:\w+\s+){{0,2}}?from\s+(?:the\s+|an?\s+)?)(?P<old>{_V})(?i:\s+to\s+(?:the\s+|an?\s+)?)(?P<new>{_V})(?=\s*[.,!?;]|\s+(?:now|this|because|since|and)\b|\s*$)"),
    re.compile(rf"(?i:\b(?:swapped|traded|ditched|dropped|replaced)\s+(?:the\s+|my\s+|our\s+)?)(?P<old>{_V})(?i:\s+(?:for|with)\s+(?:the\s+|an?\s+)?)(?P<new>{_V})(?=\s*[.,!?;]|\s+(?:now|this|because|since|and)\b|\s*$)"),
]
SUBSTITUTIONS += [
    re.compile(rf"(?i:\binstead of\s+(?:the\s+|an?\s+|my\s+)?)(?P<old>{_V})(?i:\s*,?\s+(?:(?:we|i)[’']?(?:re| are|'m| am)?\s+)?(?:doing|going to|going with|getting|having|off to|heading to|it[’']s|it is)\s+(?:the\s+|an?\s+)?)(?P<new>{_V})(?=\s*[.,!?;]|\s+(?:now|this|because|since|instead|in|on|for)\b|\s*$)"),
    re.compile(rf"(?i:\b(?:replaced|swapped|traded)\s+(?:the\s+|my\s+|our\s+)?)(?P<old>{_V})(?i:\s+(?:with|for)\s+(?:the\s+|an?\s+)?)(?P<new>{_V})(?=\s*[.,!?;]|\s+(?:now|this|last|because|since|and|by)\b|\s*$)"),
    re.compile(r"(?P<old>[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)?)(?i:\s+is\s+(?:now\s+)?called\s+)(?P<new>[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)?)"),
]
# what every match of SUBSTITUTIONS[i] contains, where scanning for that first is much cheaper (see Rule.needs)
_SUBSTITUTION_NEEDS = {1: re.compile(r"(?i:\s+instead of\s+)")}
_ANY = re.compile("")
# Retractions with no new value: "I'm no longer vegetarian", "not doing squash anymore".
RETRACTIONS = [
    re.compile(rf"(?i:\b(?:no longer|not|never)\s+(?:doing\s+|playing\s+|going to\s+|moving to\s+|a\s+|an\s+|into\s+|at\s+|with\s+)?)(?P<old>{_V})(?i:\s+(?:anymore|any more))"),
    re.compile(rf"(?i:\b(?:no longer)\s+(?:doing\s+|playing\s+|a\s+|an\s+|into\s+|at\s+|with\s+|working at\s+|living in\s+)?)(?P<old>{_V})(?=\s*[.,!?;]|\s*$)"),
    re.compile(rf"(?i:\b(?:quit|gave up(?: on)?|given up(?: on)?|stopped|called off|cancell?ed|scrapped|dropped|sold|ditched)\s+(?:the\s+|my\s+|our\s+)?)(?P<old>{_V})(?=\s*[.,!?;]|\s+(?:for good|completely|because|after|since|it|last|and)\b|\s*$)"),
    re.compile(r"(?P<old>[A-Z][a-z]+)(?i:\s+and\s+(?:i|me)\s+(?:split up|broke up|separated|called it off))"),
    re.compile(rf"(?i:\b(?:changed|change)\s+(?:my|our)\s+minds?\s+(?:about|on)\s+(?:the\s+)?)(?P<old>{_V})(?=\s*[.,!?;]|\s*$)"),
]

_QUESTION_START = re.compile(
    r"^(?:who|what|when|where|why|how|which|whose|did|do|does|are|is|was|were|have|has|can|could|will|would|should|shall|may|any|anything)\b(?!['’]t)",  # ("can't, …" states: a negative contraction)
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


NEW_VALUE_CUES = [
    re.compile(r"(?i:\b(?:switched|switching|moved|moving|changed|went|gone|going|upgraded)\s+(?:over\s+)?to\s+(?:the\s+)?)(?P<new>[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*){0,3})"),
    re.compile(r"(?P<new>[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*){0,3})(?i:\s+instead\b)"),
    re.compile(r"(?i:\b(?:now it[’']s|it[’']s now|it[’']s going to be|it[’']ll be|going with|we chose|we picked|we went with|decided on|scratch that,? it[’']s|it[’']s)\s+)(?P<new>[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*){0,3})(?=\s+(?:now|instead|after all|it is)\b|\s*[.,!?;]|\s*$)"),
    re.compile(r"(?P<new>[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*){0,3})(?i:\s+it\s+is\b)"),
]
ANSWER_SHAPES = [
    ("hobbies", re.compile(r"^(?P<value>[A-Za-z][\w\-]*(?: [a-z][\w\-]*)?(?:, (?:and )?[a-z][\w\-]*(?: [a-z][\w\-]*)?)*,? (?:and|&) [a-z][\w\-]*(?: [a-z][\w\-]*)?)(?=\s*[.,!?;]|\s+(?:mostly|these days|now|at the moment|lately)\b|\s*$)")),
    ("coffee", re.compile(r"^(?i:(?:an?\s+)?(?P<value>" + _COFFEE_ALT + r"))\b")),
    ("trip_destination", re.compile(r"^(?:(?i:yes|yeah|yep|so|well|oh|definitely)[,!.]?\s+)?(?P<value>[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)?)(?:\s+(?i:in|for|this|next|on)\b|\s*[!,.])")),
    ("residence", re.compile(r"^(?:(?i:yes|yeah|yep|still|well|oh)[,!.]?\s+)*(?:(?i:still\s+)?(?i:in|out in)\s+)(?P<value>[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)?)")),
    ("sport", re.compile(r"^(?i:(?P<value>" + _SPORT_ALT + r"))\b")),
]


class _Scan(NamedTuple):
    """Every statement pattern's matches in one sentence: a pure function of its text."""

    rules: tuple[tuple[Rule, tuple[re.Match[str], ...]], ...]  # only the rules that match, in RULES order
    substitutions: tuple[tuple[re.Match[str], ...], ...]  # one entry per pattern, in list order
    new_values: tuple[tuple[re.Match[str], ...], ...]
    retractions: tuple[tuple[re.Match[str], ...], ...]
    causes: tuple[re.Match[str] | None, ...]  # _CAUSE_CUES matched at the start


@lru_cache(maxsize=8192)
def _scan(text: str) -> _Scan:
    """Run the ~100 patterns over a sentence once; chat repeats itself ('Haha same.'), so this is cached."""
    return _Scan(
        rules=tuple((rule, ms) for rule in RULES
                    if (rule.needs is None or rule.needs.search(text)) and (ms := tuple(rule.regex.finditer(text)))),
        substitutions=tuple(tuple(rx.finditer(text)) if _SUBSTITUTION_NEEDS.get(i, _ANY).search(text) else ()
                            for i, rx in enumerate(SUBSTITUTIONS)),
        new_values=tuple(tuple(rx.finditer(text)) for rx in NEW_VALUE_CUES),
        retractions=tuple(tuple(rx.finditer(text)) for rx in RETRACTIONS),
        causes=tuple(rx.match(text) for rx, _, _ in _CAUSE_CUES),
    )
