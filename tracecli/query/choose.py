"""The learned choice of the sentence an answer is read from, among the answer step's best candidates.

The rule answer step (`tracecli.query.answer`) proposes one sentence; on conversations it has not seen it often
proposes the right fact's older statement, or a sentence on the topic that states nothing, while the sentence that
answers is among the next few it ranked. This module scores each of the best-ranked sentences (and the proposed
one) over general features — its rank and score, who said it, whether it is the
proposal, how its time stands against the other candidates' (the latest of the same person's near-equals, later
than the proposal), whether it asks, muses or negates, whether it holds a value of the asked type, presents
something as new, shares the question's words, how close its sentence is to the proposal's and to the noun phrase the
question asks for — each feature once for all questions and once more for the kind asked (a question that says
"now", another about the present, one about a date, one about what came before). The scorer is a small
gradient-boosted tree model (`Trees`: the probability that a candidate states the answer, and that it states only a
superseded value); the candidate with the highest P(right) − stale_cost · P(stale) answers, and its P(right) is the
answer's confidence. Trees replaced session 11's conditional logit: leave-one-set-out on the 22 dev sets they chose
a right sentence for 1,471 of 2,183 questions against the logit's 1,402, and a stale one for 96 against 110 (trees
can weigh a feature by the values of others; a logit has one weight per feature). An answer that is the valid end of a revision chain (support `chain`) is
never replaced: the graph's explicit revisions outrank any choice among sentences. Two guards keep the rule step's
reading where the model cannot do better (session 15): another sentence of the proposal's own message never replaces
it (the model is fitted on messages: a candidate is right when its message is gold evidence, so it cannot tell one
sentence of a message from another), and a chosen sentence that only says the proposal's answer again (`restates`)
leaves the proposal's span standing.

The model (`choose_weights.json`) is fitted by `benchmarks/train_chooser.py` on the dev sets only (the sets
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

from tracecli.query.answer import Answer, _holds_value
from tracecli.query.paths import EventNode, Graph
from tracecli.query.frame_answer import _asked_phrase, _key_words, _lemmas, asked_noun
from tracecli.query.shape import QueryShape, asks_before
from tracecli.query.span import parsed
from tracecli.text import content_words, whole_words

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
    phrase_sim: float = 0.0  # its sentence's cosine to the asked noun phrase ("glaze" of "What glaze …?"), 0 without one


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


#: "When did …?": the time of a past event, not a state; the model was fitted on questions about what holds
_EVENT_TIME = re.compile(r"(?i)^\W*when\s+did\b")


def fitted_for(question: str) -> bool:
    """Was the model fitted on questions like this one? Not on "When did …?", which asks when an event happened
    (every dev set asks what holds; on LoCoMo dev the trees picked another event for 4 of its 51 "When did"
    questions, each a worse date)."""
    return _EVENT_TIME.search(question) is None


def flags_of(shape: QueryShape, question: str, as_of: str | None, support: str) -> Flags:
    before = asks_before(question)
    return Flags(now=shape.wants_current and not before and as_of is None, as_of=as_of is not None, before=before,
                 support=support, says_now=shape.says_now)


def candidate_rows(graph: Graph, shape: QueryShape, ranked: Sequence[tuple[EventNode, float]],
                   relevance: Mapping[str, float], proposal: EventNode, question: str, as_of: str | None,
                   between: Callable[[EventNode, Sequence[EventNode]], Sequence[float]] | None,
                   phrase_sim: Callable[[str, Sequence[EventNode]], Sequence[float]] | None = None) -> list[Row]:
    """The best `WINDOW` ranked sentences known by `as_of`, and the proposal, as feature rows."""
    from tracecli.query import answer as A

    people = A.named_people(graph, shape)
    unnamed = A.not_the_name(graph, shape, question)
    labels = A.asked_labels(shape, question)
    picked = [(ev, sc, i) for i, (ev, sc) in enumerate(ranked[:WINDOW])
              if as_of is None or not ev.time_anchor or ev.time_anchor <= as_of]
    if all(ev.id != proposal.id for ev, _, _ in picked):
        picked.append((proposal, relevance.get(proposal.id, 0.0), WINDOW))
    asked = set(content_words(question))
    lemmas = _lemmas(question)
    noun = asked_noun(question)
    near = list(between(proposal, [ev for ev, _, _ in picked])) if between is not None else [0.0] * len(picked)
    phrase = _asked_phrase(question, people)
    fits = list(phrase_sim(phrase, [ev for ev, _, _ in picked])) if phrase and phrase_sim is not None \
        else [0.0] * len(picked)
    rows = []
    for (ev, score, rank), close, fit in zip(picked, near, fits):
        mine = set(content_words(ev.quote))
        rows.append(Row(
            event=ev, rank=rank, score=float(score), person=ev.speaker in people, subject=ev.subject in people,
            proposed=ev.id == proposal.id, same_message=ev.seq == proposal.seq, later=ev.seq > proposal.seq,
            earlier=ev.seq < proposal.seq, valid=ev.validity_at(as_of) > 0, question=ev.quote.rstrip().endswith("?"),
            hedged=A._hedged(ev), muses=A._muses(ev), typed=bool(labels) and A._holds(ev.quote, labels, unnamed),
            novel=A._novel(ev), overlap=len(asked & mine) / max(1, len(asked)), shared=len(asked & mine),
            words=len(ev.quote.split()), negated=ev.negated, frame=ev.frame is not None, facet=ev.facet is not None,
            near_proposal=float(close), holds_value=A._holds_value(ev.quote), asking=A._is_asking(ev),
            key_share=_key_share(ev, lemmas),
            asked_noun=noun is not None and any((t.lemma_ or t.text).lower() == noun for t in parsed(ev.quote)),
            phrase_sim=float(fit)))
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
        best_fit = max(x.phrase_sim for x in rows)
        base = [1.0 / (1 + r.rank), r.score, top - r.score, r.person, r.subject, r.proposed, r.same_message, r.later,
                r.valid, r.question, r.hedged, r.muses, r.typed, r.novel, r.overlap, min(r.shared, 3) / 3,
                min(r.words, 40) / 40, r.negated, r.frame, r.facet, r.near_proposal, r.holds_value, r.asking,
                later_same == 0, latest_near, when, min(later_same, 4) / 4, r.key_share, r.asked_noun]
        support = [r.proposed and flags.support == s for s in ("chain", "frame", "sentence")]
        extra = [latest_typed, latest_on_topic, 1.0 / (1 + own_rank), r.earlier, r.phrase_sim,
                 best_fit - r.phrase_sim]
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
_EXTRA = ["latest typed", "latest on topic", "own rank", "earlier than the proposal", "close to the asked phrase",
          "gap to the closest to the asked phrase"]
_KINDS = ("said now", "now", "as of", "before")
FEATURE_NAMES = (_BASE + _EXTRA + [f"{k}: {a}" for k in _KINDS for a in _BASE + _EXTRA]
                 + [f"proposed, rests on {s}" for s in ("chain", "frame", "sentence")])


@dataclass(frozen=True)
class Trees:
    """Gradient-boosted trees over `FEATURE_NAMES` (`fit`; stored in `choose_weights.json`): for each candidate the
    probability that it states the answer (class 1) or only a superseded value (class 2), against neither (class 0).

    The trees of all rounds and classes are held as flat node arrays and walked together, one step of depth for
    every tree and candidate at once (a question's ten candidates through some hundreds of trees in well under a
    millisecond)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    tree_class: np.ndarray  # the class each tree adds to
    baseline: np.ndarray  # per class
    depth: int
    stale_cost: float  # how much a candidate's chance of stating a superseded value counts against it

    def proba(self, x: np.ndarray) -> np.ndarray:
        """(candidates, classes) probabilities."""
        idx = np.repeat(self.roots[:, None], len(x), axis=1)
        cols = np.arange(len(x))[None, :]
        for _ in range(self.depth):
            nxt = np.where(x[cols, self.feature[idx]] <= self.threshold[idx], self.left[idx], self.right[idx])
            idx = np.where(self.leaf[idx], idx, nxt)
        leaves = self.value[idx]
        raw = self.baseline[:, None] + np.stack([leaves[self.tree_class == c].sum(axis=0)
                                                 for c in range(len(self.baseline))])
        raw = np.exp(raw - raw.max(axis=0))
        return (raw / raw.sum(axis=0)).T

    def score(self, x: np.ndarray) -> np.ndarray:
        p = self.proba(x)
        return p[:, 1] - self.stale_cost * p[:, 2]

    def to_json(self, trained_on: Sequence[str]) -> str:
        arrays = {name: getattr(self, name).tolist() for name in
                  ("feature", "threshold", "left", "right", "leaf", "value", "roots", "tree_class")}
        return json.dumps({"kind": "trees", "features": FEATURE_NAMES, "baseline": self.baseline.tolist(),
                           "depth": self.depth, "stale_cost": self.stale_cost, "trees": arrays,
                           "trained_on": list(trained_on)}, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trees:
        """The model a `to_json` text holds; ValueError (or KeyError, TypeError) when it is not one for these
        features."""
        if data.get("kind") != "trees" or data.get("features") != FEATURE_NAMES:
            raise ValueError("not trees over these features")
        t = data["trees"]
        ints = {k: np.asarray(t[k], dtype=np.int64) for k in ("feature", "left", "right", "roots", "tree_class")}
        model = cls(feature=ints["feature"], threshold=np.asarray(t["threshold"], dtype=np.float64),
                    left=ints["left"], right=ints["right"], leaf=np.asarray(t["leaf"], dtype=bool),
                    value=np.asarray(t["value"], dtype=np.float64), roots=ints["roots"], tree_class=ints["tree_class"],
                    baseline=np.asarray(data["baseline"], dtype=np.float64), depth=int(data["depth"]),
                    stale_cost=float(data["stale_cost"]))
        n, classes = len(model.feature), len(model.baseline)
        if not (len(model.threshold) == len(model.left) == len(model.right) == len(model.leaf) == len(model.value) == n
                and len(model.roots) == len(model.tree_class) and n and classes == 3 and model.depth > 0
                and ((0 <= model.feature) & (model.feature < len(FEATURE_NAMES))).all()
                and ((0 <= model.left) & (model.left < n) & (0 <= model.right) & (model.right < n)).all()
                and ((0 <= model.roots) & (model.roots < n)).all()
                and ((0 <= model.tree_class) & (model.tree_class < classes)).all()
                and np.isfinite(model.value).all() and np.isfinite(model.baseline).all()):
            raise ValueError("inconsistent trees")
        return model


#: what scores candidates: the shipped trees, or a weight per feature (a linear scorer)
Scorer = Trees | np.ndarray


@lru_cache(maxsize=1)
def weights() -> Trees | None:
    """The fitted model, or None when the file is missing, malformed or does not fit `FEATURE_NAMES` (the rule
    answer step then stands alone)."""
    try:
        return Trees.from_json(json.loads(WEIGHTS_FILE.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def scores(x: np.ndarray, scorer: Scorer) -> np.ndarray:
    return scorer.score(x) if isinstance(scorer, Trees) else x @ scorer


def choose_stating(rows: Sequence[Row], flags: Flags, w: Scorer | None = None) -> tuple[Row, float] | None:
    """`choose` among the candidates that state something: a sentence musing on an unreal condition ("if I ever
    get a sea kayak I'll need a roof rack") states no state of anyone's, so it is never picked — the rule step's
    proposal neither — while another candidate states (dev, 18 sets: +3 valid, no more stale)."""
    stating = [r for r in rows if not r.muses or (r.proposed and _states_frame(r.event))]
    return choose(stating or rows, flags, w)


def _states_frame(ev: EventNode) -> bool:
    """Does the event state a frame outside the sentence's musing ("I'm from Lyon, so if I ever opened a café I'd
    call it Café Lyon": the origin is said as a fact, the café is the musing)? Asked of the proposal only: the
    rule step read that frame as the answer."""
    return bool(ev.frame) and bool(ev.value) and not ev.negated and not ev.frame.get("hedged")


def choose(rows: Sequence[Row], flags: Flags, w: Scorer | None = None) -> tuple[Row, float] | None:
    """The best-scored candidate and the answer's confidence (the trees' probability that it states the answer; a
    linear scorer's softmax share); None without rows or a model."""
    w = weights() if w is None else w
    if w is None or not rows:
        return None
    x = features(rows, flags)
    s = scores(x, w)
    best = int(np.argmax(s))
    if rows[best].same_message and not rows[best].proposed:
        # the model was fitted on whole messages (a candidate is right when its message is gold evidence), so it
        # cannot tell one sentence of the proposal's message from another: the rule step's sentence stays
        best = next((i for i, r in enumerate(rows) if r.proposed), best)
    if isinstance(w, Trees):
        return rows[best], float(w.proba(x)[best, 1])
    z = np.exp(s - s.max())
    return rows[best], float(z[best] / z.sum())


def restates(chosen: EventNode, read: Answer, proposal: Answer) -> bool:
    """Whether the chosen sentence only says the proposal's answer again: the proposal's answer names something
    specific ("Pepper"), the chosen sentence holds no value of its own and is not a denial, and its reading (often
    the whole sentence: "Pepper loves the cold though, he's a new dog") contains that answer as whole words and names
    nothing else. The two agree, and the rule step's span is the better answer. A chosen sentence that names
    something besides ("£1,250, so up from the £1,100 I was paying") says something new and is kept."""
    said = proposal.text.strip()
    if chosen.value or chosen.negated or read.abstained or proposal.abstained or not said or not _holds_value(said):
        return False
    found = whole_words(said).search(read.text)
    return found is not None and not _holds_value(read.text[:found.start()] + read.text[found.end():])


def fit(groups: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], *, stale_cost: float = 1.0,
        rounds: int = 200, seed: int = 0) -> Trees:
    """Gradient-boosted trees (scikit-learn's histogram GBM, a training-time dependency only) on every candidate of
    the groups that have a candidate marked right or stale: each group is (features of its candidates, 1 for those
    that state the gold answer, 1 for those that state a superseded value instead). A group with neither teaches
    nothing and is left out. The choice takes the candidate with the highest P(right) − stale_cost · P(stale), so a
    model that serves an outdated value pays more than one that misses."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    usable = [(x, y, st) for x, y, st in groups if y.any() or st.any()]
    if not any(y.any() for _, y, _ in usable):
        raise ValueError("no group has a candidate marked right")
    x = np.vstack([g[0] for g in usable])
    label = np.concatenate([np.where(y > 0, 1, np.where(st > 0, 2, 0)) for _, y, st in usable])
    # the three classes always exist (a class no group has gets one row of zeros): the stored model has three
    missing = [c for c in (0, 1, 2) if c not in set(label.tolist())]
    if missing:
        x = np.vstack([x, np.zeros((len(missing), x.shape[1]))])
        label = np.concatenate([label, missing])
    model = HistGradientBoostingClassifier(max_iter=rounds, learning_rate=0.05, max_leaf_nodes=15,
                                           l2_regularization=1.0, random_state=seed).fit(x, label)
    return _exported(model, stale_cost)


def _exported(model: Any, stale_cost: float) -> Trees:
    """A fitted `HistGradientBoostingClassifier` as `Trees` (its predictors' node arrays, concatenated)."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("feature", "threshold", "left", "right", "leaf", "value")}
    roots, classes, offset, depth = [], [], 0, 1
    for round_ in model._predictors:
        for cls, predictor in enumerate(round_):
            nodes = predictor.nodes
            roots.append(offset)
            classes.append(cls)
            parts["feature"].append(nodes["feature_idx"].astype(np.int64))
            parts["threshold"].append(nodes["num_threshold"].astype(np.float64))
            parts["left"].append(nodes["left"].astype(np.int64) + offset)
            parts["right"].append(nodes["right"].astype(np.int64) + offset)
            parts["leaf"].append(nodes["is_leaf"].astype(bool))
            parts["value"].append(nodes["value"].astype(np.float64))
            depth = max(depth, int(nodes["depth"].max()) + 1)
            offset += len(nodes)
    flat = {k: np.concatenate(v) for k, v in parts.items()}
    return Trees(**flat, roots=np.asarray(roots, dtype=np.int64), tree_class=np.asarray(classes, dtype=np.int64),
                 baseline=np.asarray(model._baseline_prediction, dtype=np.float64).ravel(), depth=depth,
                 stale_cost=stale_cost)
