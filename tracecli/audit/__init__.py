"""audit: integrity and grounding checks over a whole tracecli file, plus a queue for human review.

`run_audit` returns an `AuditReport`; it never prints and never writes. Checks,
by group (each one `ok`, `warning`, `error` or `skipped` with the reason):

* storage — `PRAGMA integrity_check` and `foreign_key_check`; the schema
  version; one vector per note (and per wiki page) of the recorded model's
  dimension; the FTS indexes in sync with notes and pages.
* graph — every event rests on existing source notes; time anchors parse; no
  `before` edge runs against time; validity re-derived from the edges
  (`tracecli.graph.validity.propagate`) equals what is stored; `updates`
  chains are acyclic; causal edges out of superseded events are invalidated;
  edges point at existing vertices.
* claims and wiki (skipped when compile-wiki has not created its tables) —
  every supporting quote occurs verbatim in a source message; every deprecated
  claim has a successor or a DEPRECATE op; the op log is append-only, gapless,
  ordered and replays to the stored statuses; every page citation resolves;
  no trajectory is reachable only from the index page; claims and graph agree
  (a REVISE has a matching `updates` edge, else it is listed as a disagreement).
* answers — stored answers reference conversations, messages and events that
  still exist.
* storage.forgotten — no row names a message that `tracecli forget` removed.

The review queue lists unresolved `contradicts` edges and low-confidence
`updates` edges with both quotes, for a person to look at.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from tracecli.audit.report import (
    AuditReport,
    AuditSettings,
    _Check,
    CheckResult,
    _cycles,
    Disagreement,
    Finding,
    _json_list,
    ReviewItem,
    ReviewSide,
    _Skip,
    _time,
)
from tracecli.audit.wiki import WikiChecks
from tracecli.graph.validity import INVALIDATED_BY_UPDATE, propagate
from tracecli.scope import DEFAULT_NAMESPACE, message_refs, namespace_of, resolve_scope
from tracecli.store.db import Store, execute_in, placeholders
from tracecli.store.migrations import migrations
from tracecli.timeutil import parse_iso


class _Auditor(WikiChecks):
    def __init__(self, store: Store, cids: list[str], settings: AuditSettings, scoped: bool) -> None:
        self.store = store
        self.cids = cids
        self.settings = settings
        self.scoped = scoped  # True when --conversation narrowed the audit
        self.results: list[CheckResult] = []
        self.findings: list[Finding] = []
        self.disagreements: list[Disagreement] = []
        self.review: list[ReviewItem] = []
        self._cache: dict[str, Any] = {}  # rows read once per audit (`scoped_rows`)

    # -- plumbing ------------------------------------------------------------------------
    def run(self, group: str, name: str, fn: Callable[[_Check], None]) -> None:
        chk = _Check(f"{group}.{name}", self.settings.max_findings_per_check)
        try:
            fn(chk)
        except _Skip as skip:
            self.results.append(CheckResult(chk.name, group, "skipped", detail=str(skip)))
            return
        status = "error" if chk.errors else "warning" if chk.warnings else "ok"
        hidden = chk.errors + chk.warnings - len(chk.findings)
        detail = f"{hidden} more not listed" if hidden > 0 else ""
        self.results.append(CheckResult(chk.name, group, status, chk.checked, chk.errors, chk.warnings, detail))
        self.findings.extend(chk.findings)

    def q(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self.store.query(sql, list(params))

    def in_scope(self, column: str = "conversation_id") -> tuple[str, list[str]]:
        return f"{column} IN ({placeholders(self.cids)})", list(self.cids)

    def scoped_rows(self, key: str, sql: str, *, by_id: bool = False) -> Any:
        """The rows of `sql` with `{where}` set to the audit's scope, read once per audit (by id if asked)."""
        if key not in self._cache:
            where, params = self.in_scope()
            rows = self.q(sql.format(where=where), params)
            self._cache[key] = {r["id"]: r for r in rows} if by_id else rows
        return self._cache[key]

    def has(self, *tables: str) -> bool:
        return all(self.store.has_table(t) for t in tables)

    # -- storage -------------------------------------------------------------------------
    def integrity(self, chk: _Check) -> None:
        chk.checked = 1
        for line in self.store.integrity_errors():
            chk.error(f"integrity_check: {line}")

    def foreign_keys(self, chk: _Check) -> None:
        chk.checked = 1
        for table, rowid, parent, _fk in self.store.foreign_key_errors():
            chk.error(f"{table} row {rowid} points at a missing {parent} row", refs=[f"{table}:{rowid}"])

    def schema(self, chk: _Check) -> None:
        known = [m.name for m in migrations._migrations]
        applied = self.store.applied_migrations()
        chk.checked = len(known)
        for name in applied:
            if name not in known:
                chk.error(f"migration {name} is unknown to this tracecli (written by a newer version)")
        for name in known:
            if name not in applied:
                chk.error(f"migration {name} has not been applied; open the file with `tracecli stats` to upgrade it")

    def vectors(self, chk: _Check) -> None:
        where, params = self.in_scope("n.conversation_id")
        notes = {r[0]: r[1] for r in self.store.execute(f"SELECT n.rowid, n.conversation_id FROM notes n WHERE {where}", params)}
        chk.checked = len(notes)
        bound = self.store.embedding_model()
        if not notes and bound is None:
            return
        if bound is None:
            chk.error("notes exist but meta holds no embedding model and dimension (embed_model / embed_dim)")
            return
        model, dim = bound
        if not self.has("note_vectors"):
            chk.error(f"notes exist but the note_vectors table is missing ({model}, {dim}-d expected)")
            return
        declared = self._declared_dim("note_vectors")
        if declared is not None and declared != dim:
            chk.error(f"note_vectors holds {declared}-d vectors but meta records {model} at {dim}-d")
        self._vector_rows(chk, "note_vectors", notes, dim, "note")
        if self.has("wiki_pages"):
            pwhere, pparams = self.in_scope()
            pages = {r[0]: r[1] for r in self.store.execute(
                f"SELECT rowid, conversation_id FROM wiki_pages WHERE {pwhere}", pparams)}
            if not pages:
                return
            if not self.has("wiki_vectors"):
                chk.error(f"wiki pages exist but the wiki_vectors table is missing ({model}, {dim}-d expected)")
                return
            chk.checked += len(pages)
            wdim = self._declared_dim("wiki_vectors")
            if wdim is not None and wdim != dim:
                chk.error(f"wiki_vectors holds {wdim}-d vectors but meta records {model} at {dim}-d")
            self._vector_rows(chk, "wiki_vectors", pages, dim, "wiki page")

    def _declared_dim(self, table: str) -> int | None:
        return self.store.vector_dim(table)

    def _vector_rows(self, chk: _Check, table: str, owners: dict[int, str], dim: int, what: str) -> None:
        have: dict[int, tuple[str, int]] = {}
        for rowid, cid, size in self.store.execute(f"SELECT rowid, conversation_id, {self.store.vector_bytes_sql('embedding')} FROM {table}"):
            if cid in self.cids or not self.scoped:
                have[int(rowid)] = (cid, int(size or 0))
        for rowid, cid in sorted(owners.items()):
            got = have.get(rowid)
            if got is None:
                chk.error(f"{what} rowid {rowid} has no vector in {table}", cid, [str(rowid)])
                continue
            if got[1] != dim * 4:
                chk.error(f"{what} rowid {rowid}: vector of {got[1] // 4} dimensions, expected {dim}", cid, [str(rowid)])
            if got[0] != cid:
                chk.error(f"{what} rowid {rowid}: vector filed under conversation '{got[0]}', not '{cid}'", cid, [str(rowid)])
        for rowid in sorted(set(have) - set(owners)):
            chk.error(f"{table} rowid {rowid} belongs to no {what}", have[rowid][0], [str(rowid)])

    def fts(self, chk: _Check) -> None:
        where, params = self.in_scope()
        nwhere, nparams = self.in_scope("n.conversation_id")
        notes = {r[0]: (r[1], r[2], r[3], r[4]) for r in self.store.execute(
            f"SELECT n.rowid, n.conversation_id, n.text, m.text, n.keywords FROM notes n "
            f"LEFT JOIN messages m ON m.id = n.message_id WHERE {nwhere}", nparams)}
        fts = {r[0]: (r[1], r[2]) for r in self.store.execute("SELECT rowid, text, keywords FROM notes_fts")}
        chk.checked = len(notes)
        for rowid, (cid, note_text, msg_text, kw) in sorted(notes.items()):
            got = fts.get(rowid)
            if got is None:
                chk.error(f"note rowid {rowid} is missing from notes_fts (full-text search cannot find it)", cid, [str(rowid)])
            # The index holds the message text (older files: the whole note text) and the note's keywords.
            elif got[0] not in (msg_text, note_text) or got[1] != kw:
                chk.error(f"notes_fts row {rowid} differs from its note", cid, [str(rowid)])
        if not self.scoped:
            for rowid in sorted(set(fts) - set(notes)):
                chk.error(f"notes_fts row {rowid} belongs to no note", refs=[str(rowid)])
        if self.has("wiki_pages", "wiki_fts"):
            pages = {r[0]: r[1] for r in self.store.execute(f"SELECT rowid, conversation_id FROM wiki_pages WHERE {where}", params)}
            wf = {r[0]: r[1] for r in self.store.execute("SELECT rowid, conversation_id FROM wiki_fts")}
            chk.checked += len(pages)
            for rowid, cid in sorted(pages.items()):
                if rowid not in wf:
                    chk.error(f"wiki page rowid {rowid} is missing from wiki_fts", cid, [str(rowid)])
            for rowid in sorted(set(wf) - set(pages)):
                if not self.scoped or wf[rowid] in self.cids:
                    chk.error(f"wiki_fts row {rowid} belongs to no wiki page", wf[rowid], [str(rowid)])

    # -- graph ---------------------------------------------------------------------------
    def _events(self) -> dict[str, dict[str, Any]]:
        return self.scoped_rows(
            "events", "SELECT id, conversation_id, session_id, subject, description, quote, time_anchor, event_time, seq, "
            "sentence_idx, validity, valid_until FROM events WHERE {where}", by_id=True)

    def _edges(self) -> list[dict[str, Any]]:
        return self.scoped_rows(
            "edges", "SELECT id, conversation_id, src, dst, label, family, confidence, justification, invalidated_at "
            "FROM edges WHERE {where} ORDER BY id")

    def event_sources(self, chk: _Check) -> None:
        events = self._events()
        chk.checked = len(events)
        links: dict[str, list[str]] = defaultdict(list)
        if events:
            where, params = self.in_scope("e.conversation_id")
            for eid, nid in self.store.execute(
                f"SELECT en.event_id, en.note_id FROM event_notes en JOIN events e ON e.id = en.event_id WHERE {where}", params
            ):
                links[eid].append(nid)
        note_ids = {r[0]: r[1] for r in self.store.execute(
            "SELECT id, conversation_id FROM notes WHERE id IN (SELECT note_id FROM event_notes)")}
        for eid, ev in events.items():
            cid = ev["conversation_id"]
            if not links.get(eid):
                chk.error(f"event {eid} has no source notes", cid, [eid])
            for nid in links.get(eid, []):
                if nid not in note_ids:
                    chk.error(f"event {eid} cites note {nid}, which does not exist", cid, [eid, nid])
                elif note_ids[nid] != cid:
                    chk.error(f"event {eid} cites note {nid} of another conversation ('{note_ids[nid]}')", cid, [eid, nid])

    def time_anchors(self, chk: _Check) -> None:
        events = self._events()
        chk.checked = len(events)
        for eid, ev in events.items():
            if ev["time_anchor"]:
                try:
                    parse_iso(ev["time_anchor"])
                except ValueError:
                    chk.error(f"event {eid}: time anchor {ev['time_anchor']!r} is not an ISO-8601 time", ev["conversation_id"], [eid])
            if ev["event_time"]:
                try:
                    dt.date.fromisoformat(ev["event_time"][:10])
                except ValueError:
                    chk.error(f"event {eid}: event time {ev['event_time']!r} is not an ISO date", ev["conversation_id"], [eid])

    def before_order(self, chk: _Check) -> None:
        events = self._events()
        for e in self._edges():
            if e["label"] != "before":
                continue
            chk.checked += 1
            a, b = events.get(e["src"]), events.get(e["dst"])
            if a is None or b is None:
                continue  # edge_ends reports it
            if a["session_id"] == b["session_id"]:
                if (a["seq"], a["sentence_idx"]) > (b["seq"], b["sentence_idx"]):
                    chk.error(f"`before` edge {e['id']} runs against turn order in one session "
                              f"({e['src']} comes after {e['dst']})", e["conversation_id"], [e["id"], e["src"], e["dst"]])
                continue
            ta, tb = _time(a["time_anchor"]), _time(b["time_anchor"])
            if ta is not None and tb is not None and ta > tb:
                chk.error(f"`before` edge {e['id']} runs against time: {a['time_anchor']} is after {b['time_anchor']}",
                          e["conversation_id"], [e["id"], e["src"], e["dst"]])

    def edge_ends(self, chk: _Check) -> None:
        events = self._events()
        where, params = self.in_scope()
        others = {r[0] for r in self.store.execute(f"SELECT id FROM sessions WHERE {where}", params)}
        others |= {r[0] for r in self.store.execute(f"SELECT id FROM topics WHERE {where}", params)}
        for e in self._edges():
            chk.checked += 1
            pool = events if e["family"] != "structural" else {**events, **{o: None for o in others}}
            for end in ("src", "dst"):
                if e[end] not in pool:
                    chk.error(f"edge {e['id']} ({e['label']}) points at a missing vertex {e[end]}", e["conversation_id"], [e["id"], e[end]])

    def validity(self, chk: _Check) -> None:
        events = self._events()
        by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e in self._edges():
            by_conv[e["conversation_id"]].append(e)
        for cid in self.cids:
            anchors = {eid: ev["time_anchor"] or "" for eid, ev in events.items() if ev["conversation_id"] == cid}
            edges = [(e["src"], e["dst"], e["label"]) for e in by_conv.get(cid, []) if e["family"] != "structural"]
            state = propagate(anchors, edges)
            chk.checked += len(anchors)
            for eid in sorted(anchors):
                ev = events[eid]
                want_v = state.validity.get(eid, 1.0)
                if abs(float(ev["validity"]) - want_v) > 1e-9:
                    chk.error(f"event {eid}: stored validity {ev['validity']:g}, but its edges give {want_v:g}", cid, [eid])
                want_until = state.valid_until.get(eid)
                if (ev["valid_until"] or None) != want_until:
                    chk.error(f"event {eid}: stored valid_until {ev['valid_until']!r}, but its edges give {want_until!r}", cid, [eid])
            for e in by_conv.get(cid, []):
                if e["family"] == "structural":
                    continue
                key = (e["src"], e["dst"], e["label"])
                want = (state.invalidated[key] or "superseded") if key in state.invalidated else None
                if (e["invalidated_at"] or None) != want:
                    chk.error(f"edge {e['id']} ({e['label']}): stored invalidated_at {e['invalidated_at']!r}, "
                              f"re-derived {want!r}", cid, [e["id"]])

    def update_cycles(self, chk: _Check) -> None:
        graph: dict[str, list[str]] = defaultdict(list)
        conv: dict[str, str] = {}
        for e in self._edges():
            if e["label"] == "updates":
                graph[e["src"]].append(e["dst"])
                conv[e["src"]] = e["conversation_id"]
                chk.checked += 1
        for cycle in _cycles(graph):
            chk.error("updates chain is cyclic: " + " → ".join(cycle + [cycle[0]]), conv.get(cycle[0]), cycle)

    def causal_invalidation(self, chk: _Check) -> None:
        events = self._events()
        for e in self._edges():
            if e["label"] not in INVALIDATED_BY_UPDATE:
                continue
            src = events.get(e["src"])
            if src is None or float(src["validity"]) != 0.0:
                continue
            chk.checked += 1
            if not e["invalidated_at"]:
                chk.error(f"`{e['label']}` edge {e['id']} leaves superseded event {e['src']} but is not invalidated",
                          e["conversation_id"], [e["id"], e["src"]])

    # -- answers -------------------------------------------------------------------------
    def answers(self, chk: _Check) -> None:
        rows = self.q("SELECT id, conversation_id, payload FROM answers ORDER BY created_at, id")
        convs = {r[0] for r in self.store.execute("SELECT id FROM conversations")}
        refs_by_conv: dict[str, set[str]] = {}
        event_ids = {r[0] for r in self.store.execute("SELECT id FROM events")}
        items: dict[str, list[str]] = defaultdict(list)
        for aid, refs in self.store.execute("SELECT answer_id, source_refs FROM answer_items ORDER BY answer_id, rank"):
            items[aid].extend(_json_list(refs))
        for r in rows:
            cids = [c for c in (r["conversation_id"] or "").split(",") if c]
            if self.scoped and not set(cids) & set(self.cids):
                continue
            chk.checked += 1
            aid = r["id"]
            gone = [c for c in cids if c not in convs]
            for c in gone:
                chk.error(f"answer {aid} is about conversation '{c}', which no longer exists", c, [aid])
            for c in cids:
                if c in convs and c not in refs_by_conv:
                    refs_by_conv[c] = message_refs(self.store, c)
            try:
                payload = json.loads(r["payload"])
            except (TypeError, ValueError):
                chk.error(f"answer {aid}: stored payload is not JSON", refs=[aid])
                continue
            refs = list(dict.fromkeys([*payload.get("source_refs", []), *items.get(aid, [])]))
            known = set().union(*(refs_by_conv.get(c, set()) for c in cids))
            missing = [x for x in refs if x not in known and not x.startswith(("cl_", "wp_", "tr_", "sn_"))]
            if missing and not gone:
                chk.error(f"answer {aid} cites message(s) that no longer exist: {', '.join(missing[:5])}",
                          cids[0] if cids else None, [aid, *missing[:5]])
            lost = sorted({s["event_id"] for p in payload.get("paths", []) for s in p.get("steps", [])} - event_ids)
            if lost:
                chk.warn(f"answer {aid} shows event(s) the graph no longer has (rebuilt since?): {', '.join(lost[:5])}",
                         cids[0] if cids else None, [aid, *lost[:5]])

    def forgotten(self, chk: _Check) -> None:
        """No row still names a message `tracecli forget` removed (the forget log keeps ids, never text)."""
        from tracecli.forget import forgotten_references

        if not self.has("forget_log"):
            raise _Skip("no forget log in this file")
        chk.checked = int(self.store.execute("SELECT COUNT(*) FROM forget_log").fetchone()[0])
        for fid, table, row in forgotten_references(self.store):
            chk.error(f"{table} row {row} still references a message forgotten by {fid}", refs=[fid, row])

    # -- review queue ----------------------------------------------------------------------
    def build_review(self) -> None:
        events = self._events()
        picked = []
        for e in self._edges():
            a, b = events.get(e["src"]), events.get(e["dst"])
            if a is None or b is None:
                continue
            if e["label"] == "contradicts":
                if float(a["validity"]) == 0.0 or float(b["validity"]) == 0.0:
                    continue  # a later update settled it
                picked.append(("contradiction", e))
            elif e["label"] == "updates" and float(e["confidence"]) < self.settings.low_confidence:
                picked.append(("low_confidence_update", e))
        if not picked:
            return
        ids = sorted({x for _, e in picked for x in (e["src"], e["dst"])})
        refs: dict[str, list[str]] = defaultdict(list)
        for eid, ref in execute_in(
            self.store,
            "SELECT en.event_id, COALESCE(m.source_ref, m.id) FROM event_notes en JOIN notes n ON n.id = en.note_id "
            "JOIN messages m ON m.id = n.message_id WHERE en.event_id IN ({marks}) ORDER BY m.seq", ids,
        ):
            refs[eid].append(ref)

        def side(ev: dict[str, Any]) -> ReviewSide:
            return ReviewSide(ev["id"], ev["subject"], ev["description"], ev["quote"], ev["time_anchor"],
                              float(ev["validity"]), refs.get(ev["id"], []))

        for kind, e in picked:
            self.review.append(ReviewItem(kind, e["conversation_id"], e["id"], e["label"], float(e["confidence"]),
                                          e["justification"], side(events[e["src"]]), side(events[e["dst"]])))
        self.review.sort(key=lambda r: (r.kind != "contradiction", r.confidence, r.conversation_id, r.edge_id))


def run_audit(store: Store, conversation_id: str | None = None, settings: AuditSettings | None = None,
              namespace: str | None = None) -> AuditReport:
    """Run every check over the file (or one conversation) and gather the review queue.

    With `namespace`, findings are limited to that namespace's conversations;
    file-level checks (integrity, schema) still run. Without one (and without a
    conversation), every conversation of every namespace is checked.
    """
    settings = settings or AuditSettings()
    every = [r[0] for r in store.execute("SELECT id FROM conversations ORDER BY id")]
    scope_namespace = namespace
    if conversation_id or (namespace is not None and every):
        scope = resolve_scope(store, namespace, conversation_id)
        cids, scope_namespace = list(scope.conversation_ids), scope.namespace
    else:
        cids = every
    a = _Auditor(store, cids, settings, scoped=conversation_id is not None or cids != every)
    a.run("storage", "integrity", a.integrity)
    a.run("storage", "foreign_keys", a.foreign_keys)
    a.run("storage", "schema", a.schema)
    a.run("storage", "vectors", a.vectors)
    a.run("storage", "fts", a.fts)
    a.run("graph", "event_sources", a.event_sources)
    a.run("graph", "time_anchors", a.time_anchors)
    a.run("graph", "edge_ends", a.edge_ends)
    a.run("graph", "before_order", a.before_order)
    a.run("graph", "validity", a.validity)
    a.run("graph", "update_cycles", a.update_cycles)
    a.run("graph", "causal_invalidation", a.causal_invalidation)
    a.run("claims", "quotes", a.claim_quotes)
    a.run("claims", "deprecated", a.deprecated_claims)
    a.run("claims", "op_log", a.op_log)
    a.run("claims", "graph_agreement", a.graph_agreement)
    a.run("wiki", "citations", a.citations)
    a.run("wiki", "coverage", a.coverage)
    a.run("answers", "references", a.answers)
    a.run("storage", "forgotten", a.forgotten)
    a.build_review()
    errors = sum(c.errors for c in a.results)
    warnings = sum(c.warnings for c in a.results)
    return AuditReport(
        db=store.label,
        conversation_ids=cids,
        schema_version=store.schema_version(),
        latest_schema_version=len(migrations._migrations),
        ok=errors == 0,
        errors=errors,
        warnings=warnings,
        checks=a.results,
        findings=a.findings,
        disagreements=a.disagreements,
        review=a.review,
        counts=_counts(store, cids),
        namespace=None if namespace is None and conversation_id is None else scope_namespace,
        namespaces=sorted({namespace_of(store, c) or DEFAULT_NAMESPACE for c in cids}),
    )


def _counts(store: Store, cids: Sequence[str]) -> dict[str, int]:
    out = {"conversations": len(cids)}
    for table in ("messages", "notes", "events", "edges", "claims", "claim_ops", "trajectories", "wiki_pages", "answers"):
        if not store.has_table(table):
            continue
        if table == "answers":
            out[table] = int(store.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
            continue
        out[table] = int(store.execute(
            f"SELECT COUNT(*) FROM {table} WHERE conversation_id IN ({placeholders(cids)})", list(cids)).fetchone()[0]) if cids else 0
    return out


__all__ = ["AuditReport", "AuditSettings", "CheckResult", "Disagreement", "Finding", "ReviewItem", "ReviewSide",
           "run_audit"]
