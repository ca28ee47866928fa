"""The read side of the Memory Wiki: query routing for `ask` (TrajWiki §3.3, App. A.5), pages for the CLI.

`route_pages` ranks a conversation's pages twice — dense (cosine of the query
vector to the page embeddings in `wiki_vectors`) and sparse (FTS5 bm25 over
title, routing text and keywords in `wiki_fts`) — and fuses the two rankings
by reciprocal rank fusion, RRF(p) = 1/(c + r_dense) + 1/(c + r_sparse) with
c = 60. The index page is left out whenever other pages exist, so the
directory never crowds out the pages it points to. `active_claims_for_pages`
then expands the chosen pages into the current claims of their linked
trajectories. `list_pages`, `get_page` and `export_pages` serve `tracecli wiki`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracecli.errors import BadInput, NotFound
from tracecli.scope import resolve_scope
from tracecli.store.db import Store, like_escape, placeholders
from tracecli.text import fts_query, short_hash

RRF_K = 60


def _dense_ranks(store: Store, conversation_id: str, query_vector: Sequence[float], n: int) -> dict[int, int]:
    if not store.has_table("wiki_vectors") or n <= 0:
        return {}
    rows = store.knn("wiki_vectors", [float(x) for x in query_vector], min(n, 4096), conversation_id)
    rows.sort(key=lambda r: (round(float(r[1]), 7), int(r[0])))  # vec0 allows only ORDER BY distance; ties by rowid
    return {int(r[0]): rank for rank, r in enumerate(rows, 1)}


def _sparse_ranks(store: Store, conversation_id: str, question: str) -> dict[int, int]:
    match = fts_query(question)
    if not match:
        return {}
    rows = store.fts_search("wiki_fts", match, where="f.conversation_id = ?", params=(conversation_id,))
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
    marks = placeholders(order)
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
        mm = placeholders(msg_ids)
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


@dataclass(frozen=True)
class ClaimRow:
    """A claim as `ask` reads it: its text, verbatim quote, sources and the span of time it held.

    `said_at` is when its first source message was written; `ended_at` when a later op (a REVISE that
    supersedes it, or a DEPRECATE) retired it, from that op's source message — None while it holds."""

    id: str
    conversation_id: str
    text: str
    status: str
    quote: str
    message_ids: tuple[str, ...]
    refs: tuple[str, ...]
    said_at: str | None
    ended_at: str | None
    trajectory_id: str | None
    predecessor_id: str | None
    event_id: str | None = None  # the graph event the claim was made from, when there is one
    subject: str = ""  # the participant the statement is about ('' for none)

    def holds_at(self, as_of: str | None) -> bool:
        """Valid now (never deprecated) or, given a date, said by then and not yet retired."""
        if as_of is None:
            return self.status != "deprecated"
        return (self.said_at is None or self.said_at <= as_of) and (self.ended_at is None or self.ended_at > as_of)


def load_claim_rows(store: Store, conversation_ids: Sequence[str]) -> dict[str, ClaimRow]:
    """Every claim of the conversations with its sources' refs and times and when it was retired (one read per scope)."""
    convs = list(conversation_ids)
    if not convs or not store.has_table("claims"):
        return {}
    cm = placeholders(convs)
    anchors = {r[0]: (r[1] or r[0], r[2]) for r in store.execute(
        f"SELECT id, source_ref, timestamp FROM messages WHERE conversation_id IN ({cm})", convs)}
    ended: dict[str, str] = {}
    for target, mids in store.execute(
            f"SELECT CASE op WHEN 'REVISE' THEN target_id ELSE claim_id END, source_message_ids FROM claim_ops "
            f"WHERE conversation_id IN ({cm}) AND (op = 'DEPRECATE' OR (op = 'REVISE' AND target_id IS NOT NULL))", convs):
        when = min((anchors[m][1] for m in json.loads(mids) if m in anchors and anchors[m][1]), default=None)
        if target and when and (target not in ended or when < ended[target]):
            ended[target] = when
    out: dict[str, ClaimRow] = {}
    for r in store.query(
            f"SELECT id, conversation_id, text, status, supporting_quote, source_message_ids, trajectory_id, "
            f"predecessor_id, event_id, subject FROM claims WHERE conversation_id IN ({cm}) ORDER BY conversation_id, idx", convs):
        mids = tuple(json.loads(r["source_message_ids"]))
        times = [anchors[m][1] for m in mids if m in anchors and anchors[m][1]]
        out[r["id"]] = ClaimRow(r["id"], r["conversation_id"], r["text"], r["status"], r["supporting_quote"], mids,
                                tuple(anchors.get(m, (m, None))[0] for m in mids), min(times, default=None),
                                ended.get(r["id"]), r["trajectory_id"], r["predecessor_id"], r["event_id"],
                                r["subject"] or "")
    return out


def page_trajectories(store: Store, conversation_ids: Sequence[str]) -> dict[str, list[str]]:
    """Page id → its trajectories, for the conversations' pages."""
    convs = list(conversation_ids)
    if not convs or not store.has_table("wiki_page_trajectories"):
        return {}
    out: dict[str, list[str]] = {}
    for pid, tid in store.execute(
            "SELECT wpt.page_id, wpt.trajectory_id FROM wiki_page_trajectories wpt JOIN wiki_pages p ON p.id = wpt.page_id "
            f"WHERE p.conversation_id IN ({placeholders(convs)}) ORDER BY wpt.page_id, wpt.trajectory_id", convs):
        out.setdefault(pid, []).append(tid)
    return out


def claims_for_refs(store: Store, refs: Sequence[str], conversation_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Claims (any status) citing the given messages (source refs like 'D1:3' or message ids), with their op history.

    `history` is a one-line summary ("ADD 2024-01-08 → REVISE 2024-03-12 by cl_…"),
    `ops` the ops themselves in log order; rows are ordered by conversation and claim order.
    """
    convs = list(conversation_ids)  # never widened: an empty scope reads nothing (namespaces stay apart)
    if not refs or not convs or not store.has_table("claims"):
        return []
    cm, rm = placeholders(convs), placeholders(refs)
    mids = [r[0] for r in store.execute(
        f"SELECT id FROM messages WHERE conversation_id IN ({cm}) AND (id IN ({rm}) OR source_ref IN ({rm})) ORDER BY seq",
        (*convs, *refs, *refs))]
    if not mids:
        return []
    hit = " OR ".join("c.source_message_ids LIKE ? ESCAPE '\\'" for _ in mids)
    rows = store.query(
        f"SELECT c.* FROM claims c WHERE c.conversation_id IN ({cm}) AND ({hit}) ORDER BY c.conversation_id, c.idx",
        (*convs, *[f'%"{like_escape(m)}"%' for m in mids]),
    )
    for r in rows:
        ops = store.query(
            "SELECT o.n, o.op, o.claim_id, o.target_id, o.status, o.reason, m.timestamp FROM claim_ops o "
            f"LEFT JOIN messages m ON m.id = {store.json_first('o.source_message_ids')} "
            "WHERE o.conversation_id = ? AND (o.claim_id = ? OR o.target_id = ?) ORDER BY o.n",
            (r["conversation_id"], r["id"], r["id"]),
        )
        steps = []
        for o in ops:
            when = (o["timestamp"] or "")[:10]
            if o["op"] == "REVISE" and o["target_id"] == r["id"]:
                steps.append(f"revised {when} by {o['claim_id']}")
            elif o["op"] == "DEPRECATE":
                steps.append(f"DEPRECATE {when}")
            else:
                steps.append(f"{o['op']} {when}" + (f" of {o['target_id']}" if o["target_id"] else ""))
        r["source_message_ids"] = json.loads(r["source_message_ids"])
        r["ops"] = ops
        r["history"] = " → ".join(steps)
    return rows


# -- reading pages -------------------------------------------------------------------------------


@dataclass
class PageInfo:
    """A page as `wiki list` / `wiki show` report it."""

    id: str
    conversation_id: str
    slug: str
    type: str
    title: str
    trajectories: list[str]
    links: list[str]
    rescue: bool
    origin: str
    updated_at: str
    markdown: str = ""


def _page_rows(store: Store, where: str, params: Sequence[Any]) -> list[PageInfo]:
    rows = store.query(f"SELECT * FROM wiki_pages {where} ORDER BY conversation_id, "
                       "CASE type WHEN 'index' THEN 0 WHEN 'entity' THEN 1 WHEN 'inventory' THEN 2 ELSE 3 END, rowid", params)
    links = {}
    for pid, tid in store.execute("SELECT page_id, trajectory_id FROM wiki_page_trajectories ORDER BY page_id, trajectory_id"):
        links.setdefault(pid, []).append(tid)
    return [PageInfo(r["id"], r["conversation_id"], r["slug"], r["type"], r["title"], links.get(r["id"], []),
                     json.loads(r["links"]), bool(r["rescue"]), r["origin"], r["updated_at"], r["markdown"]) for r in rows]


def list_pages(store: Store, conversation_id: str | None = None, page_type: str | None = None,
               namespace: str | None = None) -> list[PageInfo]:
    """Pages of one conversation or all of a namespace's (index first, then entity, inventory, topic)."""
    if page_type is not None:
        from tracecli.wiki.pages import PAGE_TYPES  # pages.py imports numpy: keep `wiki list` light

        if page_type not in PAGE_TYPES:
            raise BadInput(f"unknown page type '{page_type}'; choose one of {', '.join(PAGE_TYPES)}")
    cids = resolve_scope(store, namespace, conversation_id).conversation_ids
    clauses: list[str] = [f"conversation_id IN ({placeholders(cids)})"]
    params: list[Any] = list(cids)
    if page_type:
        clauses.append("type = ?")
        params.append(page_type)
    return _page_rows(store, "WHERE " + " AND ".join(clauses), params)


def get_page(store: Store, slug: str, conversation_id: str | None = None, namespace: str | None = None) -> PageInfo:
    """One page by slug (or page id) in one conversation or a namespace; NotFound / BadInput when missing or ambiguous."""
    scope = resolve_scope(store, namespace, conversation_id)
    cids = scope.conversation_ids
    where = f"WHERE (slug = ? OR id = ?) AND conversation_id IN ({placeholders(cids)})"
    pages = _page_rows(store, where, [slug, slug, *cids])
    if not pages:
        raise NotFound(f"no wiki page '{slug}' in namespace '{scope.namespace}' of {store.path.name}; "
                       "see `tracecli wiki list` (or run `tracecli compile-wiki`)")
    if len(pages) > 1:
        raise BadInput(f"page '{slug}' exists in several conversations ({', '.join(p.conversation_id for p in pages)}); "
                       "pass --conversation")
    return pages[0]


def export_pages(store: Store, directory: str | Path, conversation_id: str | None = None,
                 namespace: str | None = None) -> list[tuple[str, str, Path]]:
    """Write the wiki (one conversation or a namespace) as an Obsidian vault: DIR/<folder>/<slug>.md per page and
    DIR/<folder>/claims/<claim id>.md per claim, with YAML front matter and `[[links]]` (see `wiki.obsidian`).

    Each conversation gets its own folder (`export_folders`), so no page overwrites another's. Nothing is
    written through a symbolic link inside DIR: a folder or file there that is a link is refused before
    any page is written; a DIR that is a file or cannot be written is BadInput. Returns (conversation,
    name, path) for every file written, pages first; a claim's name is `claims/<claim id>`.
    """
    from tracecli.wiki.obsidian import vault_files

    pages = list_pages(store, conversation_id, namespace=namespace)
    if not pages:
        raise NotFound(f"{store.path.name} has no wiki pages; run `tracecli compile-wiki` first")
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise BadInput(f"{root} exists and is not a directory")
    folders = export_folders([p.conversation_id for p in pages])
    unsafe = next((p.slug for p in pages if not _SAFE_SLUG.fullmatch(p.slug)), None)
    if unsafe is not None:  # compile-wiki writes only slugified names; a changed file could hold others
        raise BadInput(f"page slug {unsafe!r} is not a safe file name; run `tracecli compile-wiki` again (nothing was written)")
    vault = vault_files(store, pages)
    targets = [(cid, rel, text, root / folders[cid] / rel) for cid, files in vault.items() for rel, text in files]
    targets.sort(key=lambda t: (t[0], t[1].startswith("claims/"), t[1]))
    paths = [t[3] for t in targets]
    if len(set(paths)) != len(paths):  # slugs are unique per conversation; this guards the promise
        raise BadInput(f"{root}: two pages would share one file name; nothing was written")
    for _, rel, _, path in targets:
        for place in ([path.parent.parent] if rel.startswith("claims/") else []) + [path.parent, path]:
            if place.is_symlink():
                raise BadInput(f"{place} is a symbolic link; tracecli writes no page through a link (nothing was written)")
        if path.exists() and not path.is_file():
            raise BadInput(f"{path} exists and is not a file (nothing was written)")
    out = []
    for cid, rel, text, path in targets:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInput(f"cannot write to {root}: {exc.strerror or exc}") from None
        _write_no_follow(path, text)
        out.append((cid, rel[:-3], path))
    return out


_SAFE_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,80}")


def export_folders(conversation_ids: Sequence[str]) -> dict[str, str]:
    """A folder name per conversation: its id made file-name-safe, plus a stable suffix when that changed
    the id or two ids would otherwise share a folder (`a/b` and `a_b`, `Ana` and `ana` on a
    case-insensitive file system)."""
    ids = sorted(set(conversation_ids))
    safe = {c: re.sub(r"[^\w.\-]+", "_", c).strip("._")[:80] or "conversation" for c in ids}
    taken: dict[str, int] = {}
    for c in ids:
        taken[safe[c].casefold()] = taken.get(safe[c].casefold(), 0) + 1
    return {c: safe[c] if safe[c] == c and taken[safe[c].casefold()] == 1 else f"{safe[c]}-{short_hash(c, length=8)}"
            for c in ids}


def _write_no_follow(path: Path, text: str) -> None:
    """Write `path` (created or truncated) without following a symbolic link planted there meanwhile."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


__all__ = ["RRF_K", "PageInfo", "active_claims_for_pages", "claims_for_refs", "export_folders", "export_pages", "get_page",
           "list_pages",
           "route_pages"]
