"""Revision linking over open frames: `updates` edges without a facet list.

Three ways an event revises an earlier one of the same subject, each named in
the edge's justification:

* **construction** — the sentence retracts or substitutes a value
  (`tracecli.graph.constructions`); the old value is located by lemma / word
  match among the subject's earlier events, the edge goes from the new
  statement (the replacement in the same message when there is one, else the
  retraction itself) to that event;
* **implicit** — a later frame of the same subject with a compatible key (the
  same predicate, or a change-of-state verb whose value-masked statement is
  close in MiniLM space), a value of the same type and a different value.
  Frames that usually hold several values at once (a common-noun value of an
  ordinary verb: hobbies, friends, things done) are linked only when the new
  statement marks its value as new ("now", "new", "instead", a change verb);
* **facet** — the typed facets of `tracecli.graph.link` (a precision layer).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from functools import lru_cache

import numpy as np

from tracecli.graph.constructions import CHANGE_VERBS
from tracecli.graph.frames import ORIGIN_KEY, PROPER_TYPES
from tracecli.graph.lexicon import is_shouted
from tracecli.graph.link import EdgeRec, EventRec, same_value

#: prepositions after which a verb's value is a single state (where one lives, works, studies, trains)
FUNCTIONAL_PREPS = frozenset({"in", "at", "as", "for", "to", "with", "on", "into"})
#: value types that name one thing (a place, an organisation, a date, a code): one at a time per key
SINGLE_TYPES = PROPER_TYPES | {"date", "number", "code"}
#: cosine between value-masked statements above which two different keys state the same fact
KEY_SIMILARITY = 0.6
#: value types of a name of a thing (an organisation, a product): two such values of one person may be one fact's
#: (a place is close to its language and its people in MiniLM space: "Lisbon" ~ "Portuguese")
NAMED_TYPES = frozenset({"org", "name"})
#: cosine between two named values of one person above which they are values of one fact (on the gold records of
#: the dev sets, 0.25 of the successive values of one fact and 0.002 of two values of different facts reach 0.5)
VALUE_SIMILARITY = 0.5
#: a value-similarity match never outranks a same-key one (1.0)
VALUE_SIMILARITY_CAP = 0.99
#: content words an "it's Y now" message must share with an earlier statement to restate its topic
ANAPHORA_SHARED = 2

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass
class FrameRec:
    """An event as revision linking sees it."""

    ev: EventRec
    key: str
    vtype: str
    head: str
    novelty: bool = False
    copular: bool = False
    verb: str = ""
    hedged: bool = False
    named: bool = False  # a name said beside the noun it names ("my colleague Pilar")
    bare: bool = False  # a role said as a bare noun phrase ("nice coach, very patient")
    variant: tuple[Any, ...] | None = None  # (head, kind, mark, marked) of a variant ("the 4am shift"; `variants`)
    constructions: list[dict[str, str]] = field(default_factory=list)

    @property
    def masked(self) -> str:
        if self.key == "be":
            return "I am X"
        return f"my {self.key} is X" if self.copular else f"I {self.key} X"


_WORD = re.compile(r"[a-z0-9]+")
#: a sentence that asks rather than states ("why spanish tho", "are you still at X?")
_ASKS = re.compile(r"(?i)\?|^\W*(?:why|what|which|where|when|who|how|are|is|do|does|did)\b")


def _words(text: str | None) -> set[str]:
    return set(_WORD.findall((text or "").lower())) - {"the", "a", "an", "my", "our", "of"}


def value_matches(old_text: str, old_head: str, ev: EventRec) -> bool:
    """Does an earlier event's value name the retracted value ('the hospital' ~ 'nurse at the hospital')?"""
    if not ev.value:
        return False
    target, have = _words(old_text), _words(ev.value)
    if not target or not have:
        return False
    if target <= have or have <= target:
        return True
    if old_head and (old_head.lower() in have or (ev.frame or {}).get("head") == old_head.lower()):
        return True
    return False


def _compatible_types(a: str, b: str) -> bool:
    return a == b or (a in PROPER_TYPES and b in PROPER_TYPES)


def _key_head(key: str) -> str:
    words = key.split()
    # 'locker code at gym' → 'code'; 'favourite band' → 'band'
    for i, w in enumerate(words):
        if w in ("at", "in", "for", "of", "on", "with", "from"):
            return words[i - 1] if i else w
    return words[-1] if words else ""


def _functional(f: FrameRec) -> bool:
    """Does the frame's key hold one value at a time?"""
    if f.copular:
        return f.key != "be" or f.vtype in SINGLE_TYPES
    prep = f.key.split()[-1] if len(f.key.split()) > 1 else ""
    return f.vtype in SINGLE_TYPES and (prep in FUNCTIONAL_PREPS or f.verb in CHANGE_VERBS)


def _same_key(a: FrameRec, b: FrameRec) -> bool:
    if a.key == b.key:
        return True
    if a.copular and b.copular and a.key != "be" and b.key != "be":
        # (where someone is from is no placement: "I'm in Leeds now" does not revise "I'm from Lyon")
        return _key_head(a.key) == _key_head(b.key) and ORIGIN_KEY not in (a.key, b.key)
    return False


def construction_edges(frames: Sequence[FrameRec], known: Sequence[EventRec]) -> list[EdgeRec]:
    """Edges from retraction / substitution constructions."""
    by_subject = _by_subject(known)
    types = _frame_types(frames)
    by_message: dict[int, list[FrameRec]] = defaultdict(list)
    for f in frames:
        by_message[f.ev.seq].append(f)
    edges: list[EdgeRec] = []
    for f in frames:
        for c in f.constructions:
            old_text, old_head, new_text = c.get("old", ""), c.get("old_head", ""), c.get("new", "")
            old_text = re.split(r"\s*[,;:!?]\s", old_text)[0]  # "Middlemarch, sorry George Eliot": a phrase run on
            if new_text and old_text.endswith(new_text) and old_text != new_text:
                # "traded HelloFresh for Gousto" parsed with the for-phrase inside the old value's phrase
                old_text = re.sub(r"\s+(?:for|with|to|into|by)\s*$", "", old_text[: -len(new_text)].rstrip())
            if not old_text:
                continue
            before = [e for e in by_subject[f.ev.subject] if e.order < (f.ev.seq, 0) and not e.negated]
            earlier = [e for e in before if e.value]
            target = next((e for e in reversed(earlier) if value_matches(old_text, old_head, e)), None)
            if target is None:
                # the old value was said in passing, outside any frame ("fed up with Three"): the latest of the
                # subject's own sentences that names it
                if old_text[:1].isupper() and not is_shouted(old_text):  # a name, said anywhere by the subject: in full, else by its capitalised
                    # words ("the Moseley flatshare" said as "my flatshare in Moseley")
                    names = [w for w in re.findall(r"[\w'’-]+", old_text) if w[:1].isupper() and len(w) > 2]
                    patterns = [[old_text]] + ([names] if names and len(names) < len(old_text.split()) else [])
                    for pattern in patterns:
                        # (in any case: chat writes names in lower case too, "tuesdays at the library")
                        said = re.compile("".join(rf"(?=.*(?<![\w'’]){re.escape(w)}(?![\w'’]))" for w in pattern),
                                          re.IGNORECASE)
                        target = next((e for e in reversed(before) if e.speaker == f.ev.subject
                                       and said.match(e.quote)), None)
                        if target is not None:
                            break
                elif old_head:  # a common noun or a number: only in a statement of the subject's own ("I work at the
                    # hospital", "the cetirizine isn't touching it", "£200 a month into the ISA"); a statement without a
                    # frame counts for a substitution ("from X to Y") when it names every word of the value and asks
                    # nothing
                    said = re.compile(rf"(?i)(?<![\w'’]){re.escape(old_head)}s?(?![\w'’])")
                    whole = _words(old_text)
                    target = next((e for e in reversed(before) if e.speaker == f.ev.subject and said.search(e.quote)
                                   and (e.frame or (new_text and whole <= _words(e.quote)
                                                    and not _ASKS.search(e.quote)))
                                   and not _describes_other(e, old_text, old_head)), None)
            if target is None:
                continue
            new = None
            stated: EventRec | None = None  # the new value's event in the message when it states no frame (a facet's)
            if new_text:
                new = next((g for g in by_message[f.ev.seq] if g.ev.subject == f.ev.subject and not g.ev.negated
                            and value_matches(new_text, "", g.ev)), None)
                if new is None:
                    stated = next((e for e in by_subject[f.ev.subject] if e.seq == f.ev.seq and not e.negated
                                   and value_matches(new_text, "", e)), None)
            if new is None and stated is None:
                # the replacement stated in the same message ("I quit X and joined Y", "forget X, it's Y now")
                pool = [g for g in by_message[f.ev.seq] if g.ev.subject == f.ev.subject and not g.ev.negated
                        and g.ev.value and not same_value(_norm(g.ev.value), _norm(target.value or old_text))
                        and not value_matches(old_text, old_head, g.ev) and g.key != "retract"]
                # a replacement follows its retraction ("no more renting X, I bought Y"), rarely comes before it
                pool.sort(key=lambda g: g.ev.sentence_idx < f.ev.sentence_idx)
                # the old value's type: its event's, or when its sentence holds no value (said in passing, found
                # by its words) the retracted phrase's own — a name when capitalised ("Biscuit got adopted")
                typed = [g for g in pool if _compatible_types(g.vtype, _vtype_of(types, target, target.value or old_text))]
                new = (typed or [g for g in pool if g.novelty or g.verb in CHANGE_VERBS] or [None])[0]
            src = new.ev if new is not None else stated or f.ev
            # attributes of the retracted thing said with it ("signed up for the marathon in September": the
            # date of the marathon) end with it
            for sib in before:
                if (sib.id != target.id and sib.seq == target.seq and sib.sentence_idx == target.sentence_idx
                        and sib.facet and old_head and old_head in sib.facet.split(":")[-1].split()):
                    edges.append(EdgeRec(f.ev.id, sib.id, "updates", 0.85,
                                         f"{f.ev.subject}: '{old_text}' is no longer on, nor its {sib.facet} "
                                         f"(found by construction: {c.get('name', '?')})"))
            if src.id == target.id or (not src.negated and same_value(_norm(src.value), _norm(target.value or old_text))):
                continue
            told = f"no longer '{target.value or old_text}'" if src.negated else \
                f"'{src.value}' replaces '{target.value or old_text}'"  # a retraction with nothing said instead
            edges.append(EdgeRec(src.id, target.id, "updates", 0.92,
                                 f"{f.ev.subject}: {told} (found by construction: {c.get('name', '?')})"))
            # the subject's earlier statements of the retracted value in other messages end with it too (the latest
            # one is not its only statement: "I do spin on mondays" … "spin was brutal" … "I quit spin")
            for e in earlier:
                if e.id != target.id and e.seq not in (target.seq, f.ev.seq) and value_matches(old_text, old_head, e):
                    edges.append(EdgeRec(src.id, e.id, "updates", 0.9,
                                         f"{f.ev.subject}: '{src.value}' replaces '{e.value}' "
                                         f"(found by construction: {c.get('name', '?')}, an earlier statement)"))
    return edges


def _describes_other(ev: EventRec, old_text: str, old_head: str) -> bool:
    """Does the event state another fact than the retracted value, which its sentence only mentions: a copular
    description of the subject ("being a pharmacist with late shifts" for "swapped my late with Kamran") or a name
    where a common noun ended ("my cat Pierogi thinks the evenings are hers" for "evenings are dead")? A role
    held at the retracted place is not one ("I work as a nurse at the hospital" ends with "I quit the hospital")."""
    if not ev.frame or not ev.value or value_matches(old_text, old_head, ev):
        return False
    return ev.frame.get("key") == "be" or (ev.value[:1].isupper() and not old_text[:1].isupper())


@lru_cache(maxsize=65536)  # implicit_edges asks for each frame's value once per candidate pair
def _norm(v: str | None) -> str:
    return " ".join(sorted(_words(v)))


def _by_subject(known: Sequence[EventRec]) -> dict[str, list[EventRec]]:
    """Each subject's events, in the order they were said."""
    by_subject: dict[str, list[EventRec]] = defaultdict(list)
    for ev in sorted(known, key=lambda e: e.order):
        by_subject[ev.subject].append(ev)
    return by_subject


def _frame_types(frames: Sequence[FrameRec]) -> dict[str, str]:
    """Event id → the type of its frame's value."""
    return {f.ev.id: f.vtype for f in frames}


def _vtype_of(types: Mapping[str, str], ev: EventRec, value: str | None = None) -> str:
    """The type of an event's value: its frame's (`_frame_types`), else a name when capitalised, else a thing.
    `value`: the phrase to read instead of the event's own value (a sentence that holds none)."""
    value = ev.value if value is None else value
    return types.get(ev.id) or ("name" if value and value[:1].isupper() else "thing")


def implicit_edges(frames: Sequence[FrameRec], embed: Embed | None,
                   since: tuple[int, int] | None = None) -> list[EdgeRec]:
    """Later frames of the same subject that restate a compatible key with a different value.

    `since`: only frames said at or after this (seq, sentence) get edges; the earlier ones are candidates only."""
    # (a name said beside a noun — "my colleague Pilar", "my new colleague Sam" — is one of several such names)
    ordered = sorted((f for f in frames if not f.ev.negated and not f.hedged and f.key != "retract" and not f.named),
                     key=lambda f: f.ev.order)
    sims = _key_similarity(ordered, embed)
    values = _value_vectors(ordered, embed)
    earlier = _EarlierFrames()
    edges: list[EdgeRec] = []
    for new in ordered:
        if since is not None and new.ev.order < since:
            earlier.add(new)
            continue
        best: tuple[float, FrameRec, str] | None = None
        for old in earlier.candidates(new):
            if old.ev.subject != new.ev.subject or old.ev.seq == new.ev.seq:
                continue
            found = _revision_score(old, new, sims, values)
            if found is not None and (best is None or (found[0], old.ev.order) >= (best[0], best[1].ev.order)):
                best = (found[0], old, found[1])
        earlier.add(new)
        if best is None:
            continue
        old = best[1]
        conf = 0.85 if new.novelty or new.verb in CHANGE_VERBS else 0.75
        edges.append(EdgeRec(new.ev.id, old.ev.id, "updates", conf,
                             f"{new.ev.subject}'s {new.key}: '{new.ev.value}' replaces '{old.ev.value}' "
                             f"(found by implicit: {best[2]})"))
    return edges


def _revision_score(old: FrameRec, new: FrameRec, sims: Mapping[tuple[str, str], float],
                    values: Mapping[str, np.ndarray]) -> tuple[float, str] | None:
    """How surely a later frame of the same subject revises an earlier one, and by which test; None when it does not."""
    if _same_variant(old, new):
        if old.variant[2] == new.variant[2] or new.variant[3:4] == (False,):
            return None  # the same mark again, or a later variant said in passing ("episode 12 is up")
        return 1.0, f"the same {new.variant[0]}, another {new.variant[1]}"
    if old.variant and new.variant and old.variant[0] == new.variant[0]:
        return None  # "two hives" … "white hives": another kind of mark says something else of them
    if not _compatible_types(old.vtype, new.vtype) or same_value(_norm(old.ev.value), _norm(new.ev.value)):
        return None
    if (old.key == "be" or new.key == "be") and not _role_succession(old, new):
        return None  # "I'm a nurse", "I'm tired": descriptions hold many values at once
    if _same_key(old, new):
        if not _functional(old) and not (new.novelty and old.vtype == new.vtype):
            return None
        return 1.0, "same key"
    if (new.verb in CHANGE_VERBS and _functional(old) and old.verb not in CHANGE_VERBS
            and new.vtype in SINGLE_TYPES and old.vtype == new.vtype):
        score = sims.get((old.masked, new.masked), 0.0)
        return (score, f"key similarity {score:.2f}") if score >= KEY_SIMILARITY else None
    if _named_value(old) and _named_value(new) and old.vtype == new.vtype and old.ev.value in values \
            and new.ev.value in values:
        # two names of the same kind of thing, the later said after the earlier ("the Babolat" … "the Wilson
        # Blade is unreal"): MiniLM puts names of one kind of thing close together
        score = min(float(values[old.ev.value] @ values[new.ev.value]), VALUE_SIMILARITY_CAP)
        return (score, f"value similarity {score:.2f}") if score >= VALUE_SIMILARITY else None
    return None


def _named_value(f: FrameRec) -> bool:
    """A frame whose value is a name of a thing held or used (not a description, an "it's … now", a person or a
    name said beside its noun)."""
    return f.vtype in NAMED_TYPES and f.key not in ("be", "it", "retract") and not f.named


def _value_vectors(frames: Sequence[FrameRec], embed: Embed | None) -> dict[str, np.ndarray]:
    """The unit MiniLM vector of each named value (`_named_value`), for the value-similarity test."""
    if embed is None:
        return {}
    texts = sorted({f.ev.value for f in frames if f.ev.value and _named_value(f)})
    if len(texts) < 2:
        return {}
    vecs = embed(texts)
    vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    return dict(zip(texts, vecs))


def _same_variant(old: FrameRec, new: FrameRec) -> bool:
    """Are both frames variants of the same head and kind ("two hives" … "three hives"; `tracecli.graph.variants`)?"""
    return bool(old.variant and new.variant and old.variant[:2] == new.variant[:2])


def _role_succession(old: FrameRec, new: FrameRec) -> bool:
    """Two roles a person holds, the later one told as new ("I was treasurer" … "I'm captain now"): the role
    nouns of `tracecli.graph.lexicon.is_role`, both said as what the person is (key 'be'). One description of
    several ("I'm a mum and a nurse") is not revised by another unless the new one is marked as new; nor is a role
    said as a bare noun phrase ("nice coach, very patient"), which is as often someone else's, the old one.
    The new one may be ("site manager now")."""
    from tracecli.graph.lexicon import is_role

    return old.key == new.key == "be" and new.novelty and old.vtype == new.vtype == "thing" and not old.bare \
        and is_role(old.head) and is_role(new.head)


class _EarlierFrames:
    """The frames seen so far, filed so that `implicit_edges` visits only those that can pass its key test.

    An earlier frame can revise a new one only with the same subject and either `_same_key` (the same key,
    or two copular keys with the same head), or, for a change verb of a single-value type, a functional key
    of the same type without a change verb, or a variant of the same head and kind, or when both are named
    values (`_revision_score`). Comparing every pair instead made an incremental build-graph
    on a 10K-message conversation quadratic (50 s). The candidates come in the order they were added, and
    the caller still applies its whole test to each, so the edges are exactly those of the pairwise scan.
    """

    def __init__(self) -> None:
        self.frames: list[FrameRec] = []
        self.index: dict[tuple[str, str, str], list[int]] = defaultdict(list)

    def add(self, f: FrameRec) -> None:
        n = len(self.frames)
        self.frames.append(f)
        subject = f.ev.subject
        self.index[("key", subject, f.key)].append(n)
        if f.copular and f.key != "be":
            self.index[("head", subject, _key_head(f.key))].append(n)
        if _functional(f) and f.verb not in CHANGE_VERBS:
            self.index[("plain", subject, f.vtype)].append(n)
        if f.variant:
            self.index[("variant", subject, *f.variant[:2])].append(n)
        if _named_value(f):
            self.index[("named", subject, "")].append(n)

    def candidates(self, new: FrameRec) -> list[FrameRec]:
        subject = new.ev.subject
        found = set(self.index.get(("key", subject, new.key), ()))
        if new.copular and new.key != "be":
            found.update(self.index.get(("head", subject, _key_head(new.key)), ()))
        if new.verb in CHANGE_VERBS and new.vtype in SINGLE_TYPES:
            found.update(self.index.get(("plain", subject, new.vtype), ()))
        if new.variant:
            found.update(self.index.get(("variant", subject, *new.variant[:2]), ()))
        if _named_value(new):
            found.update(self.index.get(("named", subject, ""), ()))
        return [self.frames[n] for n in sorted(found)]


def _key_similarity(frames: Sequence[FrameRec], embed: Embed | None) -> dict[tuple[str, str], float]:
    """Cosine of the value-masked statements of frame pairs that may need it (change verbs only)."""
    if embed is None:
        return {}
    targets = {f.masked for f in frames if f.verb in CHANGE_VERBS}
    if not targets:
        return {}
    texts = sorted({f.masked for f in frames if _functional(f)} | targets)
    vecs = embed(texts)
    vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    idx = {t: i for i, t in enumerate(texts)}
    out: dict[tuple[str, str], float] = {}
    for b in targets:
        for a in texts:
            out[(a, b)] = float(vecs[idx[a]] @ vecs[idx[b]])
    return out


@lru_cache(maxsize=65536)  # anaphora_edges reads each earlier sentence once per "it's Y now" of its person
def _stems(text: str) -> frozenset[str]:
    """Content words, crudely stemmed ("exams" ~ "exam", "moved" ~ "move") for a shared-topic test (not
    `tracecli.text.stem`: nltk's import costs seconds, which build-graph does not otherwise pay)."""
    from tracecli.text import content_words

    return frozenset(w[:5] if len(w) > 5 else w for w in content_words(text) if not w.isdigit())


def anaphora_edges(frames: Sequence[FrameRec], known: Sequence[EventRec]) -> list[EdgeRec]:
    """'it's Y now' — a restatement whose subject is the topic under discussion ("they moved the stats exam!! it's now
    2 April", "the registrar can't do the 7th, so it's 21st June now"): the edge goes to the same person's latest
    earlier statement of a value of the same type whose sentence shares content words with the new message, the
    new value's words left out ("stats exam"; `ANAPHORA_SHARED` of them); none is drawn without them."""
    by_subject = _by_subject(known)
    by_message: dict[tuple[str, int], list[EventRec]] = defaultdict(list)
    for ev in known:
        by_message[(ev.session_id, ev.seq)].append(ev)
    types = _frame_types(frames)
    edges: list[EdgeRec] = []
    for f in frames:
        if f.key != "it" or not f.novelty or f.ev.negated or not f.ev.value:
            continue
        value = _stems(f.ev.value)
        topic = set().union(*(_stems(o.quote) for o in by_message[(f.ev.session_id, f.ev.seq)])) - value
        best = None
        for e in by_subject[f.ev.subject]:
            if e.order >= f.ev.order or e.negated or not e.value or e.seq == f.ev.seq \
                    or same_value(_norm(e.value), _norm(f.ev.value)) or _stems(e.value) & value:
                continue
            if not _compatible_types(_vtype_of(types, e), f.vtype) or len(topic & (_stems(e.quote) - _stems(e.value))) < ANAPHORA_SHARED:
                continue
            best = e  # the latest such statement
        if best is not None:
            edges.append(EdgeRec(f.ev.id, best.id, "updates", 0.8,
                                 f"{f.ev.subject}: '{f.ev.value}' replaces '{best.value}' "
                                 f"(found by anaphora: 'it's … now' on the same topic)"))
    return edges


def frame_edges(frames: Sequence[FrameRec], known: Sequence[EventRec], existing: Sequence[EdgeRec],
                embed: Embed | None, constructions: Sequence[EdgeRec] | None = None,
                implicit: Sequence[EdgeRec] | None = None) -> list[EdgeRec]:
    """Construction, anaphora and implicit `updates` edges that the facet layer has not already drawn.

    `constructions`, `implicit`: `construction_edges(frames, known)` and `implicit_edges(frames, embed)` when the
    caller already has them (an incremental relink, `tracecli.graph.build`)."""
    have = {(e.src, e.dst) for e in existing}
    touched_old = {e.dst for e in existing if e.label == "updates"}
    out: list[EdgeRec] = []
    for e in construction_edges(frames, known) if constructions is None else constructions:
        if (e.src, e.dst) not in have:
            have.add((e.src, e.dst))
            out.append(e)
            touched_old.add(e.dst)
    touched_new = {e.src for e in [*existing, *out] if e.label == "updates"}
    for e in anaphora_edges(frames, known):
        if (e.src, e.dst) not in have and e.src not in touched_new and e.dst not in touched_old:
            have.add((e.src, e.dst))
            out.append(e)
            touched_old.add(e.dst)
    for e in implicit_edges(frames, embed) if implicit is None else implicit:
        if (e.src, e.dst) in have or e.dst in touched_old:
            continue
        have.add((e.src, e.dst))
        out.append(e)
    return out


def frame_recs(events: Sequence[EventRec]) -> list[FrameRec]:
    """The events that state a frame, as revision linking reads them."""
    out = []
    for ev in events:
        f = ev.frame
        if not f:
            continue
        out.append(FrameRec(ev=ev, key=f.get("key", ""), vtype=f.get("type", "thing"), head=f.get("head", ""),
                            novelty=bool(f.get("novelty")), copular=bool(f.get("copular")), verb=f.get("verb", ""),
                            hedged=bool(f.get("hedged")) or f.get("key") == "it", named=bool(f.get("named")),
                            bare=bool(f.get("bare")), variant=tuple(f["variant"]) if f.get("variant") else None,
                            constructions=list(f.get("constructions", []))))
    return out


def masked_embedder() -> Embed | None:
    """MiniLM (the numpy port: no torch import) for value-masked statements; None when it cannot load."""
    try:
        from tracecli.providers.minilm_np import load

        model = load()
    except Exception:  # noqa: BLE001 - without the packaged weights, implicit linking keeps to identical keys
        return None
    return model.encode
