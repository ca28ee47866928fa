"""Variants: the same thing of a participant said again with another number or colour.

A chat often revises a fact without a construction and without a verb that a
frame would key on: "the 4am shift is killing me" … "the 6am shift is so much
more civilised"; "I've still got two hives" … "I'm down to three hives"; "I'm a
green belt now" … "tying my brown belt for the first time". What stays is the
head noun ('shift', 'hive', 'belt') and what changes is a modifier of a closed
kind: a number (a count, a clock time, "ten-minute"), a label ("Level 3", "plot 9") or a colour
(WordNet's colour words, `tracecli.graph.lexicon.is_colour`).

`read_variants` reads such noun phrases from the parse of a participant's
statement (questions, possibilities and negated clauses state none; a phrase in
another person's clause or possession is theirs). `tracecli.graph.frames`
keeps each as a frame's `variant` (head, kind, mark, marked), and
`tracecli.graph.revise.implicit_edges` links two variants of the same subject,
head and kind with different marks as a revision when the later one is said as
the one held or as new (`_marked`). Adjectives of judgement or
size ("the big colony") are no mark: only numbers and colours are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracecli.graph.frames import (NOVELTY_WORDS, asked_part, clause_negated, is_hedged, resolve_person, subject_of_clause,
                                   whole_words)

#: entity labels whose head noun is a measure, not a thing held ("5 miles", "£10 a month", "40%", "9pm"); a date is
#: one when its head is a time noun ("six weeks"), not when the tagger reads a level as one ("Grade 5")
_MEASURE_LABELS = frozenset({"MONEY", "QUANTITY", "PERCENT", "TIME"})
#: modifiers that make up a variant's mark
_MARK_DEPS = frozenset({"nummod", "amod", "compound"})
#: parts of speech that are never part of a mark ("up to 50 books" is marked by 50)
_NOT_MARK_POS = frozenset({"ADP", "PART", "ADV", "DET", "PRON", "PUNCT", "CCONJ", "SCONJ"})
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|next")
#: third-person pronouns: a phrase in their clause is someone else's
_THIRD = frozenset({"he", "she", "they", "him", "her", "them"})


@dataclass(frozen=True)
class Variant:
    """A noun phrase whose head a number or a colour distinguishes."""

    subject: str
    head: str  # lower-case lemma of the head noun
    kind: str  # 'number' (a count before the noun), 'label' (a numeral after it: "plot 9"), 'colour'
    mark: str  # the distinguishing words, lower case ("4am", "blue", "three", "level 2")
    text: str  # the phrase as written, without a determiner ("4am shift", "brown belt")
    head_i: int  # the head token's index in the doc
    tokens: tuple[int, ...]
    marked: bool = False  # said as the one held ("the 6am shift", "my brown belt") or as new ("… now", "down to …")


def _marks(head: Any) -> list[Any]:
    """The head's modifiers: the left ones with theirs ("grey corner", "ten-minute"), and a numeral after it
    ("Level 2", "plot 14")."""
    out: list[Any] = []
    stack = [c for c in head.children if c.dep_ in _MARK_DEPS and (c.i < head.i or c.dep_ == "nummod")]
    while stack:
        c = stack.pop()
        if c.lower_ in NOVELTY_WORDS or c.pos_ in _NOT_MARK_POS:
            continue
        out.append(c)
        stack.extend(g for g in c.children if g.dep_ in _MARK_DEPS)
    return sorted(out, key=lambda t: t.i)


def _kind(marks: Sequence[Any]) -> str | None:
    from tracecli.graph.lexicon import is_colour

    if any(t.ent_type_ == "ORDINAL" or _ORDINAL.fullmatch(t.lower_) for t in marks):
        return None  # "the first time", "the 2nd XI": a rank in a sequence, not a value
    if any(t.like_num or any(ch.isdigit() for ch in t.text) for t in marks):
        return "number"
    # (a colour said as an adjective: "wine course", "rose garden" are kinds, not colours)
    if any(t.dep_ in ("amod", "compound") and t.pos_ == "ADJ" and is_colour(t.lemma_ or t.text) for t in marks):
        return "colour"
    return None


def _measure(tok: Any) -> bool:
    """Is the noun a time ("six weeks", "10 mins") or a unit of measurement ("8 lbs")? What a number before it
    says is an amount, not a thing held."""
    from tracecli.graph.lexicon import answer_class, is_unit

    lemma = (tok.lemma_ or tok.text).lower()
    return tok.like_num or answer_class(lemma, place=False) == "time" or lemma in ("min", "mins", "hr", "hrs") \
        or is_unit(lemma)


def _owner(head: Any, speaker: str, other: str | None, participants: Sequence[str]) -> str | None:
    """Whose the phrase is: a possessor's ("my", "your", a participant's), else the subject of its clause when
    that is a participant, else the speaker's when the clause has no person as its subject ("the 4am shift is
    killing me"); None for anyone else's."""
    poss = next((c for c in head.children if c.dep_ == "poss"), None)
    if poss is not None:
        return resolve_person(poss, speaker, other, participants)
    verb = head
    while verb.pos_ not in ("VERB", "AUX") and verb.head.i != verb.i:
        verb = verb.head
    if verb.pos_ not in ("VERB", "AUX") or clause_negated(verb) or is_hedged(verb):
        return None if verb.pos_ in ("VERB", "AUX") else speaker
    subj = subject_of_clause(verb)
    if subj is None or subj.i == head.i or head.i in {t.i for t in subj.subtree}:
        return speaker
    who = resolve_person(subj, speaker, other, participants)
    if who is not None:
        return who
    if subj.lower_ in _THIRD or subj.ent_type_ == "PERSON" or subj.pos_ == "PROPN":
        return None
    if subj.pos_ == "NOUN":
        from tracecli.graph.lexicon import answer_class

        if answer_class(subj.lemma_ or subj.text, place=False) == "person" or any(c.dep_ == "poss" for c in subj.children):
            return None  # "my sister has two kids", "the coach moved me to blue": another person's
    return speaker


def _marked(head: Any, sent: Any) -> bool:
    """Is the phrase said as the one thing of its kind held ("the 6am shift", "my brown belt") or as a new value
    (a novelty word in the sentence, "now"; the object of "to", "down to three hives")? A bare count or label said
    in passing ("episode 12 is up", "200 pages into it") is as often one of a series as a revision."""
    if any(c.dep_ == "poss" or (c.dep_ == "det" and c.lower_ in ("the", "my", "our", "your")) for c in head.children):
        return True
    if head.dep_ == "pobj" and head.head.lower_ == "to":
        return True
    return any(t.lower_ in NOVELTY_WORDS for t in sent)


def read_variants(sent: Any, speaker: str, other: str | None, participants: Sequence[str]) -> list[Variant]:
    """The variants a statement says of a participant (none in the question after a statement)."""
    asked = asked_part(sent)
    out: list[Variant] = []
    for tok in sent:
        if tok.i >= asked or tok.pos_ not in ("NOUN", "PROPN") or tok.dep_ == "compound":
            continue
        if tok.ent_type_ in _MEASURE_LABELS or _measure(tok) or tok.lemma_.lower() == "number":
            continue  # ("number 62" names nothing by itself)
        marks = _marks(tok)
        kind = _kind(marks) if marks else None
        if kind is None:
            continue
        if kind == "number" and all(m.i > tok.i for m in marks if m.like_num or any(ch.isdigit() for ch in m.text)):
            kind = "label"  # a numeral after the noun names one of a series ("plot 9", "Level 2"); before it, counts
        owner = _owner(tok, speaker, other, participants)
        if owner is None:
            continue
        run = whole_words([t for t in sent if min(m.i for m in marks + [tok]) <= t.i <= max(m.i for m in marks + [tok])])
        if not run:
            continue
        text = sent.doc[run[0].i: run[-1].i + 1].text
        mark = " ".join(t.lower_ for t in marks)
        out.append(Variant(owner, (tok.lemma_ or tok.text).lower(), kind, mark, text, tok.i, tuple(t.i for t in run),
                           _marked(tok, sent)))
    return out
