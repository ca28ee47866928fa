"""The learned choice of the sentence an answer is read from, among the answer step's best candidates.

The rule answer step (`tracecli.query.answer`) proposes one sentence; on conversations it has not seen it often
proposes the right fact's older statement, or a sentence on the topic that states nothing, while the sentence that
answers is among the next few it ranked. This module scores each of the best-ranked sentences (and the proposed
one) with a conditional-logit model over general features — its rank and score, who said it, whether it is the
proposal, how its time stands against the other candidates' (the latest of the same person's near-equals, later
than the proposal), whether it asks, muses or negates, whether it holds a value of the asked type, presents
something as new, shares the question's words, and how close its sentence is to the proposal's — each feature
weighted once for all questions and once more for the kind asked (a question that says "now", another about the
present, one about a date, one about what came before). The sentence with the highest score answers; its softmax
probability is the answer's confidence. An answer that is the valid end of a revision chain (support `chain`) is
never replaced: the graph's explicit revisions outrank any choice among sentences.

The weights (`choose_weights.json`) are fitted by `benchmarks/train_chooser.py` on the dev sets only (the sets
whose failures were read); nothing in this module names a word, phrase or value from any set. Quality is quoted on
sets written after the weights were fitted (README, Quality).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from tracecli.query.paths import EventNode, Graph
from tracecli.query.frame_answer import _key_words, _lemmas, asked_noun
from tracecli.query.shape import QueryShape, asks_before
from tracecli.query.span import parsed
from tracecli.text import content_words

#: how many of the best-ranked sentences are candidates (the proposal joins them if it is not among them)
WINDOW = 10
#: a sentence whose score is within this of the best is a near-equal of it (for "the latest near-equal")
NEAR = 0.1
#: a sentence at least this close to the proposal's is on its subject matter
ON_TOPIC = 0.45

WEIGHTS_FILE = Path(__file__).with_name("choose_weights.json")

@dataclass
class Row:
    """What the features are read from: one candidate sentence as the answer step saw it."""

    event: EventNode
    rank: int
    score: float
    person: bool  # said by a person the question names
    subject: bool  # about a person the question names
    proposed: bool  # the rule answer step's sentence
    same_message: bool  # in the proposed sentence's message
    later: bool  # said after the proposal
    earlier: bool  # said before the proposal
    valid: bool  # not superseded (now or at the asked date)
    question: bool
    hedged: bool
    muses: bool
    typed: bool  # holds a value of the type the question word asks for
    novel: bool  # presents something as new
    overlap: float  # share of the question's content words it has
    shared: int  # how many of them
    words: int
    negated: bool
    frame: bool
    facet: bool
    near_proposal: float  # sentence cosine to the proposal's
    holds_value: bool
    asking: bool
    key_share: float = 0.0  # share of its frame's key words the question says ("move" of "move to")
    asked_noun: bool = False  # holds the noun a what/which question asks for ("car" in "What car …?")


@dataclass
class Flags:
    """What kind of state the question asks for."""

    now: bool
    as_of: bool
    before: bool
    support: str  # what the proposal rests on: chain | frame | sentence
    says_now: bool = False  # the question itself says it wants the state now ("… these days?")


def replaceable(support: str) -> bool:
    """May the learned choice replace an answer of this support? Not the valid end of a revision chain."""
    return support != "chain"


def flags_of(shape: QueryShape, question: str, as_of: str | None, support: str) -> Flags:
    before = asks_before(question)
    return Flags(now=shape.wants_current and not before and as_of is None, as_of=as_of is not None, before=before,
                 support=support, says_now=shape.says_now)


def candidate_rows(graph: Graph, shape: QueryShape, ranked: Sequence[tuple[EventNode, float]],
                   relevance: Mapping[str, float], proposal: EventNode, question: str, as_of: str | None,
                   between: Callable[[EventNode, Sequence[EventNode]], Sequence[float]] | None) -> list[Row]:
    """The best `WINDOW` ranked sentences known by `as_of`, and the proposal, as feature rows."""
    from tracecli.query import answer as A

    people = A.named_people(graph, shape)
    labels = A.asked_labels(shape, question)
    picked = [(ev, sc, i) for i, (ev, sc) in enumerate(ranked[:WINDOW])
              if as_of is None or not ev.time_anchor or ev.time_anchor <= as_of]
    if all(ev.id != proposal.id for ev, _, _ in picked):
        picked.append((proposal, relevance.get(proposal.id, 0.0), WINDOW))
    asked = set(content_words(question))
    lemmas = _lemmas(question)
    noun = asked_noun(question)
    near = list(between(proposal, [ev for ev, _, _ in picked])) if between is not None else [0.0] * len(picked)
    rows = []
    for (ev, score, rank), close in zip(picked, near):
        mine = set(content_words(ev.quote))
        rows.append(Row(
            event=ev, rank=rank, score=float(score), person=ev.speaker in people, subject=ev.subject in people,
            proposed=ev.id == proposal.id, same_message=ev.seq == proposal.seq, later=ev.seq > proposal.seq,
            earlier=ev.seq < proposal.seq, valid=ev.validity_at(as_of) > 0, question=ev.quote.rstrip().endswith("?"),
            hedged=A._hedged(ev), muses=A._muses(ev), typed=bool(labels) and A._holds(ev.quote, labels, people),
            novel=A._novel(ev), overlap=len(asked & mine) / max(1, len(asked)), shared=len(asked & mine),
            words=len(ev.quote.split()), negated=ev.negated, frame=ev.frame is not None, facet=ev.facet is not None,
            near_proposal=float(close), holds_value=A._holds_value(ev.quote), asking=A._is_asking(ev),
            key_share=_key_share(ev, lemmas),
            asked_noun=noun is not None and any((t.lemma_ or t.text).lower() == noun for t in parsed(ev.quote))))
    return rows


def _key_share(ev: EventNode, lemmas: set[str]) -> float:
    words = _key_words(ev.frame) if ev.frame else set()
    return len(words & lemmas) / len(words) if words else 0.0


def _latest(row: Row, among: Sequence[Row]) -> bool:
    return all(r.event.seq <= row.event.seq for r in among)


def features(rows: Sequence[Row], flags: Flags) -> np.ndarray:
    """One feature vector per row (`FEATURE_NAMES`); time features are read against the other candidates."""
    top = rows[0].score if rows else 0.0
    first, last = min(r.event.seq for r in rows), max(r.event.seq for r in rows)
    kinds = (flags.now and flags.says_now, flags.now and not flags.says_now, flags.as_of, flags.before)
    out = []
    for r in rows:
        same = [x for x in rows if x.event.speaker == r.event.speaker]
        later_same = sum(1 for x in same if x.event.seq > r.event.seq)
        near = [x for x in same if x.score >= top - NEAR]
        latest_near = r.score >= top - NEAR and _latest(r, near)
        when = (r.event.seq - first) / max(1, last - first)
        latest_typed = r.typed and _latest(r, [x for x in same if x.typed])
        latest_on_topic = r.near_proposal >= ON_TOPIC and _latest(r, [x for x in same if x.near_proposal >= ON_TOPIC])
        own_rank = sum(1 for x in same if x.score > r.score)
        base = [1.0 / (1 + r.rank), r.score, top - r.score, r.person, r.subject, r.proposed, r.same_message, r.later,
                r.valid, r.question, r.hedged, r.muses, r.typed, r.novel, r.overlap, min(r.shared, 3) / 3,
                min(r.words, 40) / 40, r.negated, r.frame, r.facet, r.near_proposal, r.holds_value, r.asking,
                later_same == 0, latest_near, when, min(later_same, 4) / 4, r.key_share, r.asked_noun]
        support = [r.proposed and flags.support == s for s in ("chain", "frame", "sentence")]
        extra = [latest_typed, latest_on_topic, 1.0 / (1 + own_rank), r.earlier]
        own = [float(x) for x in base + extra]
        # every feature once for all questions and once more for the kind of question asked (a model per kind
        # that shares what holds for all)
        vec = own + [a * k for k in kinds for a in own] + [float(x) for x in support]
        out.append(vec)
    return np.asarray(out, dtype=np.float64)


_BASE = ["inverse rank", "score", "gap to best", "said by the person", "about the person", "proposed",
         "in the proposal's message", "later than the proposal", "valid", "asks", "hedged", "muses", "typed", "novel",
         "question overlap", "shared words", "length", "negated", "has a frame", "has a facet", "close to the proposal",
         "names a value", "asks the other", "latest of its speaker's", "latest near-equal", "time in window",
         "later of its speaker's", "frame key asked", "asked noun"]
_EXTRA = ["latest typed", "latest on topic", "own rank", "earlier than the proposal"]
_KINDS = ("said now", "now", "as of", "before")
FEATURE_NAMES = (_BASE + _EXTRA + [f"{k}: {a}" for k in _KINDS for a in _BASE + _EXTRA]
                 + [f"proposed, rests on {s}" for s in ("chain", "frame", "sentence")])


@lru_cache(maxsize=1)
def weights() -> np.ndarray | None:
    """The fitted weights, or None when the file is missing, malformed or does not fit `FEATURE_NAMES` (the rule
    answer step then stands alone)."""
    try:
        data = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("features") != FEATURE_NAMES:
            return None
        w = np.asarray(data["weights"], dtype=np.float64)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return w if w.shape == (len(FEATURE_NAMES),) and np.isfinite(w).all() else None


def probabilities(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    z = x @ w
    z = np.exp(z - z.max())
    return z / z.sum()


def choose_stating(rows: Sequence[Row], flags: Flags, w: np.ndarray | None = None) -> tuple[Row, float] | None:
    """`choose` among the candidates that state something: a sentence musing on an unreal condition ("if I ever
    get a sea kayak I'll need a roof rack") states no state of anyone's, so it is never picked — the rule step's
    proposal neither — while another candidate states (dev, 18 sets: +3 valid, no more stale)."""
    stating = [r for r in rows if not r.muses]
    return choose(stating or rows, flags, w)


def choose(rows: Sequence[Row], flags: Flags, w: np.ndarray | None = None) -> tuple[Row, float] | None:
    """The candidate with the highest probability and that probability; None without rows or weights."""
    w = weights() if w is None else w
    if w is None or not rows:
        return None
    p = probabilities(features(rows, flags), w)
    best = int(np.argmax(p))
    return rows[best], float(p[best])


def fit(groups: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], *, stale_cost: float = 1.0, l2: float = 1e-2,
        iterations: int = 600, rate: float = 0.5) -> np.ndarray:
    """Conditional-logit weights by gradient descent. Each group is (features of its candidates, 1 for those that
    state the gold answer, 1 for those that state a superseded value instead): the loss is −log P(right) − stale_cost ·
    log(1 − P(stale)), so a model that serves an outdated value pays more than one that misses; a group with
    neither teaches nothing and is left out."""
    usable = [(x, y, st) for x, y, st in groups if y.any() or st.any()]
    if not any(y.any() for _, y, _ in usable):
        raise ValueError("no group has a candidate marked right")
    w = np.zeros(usable[0][0].shape[1])
    for _ in range(iterations):
        grad = np.zeros_like(w)
        for x, y, st in usable:
            p = probabilities(x, w)
            g = np.zeros_like(p)
            if y.any():
                hit = p * y
                g += p - hit / hit.sum()
            if stale_cost and st.any():
                bad = float(p @ st)
                g += stale_cost * p * (st - bad) / max(1.0 - bad, 1e-9)
            grad += x.T @ g
        w -= rate * (grad / len(usable) + l2 * w)
    return w


def describe(w: np.ndarray) -> list[tuple[str, float]]:
    """The weights by name, largest first (for the training script's report)."""
    return sorted(zip(FEATURE_NAMES, w.tolist()), key=lambda x: -abs(x[1]))


def as_json(w: np.ndarray, trained_on: Sequence[str], extra: Mapping[str, Any] | None = None) -> str:
    return json.dumps({"features": FEATURE_NAMES, "weights": [round(v, 6) for v in w.tolist()],
                       "trained_on": list(trained_on), **(extra or {})}, indent=1) + "\n"
