"""Trajectories: append-only sequences of snapshots (TrajWiki Eq. 3, 4 and App. A.2).

A new snapshot σ continues T* = argmax g(σ, T) when g(σ, T*) ≥ δ, else it
starts a new trajectory. Offline, g is the paper's deterministic score:

    g = w_sum·cos(e_σ, e_T^sum) + w_latest·cos(e_σ, e_T^latest) + w_kw·J(K_σ, K_T)
        + b_entity + b_facet + b_cont − p_mismatch

with e_T^sum the trajectory's centroid (mean of its snapshot vectors),
e_T^latest its newest snapshot's vector, J the keyword Jaccard, and the
entity / facet / continuity bonuses and mismatch penalties of App. A.2. All
weights and δ live in `MatchSettings`.

One rule goes beyond the score: when a snapshot explicitly revises a fact
whose claims live in a trajectory (the graph has an `updates` or
`contradicts` edge from one of the snapshot's events), it continues that
trajectory (`continue_on_update`). This is the offline stand-in for the
LLM matcher's instruction to continue a thread the new memory explicitly
updates; without it a revision would almost never clear δ.

With an LLM, the top three candidates by g go to a structured CONTINUE/NEW
decision; an unusable reply falls back to the threshold rule.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tracecli.store.db import Store, dumps, utc_now
from tracecli.text import content_words, short_hash
from tracecli.wiki.claims import ClaimDraft, EventRow, MessageRow

if TYPE_CHECKING:
    from tracecli.providers.llm import ChatModel


@dataclass(frozen=True)
class MatchSettings:
    """Every knob of trajectory matching, with the paper's values (App. A.2, A.7)."""

    delta: float = 0.72  # continue the best trajectory when g ≥ δ (offline threshold)
    w_summary: float = 0.60  # weight of cos(snapshot, trajectory centroid)
    w_latest: float = 0.20  # weight of cos(snapshot, trajectory's latest snapshot)
    w_keywords: float = 0.20  # weight of keyword Jaccard
    entity_bonus: float = 0.08  # normalised entity keys overlap
    facet_value_bonus: float = 0.06  # same (subject, facet, value)
    facet_tag_bonus: float = 0.03  # same (subject, facet), other value
    continuity_step: float = 0.04  # per shared specific term ...
    continuity_cap: float = 0.14  # ... up to this much
    broad_entity_penalty: float = 0.10  # only a broad entity in common, nothing specific
    lexical_only_penalty: float = 0.04  # shared keywords but nothing specific
    continue_on_update: bool = True  # a snapshot revising a trajectory's fact continues it
    prefilter_cap: int = 32  # candidates kept by overlap count
    trajectory_keywords: int = 30  # K_T: the trajectory's most frequent keywords
    llm_candidates: int = 3  # shortlist sent to the LLM matcher


# -- features -----------------------------------------------------------------------

GENERIC = frozenset(
    """good great nice time times day days thing things lot lots feel feels feeling felt make makes made new
    way ways something anything everything really pretty super little big bit sure always never kind sort
    want wants wanted need needs needed said says say tell told right amazing awesome glad happy love loved
    loves enjoy enjoys enjoyed co others shared photo week weeks month months year years today yesterday""".split()
)
_NOT_TERMS = frozenset(
    """i im ive id the a an my our we you he she they it this that there here what when where who why how
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december christmas yes no oh ok okay hey hi hello thanks thank wow
    also so and but just well anyway haha lol omg sorry congrats""".split()
)
_CAPS = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'’\-]*(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w'’\-]*)*")
_QUOTED = re.compile(r"[\"“](?P<t>[^\"”]{2,60})[\"”]")


@dataclass
class Features:
    """K, E, X, F of App. A.2: keywords, entity keys, specific (exact) terms, facet tags and values."""

    keywords: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)
    facets: list[str] = field(default_factory=list)


def _name_free(words: Sequence[str], names: set[str]) -> list[str]:
    out = []
    for w in words:
        base = w[:-1] if w.endswith("s") and w[:-1] in names else w
        if base in names or w in GENERIC:
            continue
        out.append(w)
    return out


def snapshot_features(
    exchange: Sequence[MessageRow], drafts: Sequence[ClaimDraft], participants: Sequence[str]
) -> Features:
    """The deterministic feature sets of one snapshot."""
    names = {p.lower() for p in participants}
    claim_text = " ".join(d.text for d in drafts) if drafts else " ".join(m.text for m in exchange)
    keywords = sorted(set(_name_free(content_words(claim_text), names)))
    entities = {d.subject.lower() for d in drafts if d.subject}
    raw = " ".join(m.text for m in exchange)
    for p in participants:
        if re.search(rf"\b{re.escape(p)}\b", raw):
            entities.add(p.lower())
    terms: set[str] = set()
    for d in drafts:
        if d.item:
            terms.add(d.item.lower())
    for m in exchange:
        for sent in re.split(r"(?<=[.!?])\s+", m.text):
            for cap in _CAPS.finditer(sent):
                t = cap.group(0).strip().lower()
                first = t.split()[0].strip("'’")
                if t in names or first in _NOT_TERMS or first in names or len(t) < 3:
                    continue
                terms.add(t)
        for q in _QUOTED.finditer(m.text):
            terms.add(q.group("t").strip().lower())
    facets: set[str] = set()
    for d in drafts:
        if d.facet:
            tag = f"{d.subject.lower()}|{d.facet}"
            facets.add(tag)
            if d.item and not d.negated:
                facets.add(f"{tag}={d.item.lower()}")
    return Features(keywords, sorted(entities), sorted(terms), sorted(facets))


# -- trajectory state --------------------------------------------------------------------


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


@dataclass
class TrajectoryState:
    """A trajectory's matching signals, as stored."""

    id: str
    idx: int
    first_snapshot_id: str
    latest_snapshot_id: str
    n_snapshots: int
    keywords: Counter[str]
    entities: set[str]
    terms: set[str]
    facets: set[str]
    sum_vector: np.ndarray
    latest_vector: np.ndarray
    first_at: str | None
    last_at: str | None
    #: top_keywords' last answer, keyed by (n, n_snapshots, len(keywords)): keywords only change when a
    #: snapshot is appended, which bumps n_snapshots (every snapshot is matched against every trajectory)
    _top: tuple[tuple[int, int, int], set[str]] | None = field(default=None, repr=False, compare=False)

    def top_keywords(self, n: int) -> set[str]:
        """The n most frequent keywords (ties alphabetical); kept until the keywords change."""
        key = (n, self.n_snapshots, len(self.keywords))
        if self._top is None or self._top[0] != key:
            self._top = (key, {w for w, _ in sorted(self.keywords.items(), key=lambda kv: (-kv[1], kv[0]))[:n]})
        return self._top[1]

    def centroid(self) -> np.ndarray:
        return _unit(self.sum_vector.astype(np.float64))

    @property
    def facet_tags(self) -> set[str]:
        return {f.split("=", 1)[0] for f in self.facets}


def load_trajectories(store: Store, conversation_id: str) -> list[TrajectoryState]:
    """All trajectories of a conversation in creation order."""
    out = []
    for r in store.query("SELECT * FROM trajectories WHERE conversation_id = ? ORDER BY idx", (conversation_id,)):
        out.append(
            TrajectoryState(
                id=r["id"], idx=r["idx"], first_snapshot_id=r["first_snapshot_id"],
                latest_snapshot_id=r["latest_snapshot_id"], n_snapshots=r["n_snapshots"],
                keywords=Counter(json.loads(r["keywords"])), entities=set(json.loads(r["entities"])),
                terms=set(json.loads(r["terms"])), facets=set(json.loads(r["facets"])),
                sum_vector=np.frombuffer(r["sum_vector"], dtype=np.float32).copy(),
                latest_vector=np.frombuffer(r["latest_vector"], dtype=np.float32).copy(),
                first_at=r["first_at"], last_at=r["last_at"],
            )
        )
    return out


def new_trajectory(conversation_id: str, idx: int, snapshot_id: str, features: Features, vector: np.ndarray,
                   when: str | None) -> TrajectoryState:
    """A trajectory opened by one snapshot."""
    return TrajectoryState(
        id="tr_" + short_hash(conversation_id, snapshot_id), idx=idx, first_snapshot_id=snapshot_id,
        latest_snapshot_id=snapshot_id, n_snapshots=1, keywords=Counter(features.keywords),
        entities=set(features.entities), terms=set(features.terms), facets=set(features.facets),
        sum_vector=vector.astype(np.float32).copy(), latest_vector=vector.astype(np.float32).copy(),
        first_at=when, last_at=when,
    )


def append_snapshot(t: TrajectoryState, snapshot_id: str, features: Features, vector: np.ndarray, when: str | None) -> None:
    """Fold a continuing snapshot into the trajectory's signals."""
    t.latest_snapshot_id = snapshot_id
    t.n_snapshots += 1
    t.keywords.update(features.keywords)
    t.entities |= set(features.entities)
    t.terms |= set(features.terms)
    t.facets |= set(features.facets)
    t.sum_vector = (t.sum_vector + vector.astype(np.float32)).astype(np.float32)
    t.latest_vector = vector.astype(np.float32).copy()
    if when:
        t.last_at = when


def save_trajectory(store: Store, conversation_id: str, t: TrajectoryState) -> None:
    """Insert or update a trajectory's row."""
    store.execute(
        "INSERT INTO trajectories(id, conversation_id, idx, first_snapshot_id, latest_snapshot_id, n_snapshots, keywords, "
        "entities, terms, facets, sum_vector, latest_vector, first_at, last_at, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
        "latest_snapshot_id = excluded.latest_snapshot_id, n_snapshots = excluded.n_snapshots, "
        "keywords = excluded.keywords, entities = excluded.entities, terms = excluded.terms, facets = excluded.facets, "
        "sum_vector = excluded.sum_vector, latest_vector = excluded.latest_vector, last_at = excluded.last_at",
        (
            t.id, conversation_id, t.idx, t.first_snapshot_id, t.latest_snapshot_id, t.n_snapshots,
            dumps(dict(t.keywords)), dumps(sorted(t.entities)), dumps(sorted(t.terms)), dumps(sorted(t.facets)),
            t.sum_vector.astype(np.float32).tobytes(), t.latest_vector.astype(np.float32).tobytes(),
            t.first_at, t.last_at, utc_now(),
        ),
    )


# -- scoring ----------------------------------------------------------------------------


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


@dataclass
class Score:
    """g(σ, T) and its parts (for `match_reason` and tests)."""

    trajectory_id: str
    total: float
    cos_summary: float
    cos_latest: float
    keyword_jaccard: float
    entity_bonus: float
    facet_bonus: float
    continuity_bonus: float
    penalty: float
    update_link: bool = False

    def reason(self) -> str:
        parts = [
            f"g={self.total:.3f}", f"cos_sum={self.cos_summary:.3f}", f"cos_latest={self.cos_latest:.3f}",
            f"J={self.keyword_jaccard:.3f}",
        ]
        for name, v in (("entity", self.entity_bonus), ("facet", self.facet_bonus), ("cont", self.continuity_bonus)):
            if v:
                parts.append(f"+{name} {v:.2f}")
        if self.penalty:
            parts.append(f"-mismatch {self.penalty:.2f}")
        if self.update_link:
            parts.append("revises a fact of this trajectory")
        return " ".join(parts)


def score(features: Features, vector: np.ndarray, t: TrajectoryState, s: MatchSettings) -> Score:
    """The deterministic compatibility g(σ, T) of App. A.2."""
    v = vector.astype(np.float64)
    cos_sum = float(np.dot(v, t.centroid()))
    cos_latest = float(np.dot(v, _unit(t.latest_vector.astype(np.float64))))
    kw = set(features.keywords)
    j = jaccard(kw, t.top_keywords(s.trajectory_keywords))
    ent = s.entity_bonus if set(features.entities) & t.entities else 0.0
    fset = set(features.facets)
    values = {f for f in fset if "=" in f}
    tags = {f.split("=", 1)[0] for f in fset}
    if values & t.facets:
        fb = s.facet_value_bonus
    elif tags & t.facet_tags:
        fb = s.facet_tag_bonus
    else:
        fb = 0.0
    shared = len(set(features.terms) & t.terms)
    cont = min(s.continuity_cap, s.continuity_step * shared)
    penalty = 0.0
    if shared == 0 and fb == 0.0:
        if kw & t.top_keywords(s.trajectory_keywords):
            penalty = s.lexical_only_penalty
        elif ent:
            penalty = s.broad_entity_penalty
    total = s.w_summary * cos_sum + s.w_latest * cos_latest + s.w_keywords * j + ent + fb + cont - penalty
    return Score(t.id, round(total, 6), round(cos_sum, 6), round(cos_latest, 6), round(j, 6), ent, fb, cont, penalty)


def prefilter(features: Features, trajectories: Sequence[TrajectoryState], s: MatchSettings,
              linked: set[str]) -> list[TrajectoryState]:
    """Trajectories sharing a keyword, term or facet with σ (at most `prefilter_cap`), else all of them."""
    kw, terms = set(features.keywords), set(features.terms)
    tags = {f.split("=", 1)[0] for f in features.facets}
    counted = []
    for t in trajectories:
        n = len(kw & t.top_keywords(s.trajectory_keywords)) + len(terms & t.terms) + len(tags & t.facet_tags)
        if n or t.id in linked:
            counted.append((n + (1000 if t.id in linked else 0), t))
    if not counted:
        return list(trajectories)
    counted.sort(key=lambda nt: (-nt[0], -nt[1].idx))
    return [t for _, t in counted[: s.prefilter_cap]]


@dataclass
class Decision:
    """Where a snapshot goes: an existing trajectory id, or None for a new trajectory."""

    trajectory_id: str | None
    score: float | None
    reason: str
    candidates: list[Score] = field(default_factory=list)
    llm_used: bool = False
    llm_fallback: bool = False


def decide(
    features: Features,
    vector: np.ndarray,
    trajectories: Sequence[TrajectoryState],
    s: MatchSettings,
    linked: set[str] | None = None,
    llm: ChatModel | None = None,
    describe: Callable[[str], tuple[str, str]] | None = None,
    snapshot_text: str = "",
) -> Decision:
    """Eq. 4: continue the best compatible trajectory or open a new one."""
    linked = linked or set()
    if not trajectories:
        return Decision(None, None, "first trajectory")
    pool = prefilter(features, trajectories, s, linked)
    scores = sorted((score(features, vector, t, s) for t in pool), key=lambda sc: (-sc.total, sc.trajectory_id))
    for sc in scores:
        sc.update_link = sc.trajectory_id in linked
    if s.continue_on_update:
        link = next((sc for sc in scores if sc.update_link), None)
        if link is not None:
            return Decision(link.trajectory_id, link.total, "continue: " + link.reason(), scores[: s.llm_candidates])
    best = scores[0]
    if llm is not None and getattr(llm, "is_available", False) and describe is not None:
        chosen = _llm_decide(llm, scores[: s.llm_candidates], describe, snapshot_text)
        if chosen is not None:
            tid, rationale = chosen
            if tid is None:
                return Decision(None, best.total, "new (llm): " + rationale, scores[: s.llm_candidates], llm_used=True)
            sc = next(x for x in scores if x.trajectory_id == tid)
            return Decision(tid, sc.total, "continue (llm): " + rationale, scores[: s.llm_candidates], llm_used=True)
        fallback = True
    else:
        fallback = False
    if best.total >= s.delta:
        return Decision(best.trajectory_id, best.total, "continue: " + best.reason(), scores[: s.llm_candidates],
                        llm_fallback=fallback)
    return Decision(None, best.total, f"new: best {best.reason()} < δ={s.delta}", scores[: s.llm_candidates],
                    llm_fallback=fallback)


# -- the LLM matcher ------------------------------------------------------------------------

MATCH_SCHEMA: dict[str, Any] = {
    "title": "trajectory_match",
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["CONTINUE", "NEW"]},
        "selected_candidate": {"type": ["string", "null"]},
        "rationale": {"type": "string", "maxLength": 600},
    },
    "required": ["decision", "selected_candidate", "rationale"],
    "additionalProperties": False,
}

_MATCH_SYSTEM = """\
You file a new memory of a conversation into an evolving thread.
Candidates T1..Tn are threads, each with a summary of the whole thread and its newest update.
Answer CONTINUE with the candidate's label only if the new memory carries on the same
evolving thing: the same event, plan, project, item, place, count or fact (including an
explicit change to it). Sharing a person or a broad theme is not enough; a different item,
place or event of the same person is NEW. With NEW, selected_candidate is null.
Give a one-sentence rationale. Reply with JSON only."""


def match_prompt(candidates: Sequence[Score], describe: Callable[[str], tuple[str, str]], snapshot_text: str) -> list[dict[str, str]]:
    """The chat messages for one CONTINUE/NEW decision."""
    lines = [f"New memory:\n{snapshot_text[:1500]}", "", "Candidates:"]
    for n, sc in enumerate(candidates, 1):
        summary, latest = describe(sc.trajectory_id)
        lines.append(f"T{n} summary: {summary[:800]}")
        lines.append(f"T{n} newest update: {latest[:400]}")
    return [{"role": "system", "content": _MATCH_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def check_match(value: Any, n_candidates: int) -> tuple[int | None, str] | None:
    """(candidate index or None for NEW, rationale) from a reply, or None if it breaks the rules."""
    if not isinstance(value, Mapping):
        return None
    decision = value.get("decision")
    selected = value.get("selected_candidate")
    rationale = str(value.get("rationale") or "").strip()
    if decision == "NEW":
        return (None, rationale) if selected in (None, "", "null") else None
    if decision == "CONTINUE" and isinstance(selected, str):
        m = re.fullmatch(r"\s*T?(\d+)\s*", selected)
        if m and 1 <= int(m.group(1)) <= n_candidates:
            return int(m.group(1)) - 1, rationale
    return None


def _llm_decide(llm: ChatModel, candidates: Sequence[Score], describe: Callable[[str], tuple[str, str]],
                snapshot_text: str) -> tuple[str | None, str] | None:
    result = llm.complete(match_prompt(candidates, describe, snapshot_text), MATCH_SCHEMA, stage="compile-wiki")
    if not result.ok:
        return None
    checked = check_match(result.value, len(candidates))
    if checked is None:
        return None
    idx, rationale = checked
    return (None if idx is None else candidates[idx].trajectory_id), rationale


def linked_trajectories(events: Sequence[EventRow], edges_by_src: Mapping[str, Sequence[tuple[str, str]]],
                        trajectory_of_event: Mapping[str, str]) -> set[str]:
    """Trajectories holding claims of events this snapshot's events update or contradict."""
    out = set()
    for ev in events:
        for dst, _label in edges_by_src.get(ev.id, ()):
            tid = trajectory_of_event.get(dst)
            if tid:
                out.add(tid)
    return out
