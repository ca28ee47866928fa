"""forget: delete messages and everything derived from them, and prove it with a receipt.

A target (messages, a session, a conversation, a speaker's messages, a whole
namespace) resolves to a set of message ids. Per conversation the cascade is:

* the messages, their notes, FTS rows and vectors;
* events whose quote came from a forgotten message (an event that also rests
  on a kept message keeps only that source; one whose quote is no longer in
  any kept source goes), and every edge touching a removed event;
* sessions and topics left empty; the topics' centroids and labels recomputed
  from what is left;
* `updates` / `contradicts` edges and validity recomputed over the remaining
  events (`tracecli.graph.build.relink`): when the newer value is forgotten,
  the older fact is current again;
* the conversation's claims, op log, snapshots, trajectories and pages, which
  are compiled again from the remaining graph (claims are immutable, so a
  claim citing forgotten text cannot be edited, only erased and re-derived);
* stored answers that cite or quote forgotten messages, and LLM cache entries
  built from the conversation (or untagged ones, which cannot be ruled out).

A conversation that loses every message is removed whole. Everything runs in
one transaction; `dry_run` rolls it back and reports what would go. After a
real run, the FTS indexes are optimised and the file is VACUUMed and its WAL
truncated, so the forgotten bytes leave the file, not just the tables.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pysqlite3.dbapi2 as sqlite3

from tracecli.errors import BadInput, NotFound
from tracecli.scope import check_namespace, message_refs, namespace_of, namespaces, resolve_scope
from tracecli.store.db import Store, dumps, execute_in, placeholders, utc_now
from tracecli.text import short_hash

KINDS = ("message", "session", "conversation", "speaker", "namespace")

# Tables counted for the receipt, in cascade order (virtual tables count through their rows).
COUNTED = (
    "conversations", "sessions", "messages", "notes", "notes_fts", "note_vectors",
    "events", "event_notes", "event_vectors", "edges", "topics", "session_topics", "graph_sessions",
    "snapshots", "trajectories", "claims", "claim_ops", "snapshot_claims", "wiki_sessions",
    "wiki_pages", "wiki_page_trajectories", "wiki_fts", "wiki_vectors",
    "answers", "answer_items", "llm_cache",
)
WIKI_TABLES = ("snapshot_claims", "claim_ops", "claims", "snapshots", "trajectories", "wiki_sessions")


@dataclass
class TableCount:
    """Rows one table lost, and rows it gained when derived layers were rebuilt."""

    table: str
    removed: int
    added: int = 0


@dataclass
class ForgetReceipt:
    """What `tracecli forget` did (or, with --dry-run, would do)."""

    id: str
    kind: str
    targets: list[str]
    namespace: str | None
    dry_run: bool
    conversation_ids: list[str]
    conversations_removed: list[str]
    message_ids: list[str]
    sessions_removed: list[str]
    counts: list[TableCount]
    wiki_recompiled: list[str] = field(default_factory=list)  # conversations whose wiki is (or would be) compiled again
    vacuumed: bool = False
    storage: str = ""  # what the engine promises about the deleted rows' bytes (freed pages, WAL, backups)
    created_at: str = ""
    elapsed_s: float = 0.0
    warnings: list[str] = field(default_factory=list)  # what could not be done after the forget was committed

    @property
    def total_removed(self) -> int:
        return sum(c.removed for c in self.counts)


class _DryRun(Exception):
    """Raised inside the transaction to roll a dry run back."""


# -- resolving a target -------------------------------------------------------------------
def _conversations_in(store: Store, namespace: str | None, conversation_id: str | None) -> list[str]:
    """Where a target is looked up: one namespace (as every command reads), or every one when namespace is None."""
    if namespace is not None:
        return list(resolve_scope(store, namespace, conversation_id).conversation_ids)
    if conversation_id:
        if namespace_of(store, conversation_id) is None:
            raise NotFound(f"no conversation '{conversation_id}' in {store.path.name}")
        return [conversation_id]
    return [r[0] for r in store.execute("SELECT id FROM conversations ORDER BY id")]


def resolve_messages(store: Store, kind: str, targets: Sequence[str], *, namespace: str | None = None,
                     conversation_id: str | None = None) -> list[str]:
    """The ids of the messages a target names, or NotFound / BadInput saying why none match."""
    if kind not in KINDS:
        raise BadInput(f"unknown thing to forget '{kind}'; choose one of {', '.join(KINDS)}")
    if not targets:
        raise BadInput(f"name the {kind} to forget")
    if kind == "namespace":
        known = set(namespaces(store))
        targets = [check_namespace(ns, "namespace") for ns in targets]
        for ns in targets:
            if ns not in known:
                raise NotFound(f"no namespace '{ns}' in {store.path.name}")
        rows = store.execute(
            f"SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conversation_id "
            f"WHERE c.namespace IN ({placeholders(targets)}) ORDER BY m.conversation_id, m.seq", list(targets))
        return [r[0] for r in rows]
    scope = _conversations_in(store, namespace, conversation_id)
    if kind == "conversation":
        missing = [t for t in targets if t not in scope]
        if missing:
            raise NotFound(f"no conversation '{missing[0]}' in {_where(store, namespace, None)}")
        scope = list(targets)
        return [r[0] for c in scope for r in store.execute(
            "SELECT id FROM messages WHERE conversation_id = ? ORDER BY seq", (c,))]
    out: list[str] = []
    for target in targets:
        ids = _match(store, kind, target, scope)
        if not ids:
            raise NotFound(f"no {kind} '{target}' in {_where(store, namespace, conversation_id)}")
        out.extend(ids)
    return list(dict.fromkeys(out))


def _where(store: Store, namespace: str | None, conversation_id: str | None) -> str:
    if conversation_id:
        return f"conversation '{conversation_id}'"
    return f"namespace '{namespace}'" if namespace is not None else store.path.name


def _match(store: Store, kind: str, target: str, scope: list[str]) -> list[str]:
    if not scope:
        return []
    conv, _, local = target.partition(":") if ":" in target and target.split(":", 1)[0] in scope else ("", "", target)
    cids = [conv] if conv else scope
    marks = placeholders(cids)
    if kind == "speaker":
        rows = store.execute(
            f"SELECT id FROM messages WHERE conversation_id IN ({marks}) AND lower(speaker) = lower(?) "
            "ORDER BY conversation_id, seq", [*cids, local]).fetchall()
        return [r[0] for r in rows]
    if kind == "session":
        sessions = store.execute(
            f"SELECT id, conversation_id FROM sessions WHERE conversation_id IN ({marks}) AND (id = ? OR source_id = ?) "
            "ORDER BY conversation_id, idx", [*cids, local, local]).fetchall()
        _one(kind, target, sessions)
        return [r[0] for r in store.execute("SELECT id FROM messages WHERE session_id = ? ORDER BY seq", (sessions[0][0],))] if sessions else []
    rows = store.execute(
        f"SELECT id, conversation_id FROM messages WHERE conversation_id IN ({marks}) AND (id = ? OR source_ref = ?) "
        "ORDER BY conversation_id, seq", [*cids, local, local]).fetchall()
    _one(kind, target, rows)
    # every message the ref names: files ingested before duplicate ids were refused may hold two
    return [r[0] for r in rows]


def _one(kind: str, target: str, rows: Sequence[Sequence[Any]]) -> None:
    convs = sorted({r[1] for r in rows})
    if len(convs) > 1:
        raise BadInput(
            f"{kind} '{target}' exists in several conversations ({', '.join(convs)}); "
            f"pass --conversation or write it as CONVERSATION:{target}")


# -- the cascade --------------------------------------------------------------------------
def _table_counts(store: Store) -> dict[str, int]:
    return {t: int(store.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in COUNTED if store.has_table(t)}


def forget(store: Store, kind: str, targets: Sequence[str], *, namespace: str | None = None,
           conversation_id: str | None = None, dry_run: bool = False, vacuum: bool = True,
           recompile: Callable[[Store, list[str]], None] | None = None) -> ForgetReceipt:
    """Forget what `kind`/`targets` name and everything derived from it; return the receipt.

    `recompile(store, conversation_ids)` rebuilds the wiki of conversations that
    keep some messages (the CLI passes compile-wiki with the configured
    embedder); without it their wiki layers are erased and left for the next
    `tracecli compile-wiki`.
    """
    started = time.perf_counter()
    message_ids = resolve_messages(store, kind, targets, namespace=namespace, conversation_id=conversation_id)
    if not message_ids:
        raise NotFound(f"nothing to forget: {kind} {', '.join(targets)} holds no messages")
    receipt = ForgetReceipt(
        id="fg_" + short_hash(kind, *targets, utc_now(), time.perf_counter_ns()), kind=kind, targets=list(targets),
        namespace=namespace, dry_run=dry_run, conversation_ids=[], conversations_removed=[],
        message_ids=message_ids, sessions_removed=[], counts=[], created_at=utc_now(),
    )
    before = _table_counts(store)
    try:
        with store.transaction():
            store.set_meta("erasing", receipt.id)
            _cascade(store, message_ids, receipt, keep_pages=recompile is not None and not dry_run)
            store.execute("DELETE FROM meta WHERE key = 'erasing'")
            erased = _table_counts(store)
            if receipt.wiki_recompiled and recompile is not None and not dry_run:
                recompile(store, receipt.wiki_recompiled)
            receipt.counts = _diff(before, erased, _table_counts(store))
            if dry_run:
                raise _DryRun
            store.execute(
                "INSERT INTO forget_log(id, target_kind, target, namespace, conversation_ids, message_ids, counts, created_at) "
                "VALUES (?,?,?,?,?,?,?,?)",
                (receipt.id, kind, dumps(list(targets)), namespace, dumps(receipt.conversation_ids),
                 dumps(message_ids), dumps({c.table: [c.removed, c.added] for c in receipt.counts}), receipt.created_at),
            )
    except _DryRun:
        pass
    if not dry_run:
        touched = [c.table for c in receipt.counts if c.removed]
        if receipt.wiki_recompiled and recompile is not None:
            # a recompiled page replaced its full-text row in place: the old row's text stays in the index's
            # segments until they are merged, so the page index is merged as if it had lost rows
            touched.append("wiki_fts")
        receipt.vacuumed, receipt.storage = _scrub(store, vacuum, receipt.warnings, touched)
    receipt.elapsed_s = round(time.perf_counter() - started, 3)
    return receipt


def _diff(before: dict[str, int], erased: dict[str, int], after: dict[str, int]) -> list[TableCount]:
    """Rows removed by the cascade, and rows added back by re-deriving the wiki."""
    return [
        TableCount(table, removed=max(before.get(table, 0) - erased.get(table, 0), 0),
                   added=max(after.get(table, 0) - erased.get(table, 0), 0))
        for table in COUNTED if table in before
    ]


def _cascade(store: Store, message_ids: list[str], receipt: ForgetReceipt, keep_pages: bool) -> None:
    by_conv: dict[str, list[str]] = {}
    for mid, cid in execute_in(store, "SELECT id, conversation_id FROM messages WHERE id IN ({marks})", message_ids):
        by_conv.setdefault(cid, []).append(mid)
    receipt.conversation_ids = sorted(by_conv)
    for cid in receipt.conversation_ids:
        total = store.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (cid,)).fetchone()[0]
        gone = by_conv[cid]
        _drop_answers(store, cid, gone, _texts(store, gone))
        _drop_llm_cache(store, cid)
        if len(gone) >= total:
            receipt.sessions_removed.extend(r[0] for r in store.execute("SELECT id FROM sessions WHERE conversation_id = ? ORDER BY idx", (cid,)))
            _drop_conversation(store, cid)
            receipt.conversations_removed.append(cid)
            continue
        # claims are immutable: the wiki is erased and compiled again from what is left
        if _drop_wiki(store, cid, keep_pages=keep_pages):
            receipt.wiki_recompiled.append(cid)
        receipt.sessions_removed.extend(_drop_messages(store, cid, gone))


def _texts(store: Store, message_ids: Sequence[str]) -> list[str]:
    rows = execute_in(store, "SELECT text FROM messages WHERE id IN ({marks})", message_ids)
    return [r[0] for r in rows if r[0].strip()]


def _drop_answers(store: Store, cid: str, message_ids: Sequence[str], texts: Sequence[str]) -> None:
    """Stored answers in scope of `cid` that cite a forgotten message or carry its text."""
    refs = message_refs(store, cid, message_ids)
    doomed = []
    for aid, scope, payload in store.execute("SELECT id, conversation_id, payload FROM answers ORDER BY id").fetchall():
        if cid not in (scope or "").split(","):
            continue
        cited = set(json.loads(payload).get("source_refs", []))
        items = {x for (row,) in store.execute("SELECT source_refs FROM answer_items WHERE answer_id = ?", (aid,))
                 for x in json.loads(row)}
        if (cited | items) & refs or any(t in payload for t in texts):
            doomed.append(aid)
    for aid in doomed:
        store.execute("DELETE FROM answers WHERE id = ?", (aid,))  # answer_items cascade


def _drop_llm_cache(store: Store, cid: str) -> None:
    """Replies whose prompts may have carried the conversation's text (untagged rows cannot be ruled out)."""
    store.execute(
        "DELETE FROM llm_cache WHERE conversation_ids = '[]' OR EXISTS "
        f"(SELECT 1 FROM {store.json_each('llm_cache.conversation_ids', 'j')} WHERE j.value = ?)", (cid,))


def _drop_note_rows(store: Store, rowids: Sequence[int]) -> None:
    execute_in(store, "DELETE FROM notes_fts WHERE rowid IN ({marks})", rowids)
    if store.has_table("note_vectors"):
        execute_in(store, "DELETE FROM note_vectors WHERE rowid IN ({marks})", rowids)


def _drop_pages(store: Store, cid: str) -> None:
    from tracecli.wiki.pages import drop_page

    for rowid, page_id in store.execute("SELECT rowid, id FROM wiki_pages WHERE conversation_id = ?", (cid,)).fetchall():
        drop_page(store, rowid, page_id)


def _drop_wiki(store: Store, cid: str, *, keep_pages: bool = False) -> bool:
    """Erase one conversation's claims, op log, snapshots and trajectories (and pages). True if it had a wiki.

    With `keep_pages` the pages stay for compile-wiki to re-plan: it rewrites
    (and re-embeds) only pages whose content changed and removes those no
    longer planned, so a page that quoted forgotten text cannot survive. Their
    links to the erased trajectories are checked at COMMIT (deferred foreign
    keys): trajectory ids derive from content, so unchanged pages point at
    trajectories that compile again under the same ids.
    """
    had = store.execute("SELECT 1 FROM wiki_sessions WHERE conversation_id = ? LIMIT 1", (cid,)).fetchone() is not None
    if keep_pages:
        store.defer_foreign_keys()
    else:
        _drop_pages(store, cid)
    store.execute("DELETE FROM snapshot_claims WHERE snapshot_id IN (SELECT id FROM snapshots WHERE conversation_id = ?)", (cid,))
    for table in WIKI_TABLES[1:]:
        store.execute(f"DELETE FROM {table} WHERE conversation_id = ?", (cid,))
    return had


def _drop_conversation(store: Store, cid: str) -> None:
    _drop_wiki(store, cid)
    _drop_note_rows(store, [r[0] for r in store.execute("SELECT rowid FROM notes WHERE conversation_id = ?", (cid,))])
    from tracecli.graph.build import clear_graph

    clear_graph(store, cid)
    for sql in (
        "DELETE FROM notes WHERE conversation_id = ?",
        "DELETE FROM messages WHERE conversation_id = ?",
        "DELETE FROM sessions WHERE conversation_id = ?",
        "DELETE FROM conversations WHERE id = ?",
    ):
        store.execute(sql, (cid,))


def _drop_messages(store: Store, cid: str, message_ids: list[str]) -> list[str]:
    """Remove some of a conversation's messages and repair its graph. Returns the sessions left empty."""
    from tracecli.graph.build import relink
    from tracecli.graph.hierarchy import refresh_topics

    notes = dict(execute_in(store, "SELECT id, rowid FROM notes WHERE message_id IN ({marks})", message_ids))
    doomed_events = sorted(_doomed_events(store, cid, set(message_ids), set(notes)))
    execute_in(store, "DELETE FROM edges WHERE src IN ({marks}) OR dst IN ({marks})", doomed_events)
    execute_in(store, "DELETE FROM event_notes WHERE event_id IN ({marks})", doomed_events)
    execute_in(store, "DELETE FROM events WHERE id IN ({marks})", doomed_events)
    note_ids = sorted(notes)
    execute_in(store, "DELETE FROM event_notes WHERE note_id IN ({marks})", note_ids)
    _drop_note_rows(store, sorted(notes.values()))
    sessions = sorted({r[0] for r in execute_in(store, "SELECT session_id FROM messages WHERE id IN ({marks})", message_ids)})
    execute_in(store, "DELETE FROM notes WHERE id IN ({marks})", note_ids)
    execute_in(store, "DELETE FROM messages WHERE id IN ({marks})", message_ids)
    emptied = [s for s in sessions if store.execute("SELECT 1 FROM messages WHERE session_id = ? LIMIT 1", (s,)).fetchone() is None]
    for sid in emptied:
        _drop_session(store, cid, sid)
    for sid in sessions:
        if sid not in emptied:
            store.execute(
                "UPDATE graph_sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = ?) "
                "WHERE session_id = ?", (sid, sid))
    participants = json.loads(store.execute("SELECT participants FROM conversations WHERE id = ?", (cid,)).fetchone()[0])
    speakers = {r[0] for r in store.execute("SELECT DISTINCT speaker FROM messages WHERE conversation_id = ?", (cid,))}
    kept = [p for p in participants if p in speakers]
    if kept != participants:
        store.execute("UPDATE conversations SET participants = ? WHERE id = ?", (dumps(kept), cid))
    if store.execute("SELECT 1 FROM graph_sessions WHERE conversation_id = ? LIMIT 1", (cid,)).fetchone():
        refresh_topics(store, cid)
        relink(store, cid)
    return emptied


def _doomed_events(store: Store, cid: str, message_ids: set[str], note_ids: set[str]) -> set[str]:
    """Events that rest on a forgotten note and whose quote no kept source still holds."""
    touched = sorted({r[0] for r in execute_in(store, "SELECT event_id FROM event_notes WHERE note_id IN ({marks})",
                                                sorted(note_ids))})
    doomed: set[str] = set()
    for eid in touched:
        quote = store.execute("SELECT quote FROM events WHERE id = ?", (eid,)).fetchone()[0] or ""
        kept = [text for mid, text in store.execute(
            "SELECT m.id, m.text FROM event_notes en JOIN notes n ON n.id = en.note_id JOIN messages m ON m.id = n.message_id "
            "WHERE en.event_id = ?", (eid,)) if mid not in message_ids]
        if not kept or (quote and not any(quote in text for text in kept)):
            doomed.add(eid)
    return doomed


def _drop_session(store: Store, cid: str, sid: str) -> None:
    """Remove an emptied session and bridge the `next` chain over it."""
    prev = store.execute("SELECT src FROM edges WHERE dst = ? AND label = 'next'", (sid,)).fetchone()
    nxt = store.execute("SELECT dst FROM edges WHERE src = ? AND label = 'next'", (sid,)).fetchone()
    store.execute("DELETE FROM edges WHERE src = ? OR dst = ?", (sid, sid))
    if prev and nxt:
        store.execute(
            "INSERT INTO edges(id, conversation_id, src, dst, label, family, confidence, justification, created_at) "
            "VALUES (?,?,?,?,'next','structural',1.0,'next session',?) ON CONFLICT DO NOTHING",
            ("ed_" + short_hash(prev[0], nxt[0], "next"), cid, prev[0], nxt[0], utc_now()))
    for sql in ("DELETE FROM session_topics WHERE session_id = ?", "DELETE FROM graph_sessions WHERE session_id = ?",
                "DELETE FROM wiki_sessions WHERE session_id = ?", "DELETE FROM sessions WHERE id = ?"):
        store.execute(sql, (sid,))


def _scrub(store: Store, vacuum: bool, warnings: list[str], tables: Sequence[str] = COUNTED) -> tuple[bool, str]:
    """Make deleted text leave the storage (`Store.reclaim`: SQLite rewrites the file, PostgreSQL VACUUMs the
    `tables` that lost rows): (rewritten, what the engine can and cannot promise about the freed pages).

    The forget is committed by then: when another command keeps the database busy past the busy timeout,
    this step is skipped with a warning rather than reported as a failure.
    """
    try:
        return store.reclaim(tables, vacuum)
    except sqlite3.OperationalError as exc:
        warnings.append(f"the file was not rewritten ({store.failure(exc)}); the forgotten text may stay in its free "
                        "pages until the next `tracecli forget`")
        return False, ""


def forgotten_references(store: Store) -> list[tuple[str, str, str]]:
    """(forget id, table, row) for every row that still names a forgotten message: what `audit` reports."""
    if not store.has_table("forget_log"):
        return []
    found: list[tuple[str, str, str]] = []
    for fid, ids_json in store.execute("SELECT id, message_ids FROM forget_log ORDER BY created_at, id").fetchall():
        ids = json.loads(ids_json)
        for table, sql in (
            ("messages", "SELECT id FROM messages WHERE id IN ({marks})"),
            ("notes", "SELECT id FROM notes WHERE message_id IN ({marks})"),
            ("claims", f"SELECT c.id FROM claims c, {store.json_each('c.source_message_ids', 'j')} WHERE j.value IN ({{marks}})"),
            ("claim_ops", f"SELECT o.id FROM claim_ops o, {store.json_each('o.source_message_ids', 'j')} WHERE j.value IN ({{marks}})"),
            ("snapshots", f"SELECT s.id FROM snapshots s, {store.json_each('s.message_ids', 'j')} WHERE j.value IN ({{marks}})"),
        ):
            found.extend((fid, table, r[0]) for r in execute_in(store, sql, ids))
    return found


__all__ = ["ForgetReceipt", "TableCount", "KINDS", "forget", "forgotten_references", "resolve_messages"]
