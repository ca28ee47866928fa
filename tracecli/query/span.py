"""Reading the answer span out of the sentence the answer step chose.

The frame, facet and chain readers hand back a value read at build time ("americano", "only typeface", "door");
this stage checks it against its own sentence and against what the question asks for, over the sentence's
parse, before it is given as the answer:

- **the whole noun phrase** — a value cut out of a longer name or a modified noun is widened to the noun phrase
  it heads ("americano" in "my usual iced americano" → "usual iced americano"; "Niro" in "a little Kia Niro");
  a value that is itself only a modifier ("decaf" in "decaf americano") climbs to the noun it modifies;
- **a value that cannot answer** is replaced by its sentence, which says what was said: a value whose head is
  the very noun the question asks for with nothing but adjectives before it (asked "Which typeface …?", the
  value "the only typeface" describes the answer and is not it), or one that is not a thing at all (an
  adjective, a verb: "terrified" for a choir) unless a colour or a manner is asked;
- **a manner is said by a clause**: asked "How does Noor get to work?" (not how much, many, long, …), the answer is
  the sentence, not one noun read from it ("door" out of "an e-bike, twenty minutes door to door");
- **a retraction with nothing to replace it** ("X no longer: Thursdays") is given as the sentence that
  retracted it, which usually says what replaced it ("the physio moved me from Thursdays to Mondays").

General constructions over spaCy's parse only; no word lists. Each rule is a setting (`AskSettings.span_*`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from tracecli.graph.lexicon import is_kind_of
from tracecli.query.frame_answer import asks_role
from tracecli.query.paths import Graph
from tracecli.query.settings import AskSettings
from tracecli.query.shape import QueryShape
from tracecli.text import whole_words

#: dependency labels of the words that narrow a noun down (kept when a value is widened to its noun phrase)
_NARROWING = frozenset({"compound", "amod", "nummod", "nmod", "npadvmod", "poss"})
_HOW_AMOUNT = re.compile(r"(?i)\bhow\s+(?:much|many|long|old|often|far|big|tall|fast|late|early|soon)\b")
#: entity labels of names (a value inside one is widened to the whole name)
_NAMED = frozenset({"ORG", "PERSON", "GPE", "FAC", "LOC", "PRODUCT", "WORK_OF_ART", "EVENT", "NORP"})
#: parts of speech a value can be (a thing, a name, a number)
_THINGS = frozenset({"NOUN", "PROPN", "NUM", "X", "SYM"})


@lru_cache(maxsize=2048)
def parsed(text: str) -> Any:
    """A sentence's spaCy parse, once per text: the answer step reads the same few sentences' entities and spans
    several times (the typed preference, the restatement check, the value read out)."""
    from tracecli.graph.nlp import get_nlp

    return get_nlp()(text)


def locate(doc: Any, value: str) -> Any | None:
    """The tokens of `doc` that spell `value` (case-insensitively, on word boundaries), or None."""
    if not value:
        return None
    m = whole_words(value).search(doc.text)
    return doc.char_span(m.start(), m.end(), alignment_mode="expand") if m else None


def _head_noun(span: Any) -> Any:
    """The noun the span's head narrows down when the head is only a modifier ("decaf" of "decaf americano")."""
    head = span.root
    while head.dep_ in ("compound", "amod", "nmod") and head.head.pos_ in ("NOUN", "PROPN") and head.head.i > head.i:
        head = head.head
    return head


def _narrowing(tok: Any) -> list[Any]:
    """The contiguous words just left of `tok` that narrow it down (modifiers and their own modifiers), no
    determiner or possessive pronoun."""
    out: list[Any] = []
    for child in sorted((c for c in tok.lefts if c.dep_ in _NARROWING), key=lambda c: -c.i):
        if child.pos_ in ("PRON", "DET") or child.tag_ in ("PRP$", "WP$"):
            break
        sub = [t for t in child.subtree if t.pos_ not in ("DET", "PRON", "PUNCT") and t.tag_ != "POS"]
        out.extend(sub)
    return out


def widened(text: str, value: str) -> str:
    """`value` widened to the noun phrase it belongs to in `text`: the noun it modifies, with the words that narrow
    that noun down; `value` itself when it is not found or nothing widens it."""
    doc = parsed(text)
    span = locate(doc, value)
    if span is None or not len(span):
        return value
    phrase = _noun_phrase(doc, span, value)
    # a name the entity reader found whole, of which the value is only a part ("Son" of "Kowalski & Son")
    named = next((e for e in doc.ents if e.label_ in _NAMED and e.start <= span.start and span.end <= e.end
                  and len(e) > len(span) and not any(_joins_two(t) for t in e)), None)
    return named.text if named is not None and named.text not in phrase else phrase


def _joins_two(tok: Any) -> bool:
    """A word that joins two values the entity reader may have read as one name: a preposition ("Barclays to
    Monzo"), a comma or a conjunction ("Mochi, Biscuit", "Mochi and Biscuit"); not "of" or "&" ("Bank of
    England", "Kowalski & Son")."""
    return tok.lower_ not in ("of", "&") and (tok.pos_ in ("ADP", "CCONJ") or (tok.is_punct and tok.text not in ".'’-"))


def _noun_phrase(doc: Any, span: Any, value: str) -> str:
    head = _head_noun(span)
    if head.i < span.start:
        return value
    words = sorted({t.i for t in _narrowing(head)} | {head.i} | set(range(span.start, span.end)))
    # only a contiguous run that holds the value and ends at the noun
    start = words[-1]
    for i in reversed(words):
        if i == start or i == start - 1:
            start = i
    if start > span.start or head.i < span.end - 1:
        return value
    out = doc[start: head.i + 1].text
    return out if len(out) > len(value) else value


def cannot_answer(text: str, value: str, focus: str | None, shape: QueryShape, labels: tuple[str, ...] | None) -> bool:
    """Is `value` (read from `text`) not an answer to the question: the asked noun itself with only adjectives
    ("only typeface" asked "Which typeface …?"), or no thing at all ("terrified"), unless a colour or a manner
    ("How …?") is asked?"""
    doc = parsed(text)
    span = locate(doc, value)
    if span is None or not len(span):
        return False
    root = span.root
    named = any(t.pos_ in ("PROPN", "NUM") or t.like_num or any(c.isdigit() for c in t.text) for t in span)
    if focus and root.lemma_.lower() == focus and not named \
            and not any(t.dep_ in ("compound", "nmod") and t.pos_ in ("NOUN", "PROPN") for t in span if t.i != root.i):
        return True
    if named or root.pos_ in _THINGS or (focus and is_kind_of(value, focus)):
        return False  # (a kind of the asked noun is a thing however the tagger reads it: "the oboe" as an adjective)
    return not ((labels and "COLOR" in labels) or shape.wh == "how")


def settle(answer: Any, graph: Graph, shape: QueryShape, question: str, settings: AskSettings,
           labels: tuple[str, ...] | None, focus: str | None) -> Any:
    """The answer with its value read right (see the module's docstring); the answer itself when nothing applies."""
    if answer.abstained or not answer.event_ids or answer.event_ids[0] not in graph.events:
        return answer
    ev = graph.events[answer.event_ids[0]]
    text = answer.text
    if shape.wh in ("why", "when", "yesno") or not text or text == ev.quote:
        return answer
    if settings.span_retraction and ev.negated and text.startswith(f"{ev.subject} no longer:"):
        answer.text = ev.quote
        return answer
    if " (conflicting: " in text:
        return answer  # a value with its conflicts listed: left as it is
    if settings.span_manner and shape.wh == "how" and not _HOW_AMOUNT.search(question):
        answer.text = ev.quote  # "How does Noor get to work?": the manner is said by the clause, not one noun of it
        return answer
    if settings.span_doubt and cannot_answer(ev.quote, text, focus, shape, labels):
        answer.text = ev.quote
        return answer
    if settings.span_widen and not asks_role(question):
        # (a role answers an occupation question by itself: "firefighter", not "firefighter life")
        answer.text = widened(ev.quote, text)
    return answer


__all__: Sequence[str] = ["cannot_answer", "locate", "parsed", "settle", "widened"]
