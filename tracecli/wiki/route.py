"""Query routing over the Memory Wiki (TrajWiki §3.3, App. A.5) for the `ask` stage.

`route_pages` ranks a conversation's pages twice — dense (cosine of the query
vector to the page embeddings in `wiki_vectors`) and sparse (FTS5 bm25 over
title, routing text and keywords in `wiki_fts`) — and fuses the two rankings
by reciprocal rank fusion, RRF(p) = 1/(c + r_dense) + 1/(c + r_sparse) with
c = 60. The index page is left out whenever other pages exist, so the
directory never crowds out the pages it points to. `active_claims_for_pages`
then expands the chosen pages into the current claims of their linked
trajectories.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import sqlite_vec

from tracecli.store.db import Store
from tracecli.text import fts_query

RRF_K = 60


def _dense_ranks(store: Store, conversation_id: str, query_vector: Sequence[float], n: int) -> dict[int, int]:
    if not store.has_table("wiki_vectors") or n <= 0:
        return {}
    rows = store.execute(
        "SELECT rowid, distance FROM wiki_vectors WHERE embedding MATCH ? AND k = ? AND conversation_id = ? "
        "ORDER BY distance",
        (sqlite_vec.serialize_float32([float(x) for x in query_vector]), min(n, 4096), conversation_id),
    ).fetchall()
    rows.sort(key=lambda r: (round(float(r[1]), 7), int(r[0])))  # vec0 allows only ORDER BY distance; ties by rowid
    return {int(r[0]): rank for rank, r in enumerate(rows, 1)}


def _sparse_ranks(store: Store, conversation_id: str, question: str) -> dict[int, int]:
    match = fts_query(question)
    if not match:
        return {}
    rows = store.execute(
        "SELECT rowid, bm25(wiki_fts) AS s FROM wiki_fts WHERE wiki_fts MATCH ? AND conversation_id = ? ORDER BY s, rowid",
        (match, conversation_id),
    ).fetchall()
    return {int(r[0]): rank for rank, r in enumerate(rows, 1)}


def route_pages(
    store: Store, conversation_id: str, question: str, query_vector: Sequence[float] | None, k: int = 15
) -> list[tuple[str, float]]:
    """The top-k pages for a question as (page_id, RRF score), best first (ties by page id)."""
    if not store.has_table("wiki_pages"):
        return []
    pages = {int(r[0]): (r[1], r[2]) for r in store.execute(
        "SELECT rowid, id, type FROM wiki_pages WHERE conversation_id = ?", (conversation_id,))}
    if not pages:
        return []
    allowed = {rid for rid, (_, t) in pages.items() if t != "index"} or set(pages)
    dense = _dense_ranks(store, conversation_id, query_vector, len(pages)) if query_vector is not None else {}
    sparse = _sparse_ranks(store, conversation_id, question)
    scores: dict[int, float] = {}
    for ranks in (dense, sparse):
        kept = [rid for rid in sorted(ranks, key=lambda r: ranks[r]) if rid in allowed]
        for rank, rid in enumerate(kept, 1):  # re-rank after dropping the index page
            scores[rid] = scores.get(rid, 0.0) + 1.0 / (RRF_K + rank)
    ranked = sorted(((pages[rid][0], round(s, 8)) for rid, s in scores.items()), key=lambda ps: (-ps[1], ps[0]))
    return ranked[:k]


def active_claims_for_pages(store: Store, page_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Current claims (status active, needs-confirmation or contradictory — never deprecated) of the pages' trajectories.

    Rows follow the order of `page_ids`, then claim order; each claim appears
    once, tagged with the first page that reached it. `source_message_ids` is a
    list; `source_refs` and `timestamp` come from the source messages.
    """
    if not page_ids:
        return []
    order = {pid: n for n, pid in enumerate(page_ids)}
    marks = ",".join("?" for _ in order)
    rows = store.query(
        "SELECT c.*, wpt.page_id AS page_id FROM wiki_page_trajectories wpt "
        "JOIN claims c ON c.trajectory_id = wpt.trajectory_id "
        f"WHERE wpt.page_id IN ({marks}) AND c.status != 'deprecated'",
        tuple(order),
    )
    rows.sort(key=lambda r: (order[r["page_id"]], r["idx"], r["id"]))
    seen: set[str] = set()
    out = []
    msg_ids = {m for r in rows for m in json.loads(r["source_message_ids"])}
    anchors: dict[str, tuple[str | None, str | None]] = {}
    if msg_ids:
        mm = ",".join("?" for _ in msg_ids)
        anchors = {r[0]: (r[1], r[2]) for r in store.execute(
            f"SELECT id, source_ref, timestamp FROM messages WHERE id IN ({mm})", tuple(msg_ids))}
    for r in rows:
        if r["id"] in seen:
            continue
        seen.add(r["id"])
        mids = json.loads(r["source_message_ids"])
        r["source_message_ids"] = mids
        r["source_refs"] = [anchors.get(m, (None, None))[0] or m for m in mids]
        r["timestamp"] = next((anchors[m][1] for m in mids if m in anchors), None)
        out.append(r)
    return out


__all__ = ["RRF_K", "active_claims_for_pages", "route_pages"]
