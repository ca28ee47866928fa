"""build-graph: distil events per session, link them, inject the hierarchy, propagate validity.

Incremental by default: only sessions not yet in the graph are processed; they
link into the existing graph. Evolution edges and validity are recomputed for
the whole conversation each time, so an incremental build ends in the same graph
as a full rebuild; after a new session the earlier frames' construction and
implicit edges, which nothing said later can change, are read back instead of
drawn again (`_drawn_before`).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tracecli.errors import BadInput
from tracecli.graph.extract import EventOut, MessageIn, RuleExtractor, split_sentences
from tracecli.graph.hierarchy import TopicSettings, assign_topics
from tracecli.graph.revise import (Embed, FrameRec, construction_edges, frame_edges, frame_recs, implicit_edges,
                                   masked_embedder)
from tracecli.graph.link import EdgeRec, EventRec, GateStats, LinkSettings, before_edges, causal_edges, evolution_edges
from tracecli.graph.validity import apply_validity
from tracecli.scope import llm_scope, resolve_scope, scope_of
from tracecli.store.db import Store, dumps, upsert_set, utc_now
from tracecli.text import short_hash

if TYPE_CHECKING:
    from tracecli.providers.llm import ChatModel

ProgressFn = Callable[[int, int], None]
EXTRACTORS = ("auto", "rules", "llm")


@dataclass
class BuildResult:
    """What one build-graph run did to one conversation."""

    conversation_id: str
    extractor: str
    sessions_processed: int = 0
    sessions_total: int = 0
    events_new: int = 0
    events_total: int = 0
    events_by_type: dict[str, int] = field(default_factory=dict)
    edges_by_label: dict[str, int] = field(default_factory=dict)
    updates: int = 0
    contradicts: int = 0
    outdated_events: int = 0
    partial_events: int = 0
    topics: int = 0
    pairs_considered: int = 0
    pairs_possible: int = 0
    llm_calls: int = 0
    llm_cache_hits: int = 0
    llm_fallbacks: int = 0
    elapsed_s: float = 0.0


def conversation_ids(store: Store, conversation_id: str | None, namespace: str | None = None) -> list[str]:
    """The conversations to work on (one, or all of the namespace), or NotFound with what to do."""
    return list(resolve_scope(store, namespace, conversation_id).conversation_ids)


def clear_graph(store: Store, cid: str) -> None:
    """Delete one conversation's evidence graph: edges, events, topics and which sessions were built."""
    for sql in (
        "DELETE FROM edges WHERE conversation_id = ?",
        "DELETE FROM event_notes WHERE event_id IN (SELECT id FROM events WHERE conversation_id = ?)",
        "DELETE FROM events WHERE conversation_id = ?",
        "DELETE FROM session_topics WHERE session_id IN (SELECT id FROM sessions WHERE conversation_id = ?)",
        "DELETE FROM topics WHERE conversation_id = ?",
        "DELETE FROM graph_sessions WHERE conversation_id = ?",
    ):
        store.execute(sql, (cid,))


def _history(store: Store, cid: str) -> list[EventOut]:
    """Faceted events already in the graph, for resolving revisions in new sessions."""
    names = _Participants()
    return [
        EventOut(
            id=r[0], type=r[1], subject=r[2], participants=names(r[3]), description=r[4], time_anchor=r[5],
            event_time=r[6], event_time_granularity=r[7], seq=r[8], sentence_idx=r[9], source_note_ids=[],
            source_message_ids=[], quote=r[10], facet=r[11], value=r[12], value_norm=r[13], negated=bool(r[14]),
            cue=r[15], confidence=r[16], provenance=r[17], speaker=r[18], frame=json.loads(r[19]) if r[19] else None,
        )
        for r in store.execute(
            "SELECT id, type, subject, participants, description, time_anchor, event_time, event_time_granularity, seq, "
            "sentence_idx, quote, facet, value, value_norm, negated, cue, confidence, provenance, speaker, frame "
            "FROM events WHERE conversation_id = ? AND (facet IS NOT NULL OR frame IS NOT NULL) ORDER BY seq, sentence_idx",
            (cid,),
        )
    ]


class _Participants:
    """Event participants from their stored JSON, each distinct list parsed once (a conversation has a few)."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}

    def __call__(self, text: str) -> list[str]:
        if text not in self.seen:
            self.seen[text] = json.loads(text)
        return list(self.seen[text])  # a list of its own per event, as json.loads gave


def _messages(store: Store, session_id: str) -> list[MessageIn]:
    return [
        MessageIn(r[0], r[1], session_id, r[2], r[3], r[4], r[5], r[6])
        for r in store.execute(
            "SELECT m.id, n.id, m.seq, m.speaker, m.text, m.timestamp, m.source_ref FROM messages m "
            "JOIN notes n ON n.message_id = m.id WHERE m.session_id = ? ORDER BY m.turn",
            (session_id,),
        )
    ]


#: what a rebuilt event overwrites (as SQLite's INSERT OR REPLACE did, its validity back to the defaults)
_EVENT_COLUMNS = ("conversation_id", "session_id", "type", "subject", "speaker", "participants", "description", "quote",
                  "time_anchor", "event_time", "event_time_granularity", "seq", "sentence_idx", "facet", "value",
                  "value_norm", "negated", "cue", "confidence", "provenance", "topic_id", "created_at", "frame")


def _insert_events(store: Store, cid: str, session_id: str, topic_id: str | None, events: list[EventOut]) -> None:
    now = utc_now()
    store.conn.executemany(
        "INSERT INTO events(id, conversation_id, session_id, type, subject, speaker, participants, description, quote, "
        "time_anchor, event_time, event_time_granularity, seq, sentence_idx, facet, value, value_norm, negated, cue, "
        "confidence, provenance, topic_id, created_at, frame) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
        + upsert_set("id", _EVENT_COLUMNS) + ", valid_until = NULL, validity = 1.0",
        [
            (e.id, cid, session_id, e.type, e.subject, e.speaker, dumps(e.participants), e.description, e.quote,
             e.time_anchor, e.event_time, e.event_time_granularity, e.seq, e.sentence_idx, e.facet, e.value,
             e.value_norm, int(e.negated), e.cue, e.confidence, e.provenance, topic_id, now,
             dumps(e.frame) if e.frame else None)
            for e in events
        ],
    )
    store.conn.executemany(
        "INSERT INTO event_notes(event_id, note_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(e.id, n) for e in events for n in e.source_note_ids],
    )


def _insert_edges(store: Store, cid: str, edges: list[EdgeRec], family: str | None = None) -> None:
    now = utc_now()
    store.conn.executemany(
        "INSERT INTO edges(id, conversation_id, src, dst, label, family, confidence, justification, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?) "
        + upsert_set("id", ("conversation_id", "src", "dst", "label", "family", "confidence", "justification", "created_at")),
        [(e.id, cid, e.src, e.dst, e.label, family or e.family, e.confidence, e.justification, now) for e in edges],
    )


def _event_recs(store: Store, cid: str) -> list[EventRec]:
    names = _Participants()
    return [
        EventRec(
            id=r[0], session_id=r[1], seq=r[2], sentence_idx=r[3], time_anchor=r[4], subject=r[5], speaker=r[6],
            participants=names(r[7]), topic_id=r[8], facet=r[9], value=r[10], value_norm=r[11], negated=bool(r[12]),
            cue=r[13], confidence=r[14], frame=json.loads(r[15]) if r[15] else None, quote=r[16],
        )
        for r in store.execute(
            "SELECT id, session_id, seq, sentence_idx, time_anchor, subject, speaker, participants, topic_id, facet, "
            "value, value_norm, negated, cue, confidence, frame, quote FROM events WHERE conversation_id = ? "
            "ORDER BY seq, sentence_idx", (cid,),
        )
    ]


def build_graph(
    store: Store,
    conversation_id: str | None = None,
    *,
    extractor: str = "auto",
    rebuild: bool = False,
    llm: ChatModel | None = None,
    link_settings: LinkSettings | None = None,
    topic_settings: TopicSettings | None = None,
    progress: ProgressFn | None = None,
    namespace: str | None = None,
) -> list[BuildResult]:
    """Build (or extend) the evidence graph of one conversation or all of a namespace's (see `tracecli.scope`)."""
    if extractor not in EXTRACTORS:
        raise BadInput(f"unknown extractor '{extractor}'; choose one of {', '.join(EXTRACTORS)}")
    link_settings = link_settings or LinkSettings()
    topic_settings = topic_settings or TopicSettings()
    use_llm = extractor == "llm" or (extractor == "auto" and llm is not None and getattr(llm, "is_available", False))
    if extractor == "llm" and (llm is None or not getattr(llm, "is_available", False)):
        raise BadInput("--extractor llm needs an LLM endpoint: set TRACECLI_LLM_URL and TRACECLI_LLM_MODEL")
    _roomy_page_cache(store)
    results = []
    for cid in conversation_ids(store, conversation_id, namespace):
        with llm_scope(llm, scope_of(store, [cid])):  # the prompts carry this conversation's text only
            results.append(_build_one(store, cid, use_llm, llm, rebuild, link_settings, topic_settings, progress))
    return results


#: sentences parsed ahead in one batch by build-graph: spaCy is ~20 % quicker on batches of a few
#: hundred sentences than on one session's few dozen; far below the DocCache's 8,192 entries, so none is
#: evicted before its session is extracted
READ_AHEAD_SENTENCES = 1000


def _read_ahead(store: Store, sessions: Sequence[str]) -> dict[str, list[MessageIn]]:
    """The messages of the next sessions, in order, up to about READ_AHEAD_SENTENCES sentences."""
    out: dict[str, list[MessageIn]] = {}
    sentences = 0
    for sid in sessions:
        out[sid] = _messages(store, sid)
        sentences += sum(len(split_sentences(m.text)) for m in out[sid])
        if sentences >= READ_AHEAD_SENTENCES:
            break
    return out


def _roomy_page_cache(store: Store, kib: int = 65536) -> None:
    """Give this connection a page cache of at least `kib` KiB (SQLite's default is 2 MB).

    Topic assignment reads note vectors out of vec0 chunks of ~1.5 MB each; after a
    rebuild's deletes have filled the default cache with dirty pages, those reads
    took 3.5 s instead of 0.3 s for 10K messages.
    """
    if store.backend != "sqlite":
        return  # a server's buffer cache is the server's to size
    size = int(store.execute("PRAGMA cache_size").fetchone()[0])
    page = int(store.execute("PRAGMA page_size").fetchone()[0])
    if (-size if size < 0 else size * page // 1024) < kib:
        store.execute(f"PRAGMA cache_size = {-int(kib)}")


def _build_one(store: Store, cid: str, use_llm: bool, llm: ChatModel | None, rebuild: bool,
               link_settings: LinkSettings, topic_settings: TopicSettings, progress: ProgressFn | None) -> BuildResult:
    started = time.perf_counter()
    participants = json.loads(store.execute("SELECT participants FROM conversations WHERE id = ?", (cid,)).fetchone()[0])
    result = BuildResult(conversation_id=cid, extractor="llm" if use_llm else "rules")
    ledger_before = _ledger_counts(store)
    with store.transaction():
        if rebuild:
            clear_graph(store, cid)
        sessions = store.query(
            "SELECT s.id, s.idx, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n "
            "FROM sessions s WHERE s.conversation_id = ? ORDER BY s.idx", (cid,))
        built = dict(store.execute("SELECT session_id, message_count FROM graph_sessions WHERE conversation_id = ?", (cid,)).fetchall())
        grown = [s["id"] for s in sessions if s["id"] in built and s["n"] > built[s["id"]]]
        if grown:
            # a session that received new messages since it was built changes what later sessions revise
            # and the topic centroids, so the conversation is rebuilt: the result equals a full rebuild
            clear_graph(store, cid)
            built = {}
        pending = [s["id"] for s in sessions if s["id"] not in built]
        result.sessions_total = len(sessions)
        result.sessions_processed = len(pending)
        if pending:
            topic_of = assign_topics(store, cid, pending, topic_settings)
            rules = RuleExtractor(participants)
            history = _history(store, cid)
            new_ids: set[str] = set()
            causal: list[tuple[str, str, str, str]] = []
            structural: list[EdgeRec] = []
            ahead: dict[str, list[MessageIn]] = {}
            for n, sid in enumerate(pending, 1):
                if not use_llm and sid not in ahead:
                    ahead = _read_ahead(store, pending[n - 1 :])
                    rules.prefetch(list(ahead.values()))
                messages = ahead.pop(sid) if sid in ahead else _messages(store, sid)
                events = None
                if use_llm and llm is not None:
                    from tracecli.graph.llm_extract import extract_with_llm

                    events = extract_with_llm(llm, messages, participants, history)
                if events is None:
                    events = rules.extract_session(messages, history)
                _insert_events(store, cid, sid, topic_of.get(sid), events)
                history.extend(e for e in events if e.facet)
                new_ids.update(e.id for e in events)
                for e in events:
                    causal.extend((e.id, label, other, cue) for label, other, cue in e.causal)
                    structural.append(EdgeRec(e.id, sid, "member_of", 1.0, "event in session"))
                structural.append(EdgeRec(sid, topic_of[sid], "member_of", 1.0, "session in topic"))
                if progress:
                    progress(n, len(pending))
            # session → next session, chronological
            order = [s["id"] for s in sessions]
            for a, b in zip(order, order[1:]):
                if b in pending:
                    structural.append(EdgeRec(a, b, "next", 1.0, "next session"))
            _insert_edges(store, cid, structural, family="structural")
            recs = _event_recs(store, cid)
            stats = GateStats()
            support = before_edges(recs, new_ids, link_settings, stats) + causal_edges(causal, {r.id for r in recs})
            _insert_edges(store, cid, support)
            result.pairs_considered = stats.pairs_considered
            result.pairs_possible = stats.pairs_possible
            relink(store, cid, link_settings, recs, new_ids)
            now = utc_now()
            counts = {s["id"]: s["n"] for s in sessions}
            store.conn.executemany(
                "INSERT INTO graph_sessions(session_id, conversation_id, extractor, message_count, built_at) VALUES (?,?,?,?,?) "
                + upsert_set("session_id", ("conversation_id", "extractor", "message_count", "built_at")),
                [(sid, cid, result.extractor, counts[sid], now) for sid in pending],
            )
            result.events_new = len(new_ids)
    _summarise(store, cid, result)
    ledger_after = _ledger_counts(store)
    result.llm_calls = ledger_after[0] - ledger_before[0]
    result.llm_cache_hits = ledger_after[1] - ledger_before[1]
    result.llm_fallbacks = ledger_after[2] - ledger_before[2]
    result.elapsed_s = round(time.perf_counter() - started, 3)
    return result


def relink(store: Store, cid: str, link_settings: LinkSettings | None = None, recs: list[EventRec] | None = None,
           new_ids: set[str] | None = None) -> None:
    """Recompute one conversation's `updates`/`contradicts` edges and validity from the events it has now.

    Every build ends with it; `tracecli forget` runs it after removing events, so a fact
    whose newer value was forgotten becomes current again. `recs`: the events, if already read;
    `new_ids`: the events this build added, if any (see `_drawn_before`).
    """
    recs = _event_recs(store, cid) if recs is None else recs
    frames = frame_recs(recs)
    embed = masked_embedder()
    drawn = _drawn_before(store, cid, frames, recs, new_ids, embed) if new_ids else None
    store.execute("DELETE FROM edges WHERE conversation_id = ? AND family = 'evolution'", (cid,))
    facet_edges = evolution_edges(recs, link_settings or LinkSettings())
    constructions, implicit = drawn or (None, None)
    _insert_edges(store, cid, facet_edges + frame_edges(frames, recs, facet_edges, embed, constructions, implicit))
    apply_validity(store, cid)


#: the kind of revision an evolution edge's justification names last ("… (found by construction: quit)")
_FOUND_BY = re.compile(r"\(found by (\w+)[^()]*\)$")


def _drawn_before(store: Store, cid: str, frames: list[FrameRec], recs: list[EventRec], new_ids: set[str],
                  embed: Embed | None) -> tuple[list[EdgeRec], list[EdgeRec]] | None:
    """The construction and implicit edges of all the frames, the earlier frames' read back from the store.

    Only when every new event was said after every earlier one (a new session: messages are numbered as they
    arrive); else None, and `relink` computes them all. An earlier frame's construction and implicit edges
    read nothing said after it, so the last relink drew them; it stored those that `frame_edges`' filters
    kept, and the filters drop what they dropped then in a full run too (they only ever drop more as edges
    are added). Both lists go through the filters again with the new frames' own, computed with every earlier
    event and frame in view (the key similarities from one embedding of all the frames, as in a full run).
    This is most of a relink's time on a long conversation; facet and anaphora edges are still computed in
    full (`tests/test_graph_incremental.py` builds conversations session by session and at once and compares
    their edges and validity).
    """
    new_orders = [r.order for r in recs if r.id in new_ids]
    old_seqs = [r.seq for r in recs if r.id not in new_ids]
    if not new_orders or not old_seqs or min(new_orders)[0] <= max(old_seqs):
        return None
    since = min(new_orders)
    stored: dict[str, list[EdgeRec]] = {"construction": [], "implicit": []}
    # in the order the last relink inserted them (SQLite's rowid), which is the order a full run draws them in;
    # the filters keep the same edges in any order, and a server's row version adds the id for a total order
    for src, dst, label, confidence, why in store.execute(
        "SELECT src, dst, label, confidence, justification FROM edges WHERE conversation_id = ? AND family = 'evolution' "
        f"ORDER BY {store.row_version}, id", (cid,)
    ):
        found = _FOUND_BY.search(why)
        if found and found.group(1) in stored:
            stored[found.group(1)].append(EdgeRec(src, dst, label, confidence, why))
    # the earlier frames stay in view (their value types, their messages) but draw nothing again
    constructions = construction_edges([f if f.ev.id in new_ids or not f.constructions else replace(f, constructions=[])
                                        for f in frames], recs)
    return stored["construction"] + constructions, stored["implicit"] + implicit_edges(frames, embed, since)


def _ledger_counts(store: Store) -> tuple[int, int, int]:
    row = store.execute(
        "SELECT COUNT(*), COALESCE(SUM(cache_hit), 0), COALESCE(SUM(fallback), 0) FROM llm_ledger WHERE stage = 'build-graph'"
    ).fetchone()
    return int(row[0]), int(row[1]), int(row[2])


def _summarise(store: Store, cid: str, result: BuildResult) -> None:
    result.events_total = store.execute("SELECT COUNT(*) FROM events WHERE conversation_id = ?", (cid,)).fetchone()[0]
    result.events_by_type = dict(
        store.execute("SELECT type, COUNT(*) FROM events WHERE conversation_id = ? GROUP BY type ORDER BY type", (cid,)).fetchall()
    )
    result.edges_by_label = dict(
        store.execute("SELECT label, COUNT(*) FROM edges WHERE conversation_id = ? GROUP BY label ORDER BY label", (cid,)).fetchall()
    )
    result.updates = result.edges_by_label.get("updates", 0)
    result.contradicts = result.edges_by_label.get("contradicts", 0)
    counts = Counter(
        r[0] for r in store.execute("SELECT validity FROM events WHERE conversation_id = ?", (cid,))
    )
    result.outdated_events = counts.get(0.0, 0)
    result.partial_events = counts.get(0.5, 0)
    result.topics = store.execute("SELECT COUNT(*) FROM topics WHERE conversation_id = ?", (cid,)).fetchone()[0]


def event_id_for(message_id: str, idx: int) -> str:
    """A stable event id (used by extractors that are not rule-based)."""
    return "ev_" + short_hash(message_id, idx, "llm")
