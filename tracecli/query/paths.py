"""Evidence paths (TRACE Eq. 15–20): bounded bidirectional traversal, pruning, scoring.

Pruning rules, applied while paths grow:
1. an edge invalidated by the asked time (a causal link out of an event superseded by then: `invalidated_at`
   at or before the question's date, or set at all for a question about now) is never crossed;
2. a path whose `before`/causal edges run against parseable time anchors is rejected;
3. a path never takes two `contradicts` edges in a row.
Score: S = α·NS + β·PC + γ·TC + δ·UV with NS the mean best note cosine per
event, PC the product of c·d(ℓ) (halved when a `contradicts` is on the path),
TC = 1 when every time-ordered edge agrees with the anchors, UV the minimum
validity on the path (validity as of the question's date when it has one).
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.query.settings import AskSettings
from tracecli.scope import qualified_ref
from tracecli.store.db import Store, placeholders

TIME_ORDERED = ("before", "causes", "enables", "prevents")


@dataclass
class EventNode:
    """An event as traversal and answering see it."""

    id: str
    conversation_id: str
    session_id: str
    type: str
    subject: str
    description: str
    quote: str
    time_anchor: str | None
    event_time: str | None
    event_time_granularity: str | None
    seq: int
    sentence_idx: int
    facet: str | None
    value: str | None
    negated: bool
    confidence: float
    validity: float
    valid_until: str | None
    topic_id: str | None
    frame: dict[str, Any] | None = None  # the open statement frame (tracecli.graph.frames), if any
    speaker: str | None = None  # who said it (the subject may be the person spoken to)
    note_rowids: list[int] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    source_refs: list[str] = field(default_factory=list)

    def validity_at(self, as_of: str | None) -> float:
        """v(e) now, or as of an ISO time: not yet said → 0, superseded by then → 0."""
        if as_of is None:
            return self.validity
        if self.time_anchor and self.time_anchor > as_of:
            return 0.0
        if self.valid_until and self.valid_until <= as_of:
            return 0.0
        return 1.0 if self.validity == 0.0 else self.validity

    def said_after(self, as_of: str | None) -> bool:
        """Was this said after the as-of time (not yet known then, which is not the same as superseded)?"""
        return as_of is not None and bool(self.time_anchor) and str(self.time_anchor) > as_of

    def marker(self, as_of: str | None = None) -> str:
        """valid | partial | outdated (superseded by then) | not yet (said after the as-of time)."""
        if self.said_after(as_of):
            return "not yet"
        v = self.validity_at(as_of)
        return "valid" if v >= 1.0 else "partial" if v > 0 else "outdated"


@dataclass
class EdgeInfo:
    src: str
    dst: str
    label: str
    confidence: float
    invalidated_at: str | None
    justification: str


@dataclass
class Graph:
    """One or more conversations' events and event-to-event edges, in memory."""

    events: dict[str, EventNode]
    out: dict[str, list[EdgeInfo]]
    into: dict[str, list[EdgeInfo]]
    by_note: dict[int, list[str]]
    by_topic: dict[str, list[str]]
    conflicts: set[frozenset[str]] = field(default_factory=set)


def newest_successor(graph: Graph, ev: EventNode, as_of: str | None, *, same_fact: bool = False) -> EventNode:
    """Follow `updates` edges forward (who updated this event?) to the newest version valid at `as_of`.

    `same_fact`: only through events of the same typed facet or of none (a frame's restatement), so that a
    revision of another fact said in the same breath is not followed.
    """
    current, seen = ev, {ev.id}
    while True:
        newer = [graph.events[e.src] for e in graph.into.get(current.id, []) if e.label == "updates" and e.src not in seen]
        if as_of is not None:
            newer = [n for n in newer if not n.time_anchor or n.time_anchor <= as_of]
        if same_fact:
            newer = [n for n in newer if n.facet in (None, ev.facet)]
        if not newer:
            return current
        current = max(newer, key=lambda n: (n.seq, n.sentence_idx, not n.negated))
        seen.add(current.id)


def load_graph(store: Store, conversation_ids: Sequence[str]) -> Graph:
    """Read events and edges of the given conversations."""
    marks = placeholders(conversation_ids)
    events: dict[str, EventNode] = {}
    for r in store.query(f"SELECT * FROM events WHERE conversation_id IN ({marks})", list(conversation_ids)):
        events[r["id"]] = EventNode(
            id=r["id"], conversation_id=r["conversation_id"], session_id=r["session_id"], type=r["type"],
            subject=r["subject"], description=r["description"], quote=r["quote"], time_anchor=r["time_anchor"],
            event_time=r["event_time"], event_time_granularity=r["event_time_granularity"], seq=r["seq"],
            sentence_idx=r["sentence_idx"], facet=r["facet"], value=r["value"], negated=bool(r["negated"]),
            confidence=r["confidence"], validity=r["validity"], valid_until=r["valid_until"], topic_id=r["topic_id"],
            frame=json.loads(r["frame"]) if r["frame"] else None, speaker=r["speaker"],
        )
    by_note: dict[int, list[str]] = defaultdict(list)
    qualify = len(conversation_ids) > 1
    for eid, rowid, mid, ref, cid in store.execute(
        f"SELECT en.event_id, n.rowid, m.id, COALESCE(m.source_ref, m.id), m.conversation_id FROM event_notes en "
        f"JOIN notes n ON n.id = en.note_id JOIN messages m ON m.id = n.message_id "
        f"WHERE n.conversation_id IN ({marks}) ORDER BY m.seq",
        list(conversation_ids),
    ):
        if eid in events:
            ev = events[eid]
            ev.note_rowids.append(rowid)
            ev.message_ids.append(mid)
            ev.source_refs.append(qualified_ref(cid, ref) if qualify else ref)
            by_note[rowid].append(eid)
    out: dict[str, list[EdgeInfo]] = defaultdict(list)
    into: dict[str, list[EdgeInfo]] = defaultdict(list)
    conflicts: set[frozenset[str]] = set()
    for r in store.execute(
        f"SELECT src, dst, label, confidence, invalidated_at, justification FROM edges "
        f"WHERE conversation_id IN ({marks}) AND family != 'structural' ORDER BY confidence DESC, id",
        list(conversation_ids),
    ):
        e = EdgeInfo(*r)
        if e.src in events and e.dst in events:
            out[e.src].append(e)
            into[e.dst].append(e)
            if e.label == "contradicts":
                conflicts.add(frozenset((e.src, e.dst)))
    by_topic: dict[str, list[str]] = defaultdict(list)
    for ev in sorted(events.values(), key=lambda e: (e.seq, e.sentence_idx)):
        if ev.topic_id:
            by_topic[ev.topic_id].append(ev.id)
    return Graph(events, out, into, by_note, by_topic, conflicts)


@dataclass
class Step:
    """One event on a path, and how it connects to the next one."""

    event_id: str
    relation_to_next: str | None = None  # e.g. "updates", "updated by", "causes", "caused by"


@dataclass
class Path:
    steps: list[Step]
    edges: list[EdgeInfo]
    score: float = 0.0
    signals: dict[str, float] = field(default_factory=dict)

    @property
    def event_ids(self) -> list[str]:
        return [s.event_id for s in self.steps]


def _time_ok(graph: Graph, edge: EdgeInfo) -> bool:
    if edge.label not in TIME_ORDERED:
        return True
    a, b = graph.events[edge.src].time_anchor, graph.events[edge.dst].time_anchor
    if not a or not b:
        return True
    return a <= b


def _invalid_at(edge: EdgeInfo, as_of: str | None) -> bool:
    """Rule 1: the edge no longer holds at `as_of` (None: now)."""
    until = edge.invalidated_at
    return bool(until) and (as_of is None or (until or "") <= as_of)


def _path_key(path: Path) -> tuple[str | tuple[str, str, str], ...]:
    """A path is its sequence of edges: parallel edges between the same events are different paths."""
    return (path.steps[0].event_id, *((e.src, e.dst, e.label) for e in path.edges))


def traverse(graph: Graph, seeds: Iterable[str], settings: AskSettings, as_of: str | None = None) -> list[Path]:
    """Bounded bidirectional expansion from each seed with the three pruning rules (rule 1 as of `as_of`)."""
    paths: list[Path] = []
    seen: set[tuple[str | tuple[str, str, str], ...]] = set()
    for seed in seeds:
        if seed not in graph.events:
            continue
        frontier = [Path([Step(seed)], [])]
        for p in frontier:
            key = _path_key(p)
            if key not in seen:
                seen.add(key)
                paths.append(p)
        for _depth in range(settings.max_depth):
            grown: list[Path] = []
            for path in frontier:
                ids = path.event_ids
                tail = ids[-1]
                options: list[tuple[EdgeInfo, str, str]] = []
                options += [(e, e.dst, e.label) for e in graph.out.get(tail, [])[: settings.fan_out]]
                options += [(e, e.src, _reverse(e.label)) for e in graph.into.get(tail, [])[: settings.fan_out]]
                for edge, nxt, rel in options:
                    if _invalid_at(edge, as_of):  # rule 1
                        continue
                    if nxt in ids:
                        continue
                    if not _time_ok(graph, edge):  # rule 2
                        continue
                    if edge.label == "contradicts" and path.edges and path.edges[-1].label == "contradicts":  # rule 3
                        continue
                    steps = [Step(s.event_id, s.relation_to_next) for s in path.steps]
                    steps[-1].relation_to_next = rel
                    steps.append(Step(nxt))
                    new = Path(steps, [*path.edges, edge])
                    key = _path_key(new)
                    if key in seen:
                        continue
                    seen.add(key)
                    grown.append(new)
                    paths.append(new)
                    if len(paths) >= settings.max_paths:
                        return paths
            frontier = grown
            if not frontier:
                break
    return paths


def _reverse(label: str) -> str:
    return {"updates": "updated by", "causes": "caused by", "enables": "enabled by", "prevents": "prevented by",
            "before": "after", "contradicts": "contradicts"}.get(label, f"{label} (reversed)")


def score_path(graph: Graph, path: Path, relevance: Mapping[str, float], settings: AskSettings, as_of: str | None) -> None:
    """Fill `path.score` and `path.signals` (Eq. 16–20)."""
    ids = path.event_ids
    ns = sum(relevance.get(e, 0.0) for e in ids) / len(ids)
    pc = 1.0
    for edge in path.edges:
        pc *= edge.confidence * settings.discounts.get(edge.label, 0.5)
    if any(e.label == "contradicts" for e in path.edges):
        pc *= 0.5
    tc = 1.0 if all(_time_ok(graph, e) for e in path.edges) else 0.0
    uv = min(graph.events[e].validity_at(as_of) for e in ids)
    path.signals = {"ns": round(ns, 4), "pc": round(pc, 4), "tc": tc, "uv": uv}
    path.score = round(settings.alpha * ns + settings.beta * pc + settings.gamma * tc + settings.delta * uv, 6)


def rank_paths(graph: Graph, paths: list[Path], relevance: Mapping[str, float], settings: AskSettings, as_of: str | None) -> list[Path]:
    """Score every path and order them best first (ties: shorter, then ids)."""
    for p in paths:
        score_path(graph, p, relevance, settings, as_of)
    return sorted(paths, key=lambda p: (-p.score, len(p.steps), p.event_ids))


def iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def parse_list(text: str) -> list[str]:
    return json.loads(text) if text else []
