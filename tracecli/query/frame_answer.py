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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tracecli.graph.frames import ORIGIN_KEY, PROPER_TYPES
from tracecli.graph.lexicon import is_kind_of, is_trade, names_kind
from tracecli.query.paths import EventNode, Graph, newest_successor
from tracecli.query.shape import QueryShape, asks_before
from tracecli.text import content_words

#: answer types a question word asks for (None: any)
WANTED = {"where": PROPER_TYPES | {"thing"}, "when": frozenset({"date"}), "who": PROPER_TYPES,
          "how": None, "what": None, "which": None, "why": None, "yesno": None}
#: words of a question that say nothing about the predicate (question words, auxiliaries, function words)
_QUESTION_WORDS = frozenset(
    "what which who whom whose where when why how is are was were am be been do does did has have had can could "
    "will would should the a an of to in on at for with by from now currently still these days right moment "
    "called named name kind sort type go going".split()
)
_HOW_MUCH = re.compile(r"(?i)\bhow (?:long|many|much|old|often|far)\b")
_PAST_CUES = re.compile(r"(?i)\b(used to|previously|formerly|before)\b")
_BEFORE_VALUE = re.compile(r"(?i)\bbefore\s+(?:(?:he|she|they|[A-Z][\w'’-]*)\s+)?(?:\w+ing\s+|\w+ed\s+)?(?:to\s+|on\s+|for\s+|at\s+|with\s+|into\s+)?(?P<value>.+?)\s*\??$")


@dataclass
class FrameAnswer:
    event: EventNode
    chosen: EventNode  # the frame the question matched, before following the chain
    score: float
    support: str  # chain | frame | none (the person's statements of that predicate name another kind of thing)


@lru_cache(maxsize=512)
def parse_question(question: str) -> Any:
    """The question's parse, once per question (read for its lemmas, asked noun and asked phrase)."""
    from tracecli.graph.nlp import get_nlp

    return get_nlp()(question, disable=["ner"])  # entities are not read here; the parse and lemmas are


def _lemmas(question: str) -> set[str]:
    doc = parse_question(question)
    return {(t.lemma_ or t.text).lower() for t in doc if not t.is_punct} | {t.lower_ for t in doc}


def _key_words(frame: Mapping[str, Any]) -> set[str]:
    key = str(frame.get("key", ""))
    words = set(key.split()) - {"in", "at", "as", "for", "with", "on", "to", "into", "from", "of", "by", "about", "be"}
    return words


_WH = frozenset("what which who whom where".split())
#: the words of a question about where someone comes from besides "… from?" (`ORIGIN_KEY`)
_ORIGIN_WORDS = frozenset("grow raise bear born origin originally hometown".split())


def question_key(question: str) -> str | None:
    """The predicate a question asks with a preposition left at its end, as a frame key: "Where is Noor from?" →
    'be from', "Who does Noor live with?" → 'live with'. None without one."""
    doc = parse_question(question)
    for tok in doc:
        if tok.dep_ != "prep" or not all(t.is_punct or t.pos_ == "ADV" for t in doc[tok.i + 1:]) \
                or any(c.dep_ == "pobj" and c.lower_ not in _WH for c in tok.children):
            continue
        verb = tok.head
        if (verb.lemma_ or "").lower() == "do":  # the parser hangs it on "does": the lexical verb asks
            verb = next((t for t in doc if t.pos_ == "VERB" and t.i < tok.i and t.lemma_ != "do"), verb)
        if verb.pos_ in ("VERB", "AUX"):
            return f"{(verb.lemma_ or verb.text).lower()} {tok.lower_}"
    return None


def asked_noun_token(question: str) -> Any | None:
    """The noun token a 'what / which N' question word determines ('What car does she drive?' → car), through a noun
    of sorts ('What kind of diet …?' → diet, 'Which model of car …?' → car)."""
    for tok in parse_question(question):
        if tok.lower_ in ("what", "which") and tok.dep_ == "det" and tok.head.pos_ == "NOUN":
            head = tok.head
            if head.lemma_.lower() in _SORT_NOUNS:
                head = next((g for c in head.children if c.dep_ == "prep" and c.lower_ == "of"
                             for g in c.children if g.dep_ == "pobj" and g.pos_ == "NOUN"), head)
            return head
    return None


#: nouns of sorts: "what kind / sort / type / model / brand / style of N" asks for an N
_SORT_NOUNS = frozenset({"kind", "sort", "type", "model", "make", "brand", "style", "variety", "form"})


def asked_noun(question: str) -> str | None:
    """The noun a 'what / which N' question asks for ('What car does she drive?' → 'car'), lemmatised."""
    head = asked_noun_token(question)
    return (head.lemma_ or head.text).lower() if head is not None else None


#: prepositions that place an occupation noun rather than ask for it ("What did Mei work on at her job?")
_PLACING_PREPS = frozenset("at in on from during before after since about".split())


def focus_noun(question: str) -> str | None:
    """The lemma of the noun a what/which question asks for: the noun the question word determines ("which
    dentist", `frame_answer.asked_noun_token`), else the noun a copula pairs with the question word ("What was
    Noor's rate?"), through "the name of …"."""
    focus = asked_noun_token(question)
    if focus is None:
        wh = next((t for t in parse_question(question) if t.lower_ in ("what", "which")), None)
        if wh is not None and wh.dep_ in ("attr", "nsubj") and wh.head.lemma_ == "be":
            focus = next((c for c in wh.head.children if c.dep_ in ("nsubj", "attr") and c.i != wh.i and c.pos_ == "NOUN"), None)
    if focus is not None and focus.lemma_ == "name":
        focus = next((g for c in focus.children if c.dep_ == "prep" and c.lower_ == "of"
                      for g in c.children if g.dep_ == "pobj" and g.pos_ == "NOUN"), focus)
    return (focus.lemma_ or focus.text).lower() if focus is not None else None


def asks_past(question: str) -> bool:
    """Does the question ask what held in the past ("used to", "previously", "formerly", "before")?"""
    return bool(_PAST_CUES.search(question))


def asked_types(question: str) -> frozenset[str] | None:
    """The frame value types a what/which question's noun admits: a date for "Which day / date / time …", a name for
    "Which town / suburb …" (WordNet's class of the noun, `lexicon.answer_class`); None otherwise. (A person noun
    admits no narrower type: "Which vets …" is answered by "Parkview vets", a common noun.)"""
    from tracecli.graph.lexicon import answer_class

    focus = focus_noun(question)
    kind = answer_class(focus) if focus else None
    if kind == "place":
        return PROPER_TYPES - {"person"}  # "Which town …" is answered by a name (spaCy reads a place as an org as often)
    if kind is None and asks_identifier(question, focus):
        return frozenset({"code", "number"})  # "What is the code for her locker at work?" is not where she works
    return frozenset({"date"}) if kind == "time" else None


def asks_identifier(question: str, focus: str | None) -> bool:
    """Does a what/which question ask for a code or a number someone is known by: its asked noun, or a noun before
    it ("number plate"), names one (`lexicon.names_identifier`)?"""
    from tracecli.graph.lexicon import names_identifier

    if focus is None:
        return False
    if names_identifier(focus):
        return True
    head = next((t for t in parse_question(question) if (t.lemma_ or t.text).lower() == focus), None)
    return head is not None and any(c.dep_ == "compound" and names_identifier(c.lemma_ or c.text) for c in head.children)


def asks_role(question: str) -> bool:
    """Does the question ask for someone's occupation — an occupation noun it asks about ("What is Noor's
    job?", "What does Noor do for work?", "What kind of work …") or "do … for a living"?"""
    from tracecli.graph.lexicon import is_occupation

    if _HOW_MUCH.search(question):
        return False  # "How much does Noor charge to service …" asks for an amount
    focus = focus_noun(question)
    for tok in parse_question(question):
        if tok.pos_ != "NOUN":
            continue
        if tok.lower_ == "living" and tok.dep_ == "pobj" and tok.head.lower_ == "for":
            return True
        # only the noun the question asks for: the one its question word determines or pairs with ("What sport …?",
        # "What is Noor's job?"), the kind asked of ("What kind of work …"), or what something is done for ("do …
        # for work") — not any noun it mentions ("… to service a sewing machine?"); a determined noun is an
        # occupation only when that is its first sense ("What job …?")
        determined = any(c.dep_ == "det" and c.lower_ in ("what", "which") for c in tok.children)
        asked = determined or (tok.lemma_ or tok.text).lower() == focus or (
            tok.dep_ == "pobj" and (tok.head.lower_ == "for" or (
                tok.head.lower_ == "of" and tok.head.head.lemma_ in _KIND_WORDS)))
        if asked and is_occupation(tok.lemma_ or tok.text, first_sense=determined) \
                and not (tok.dep_ == "pobj" and tok.head.lower_ in _PLACING_PREPS):
            return True
    return False


#: nouns after which "of N" names the kind asked for ("What kind of work …")
_KIND_WORDS = frozenset({"kind", "sort", "type", "line", "field"})


def holds_role(frame: Mapping[str, Any]) -> bool:
    """A frame that puts its subject in a role ("I'm a nurse", "works as a baker", "firefighter life") whose value
    is a role noun (`tracecli.graph.lexicon.is_role`) or the clipped name of one ("as a physio I'd say",
    `lexicon.is_clipped_role`)."""
    from tracecli.graph.lexicon import is_clipped_role, is_role

    key = str(frame.get("key", ""))
    identity = key == "be" or key.split(" ")[0] == "become" or key.endswith(" as") or key == "promote to" \
        or (bool(frame.get("facet")) and key.endswith("occupation"))
    head = str(frame.get("head", ""))
    # (an adjective is a quality, not a role, even where WordNet has a noun of it: "I'll be brave")
    return identity and frame.get("type") != "state" and (is_role(head) or is_clipped_role(head))


def _echoes_role(graph: Graph, ev: EventNode, frame: Mapping[str, Any]) -> bool:
    """Is a verbless role without a word for the speaker ("freelance illustrator problems") the other person's role,
    said back to them — a role someone else in the conversation said earlier, in words of their own, they hold
    ("I'm a freelance illustrator")?"""
    if _says_own(ev, frame):
        return False
    head = frame.get("head")
    return any(o.subject != ev.subject and o.conversation_id == ev.conversation_id and o.frame and holds_role(o.frame)
               and o.frame.get("head") == head and (o.seq, o.sentence_idx) < (ev.seq, ev.sentence_idx)
               and _says_own(o, o.frame) for o in graph.events.values())


def _says_own(ev: EventNode, frame: Mapping[str, Any]) -> bool:
    """Does the statement say in words that its fact is the speaker's (a verb, or I / me / my)?"""
    return bool(frame.get("verb")) or bool(re.search(r"(?i)\b(?:i|i'm|i’m|me|my)\b", ev.quote))


def _facet_frame(ev: EventNode) -> dict[str, Any] | None:
    """A typed-facet event read as a frame: its key is the facet's own words ('employer' → 'work employer')."""
    if not ev.facet or not ev.value:
        return None
    from tracecli.graph.facets import facet_kind, facet_label

    words = re.findall(r"[a-z]+", f"{facet_label(ev.facet)} {ev.facet.replace('_', ' ').replace(':', ' ')}".lower())
    key = " ".join(w for w in words if w not in ("has", "a", "the", "as", "set", "for", "at", "named", "is", "pet", "name"))
    kind = facet_kind(ev.facet)
    vtype = {"place": "place", "org": "org", "name": "name", "date": "date", "venue": "place"}.get(kind, "thing")
    return {"key": key or ev.facet, "type": vtype, "head": (ev.value or "").split()[-1].lower(), "facet": True}


def predecessor(graph: Graph, ev: EventNode, valued: bool = True) -> EventNode | None:
    """The latest event that `ev` updates (what held before it); with `valued` False also a sentence that states it
    outside any frame ("planning a trip, thinking Lisbon in May", which "Lisbon fell through" found by its words)."""
    older = [graph.events[e.dst] for e in graph.out.get(ev.id, []) if e.label == "updates" and e.dst in graph.events]
    older = [o for o in older if not o.negated and (o.value or not valued)]
    return max(older, key=lambda o: (o.seq, o.sentence_idx)) if older else None


def replaced_by(graph: Graph, ev: EventNode) -> EventNode | None:
    """What `ev`'s value replaced by a construction of its own message or the one before ("sold the Transit. got
    a camper van instead", "moved it from X to Y"), as the person's latest earlier statement of that old value."""
    mine = set(re.findall(r"\w+", (ev.value or "").lower()))
    olds = [c["old"] for o in sorted(graph.events.values(), key=lambda o: (o.seq, o.sentence_idx))
            if o.conversation_id == ev.conversation_id and o.subject == ev.subject and ev.seq - 1 <= o.seq <= ev.seq
            and o.frame for c in o.frame.get("constructions", []) if c.get("old")]
    olds = [set(re.findall(r"\w+", o.lower())) - {"the", "a", "an", "my", "our"} for o in olds]
    olds = [o for o in olds if o and not (o & mine)]
    if not olds:
        return None
    old = olds[-1]
    said = [o for o in graph.events.values() if o.subject == ev.subject and o.conversation_id == ev.conversation_id
            and o.value and not o.negated and (o.seq, o.sentence_idx) < (ev.seq, ev.sentence_idx)
            and old & set(re.findall(r"\w+", o.value.lower()))]
    return max(said, key=lambda o: (o.seq, o.sentence_idx)) if said else None


#: how the answer step reads sentences and values (see `frame_answer`)
SentenceSim = Callable[[Sequence[EventNode]], Sequence[float]]
ValueFit = Callable[[str, Sequence[str]], Sequence[float]]
#: candidates re-scored by their own sentence per question (the rest keep their message's relevance)
TOP_CANDIDATES = 12
#: cosine between the asked noun phrase and a value above which the value is of the asked kind
VALUE_FIT = 0.3
#: candidates within this score of the best that state the same kind of fact are rival versions of it
RIVAL_MARGIN = 0.12
#: what a role named by its work (`tracecli.graph.lexicon.is_trade`) adds to its score when a job is asked
TRADE_BONUS = 0.15
#: a rival in other words must be this close to the winner on sentence, message and value similarity alone
CONTENT_MARGIN = 0.05


@dataclass
class _Cand:
    ev: EventNode
    frame: dict[str, Any]
    key_hit: float
    noun_hit: bool
    rel: float
    sim: float = 0.0
    fit: float = 0.0
    score: float = 0.0


def _asked_phrase(question: str, people: Sequence[str]) -> str | None:
    """What kind of value the question wants, as words: 'what mobile network …' → 'mobile network'."""
    head = asked_noun_token(question)
    if head is not None:
        mods = [c for c in head.children if c.dep_ in ("compound", "amod") and c.i < head.i]
        return " ".join(t.text for t in sorted([*mods, head], key=lambda t: t.i)).lower()
    for tok in parse_question(question):  # "What is Wren's gym locker code?" → the possessed noun
        if tok.pos_ == "NOUN" and any(c.dep_ == "poss" for c in tok.children):
            mods = [c for c in tok.children if c.dep_ in ("compound", "amod")]
            return " ".join(t.text for t in sorted([*mods, tok], key=lambda t: t.i)).lower()
    return None


def frame_answer(graph: Graph, shape: QueryShape, question: str, relevance: Mapping[str, float],
                 as_of: str | None, people: Sequence[str], sentence_sim: SentenceSim | None = None,
                 value_fit: ValueFit | None = None, novelty_bonus: float = 0.0,
                 before_first: bool = True, roles_only: bool = True) -> FrameAnswer | None:
    """The frame event that answers the question, followed to the right end of its revision chain.

    Candidates are the named people's frames said by `as_of`; each is scored by the share of its key the
    question names, the asked noun in its sentence, its sentence's and message's similarity to the
    question, and how well its value fits the asked noun phrase (plus `novelty_bonus` for a frame said as new —
    "now", "instead", "new" — when the state now is asked). Among rival versions of the winner (the
    same person, a compatible value, nearly as good a match) the latest said wins: a fact restated with a
    new value is a revision even where no edge was drawn. Then `updates` edges are followed.
    """
    qwords = _lemmas(question) - _QUESTION_WORDS - {p.lower() for p in people}
    wanted = WANTED.get(shape.wh)
    if _HOW_MUCH.search(question):
        wanted = frozenset({"number", "date", "code"})  # "how long / many / much / old / often" asks for an amount
    elif wanted is None and shape.wh in ("what", "which"):
        wanted = asked_types(question)  # "Which day …" is not answered by the person a day was swapped with
    before_value = None
    noun = asked_noun(question)
    role = asks_role(question)
    m = _BEFORE_VALUE.search(question) if asks_before(question) else None
    if m:
        before_value = set(re.findall(r"\w+", m.group("value").lower())) - _QUESTION_WORDS
    phrase = _asked_phrase(question, people)
    qkey = question_key(question)  # the key of a frame whose words are all function words ('be from')
    cands: list[_Cand] = []
    other_kind: list[EventNode] = []  # what the person did with the asked predicate, when it is not the asked kind
    graph_subjects = {e.subject for e in graph.events.values()}
    for ev in graph.events.values():
        frame = ev.frame or _facet_frame(ev)
        if not frame or not ev.value or frame.get("key") == "retract" or frame.get("hedged"):
            continue
        if frame.get("key") == "it" and (wanted is None or frame.get("type") not in wanted) \
                and not (noun is not None and frame.get("head") == noun):
            continue  # "it's Porto now" answers only a question that asks for its type ("when …" → a date) or
            # names its kind ("night desk now" answers "Which desk …?")
        if (people and ev.subject not in people) or ev.negated:
            continue
        variant = frame.get("variant")
        if variant and frame.get("key") == variant[0] and not (
                variant[0] == noun or (noun in (None, "number") and variant[0] in qwords)):
            continue  # a thing read only for its number or colour ("the 6am shift", `tracecli.graph.variants`)
            # answers only a question that asks for that thing ("Which shift …", "How many hives …", "Which locker
            # number …"), not one that names it beside what it asks ("Which board game …", "What shift pattern …")
        if as_of is not None and ev.time_anchor and ev.time_anchor > as_of:
            continue
        if wanted is not None and frame.get("type", "thing") not in wanted:
            continue
        value_words = set(re.findall(r"\w+", ev.value.lower()))
        if ev.value in people or ev.value in graph_subjects:
            continue  # a person is not a value of their own facts ("Who is Daniel's physio?" → not "Daniel")
        if value_words and value_words <= qwords:
            continue  # the question names this value: it is not the answer (unless "before X", below)
        if frame.get("key") == ORIGIN_KEY and qkey != ORIGIN_KEY and not _ORIGIN_WORDS & qwords:
            continue  # where someone is from answers only a question about where they come from
        key = _key_words(frame)
        # (a key of function words only is the question's when it is where someone is from: "be in" names no fact)
        key_hit = len(key & qwords) / len(key) if key else float(frame.get("key") == qkey == ORIGIN_KEY)
        if not key_hit and frame.get("named"):
            continue  # a name said beside a noun ("my colleague Pilar") answers only a question about that noun
        if role and holds_role(frame) and ev.speaker in (None, ev.subject) and not _echoes_role(graph, ev, frame):
            cands.append(_Cand(ev, frame, 1.0, True, relevance.get(ev.id, 0.0)))
            continue  # "What is Noor's job?" is answered by the role Noor holds, a person noun ("firefighter"), as
            # Noor says it: what others call someone ("you're a hero") is praise more often than a job
        if role and roles_only:
            continue  # nor by a frame that holds no role ("work at Easton" asked what Noor does for a living)
        other = noun is not None and noun not in value_words and frame.get("head") != noun
        kind = other and is_kind_of(ev.value, noun)  # "the oboe" asked which instrument
        if other and frame.get("type") == "thing" and not kind and names_kind(noun):
            # (a noun WordNet files near its root names no kind to tell a value by: "Which voice part …")
            if key_hit > 0:
                other_kind.append(ev)
            continue  # "What car …" is answered by a car or by a name, not by another kind of thing
        noun_hit = noun is not None and (kind or noun in key or bool(re.search(rf"(?i)\b{re.escape(noun)}", ev.quote)))
        cands.append(_Cand(ev, frame, key_hit, noun_hit, relevance.get(ev.id, 0.0)))
    if before_value:
        if before_first:
            # what held before X was said before X first was: the statements of X from the first on, each asked for
            # what it replaced (a later mention of X may carry an edge to a value that came after X)
            stated = _events_with_value(graph, before_value, people)
            for named in stated:
                prev = predecessor(graph, named) or replaced_by(graph, named) or predecessor(graph, named, valued=False)
                if prev is not None and _said_first(prev, stated[0]):
                    return FrameAnswer(prev, named, 0.9, "chain")
        else:
            latest = _event_with_value(graph, before_value, people)
            if latest is not None:
                prev = predecessor(graph, latest) or replaced_by(graph, latest)
                if prev is not None:
                    return FrameAnswer(prev, latest, 0.9, "chain")
    cut = before_cut(graph, question, people) if asks_before(question) else None
    if cut is not None:
        # no revision edge leads back from X: the answer is among what was said before X was first mentioned
        cands = [c for c in cands if said_before(c.ev, cut)]
        if not cands:
            return None
    if not cands:
        return _refusal(other_kind)
    cands.sort(key=lambda c: (-(c.key_hit + c.noun_hit + c.rel), c.ev.seq, c.ev.id))
    head = [c for c in cands if c.key_hit > 0 or c.noun_hit] + [c for c in cands if not (c.key_hit > 0 or c.noun_hit)]
    head = head[:TOP_CANDIDATES]
    sims = list(sentence_sim([c.ev for c in head])) if sentence_sim is not None else [c.rel for c in head]
    fits = list(value_fit(phrase, [c.ev.value or "" for c in head])) if value_fit is not None and phrase else [0.0] * len(head)
    scored: list[_Cand] = []
    for c, sim, fit in zip(head, sims, fits):
        c.sim, c.fit = float(sim), float(fit)
        typed = c.noun_hit or c.fit >= VALUE_FIT
        if not typed and (c.key_hit == 0 or noun is not None):
            continue  # nothing points at it: no key word and not of the asked kind (closeness alone is the
            # sentence fallback's job, which reads the whole sentence); and a question that names the kind it
            # wants ("What phone …?") is not answered by a value of another kind that shares its verb ("use")
        c.score = 0.3 * c.key_hit + 0.15 * c.noun_hit + 0.2 * c.sim + 0.35 * c.rel + 0.2 * c.fit
        if role and holds_role(c.frame) and (is_trade(str(c.frame.get("head", ""))) or is_trade(c.ev.value or "")):
            c.score += TRADE_BONUS  # a job asked: a person named by their work ("pharmacy technician"), not by
            # another role ("I'm a zombie", "I'm vegetarian")
        if novelty_bonus and c.frame.get("novelty") and shape.wants_current and as_of is None \
                and not asks_past(question):
            c.score += novelty_bonus
        scored.append(c)
    if not scored:
        return _refusal(other_kind)
    scored.sort(key=lambda c: (-c.score, -c.ev.seq, c.ev.id))
    best = scored[0]
    chosen = best.ev
    if cut is not None or not (asks_past(question) and as_of is None):
        # (a winner with the very predicate the question asks — "Where is Noor from?" → 'be from' — has rivals
        # only of that predicate: where she is placed now is not where she is from)
        rivals = [c for c in scored if c.ev.subject == best.ev.subject and _rival(c, best)
                  and c.score >= best.score - RIVAL_MARGIN
                  and (qkey is None or best.frame.get("key") != qkey or c.frame.get("key") == qkey)]
        chosen = max(rivals, key=lambda c: (c.ev.seq, c.ev.sentence_idx)).ev
    if cut is not None:
        return FrameAnswer(chosen, best.ev, best.score, "frame")  # the latest version said before X
    if asks_past(question) and as_of is None:
        current = newest_successor(graph, chosen, None)
        prev = predecessor(graph, current)
        if prev is not None:
            return FrameAnswer(prev, chosen, best.score, "chain")
    end = newest_successor(graph, chosen, as_of)
    support = "chain" if end.id != best.ev.id else "frame"
    return FrameAnswer(end, best.ev, best.score, support)


def _refusal(other_kind: Sequence[EventNode]) -> FrameAnswer | None:
    """'What car does Wren drive?' when what Wren drove is a road trip: nothing known answers it."""
    return FrameAnswer(other_kind[0], other_kind[0], 0.0, "none") if other_kind else None


def _rival(c: _Cand, best: _Cand) -> bool:
    """Does candidate `c` state the same kind of fact as `best` (so that the later of the two is current)?"""
    fc, fb = c.frame, best.frame
    if c.ev.id == best.ev.id:
        return True
    tc, tb = fc.get("type", "thing"), fb.get("type", "thing")
    if not (tc == tb or (tc in PROPER_TYPES and tb in PROPER_TYPES)):
        return False
    if fc.get("key") == fb.get("key") and fc.get("key") != "be":
        return True
    if (c.noun_hit and best.noun_hit) or (c.fit >= VALUE_FIT and best.fit >= VALUE_FIT and c.key_hit == best.key_hit):
        return True
    # a restatement in other words: as close to the question as the winner on content alone
    return _content(c) >= _content(best) - CONTENT_MARGIN


def _content(c: _Cand) -> float:
    """How close a candidate is to the question by sentence, message and value alone (not by key words)."""
    return 0.5 * c.sim + 0.3 * c.rel + 0.2 * c.fit


@dataclass(frozen=True)
class BeforeCut:
    """Where 'before X' puts the answer: before the first statement that mentions X."""

    conversation_id: str
    seq: int
    words: frozenset[str]  # X's words that a statement of X contains


def before_cut(graph: Graph, question: str, people: Sequence[str]) -> BeforeCut | None:
    """'What did Mei use before she got the MacBook?' → the first statement mentioning the MacBook.

    X is what follows 'before'; a statement mentions it when it has all of X's capitalised words, or (when X
    names none) at least half of X's content words and two of them when X has two or more. None when the
    question has no 'before X' or nothing mentions X."""
    m = re.search(r"(?i)\bbefore\s+(?P<x>.+?)\s*\??$", question)
    if not m:
        return None
    names = {p.lower() for p in people}
    x = m.group("x")
    keys = {w.lower() for w in re.findall(r"\b[A-Z][\w'’&-]*", x)} - names - _QUESTION_WORDS
    words = set(content_words(x)) - names - _QUESTION_WORDS
    if not words and not keys:
        return None

    def mentions(quote: str) -> bool:
        have = {re.sub(r"['’]s$", "", w) for w in re.findall(r"[\w'’&-]+", quote.lower())}  # "the Corsa's gone"
        if keys:
            return keys <= have
        shared = len(words & have)
        return shared * 2 >= len(words) and shared >= min(2, len(words))

    hits = [ev for ev in graph.events.values() if mentions(ev.quote)]
    if not hits:
        return None
    first = min(hits, key=lambda ev: (ev.seq, ev.sentence_idx))
    return BeforeCut(first.conversation_id, first.seq, frozenset(keys or words))


def said_before(ev: EventNode, cut: BeforeCut) -> bool:
    """Was `ev` said before the first statement of X, and is it not itself about X?"""
    if ev.conversation_id != cut.conversation_id or ev.seq >= cut.seq:
        return False
    return not (cut.words & set(re.findall(r"[\w'’&-]+", ev.quote.lower())))


def _events_with_value(graph: Graph, words: set[str], people: Sequence[str]) -> list[EventNode]:
    """The events of the people named whose value the question names after 'before', first said first."""
    found = [ev for ev in graph.events.values() if ev.value and not ev.negated and (not people or ev.subject in people)
             and (vw := set(re.findall(r"\w+", ev.value.lower()))) and len(vw & words) * 2 >= len(vw)]
    return sorted(found, key=lambda ev: (ev.seq, ev.sentence_idx))


def _said_first(a: EventNode, b: EventNode) -> bool:
    return (a.seq, a.sentence_idx) < (b.seq, b.sentence_idx)


def _event_with_value(graph: Graph, words: set[str], people: Sequence[str]) -> EventNode | None:
    """The latest event of the people named whose value the question names after 'before'."""
    found = _events_with_value(graph, words, people)
    return max(found, key=lambda ev: (ev.seq, ev.sentence_idx)) if found else None
