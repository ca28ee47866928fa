"""Open statement frames: what a declarative sentence states about a participant, read from the parse.

A frame is (subject, key, value): the subject is a participant (I/my/we → the
speaker, you/your → the other participant, a participant's name), the key is
the predicate — the verb's lemma with its particle and the preposition that
introduces the value ("live in", "work as", "give up"), or for a copular
statement the attribute noun phrase ("my locker code at the gym is Y" →
"locker code at the gym"; "Y is my new dog" → "dog") — and the value is the
object / complement noun phrase kept verbatim. The value's type comes from
spaCy's entity label, a gazetteer place, or the shape of its head.

Nothing here knows a facet list: a frame is a fact whatever it is about, so a
plainly stated odd fact ("My locker code at the gym is Quixotic-7731") is
answerable. Revision linking (`tracecli.graph.revise`) compares frames.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tracecli.text import STOPWORDS, question_after_statement

# -- closed-class words (English grammar, not data) ------------------------------------------

FIRST_PERSON = frozenset({"i", "me", "we", "us"})
FIRST_POSSESSIVE = frozenset({"my", "our"})
SECOND_PERSON = frozenset({"you"})
SECOND_POSSESSIVE = frozenset({"your"})
#: determiners and pronouns that are never a value of their own
_NOT_VALUE_HEADS = frozenset(
    "it this that these those them him her they one ones something anything nothing everything someone anyone "
    "what which who whom where when there here lot lots bit thing things stuff".split()
)
#: adverbs and adjectives of recency or replacement: a statement that carries one presents its value as new
NOVELTY_WORDS = frozenset("now new newly current currently latest finally recently just nowadays instead".split())
#: prepositions that introduce the value of a state ("live in", "work at", "work as", "train for")
VALUE_PREPS = ("in", "at", "as", "for", "with", "on", "to", "into", "from", "near", "by", "about", "of", "over")
#: verbs that only carry another verb ("have to quit", "want to learn", "keep going"): the frame is the inner verb's
_CARRIER_VERBS = frozenset("have want need try plan hope decide going go get keep start begin stop continue manage "
                           "like love hate prefer mean intend aim".split())
#: spaCy entity labels grouped into value types
_ENT_TYPES = {"GPE": "place", "LOC": "place", "FAC": "place", "ORG": "org", "PERSON": "person", "NORP": "name",
              "PRODUCT": "name", "WORK_OF_ART": "name", "EVENT": "name", "LANGUAGE": "name", "DATE": "date",
              "TIME": "date", "CARDINAL": "number", "QUANTITY": "number", "MONEY": "number", "PERCENT": "number",
              "ORDINAL": "number"}
#: value types that name one individual thing; the small NER model confuses them with each other
PROPER_TYPES = frozenset({"place", "org", "person", "name"})
#: chat interjections and acronyms (a category of online English) that the small tagger reads as nouns
CHAT_INTERJECTIONS = frozenset("lol lmao rofl haha hahaha hehe omg tbh btw idk imo ikr smh ugh yay wow ok okay".split())


@dataclass
class Frame:
    """One statement about a participant."""

    subject: str
    key: str  # predicate key: 'live in', 'work as', 'locker code at the gym', 'dog'
    value: str  # verbatim value phrase
    head: str  # lower-case lemma of the value's head noun (for matching an old value)
    vtype: str  # place | org | person | name | date | number | code | thing | state
    negated: bool = False
    novelty: bool = False
    copular: bool = False
    past: bool = False
    verb: str = ""  # the predicate's verb lemma ('' for copular frames)
    start: int = 0  # value's character offsets within the sentence
    end: int = 0
    value_tokens: tuple[int, ...] = field(default_factory=tuple)
    hedged: bool = False  # a possibility, not a statement: "might move to X", "if I join X", "thinking of X"
    named: bool = False  # a name said beside the noun it names: "my colleague Pilar" (key 'colleague')
    bare: bool = False  # a role said as a bare noun phrase, no verb and no subject: "tree surgeon here"
    variant: tuple[str, str, str, bool] | None = None  # (head, kind, mark, marked): `tracecli.graph.variants`

    def as_json(self) -> dict[str, Any]:
        out = {"key": self.key, "type": self.vtype, "head": self.head, "novelty": self.novelty,
               "copular": self.copular, "past": self.past, "verb": self.verb, "hedged": self.hedged}
        if self.named:
            out["named"] = True
        if self.bare:
            out["bare"] = True
        if self.variant:
            out["variant"] = list(self.variant)
        return out


def resolve_person(tok: Any, speaker: str, other: str | None, participants: Sequence[str]) -> str | None:
    """Which participant a pronoun, possessive or name refers to, or None."""
    low = tok.lower_
    if low in FIRST_PERSON or low in FIRST_POSSESSIVE:
        return speaker
    if low in SECOND_PERSON or low in SECOND_POSSESSIVE:
        return other
    if tok.pos_ == "PROPN":
        for p in participants:
            if p.lower() == low or p.split()[0].lower() == low:
                return p
    return None


def _possessor(noun: Any) -> Any | None:
    for c in noun.children:
        if c.dep_ == "poss":
            return c
    return None


def _holder(noun: Any, speaker: str, other: str | None, participants: Sequence[str]) -> str | None:
    """'my X' / 'your X' / 'Alice's X' → whose X it is."""
    poss = _possessor(noun)
    if poss is None:
        return None
    return resolve_person(poss, speaker, other, participants)


_DROP_DEPS = frozenset({"relcl", "acl", "advcl", "punct", "appos", "parataxis", "cc", "mark", "advmod", "npadvmod", "neg"})


def _span_tokens(head: Any, keep_det: bool = False) -> list[Any]:
    """The value phrase under `head`: its subtree without clauses, punctuation and leading determiners."""
    toks = [head]
    stack = [c for c in head.children]
    while stack:
        c = stack.pop()
        if c.dep_ in _DROP_DEPS or c.dep_ == "poss" or (c.dep_ == "conj" and (c.pos_ in ("VERB", "AUX", "INTJ")
                                                                           or c.lower_ in _REJECTIONS)):
            continue
        if c.dep_ == "prep" and not any(g.pos_ in ("PROPN", "NUM") for g in c.subtree):
            continue  # "a nurse at St Mary's" keeps its place; "the flat with the view" is cut to "the flat"
        if c.dep_ == "amod" and c.lower_ in NOVELTY_WORDS:
            continue
        toks.append(c)
        stack.extend(c.children)
    toks.sort(key=lambda t: t.i)
    # contiguous run around the head only (a stray child across a clause would make a discontinuous value)
    run = [t for t in toks if toks[0].i <= t.i <= toks[-1].i]
    while run and (run[0].dep_ in ("det", "case", "prep") and not keep_det or run[0].is_punct
                   or run[0].dep_ == "aux" and run[0].head.i == head.i):  # "to" of a noun misread as a verb
        if run[0].i == head.i:
            break
        run = run[1:]
    while run and (run[-1].is_punct or run[-1].dep_ in ("cc", "case", "prep")):
        if run[-1].i == head.i:
            break
        run = run[:-1]
    return whole_words(run)


def whole_words(run: list[Any]) -> list[Any]:
    """`run` grown over hyphens that glue it to its neighbours ("self-build", "part-time", "co-op"): the parser
    may split a hyphenated word into sibling tokens, but a value is never part of a written word."""
    if not run:
        return run
    doc, sent = run[0].doc, run[0].sent

    def glued(a: Any, b: Any) -> bool:
        return a.whitespace_ == "" and "-" in (a.text, b.text) and not (a.is_space or b.is_space)

    while run[0].i > sent.start and glued(doc[run[0].i - 1], run[0]):
        run = [doc[run[0].i - 1], *run]
    while run[-1].i + 1 < sent.end and glued(run[-1], doc[run[-1].i + 1]):
        run = [*run, doc[run[-1].i + 1]]
    while run and run[0].text == "-":
        run = run[1:]
    while run and run[-1].text == "-":
        run = run[:-1]
    return run


def value_type(tokens: Sequence[Any], text: str) -> str:
    """The value's type: entity label, gazetteer place, a code, or the head's part of speech."""
    from tracecli.graph.gazetteer import is_place

    from tracecli.graph.lexicon import is_shouted

    if is_shouted(text):
        return "thing"  # "ICE is not SNOW": a common word said loudly, not a name
    labels = [t.ent_type_ for t in tokens if t.ent_type_]
    if re.search(r"[A-Za-z]", text) and re.search(r"\d", text) and re.fullmatch(r"[\w\-/#.:]+", text):
        if not re.fullmatch(r"(?i)\d{1,2}(:\d{2})?\s*(am|pm)", text.strip()):
            return "code"
    if labels:
        kind = _ENT_TYPES.get(labels[0])
        if kind in PROPER_TYPES and is_place(text):
            return "place"
        if kind:
            return kind
    if is_place(text):
        return "place"
    head = max(tokens, key=lambda t: (t.dep_ not in ("compound", "amod", "det", "nummod"), t.i)) if tokens else None
    if head is None:
        return "thing"
    if head.pos_ == "PROPN":
        return "name"
    if head.pos_ == "NUM" or head.like_num:
        return "number"
    if head.pos_ == "ADJ":
        return "state"
    return "thing"


def clause_negated(verb: Any) -> bool:
    """Is the verb's clause negated ("not", "no longer", "never")? A negated auxiliary said on its own before the
    clause's subject is a reply of its own, not this clause's ("can't, I'm tuning 3 pianos that morning")."""
    for c in verb.children:
        if c.dep_ == "neg":
            if not _elliptical_reply(c, verb):
                return True
            continue
        if c.lower_ == "longer" and any(g.lower_ == "no" for g in c.children):
            return True
        if c.dep_ == "advmod" and c.lower_ == "never":
            return True
    return False


def _elliptical_reply(neg: Any, verb: Any) -> bool:
    """Does a comma and then the verb's subject stand between the negation and the verb ("can't, I'm busy")?"""
    comma = next((p for p in verb.children if p.dep_ == "punct" and p.text == "," and neg.i < p.i < verb.i), None)
    return comma is not None and any(s.dep_ in ("nsubj", "nsubjpass") and comma.i < s.i < verb.i for s in verb.children)


#: particles that make a verb one of arriving at a new state: "we ended up with a Skoda", "wound up in Leeds" (so
#: "ended up with X" presents X as new and retracts nothing, `tracecli.graph.constructions`)
ARRIVING = {"end": "up", "wind": "up"}


def _novel(verb: Any, value_toks: Sequence[Any]) -> bool:
    arrive = ARRIVING.get((verb.lemma_ or "").lower())
    if arrive is not None and any(c.dep_ == "prt" and c.lower_ == arrive for c in verb.children):
        return True
    for c in list(verb.children) + [g for t in value_toks for g in t.children]:
        if c.lower_ in NOVELTY_WORDS and c.dep_ in ("advmod", "amod", "npadvmod"):
            return True
    return any(t.lower_ in NOVELTY_WORDS and t.dep_ == "amod" for t in value_toks)


def subject_of_clause(verb: Any) -> Any | None:
    """The clause's subject token: its own nsubj, or the one it shares with the verb it is conjoined to / carried by.
    Of two subjects the parser hangs on one verb, the nearer: chat opens with a topic and no verb of its own
    ("rehearsal tonight, I'm bringing the oboe")."""
    seen = 0
    v = verb
    while v is not None and seen < 4:
        subjects = [c for c in v.children if c.dep_ in ("nsubj", "nsubjpass", "expl")]
        if subjects:
            return min(subjects, key=lambda c: abs(c.i - v.i))
        if v.dep_ in ("conj", "xcomp") and v.head.i != v.i:
            v = v.head
            seen += 1
            continue
        return None
    return None


def _attribute_key(noun: Any) -> str:
    """'my gym locker code at the gym' → 'gym locker code at the gym' (no possessor, determiner or novelty word)."""
    parts = []
    for t in noun.subtree:
        if t.dep_ in ("poss", "det", "punct", "relcl", "acl", "appos") or t.lower_ in NOVELTY_WORDS:
            continue
        if any(a.dep_ in ("relcl", "acl", "appos", "poss") for a in t.ancestors if a.i > noun.i or a.dep_ == "poss"):
            continue
        if t.head.dep_ == "poss" or t.dep_ == "case":
            continue
        parts.append(t)
    parts.sort(key=lambda t: t.i)
    words = [(t.lemma_ if t is noun else t.text).lower() for t in parts]
    return " ".join(words)


#: verbs of changing something into something else, whose "to"-phrase names the result (Levin's verbs of
#: "change of state" and "turning"): "switched my meditation app to Balance", "changed my number to …"
RESULT_VERBS = frozenset("switch change move convert upgrade downgrade rename update set turn swap".split())


def _changed_attribute(verb: Any, args: Sequence[tuple[str, Any]]) -> Frame | None:
    """'I switched my meditation app to Balance' states 'my meditation app is Balance' (now): a verb of changing,
    an object the subject possesses ('my …'), and the result in its to-phrase; the object names the attribute,
    not a value."""
    if (verb.lemma_ or "").lower() not in RESULT_VERBS:
        return None
    obj = next((h for k, h in args if h.dep_ == "dobj" and h.pos_ in ("NOUN", "PROPN") and any(
        c.dep_ == "poss" and c.lower_ in FIRST_POSSESSIVE | SECOND_POSSESSIVE | {"his", "her", "their"}
        for c in h.children)), None)
    result = next((h for k, h in args if k.split()[-1] in ("to", "into") and h.i > verb.i), None)
    if obj is None or result is None:
        return None
    f = _frame("", _attribute_key(obj), result, verb.sent, verb=verb, copular=True)
    return replace(f, novelty=True, verb="") if f is not None else None


def _attribute_moved(verb: Any, subj: Any, holder: str) -> Frame | None:
    """'my day off moved from tuesday to thursday', 'our book club changed to Thursdays': a thing of the holder's (not a
    person: "my sister moved to Leeds" is the sister's fact) changed by a verb of changing, with the result in its
    to-phrase, states 'my day off is thursday' (now), like `_changed_attribute` with the thing as the subject."""
    from tracecli.graph.lexicon import is_role

    lemma = (subj.lemma_ or subj.text).lower()
    if (verb.lemma_ or "").lower() not in RESULT_VERBS | {"go"} or lemma in PERSON_NOUNS or is_role(lemma) \
            or subj.ent_type_ == "PERSON":
        return None
    to = next((c for c in verb.children if c.dep_ == "prep" and c.lower_ in ("to", "into")), None)
    frm = next((c for c in verb.children if c.dep_ == "prep" and c.lower_ == "from"), None)
    if to is None and frm is not None:  # the parser often hangs the to-phrase on the from-phrase
        to = next((c for c in frm.subtree if c.dep_ == "prep" and c.lower_ in ("to", "into")), None)
    result = _pobj(to) if to is not None else None
    if result is None:
        return None
    # (the subject of a clause the parser hung on a noun before it has no key of its own there: its words are)
    key = _attribute_key(subj) or " ".join(
        lemma if t.i == subj.i else t.lower_ for t in sorted(
            [subj, *(c for c in subj.children if c.dep_ in ("compound", "amod", "advmod") and c.lower_ not in NOVELTY_WORDS)],
            key=lambda t: t.i))
    f = _frame(holder, key, result, verb.sent, verb=verb, copular=True)
    return replace(f, novelty=True, verb="") if f is not None else None


def misread_to(verb: Any) -> list[tuple[Any, Any]]:
    """("to", value) pairs the small parser misreads as an infinitive: in "moved me from alto to soprano" it
    tags the noun after "to" a verb ("to" its auxiliary), or a noun heading a clause. A clause of the verb whose
    head directly follows a "to"/"into" and is tagged a noun, or is a word that cannot be a verb at all (WordNet's
    verb index), is that preposition's object."""
    from tracecli.graph.lexicon import is_verb

    out = []
    for c in verb.children:
        if c.dep_ not in ("advcl", "xcomp", "ccomp") or c.i == 0:
            continue
        to = c.doc[c.i - 1]
        if to.lower_ not in ("to", "into") or to.head.i != c.i:
            continue
        if c.pos_ in ("NOUN", "PROPN", "NUM") or not (is_verb(c.lemma_ or c.text) or is_verb(c.text)):
            out.append((to, c))
    return out


def _pobj(prep: Any) -> Any | None:
    """The object of a preposition token, if the parse gives it one. A chat word read as the object's head
    ("to Balance btw": 'btw' the object, 'Balance' its compound) gives way to the noun before it."""
    obj = next((g for g in prep.children if g.dep_ == "pobj"), None)
    if obj is not None and obj.lower_ in CHAT_INTERJECTIONS:
        obj = next((c for c in reversed(list(obj.lefts)) if c.dep_ in ("compound", "amod", "nmod")), None)
    return obj


def _frame(subject: str, key: str, head_tok: Any, sent: Any, *, verb: Any | None, copular: bool,
           keep_det: bool = False) -> Frame | None:
    toks = _span_tokens(head_tok, keep_det=keep_det)
    if not toks:
        return None
    if head_tok.lower_ in _NOT_VALUE_HEADS or head_tok.pos_ in ("PRON", "DET", "SCONJ", "CCONJ", "PART", "ADP", "INTJ"):
        return None
    if head_tok.lower_ in CHAT_INTERJECTIONS or head_tok.tag_ == "UH":
        return None
    base = sent.start_char
    start, end = toks[0].idx - base, toks[-1].idx + len(toks[-1].text) - base
    text = sent.text[start:end].strip()
    if len(text) < 2 or not re.search(r"[\w]", text) or text.lower() in STOPWORDS:
        return None  # "crashed AGAIN": a function word, capitalised for emphasis, is no value
    key = re.sub(r"\s+", " ", key).strip()
    if not key:
        return None
    past = verb is not None and verb.tag_ in ("VBD", "VBN") and not any(c.dep_ == "aux" and c.lower_ in ("have", "'ve", "’ve", "has") for c in verb.children)
    # a common noun in quotation marks is said at a distance ("telling her friends I'm a 'banker' now"), not held
    quoted = head_tok.pos_ == "NOUN" and text.islower() and 0 < start and end < len(sent.text) \
        and sent.text[start - 1] in _QUOTES and sent.text[end] in _QUOTES
    return Frame(subject=subject, key=key, value=text, head=(head_tok.lemma_ or head_tok.text).lower(), vtype=value_type(toks, text),
                 hedged=quoted or (verb is not None and is_hedged(verb)),
                 negated=clause_negated(verb) if verb is not None else False,
                 novelty=_novel(verb, toks) if verb is not None else any(t.lower_ in NOVELTY_WORDS for t in sent),
                 copular=copular, past=past, verb=(verb.lemma_.lower() if verb is not None and not copular else ""),
                 start=start, end=end, value_tokens=tuple(t.i for t in toks))


#: modal verbs of possibility and the verbs of considering: what they introduce is not (yet) a fact
_MODALS = frozenset("might may could would should maybe".split())
#: quotation marks, straight and curly
_QUOTES = "'\"‘’“”"
_CONSIDER = frozenset("think consider wonder dream imagine debate weigh".split())


#: a word after "but" that rejects the clause before it ("looked at a Kia but nah")
_REJECTIONS = frozenset("nah no nope nay".split())
#: adverbs of a near miss: "almost bought X" did not buy it
_NEAR_MISS = frozenset({"almost", "nearly"})


def rejection(verb: Any) -> Any | None:
    """The "but" that turns down the verb's clause — "looked at a Tesla but nah", "tried X but nope", "thought about X
    but decided against it" — when there is one: after the verb, before its clause ends (the parser may start a new
    sentence at it), followed by a rejection that stands alone ("but no regrets" rejects nothing)."""
    doc = verb.doc
    for tok in doc[verb.i + 1:]:
        if tok.text in (".", "!", "?") or tok.lower_ in ("and", "because", "so") or tok.dep_ == "mark":
            return None  # the verb's own clause has ended
        if tok.lower_ != "but" or tok.i + 1 >= len(doc):
            continue
        nxt = doc[tok.i + 1]
        if nxt.lower_ in _REJECTIONS and (nxt.pos_ == "INTJ" or nxt.i + 1 == len(doc) or doc[nxt.i + 1].is_punct):
            return tok
        rejected = (nxt.lemma_ or "").lower() == "decide" and any(g.lower_ == "against" for g in nxt.children)
        return tok if rejected else None
    return None


def dismissed(verb: Any) -> bool:
    """Is the verb's clause an option turned down (`rejection`), or a near miss ("almost bought X": the object was
    not had, though a sentence may still state a fact — "my peanut allergy nearly finished me off")?"""
    return any(c.dep_ == "advmod" and c.lower_ in _NEAR_MISS for c in verb.children) or rejection(verb) is not None


def is_hedged(verb: Any) -> bool:
    """A possibility rather than a statement: a modal, a condition, a verb of considering above it, or an
    option turned down (`dismissed`)."""
    v = verb
    if dismissed(verb):
        return True
    for _ in range(4):
        if any(c.dep_ == "aux" and (c.lower_ in _MODALS or (c.lower_ in ("'d", "’d") and v.tag_ == "VB"))
               for c in v.children):
            return True  # ("I'd move": "'d" before a bare verb is "would"; before a participle, "had")
        if any(c.dep_ == "mark" and c.lower_ in ("if", "unless", "whether") for c in v.children):
            return True
        if any(c.dep_ == "advcl" and (c.tag_ == "VBD" or (v.lemma_ != "be" and any(m.lower_ == "ever" for m in c.children)))
               and any(m.dep_ == "mark" and m.lower_ == "if" for m in c.children) for c in v.children):
            return True  # the main clause of an unreal condition ("if I ever moved to Oslo I'd become a referee", "if I
            # ever open a bakery I'm calling it X"); a real one is often only a relevance ("the code is 4417 if you
            # ever need it", "my locker code is 3391 if I ever lose my keys": a state said under it holds)
        lemma = (v.lemma_ or "").lower()
        if lemma in _CONSIDER and (lemma != "think" or v.tag_ == "VBG"
                                   or any(c.dep_ == "prep" and c.lower_ in ("of", "about") for c in v.children)):
            return True  # "thinking of Lisbon" weighs an option; "I thought you lived in York" reports a belief
        if v.head.i == v.i or v.dep_ not in ("xcomp", "ccomp", "conj", "pcomp", "prep", "pobj") or _spliced(v):
            break
        v = v.head
    return False


def _spliced(clause: Any) -> bool:
    """A "complement" clause said before its head and cut off from it by a comma is a sentence of its own run on
    into the next ("I'm a physio, I should know better"): the next one's modal is not its."""
    if clause.dep_ != "ccomp" or clause.i > clause.head.i:
        return False
    end = max(t.i for t in clause.subtree)
    return any(t.text in (",", ";") for t in clause.doc[end + 1: clause.head.i])


#: verbs of naming ("is called Y", "got named Y")
NAMING_VERBS = frozenset({"call", "name", "rename", "nickname", "christen", "dub"})


def _naming_frames(verb: Any, subj: Any | None, sent: Any, speaker: str, other: str | None,
                   participants: Sequence[str]) -> list[Frame]:
    """'my cat is called Pierogi', 'the octopus I'm studying is called Brenda' → (holder, 'cat', 'Pierogi')."""
    name = next((c for c in verb.children if c.dep_ in ("oprd", "attr", "xcomp")), None)
    if subj is None or name is None or subj.pos_ != "NOUN":
        return []
    holder = _holder(subj, speaker, other, participants)
    if holder is None:
        relcl = next((c for c in subj.children if c.dep_ == "relcl"), None)
        mine = relcl is not None and any(resolve_person(c, speaker, other, participants) for c in relcl.children
                                         if c.dep_ == "nsubj")
        holder = speaker if mine else None
    if holder is None:
        return []
    f = _frame(holder, (subj.lemma_ or subj.text).lower(), name, sent, verb=verb, copular=True)
    return [f] if f is not None else []


def _dropped_subject(verb: Any) -> bool:
    """A chat clause that leaves out its 'I' ("got a one-bed in Digbeth", "doing 16:8 now"): a past or -ing verb
    that opens its sentence (or is conjoined to one that does), not an imperative or a question."""
    root = verb
    # (a participle without a subject of its own shares its clause's: "got the letter today, promoted from Grade 3 to
    # Grade 4")
    while (root.dep_ == "conj" or (root.dep_ == "advcl" and root.tag_ in ("VBN", "VBG")
                                   and not any(c.dep_ in ("nsubj", "nsubjpass", "mark") for c in root.children))) \
            and root.head.i != root.i:
        root = root.head
    if root.dep_ != "ROOT" or root.tag_ not in ("VBD", "VBN", "VBG"):
        return False
    first = next((t for t in root.sent if not t.is_punct), None) if hasattr(root, "sent") else None
    lead = [t for t in root.doc[first.i: root.i]] if first is not None else []
    # only adverbs, interjections or discourse words may come before it ("also", "finally", "ok so")
    return all(t.pos_ in ("ADV", "INTJ", "CCONJ", "PUNCT", "SCONJ", "PART") or t.dep_ in ("intj", "advmod") for t in lead)


def _verb_key(verb: Any) -> str:
    lemma = (verb.lemma_ or verb.text).lower()
    prt = [c.lower_ for c in verb.children if c.dep_ == "prt"]
    return " ".join([lemma, *prt])


def _is_question(sent: Any) -> bool:
    text = sent.text.strip()
    return text.endswith("?") and question_after_statement(text) is None


def asked_part(sent: Any) -> int:
    """The index of the first token of a question that follows a statement in the same line ("… in May. you in?"),
    or the span's end: the statement's frames are read, the question's are not."""
    at = question_after_statement(sent.text)
    if at is None:
        return sent.end
    return next((t.i for t in sent if t.idx - sent.start_char >= at), sent.end)


def read_frames(sent: Any, speaker: str, other: str | None, participants: Sequence[str],
                earlier: Sequence[Any] = ()) -> list[Frame]:
    """Every frame a declarative sentence states about a participant (questions state none). `earlier`: the
    message's sentences before this one (parsed), where a "there" may find its place."""
    if _is_question(sent):
        return []
    frames: list[Frame] = []
    asked = asked_part(sent)
    for tok in sent:
        if tok.pos_ not in ("VERB", "AUX") or tok.i >= asked:
            continue
        if tok.dep_ in ("aux", "auxpass"):
            continue
        lemma = (tok.lemma_ or tok.text).lower()
        subj_tok = subject_of_clause(tok)
        if lemma in NAMING_VERBS and tok.tag_ == "VBN":
            frames.extend(_naming_frames(tok, subj_tok, sent, speaker, other, participants))
            continue
        if lemma == "be" and subj_tok is None and tok.tag_ == "VBG":
            # "being a paralegal means …": a non-finite clause whose understood subject is the speaker
            comp = next((c for c in tok.children if c.dep_ in ("attr", "acomp") and c.pos_ in ("NOUN", "ADJ", "PROPN", "NUM")), None)
            if comp is not None and comp.dep_ == "attr" and comp.pos_ == "NOUN" and _is_role_word(comp):
                continue  # a role: `_role_frames` reads it, the role alone ("being a sound engineer in april")
            f = _frame(speaker, "be", comp, sent, verb=tok, copular=True) if comp is not None else None
            if f is not None:
                frames.append(f)
            continue
        if lemma == "be":
            frames.extend(_copular_frames(tok, subj_tok, sent, speaker, other, participants))
            continue
        if subj_tok is None:
            if not _dropped_subject(tok):
                continue  # an imperative carries no statement ("Forget Oslo"): constructions read those
            subject: str | None = speaker  # "sold the PS4 and got a Steam Deck": chat drops the 'I'
        else:
            subject = resolve_person(subj_tok, speaker, other, participants)
        if subject is None and subj_tok is not None and subj_tok.pos_ in ("NOUN", "PROPN"):
            subject = _holder(subj_tok, speaker, other, participants)
            if subject is not None:  # "my sister lives in Leeds": the sister's fact, keyed by who she is
                moved = _attribute_moved(tok, subj_tok, subject)
                if moved is not None:  # "my shift moved to nights": the speaker's shift is nights now
                    frames.append(moved)
                continue
        if subject is None:
            frames.extend(_placed_object_frames(tok, speaker, other, participants))
            continue
        if lemma in _CARRIER_VERBS and any(c.dep_ == "xcomp" and c.pos_ == "VERB" for c in tok.children):
            continue  # "I had to quit the marathon": the frame is 'quit', read at the inner verb
        key = _verb_key(tok)
        args: list[tuple[str, Any]] = []
        for c in tok.children:
            if c.dep_ in ("dobj", "attr", "oprd", "dative") and c.dep_ != "dative":
                args.append((key, c))
        person_object = next((c.i for c in tok.children if c.dep_ == "dobj" and (
            (c.pos_ == "PRON" and c.lower_ not in ("it", "this", "that")) or c.ent_type_ == "PERSON")), None)
        for c in tok.children:
            if c.dep_ == "prep" and c.lower_ in VALUE_PREPS:
                if c.lower_ == "as" and person_object is not None and c.i > person_object:
                    continue  # "I see him as a mentor": the as-phrase is the object's
                pobj = _pobj(c)
                if pobj is not None:
                    args.append((f"{key} {c.lower_}", pobj))
                if c.lower_ == "from":
                    # "moved it from X to Y": the parser often hangs the to-phrase on the from-phrase
                    for inner in [*c.children, *(pobj.children if pobj is not None else [])]:
                        if inner.dep_ == "prep" and inner.lower_ in ("to", "into"):
                            target = _pobj(inner)
                            if target is not None:
                                args.append((f"{key} {inner.lower_}", target))
            elif c.dep_ in ("prep", "prt", "advmod") and c.lower_ in ("out", "up", "away", "off", "back", "over"):
                # "moved out of the flat", "signed up for the race": a particle read as a preposition
                inner = next((g for g in c.children if g.dep_ == "prep" and g.lower_ in VALUE_PREPS), None)
                pobj = _pobj(inner) if inner is not None else None
                if pobj is not None:
                    args.append((f"{key} {c.lower_} {inner.lower_}", pobj))
        args += [(f"{key} {to.lower_}", value) for to, value in misread_to(tok)]
        there = next((c for c in tok.children if c.dep_ == "advmod" and c.lower_ in ("there", "here")), None)
        place = _place_before(there, participants, earlier) if there is not None else _where_place(tok)
        if place is not None:  # "I'm visiting my gran in Galway … I grew up there": the place the message named
            # ("Harrogate … I've lived here 50 years"; "from Auckland, where I grew up")
            f = _frame(subject, f"{key} {'to' if lemma in _MOTION_VERBS else 'in'}", place, place.sent, verb=tok,
                       copular=False)
            if f is not None:  # (its offsets and tokens are another sentence's: none are kept)
                frames.append(replace(f, start=0, end=0, value_tokens=()))
        result = _changed_attribute(tok, args)
        if result is not None:  # the object and the to-phrase are read as one attribute frame
            frames.append(replace(result, subject=subject))
            args = [(k, h) for k, h in args if h.dep_ != "dobj" and h.i not in result.value_tokens]
        for k, head in args:
            if head.dep_ == "pobj" and head.ent_type_ in ("DATE", "TIME") and k.split()[-1] in ("in", "on", "at", "for", "by"):
                continue  # "moved in March": a time adjunct, not the value
            f = _frame(subject, k, head, sent, verb=tok, copular=False)
            if f is not None:
                frames.append(f)
    if not frames:
        frames.extend(_fragment_frames(sent, speaker))
    frames.extend(_role_frames(sent, speaker, other, participants))
    frames.extend(_appositive_names(sent, speaker, participants))
    frames.extend(_origin_and_home_frames(sent, speaker, participants))
    seen: set[tuple[str, str, str]] = set()  # one hyphenated word split into sibling objects gives one frame
    frames = [_without_vocative(f, participants, sent.doc) for f in frames]
    return [f for f in frames if (f.subject, f.key, f.value) not in seen and not seen.add((f.subject, f.key, f.value))]


#: verbs of motion towards a place (Levin's "verbs of inherently directed motion"): "there" is where they go
_MOTION_VERBS = frozenset("go move come return head fly travel drive relocate emigrate".split())


#: spaCy's entity labels of places
_PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})


def _place_before(there: Any, participants: Sequence[str], earlier: Sequence[Any] = ()) -> Any | None:
    """The place a locative "there" stands for: the last place name said before it in the message ("I'm visiting my
    gran in Galway for a week. I grew up there" → Galway; `earlier`: the message's sentences before the one with
    "there"), as the head token of its name."""
    names = _first_names(participants)
    before = [*(t for s in earlier for t in s), *there.doc[: there.i]]
    for tok in reversed(before):
        if tok.pos_ != "PROPN" or tok.dep_ == "compound" or tok.lower_ in names or tok.ent_type_ not in _PLACE_LABELS:
            continue  # (a place the tagger names as one: a capitalised brand a gazetteer also lists as some village is none)
        span = _span_tokens(tok)
        if span and value_type(span, tok.doc[span[0].i: span[-1].i + 1].text) == "place":
            return tok
    return None


def _where_place(verb: Any) -> Any | None:
    """The place a relative "where" clause is about: the place name said just before ", where" ("my nan sent it
    from Auckland, where I grew up"), as the head token of its name; None when the clause follows anything else
    ("the café where I work" names no place)."""
    where = next((c for c in verb.children if c.dep_ == "advmod" and c.lower_ == "where" and c.i < verb.i), None)
    if where is None or verb.dep_ not in ("relcl", "advcl") or where.i < 2:
        return None
    before = where.doc[where.i - 1]
    if before.text == ",":
        before = where.doc[where.i - 2]
    if before.pos_ != "PROPN" or before.ent_type_ not in _PLACE_LABELS:
        return None
    span = _span_tokens(before)
    return before if span and value_type(span, before.doc[span[0].i: span[-1].i + 1].text) == "place" else None


def _origin_and_home_frames(sent: Any, speaker: str, participants: Sequence[str]) -> list[Frame]:
    """Where the speaker comes from or lives, said without a clause of their own: "Perth born", "Valencia born and
    raised" (a place as the subject of "born"), "back home in Durban" (where they come from), "my flat in Bristol"
    (a home of theirs — a noun WordNet files under housing, `lexicon.is_dwelling` — placed in a named place)."""
    from tracecli.graph.lexicon import is_dwelling

    names = _first_names(participants)
    out: list[Frame] = []
    for tok in sent:
        place = key = None
        if tok.lower_ == "born" and tok.tag_ in ("VBN", "VBD") and not any(c.dep_ == "prep" for c in tok.children):
            # (with a place or a time of its own the subject is who was born: "Sam born in 1990")
            place, key = next((c for c in tok.children if c.dep_ in ("nsubj", "nsubjpass")
                               and c.pos_ in ("PROPN", "NOUN") and c.lower_ not in names
                               and not any(g.dep_ in ("det", "poss") for g in c.children)), None), ORIGIN_KEY
        elif tok.lower_ == "home" and tok.pos_ == "ADV" and (
                any(c.lower_ == "back" for c in tok.children) or (tok.i > sent.start and tok.nbor(-1).lower_ == "back")):
            prep = next((c for c in tok.children if c.dep_ == "prep" and c.lower_ == "in"), None)
            place, key = (_pobj(prep) if prep is not None else None), ORIGIN_KEY
        elif tok.pos_ == "NOUN" and any(c.dep_ == "poss" and c.lower_ in ("my", "our") for c in tok.children) \
                and is_dwelling(tok.lemma_ or tok.text):
            prep = next((c for c in tok.children if c.dep_ == "prep" and c.lower_ == "in"), None)
            place, key = (_pobj(prep) if prep is not None else None), "live in"
        if place is None or place.pos_ not in ("PROPN", "NOUN") or not place.text[:1].isupper():
            continue
        f = _frame(speaker, key, place, sent, verb=None, copular=key == ORIGIN_KEY)
        if f is not None and f.vtype == "place":
            out.append(f)
    return out


def _appositive_names(sent: Any, speaker: str, participants: Sequence[str]) -> list[Frame]:
    """A name put beside the speaker's own noun: "my wife Meera", "my daughter, Ruby, starts ballet", "Gerald, my
    monstera" → (speaker, 'wife', 'Meera'), read like "my wife is called Meera". Not a copular key, so two such
    names of one noun ("my friend Sam" … "my friend Jo") are not a revision of each other."""
    out: list[Frame] = []
    names = _first_names(participants)
    for noun in sent:
        if noun.pos_ != "NOUN" or noun.tag_ == "NNS" \
                or not any(c.dep_ == "poss" and c.lower_ in ("my", "our") for c in noun.children):
            continue
        name = None
        mine = next(c for c in noun.children if c.dep_ == "poss")
        before = noun.doc[mine.i - 1] if mine.i - 1 >= sent.start else None
        if noun.dep_ == "appos" and noun.head.pos_ == "PROPN":
            name = noun.head  # "Biscuit, my beagle"
        elif before is not None and before.pos_ == "PROPN" and mine.i == noun.i - 1 and (
                before.dep_ in ("dep", "appos")
                or (before.dep_ == noun.dep_ == "nsubj" and before.head.i == noun.head.i)):
            name = before  # "Gerald my monstera has a new leaf" (often parsed as two subjects)
        else:
            after = noun.nbor(1) if noun.i + 1 < sent.end else None
            if after is not None and after.text == "," and after.i + 1 < sent.end:
                after = after.nbor(1)
            if after is not None and after.pos_ == "PROPN" and (after.dep_ == "appos" and after.head.i == noun.i
                                                                 or after.i == noun.i + 1):
                name = after  # "my wife Meera", "my daughter, Ruby,"
        if name is None or not name.text[:1].isupper() or name.lower_ in names:
            continue
        first = name  # the whole run of capitalised words ("Dr Lindqvist", "Clint Yeastwood")
        while first.i > sent.start and first.nbor(-1).pos_ == "PROPN" and first.nbor(-1).text[:1].isupper() \
                and first.nbor(-1).i != noun.i:
            first = first.nbor(-1)
        last = name
        while last.i + 1 < sent.end and last.nbor(1).pos_ == "PROPN" and last.nbor(1).text[:1].isupper():
            last = last.nbor(1)
        f = _frame(speaker, (noun.lemma_ or noun.text).lower(), name, sent, verb=None, copular=False)
        if f is not None:
            start, end = first.idx - sent.start_char, last.idx + len(last.text) - sent.start_char
            out.append(replace(f, value=sent.text[start:end], start=start, end=end, named=True,
                               value_tokens=tuple(range(first.i, last.i + 1))))
    return out


def _first_names(participants: Sequence[str]) -> set[str]:
    return {p.split()[0].lower() for p in participants if p}


def _without_vocative(f: Frame, participants: Sequence[str], doc: Any) -> Frame:
    """A participant's name ending a common-noun value is said to them, not part of it ("I'm a radiographer mateo,
    I've seen things"): the value and its head noun are the words before it."""
    words = f.value.split()
    if len(words) < 2 or words[-1].lower() not in _first_names(participants) or not words[0].islower():
        return f
    value = f.value[: f.value.rindex(words[-1])].rstrip(" ,")
    kept = f.value_tokens[:-1] or f.value_tokens
    head = f.head
    if kept and len(kept) < len(f.value_tokens) and max(f.value_tokens) < len(doc):
        dropped = doc[max(f.value_tokens)]
        if f.head in (dropped.lower_, (dropped.lemma_ or "").lower()):  # the name was read as the value's head noun
            last = doc[max(kept)]
            head = (last.lemma_ or last.text).lower()
    return replace(f, value=value, head=head, end=f.start + len(value), value_tokens=kept)


#: prepositions that place the object of a verb in a state ("moved me to the Friday rota", "put me on an inhaler")
_OBJECT_PLACING_PREPS = ("to", "on", "onto", "in", "into", "as")


def _placed_object_frames(verb: Any, speaker: str, other: str | None, participants: Sequence[str]) -> list[Frame]:
    """Someone else placing a participant in a state: "the agency moved me to the Friday rota", "the doctor put me on
    an inhaler" — the object's fact, keyed by the verb and its preposition."""
    obj = next((c for c in verb.children if c.dep_ == "dobj"), None)
    person = resolve_person(obj, speaker, other, participants) if obj is not None else None
    if person is None or clause_negated(verb):
        return []
    out: list[Frame] = []
    for c in verb.children:
        if c.dep_ == "prep" and c.lower_ in _OBJECT_PLACING_PREPS:
            pobj = _pobj(c)
            # (a time is an adjunct — "moved me to the Friday rota on Monday" — except where it is moved to: "moved
            # me from Monday nights to Saturday mornings")
            f = _frame(person, f"{_verb_key(verb)} {c.lower_}", pobj, verb.sent, verb=verb, copular=False) \
                if pobj is not None and (pobj.ent_type_ not in ("DATE", "TIME") or c.lower_ in ("to", "into")) else None
            if f is not None:
                out.append(f)
    for to, value in misread_to(verb):
        f = _frame(person, f"{_verb_key(verb)} {to.lower_}", value, verb.sent, verb=verb, copular=False)
        if f is not None:
            out.append(f)
    return out


def _fragment_frames(sent: Any, speaker: str) -> list[Frame]:
    """A verbless fragment that announces a state ("night desk now"): chat drops the
    'I'm on' / 'it's', so the noun phrase is the speaker's new value of something, read like "it's X now" — an
    anaphoric restatement (key `it`) that answers only a question asking for its kind; or one that places the speaker
    (`_placed_fragments`)."""
    placed = _placed_fragments(sent, speaker)
    if placed or any(t.pos_ in ("VERB", "AUX") for t in sent):
        return placed
    root = sent.root
    if root.pos_ not in ("NOUN", "PROPN") or not any(t.lower_ in NOVELTY_WORDS for t in sent):
        return []
    f = _frame(speaker, "it", root, sent, verb=None, copular=True)
    return [f] if f is not None else []


def _placed_fragments(sent: Any, speaker: str) -> list[Frame]:
    """A verbless clause that places the speaker ("still at Halden Rovers, nine seasons now", "in Leeds till sunday"):
    chat drops the "I'm", so a sentence that is only a placing preposition and its object (adverbs aside) is read like
    "I'm at Halden Rovers" (key 'be at'), with the placement's own rule for what is a value (a name, a noun with its
    determiner, a bare plural after "on")."""
    out: list[Frame] = []
    for tok in sent:
        if tok.dep_ != "ROOT" or tok.pos_ != "ADP" or tok.lower_ not in _PLACING_PREPS:
            continue
        clause = tok.sent
        if any(t.pos_ in ("VERB", "AUX") for t in clause) \
                or any(t.dep_ not in ("advmod", "punct", "intj") for t in clause if t.i < tok.i):
            continue
        pobj = _pobj(tok)
        if pobj is None or pobj.ent_type_ in ("DATE", "TIME") or not _placed_value(tok, pobj):
            continue
        f = _frame(speaker, f"be {tok.lower_}", pobj, sent, verb=None, copular=True)
        if f is not None:
            out.append(f)
    return out


#: degree adverbs: what they modify is a quality that comes in degrees, not a role ("so adult", "such a hero")
_DEGREE = frozenset("so such very too really quite pretty totally utterly absolutely proper".split())
#: where a bare noun phrase stands on its own in chat ("tree surgeon, not gardener", "firefighter life")
_BARE_NP_DEPS = ("ROOT", "appos", "npadvmod", "dep")


def _role_frames(sent: Any, speaker: str, other: str | None, participants: Sequence[str]) -> list[Frame]:
    """A role the speaker names as their own without a verb (`tracecli.graph.lexicon.is_role`): chat states a job
    as a bare noun phrase ("tree surgeon, not gardener", "junior architect here") or as
    the modifier of one ("firefighter life", "lifeguard mode", "pastry chef hours"; an acronym in capitals is none:
    "RIP mouse"); "they made me team captain"
    puts the object in the role. Read like "I'm a firefighter" (key `be`). A determiner or possessor ("the nurse",
    "my nurse") or a negation ("not gardener") makes it someone else's or not theirs."""
    from tracecli.graph.lexicon import is_role, is_time_span

    out: list[Frame] = []
    for tok in sent:
        if tok.pos_ not in ("NOUN", "ADJ", "PROPN") or tok.tag_ in ("NNS", "NNPS") \
                or (tok.text[:1].isupper() and tok.i != sent.start) or (len(tok.text) > 1 and tok.text.isupper()) \
                or not (is_role(tok.lemma_ if tok.pos_ == "NOUN" else tok.lower_, adjective=tok.pos_ == "ADJ")
                        or _compound_role(tok)):
            continue  # one role, a common noun: a plural is a group, a capitalised word mid-sentence a name
        held = _held_role(tok, speaker, other, participants)
        if held is not None:  # "eight years as a sommelier", "the life of a dental hygienist"
            if held:
                f = _frame(held, "be", tok, sent, verb=None, copular=True)
                if f is not None:
                    out.append(_role_span(f, tok, sent))
            continue
        if any(c.dep_ in ("det", "poss", "relcl", "acl") or c.ent_type_ in ("DATE", "TIME")
               or (c.dep_ == "compound" and c.pos_ == "PRON") for c in tok.children) \
                or (tok.i > sent.start and tok.nbor(-1).lower_ in ("not", "no", "never", "ex", "former", "mr", "mrs", "ms")):
            continue  # someone else's ("the nurse"), not theirs ("not gardener"), an appointment ("plumber tomorrow"),
            # a form of address ("mr mechanic"), or a thing of that kind ("something vegan")
        if tok.dep_ == "ROOT" and len([t for t in tok.sent if not t.is_punct]) == 1:
            continue  # a one-word reply ("genius", "hero. bring the car round") judges what the other said
        if any(c.dep_ == "advmod" and c.lower_ in _DEGREE for c in tok.children):
            continue  # a degree makes it a quality ("so adult"), not a role held
        holder: str | None = speaker
        if tok.dep_ in ("ccomp", "oprd", "xcomp"):  # "made me team captain"
            obj = next((c for c in tok.children if c.dep_ in ("nsubj", "dobj")), None)  # the small clause's subject
            holder = resolve_person(obj, speaker, other, participants) if obj is not None else None
        elif tok.dep_ in ("compound", "amod", "poss"):
            # (a role's "life", "hours" or "shift" — a span of time, `lexicon.is_time_span` — is the speaker's
            # wherever it stands: "estate agent life is a joy", "pastry chef hours are brutal", "joiner's hours")
            head = tok.head  # (a possessive only before its time: "captain's privilege" is the captain's, not a role)
            if head.pos_ != "NOUN" or (head.dep_ not in (*_BARE_NP_DEPS, "conj") and not is_time_span(head.lemma_)) \
                    or (tok.dep_ == "poss" and not is_time_span(head.lemma_)) \
                    or head.text[:1].isupper() \
                    or any(c.dep_ in ("det", "poss") and c.i != tok.i for c in head.children):
                continue  # (before a capitalised word, a title: "PROFESSOR TEVITA")
        elif tok.dep_ not in _BARE_NP_DEPS or tok.pos_ != "NOUN":
            continue
        if holder is None:
            continue
        f = _frame(holder, "be", tok, sent, verb=None, copular=True)
        if f is not None:
            out.append(replace(_role_span(f, tok, sent), bare=tok.dep_ in _BARE_NP_DEPS))
    # a role word inside a longer role ("freelance" in "freelance electrician") is not a role of its own
    return [f for f in out if not any(set(f.value_tokens) < set(g.value_tokens) for g in out)]


def _compound_role(tok: Any) -> bool:
    """A role WordNet knows only as a compound with the noun before it ("estate agent", not "agent")."""
    from tracecli.graph.lexicon import is_role

    before = next((c for c in tok.children if c.dep_ == "compound" and c.i == tok.i - 1 and c.pos_ == "NOUN"), None)
    return tok.pos_ == "NOUN" and before is not None and is_role(f"{before.lower_} {tok.lemma_}")


def _is_role_word(tok: Any) -> bool:
    from tracecli.graph.lexicon import is_role

    return is_role(tok.lemma_ or tok.text)


def _held_role(tok: Any, speaker: str, other: str | None, participants: Sequence[str]) -> str | None:
    """The speaker, when a role said with its article is held in a construction of holding one: "as a X" after a
    noun phrase ("eight years as a sommelier", "NYE as a paramedic is chaos"), before its clause ("as a bus driver,
    my step count is …") or after an occupation noun of the speaker's ("my job as a dental nurse"); "the life of a
    X" (like "X life"); "being a X" without a subject of its own ("being a sound engineer in april is …": the role
    without what follows it); and a role joined to the speaker's copular complement ("I'm 38 and a librarian").
    After a verb, "as a X" is the verb reader's ("I work as a translator"; "I see him as a mentor" is no role of
    the speaker's). None when `tok` is in no such construction, "" when it is but names someone
    else's role ("as his nurse", "as a nurse, she …")."""
    from tracecli.graph.lexicon import is_occupation, is_time_span

    if tok.dep_ == "attr" and tok.head.lemma_ == "be" and tok.head.tag_ == "VBG" \
            and not any(c.dep_ in ("nsubj", "nsubjpass") for c in tok.head.children):
        return "" if clause_negated(tok.head) else speaker  # "being a sound engineer in april is …" (the role alone)
    if tok.dep_ == "conj" and tok.head.dep_ in ("attr", "acomp") and tok.head.head.lemma_ == "be":
        subj = next((c for c in tok.head.head.children if c.dep_ == "nsubj"), None)
        return speaker if subj is not None and resolve_person(subj, speaker, other, participants) == speaker else None
    article = next((c for c in tok.children if c.dep_ == "det"), None)
    if article is not None and article.lower_ in ("a", "an") and article.i > 0:
        span = tok.doc[article.i - 1]  # "twelve years a pharmacist": a span of time spent as the role
        if span.tag_ == "NNS" and is_time_span(span.lemma_) and any(c.dep_ == "nummod" for c in span.children):
            return speaker
    if tok.dep_ != "pobj" or tok.head.dep_ != "prep" or tok.pos_ != "NOUN":
        return None
    prep, anchor = tok.head, tok.head.head
    if prep.lower_ == "of" and anchor.lemma_ == "life" and anchor.dep_ in _BARE_NP_DEPS:
        held = True
    elif prep.lower_ != "as":
        held = False
    elif anchor.pos_ in ("NOUN", "PROPN", "NUM"):
        # a verbless phrase, or the speaker's own occupation noun ("my job as a dental nurse")
        held = anchor.dep_ in (*_BARE_NP_DEPS, "nsubj") or (
            is_occupation(anchor.lemma_) and any(c.dep_ == "poss" and c.lower_ == "my" for c in anchor.children))
    elif anchor.pos_ in ("VERB", "AUX") and prep.i < anchor.i:
        # fronted before its clause: the speaker's, unless the clause is about another person
        subj = next((c for c in anchor.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        if subj is None or subj.i < prep.i:
            return None
        if resolve_person(subj, speaker, other, participants) not in (None, speaker) \
                or subj.lower_ in ("he", "she", "they") or subj.ent_type_ == "PERSON":
            return ""
        # (with the speaker as its subject, the verb reader reads it: "as a plumber I can tell you" → 'tell as')
        held = subj.lower_ == "it" or any(c.dep_ == "poss" and c.lower_ == "my" for c in subj.children)
    else:
        held = False
    if not held:
        return None
    return "" if any(c.dep_ == "poss" and c.lower_ not in ("your", "my") for c in tok.children) else speaker


def _role_span(f: Frame, tok: Any, sent: Any) -> Frame:
    """The role with the modifiers just before it, wherever the parser attached them ("freelance electrician")."""
    first = tok
    while first.i > sent.start:
        prev = first.nbor(-1)
        if prev.text == "-" and prev.i > sent.start and prev.nbor(-1).pos_ in ("ADJ", "NOUN"):
            first = prev.nbor(-1)  # "night-shift nurse"
        elif prev.dep_ in ("amod", "compound") and (prev.pos_ in ("ADJ", "NOUN", "PROPN") or prev.tag_ == "VBG"):
            first = prev  # (a gerund too: "managing director", "teaching assistant")
        else:
            break
    start = first.idx - sent.start_char
    end = tok.idx + len(tok.text) - sent.start_char
    value = sent.text[start:end]
    return replace(f, value=value, start=start, end=end, value_tokens=tuple(range(first.i, tok.i + 1)),
                   vtype=value_type(sent.doc[first.i: tok.i + 1], value))


def _copular_frames(verb: Any, subj: Any | None, sent: Any, speaker: str, other: str | None,
                    participants: Sequence[str]) -> list[Frame]:
    """What a form of 'be' states: an attribute ('my X is Y', 'Y is my X', 'I'm a nurse'), or else where the
    subject is placed ('I'm on the night team')."""
    out = _attribute_frames(verb, subj, sent, speaker, other, participants)
    if not out and subj is not None:
        out = _placed_frames(verb, subj, sent, speaker, other, participants)
    return out


def _attribute_frames(verb: Any, subj: Any | None, sent: Any, speaker: str, other: str | None,
                      participants: Sequence[str]) -> list[Frame]:
    comp = next((c for c in verb.children if c.dep_ in ("attr", "acomp", "oprd")), None)
    if subj is None or comp is None:
        return []
    out: list[Frame] = []
    # "my locker code (at the gym) is Y" / "your car is Y"
    if subj.pos_ in ("NOUN", "PROPN") and _possessor(subj) is not None:
        holder = _holder(subj, speaker, other, participants)
        if holder is not None:
            f = _frame(holder, _attribute_key(subj), comp, sent, verb=verb, copular=True)
            if f is not None:
                f.novelty = f.novelty or any(t.lower_ in NOVELTY_WORDS for t in subj.children)
                out.append(f)
            return out
    # "Y is my (new) X"
    if comp.pos_ in ("NOUN", "PROPN") and _possessor(comp) is not None and subj.lower_ not in _NOT_VALUE_HEADS:
        holder = _holder(comp, speaker, other, participants)
        if holder is not None and subj.pos_ in ("PROPN", "NOUN", "NUM"):
            f = _frame(holder, _attribute_key(comp), subj, sent, verb=verb, copular=True)
            if f is not None:
                f.novelty = f.novelty or any(t.lower_ in NOVELTY_WORDS for t in comp.children)
                out.append(f)
            return out
    # "it's Porto now": an anaphoric restatement, usable only as the replacement of a retracted value
    if subj.lower_ in ("it", "that", "this") and comp.pos_ in ("PROPN", "NOUN", "NUM"):
        f = _frame(speaker, "it", comp, sent, verb=verb, copular=True)
        if f is not None:
            out.append(f)
        return out
    # "the door code is 7391", "lock combo is 4471": a thing of the speaker's named by a single value
    if subj.pos_ == "NOUN" and _possessor(subj) is None and not any(c.dep_ == "relcl" for c in subj.children) \
            and all(c.lower_ in ("the",) or c.dep_ in ("compound", "amod", "prep") for c in subj.children):
        f = _frame(speaker, _attribute_key(subj), comp, sent, verb=verb, copular=True)
        if f is not None and f.vtype in PROPER_TYPES | {"code", "number", "date"}:
            out.append(f)
        return out
    # "I'm a nurse" / "I'm vegan": the subject's own description
    person = resolve_person(subj, speaker, other, participants) if subj.pos_ in ("PRON", "PROPN") else None
    if person is not None and subj.lower_ not in FIRST_POSSESSIVE and comp.pos_ in ("NOUN", "ADJ", "PROPN"):
        f = _frame(person, "be", comp, sent, verb=verb, copular=True, keep_det=False)
        if f is not None:
            out.append(f)
    return out


#: the key of where someone comes from ("I'm from Lyon"): a fact of its own, revised by no placement
ORIGIN_KEY = "be from"
#: prepositions that place a person in a place, a group or an arrangement ("be in / at / on / with"), or say
#: where they come from ("be from")
_PLACING_PREPS = ("in", "at", "on", "with", "from")


def _placed_value(prep: Any, pobj: Any) -> bool:
    """Is what a placing preposition governs a value: a name, a noun with its determiner or possessor, or a bare
    plural after "on", the rota or regimen one is on ("I'm on deliveries now")? A bare noun is a state or an idiom ("in
    love", "at work", "on holiday", "in bits")."""
    return pobj.pos_ == "PROPN" or any(g.dep_ in ("det", "poss") for g in pobj.children) \
        or (prep.lower_ == "on" and pobj.tag_ == "NNS") or lower_case_name(pobj)


def lower_case_name(tok: Any) -> bool:
    """A bare noun no dictionary knows, written in lower case: a brand or a name ("I'm on giffgaff now")."""
    from tracecli.graph.lexicon import is_unknown

    return tok.pos_ == "NOUN" and tok.text.islower() and is_unknown(tok.text) and is_unknown(tok.lemma_ or tok.text)


def _placed_frames(verb: Any, subj: Any, sent: Any, speaker: str, other: str | None,
                   participants: Sequence[str]) -> list[Frame]:
    """'I'm on the night team now', 'we're in Leeds', 'she's at Monzo': a participant located by a preposition
    (key 'be on' / 'be in' / 'be at'), the copula's own state rather than a verb's argument."""
    person = resolve_person(subj, speaker, other, participants) if subj.pos_ in ("PRON", "PROPN") else None
    if person is None or subj.lower_ in FIRST_POSSESSIVE:
        return []
    out = []
    for c in verb.children:
        if c.dep_ != "prep" or c.lower_ not in _PLACING_PREPS:
            continue
        pobj = _pobj(c)
        if pobj is None or pobj.ent_type_ in ("DATE", "TIME"):
            continue
        if not _placed_value(c, pobj):
            continue
        f = _frame(person, f"be {c.lower_}", pobj, sent, verb=verb, copular=True)
        if f is not None:
            if f.vtype == "thing" and lower_case_name(pobj):
                f.vtype = "name"
            out.append(f)
    return out


#: nouns for people other than the speaker (kinship and social roles, a closed lexical class of English)
PERSON_NOUNS = frozenset(
    "sister brother mum mom mother dad father daughter son cousin aunt auntie uncle niece nephew grandma grandmother "
    "gran granny grandpa grandfather grandad wife husband partner boyfriend girlfriend fiance fiancee friend mate "
    "flatmate roommate housemate colleague boss manager neighbour neighbor kid kids child children parents family "
    "baby team friends".split()
)


#: typed facets whose value is itself a person or an animal of the speaker's ("my girlfriend Mara says hi")
RELATION_FACETS = ("partner", "relationship", "family:", "pet_name:")


def foreign_clause(sent: Any, value: str, speaker: str, other: str | None, participants: Sequence[str]) -> bool:
    """Is `value` said inside a clause about someone else, a possibility, or as the modifier of a subject noun?"""
    doc = sent.doc if hasattr(sent, "doc") else sent
    words = value.split()
    if not words:
        return False
    start = next((t.i for t in sent if t.text == words[0] and doc[t.i: t.i + len(words)].text == value), None)
    if start is None:
        return False
    tok = doc[start + len(words) - 1]
    if tok.dep_ == "compound" and tok.head.dep_ in ("nsubj", "nsubjpass") and tok.head.pos_ == "NOUN":
        return True  # "Clifton rent went stupid": the value names what the subject is about
    verb = tok
    while verb.pos_ not in ("VERB", "AUX") and verb.head.i != verb.i:
        verb = verb.head
    if verb.pos_ not in ("VERB", "AUX"):
        return False
    if is_hedged(verb):
        return True
    subj = subject_of_clause(verb)
    if subj is None or start <= subj.i < start + len(words):
        return False  # no subject, or the value is the subject ("York is home now")
    if subj.lower_ in PERSON_NOUNS or (subj.lemma_ or "").lower() in PERSON_NOUNS:
        return True
    # (he / she / they are left alone: in a chat they as often stand for a company or the other participant)
    return subj.pos_ == "PROPN" and subj.ent_type_ == "PERSON" and resolve_person(subj, speaker, other, participants) is None


def statement_subject(sent: Any, speaker: str, other: str | None, participants: Sequence[str],
                      value: str | None = None) -> tuple[str | None, str]:
    """Who a statement is about, read from the parse: (participant or None, how it was found).

    The clause is the one holding `value` when it is given, else the sentence's main clause. Its subject
    names the participant: I/we/my → the speaker, you → the other participant, a participant's name → that
    participant ("person"); a possessed noun ("my knee", "your job", "Ana's dog") → its holder ("holder", or
    "relative" when the noun is a person: "my brother is getting married"); a clause without its 'I'
    ("moved to Sopot last week") → the speaker ("dropped"); a person's name outside the conversation → that
    name ("third"). Anything else (it, that, a thing, he/she) is
    about no participant: (None, "other"), or (None, "none") when the sentence has no clause at all, or
    (None, "missing") when `value` is not in the sentence.
    """
    doc = sent.doc if hasattr(sent, "doc") else sent
    verb = None
    if value:
        words = value.split()
        start = None
        while words and start is None:  # a normalised value ("5 October 2024") is found by its stated part
            phrase = " ".join(words)
            start = next((t.i for t in sent if t.text == words[0] and doc[t.i: t.i + len(words)].text == phrase), None)
            if start is None:
                words = words[:-1] if len(words) > 1 else []
        if start is None:
            return None, "missing"
        if start is not None:
            verb = doc[start + len(words) - 1]
            while verb.pos_ not in ("VERB", "AUX") and verb.head.i != verb.i:
                verb = verb.head
            if verb.pos_ not in ("VERB", "AUX"):
                verb = None
    if verb is None:
        verb = next((t for t in sent if t.dep_ == "ROOT"), None)
    if verb is None:
        return None, "none"
    subj = subject_of_clause(verb) if verb.pos_ in ("VERB", "AUX") else None
    if subj is None:
        if verb.pos_ in ("VERB", "AUX") and _dropped_subject(verb):
            return speaker, "dropped"
        return None, "none"
    person = resolve_person(subj, speaker, other, participants)
    if person is None and subj.text[:1].isupper():  # the small tagger reads some names as common nouns
        person = next((p for p in participants if subj.text in (p, p.split()[0])), None)
    if person is not None:
        return person, "person"
    if subj.pos_ in ("NOUN", "PROPN"):
        # "my brother Declan": the possessive hangs on the compound or apposition, not on the name
        nouns = [subj] + [c for c in subj.children if c.dep_ in ("compound", "appos") and c.pos_ in ("NOUN", "PROPN")]
        for noun in nouns:
            holder = _holder(noun, speaker, other, participants)
            if holder is not None:
                kin = any(n.lower_ in PERSON_NOUNS or (n.lemma_ or "").lower() in PERSON_NOUNS for n in nouns)
                return holder, "relative" if kin else "holder"
        if subj.pos_ == "PROPN" and subj.ent_type_ == "PERSON":
            return subj.text, "third"  # someone outside the conversation: their fact, on no participant's page
    return None, "other"


def _leading_fragment(sent: Any) -> Any | None:
    """The verbless phrase a line opens with, up to its first "!", "," or "." ("alto! since I was little …",
    "Barclays, sadly"): one to four words, one of them a noun, a name or a number."""
    end = next((t.i for t in sent if t.is_punct and t.text[:1] in "!,.;"), None)
    if end is None or not 1 <= end - sent.start <= 4:
        return None
    lead = sent.doc[sent.start:end]
    if any(t.pos_ in ("VERB", "AUX", "PRON") for t in lead) or not any(t.pos_ in ("NOUN", "PROPN", "NUM") for t in lead):
        return None
    return lead


def reply_frame(sent: Any, question: Any, speaker: str) -> Frame | None:
    """A verbless answer to the other person's question ('how are you getting in now?' — 'the 182 bus for now')
    states the question's predicate with the fragment as its value."""
    if any(t.pos_ in ("VERB", "AUX") for t in sent):
        lead = _leading_fragment(sent)
        if lead is None:
            return None
        sent = lead  # "alto! since I was little …": the answer comes first, then what the speaker adds
    root = next((t for t in sent if t.dep_ == "ROOT" or not (sent.start <= t.head.i < sent.end)), None)
    if root is None or root.pos_ not in ("NOUN", "PROPN", "NUM", "ADJ") or root.lower_ in CHAT_INTERJECTIONS:
        return None
    verb = next((t for t in question if t.dep_ == "ROOT" and t.pos_ in ("VERB", "AUX")), None)
    if verb is None or not any(c.lower_ == "you" and c.dep_ in ("nsubj", "nsubjpass") for c in verb.children):
        return None
    lemma = (verb.lemma_ or verb.text).lower()
    if lemma == "be":
        attr = next((c for c in verb.children if c.dep_ in ("attr", "acomp") and c.pos_ == "NOUN"), None)
        key = _attribute_key(attr) if attr is not None else "be"
    else:
        preps = [c.lower_ for c in verb.children if c.dep_ == "prep" and c.lower_ in VALUE_PREPS]
        key = " ".join([_verb_key(verb), *preps[:1]])
    f = _frame(speaker, key, root, sent, verb=None, copular=lemma == "be")
    if f is not None:
        f.novelty = any(t.lower_ in NOVELTY_WORDS for t in sent)
    return f


def attach_frames(sent: Any, speaker: str, other: str | None, participants: Sequence[str], events: list[Any],
                  make: Any, question: Any | None = None, earlier: Sequence[Any] = ()) -> list[Any]:
    """Give each event of a sentence its frame (one event per frame) and the sentence's revision constructions.

    `events` are the sentence's events so far (typed-facet events, or one plain event); `make(subject,
    value, negated, n)` makes a further event. A frame whose value a construction retracts becomes a
    negated event; a retraction whose value no frame holds ("Forget Oslo") gets an event of its own.
    """
    from tracecli.graph.constructions import find_constructions
    from tracecli.graph.facets import normalise_value

    if _is_question(sent):
        return events
    frames = read_frames(sent, speaker, other, participants, earlier)
    if question is not None:
        reply = reply_frame(sent, question, speaker)
        if reply is not None and not any(set(reply.value_tokens) & set(f.value_tokens) for f in frames):
            frames = [reply, *frames]
    _mark_variants(sent, speaker, other, participants, frames)
    cons: list[dict[str, str]] = []
    doc = sent.doc if hasattr(sent, "doc") else sent
    for c in find_constructions(sent):
        if _someone_elses_change(doc, c, speaker, other, participants):
            continue  # "my friend Hana went from alto to tenor": a third person's change, not the speaker's
        old = _phrase(doc, c.old, sent) if c.old is not None else None
        new = _phrase(doc, c.new, sent) if c.new is not None else None
        if c.old is not None:
            for f in frames:
                if c.old in f.value_tokens:
                    f.negated = True
                    f.key = "retract" if not c.new else f.key
        if old:
            cons.append({"name": c.name, "old": old[0], "old_head": old[1], "new": new[0] if new else ""})
    for f in frames:
        if f.negated and f.key != "it" and not any(x["old"] == f.value for x in cons):
            cons.append({"name": "negation", "old": f.value, "old_head": f.head, "new": ""})
    # the typed-facet layer reads cue words, not the parse: drop what it found inside another person's clause
    # ("my sister just moved to Lisbon"), a possibility ("if I ever moved there"), or a topic noun's modifier
    # ("Clifton rent went stupid")
    events[:] = [ev for ev in events if not (ev.facet and ev.value and not ev.negated and not ev.facet.startswith(
        RELATION_FACETS) and foreign_clause(sent, ev.value, speaker, other, participants))]
    used: set[int] = set()
    for ev in events:
        if ev.facet and ev.value:
            for i, f in enumerate(frames):
                if i not in used and _overlaps(f.value, ev.value):
                    ev.frame = f.as_json()
                    used.add(i)
                    if f.negated and f.key == "retract" and not ev.negated:
                        # the facet's cue word read a place where the parse reads a retraction of it with nothing
                        # said in its place ("we left Leeds and we're in York now" is no residence in Leeds; a
                        # substitution's old value, "from the 3rd to …", is the facet layer's own to read)
                        ev.negated = True
                        ev.value_norm = "not:" + normalise_value(ev.value)
                    break
    plain = [ev for ev in events if not ev.facet and ev.value is None]
    n = 0
    for i, f in enumerate(frames):
        if i in used:
            continue
        if plain and not _variant_only(f):
            ev = plain.pop(0)
            ev.value, ev.negated = f.value, f.negated
            ev.value_norm = ("not:" if f.negated else "") + normalise_value(f.value)
            ev.subject = f.subject
        else:
            n += 1
            ev = make(f.subject, f.value, f.negated, n)
            events.append(ev)
        ev.frame = f.as_json()
    if cons:
        host = next((ev for ev in events if ev.frame is not None and ev.subject == speaker), None)
        if host is None:
            n += 1
            host = make(speaker, cons[0]["old"], True, n)
            host.frame = {"key": "retract", "type": "thing", "head": cons[0]["old_head"], "novelty": False,
                          "copular": False, "past": False, "verb": "", "hedged": False}
            events.append(host)
        host.frame = dict(host.frame or {}, constructions=cons)
    return events


def _variant_only(f: Frame) -> bool:
    """A frame `_mark_variants` made for a variant no other frame holds: an event of its own, beside the sentence's
    plain event (which the answer step reads as the whole sentence)."""
    return f.variant is not None and f.key == f.variant[0] and f.copular and not f.verb


def _mark_variants(sent: Any, speaker: str, other: str | None, participants: Sequence[str], frames: list[Frame]) -> None:
    """Give each frame whose value is a variant (`tracecli.graph.variants`: "the 4am shift", "my brown belt") its
    (head, kind, mark, marked); a variant no frame holds becomes a frame of its own, keyed by its head ("shift" is
    "4am shift"), so that a later one with another mark revises it."""
    from tracecli.graph.variants import read_variants

    for v in read_variants(sent, speaker, other, participants):
        host = next((f for f in frames if v.head_i in f.value_tokens and f.subject == v.subject), None)
        if host is not None:
            host.variant = (v.head, v.kind, v.mark, v.marked)
            continue
        doc, base = sent.doc, sent.start_char
        first, last = doc[v.tokens[0]], doc[v.tokens[-1]]
        toks = [doc[i] for i in v.tokens]
        frames.append(Frame(subject=v.subject, key=v.head, value=v.text, head=v.head,
                            vtype=value_type(toks, v.text), copular=True,
                            start=first.idx - base, end=last.idx + len(last.text) - base, value_tokens=v.tokens,
                            variant=(v.head, v.kind, v.mark, v.marked)))


def _someone_elses_change(doc: Any, c: Any, speaker: str, other: str | None, participants: Sequence[str]) -> bool:
    """Is the construction's verb said of someone other than the speaker: the other participant ("you quit the
    band"), or a person who is neither ("my friend Hana went from alto to tenor") with no participant as its
    object ("the director moved me from alto to …", "the dentist moved my appointment …" are the speaker's
    changes)? A subject that is the old value
    itself ("the trip is off") is no person."""
    from tracecli.graph.lexicon import answer_class

    if c.verb is None:
        return False
    verb = doc[c.verb]
    subj = subject_of_clause(verb)
    if subj is None or subj.i == c.old:
        return False
    who = resolve_person(subj, speaker, other, participants)
    if who is not None:
        return who != speaker  # "you quit the band": the other participant's change, not the speaker's
    person = subj.ent_type_ == "PERSON" or (subj.pos_ == "PROPN" and subj.ent_type_ in ("", "NORP")) \
        or (subj.pos_ == "NOUN" and answer_class(subj.lemma_ or subj.text, place=False) == "person")
    if not person:
        return False
    obj = next((x for x in verb.children if x.dep_ == "dobj"), None)
    # "the dentist moved my appointment from … to …": the speaker's own thing changed by someone else
    mine = obj is not None and any(x.dep_ == "poss" and x.lower_ in ("my", "our") for x in obj.subtree)
    return obj is None or (resolve_person(obj, speaker, other, participants) is None and not mine)


def _phrase(doc: Any, i: int, sent: Any) -> tuple[str, str] | None:
    tok = doc[i]
    toks = _span_tokens(tok)
    if not toks:
        return None
    text = doc[toks[0].i: toks[-1].i + 1].text.strip()
    return (text, (tok.lemma_ or tok.text).lower()) if text else None


def _overlaps(a: str, b: str) -> bool:
    wa = set(re.findall(r"\w+", a.lower())) - {"the", "a", "an"}
    wb = set(re.findall(r"\w+", b.lower())) - {"the", "a", "an"}
    return bool(wa & wb)
