"""Offline event distillation (TRACE Eq. 9): one session's messages → state-bearing events.

Per sentence: resolve who it is about (I/my/we → the speaker, you → the other
participant), skip questions, counterfactuals and small talk, find changeable
facts through the facet patterns (subject, facet, value), resolve date
expressions against the session date, and write a third-person description.
Sentences that carry state but match no facet still become events (action,
plan, preference, state_change) so that multi-hop and temporal questions have
something to stand on. The patterns themselves live in `tracecli.graph.patterns`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.graph import facets as F
from tracecli.graph.dates import DateMention, find_dates, format_date
from tracecli.graph.patterns import (
    _alt,
    _EVENT_ALT,
    _SPECIES_WORDS,
    _ANY_SPECIES,
    RETRACTIONS,
    _QUESTION_START,
    _SMALLTALK,
    _WEAK_VERBS,
    _PLAN,
    _PREF,
    _CHANGE,
    _CAUSE_CUES,
    _CROSS_CAUSE,
    ANSWER_SHAPES,
    _scan,
)
from tracecli.text import STOPWORDS, content_words, question_after_statement, short_hash
from tracecli.timeutil import parse_iso


@dataclass
class MessageIn:
    """The slice of a stored message the extractor needs."""

    message_id: str
    note_id: str
    session_id: str
    seq: int
    speaker: str
    text: str
    timestamp: str | None
    source_ref: str | None = None


@dataclass
class EventOut:
    """One distilled event, before it is stored."""

    id: str
    type: str
    subject: str
    participants: list[str]
    description: str
    time_anchor: str | None
    event_time: str | None
    event_time_granularity: str | None
    seq: int
    sentence_idx: int
    source_note_ids: list[str]
    source_message_ids: list[str]
    quote: str
    facet: str | None = None
    value: str | None = None
    value_norm: str | None = None
    negated: bool = False
    cue: str | None = None
    confidence: float = 0.6
    provenance: str = "rules"
    speaker: str = ""
    causal: list[tuple[str, str, str]] = field(default_factory=list)  # (label, other_event_id, cue)
    frame: dict[str, Any] | None = None  # the open statement frame (tracecli.graph.frames), as stored JSON


# -- helpers ---------------------------------------------------------------------------


def _inflect_3sg(verb: str) -> str:
    low = verb.lower()
    irregular = {"am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "don't": "doesn't", "don’t": "doesn’t"}
    if low in irregular:
        return irregular[low]
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


#: English's verb clitics spelled out after a name: (singular subject, plural subject); 'd is "had" before a
#: past participle ("I'd booked") and "would" otherwise
_CLITICS = {"'ll": ("will", "will"), "'m": ("is", "are"), "'re": ("is", "are"), "'ve": ("has", "have"),
            "'d": ("would", "would")}


def _clitic(tok: Any) -> str | None:
    """The spelled-out key of a verb clitic token ('ll, 'd, 've, 're, 'm), None for any other token."""
    low = tok.lower_.replace("’", "'")
    return low if low in _CLITICS and tok.pos_ in ("AUX", "VERB") else None


def _spelled_out(tok: Any, plural: bool) -> str:
    key = _clitic(tok) or ""
    if key == "'d" and tok.head.tag_ == "VBN":
        return "had"
    return _CLITICS[key][1 if plural else 0]


def _opening_interjections(tokens: Sequence[Any]) -> int:
    """How many tokens open the sentence as interjections ("Ok", "Oh and", "Haha,"): spaCy's INTJ, the
    punctuation after them and a conjunction that joins them to the clause. 0 when nothing would be left."""
    i = 0
    while i < len(tokens) and (tokens[i].pos_ == "INTJ" or (i and tokens[i].pos_ == "PUNCT")):
        i += 1
    if i and i < len(tokens) and tokens[i].pos_ == "CCONJ":
        i += 1
    rest = tokens[i:]
    return i if any(t.pos_ not in ("PUNCT", "SYM", "INTJ", "X", "SPACE") for t in rest) else 0


def third_person(sent: Any, speaker: str, other: str | None) -> str:
    """Rewrite a spaCy sentence so I/my/we/you become names, with verb agreement and clitics spelled out
    ("I'll make you" → "Alice will make Bob"); interjections that open it are dropped."""
    out: list[str] = []
    tokens = list(sent)
    dropped = _opening_interjections(tokens)
    tokens = tokens[dropped:]
    fix_next_verb = False
    plural_subject: bool | None = None  # the pronoun just replaced by a name: None, singular or plural ("we")
    for i, tok in enumerate(tokens):
        low = tok.lower_
        text = tok.text
        repl = None
        replaced = None
        if tok.pos_ == "PRON" or low in ("i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "you", "your", "yours"):
            if low == "i" or low == "me" or low == "myself":
                repl, replaced = speaker, False
                fix_next_verb = low == "i"
            elif low in ("my", "mine"):
                repl = f"{speaker}'s"
            elif low in ("we",):
                repl, replaced = f"{speaker} and co.", True
            elif low in ("us", "ourselves"):
                repl = f"{speaker} and co."
            elif low in ("our", "ours"):
                repl = f"{speaker}'s"
            elif other and low in ("you", "yourself"):
                repl, replaced = other, False
                fix_next_verb = tok.dep_ in ("nsubj", "nsubjpass")
            elif other and low in ("your", "yours"):
                repl = f"{other}'s"
        elif plural_subject is not None and _clitic(tok):
            repl = " " + _spelled_out(tok, plural_subject)
            fix_next_verb = False
        elif fix_next_verb and tok.tag_ in ("VBP",) or (fix_next_verb and low in ("am", "are")):
            repl = _inflect_3sg(text)
            fix_next_verb = False
        elif fix_next_verb and tok.pos_ not in ("ADV", "PART"):
            fix_next_verb = False
        plural_subject = replaced
        if repl is not None and i == 0 and repl and repl[0].islower():
            repl = repl[0].upper() + repl[1:]
        elif i == 0 and dropped and repl is None and text[:1].islower():
            repl = text[0].upper() + text[1:]
        out.append((repl if repl is not None else text) + tok.whitespace_)
    return re.sub(r"\s+", " ", "".join(out)).strip()


def _main_subject(sent: Any) -> Any | None:
    """The subject of the sentence's main verb, if it has one."""
    return next((c for c in sent.root.children if c.dep_ in ("nsubj", "nsubjpass", "expl")), None)


def _addressed(sent: Any, text: str) -> bool:
    """True when the sentence is about the person spoken to: it opens with you/your, or the subject of its
    main verb is "you" or "your …" ("Funny you should mention moving" is about the listener, not the speaker)."""
    if re.match(r"(?i)^(?:you|your)\b", text):
        return True
    for child in sent.root.children:
        if child.dep_ in ("nsubj", "nsubjpass"):
            if child.lower_ == "you" or any(c.dep_ == "poss" and c.lower_ == "your" for c in child.children):
                return True
    return False


def _subject_of(group: str | None, speaker: str, other: str | None, participants: Sequence[str]) -> str | None:
    if group is None:
        return speaker
    g = group.strip()
    low = g.lower()
    if low in ("i", "we") or low.endswith(" and i"):
        return speaker
    if low == "you":
        return other
    for p in participants:
        if p.lower() == low:
            return p
    return None  # some other capitalised word: not a subject we can resolve


def _is_question(text: str) -> bool:
    t = text.strip()
    if t.endswith("?"):
        return question_after_statement(t) is None  # (a statement with a question after it states something)
    return bool(_QUESTION_START.match(t) and not t.endswith((".", "!")) and len(t.split()) < 14)


def _skipped(text: str) -> bool:
    """A sentence that yields no event: a photo caption, a fragment, a question, a counterfactual.

    Only its entities are read (for 'there' anaphora), so it is parsed for entities only.
    """
    if text.startswith("["):
        return True  # a media tag opens it ("[shares a photo of …]", "[photo] …"): a caption describes the picture
    offer = bool(_FOR_ME.search(text))  # an order for two ("X for me and Y for you?") states the speaker's choice
    return len(text) < 3 or (_is_question(text) and not offer) or bool(F.COUNTERFACTUAL.search(text))


_FOR_ME = re.compile(r"(?i)\bfor me\b")


def _clean_value(value: str, kind: str) -> str:
    v = value.strip().strip("'\"’“”")
    v = re.sub(r"\s+(?:now|too|as well|again|then|though|tbh|lol|haha|anyway|instead)$", "", v, flags=re.I)
    v = re.sub(r"^(?:the|a|an)\s+(?=[a-z])", "", v) if kind in ("thing",) else v
    # a name never ends in a clitic: "my wife Bethan's taken up swimming" (has) names Bethan
    v = re.sub(r"(?<=\w)['’]s$", "", v) if kind == "name" else v
    return v.strip(" ,.;:!?-–—")


_NOT_A_PLACE = frozenset(
    "I We You He She They It The A An My Our This That There Here Monday Tuesday Wednesday Thursday Friday Saturday "
    "Sunday January February March April May June July August September October November December Christmas Easter "
    "Spring Summer Autumn Winter Next Last Mum Mom Dad".split()
)


@dataclass
class _Context:
    """What earlier sentences of the session said, for anaphora ('there', 'her name is')."""

    last_place: tuple[int, str] | None = None
    prev_message: MessageIn | None = None
    last_event_noun: str | None = None
    msg_retracted: list[str] = field(default_factory=list)
    last_species: dict[str, str] = field(default_factory=dict)
    recent: list[EventOut] = field(default_factory=list)


# -- the extractor -----------------------------------------------------------------------


class RuleExtractor:
    """Deterministic event distillation over one session at a time."""

    name = "rules"

    def __init__(self, participants: Sequence[str]) -> None:
        from tracecli.graph.nlp import shared_docs

        self.participants = list(participants)
        self._prev_message: MessageIn | None = None  # the message before the one being read (for replies)
        self._earlier_sents: list[Any] = []  # the sentences of the message being read before the current one
        self.docs = shared_docs()  # each distinct sentence parsed once per process (compile-wiki reuses them)

    def _other(self, speaker: str) -> str | None:
        others = [p for p in self.participants if p != speaker]
        return others[0] if len(others) == 1 else None

    def prefetch(self, sessions: Sequence[Sequence[MessageIn]]) -> None:
        """Parse the sentences of several sessions in one batch, so that `extract_session` finds them parsed.

        spaCy works through a few hundred sentences at a time faster than through one session's few dozen.
        The cache must hold them all: keep the batch well under `DocCache.maxsize` sentences.
        """
        texts = [t for messages in sessions for m in messages for t in split_sentences(m.text)]
        self.docs.parse(texts, [_skipped(t.strip()) for t in texts])

    def extract_session(self, messages: Sequence[MessageIn], history: Sequence[EventOut] = ()) -> list[EventOut]:
        """Events of one session; `history` (earlier faceted events) resolves 'forget Oslo'-style revisions."""
        split = [split_sentences(m.text) for m in messages]
        texts = [t for sents in split for t in sents]
        flat = self.docs.parse(texts, [_skipped(t.strip()) for t in texts])
        docs, pos = [], 0
        for sents in split:
            docs.append(flat[pos : pos + len(sents)])
            pos += len(sents)
        ctx = _Context()
        # what a sentence may refer back to: history, this session's events, this message's so far (grown in place)
        known: list[EventOut] = list(history)
        events: list[EventOut] = []
        prev_msg_events: list[EventOut] = []
        for msg, doc in zip(messages, docs):
            self._prev_message = ctx.prev_message
            base = parse_iso(msg.timestamp) if msg.timestamp else None
            msg_events: list[EventOut] = []
            sents = [d[:] for d in doc]
            ctx.msg_retracted = []
            msg_start = len(known)
            for s_idx, sent in enumerate(sents):
                self._earlier_sents = sents[:s_idx]
                around = (sents[s_idx - 1].text if s_idx else "", " ".join(x.text for x in sents[s_idx + 1 :]))
                found = self._sentence(msg, sent, s_idx, base, ctx, known, around)
                msg_events.extend(found)
                known.extend(found)
            ctx.prev_message = msg
            msg_events = _dedupe(msg_events)
            del known[msg_start:]
            known.extend(msg_events)
            # Cross-message causal cue: "So I took up swimming" after the cause.
            first = sents[0] if sents else None
            if first is not None and _CROSS_CAUSE.match(first.text.strip()) and prev_msg_events and msg_events:
                cause = prev_msg_events[-1]
                if cause.subject == msg_events[0].subject:
                    msg_events[0].causal.append(("causes", cause.id, first.text.split()[0].lower()))
            for ev in msg_events:
                ctx.recent.append(ev)
            events.extend(msg_events)
            if msg_events:
                prev_msg_events = msg_events
        return events

    # one sentence → zero or more events
    def _sentence(self, msg: MessageIn, sent: Any, s_idx: int, base: dt.datetime | None, ctx: _Context, known: list[EventOut],
                  around: tuple[str, str] = ("", "")) -> list[EventOut]:
        text = sent.text.strip()
        speaker = msg.speaker
        other = self._other(speaker)
        for ent in sent.ents:
            if ent.label_ in ("GPE", "LOC", "FAC"):
                ctx.last_place = (msg.seq, ent.text)
        low = text.lower()
        if _ANY_SPECIES.search(low):
            for rx, species in _SPECIES_WORDS:
                if rx.search(low):
                    ctx.last_species[speaker] = species
        if _skipped(text):
            return []
        asked = question_after_statement(text)
        stated = sent
        if asked is not None:
            # "… thinking Lisbon in May. you in?": the statement is the event, not the question after it
            from tracecli.graph.frames import asked_part

            text = text[:asked].rstrip()
            stated = sent[: asked_part(sent) - sent.start]
        dates = find_dates(text, base, future=bool(_PLAN.search(text)))
        out: list[EventOut] = []
        facet_hits = self._facets(msg, sent, text, ctx, known, other, around)
        description = third_person(stated, speaker, other)
        for hit in facet_hits:
            out.append(self._event(msg, s_idx, text, description, dates, **hit))
        if not out and self._informative(sent, text):
            subject = other if other and _addressed(sent, text) else speaker
            out.append(self._event(msg, s_idx, text, description, dates, subject=subject, facet=None, value=None,
                                   kind="thing", confidence=0.6, event_type=None, negated=False))
        out = self._with_frames(msg, sent, s_idx, text, description, dates, out, other)
        # Causal cues inside the sentence: split into cause and effect events.
        for (regex, label, cue), m in zip(_CAUSE_CUES, _scan(text).causes):
            if not m or not out:
                continue
            cause_text, effect_text = m.group("cause").strip(), m.group("effect").strip()
            if len(cause_text.split()) < 2 or len(effect_text.split()) < 2:
                continue
            host = out[0]
            part = self._event(msg, s_idx, cause_text, third_person(self.docs.parse([cause_text])[0][:], speaker, other), dates,
                               subject=host.subject, facet=None, value=None, kind="thing", confidence=0.6,
                               event_type=None, negated=False, suffix="cause")
            if cue.startswith("stopped"):
                part.type = "action"
            host.causal.append((label, part.id, cue))
            out.insert(0, part)
            break
        return out

    def _with_frames(self, msg: MessageIn, sent: Any, s_idx: int, text: str, description: str,
                     dates: list[DateMention], out: list[EventOut], other: str | None) -> list[EventOut]:
        """Attach the sentence's open frames and revision constructions to its events (one event per frame)."""
        from tracecli.graph.frames import attach_frames

        question = None
        prev = self._prev_message
        if s_idx == 0 and prev is not None and prev.speaker != msg.speaker and prev.text.rstrip().endswith("?"):
            asked = split_sentences(prev.text)[-1]
            question = self.docs.parse([asked])[0][:]
        return attach_frames(sent, msg.speaker, other, self.participants, out,
                             lambda subject, value, negated, n: self._event(
                                 msg, s_idx, text, description, dates, subject=subject, facet=None, value=value,
                                 kind="thing", confidence=0.6, event_type=None, negated=negated, suffix=f"frame{n}"),
                             question, self._earlier_sents)

    def _informative(self, sent: Any, text: str) -> bool:
        """Does the sentence state something a question could ask about? Small talk does not; a statement by a
        person with a content verb does ("you should mention moving"), and so does one holding a noun, name or
        number, even in passing ("locker 12 jammed again", "a size 9 in trainers")."""
        if _SMALLTALK.match(text) and len(text.split()) < 8:
            return False
        words = content_words(text)
        if not words:
            return False
        has_subject = any(t.dep_ in ("nsubj", "nsubjpass") and (t.lower_ in ("i", "we", "you") or t.ent_type_ == "PERSON" or t.pos_ == "PROPN") for t in sent)
        content_verb = any(t.pos_ == "VERB" and (t.lemma_.lower() not in _WEAK_VERBS or t.text.lower() not in _WEAK_VERBS)
                           for t in sent)
        if has_subject and len(words) >= 3 and (content_verb or len(words) >= 5):
            return True
        if not any(t.pos_ in ("NOUN", "PROPN", "NUM") for t in sent):
            return False
        return len(words) >= 3 or any(t.pos_ in ("PROPN", "NUM") or t.ent_type_ for t in sent)

    def _facets(self, msg: MessageIn, sent: Any, text: str, ctx: _Context, known: list[EventOut], other: str | None,
                around: tuple[str, str] = ("", "")) -> list[dict[str, Any]]:
        speaker = msg.speaker
        hits: list[dict[str, Any]] = []
        taken: set[tuple[str, bool]] = set()
        ents = {e.text: e.label_ for e in sent.ents}
        # a question the parser did not split off ("could you do the school run? the Honda Jazz is in for its MOT")
        # does not make what follows it about the person asked: the statement after the last question mark decides
        stated = text.rsplit("?", 1)[-1] if "?" in text.rstrip("?") else text
        about_other = other is not None and bool(re.search(r"\b(you|your)\b", stated, re.I)) \
            and not re.search(r"\b(i|my|we|our|me)\b", stated, re.I)
        if about_other and _main_subject(sent) is not None and not _addressed(sent, text):
            about_other = False  # "date is 8 June, so you better keep it free": the main clause is not about the listener
        default_subject = other if about_other else speaker
        third_party = _third_party_subject(sent, self.participants)

        def add(subject: str, facet: str, value: str, kind: str, confidence: float, event_type: str | None, negated: bool) -> None:
            if kind in ("place", "org", "name") and _sentence_initial_noun(sent, value):
                return  # "Work has been mad": a common noun capitalised only because it opens the sentence
            if negated:
                # "I quit my job at Acme Bank": the retraction wins over a positive reading of the same value
                same = [h for h in hits if h["facet"] == facet and not h["negated"]
                        and F.normalise_value(h["value"]) == F.normalise_value(value)]
                for h in same:
                    hits.remove(h)
                if same:
                    taken.discard((facet, False))
            if (facet, negated) in taken or (facet, False) in taken and negated:
                return
            if not negated and (facet, True) in taken:
                # "no longer X ... Y instead": keep both; the positive one carries the revision
                confidence = max(confidence, 0.9)
            taken.add((facet, negated))
            hits.append(dict(subject=subject, facet=facet, value=value, kind=kind, confidence=confidence,
                             event_type=event_type, negated=negated))

        # 2. facet patterns
        scan = _scan(text)
        for rule, matches in scan.rules:
            for m in matches:
                facet = rule.facet(m) if callable(rule.facet) else rule.facet
                if rule.subject_from == "subj":
                    subject = _subject_of(m.groupdict().get("subj"), speaker, other, self.participants)
                else:
                    subject = default_subject
                    if third_party and not facet.startswith(("family:", "pet_name:", "partner", "favourite:")):
                        continue
                    if facet == "trip_destination" and not re.search(r"\b(i|i[’']m|i[’']ll|we|we[’']re|we[’']ll|my|our|booked)\b", text, re.I):
                        continue
                if subject is None:
                    continue
                if facet == "employer" and re.search(r"(?i)\b(club|league|society|choir|team|gym|group|class)\b", m.groupdict().get("value") or ""):
                    facet = "club"
                if facet == "date:?":
                    facet = _latest_date_facet(known, subject)
                    if facet is None:
                        continue
                if facet == "pet_name:?":
                    species = ctx.last_species.get(speaker) or _latest_pet_species(known, subject)
                    facet = F.pet_facet(species) if species else "pet_name:pet"
                value = m.groupdict().get("value") or ""
                kind = rule.kind
                if kind == "there":
                    if ctx.last_place is None or msg.seq - ctx.last_place[0] > 4:
                        continue
                    value, kind = ctx.last_place[1], "place"
                elif kind == "prev":
                    value = _first_capitalised(around[0])
                    kind = "thing"
                elif kind == "date":
                    base = parse_iso(msg.timestamp) if msg.timestamp else None
                    tail = m.group("tail")
                    ahead = rule.event_type == "plan"  # a plan names a date ahead, not one past
                    mentions = (find_dates(tail, base, future=ahead) or find_dates("in " + tail, base, future=ahead)
                                or find_dates(tail + " " + around[1], base, future=ahead))
                    if not mentions:
                        continue
                    dm = mentions[0]
                    value = format_date(dm.date, dm.granularity if dm.granularity != "week" else "day")
                value = _clean_value(value, kind)
                if facet == "sport":
                    value = _SPORT_PEOPLE.get(value.lower(), value)
                if not value or not self._valid_value(value, kind, ents, facet):
                    continue
                vpos = m.start("value") if m.groupdict().get("value") else m.start()
                negated = rule.negated or self._negated_before(text, vpos)
                add(subject, facet, value, kind, rule.confidence, rule.event_type, negated)
        # 1. explicit substitutions resolve the facet through the old value
        for matches in scan.substitutions:
            for m in matches:
                old_norm = F.normalise_value(m.group("old"))
                hits[:] = [h for h in hits if h["negated"] or F.normalise_value(h["value"]) != old_norm]
                taken.clear()
                taken.update((h["facet"], h["negated"]) for h in hits)
                prior = _find_by_value(known, default_subject, m.group("old"))
                if prior is None or not prior.facet:
                    # old value never recorded: take the facet from the new value's kind and the message's words
                    new_v = _clean_value(m.group("new"), "place")
                    old_v = _clean_value(m.group("old"), "place")
                    typed = bool(new_v) and (new_v[:1].isupper() or _lexicon_facet(new_v) is not None)
                    facet = _facet_for_value(new_v, msg.text, ents, known, default_subject, ctx) if typed else None
                    if facet and old_v and F.normalise_value(old_v) != F.normalise_value(new_v):
                        add(default_subject, facet, old_v, F.facet_kind(facet), 0.8, "state_change", True)
                        taken.discard((facet, False))
                        add(default_subject, facet, _value_for_facet(new_v, facet) or new_v, F.facet_kind(facet), 0.9, "state_change", False)
                    continue
                value = _value_for_facet(m.group("new"), prior.facet)
                if not value or F.normalise_value(value) == prior.value_norm:
                    continue
                add(default_subject, prior.facet, value, F.facet_kind(prior.facet), 0.95, "state_change", False)
        # 2b. generic typed slots: a facet cue plus a value of the facet's kind
        if not third_party:
            from tracecli.graph.slots import slot_hits

            prev = ctx.prev_message
            prev_q = prev.text if prev is not None and prev.speaker != speaker and "?" in prev.text else ""
            for h in slot_hits(sent, text, subject=default_subject, speaker=speaker, other=other,
                               participants=self.participants, base=parse_iso(msg.timestamp) if msg.timestamp else None,
                               prev_text=around[0], prev_other_question=prev_q, last_event_noun=ctx.last_event_noun,
                               known=known, prev_text_other=prev.text if prev is not None and prev.speaker != speaker else ""):
                value = _clean_value(h["value"], h["kind"])
                if not value or any(x["facet"] == h["facet"] and x["subject"] == h["subject"] and not x["negated"] for x in hits):
                    continue
                if not h["negated"] and any(rx.search(text) and F.normalise_value(value) in F.normalise_value(rx.search(text).group("old")) for rx in RETRACTIONS):
                    continue
                if h["kind"] in ("place", "org", "name") and not self._valid_value(value, h["kind"], ents, h["facet"]):
                    continue
                add(h["subject"], h["facet"], value, h["kind"], h["confidence"], h["event_type"], h["negated"])
        for m in re.finditer(r"(?i:\b(?:switched|switching|changed|moved on|gone over|converted)\s+(?:over\s+)?to\s+(?:an?\s+|the\s+)?)(?P<new>[a-z][\w\-]*(?:\s+[a-z][\w\-]*){0,2})(?=\s*[.,!?;]|\s+(?:now|instead|because|since|and|this)\b|\s*$)", text):
            facet = _lexicon_facet(m.group("new")) or ("study" if _latest_facet(known, default_subject, "study") else None)
            if facet and not any(h["facet"] == facet and not h["negated"] for h in hits):
                add(default_subject, facet, _value_for_facet(m.group("new"), facet) or m.group("new"), F.facet_kind(facet), 0.85, "state_change", False)
        # 3. a new value with a revision cue but no old value: "switched to Greenleaf", "doing Lisbon instead"
        for matches in scan.new_values:
            for m in matches:
                value = _clean_value(m.group("new"), "place")
                if not value or not value[0].isupper() or value.split()[0] in _NOT_A_PLACE:
                    continue
                facet = _facet_for_value(value, msg.text, ents, known, default_subject, ctx)
                if facet is None or any(h["facet"] == facet and not h["negated"] for h in hits):
                    continue
                add(default_subject, facet, value, F.facet_kind(facet), 0.85, "state_change", False)
        # 4. retractions of a known value with no new value ("I'm no longer vegetarian")
        for matches in scan.retractions:
            for m in matches:
                prior = _find_by_value(known, default_subject, m.group("old"))
                if prior is None or not prior.facet or any(h["facet"] == prior.facet for h in hits if not h["negated"]):
                    continue
                add(default_subject, prior.facet, prior.value or "", F.facet_kind(prior.facet), 0.85, "state_change", True)
        ctx.msg_retracted.extend(h["facet"] for h in hits if h["negated"])
        em = re.search(r"(?i)\b(?:(spring|summer|autumn|fall|winter|christmas|easter|school|work|office|leaving|engagement|farewell|end-of-year|final|first)\s+)?(" + _EVENT_ALT + r"|driving test|viva|defence|tickets)\b", text)
        if em:
            ctx.last_event_noun = " ".join(x for x in em.groups() if x).lower()
        # 5. a short answer to the other person's question about a facet ("Pottery, bouldering and baking, mostly.")
        prev = ctx.prev_message
        if not hits and prev is not None and prev.speaker != speaker and "?" in prev.text:
            for facet, regex in ANSWER_SHAPES:
                if re.search(F.FACETS[facet].question, prev.text, re.I) or (facet == "hobbies" and re.search(r"\b(weekends?|for fun|free time|spare time|filling)\b", prev.text, re.I)):
                    m = regex.match(text)
                    if m:
                        value = _clean_value(m.group("value"), "list")
                        if F.facet_kind(facet) == "place":
                            from tracecli.graph.gazetteer import is_place

                            if not is_place(value):
                                continue
                        add(speaker, facet, value, F.facet_kind(facet), 0.7, "preference", False)
                        break
        return hits

    @staticmethod
    def _negated_before(text: str, pos: int) -> bool:
        window = text[max(0, pos - 25):pos]
        return bool(re.search(r"\b(not|never|no longer|don[’']t|didn[’']t|isn[’']t|aren[’']t|won[’']t|wasn[’']t)\b", window, re.I)) and not re.search(r"\bnot only\b", window, re.I)

    def _valid_value(self, value: str, kind: str, ents: dict[str, str], facet: str) -> bool:
        first = value.split()[0]
        if value.lower() in STOPWORDS:
            return False  # "my laptop crashed AGAIN": a function word in capitals for emphasis names nothing
        if kind in ("place", "org", "name"):
            if first in _NOT_A_PLACE:
                return False
            if not first[:1].isupper() and not (kind == "org" and len(value.split()) >= 2):
                return False
            label = next((lab for txt, lab in ents.items() if value in txt or txt in value), None)
            if label in ("DATE", "TIME", "CARDINAL", "ORDINAL", "MONEY", "QUANTITY", "PERCENT"):
                return False
            if kind in ("place", "org") and value in self.participants:
                return False
            if kind == "org" and label == "PERSON" and len(value.split()) == 1 and not facet == "employer":
                return False
        if kind == "venue" and (len(value) < 3 or find_dates(value, None)):
            return False
        if kind == "thing" and len(value) < 2:
            return False
        if kind == "list" and value.count(",") + value.count(" and ") + value.count("&") < 1:
            return False
        return True

    def _event(self, msg: MessageIn, s_idx: int, text: str, description: str, dates: list[DateMention], *,
               subject: str, facet: str | None, value: str | None, kind: str, confidence: float,
               event_type: str | None, negated: bool, suffix: str = "") -> EventOut:
        cue_m = F.STRONG_CUES.search(text) if facet else None
        etype = event_type or _event_type(text)
        if facet and not event_type:
            spec = F.FACETS.get(facet)
            etype = spec.event_type if spec else etype
        if facet and _PLAN.search(text) and etype != "state_change":
            etype = "plan"
        dm = dates[0] if dates else None
        value_norm = F.normalise_value(value) if value else None
        if facet == "hobbies" and value:
            value_norm = ",".join(sorted(F.normalise_value(v) for v in re.split(r",\s*(?:and\s+)?|\s+(?:and|&)\s+", value) if v.strip()))
        if negated and value_norm is not None:
            value_norm = f"not:{value_norm}"
        if facet and value:
            if negated:
                description = f"{subject} no longer: {F.facet_label(facet)} {value} — \"{text}\""
            else:
                description = f"{subject} {F.facet_label(facet)} {value} — \"{text}\""
        participants = sorted({subject, *[p for p in self.participants if p != subject and re.search(rf"\b{re.escape(p)}\b", text)]})
        eid = "ev_" + short_hash(msg.message_id, s_idx, facet or "", value_norm or "", suffix)
        return EventOut(
            id=eid, type=etype, subject=subject, participants=participants, description=description, speaker=msg.speaker,
            time_anchor=msg.timestamp, event_time=dm.date.isoformat() if dm else None,
            event_time_granularity=dm.granularity if dm else None, seq=msg.seq, sentence_idx=s_idx,
            source_note_ids=[msg.note_id], source_message_ids=[msg.message_id], quote=text,
            facet=facet, value=value, value_norm=value_norm, negated=negated,
            cue=cue_m.group(0).lower() if cue_m else None, confidence=confidence,
        )


_SENT_SPLIT = re.compile(r"(?<=[.!?…])[\"'”’)]*\s+(?=[\"'“‘(]?[A-Z0-9])|\n+")


_ABBREV = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Prof|Sr|Jr|vs|etc|e\.g|i\.e|approx|no)\.|\b[A-Z]\.)$")


def split_sentences(text: str) -> list[str]:
    """Sentences of a chat message: split after . ! ? before a capital or digit, and at line breaks."""
    parts: list[str] = []
    for p in _SENT_SPLIT.split(text):
        p = p.strip() if p else ""
        if not p:
            continue
        if parts and _ABBREV.search(parts[-1]):
            parts[-1] = f"{parts[-1]} {p}"
        else:
            parts.append(p)
    return parts or [text.strip() or text]


def third_person_text(text: str, speaker: str, other: str | None) -> str:
    """Third-person rewrite of a plain string (parses it first)."""
    from tracecli.graph.nlp import get_nlp

    doc = get_nlp()(text)
    return third_person(doc[:], speaker, other)


def _event_type(text: str) -> str:
    if _PLAN.search(text):
        return "plan"
    if _PREF.search(text):
        return "preference"
    if _CHANGE.search(text):
        return "state_change"
    return "action"


def _find_by_value(known: Sequence[EventOut], subject: str, old: str) -> EventOut | None:
    """The subject's latest faceted event whose value matches `old`."""
    target = F.normalise_value(old)
    if not target:
        return None
    ordered = sorted(known, key=lambda e: (e.facet != "trip_destination", e.seq, e.sentence_idx))
    for ev in reversed(ordered):
        if ev.subject != subject or not ev.facet or not ev.value_norm or ev.negated:
            continue
        vn = ev.value_norm
        tw, vw = set(target.replace(",", " ").split()), set(vn.replace(",", " ").split())
        if vn == target or (len(target) >= 3 and tw and vw and (tw <= vw or vw <= tw)):
            return ev
    return None


def _latest_pet_species(known: Sequence[EventOut], subject: str) -> str | None:
    for ev in reversed(known):
        if ev.subject == subject and ev.facet and ev.facet.startswith("pet_name:") and not ev.facet.endswith(":pet"):
            return ev.facet.split(":", 1)[1]
    return None


_PLACE_FACET_CUES = [
    ("trip_destination", re.compile(r"(?i)\b(trip|holiday|vacation|honeymoon|flights?|fly|flying|booked|travel|visit|getaway|doing)\b")),
    ("moving_to", re.compile(r"(?i)\b(mov(?:e|ing)|relocat\w*|settl\w*|transfer\w*|sending (?:me|us)|office)\b")),
    ("residence", re.compile(r"(?i)\b(live|living|flat|apartment|house|place|keys)\b")),
]


_VENUE_WORDS = re.compile(r"\b(Hall|Theat(?:er|re)|Barn|Arms|Centre|Center|Club|Bar|Pub|Hotel|Church|Stadium|Arena|Gardens?|"
                          r"House|Boathouse|Foundry|Works|Rooms?|Studio|Gallery|Museum|Manor|Castle|Chapel|Venue|Lodge|Inn|Farm|Estate)\b")


def _lexicon_facet(value: str) -> str | None:
    """The facet a lexicon word belongs to ('vegan' → diet, 'padel' → sport)."""
    v = value.lower().strip()
    for facet, rx in _LEXICON_FACETS:
        if rx.search(v):
            return facet
    return None


# one pattern per lexicon: it matches where any single word's `\bword\b` would
_LEXICON_FACETS = [
    (facet, re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b"))
    for facet, words in (("diet", tuple(F.DIETS)), ("coffee", F.COFFEES), ("sport", F.SPORTS), ("instrument", F.INSTRUMENTS))
]
_CAR_VALUE = re.compile(r"\b(" + F.CAR_MAKES_RE + r"|" + "|".join(re.escape(m) for m in F.CAR_MODELS) + r")\b")


def _latest_facet(known: Sequence[EventOut], subject: str, prefix: str) -> EventOut | None:
    for ev in reversed(known):
        if ev.subject == subject and ev.facet and ev.facet.startswith(prefix):
            return ev
    return None


def _facet_for_value(value: str, text: str, ents: dict[str, str], known: Sequence[EventOut], subject: str,
                     ctx: _Context) -> str | None:
    """The facet a bare new value belongs to: lexicon, venue words, then kind + the message's cue words."""
    lex = _lexicon_facet(value)
    if lex:
        return lex
    if _CAR_VALUE.search(value):
        return "car"
    if _VENUE_WORDS.search(value) and ctx.last_event_noun:
        return F.venue_facet(ctx.last_event_noun)
    return _facet_for_new_value(known, subject, value, text, ents, ctx.msg_retracted)


def _facet_for_new_value(known: Sequence[EventOut], subject: str, value: str, text: str, ents: dict[str, str],
                         retracted: Sequence[str] = ()) -> str | None:
    """Which of the subject's facets a bare new value revises, from its kind and the sentence's words."""
    for facet in reversed(retracted):
        if F.facet_kind(facet) in ("place", "org", "name"):
            return facet
    from tracecli.graph.gazetteer import is_place

    label = next((lab for t, lab in ents.items() if value in t or t in value), None)
    if is_place(value):
        label = "GPE"
    for ev in reversed(known):  # a facet whose earlier value this message mentions ("The Denver office is closing")
        if ev.subject == subject and ev.facet and ev.value and not ev.negated and F.facet_kind(ev.facet) in ("place", "org") \
                and re.search(rf"\b{re.escape(ev.value)}\b", text) and ev.value != value:
            if (F.facet_kind(ev.facet) == "place") == (label in ("GPE", "LOC", "FAC")):
                return ev.facet
    cue_kinds: list[str] = []
    if label in ("ORG",) or re.search(r"(?i)\b(job|work|company|employer|council|role|notice)\b", text):
        kinds = ["employer"]
    elif label in ("GPE", "LOC", "FAC"):
        cue_kinds = [f for f, cue in _PLACE_FACET_CUES if cue.search(text)]
        kinds = cue_kinds or ["moving_to", "residence", "trip_destination"]
    else:
        return None
    best: tuple[int, str] | None = None
    for ev in known:
        if ev.subject == subject and ev.facet in kinds:
            rank = (ev.seq, ev.facet)
            if best is None or rank[0] >= best[0]:
                best = (ev.seq, ev.facet)
    if best is not None:
        return best[1]
    return kinds[0] if label == "ORG" or cue_kinds else None


_LEXICON_VALUES = {facet: re.compile(r"(?i)\b(" + _alt(words) + r")\b") for facet, words in
                   (("coffee", F.COFFEES), ("sport", F.SPORTS), ("diet", tuple(F.DIETS)), ("instrument", F.INSTRUMENTS))}


def _value_for_facet(raw: str, facet: str) -> str:
    """Trim a captured new value to what the facet holds ('a galão every morning' → 'galão')."""
    if facet in _LEXICON_VALUES:
        m = _LEXICON_VALUES[facet].search(raw)
        return m.group(1) if m else ""
    value = re.split(r"(?i)\s+(?:every|each|from|at|for|with|because|since|on|in the)\b", raw)[0]
    for dm in find_dates(value, None):  # "Greenleaf Energy last month" → "Greenleaf Energy"
        value = value.replace(dm.phrase, " ")
    return _clean_value(re.sub(r"\s+", " ", value), F.facet_kind(facet))


_SPORT_PEOPLE = {"swimmer": "swimming", "runner": "running", "cyclist": "cycling", "climber": "climbing",
                 "boulderer": "bouldering", "surfer": "surfing", "skier": "skiing", "golfer": "golf", "rower": "rowing",
                 "boxer": "boxing", "skater": "skating", "dancer": "dancing"}

def _latest_date_facet(known: Sequence[EventOut], subject: str) -> str | None:
    """The subject's most recently mentioned date facet ('we're now aiming for September')."""
    for ev in reversed(known):
        if ev.subject == subject and ev.facet and ev.facet.startswith("date:"):
            return ev.facet
    return None


def _dedupe(events: list[EventOut]) -> list[EventOut]:
    """One event per (subject, facet, value) within a message; the first sentence that states it wins."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for ev in events:
        if ev.facet:
            key = (ev.subject, ev.facet, ev.value_norm or "")
            if key in seen:
                continue
            seen.add(key)
        out.append(ev)
    return out


_OTHER_PEOPLE = frozenset(F.RELATIVES) | {"friend", "girlfriend", "boyfriend", "partner", "husband", "wife", "colleague",
                                          "neighbour", "neighbor", "cousin", "flatmate", "kid", "kids", "son", "daughter"}


def _third_party_subject(sent: Any, participants: Sequence[str]) -> bool:
    """True when the sentence is about someone other than the speaker ('Clara's flying out', 'My brother moved to Bristol')."""
    from tracecli.graph.gazetteer import is_place

    first_person = bool(re.search(r"\b(i|i[’']m|i[’']ve|i[’']ll|i[’']d|me|we|we[’']re|we[’']ve|us)\b", sent.text, re.I))
    m = re.match(r"^(?:So |And |Also |But )?([A-Z][a-z]+)(?:[’']s| is| was| has| will|[’']ll)\s+\w+ing\b", sent.text.strip())
    if m and not first_person and m.group(1) not in participants and m.group(1) not in (
            "It", "That", "This", "There", "He", "She", "They", "Everyone") and not is_place(m.group(1)):
        return True
    for tok in sent:
        if tok.dep_ in ("nsubj", "nsubjpass") and tok.head.dep_ == "ROOT":
            low = tok.lower_
            if low in ("i", "we", "you"):
                return False
            if tok.pos_ == "PROPN" and tok.text not in participants and tok.ent_type_ == "PERSON" and not is_place(tok.text):
                return not first_person or any(c.lower_ in ("my", "our") for c in tok.children)
            if low in _OTHER_PEOPLE and any(c.lower_ in ("my", "our", "his", "her", "their") for c in tok.children):
                return True
            if low in ("he", "she", "they") and not first_person:
                return True
            return False
    return False


def _sentence_initial_noun(sent: Any, value: str) -> bool:
    """Is `value` one word that opens the sentence and that the parser reads as a common noun?"""
    words = value.split()
    if len(words) != 1:
        return False
    first = next((t for t in sent if not t.is_punct and not t.is_space), None)
    return first is not None and first.text == words[0] and first.pos_ == "NOUN"


def _first_capitalised(text: str) -> str:
    """The first capitalised word run that does not start the sentence trivially ('Also Khruangbin announced' → 'Khruangbin')."""
    for m in re.finditer(r"[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)*", text):
        word = m.group(0)
        if word.split()[0] in _NOT_A_PLACE or word.split()[0] in ("Also", "So", "And", "But", "Oh", "Still", "Just", "Anyway"):
            rest = word.split()[1:]
            if rest:
                return " ".join(rest)
            continue
        return word
    return ""
