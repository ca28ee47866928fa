"""Edges between events (TRACE Eq. 10 and Step 3).

* `before`: deterministic, from time anchors; within one session (equal
  timestamps) the turn order decides — never two events with equal anchors
  in different sessions.
* `updates` / `contradicts`: events of the same subject and facet form a
  chain in conversation order; a later, different value updates the previous
  one. A different person's fact never updates someone else's (the chain key
  includes the subject). A value reported by someone other than the subject
  that disagrees with the subject's own word is a `contradicts` (no validity
  change). Facets that can hold several values at once (family members,
  clubs, pets) update only on an explicit revision cue.
* `causes` / `enables` / `prevents`: from explicit cues found by the extractor.

Cross-session `before` links go through the candidate gate A(e): participant
Jaccard ≥ θp and the same topic, looking back over a bounded window, so the
work grows linearly with the number of events.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.text import short_hash

SUPPORT = ("causes", "enables", "prevents", "before")
EVOLUTION = ("updates", "contradicts")
MULTI_VALUED_PREFIXES = ("family:", "club", "pet_name:")


@dataclass
class EventRec:
    """The fields linking needs."""

    id: str
    session_id: str
    seq: int
    sentence_idx: int
    time_anchor: str | None
    subject: str
    speaker: str
    participants: list[str]
    topic_id: str | None
    facet: str | None = None
    value: str | None = None
    value_norm: str | None = None
    negated: bool = False
    cue: str | None = None
    confidence: float = 0.6
    frame: dict[str, Any] | None = None  # the open statement frame, when the event states one
    quote: str = ""

    @property
    def order(self) -> tuple[int, int]:
        return (self.seq, self.sentence_idx)


@dataclass
class EdgeRec:
    """An edge to store."""

    src: str
    dst: str
    label: str
    confidence: float
    justification: str

    @property
    def id(self) -> str:
        return "ed_" + short_hash(self.src, self.dst, self.label)

    @property
    def family(self) -> str:
        return "evolution" if self.label in EVOLUTION else "support"


@dataclass
class GateStats:
    """How much pairwise work the candidate gate allowed."""

    pairs_considered: int = 0
    pairs_possible: int = 0


@dataclass
class LinkSettings:
    """Documented knobs of linking."""

    theta_p: float = 0.5  # participant Jaccard threshold of the gate
    window: int = 4  # how many gated predecessors an event is compared with
    implicit_update_confidence: float = 0.75
    cue_update_confidence: float = 0.92


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def before_edges(events: Sequence[EventRec], new_ids: set[str], settings: LinkSettings, stats: GateStats) -> list[EdgeRec]:
    """`before` edges from each new event's nearest gated predecessor(s)."""
    ordered = sorted(events, key=lambda e: e.order)
    by_topic: dict[str | None, list[EventRec]] = defaultdict(list)
    edges: list[EdgeRec] = []
    seen = 0
    for ev in ordered:
        stats.pairs_possible += seen if ev.id in new_ids else 0
        seen += 1
        pool = by_topic[ev.topic_id]
        if ev.id in new_ids:
            linked = 0
            for prev in reversed(pool[-settings.window * 4:]):
                stats.pairs_considered += 1
                if jaccard(prev.participants, ev.participants) < settings.theta_p:
                    continue
                if not _strictly_before(prev, ev):
                    continue
                edges.append(EdgeRec(prev.id, ev.id, "before", 1.0, _before_reason(prev, ev)))
                linked += 1
                if linked >= 1:
                    break
        pool.append(ev)
    return edges


def _strictly_before(a: EventRec, b: EventRec) -> bool:
    if a.session_id == b.session_id:
        return a.order < b.order
    if a.time_anchor and b.time_anchor:
        return a.time_anchor < b.time_anchor
    return False


def _before_reason(a: EventRec, b: EventRec) -> str:
    if a.session_id == b.session_id:
        return "same session, earlier turn"
    return f"{a.time_anchor} < {b.time_anchor}"


def evolution_edges(events: Sequence[EventRec], settings: LinkSettings) -> list[EdgeRec]:
    """`updates` and `contradicts` along each (subject, facet) chain."""
    chains: dict[tuple[str, str], list[EventRec]] = defaultdict(list)
    for ev in events:
        if ev.facet and ev.value_norm:
            chains[(ev.subject, ev.facet)].append(ev)
    edges: list[EdgeRec] = []
    for (subject, facet), chain in chains.items():
        chain.sort(key=lambda e: e.order)
        multi = facet.startswith(MULTI_VALUED_PREFIXES)
        for i, ev in enumerate(chain):
            if i == 0:
                continue
            prev = _previous_for(chain[:i], ev)
            if prev is None or same_value(prev.value_norm, ev.value_norm):
                continue
            if prev.order == ev.order:
                continue
            has_cue = bool(ev.cue) or ev.confidence >= 0.9
            if multi and not has_cue:
                continue
            reported = ev.speaker and ev.speaker != subject
            own_before = prev.speaker == subject
            old_v = prev.value if not prev.negated else f"not {prev.value}"
            new_v = ev.value if not ev.negated else f"not {ev.value}"
            if reported and own_before and not has_cue:
                edges.append(
                    EdgeRec(ev.id, prev.id, "contradicts", 0.6,
                            f"{ev.speaker} says {subject}'s {facet} is '{new_v}', {subject} said '{old_v}'")
                )
                continue
            conf = settings.cue_update_confidence if has_cue else settings.implicit_update_confidence
            why = f"{subject}'s {facet}: '{new_v}' replaces '{old_v}'"
            if ev.cue:
                why += f" (cue: {ev.cue}) (found by facet)"
            else:
                why += " (later statement, same facet) (found by facet)"
            edges.append(EdgeRec(ev.id, prev.id, "updates", round(min(conf, max(ev.confidence, 0.5) + 0.1), 2), why))
    return edges


def same_value(a: str | None, b: str | None) -> bool:
    """Restatements are not revisions: equal values, or one's words contained in the other's ('Skoda' / 'Skoda Octavia')."""
    if a == b:
        return True
    if not a or not b or a.startswith("not:") != b.startswith("not:"):
        return False
    wa, wb = set(a.replace(",", " ").split()), set(b.replace(",", " ").split())
    return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)


def _previous_for(earlier: Sequence[EventRec], ev: EventRec) -> EventRec | None:
    """What `ev` revises: a retraction revises the value it names; anything else the latest earlier event."""
    if ev.negated and ev.value_norm and ev.value_norm.startswith("not:"):
        target = ev.value_norm[4:]
        for prev in reversed(earlier):
            if same_value(prev.value_norm, target):
                return prev
    # A new value stated right after a retraction in the same message ("not in Hackney anymore! Moved to
    # Walthamstow") revises the value that was retracted, not the retraction itself.
    for prev in reversed(earlier):
        if prev.negated and prev.seq == ev.seq:
            continue
        return prev
    return None


def causal_edges(causal: Sequence[tuple[str, str, str, str]], known: set[str]) -> list[EdgeRec]:
    """Edges from extractor cues: (effect_event, label, cause_event, cue)."""
    out = []
    for effect, label, cause, cue in causal:
        if effect in known and cause in known and effect != cause:
            out.append(EdgeRec(cause, effect, label, 0.8, f"explicit cue '{cue}'"))
    return out


@dataclass
class LinkResult:
    """Edges found for one build."""

    edges: list[EdgeRec] = field(default_factory=list)
    stats: GateStats = field(default_factory=GateStats)
