"""compile-wiki: snapshots → claims → trajectories → lifecycle → Memory Wiki, incrementally.

Sessions are compiled in order, once each, after build-graph has built them
(`wiki_sessions` records which). Each exchange becomes an immutable snapshot;
its claims are matched into a trajectory and their ops appended. Because the
evidence graph only ever adds edges from newer events to older ones, and the
trajectory state after session k depends only on sessions 1..k, compiling
half a conversation and then the rest ends in the same claims, ops and pages
as compiling it in one go. Pages are then re-planned from the whole state and
only those whose content hash changed are rewritten and re-embedded.

Embeddings are computed one batch per session, so a batch holds the same
texts whether the session is compiled in a full or an incremental run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tracecli.errors import BadInput, ModelMismatch
from tracecli.graph.build import conversation_ids
from tracecli.scope import llm_scope, scope_of
from tracecli.store.db import Store, dumps, utc_now
from tracecli.wiki.claims import (
    EventRow,
    Extraction,
    MessageRow,
    extract_offline,
    load_events,
    load_messages,
    snapshot_id,
    split_exchanges,
)
from tracecli.wiki.lifecycle import Lifecycle
from tracecli.wiki.llm_claims import extract_with_llm
from tracecli.wiki.pages import PageSettings, PagesResult, compile_pages
from tracecli.wiki.trajectories import (
    MatchSettings,
    TrajectoryState,
    append_snapshot,
    decide,
    linked_trajectories,
    load_trajectories,
    new_trajectory,
    save_trajectory,
    snapshot_features,
)

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel

ProgressFn = Callable[[int, int], None]
STAGE = "compile-wiki"


@dataclass(frozen=True)
class WikiSettings:
    """Configuration of compile-wiki: trajectory matching, page planning, exchange size."""

    match: MatchSettings = field(default_factory=MatchSettings)
    pages: PageSettings = field(default_factory=PageSettings)
    exchange_max_messages: int = 6


@dataclass
class CompileResult:
    """What one compile-wiki run did to one conversation."""

    conversation_id: str
    mode: str = "rules"
    sessions_compiled: int = 0
    sessions_total: int = 0
    sessions_awaiting_graph: int = 0
    snapshots_new: int = 0
    snapshots_total: int = 0
    claims_new: int = 0
    claims_total: int = 0
    claims_by_status: dict[str, int] = field(default_factory=dict)
    ungrounded_dropped: int = 0
    reaffirmed: int = 0
    ops_new: dict[str, int] = field(default_factory=dict)
    ops_total: int = 0
    revisions: int = 0
    deprecations: int = 0
    trajectories_new: int = 0
    trajectories_total: int = 0
    pages_total: int = 0
    pages_by_type: dict[str, int] = field(default_factory=dict)
    pages_written: int = 0
    pages_unchanged: int = 0
    pages_removed: int = 0
    rescue_pages: int = 0
    index_only_trajectories: int = 0
    llm_calls: int = 0
    llm_cache_hits: int = 0
    llm_fallbacks: int = 0
    elapsed_s: float = 0.0


def _embedder_for(store: Store, embedder: Embedder | None) -> Embedder:
    from tracecli.providers.embeddings import get_embedder

    emb = embedder or get_embedder()
    bound = store.embedding_model()
    if bound is not None and bound[0] != emb.id:
        raise ModelMismatch(
            f"{store.path.name} holds vectors of {bound[0]} ({bound[1]}-d); compile-wiki was given {emb.id}. "
            "Use the embedder the file was ingested with (TRACECLI_EMBEDDER)."
        )
    return emb


def _check_graph(store: Store, ids: Sequence[str]) -> None:
    missing = [
        cid for cid in ids
        if store.execute("SELECT 1 FROM graph_sessions WHERE conversation_id = ? LIMIT 1", (cid,)).fetchone() is None
    ]
    if missing:
        names = ", ".join(f"'{c}'" for c in missing)
        raise BadInput(
            f"conversation {names} has no evidence graph in {store.path.name}; run `tracecli build-graph` first"
        )


def compile_wiki(
    store: Store,
    conversation_id: str | None = None,
    *,
    llm: ChatModel | None = None,
    settings: WikiSettings | None = None,
    progress: ProgressFn | None = None,
    embedder: Embedder | None = None,
    namespace: str | None = None,
) -> list[CompileResult]:
    """Compile (or extend) the Memory Wiki of one conversation or all of a namespace's (see `tracecli.scope`)."""
    settings = settings or WikiSettings()
    ids = conversation_ids(store, conversation_id, namespace)
    _check_graph(store, ids)
    emb = _embedder_for(store, embedder)
    use = llm if llm is not None and getattr(llm, "is_available", False) else None
    results = []
    for cid in ids:
        with llm_scope(use, scope_of(store, [cid])):  # the prompts carry this conversation's text only
            results.append(_compile_one(store, cid, emb, use, settings, progress))
    return results


def _ledger(store: Store) -> tuple[int, int, int]:
    row = store.execute(
        "SELECT COUNT(*), COALESCE(SUM(cache_hit), 0), COALESCE(SUM(fallback), 0) FROM llm_ledger WHERE stage = ?",
        (STAGE,),
    ).fetchone()
    return int(row[0]), int(row[1]), int(row[2])


def _edges(store: Store, cid: str) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for src, dst, label in store.execute(
        "SELECT src, dst, label FROM edges WHERE conversation_id = ? AND label IN ('updates', 'contradicts') "
        "ORDER BY src, dst, label",
        (cid,),
    ):
        out.setdefault(src, []).append((dst, label))
    return out


def _describe(store: Store) -> Callable[[str], tuple[str, str]]:
    """For the LLM matcher: a trajectory's current claims, and its newest snapshot's claims."""

    def describe(tid: str) -> tuple[str, str]:
        rows = store.execute(
            "SELECT text FROM claims WHERE trajectory_id = ? AND status != 'deprecated' ORDER BY idx LIMIT 14", (tid,)
        ).fetchall()
        latest = store.execute(
            "SELECT c.text FROM claims c JOIN trajectories t ON t.latest_snapshot_id = c.snapshot_id "
            "WHERE t.id = ? ORDER BY c.idx LIMIT 6",
            (tid,),
        ).fetchall()
        return " ".join(r[0] for r in rows), " ".join(r[0] for r in latest)

    return describe


def _compile_one(store: Store, cid: str, emb: Embedder, llm: ChatModel | None, settings: WikiSettings,
                 progress: ProgressFn | None) -> CompileResult:
    started = time.perf_counter()
    result = CompileResult(conversation_id=cid, mode="llm" if llm is not None else "rules")
    before = _ledger(store)
    participants = json.loads(store.execute("SELECT participants FROM conversations WHERE id = ?", (cid,)).fetchone()[0])
    with store.transaction():
        sessions = [r[0] for r in store.execute("SELECT id FROM sessions WHERE conversation_id = ? ORDER BY idx", (cid,))]
        built = {r[0] for r in store.execute("SELECT session_id FROM graph_sessions WHERE conversation_id = ?", (cid,))}
        done = {r[0] for r in store.execute("SELECT session_id FROM wiki_sessions WHERE conversation_id = ?", (cid,))}
        pending = [s for s in sessions if s not in done]
        # Sessions are compiled in order: stop at the first one the graph does not have yet.
        ready: list[str] = []
        for s in pending:
            if s not in built:
                break
            ready.append(s)
        result.sessions_total = len(sessions)
        result.sessions_awaiting_graph = len(pending) - len(ready)
        trajectories = load_trajectories(store, cid)
        by_id = {t.id: t for t in trajectories}
        life = Lifecycle(store, cid, llm)
        edges = _edges(store, cid)
        snap_idx = store.execute("SELECT COALESCE(MAX(idx), -1) + 1 FROM snapshots WHERE conversation_id = ?", (cid,)).fetchone()[0]
        describe = _describe(store)
        new_traj = 0
        n = 0
        for group in _embedding_groups(store, ready, participants, emb, llm, settings):
            for sid, events, exchanges, extractions, vecs in group:
                vectors = iter(vecs)
                for ex, extraction in zip(exchanges, extractions):
                    vec = next(vectors) if extraction.drafts else None
                    created = _snapshot(store, cid, sid, snap_idx, ex, extraction, vec, events, edges, trajectories,
                                        by_id, life, participants, settings, llm, describe, result)
                    snap_idx += 1
                    new_traj += created
                store.execute(
                    "INSERT INTO wiki_sessions(session_id, conversation_id, compiled_at) VALUES (?,?,?)", (sid, cid, utc_now())
                )
                result.sessions_compiled += 1
                n += 1
                if progress:
                    progress(n, len(ready))
        result.trajectories_new = new_traj
        result.claims_new = life.counts.claims_new
        result.reaffirmed = life.counts.reaffirmed
        result.ops_new = dict(sorted(life.counts.ops.items()))
        pages = compile_pages(store, cid, emb, llm, settings.pages)
    _summarise(store, cid, result, pages)
    after = _ledger(store)
    result.llm_calls, result.llm_cache_hits, result.llm_fallbacks = (a - b for a, b in zip(after, before))
    result.elapsed_s = round(time.perf_counter() - started, 3)
    return result


#: snapshot texts embedded in one go: sessions are read and their claims extracted ahead until their texts
#: reach this many, so the embedder's helper process shares the work of several sessions (one session's
#: few texts are one forward pass); small enough that progress still moves
SNAPSHOT_TEXTS_AHEAD = 256


def _embedding_groups(store: Store, ready: Sequence[str], participants: Sequence[str], emb: Embedder,
                      llm: ChatModel | None, settings: WikiSettings) -> Iterator[list[tuple[Any, ...]]]:
    """The ready sessions in order, in groups, each session as (id, events, exchanges, extractions, vectors).

    A session's snapshot vectors are its own `embed_batch` call's (`embed_each` keeps each session's batch
    apart), so they do not depend on how sessions are grouped: compiling one session at a time gives the
    same bits. Extraction reads only the session's messages and graph events, never the wiki being written,
    so reading a few sessions ahead changes nothing.
    """
    from tracecli.providers.embeddings import embed_each

    group: list[list[Any]] = []
    texts = 0
    for i, sid in enumerate(ready):
        events = load_events(store, sid)
        exchanges = split_exchanges(load_messages(store, sid), settings.exchange_max_messages)
        extractions = extract_offline(exchanges, events, participants)
        if llm is not None:
            extractions = extract_with_llm(llm, exchanges, events, participants, extractions, STAGE)
        batch = [" ".join(d.text for d in x.drafts) for x in extractions if x.drafts]
        group.append([sid, events, exchanges, extractions, batch])
        texts += len(batch)
        if texts >= SNAPSHOT_TEXTS_AHEAD or i == len(ready) - 1:
            batches = [g[4] for g in group if g[4]]
            vectors = iter(embed_each(emb, batches) if batches else [])
            yield [(*g[:4], next(vectors) if g[4] else []) for g in group]
            group, texts = [], 0


def _snapshot(
    store: Store, cid: str, session_id: str, idx: int, exchange: Sequence[MessageRow], extraction: Extraction,
    vector: np.ndarray | None, events_by_seq: Mapping[int, Sequence[EventRow]],
    edges: Mapping[str, Sequence[tuple[str, str]]], trajectories: list[TrajectoryState],
    by_id: dict[str, TrajectoryState], life: Lifecycle, participants: Sequence[str], settings: WikiSettings,
    llm: ChatModel | None, describe: Callable[[str], tuple[str, str]], result: CompileResult,
) -> int:
    """Store one exchange as a snapshot, file it into a trajectory, apply its claims. Returns 1 if it opened a trajectory."""
    sid = snapshot_id(cid, exchange)
    drafts = extraction.drafts
    result.ungrounded_dropped += extraction.ungrounded
    features = snapshot_features(exchange, drafts, participants)
    events = [ev for m in exchange for ev in events_by_seq.get(m.seq, [])]
    when = exchange[-1].timestamp
    tid: str | None = None
    position: int | None = None
    score: float | None = None
    reason = "no claims: not filed into a trajectory"
    opened = 0
    if drafts and vector is not None:
        linked = linked_trajectories(events, edges, life.trajectory_of_event())
        decision = decide(features, vector, trajectories, settings.match, linked, llm, describe,
                          " ".join(d.text for d in drafts))
        if decision.trajectory_id is None:
            t = new_trajectory(cid, len(trajectories), sid, features, vector, when)
            trajectories.append(t)
            by_id[t.id] = t
            opened = 1
        else:
            t = by_id[decision.trajectory_id]
            append_snapshot(t, sid, features, vector, when)
        save_trajectory(store, cid, t)
        tid, position, score, reason = t.id, t.n_snapshots - 1, decision.score, decision.reason
    store.execute(
        "INSERT INTO snapshots(id, conversation_id, session_id, idx, trajectory_id, position, message_ids, first_seq, "
        "last_seq, timestamp, text, keywords, entities, terms, facets, vector, match_score, match_reason, created_at) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            sid, cid, session_id, idx, tid, position, dumps([m.id for m in exchange]), exchange[0].seq, exchange[-1].seq,
            when, "\n".join(f"{m.speaker}: {m.text}" for m in exchange), dumps(features.keywords),
            dumps(features.entities), dumps(features.terms), dumps(features.facets),
            vector.astype(np.float32).tobytes() if vector is not None else None, score, reason, utc_now(),
        ),
    )
    result.snapshots_new += 1
    life.apply(sid, tid, drafts, events, edges, {m.id: m for m in exchange})
    return opened


def _summarise(store: Store, cid: str, result: CompileResult, pages: PagesResult) -> None:
    one = lambda sql: store.execute(sql, (cid,)).fetchone()[0]  # noqa: E731
    result.snapshots_total = one("SELECT COUNT(*) FROM snapshots WHERE conversation_id = ?")
    result.claims_total = one("SELECT COUNT(*) FROM claims WHERE conversation_id = ?")
    result.claims_by_status = dict(
        store.execute("SELECT status, COUNT(*) FROM claims WHERE conversation_id = ? GROUP BY status ORDER BY status", (cid,)).fetchall()
    )
    result.ops_total = one("SELECT COUNT(*) FROM claim_ops WHERE conversation_id = ?")
    result.revisions = one("SELECT COUNT(*) FROM claim_ops WHERE conversation_id = ? AND op = 'REVISE'")
    result.deprecations = one("SELECT COUNT(*) FROM claim_ops WHERE conversation_id = ? AND op = 'DEPRECATE'")
    result.trajectories_total = one("SELECT COUNT(*) FROM trajectories WHERE conversation_id = ?")
    result.pages_total = pages.total
    result.pages_by_type = pages.by_type
    result.pages_written = pages.written
    result.pages_unchanged = pages.unchanged
    result.pages_removed = pages.removed
    result.rescue_pages = pages.rescue
    result.index_only_trajectories = pages.index_only
