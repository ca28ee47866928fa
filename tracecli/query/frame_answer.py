"""Answers from open frames: the value at the valid end of the revision chain of the frame the question asks about.

The question is read like a statement (`tracecli.graph.frames`): who it is
about, its predicate ("Where does Maya live?" → live; "What is Wren's gym
locker code?" → locker code) and the type of answer its question word wants.
Each frame event of that person is scored by how much of its key the question
names, how close its message is to the question, and whether its value has
the wanted type. The best one is followed along `updates` edges to the value
that holds now (or at the as-of date); a "before X" / "used to" question takes
the value that preceded X instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tracecli.graph.frames import PROPER_TYPES
from tracecli.query.paths import EventNode, Graph
from tracecli.query.shape import QueryShape

#: answer types a question word asks for (None: any)
WANTED = {"where": PROPER_TYPES | {"thing"}, "when": frozenset({"date"}), "who": PROPER_TYPES,
          "how": None, "what": None, "which": None, "why": None, "yesno": None}
#: words of a question that say nothing about the predicate (question words, auxiliaries, function words)
_QUESTION_WORDS = frozenset(
    "what which who whom whose where when why how is are was were am be been do does did has have had can could "
    "will would should the a an of to in on at for with by from now currently still these days right moment "
    "called named name kind sort type go going".split()
)
_PAST_CUES = re.compile(r"(?i)\b(used to|previously|originally|formerly|before)\b")
_BEFORE_VALUE = re.compile(r"(?i)\bbefore\s+(?:(?:he|she|they|[A-Z][\w'’-]*)\s+)?(?:\w+ing\s+|\w+ed\s+)?(?:to\s+|on\s+|for\s+|at\s+|with\s+|into\s+)?(?P<value>.+?)\s*\??$")


@dataclass
class FrameAnswer:
    event: EventNode
    chosen: EventNode  # the frame the question matched, before following the chain
    score: float
    support: str  # chain | frame


def _lemmas(question: str) -> set[str]:
    from tracecli.graph.nlp import get_nlp

    doc = get_nlp()(question)
    return {(t.lemma_ or t.text).lower() for t in doc if not t.is_punct} | {t.lower_ for t in doc}


def _key_words(ev: EventNode) -> set[str]:
    key = (ev.frame or {}).get("key", "")
    words = set(key.split()) - {"in", "at", "as", "for", "with", "on", "to", "into", "from", "of", "by", "about", "be"}
    return words


def asked_noun(question: str) -> str | None:
    """The noun a 'what / which N' question asks for ('What car does she drive?' → 'car'), lemmatised."""
    from tracecli.graph.nlp import get_nlp

    for tok in get_nlp()(question):
        if tok.lower_ in ("what", "which") and tok.dep_ == "det" and tok.head.pos_ == "NOUN":
            return (tok.head.lemma_ or tok.head.text).lower()
    return None


def predecessor(graph: Graph, ev: EventNode) -> EventNode | None:
    """The latest event that `ev` updates (what held before it)."""
    older = [graph.events[e.dst] for e in graph.out.get(ev.id, []) if e.label == "updates" and e.dst in graph.events]
    older = [o for o in older if not o.negated and o.value]
    return max(older, key=lambda o: (o.seq, o.sentence_idx)) if older else None


def successor(graph: Graph, ev: EventNode, as_of: str | None) -> EventNode:
    """Follow `updates` forward to the newest version said by `as_of` (or now)."""
    current, seen = ev, {ev.id}
    while True:
        newer = [graph.events[e.src] for e in graph.into.get(current.id, []) if e.label == "updates" and e.src not in seen]
        if as_of is not None:
            newer = [n for n in newer if not n.time_anchor or n.time_anchor <= as_of]
        if not newer:
            return current
        current = max(newer, key=lambda n: (n.seq, n.sentence_idx, not n.negated))
        seen.add(current.id)


def frame_answer(graph: Graph, shape: QueryShape, question: str, relevance: Mapping[str, float],
                 as_of: str | None, people: Sequence[str]) -> FrameAnswer | None:
    """The frame event that answers the question, followed to the right end of its revision chain."""
    qwords = _lemmas(question) - _QUESTION_WORDS - {p.lower() for p in people}
    if not qwords:
        return None
    wanted = WANTED.get(shape.wh)
    before_value = None
    m = _BEFORE_VALUE.search(question) if "before" in question.lower() else None
    if m:
        before_value = set(re.findall(r"\w+", m.group("value").lower())) - _QUESTION_WORDS
    noun = asked_noun(question)
    best: tuple[float, EventNode] | None = None
    for ev in graph.events.values():
        if not ev.frame or not ev.value or ev.frame.get("key") in ("retract", "it") or ev.frame.get("hedged"):
            continue
        if people and ev.subject not in people:
            continue
        if ev.negated:
            continue
        if as_of is not None and ev.time_anchor and ev.time_anchor > as_of:
            continue
        key = _key_words(ev)
        if not key:
            continue
        hit = len(key & qwords) / len(key)
        if hit == 0:
            continue
        vtype = ev.frame.get("type", "thing")
        type_ok = 1.0 if wanted is None or vtype in wanted else 0.0
        if wanted is not None and not type_ok:
            continue
        if noun is not None and noun not in key and not re.search(rf"(?i)\b{re.escape(noun)}", ev.quote):
            continue  # "What car ...": a frame that never mentions a car does not answer it
        value_words = set(re.findall(r"\w+", ev.value.lower()))
        if value_words and value_words <= qwords:
            continue  # the question names this value: it is not the answer (unless "before X", below)
        score = 0.55 * hit + 0.45 * relevance.get(ev.id, 0.0)
        if best is None or (score, ev.seq, ev.sentence_idx) > (best[0], best[1].seq, best[1].sentence_idx):
            best = (score, ev)
    if before_value:
        named = _event_with_value(graph, before_value, people, qwords)
        if named is not None:
            prev = predecessor(graph, named)
            if prev is not None:
                return FrameAnswer(prev, named, 0.9, "chain")
    if best is None:
        return None
    score, chosen = best
    if _PAST_CUES.search(question) and as_of is None:
        current = successor(graph, chosen, None)
        prev = predecessor(graph, current)
        if prev is not None:
            return FrameAnswer(prev, chosen, score, "chain")
    end = successor(graph, chosen, as_of)
    return FrameAnswer(end, chosen, score, "chain" if end.id != chosen.id else "frame")


def _event_with_value(graph: Graph, words: set[str], people: Sequence[str], qwords: set[str]) -> EventNode | None:
    """The latest event of the people named whose value the question names after 'before'."""
    found = [ev for ev in graph.events.values() if ev.value and not ev.negated and (not people or ev.subject in people)
             and (vw := set(re.findall(r"\w+", ev.value.lower()))) and (vw <= words or (words and words <= vw))]
    return max(found, key=lambda ev: (ev.seq, ev.sentence_idx)) if found else None
