"""Offline extractive answers: the value that answers the question, from the best valid evidence.

Order of preference:
1. a facet answer — the question names a changeable fact (where someone lives,
   their cat's name, the wedding date ...): follow that subject's update chain
   to the value valid now (or as of the question's date);
2. the best-scoring event valid at that time (a superseded one is replaced by
   its newest successor along `updates`), reduced to what the question asks
   for: a place for "where", an absolute date for "when", a name for "who",
   the cause for "why", the facet value or the sentence otherwise;
3. "not enough evidence" when nothing clears `AskSettings.abstain_below`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tracecli.graph.dates import format_date
from tracecli.query.frame_answer import (_key_words, _lemmas, asks_past, asks_role, before_cut, focus_noun, holds_role,
                                        asks_identifier, said_before)
from tracecli.query.paths import EventNode, Graph, newest_successor
from tracecli.query.settings import AskSettings
from tracecli.query.shape import QueryShape, asks_before
from tracecli.query.span import parsed as _parsed
from tracecli.query.span import settle
from tracecli.text import content_words, whole_words
from tracecli.text import words as word_tokens

NOT_ENOUGH = "not enough evidence"
#: a frame answer must score at least this (`frame_answer`'s scale) to be given instead of the best sentence
FRAME_ANSWER_FLOOR = 0.4
#: sentences of one person within this (re-ranked) score of the best are restatements of one fact (see below)
RESTATEMENT_MARGIN = 0.06


@dataclass
class Readers:
    """Similarity functions the answer step may use (the asker binds them to the question's vector)."""

    sentence_sim: Callable[[Sequence[EventNode]], Sequence[float]]  # each event's sentence vs the question
    value_fit: Callable[[str, Sequence[str]], Sequence[float]]  # asked noun phrase vs candidate values
    between: Callable[[EventNode, Sequence[EventNode]], Sequence[float]]  # one event's sentence vs others'
    # a short text (the asked noun phrase) vs each event's sentence
    phrase_sim: Callable[[str, Sequence[EventNode]], Sequence[float]] | None = None


@dataclass
class Answer:
    text: str
    abstained: bool
    event_ids: list[str] = field(default_factory=list)
    source_refs: list[str] = field(default_factory=list)
    method: str = "none"  # facet | frame | event | abstain
    conflict: list[str] = field(default_factory=list)
    support: str = "none"  # chain | frame | sentence | none: what the answer rests on
    confidence: float = 0.0  # 0–1
    #: the rule step's own sentence when the learned choice answered from another (kept in the context beside it)
    proposed: str | None = None


def _order(ev: EventNode) -> tuple[int, int]:
    return (ev.seq, ev.sentence_idx)


def _facet_matches(ev: EventNode, facet: str) -> bool:
    if ev.facet is None:
        return False
    if facet.endswith(":*"):
        return ev.facet.startswith(facet[:-1])
    if facet.startswith("pet_name:") and ev.facet == "pet_name:pet":
        return True  # a pet whose species was never said
    return ev.facet == facet


def _norm_words(value: str) -> frozenset[str]:
    return frozenset(_words(value))


def _words(value: str | None) -> set[str]:
    return set(re.sub(r"[^\w\s]", " ", (value or "").lower()).split()) - {"the", "a", "an"}


def most_specific(chain: Sequence[EventNode], best: EventNode) -> EventNode:
    """Among restatements of the chosen value ('Skoda' / 'Skoda Octavia'), the one that says the most."""
    mine = _words(best.value)
    same = [ev for ev in chain if not ev.negated and ev.value and mine and (mine <= _words(ev.value) or _words(ev.value) <= mine)]
    return max(same, key=lambda ev: (len(_words(ev.value)), ev.seq, ev.sentence_idx), default=best)


def with_article(ev: EventNode) -> str:
    """Keep 'the' when the source said it ('the Scottish Highlands')."""
    value = ev.value or ""
    from tracecli.graph.facets import facet_kind

    if value and facet_kind(ev.facet or "") == "place" and re.search(rf"(?i)\bthe {re.escape(value)}\b", ev.quote) and not value.lower().startswith("the "):
        return f"the {value}"
    return value


def named_people(graph: Graph, shape: QueryShape) -> list[str]:
    """The people the question names who are the subject of some event."""
    subjects = {ev.subject for ev in graph.events.values()}
    return [p for p in shape.people if p in subjects]


def not_the_name(graph: Graph, shape: QueryShape, question: str) -> list[str]:
    """Who a sentence naming cannot name the answer: the people the question names, and when it asks what someone
    or something is called ("What is the name of Finn's daughter?") the conversation's speakers too — a line that
    names the other person ("Zainab I'm so sorry") names no daughter."""
    people = named_people(graph, shape)
    if question and _ASKS_NAME.search(question):
        people = people + sorted({ev.speaker for ev in graph.events.values() if ev.speaker} - set(people))
    return people


def facet_answer(graph: Graph, shape: QueryShape, relevance: Mapping[str, float], as_of: str | None,
                 settings: AskSettings) -> tuple[EventNode, list[EventNode]] | None:
    """The event holding the asked-for facet's value at `as_of` (or now), and any conflicting ones."""
    named = named_people(graph, shape)
    for facet in shape.facets:
        matching = [ev for ev in graph.events.values() if _facet_matches(ev, facet)]
        if not matching and facet.startswith("date:"):
            base = facet.split(" ")[-1] if " " in facet else facet[5:]
            matching = [ev for ev in graph.events.values() if ev.facet and ev.facet.startswith("date:")
                        and (ev.facet == f"date:{base}" or ev.facet.endswith(f" {base}"))]
        if named:
            matching = [ev for ev in matching if ev.subject in named]
        if not matching:
            continue
        valid = [ev for ev in matching if ev.validity_at(as_of) > 0 and ev.confidence >= settings.facet_confidence_floor]
        if as_of is not None:
            valid = [ev for ev in valid if not ev.time_anchor or ev.time_anchor <= as_of]
        if not valid:
            continue
        by_subject: dict[str, list[EventNode]] = {}
        for ev in valid:
            by_subject.setdefault(ev.subject, []).append(ev)
        if len(by_subject) > 1:
            # nobody named: the subject whose facet events the retrieval ranks highest
            subject = max(by_subject, key=lambda s: (max(relevance.get(e.id, 0.0) for e in by_subject[s]), s))
        else:
            subject = next(iter(by_subject))
        chain = sorted(by_subject[subject], key=_order)
        positive = [ev for ev in chain if not ev.negated]
        best = most_specific(positive, positive[-1]) if positive else chain[-1]
        conflicts = [
            graph.events[other] for pair in graph.conflicts if best.id in pair
            for other in pair if other != best.id and graph.events[other].validity_at(as_of) > 0
        ]
        return best, conflicts
    return None


def echoes(question: str, value: str | None) -> bool:
    """Does the question itself name every word of `value`? Then `value` is what the question is about, not
    its answer ("What role does Noor hold at the fencing club?" is not answered by "fencing")."""
    words = {_singular(w) for w in re.findall(r"\w+", (value or "").lower())}
    return bool(words) and words <= {_singular(w) for w in re.findall(r"\w+", question.lower())}


def _singular(word: str) -> str:
    """'suppliers' → 'supplier' (a plain plural s; enough to tell that a value repeats the question's noun)."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _known_later(graph: Graph, shape: QueryShape, as_of: str) -> bool:
    """Is the asked facet of the named person stated only after `as_of` — and nothing says it held by then: no
    statement of it is a retraction ("handed my notice in at Deloitte" says Deloitte held before), and its value was
    not named in anything said by that date ("Deloitte can try", a month earlier)?"""
    people = set(shape.people)
    if not people or not shape.facets:
        return False
    for facet in shape.facets[:1]:
        events = [ev for ev in graph.events.values() if ev.subject in people and _facet_matches(ev, facet)]
        if events and all(ev.time_anchor and ev.time_anchor > as_of for ev in events):
            if any(ev.negated for ev in events):
                return False
            names = [p for p in (_value_words(ev.value) for ev in events) if p is not None]
            conversations = {ev.conversation_id for ev in events}
            said = [o.quote for o in graph.events.values() if o.conversation_id in conversations
                    and o.time_anchor and o.time_anchor <= as_of]
            return not any(p.search(q) for p in names for q in said)
    return False


#: a weekday's name, the stem of its singular and plural
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
#: a time expression of something that recurs: a weekday (or its plural), a part of the day, "every …", a clock time
_RECURRING = re.compile(rf"(?i)\b(?:{_WEEKDAY}s?|weekends?|weekdays?|mornings?|"
                        r"afternoons?|evenings?|nights?|every|each|daily|weekly|fortnightly|monthly)\b|\d(?::\d\d)?\s*(?:am|pm)\b|"
                        r"\b\d{1,2}:\d\d\b")


def _time_phrase(text: str) -> str | None:
    """The first date or time expression the sentence names (spaCy's DATE / TIME entities: "Saturday mornings",
    "every other Sunday", "April 17th"), with a weekday or number in it, or a recurring one."""
    doc = _parsed(text)
    found = [_widened_time(doc, ent.start, ent.end) for ent in doc.ents
             if ent.label_ in ("DATE", "TIME") and (_RECURRING.search(ent.text) or any(c.isdigit() for c in ent.text)
                                                   or _MONTHS.search(ent.text))]
    # a habit over a single day when the sentence names both ("Friday 30th, we do the last Friday of the month now")
    return next((t for t in found if _HABIT.search(t)), found[0] if found else None)


#: a time expression that states a habit: "every …", "the last … of the month", a plural weekday, a part of the day
_HABIT = re.compile(rf"(?i)\b(?:every|each|other|alternate|of the (?:month|week)|{_WEEKDAY}s|"
                    r"mornings|afternoons|evenings|nights|weekends)\b")
#: words that open a recurring time before the day the entity reader found ("every other Sunday", "the last Friday")
_TIME_BEFORE = frozenset({"every", "each", "other", "alternate", "last", "first", "second", "third", "fourth"})
#: parts of the day that follow it ("Saturday mornings", "Wednesday evenings")
_DAY_PARTS = frozenset({"morning", "mornings", "afternoon", "afternoons", "evening", "evenings", "night", "nights",
                        "lunchtime", "lunchtimes"})


def _widened_time(doc: Any, start: int, end: int) -> str:
    """The time expression around tokens [start, end): with the words that make it recur before it and a part of
    the day, a clock time ("at 10") or "of the month" after it, which the entity reader leaves out."""
    while start > 0 and doc[start - 1].lower_ in _TIME_BEFORE:
        start -= 1
    while end < len(doc) and doc[end].lower_ in _DAY_PARTS:
        end += 1
    if end + 1 < len(doc) and doc[end].lower_ == "at" and doc[end + 1].like_num:
        end += 2
        if end < len(doc) and doc[end].lower_ in ("am", "pm", "o'clock"):
            end += 1
    if end + 2 < len(doc) and doc[end].lower_ == "of" and doc[end + 1].lower_ == "the" \
            and doc[end + 2].lower_ in ("month", "week", "year"):
        end += 3
    return doc[start:end].text


#: a month's name or its abbreviation
_MONTHS = re.compile(r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b")


def _value_text(ev: EventNode) -> str:
    if ev.negated:
        return f"no longer {ev.value}"
    return ev.value or ev.description


def _when(ev: EventNode) -> str:
    if ev.event_time:
        return format_date(dt.date.fromisoformat(ev.event_time), ev.event_time_granularity or "day")
    if ev.time_anchor:
        return format_date(dt.date.fromisoformat(ev.time_anchor[:10]))
    return ev.quote


def _known_place(text: str, avoid: Collection[frozenset[str]] = ()) -> str | None:
    """The first run of one to three capitalised words in `text` that the gazetteer knows as a place (whole words:
    "Bay" of "eBay" is none), other than those whose words are in `avoid`."""
    from tracecli.graph.gazetteer import is_place

    return next((m.group(0) for m in re.finditer(r"(?<![\w'’\-])[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*){0,2}", text)
                 if is_place(m.group(0)) and _norm_words(m.group(0)) not in avoid), None)


#: prepositions that place a noun somewhere ("a room on Alder Lane", "the scout hut in Didsbury")
_PLACING = frozenset({"in", "on", "at", "near", "by", "off", "above", "behind", "opposite"})


def _placed_noun(text: str, place: str) -> str:
    """The place with the noun it locates, when the sentence names one: "a bedsit in Ashford", "the garden centre on Mill
    Lane" (where someone lives or sells is the flat or the shop, which the place only locates); the place alone
    when it hangs on a verb ("I live in Ashford")."""
    doc = _parsed(text)
    at = text.find(place)
    toks = [t for t in doc if at <= t.idx < at + len(place)] if at >= 0 else []
    if not toks:
        return place
    root = next((t for t in toks if t.head not in toks or t.head == t), toks[0])
    prep = root.head
    noun = prep.head
    if root.dep_ != "pobj" or prep.lower_ not in _PLACING or noun.pos_ not in ("NOUN", "PROPN") or noun.i > prep.i \
            or noun.ent_type_ in ("DATE", "TIME") or noun.dep_ == "npadvmod":
        return place
    from tracecli.graph.lexicon import answer_class

    if answer_class(noun.lemma_.lower(), place=False) in ("person", "time"):
        return place  # "my sister in Leeds" is someone, "the weekend in Porto" a time: not where someone is
    return doc[noun.left_edge.i: toks[-1].i + 1].text


def _ended_values(graph: Graph, ev: EventNode, question: str = "") -> set[frozenset[str]]:
    """The words of the values `ev`'s message retracts or moves away from (a construction's old value, a negated
    statement's value): never the answer for what holds ("I quit German btw. doing Portuguese instead"), only for
    what held before (none when the question asks that)."""
    if question and (asks_before(question) or asks_past(question)):
        return set()
    same = _same_message(graph, ev)
    return {_norm_words(c["old"]) for o in same if o.frame for c in o.frame.get("constructions", []) if c.get("old")} \
        | {_norm_words(o.value) for o in same if o.negated and o.value}


#: the answer types a sentence is reduced to (a person or organisation, a sum of money, a place); others keep the
#: sentence
_REDUCED = frozenset({"PERSON", "ORG", "MONEY", "LANGUAGE", "NORP", "GPE", "LOC", "FAC", "CODE"})


#: a code or a number someone is known by: a plate or an id ("YF21 KZB", "A4829113", "231-G-4417"), a combination
#: ("4-1-8-2"), a number of two digits or more with a letter after it ("4471", "23B"); never part of an amount,
#: a decimal or a time ("£340", "2.75", "7:15")
_CODE = re.compile(r"""(?<![\w£$€¥.,:/+#-])
    (?: [A-Z]{1,3}\d[A-Z\d]*(?:[ -][A-Z\d]{2,4})?
      | [A-Z]{2,}\d+[A-Z\d]*
      | \d+[A-Z]*(?:-[A-Z\d]+)+
      | \d{2,}[A-Z]?
    )(?![\w%£$€]|[.,:]\d)""", re.X)


def _codes(text: str) -> list[str]:
    """The codes and numbers of `_CODE` in `text`, but not a year ("2012") nor a measure ("11 hours", "51 minutes",
    "6 km": a unit of measurement or a span of time after it, `lexicon.is_unit`, `lexicon.is_time_span`)."""
    from tracecli.graph.lexicon import is_time_span, is_unit

    out = []
    for m in _CODE.finditer(text):
        code = m.group(0)
        after = re.match(r"\s*([A-Za-z]+)", text[m.end():])
        word = after.group(1).lower() if after else ""
        if re.fullmatch(r"(?:19|20)\d\d", code) or (word and code.isdigit() and any(
                is_unit(w) or is_time_span(w) for w in {word, word.rstrip("s")})):
            continue
        out.append(code)
    return out


def _entities(text: str, labels: tuple[str, ...], avoid: Sequence[str] = ()) -> list[str]:
    """The distinct entities of `text` with one of `labels`, in order, a currency sign kept ("£180", not "180");
    for COLOR, after them, the colour words with the modifier just before them ("sage green"); for CODE (not an
    entity label of spaCy's) the codes and numbers someone is known by (`_codes`)."""
    if labels == ("CODE",):
        return [c for c in dict.fromkeys(_codes(text)) if c not in avoid]
    doc = _parsed(text)
    out: list[str] = []
    avoided = {a.lower() for a in avoid}  # (in any case: "NADIA. amazing" names Nadia)
    for ent in doc.ents:
        if ent.label_ in labels and ent.text.lower() not in avoided:
            start = ent.start - 1 if ent.start and doc[ent.start - 1].is_currency else ent.start
            # a possessive ending the entity reader may take with a name is not part of it ("Dr Okafor's")
            end = ent.end - 1 if ent.end - start > 1 and doc[ent.end - 1].tag_ == "POS" else ent.end
            if doc[start: end].text not in out:
                out.append(doc[start: end].text)
    if "COLOR" in labels:
        from tracecli.graph.lexicon import is_colour

        for tok in doc:
            # (a verb too: the small tagger reads "sage green" after a noun as one)
            if tok.pos_ in ("ADJ", "NOUN", "PROPN", "VERB") and is_colour(tok.lemma_ or tok.text):
                mods = [c for c in tok.lefts if c.pos_ in ("ADJ", "NOUN", "PROPN", "ADV") and c.i == tok.i - 1]
                out.append(doc[mods[0].i if mods else tok.i: tok.i + 1].text)
    return out


def _entity(text: str, labels: tuple[str, ...], avoid: Sequence[str] = ()) -> str | None:
    """The first of `_entities`, or None."""
    return next(iter(_entities(text, labels, avoid)), None)


def asked_labels(shape: QueryShape, question: str) -> tuple[str, ...] | None:
    """The entity labels of the value the question asks for: by its question word (a place for "where", a person or
    organisation for "who", a date for "when"), else by the noun a what/which question asks for, typed by WordNet
    (`tracecli.graph.lexicon.answer_class`): "Which dentist …", "What was Noor's day rate …", "What colour …"."""
    labels = _WANTED_ENTITIES.get(shape.wh)
    if labels is not None or shape.wh not in ("what", "which") or not question:
        return labels
    from tracecli.graph.lexicon import ANSWER_LABELS, answer_class

    focus = focus_noun(question)
    kind = answer_class(focus) if focus else None
    if kind is None and asks_identifier(question, focus):
        return ("CODE",)  # "What's the combination on her bike lock?", "What is his number plate?"
    if kind is None and _ASKS_NAME.search(question):
        return _NAMES  # "What is the name of her bakery?", "What is his boat called?": a proper name
    return ANSWER_LABELS.get(kind) if kind else None


#: a question asking what something is called
_ASKS_NAME = re.compile(r"(?i)\b(?:the name of|(?:is|was|are|were)\b.*\b(?:called|named))\b")
#: the entity labels of proper names
_NAMES = ("PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "WORK_OF_ART", "EVENT")


def _same_message(graph: Graph, ev: EventNode) -> list[EventNode]:
    """The events read from the message `ev` was read from (through the message's note; a graph built without
    notes is searched whole), `ev` included."""
    ids = [i for r in ev.note_rowids for i in graph.by_note.get(r, ())] if ev.note_rowids else list(graph.events)
    return [o for o in (graph.events[i] for i in ids if i in graph.events)
            if o.seq == ev.seq and o.conversation_id == ev.conversation_id]


def _rest_of_message(graph: Graph, ev: EventNode) -> list[str]:
    """The other sentences of the message `ev` was read from, in order."""
    same = {o.sentence_idx: o.quote for o in _same_message(graph, ev) if o.sentence_idx != ev.sentence_idx}
    return [same[i] for i in sorted(same)]


#: entity labels that name a value a what/which question can ask for (not an ordinal, a quantity word or a language)
_VALUE_ENTS = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "DATE", "TIME",
                         "MONEY", "PERCENT", "QUANTITY", "CARDINAL"})


def _holds_value(text: str, times: bool = True) -> bool:
    """Does the sentence name anything specific: a number, a proper noun, an entity, a code ("4B", "X-17")? With
    `times` False a date or span of time said in words is not one ("found the locker code at last after a month
    of guessing."); a number always is (the small tagger reads "3390" as a year)."""
    return any((times or t.ent_type_ not in ("DATE", "TIME") or t.like_num)
               and (t.like_num or t.pos_ in ("PROPN", "NUM") or t.ent_type_ in _VALUE_ENTS
                    or (any(c.isdigit() for c in t.text) and any(c.isalpha() for c in t.text))) for t in _parsed(text))


def _mentions(text: str, lemma: str) -> bool:
    """Does the sentence use the noun (a lemma: "code" in "the locker codes")?"""
    return any((t.lemma_ or t.text).lower() == lemma for t in _parsed(text))


def _said_after(graph: Graph, ev: EventNode) -> list[EventNode]:
    """The sentences of `ev`'s message after it, said by the same speaker, in order."""
    return sorted((o for o in _same_message(graph, ev) if o.sentence_idx > ev.sentence_idx and o.speaker == ev.speaker),
                  key=lambda o: o.sentence_idx)


def _value_said_next(graph: Graph, ev: EventNode) -> EventNode | None:
    """The next sentence of `ev`'s message that names something specific, when `ev` names nothing: "also the gym
    lockers need a code and I never remember mine. 5802." — asked "What is the code …?", the value follows; or the
    first sentence of the same person's very next message, chat's way of going on ("took me ten minutes to
    remember the lock combo" / "it's 4197 btw")."""
    later = _said_after(graph, ev)
    found = next((o for o in later if _holds_value(o.quote, times=False)), None)
    if found is None and not later:
        following = [o for o in graph.events.values() if o.conversation_id == ev.conversation_id
                     and o.session_id == ev.session_id and o.seq == ev.seq + 1 and o.speaker == ev.speaker]
        first = min(following, key=_order) if following else None
        found = first if first is not None and _holds_value(first.quote, times=False) else None
    return found


def _cause_of(graph: Graph, ev: EventNode) -> EventNode | None:
    causes = [graph.events[e.src] for e in graph.into.get(ev.id, []) if e.label in ("causes", "enables", "prevents")]
    return max(causes, key=_order) if causes else None


def extract_value(graph: Graph, ev: EventNode, shape: QueryShape, question: str = "",
                  labels: tuple[str, ...] | None = None) -> str:
    """Reduce an event to the part the question asks for (never to a value the question itself names)."""
    if shape.wh == "why":
        cause = _cause_of(graph, ev)
        if cause is not None:
            return cause.quote
        m = re.search(r"\bbecause\s+(?:of\s+)?(.+)$", ev.quote, re.I)
        return m.group(1).rstrip(".!") if m else ev.quote
    if shape.wh == "when":
        said = _time_phrase(ev.quote)
        if said is not None and (_RECURRING.search(said) or not ev.event_time):
            return said  # "I go saturday mornings now": the time the sentence names, not the day it was said
        return _when(ev)
    if question and shape.wh != "yesno" and echoes(question, ev.value):
        return ev.quote
    if labels and shape.wh in ("what", "which") and set(labels) <= _REDUCED:
        # the noun asked for is a person or a sum ("Which dentist …?", "What was Noor's day rate?"): the one value of
        # that type in the sentence, else in the rest of its message. Several (a change told old value first), or
        # a date, time or colour (said in phrases the entity reader cuts short: "Tuesdays and Fridays"): the sentence
        ended = _ended_values(graph, ev, question)
        texts = [ev.quote, *_rest_of_message(graph, ev)]
        # (one the message retracts is not the answer: "I quit German btw. doing Portuguese instead", nor is "Dutch is
        # on hold." when the message goes on to the language taken up; only when nothing else is named is it said)
        named = (ev.subject, *not_the_name(graph, shape, question))
        for avoid in (ended, set()):
            for text in texts:
                found = [f for f in _entities(text, labels, avoid=named) if _norm_words(f) not in avoid]
                if found:
                    return found[0] if len(found) == 1 else ev.quote
    if ev.value and not ev.negated and ev.facet and not ev.facet.startswith("date:"):
        return ev.value
    if shape.wh == "where":
        # (never the place the sentence says was left: "we left Leeds and we're in York now")
        ended = _ended_values(graph, ev, question)
        places = [p for p in (_known_place(ev.quote, ended), *_entities(ev.quote, ("GPE", "LOC", "FAC"))) if p]
        place = next((p for p in places if _norm_words(p) not in ended), None)
        return _placed_noun(ev.quote, place) if place else ev.quote
    if shape.wh == "who":
        # a person the sentence names, else one the rest of its message names ("dentist tomorrow. Dr Okafor's."),
        # never one it parts with ("Dominik and I have parted ways. I train with Sarah Jones now")
        ended = _ended_values(graph, ev, question)
        return next((p for t in [ev.quote, *_rest_of_message(graph, ev)]
                     for p in _entities(t, ("PERSON",), avoid=(ev.subject,)) if _norm_words(p) not in ended), ev.quote)
    if ev.value and ev.facet and not ev.facet.startswith("date:"):
        return _value_text(ev)  # (a date answers only a when-question: "Which race …?" is not "October")
    return ev.quote  # a sentence matched on closeness alone: the whole of it, not a frame value it happens to hold


def _replacement(graph: Graph, retraction: EventNode, as_of: str | None) -> EventNode | None:
    """'No longer X': the newest positive statement that revises any statement of X (along another edge)."""
    gone = {(graph.events[e.dst].subject, frozenset(_words(graph.events[e.dst].value)))
            for e in graph.out.get(retraction.id, []) if e.label == "updates" and e.dst in graph.events}
    replaced = [ev for ev in graph.events.values() if (ev.subject, frozenset(_words(ev.value))) in gone]
    newer = [graph.events[e.src] for old in replaced for e in graph.into.get(old.id, [])
             if e.label == "updates" and e.src in graph.events]
    newer = [n for n in newer if not n.negated and n.value and (as_of is None or (n.time_anchor or "") <= as_of)]
    return max(newer, key=_order) if newer else None


def _from_frame(graph: Graph, shape: QueryShape, question: str, relevance: Mapping[str, float],
                as_of: str | None, readers: Readers | None, novelty_bonus: float = 0.0,
                before_first: bool = True, roles_only: bool = True) -> Answer | None:
    from tracecli.query.frame_answer import frame_answer

    people = named_people(graph, shape)
    found = frame_answer(graph, shape, question, relevance, as_of, people,
                         readers.sentence_sim if readers else None, readers.value_fit if readers else None,
                         novelty_bonus, before_first, roles_only)
    if found is not None and found.support == "none":
        return Answer(text=NOT_ENOUGH, abstained=True, method="abstain")
    if found is None or found.score < FRAME_ANSWER_FLOOR:
        return None  # a weakly matched frame is no better than the best sentence, which says more
    if shape.wh != "yesno" and echoes(question, found.event.value):
        return None  # "Which supplier …?" is not answered by "suppliers": the sentence fallback reads the value
    ev = found.event
    if ev.negated and shape.wh != "yesno" and shape.before_event_verb is None:
        # "I've handed in my notice at X. starting at Y …": asked what holds, the answer is what replaced X
        instead = _replacement(graph, ev, as_of) or _said_instead(graph, ev)
        if instead is not None:
            refs = list(instead.source_refs) + [r for r in ev.source_refs if r not in instead.source_refs]
            return Answer(text=instead.value or instead.quote, abstained=False, event_ids=[instead.id], source_refs=refs,
                          method="frame", support=found.support, confidence=round(min(1.0, 0.5 + found.score), 3))
    fuller = None if ev.negated else _fuller_statement(graph, ev, as_of)
    # (a sentence that states the value outside any frame, found as what a revision replaced: the part it is asked for)
    text = f"{ev.subject} no longer: {ev.value}" if ev.negated else (
        (fuller or ev).value or extract_value(graph, ev, shape, question, asked_labels(shape, question)))
    refs = list(ev.source_refs) + [r for r in (fuller.source_refs if fuller else []) if r not in ev.source_refs]
    if found.chosen.id != ev.id:
        refs += [r for r in found.chosen.source_refs if r not in refs]
    return Answer(text=text, abstained=False, event_ids=[ev.id], source_refs=refs, method="frame",
                  support=found.support, confidence=round(min(1.0, 0.5 + found.score), 3))


def _other_kind(question: str, ev: EventNode) -> bool:
    """Is a typed-facet value of a common-noun kind something other than the noun the question asks for ("What club
    …?" met by the sport 'reformer pilates'): neither the noun nor a kind of it (`lexicon.is_kind_of`), and the facet
    is not named by it either ("What sport …?" is the sport facet's own question)?"""
    from tracecli.graph.facets import facet_kind
    from tracecli.graph.lexicon import is_kind_of
    from tracecli.query.frame_answer import _facet_frame, asked_noun

    noun = asked_noun(question)
    frame = _facet_frame(ev)
    if noun is None or frame is None or facet_kind(ev.facet or "") != "thing":
        return False
    named = set(_words(ev.value)) | set(str(frame.get("key", "")).split())
    return noun not in named and not is_kind_of(ev.value or "", noun)


def _said_instead(graph: Graph, retraction: EventNode) -> EventNode | None:
    """The value the same person states in the same message after retracting one, of the retracted value's
    type (a name for a name, a thing for a thing): "quit X, starting at Y" → Y."""
    kind = (retraction.frame or {}).get("type")
    same = [ev for ev in _same_message(graph, retraction)
            if ev.id != retraction.id and ev.subject == retraction.subject and not ev.negated and ev.value and _order(ev) >= _order(retraction)
            and not (_words(ev.value) & _words(retraction.value))
            and (ev.frame or {}).get("type") == kind and not (ev.frame or {}).get("hedged")]
    return min(same, key=lambda ev: (not any(e.label == "updates" for e in graph.out.get(ev.id, [])), _order(ev)),
               default=None)


def _fuller_statement(graph: Graph, ev: EventNode, as_of: str | None) -> EventNode | None:
    """An earlier statement of the same person that names `ev`'s value in full ("my Galaxy" after "I got the
    Galaxy S9"), when nothing but restatements of it has superseded it since: the answer says the full value."""
    mine = _words(ev.value)
    if not mine:
        return None
    fuller = [o for o in graph.events.values()
              if o.subject == ev.subject and o.value and not o.negated and _order(o) < _order(ev)
              and o.conversation_id == ev.conversation_id and mine < _words(o.value)
              and (as_of is None or not o.time_anchor or o.time_anchor <= as_of)
              and all(_words(graph.events[e.src].value) <= _words(o.value)
                      for e in graph.into.get(o.id, []) if e.label == "updates" and e.src in graph.events)]
    return max(fuller, key=_order) if fuller else None


def _latest_restatement(valid: Sequence[tuple[EventNode, float]], topic: Callable[[EventNode, Sequence[EventNode]], Sequence[float]] | None = None,
                        margin: float = 0.0, closeness: float = 1.0,
                        keep: Callable[[EventNode], bool] | None = None, novel_margin: float = 0.0) -> EventNode:
    """The latest of the best sentence's restatements: the same person's sentences that match the question nearly
    as well (within `RESTATEMENT_MARGIN`), or within `margin` when their sentence is `closeness` near the best
    one's (`topic`: the same subject matter in other words), or within the wider `novel_margin` when they also
    present something as new ("now", "instead", "new": `_novel`). Asked for the state now or at a date, a fact said
    again later in other words is its newer version even where no `updates` edge was drawn (an implicit revision
    read at query time). `keep`: what a restatement must also be (one that holds a value of the asked type)."""
    best, top = valid[0]
    mine = [(ev, sc) for ev, sc in valid[:8] if ev.subject == best.subject and not ev.negated
            and (keep is None or ev is best or keep(ev))]
    rivals = [ev for ev, sc in mine if sc >= top - RESTATEMENT_MARGIN]
    if topic is not None:
        rivals += _on_topic_later(best, [ev for ev, sc in mine if top - margin <= sc < top - RESTATEMENT_MARGIN],
                                  topic, closeness)
        rivals += _on_topic_later(best, [ev for ev, sc in mine if top - novel_margin <= sc < top - margin and _novel(ev)],
                                  topic, closeness)
    return max(rivals or [best], key=lambda e: (e.seq, e.sentence_idx))


def _on_topic_later(anchor: EventNode, candidates: Sequence[EventNode],
                    topic: Callable[[EventNode, Sequence[EventNode]], Sequence[float]], closeness: float) -> list[EventNode]:
    """The candidates said after `anchor` whose sentence is at least `closeness` near its sentence (`topic`)."""
    later = [ev for ev in candidates if _order(ev) > _order(anchor)]
    return [ev for ev, near in zip(later, topic(anchor, later)) if near >= closeness] if later else []


#: entity labels of the value a question word asks for: the sentence fallback prefers a sentence holding one
_WANTED_ENTITIES = {"where": ("GPE", "LOC", "FAC"), "who": ("PERSON", "ORG"), "when": ("DATE", "TIME")}


def _said_again_later(ev: EventNode, ranked: Sequence[tuple[EventNode, float]], as_of: str | None,
                      settings: AskSettings, readers: Readers) -> EventNode | None:
    """A later sentence of the same person, among the best ranked, on the frame's subject matter (its sentence
    `restate_topic` close to the frame's) and matching the question within `restate_margin` of the best: the
    fact said again with a value the frame layer did not link (an implicit revision read at query time)."""
    if not ranked:
        return None
    top = ranked[0][1]
    same = _names_value(ev) if settings.restate_new_value else None
    mine = [e for e, sc in ranked[:8] if e.subject == ev.subject and not e.negated and e.validity_at(as_of) > 0
            and sc >= top - settings.restate_margin and not (same is not None and _refers_to(e, ev, same))]
    near = _on_topic_later(ev, mine, readers.between, settings.restate_topic)
    return max(near, key=_order) if near else None


def _novel(ev: EventNode) -> bool:
    """Does the sentence present something as new ("now", "new", "instead", …; `frames.NOVELTY_WORDS`)?"""
    from tracecli.graph.frames import NOVELTY_WORDS

    return any(w in NOVELTY_WORDS for w in _words(ev.quote))


def _refers_to(later: EventNode, ev: EventNode, names: re.Pattern[str]) -> bool:
    """Does a later sentence only refer to `ev`'s value (`names` finds it there) rather than replace it: it neither
    presents anything as new (`_novel`) nor states another value of the same kind ("the crew wound down, so I've
    started at the chess club")?"""
    if not names.search(later.quote) or _novel(later):
        return False
    from tracecli.graph.frames import PROPER_TYPES

    mine, theirs = (ev.frame or {}).get("type"), (later.frame or {}).get("type")
    same_kind = mine == theirs or (mine in PROPER_TYPES and theirs in PROPER_TYPES)
    return not (later.value and not later.negated and same_kind and not (_words(later.value) & _words(ev.value)))


def _names_value(ev: EventNode) -> re.Pattern[str] | None:
    """Matches a sentence that names `ev`'s value by its last word ("Rovers" for "Bristol Rovers"): a later
    sentence that does refers to the value and does not replace it, unless it presents something as new ("the
    Rovers season ticket is now the Bath one", `_novel`)."""
    words = re.findall(r"[\w'’+-]+", ev.value or "")
    head = words[-1] if words else ""
    return whole_words(head) if len(head) > 1 else None


def _typed_first(valid: list[tuple[EventNode, float]], labels: tuple[str, ...] | None, people: Sequence[str],
                 settings: AskSettings, who: bool = False) -> list[tuple[EventNode, float]]:
    """Move up the best-ranked sentence, nearly as good as the first, that holds a value of the type the question
    word asks for (a place for "where", a person or organisation for "who", a date for "when"): a sentence
    without one cannot answer it, however close its words."""
    if labels is None or not valid:
        return valid
    top = valid[0][1]
    margin = settings.typed_margin
    if who and settings.who_margin and not _holds(valid[0][0].quote, labels, people):
        margin = settings.who_margin  # "Who …?" asks for someone: a sentence naming no one cannot answer it
    for i, (ev, score) in enumerate(valid[:settings.typed_window]):
        if score < top - margin:
            break
        if _holds(ev.quote, labels, people):
            return [valid[i], *valid[:i], *valid[i + 1:]]
    return valid


#: how many of the best sentences `_unhedged_first` reorders
_HEDGE_WINDOW = 8


def _unhedged_first(valid: list[tuple[EventNode, float]], margin: float) -> list[tuple[EventNode, float]]:
    """The best sentences with those that only muse or ask (`_muses`: "if I ever moved south it would be Bristol") or
    turn an option down (`_turned_down`) put after those that state, when one that states is within `margin` of the
    best: a possibility is no fact."""
    if not valid or not (_muses(valid[0][0]) or _turned_down(valid[0][0])):
        return valid
    top = valid[0][1]
    head = valid[:_HEDGE_WINDOW]
    muses = [_muses(ev) or _turned_down(ev) for ev, _ in head]
    stated = [x for x, m in zip(head, muses) if not m]
    if not stated or stated[0][1] < top - margin:
        return valid
    return stated + [x for x, m in zip(head, muses) if m] + valid[_HEDGE_WINDOW:]


def _muses(ev: EventNode) -> bool:
    """Does the sentence ask, or muse on an unreal condition of the speaker's own ("if I ever moved south it would be
    Bristol", "if I did a PhD it'd be in Melbourne": an if-clause about I or we, in the past tense or with "ever")?
    A real condition ("I'm in seat 42 if I'm lucky") or one about the listener ("the code is 4417 if you ever need
    it") states what it says. (A feature of the learned choice, `tracecli.query.choose`, as its model was fitted:
    an option turned down is `_turned_down`, read by the rule step only.)"""
    if ev.quote.rstrip().endswith("?"):
        return True
    return any(t.dep_ == "mark" and t.lower_ == "if" and (t.head.tag_ == "VBD" or any(
        c.lower_ == "ever" for c in t.head.children))
        and any(c.dep_ == "nsubj" and c.lower_ in ("i", "we") for c in t.head.children) for t in _parsed(ev.quote))


def _turned_down(ev: EventNode) -> bool:
    """Does the sentence open with an option the speaker turned down ("I thought about tap dancing but nah, too many
    people stamping")? Not when something is stated before it ("moved the blog to Ghost. thought about Medium
    but nah") or after it in a clause of its own ("… but nah, the plum took two hours")."""
    from tracecli.graph.frames import rejection

    doc = _parsed(ev.quote)
    roots = [t for t in doc if t.dep_ == "ROOT" and t.pos_ != "INTJ"]
    but = rejection(roots[0]) if roots and roots[0].pos_ in ("VERB", "AUX") else None
    if but is None:
        return False
    # (after the rejection, a finite verb with a subject of its own states something; "too many people stamping" is
    # the reason for it)
    return not any(t.tag_ in ("VBD", "VBZ", "VBP") and any(c.dep_ == "nsubj" for c in t.children) for t in doc[but.i + 2:])


def _holds(text: str, labels: tuple[str, ...], people: Sequence[str]) -> bool:
    """Does `text` name an entity with one of `labels` (a known place counts as GPE), other than `people`?"""
    if "GPE" in labels and _known_place(text):
        return True
    return _entity(text, labels, avoid=people) is not None


_ASKING = re.compile(r"(?i)\b(?:what|which|where|when|who|how)\b(?:'s|’s)?[^.!]{0,40}?\byou(?:r|rs)?\b")


def _asks(ev: EventNode, people: Sequence[str] = ()) -> str | None:
    """The person a sentence puts a question to, when it asks about them ("what's your shirt size, the club is
    ordering kits"): the person it is about when that is not its speaker, else the one the user's question names
    (`people`) when the speaker is not among them. Chat often leaves off the question mark, so the sentence became
    an event of the person asked, or of the one asking."""
    if ev.speaker is None or not _ASKING.search(ev.quote):
        return None
    if ev.speaker != ev.subject:
        return ev.subject
    others = [p for p in people if p != ev.speaker]
    return others[0] if len(others) == 1 else None


def _is_asking(ev: EventNode) -> bool:
    return ev.quote.rstrip().endswith("?") or bool(_ASKING.search(ev.quote))


#: how many messages after asking a person's own statement may come and still answer what they asked
_OWN_ANSWER_WITHIN = 3


def _own_answer_after(graph: Graph, question: EventNode) -> EventNode | None:
    """The first sentence that names something specific, stated (not asked) by the one who asked `question`, in the
    same session within `_OWN_ANSWER_WITHIN` messages after it."""
    after = sorted((ev for ev in graph.events.values() if ev.conversation_id == question.conversation_id
                    and ev.session_id == question.session_id and ev.speaker == question.speaker
                    and question.seq < ev.seq <= question.seq + _OWN_ANSWER_WITHIN), key=_order)
    return next((ev for ev in after if not _is_asking(ev) and _holds_value(ev.quote)), None)


def _reply(graph: Graph, question: EventNode, person: str) -> EventNode | None:
    """The first sentence the person asked said after the question, in the same session: their answer."""
    after = [ev for ev in graph.events.values() if ev.session_id == question.session_id and ev.seq > question.seq
             and ev.speaker == person]
    return min(after, key=_order) if after else None


#: light verbs of the construction lists that say a change only with a particle ("give up", "get rid")
_LIGHT = frozenset({"get", "give", "call", "break", "take", "end"})


@lru_cache(maxsize=1)
def _change_cues() -> frozenset[str]:
    """Lemmas and words that mark a message as telling a change: the construction layer's verbs of retracting,
    dismissing, ending, exchanging and changing (`tracecli.graph.constructions`, light verbs aside), its ended
    states, and the novelty words."""
    from tracecli.graph import constructions as c
    from tracecli.graph.frames import NOVELTY_WORDS

    verbs = set(c.RETRACT_VERBS) | set(c.DISMISS_VERBS) | set(c.DEATH_VERBS) | set(c.EXCHANGE_VERBS) | set(c.CHANGE_VERBS)
    return frozenset((verbs - _LIGHT) | set(c.ENDED_STATES) | set(NOVELTY_WORDS))


def _tells_change(text: str) -> bool:
    cues = _change_cues()
    return any(t.lemma_.lower() in cues or t.lower_ in cues for t in _parsed(text))


def _value_words(value: str | None) -> re.Pattern[str] | None:
    """Matches a sentence naming `value` by its last word or by any capitalised word or number of it ("Virgin" for
    "Virgin Media", "class" for "Spanish evening class"), three characters or more and no function word."""
    from tracecli.text import STOPWORDS

    words = re.findall(r"[\w'’+£$€-]+", value or "")
    words = [w for i, w in enumerate(words) if (i == len(words) - 1 or w[:1].isupper() or any(c.isdigit() for c in w))
             and len(w) >= 3 and w.lower() not in STOPWORDS]
    if not words:
        return None
    return whole_words(*words)


#: entity labels of a specific thing a sentence answer may be about (no date, time, count or measure)
_THING_ENTS = frozenset({"PERSON", "ORG", "GPE", "LOC", "FAC", "PRODUCT", "EVENT", "WORK_OF_ART", "MONEY", "NORP",
                         "LANGUAGE"})


def _one_value(text: str) -> str | None:
    """The one specific thing a sentence names (`_THING_ENTS`), when it names exactly one."""
    found = {e.text for e in _parsed(text).ents if e.label_ in _THING_ENTS}
    return next(iter(found)) if len(found) == 1 else None


def _kind(text: str, value: str) -> str:
    """What kind of value `value` is, as said in `text`: a person's name, another name, a number or sum, a thing."""
    doc = _parsed(text)
    span = next((e for e in doc.ents if e.text == value or value in e.text), None)
    if span is not None and span.label_ == "PERSON" and len(value.split()) == 1:
        return "person"  # a first name (the small model calls many two-word firms PERSON: "Virgin Media")
    if any(c.isdigit() for c in value):
        return "number"
    if any(t.pos_ == "PROPN" and t.text in value.split() for t in doc) or value[:1].isupper():
        return "name"
    return "thing"


def _says_kind(text: str, kind: str, names: re.Pattern[str]) -> bool:
    """Does `text`, the value it replaces left out (`names`), name a value of `kind`?"""
    rest = names.sub(" ", text)
    if kind == "person":
        return any(e.label_ == "PERSON" for e in _parsed(rest).ents)
    if kind == "number":
        return any(c.isdigit() for c in rest)
    if kind == "name":
        from tracecli.text import STOPWORDS

        # a capitalised word counts even first in its sentence, where the small tagger often reads a name as a noun
        return any(t.pos_ == "PROPN" or t.ent_type_ in _THING_ENTS
                   or (t.text[:1].isupper() and t.is_alpha and t.lower_ not in STOPWORDS) for t in _parsed(rest))
    return _holds_value(rest)


def said_over(graph: Graph, ev: EventNode, value: str, as_of: str | None) -> EventNode | None:
    """The latest later message of the same person that names the answer's value again while telling a change
    ("FINALLY ditched Virgin. Hyperoptic got installed today", "bumping the savings from £200 to £350", "Piranesi
    was incredible. now reading The Overstory"): the sentence of it that states what came instead — the first from
    the mention on that names another value of the same kind (a person for a person, a name for a name, a number
    for a number) — or the mention itself when it does. A revision read at query time where build-graph drew no edge; None when there is none."""
    names = _value_words(value)
    if names is None:
        return None
    kind = ""  # read from the parse only once a later mention is found
    moved = re.compile(r"\bfrom\s+(?:\S+\s+){0,2}?\S*?" + names.pattern + r".{0,40}?\bto\b", re.I)
    later: dict[int, list[EventNode]] = {}
    for o in graph.events.values():
        if o.conversation_id == ev.conversation_id and o.subject == ev.subject and o.speaker in (None, ev.subject) \
                and o.seq > ev.seq and (as_of is None or not o.time_anchor or o.time_anchor <= as_of):
            later.setdefault(o.seq, []).append(o)
    found = None
    for seq in sorted(later):
        sentences = {o.sentence_idx: o for o in sorted(later[seq], key=_order)}
        ordered = [sentences[i] for i in sorted(sentences)]
        mention = next((o for o in ordered if names.search(o.quote)), None)
        if mention is None:
            continue
        kind = kind or _kind(ev.quote, value)
        rest = [o for o in ordered if o.sentence_idx > mention.sentence_idx]
        instead = next((o for o in rest if not names.search(o.quote) and _says_kind(o.quote, kind, names)), None)
        if instead is None and _says_kind(mention.quote, kind, names):
            instead = mention
        # the change is told by the sentence naming the value or by the one naming what came instead ("moving up
        # there in the autumn. Pepper is going to be a Scottish dog" tells no change of the dog)
        if instead is not None and (moved.search(mention.quote) or _tells_change(mention.quote)
                                    or _tells_change(instead.quote)):
            found = instead
    return found


def _top_said_later(top: EventNode, ev: EventNode, value: str) -> EventNode | None:
    """The sentence that answers the question best, when the same person said it after the frame or facet answer
    `ev`, it is valid now, names something specific and not the answer's value, and states rather than asks or
    muses: the fact as said later, in other words than the frame or facet reader caught (an implicit revision read
    at query time, for the state now)."""
    if top.id == ev.id or top.subject != ev.subject or top.speaker not in (None, ev.subject) or top.negated \
            or top.conversation_id != ev.conversation_id or _order(top) <= _order(ev) or top.validity_at(None) <= 0:
        return None
    names = _value_words(value)
    if (names is not None and names.search(top.quote)) or _hedged(top) or not _holds_value(top.quote):
        return None
    return top


def _hedged(ev: EventNode) -> bool:
    """Is the sentence a question or a possibility ("if I ever …", "thinking of …") rather than a statement?"""
    if ev.frame is not None and "hedged" in ev.frame:
        return bool(ev.frame["hedged"])
    if ev.quote.rstrip().endswith("?"):
        return True
    from tracecli.graph.frames import is_hedged

    return any(is_hedged(t) for t in _parsed(ev.quote) if t.pos_ in ("VERB", "AUX"))


def _typed_value_near(graph: Graph, shape: QueryShape, question: str, ranked_events: Sequence[tuple[EventNode, float]],
                      as_of: str | None, settings: AskSettings) -> bool:
    """Does one of the three best sentences said by then name a value of the asked type (a colour for "What colour
    …?", a name for "What was the cat called?")? Then the sentence reader has something to answer with."""
    asked = asked_labels(shape, question) if settings.typed_focus else _WANTED_ENTITIES.get(shape.wh)
    people = named_people(graph, shape)
    near = [ev for ev, _ in ranked_events[:3] if ev.validity_at(as_of) > 0
            and (as_of is None or not ev.time_anchor or ev.time_anchor <= as_of)]
    return bool(asked) and any(_holds(ev.quote, asked, people) for ev in near)


def answer_offline(graph: Graph, shape: QueryShape, ranked_events: Sequence[tuple[EventNode, float]],
                   relevance: Mapping[str, float], best_note_cosine: float, as_of: str | None,
                   settings: AskSettings, question: str = "", readers: Readers | None = None) -> Answer:
    """A concise extractive answer with its source refs, or an abstention; its value read right from its sentence
    (`tracecli.query.span`)."""
    answer = _answer(graph, shape, ranked_events, relevance, best_note_cosine, as_of, settings, question, readers)
    if not question:
        return answer
    labels = asked_labels(shape, question) if settings.typed_focus else _WANTED_ENTITIES.get(shape.wh)
    if settings.said_over and _may_follow_newer(answer, graph, shape, question, as_of):
        ev = graph.events[answer.event_ids[0]]
        value = answer.text if answer.text != ev.quote and len(answer.text) < 60 else (_one_value(ev.quote) or ev.value)
        newer = None if ev.negated else said_over(graph, ev, value or "", as_of)
        if newer is None and settings.top_later and as_of is None and answer.method in ("facet", "frame") \
                and ranked_events and not ev.negated and not (ev.frame and holds_role(ev.frame) and asks_role(question)) \
                and not _names_a_relation(ev):
            # (asked for a job, the role someone holds is not replaced by whatever else they say later; nor the name
            # of someone's daughter by the next name said: "my daughter Ines" … "a girl called Maud scored twice")
            newer = _top_said_later(ranked_events[0][0], ev, value or "")
        if newer is not None:
            replaced = _newer_answer(graph, newer, answer, shape, best_note_cosine, question, labels)
            answer = answer if states_asked_code(shape, question, answer, replaced) else replaced
    return _settled(answer, graph, shape, question, settings, labels, as_of)


def _names_a_relation(ev: EventNode) -> bool:
    """Is the event the name of one of the person's family, or a name said beside the noun it names ("my daughter Ines",
    "my colleague Pilar")? (A partner's or a pet's name can change; those are left to the revision edges.)"""
    return bool(ev.frame and ev.frame.get("named")) or bool(ev.facet and ev.facet.startswith("family:"))


def _may_follow_newer(answer: Answer, graph: Graph, shape: QueryShape, question: str, as_of: str | None) -> bool:
    """May a newer statement replace the answer: one read from a sentence (not the valid end of a chain), asked for
    the state now or at a date, not what held before, nor why or whether?"""
    return not answer.abstained and answer.support != "chain" and bool(answer.event_ids) \
        and answer.event_ids[0] in graph.events and (shape.wants_current or as_of is not None) \
        and not asks_before(question) and shape.wh not in ("why", "yesno")


def _newer_answer(graph: Graph, newer: EventNode, answer: Answer, shape: QueryShape, best_note_cosine: float,
                  question: str, labels: tuple[str, ...] | None) -> Answer:
    """The answer read from `newer`, citing its messages first and then the replaced answer's."""
    refs = list(newer.source_refs) + [r for r in answer.source_refs if r not in newer.source_refs]
    replaced = event_answer(graph, newer, shape, best_note_cosine, question, labels)
    replaced.source_refs = refs
    return replaced


def _sentence_events(graph: Graph, ev: EventNode) -> list[EventNode]:
    """The events read from `ev`'s sentence (its own first), through the graph's note index."""
    ids = dict.fromkeys([ev.id, *(e for r in ev.note_rowids for e in graph.by_note.get(r, ()))])
    return [o for o in map(graph.events.__getitem__, ids) if o.seq == ev.seq and o.sentence_idx == ev.sentence_idx]


#: verbs that ask nothing by themselves ("What does she do …?", "Where was he doing …?", "What has she got?")
_AUXILIARIES = frozenset({"be", "do", "have", "get", "go", "make"})


def _sibling_revised(graph: Graph, ev: EventNode, said: str, question: str, as_of: str | None) -> EventNode | None:
    """The newer version of a fact `ev`'s sentence states and that was revised since, when the value read out is
    that fact's value or the question asks its predicate (a sentence states several facts; the answer step may read
    it through the one still valid). A whole-sentence answer names every fact of its sentence, so only the
    predicate the question asks counts for it."""
    lemmas: set[str] | None = None
    read_out = said != ev.quote and len(said) < 60  # a value read from the sentence, not the sentence itself
    for sib in _sentence_events(graph, ev):
        newer = newest_successor(graph, sib, as_of, same_fact=True)
        if newer.id == sib.id or newer.seq <= ev.seq or newer.negated or newer.validity_at(as_of) <= 0:
            continue
        if read_out and sib.value and whole_words(sib.value).search(said):
            return newer
        if sib.frame is not None:
            lemmas = _lemmas(question) - _AUXILIARIES if lemmas is None else lemmas
            if _key_words(sib.frame) & lemmas:
                return newer
    return None


def _settled(answer: Answer, graph: Graph, shape: QueryShape, question: str, settings: AskSettings,
             labels: tuple[str, ...] | None, as_of: str | None = None) -> Answer:
    if settings.sibling_revised and _may_follow_newer(answer, graph, shape, question, as_of):
        newer = _sibling_revised(graph, graph.events[answer.event_ids[0]], answer.text, question, as_of)
        if newer is not None:
            confidence = answer.confidence
            answer = _newer_answer(graph, newer, answer, shape, 1.0, question, labels)
            answer.confidence = confidence
    focus = focus_noun(question) if shape.wh in ("what", "which") else None
    if shape.wh == "when" and not answer.abstained and answer.event_ids and answer.event_ids[0] in graph.events:
        # a frame's time value cut short by the entity reader ("other Sunday" of "every other Sunday")
        said = _time_phrase(graph.events[answer.event_ids[0]].quote)
        if said is not None and answer.text != said and answer.text.lower() in said.lower():
            answer.text = said
    return _past_the_change(settle(answer, graph, shape, question, settings, labels, focus), graph, shape, question)


#: constructions that name an old and a new value in one sentence ("from X to Y", "Y instead of X", "swapped X for Y")
_SUBSTITUTIONS = frozenset({"from_to", "instead_of", "exchange"})


def _past_the_change(answer: Answer, graph: Graph, shape: QueryShape, question: str) -> Answer:
    """A value read from a sentence that tells a change ("film club's changed from the first Thursday of the month
    to every other Sunday") is the value it changed to, unless the question asks what held before: what the
    sentence says holds from then on is Y, not the X the reader met first."""
    if answer.abstained or not answer.event_ids or answer.event_ids[0] not in graph.events \
            or asks_before(question):
        return answer
    ev = graph.events[answer.event_ids[0]]
    # the sentence's constructions sit on one of its events (the one that states a frame of the speaker's)
    told = [c for e in _sentence_events(graph, ev) for c in (e.frame or {}).get("constructions", [])]
    # a part of the sentence (not the whole, which says both values) and its content words
    part = set(content_words(answer.text)) if answer.text.strip() != ev.quote.strip() else set()
    for c in told:
        old, new = c.get("old", ""), c.get("new", "")
        if c.get("name") not in _SUBSTITUTIONS or not old or not new or new.lower() not in ev.quote.lower():
            continue
        said, olds, news = set(word_tokens(answer.text)), set(word_tokens(old)), set(word_tokens(new))
        # or a part of the sentence holds the old value beside the new: the reader took the change's span ("sunday
        # nights to friday" of "from sunday nights to friday teatimes"); the whole sentence says both, and stays
        if said & olds and not said & news or part & set(content_words(old)):
            at = ev.quote.lower().find(new.lower())
            widened = _time_phrase(ev.quote[max(0, at - 10):]) if shape.wh == "when" else None  # "every" before it
            answer.text = widened if widened and new.lower() in widened.lower() else new
            break
    return answer


def read_event(graph: Graph, ev: EventNode, shape: QueryShape, best_note_cosine: float, question: str,
               settings: AskSettings, as_of: str | None = None) -> Answer:
    """The answer read from one chosen sentence the way `answer_offline` reads its own (`tracecli.query.choose`)."""
    labels = asked_labels(shape, question) if settings.typed_focus else _WANTED_ENTITIES.get(shape.wh)
    if shape.wants_current or as_of is not None:
        ev = _instead_of_retraction(graph, ev, question, as_of, now=shape.wants_current)
    return _settled(event_answer(graph, ev, shape, best_note_cosine, question, labels), graph, shape, question,
                    settings, labels, as_of)


def states_asked_code(shape: QueryShape, question: str, kept: Answer, other: Answer) -> bool:
    """Does a question asking for a code or a number (`asked_labels` CODE) get one from `kept` and none from
    `other`? Then `other` cannot replace it."""
    return asked_labels(shape, question) == ("CODE",) and bool(_codes(kept.text)) and not _codes(other.text)


def _answer(graph: Graph, shape: QueryShape, ranked_events: Sequence[tuple[EventNode, float]],
            relevance: Mapping[str, float], best_note_cosine: float, as_of: str | None,
            settings: AskSettings, question: str = "", readers: Readers | None = None) -> Answer:
    found = facet_answer(graph, shape, relevance, as_of, settings)
    if found is not None and question and asked_labels(shape, question) == ("CODE",) and not _codes(found[0].value or ""):
        found = None  # "What is the code for her locker at work?" is not answered by where she works
    if found is not None and found[0].facet == "employer" and question and asks_role(question):
        found = None  # "What is Noor's job?" asks for the role Noor holds, not for the employer
    if found is not None and shape.wh != "yesno" and echoes(question, found[0].value):
        found = None  # "Which fencing club …?" is not answered by the hobby "fencing": the question names it
    if found is not None and question and _other_kind(question, found[0]):
        found = None  # "Which football club …?" is not answered by the sport someone took up
    if found is not None and settings.before_first and question and asks_before(question):
        cut = before_cut(graph, question, named_people(graph, shape))
        if cut is not None and not said_before(found[0], cut):
            found = None  # "What did Tom drive before the Corsa?" is not answered by the car he drives now
    if found is not None and shape.before_event_verb is None and shape.back_when is None:
        # a revision found outside the facet (a construction or an implicit restatement) supersedes it too
        newer = newest_successor(graph, found[0], as_of, same_fact=True)
        if newer.id != found[0].id and newer.value:
            found = (newer, found[1])
    if found is not None and found[0].negated:
        replacement = _replacement(graph, found[0], as_of) or (
            _said_instead(graph, found[0]) if shape.wh != "yesno" and shape.before_event_verb is None else None)
        if replacement is not None:
            found = (replacement, found[1])
    # the asked-for fact of the named person exists as a facet, but only from after that date: abstain, unless a
    # frame said by then answers it ("I'm doing the Spanish evening class" before the facet's "signed up for Italian")
    later_only = found is None and as_of is not None and _known_later(graph, shape, as_of)
    if later_only and not settings.known_later_frame:
        return Answer(text=NOT_ENOUGH, abstained=True, method="abstain")
    if found is None and question and "frames" not in settings.ablate:
        framed = _from_frame(graph, shape, question, relevance, as_of, readers, settings.novelty_bonus,
                             settings.before_first, settings.roles_only)
        if framed is not None and framed.abstained and settings.refusal_typed:
            # what the person did with the asked predicate is another kind of thing, but a sentence ranked near the
            # top names a value of the asked type ("painting the kitchen sage green" for "What colour …?"): the
            # sentence reader below answers rather than nobody
            if _typed_value_near(graph, shape, question, ranked_events, as_of, settings):
                framed = None
        if framed is not None and settings.frame_restate and not framed.abstained and readers is not None \
                and shape.wants_current and shape.says_now and not asks_before(question):
            again = _said_again_later(graph.events[framed.event_ids[0]], ranked_events, as_of, settings, readers)
            if again is not None:
                return event_answer(graph, again, shape, best_note_cosine, question)
        if framed is not None:
            return framed
    if later_only and not (settings.later_only_sentences and _typed_value_near(graph, shape, question, ranked_events,
                                                                              as_of, settings)):
        return Answer(text=NOT_ENOUGH, abstained=True, method="abstain")
    if found is not None:
        ev, conflicts = found
        text = with_article(ev)
        if ev.negated:
            text = f"{ev.subject} no longer: {ev.value}"

        ans = Answer(text=text, abstained=False, event_ids=[ev.id], source_refs=list(ev.source_refs), method="facet",
                     support="chain" if graph.out.get(ev.id) and any(e.label == "updates" for e in graph.out[ev.id]) else "frame",
                     confidence=round(ev.confidence, 3))
        if conflicts:
            ans.conflict = [c.id for c in conflicts]
            ans.text += " (conflicting: " + "; ".join(f"{c.value} per {c.source_refs[0] if c.source_refs else c.id}" for c in conflicts) + ")"
            for c in conflicts:
                ans.source_refs.extend(r for r in c.source_refs if r not in ans.source_refs)
        return ans
    if best_note_cosine < settings.abstain_below or not ranked_events:
        return Answer(text=NOT_ENOUGH, abstained=True, method="abstain")
    best = None
    labels = asked_labels(shape, question) if settings.typed_focus else _WANTED_ENTITIES.get(shape.wh)
    valid = [(ev, sc) for ev, sc in ranked_events if ev.validity_at(as_of) > 0]
    if shape.wh == "why" and valid:
        # a why-question is answered by an event whose cause the graph knows, if one is nearly as relevant
        top = valid[0][1]
        best = next((ev for ev, sc in valid[:4] if sc >= top - 0.03 and _cause_of(graph, ev) is not None), None)
    people = named_people(graph, shape) if asks_before(question) else []
    cut = before_cut(graph, question, people) if asks_before(question) else None
    if cut is not None and best is None:
        # "before X": the best sentence said before X was first mentioned, never one about X itself
        # what held before X is superseded by now: read it from every ranked sentence, not only the valid ones
        before = [(ev, sc) for ev, sc in ranked_events if said_before(ev, cut) and not ev.negated]
        if not before:  # none of the ranked sentences: the person's sentences before X, by their message's relevance
            before = sorted(((ev, relevance.get(ev.id, 0.0)) for ev in graph.events.values()
                             if said_before(ev, cut) and (not people or ev.subject in people)),
                            key=lambda x: (-x[1], x[0].seq))[:8]
        valid = before or valid
    if best is None and valid:
        people = named_people(graph, shape)
        if settings.unhedged_first:
            valid = _unhedged_first(valid, settings.unhedged_margin)
        valid = _typed_first(valid, labels, not_the_name(graph, shape, question), settings, who=shape.wh == "who")
        best = valid[0][0]
        if (shape.wants_current and shape.says_now) or as_of is not None or cut is not None:
            topic = readers.between if readers is not None and cut is None and (
                shape.wants_current or settings.restate_as_of) else None
            keep: Callable[[EventNode], bool] | None = None
            if settings.restate_typed and labels is not None and _holds(best.quote, labels, people):
                asked = labels

                def keep(ev: EventNode) -> bool:  # a restatement of a typed sentence holds a value of that type
                    return _holds(ev.quote, asked, people)
            best = _latest_restatement(valid, topic, settings.restate_margin, settings.restate_topic, keep,
                                       settings.restate_novel_margin)
    people = named_people(graph, shape)
    addressee = _asks(best, people if settings.reply_to_named else ()) if best is not None else None
    if best is not None and addressee is not None:
        best = _reply(graph, best, addressee) or best
    elif best is not None and settings.asker_states and people == [best.speaker] and _is_asking(best) \
            and not _holds_value(best.quote):
        # the person asked the other ("what's your blood type?") and said their own soon after ("I'm O negative");
        # a sentence that names something specific answers by itself ("it's thistle-42 when you come over")
        best = _own_answer_after(graph, best) or best
    focus = focus_noun(question) if settings.value_follows and shape.wh in ("what", "which") else None
    if best is not None and focus:
        from tracecli.graph.lexicon import answer_class

        # (a date said next to a time asked for is as often another date, nor are dates reduced; a code asked for
        # is not the span of time a sentence about the code names: "found the locker code at last after a month. 3390")
        if answer_class(focus, place=False) != "time" and (not _holds_value(best.quote) or (
                _mentions(best.quote, focus) and not _holds_value(best.quote, times=False))):
            best = _value_said_next(graph, best) or best
    if best is None:
        if as_of is not None:
            # nothing relevant had been said by that date
            return Answer(text=NOT_ENOUGH, abstained=True, method="abstain")
        best = newest_successor(graph, ranked_events[0][0], as_of)
    elif shape.wants_current:
        best = newest_successor(graph, _instead_of_retraction(graph, best, question, as_of), as_of)
    elif as_of is not None:
        best = _instead_of_retraction(graph, best, question, as_of, now=False)
    return event_answer(graph, best, shape, best_note_cosine, question, labels)


def _instead_of_retraction(graph: Graph, ev: EventNode, question: str, as_of: str | None,
                           now: bool = True) -> EventNode:
    """A retraction asked what holds now ("also I quit the climbing wall." for "How does she keep fit these days?") is
    answered by what was said instead (`_drawn_instead`), or by the sentence of its message that says it
    (`_told_next`); any other sentence is itself. Asked what held at a date (`now` False), only the message's own
    next sentence answers: an edge drawn to a later message may lead past the date's state."""
    if asks_before(question):
        return ev
    drawn = _drawn_instead(graph, ev, as_of) if now and ev.negated and ev.value else None
    return drawn or _told_next(graph, ev) or ev


def _ends_something(ev: EventNode) -> bool:
    """Does the sentence end or retract something: the construction layer read an old value from it with no new one
    beside it ("I've left Vodacell.", "I cancelled the paper round, too early."; a mere negation is not one: "can't,
    I'm doing weekend shifts at the Anchor")?"""
    told = ev.frame.get("constructions", []) if ev.frame else []
    return any(c.get("old") and not c.get("new") and c.get("name") != "negation" for c in told)


def _told_next(graph: Graph, ev: EventNode) -> EventNode | None:
    """The sentence after a retraction in the same message, by the same speaker, that says something as new or takes
    something up and names a value: chat tells a change old first, new last ("phone update: I've left Vodacell. I'm
    on Skylink now"; "handed in my notice at Brightline. starting at Kestrel Games in May")."""
    if not _ends_something(ev):
        return None
    later = _said_after(graph, ev)
    return next((o for o in later if not o.negated and (_novel(o) or _takes_up(o)) and _holds_value(o.quote, times=False)),
                None)


def _takes_up(ev: EventNode) -> bool:
    """Does the sentence take something up: a verb of changing or choosing (`constructions.CHANGE_VERBS`: "starting at
    Kestrel Games in May", "joined the Harriers"), light verbs aside, not negated?"""
    from tracecli.graph.constructions import CHANGE_VERBS

    verbs = set(CHANGE_VERBS) - _LIGHT
    return any(t.pos_ == "VERB" and t.lemma_.lower() in verbs and not any(c.dep_ == "neg" for c in t.children)
               for t in _parsed(ev.quote))


def _drawn_instead(graph: Graph, retraction: EventNode, as_of: str | None) -> EventNode | None:
    """The first statement of the same person, in the retraction's message or after it, that an `updates` edge makes
    the replacement of a statement of the retracted value ("also I quit the climbing wall. I've taken up rowing at
    the lake instead": the edge runs from 'rowing' to "leg day at the climbing wall today")."""
    gone = _words(retraction.value)
    found = [src for src_id, edges in graph.out.items() if (src := graph.events.get(src_id)) is not None
             and src.subject == retraction.subject and src.conversation_id == retraction.conversation_id
             and not src.negated and src.value and src.seq >= retraction.seq
             and (as_of is None or not src.time_anchor or src.time_anchor <= as_of)
             and any(e.label == "updates" and e.dst in graph.events
                     and gone <= _words(graph.events[e.dst].value) | _words(graph.events[e.dst].quote) for e in edges)]
    return min(found, key=_order) if found else None


def event_answer(graph: Graph, best: EventNode, shape: QueryShape, best_note_cosine: float,
                 question: str = "", labels: tuple[str, ...] | None = None) -> Answer:
    """The answer read from one event: the part of it the question asks for (`labels`: the entity types a
    what/which question's noun asks for, `asked_labels`), with its (and its cause's) sources."""
    value = extract_value(graph, best, shape, question, labels)
    refs = list(best.source_refs)
    ids = [best.id]
    if shape.wh == "why":
        cause = _cause_of(graph, best)
        if cause is not None:
            ids.append(cause.id)
            refs.extend(r for r in cause.source_refs if r not in refs)
    return Answer(text=value, abstained=False, event_ids=ids, source_refs=refs, method="event", support="sentence",
                  confidence=round(max(0.0, min(1.0, best_note_cosine)) * 0.6, 3))
