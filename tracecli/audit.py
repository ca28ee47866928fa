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
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.graph.validity import INVALIDATED_BY_UPDATE, propagate
from tracecli.scope import resolve_scope
from tracecli.store.db import Store, placeholders
from tracecli.store.migrations import migrations
from tracecli.timeutil import parse_iso

GROUPS = ("storage", "graph", "claims", "wiki", "answers")
WIKI_TABLES = ("claims", "claim_ops", "trajectories", "snapshots", "wiki_pages")


@dataclass(frozen=True)
class AuditSettings:
    """Thresholds of the audit."""

    low_confidence: float = 0.8  # `updates` edges below this go to the review queue
    max_findings_per_check: int = 50  # findings listed per check (all are counted)


@dataclass
class Finding:
    """One problem: which check found it, how bad, what to look at."""

    check: str
    severity: str  # error | warning
    message: str
    conversation_id: str | None = None
    refs: list[str] = field(default_factory=list)


@dataclass
class CheckResult:
    """The outcome of one check."""

    name: str
    group: str
    status: str  # ok | warning | error | skipped
    checked: int = 0
    errors: int = 0
    warnings: int = 0
    detail: str = ""


@dataclass
class Disagreement:
    """A place where the claim lifecycle and the evidence graph tell different stories."""

    conversation_id: str
    kind: str  # revise_without_update | update_without_revise
    claim_id: str | None
    other_claim_id: str | None
    event_id: str | None
    other_event_id: str | None
    message: str


@dataclass
class ReviewSide:
    """One end of an edge under review, with its quote."""

    event_id: str
    subject: str
    description: str
    quote: str
    time_anchor: str | None
    validity: float
    source_refs: list[str]


@dataclass
class ReviewItem:
    """An edge a person should confirm: a contradiction or a low-confidence update."""

    kind: str  # contradiction | low_confidence_update
    conversation_id: str
    edge_id: str
    label: str
    confidence: float
    justification: str
    newer: ReviewSide
    older: ReviewSide


@dataclass
class AuditReport:
    """What `tracecli audit --json` prints."""

    db: str
    conversation_ids: list[str]
    schema_version: int
    latest_schema_version: int
    ok: bool
    errors: int
    warnings: int
    checks: list[CheckResult]
    findings: list[Finding]
    disagreements: list[Disagreement]
    review: list[ReviewItem]
    counts: dict[str, int]


class _Skip(Exception):
    """Raised inside a check to mark it skipped, with the reason."""


class _Check:
    """Collects one check's findings; counts all, keeps the first `limit`."""

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self.checked = 0
        self.errors = 0
        self.warnings = 0
        self.findings: list[Finding] = []

    def error(self, message: str, cid: str | None = None, refs: Sequence[str] = ()) -> None:
        self.errors += 1
        self._keep(Finding(self.name, "error", message, cid, list(refs)))

    def warn(self, message: str, cid: str | None = None, refs: Sequence[str] = ()) -> None:
        self.warnings += 1
        self._keep(Finding(self.name, "warning", message, cid, list(refs)))

    def _keep(self, finding: Finding) -> None:
        if len(self.findings) < self.limit:
            self.findings.append(finding)


def _short(text: str | None, n: int = 90) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[: n - 1] + "…"


class _Auditor:
    def __init__(self, store: Store, cids: list[str], settings: AuditSettings, scoped: bool) -> None:
        self.store = store
        self.cids = cids
        self.settings = settings
        self.scoped = scoped  # True when --conversation narrowed the audit
        self.results: list[CheckResult] = []
        self.findings: list[Finding] = []
        self.disagreements: list[Disagreement] = []
        self.review: list[ReviewItem] = []
        self._events_cache: dict[str, dict[str, Any]] | None = None
        self._edges_cache: list[dict[str, Any]] | None = None
        self._claims_cache: dict[str, dict[str, Any]] | None = None
        self._ops_cache: list[dict[str, Any]] | None = None

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

    def has(self, *tables: str) -> bool:
        return all(self.store.has_table(t) for t in tables)

    # -- storage -------------------------------------------------------------------------
    def integrity(self, chk: _Check) -> None:
        rows = [r[0] for r in self.store.execute("PRAGMA integrity_check").fetchall()]
        chk.checked = 1
        if rows != ["ok"]:
            for line in rows:
                chk.error(f"integrity_check: {line}")

    def foreign_keys(self, chk: _Check) -> None:
        rows = self.store.execute("PRAGMA foreign_key_check").fetchall()
        chk.checked = 1
        for table, rowid, parent, _fk in rows:
            chk.error(f"{table} row {rowid} points at a missing {parent} row", refs=[f"{table}:{rowid}"])

    def schema(self, chk: _Check) -> None:
        known = [m.name for m in migrations._migrations]
        applied = [m.name for m in migrations.applied(self.store.db)]
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
        row = self.store.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        m = re.search(r"float\[(\d+)\]", row[0] if row and row[0] else "")
        return int(m.group(1)) if m else None

    def _vector_rows(self, chk: _Check, table: str, owners: dict[int, str], dim: int, what: str) -> None:
        have: dict[int, tuple[str, int]] = {}
        for rowid, cid, size in self.store.execute(f"SELECT rowid, conversation_id, length(embedding) FROM {table}"):
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
        if self._events_cache is None:
            where, params = self.in_scope()
            self._events_cache = {r["id"]: r for r in self.q(
                f"SELECT id, conversation_id, session_id, subject, description, quote, time_anchor, event_time, seq, "
                f"sentence_idx, validity, valid_until FROM events WHERE {where}", params)}
        return self._events_cache

    def _edges(self) -> list[dict[str, Any]]:
        if self._edges_cache is None:
            where, params = self.in_scope()
            self._edges_cache = self.q(
                f"SELECT id, conversation_id, src, dst, label, family, confidence, justification, invalidated_at "
                f"FROM edges WHERE {where} ORDER BY id", params)
        return self._edges_cache

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

    # -- claims --------------------------------------------------------------------------
    def _need_wiki(self, *tables: str) -> None:
        missing = [t for t in tables if not self.store.has_table(t)]
        if missing:
            raise _Skip(f"no {', '.join(missing)} table (compile-wiki has not created it)")

    def _claims(self) -> dict[str, dict[str, Any]]:
        if self._claims_cache is None:
            where, params = self.in_scope()
            self._claims_cache = {r["id"]: r for r in self.q(
                f"SELECT id, conversation_id, idx, snapshot_id, event_id, text, status, source_message_ids, "
                f"supporting_quote, predecessor_id, successor_id FROM claims WHERE {where} ORDER BY conversation_id, idx", params)}
        return self._claims_cache

    def _ops(self) -> list[dict[str, Any]]:
        if self._ops_cache is None:
            where, params = self.in_scope()
            self._ops_cache = self.q(
                f"SELECT id, conversation_id, n, op, claim_id, target_id, status, event_id, reason, created_at "
                f"FROM claim_ops WHERE {where} ORDER BY conversation_id, n", params)
        return self._ops_cache

    def claim_quotes(self, chk: _Check) -> None:
        self._need_wiki("claims")
        claims = self._claims()
        ids = sorted({m for c in claims.values() for m in _json_list(c["source_message_ids"])})
        texts: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            texts.update({r[0]: r[1] for r in self.store.execute(
                f"SELECT id, text FROM messages WHERE id IN ({placeholders(chunk)})", chunk)})
        for cid_, c in claims.items():
            chk.checked += 1
            sources = _json_list(c["source_message_ids"])
            missing = [m for m in sources if m not in texts]
            if missing:
                chk.error(f"claim {cid_} cites missing message(s) {', '.join(missing)}", c["conversation_id"], [cid_, *missing])
            quote = c["supporting_quote"] or ""
            if not quote.strip() or not any(quote in texts[m] for m in sources if m in texts):
                chk.error(f"claim {cid_}: supporting quote \"{_short(quote, 60)}\" occurs in none of its source messages",
                          c["conversation_id"], [cid_, *sources])

    def deprecated_claims(self, chk: _Check) -> None:
        self._need_wiki("claims", "claim_ops")
        claims = self._claims()
        deprecate_ops = {o["claim_id"] for o in self._ops() if o["op"] == "DEPRECATE"}
        for cid_, c in claims.items():
            if c["successor_id"] and c["successor_id"] not in claims:
                chk.error(f"claim {cid_} names successor {c['successor_id']}, which does not exist", c["conversation_id"], [cid_])
            if c["status"] != "deprecated":
                continue
            chk.checked += 1
            if not c["successor_id"] and cid_ not in deprecate_ops:
                chk.error(f"deprecated claim {cid_} has neither a successor nor a DEPRECATE op", c["conversation_id"], [cid_])

    def op_log(self, chk: _Check) -> None:
        self._need_wiki("claims", "claim_ops")
        triggers = {r[0] for r in self.store.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        for name in ("claim_ops_no_update", "claim_ops_no_delete"):
            if name not in triggers:
                chk.error(f"trigger {name} is missing: the op log is no longer protected against edits")
        claims = self._claims()
        by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for o in self._ops():
            by_conv[o["conversation_id"]].append(o)
        for cid in self.cids:
            ops = by_conv.get(cid, [])
            chk.checked += len(ops)
            created: set[str] = set()
            state: dict[str, tuple[str, str | None]] = {}
            last_time = ""
            for expect, o in enumerate(ops):
                if o["n"] != expect:
                    chk.error(f"op log of '{cid}' jumps from n={expect - 1} to n={o['n']} (an op is missing)", cid, [o["id"]])
                    break
                if o["created_at"] < last_time:
                    chk.error(f"op {o['id']} (n={o['n']}) is dated before the op preceding it", cid, [o["id"]])
                last_time = max(last_time, o["created_at"])
                if o["claim_id"] not in claims:
                    chk.error(f"op {o['id']} (n={o['n']}) names claim {o['claim_id']}, which does not exist", cid, [o["id"]])
                if o["op"] in ("ADD", "REVISE"):
                    if o["claim_id"] in created:
                        chk.error(f"op {o['id']} (n={o['n']}) creates claim {o['claim_id']} a second time", cid, [o["id"]])
                    created.add(o["claim_id"])
                    state[o["claim_id"]] = (o["status"], None)
                if o["op"] == "REVISE":
                    if o["target_id"] not in created:
                        chk.error(f"op {o['id']} (n={o['n']}) revises {o['target_id']} before any op created it", cid, [o["id"]])
                    state[o["target_id"]] = ("deprecated", o["claim_id"])
                if o["op"] == "DEPRECATE":
                    if o["claim_id"] not in created:
                        chk.error(f"op {o['id']} (n={o['n']}) deprecates {o['claim_id']} before any op created it", cid, [o["id"]])
                    state[o["claim_id"]] = ("deprecated", None)
            for claim_id, c in claims.items():
                if c["conversation_id"] != cid:
                    continue
                want = state.get(claim_id)
                if want is None:
                    chk.error(f"claim {claim_id} was created by no op", cid, [claim_id])
                elif (c["status"], c["successor_id"]) != want:
                    chk.error(f"claim {claim_id}: stored ({c['status']}, successor {c['successor_id']}) but the op log "
                              f"replays to ({want[0]}, successor {want[1]})", cid, [claim_id])

    def graph_agreement(self, chk: _Check) -> None:
        self._need_wiki("claims", "claim_ops")
        claims = self._claims()
        updates: dict[str, set[str]] = defaultdict(set)
        contradicts: set[frozenset[str]] = set()
        for e in self._edges():
            if e["label"] == "updates":
                updates[e["src"]].add(e["dst"])
            elif e["label"] == "contradicts":
                contradicts.add(frozenset((e["src"], e["dst"])))
        for o in self._ops():
            if o["op"] != "REVISE":
                continue
            chk.checked += 1
            new, old = claims.get(o["claim_id"]), claims.get(o["target_id"])
            if new is None or old is None:
                continue  # op_log reports it
            ev_new, ev_old = new["event_id"] or o["event_id"], old["event_id"]
            reason = (o["reason"] or "").lower()
            if reason.startswith("confirmed"):
                continue  # a hedged claim restated without the hedge: no change of value
            if o["status"] == "contradictory" and ev_old and any(ev_old in pair for pair in contradicts):
                continue
            if ev_new and ev_old and (ev_new == ev_old and o["status"] == "contradictory" or _reaches(updates, ev_new, ev_old)):
                continue
            msg = (f"REVISE {o['id']}: claim {o['claim_id']} replaces {o['target_id']} but the graph has no `updates` "
                   f"edge from {ev_new or '(no event)'} to {ev_old or '(no event)'} ({_short(o['reason'], 60)})")
            self.disagreements.append(Disagreement(o["conversation_id"], "revise_without_update", o["claim_id"],
                                                   o["target_id"], ev_new, ev_old, msg))
            chk.warn(msg, o["conversation_id"], [o["id"], o["claim_id"], o["target_id"]])
        by_event: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for c in claims.values():
            if c["event_id"]:
                by_event[c["event_id"]].append(c)
        # A claim the newer snapshot restated ("reaffirmed") legitimately stays current.
        reaffirmed: set[tuple[str, str]] = set()
        if self.has("snapshot_claims"):
            reaffirmed = {(r[0], r[1]) for r in self.store.execute(
                "SELECT snapshot_id, claim_id FROM snapshot_claims WHERE role = 'reaffirmed'")}
        for e in self._edges():
            if e["label"] != "updates" or not by_event.get(e["src"]) or not by_event.get(e["dst"]):
                continue
            chk.checked += 1
            snaps = {c["snapshot_id"] for c in by_event[e["src"]]}
            stale = [c for c in by_event[e["dst"]] if c["status"] != "deprecated"
                     and not any((s, c["id"]) in reaffirmed for s in snaps)]
            if stale:
                msg = (f"`updates` edge {e['id']} supersedes event {e['dst']}, but its claim(s) "
                       f"{', '.join(c['id'] for c in stale)} are still {stale[0]['status']}")
                self.disagreements.append(Disagreement(e["conversation_id"], "update_without_revise", stale[0]["id"],
                                                       None, e["src"], e["dst"], msg))
                chk.warn(msg, e["conversation_id"], [e["id"], *(c["id"] for c in stale)])

    # -- wiki ----------------------------------------------------------------------------
    def _pages(self) -> list[dict[str, Any]]:
        where, params = self.in_scope()
        return self.q(f"SELECT rowid, id, conversation_id, slug, type, markdown, links FROM wiki_pages WHERE {where} "
                      f"ORDER BY conversation_id, slug", params)

    def citations(self, chk: _Check) -> None:
        self._need_wiki("wiki_pages", "claims")
        pages = self._pages()
        if not pages:
            raise _Skip("no wiki pages (compile-wiki has not run)")
        slugs = {(p["conversation_id"], p["slug"]) for p in pages}
        claim_ids = {r[0] for r in self.store.execute("SELECT id FROM claims")}
        traj_ids = {r[0] for r in self.store.execute("SELECT id FROM trajectories")} if self.has("trajectories") else set()
        cited_msgs = sorted({m for p in pages for m in re.findall(r"\bm_[0-9a-f]{12}\b", p["markdown"])})
        msg_ids: set[str] = set()
        for start in range(0, len(cited_msgs), 500):
            chunk = cited_msgs[start:start + 500]
            msg_ids |= {r[0] for r in self.store.execute(f"SELECT id FROM messages WHERE id IN ({placeholders(chunk)})", chunk)}
        for p in pages:
            chk.checked += 1
            cid, md = p["conversation_id"], p["markdown"]
            where = f"page {p['slug']} ({p['id']})"
            for ref in sorted(set(re.findall(r"\bcl_[0-9a-f]{10}\b", md)) - claim_ids):
                chk.error(f"{where} cites claim {ref}, which does not exist", cid, [p["id"], ref])
            for ref in sorted(set(re.findall(r"\bm_[0-9a-f]{12}\b", md)) - msg_ids):
                chk.error(f"{where} cites message {ref}, which does not exist", cid, [p["id"], ref])
            for ref in sorted(set(re.findall(r"`(tr_[0-9a-f]{10})`", md)) - traj_ids):
                chk.error(f"{where} lists trajectory {ref}, which does not exist", cid, [p["id"], ref])
            linked = set(re.findall(r"\]\(([^)\s]+?)\.md\)", md)) | set(_json_list(p["links"]))
            for slug in sorted(s for s in linked if (cid, s) not in slugs):
                chk.error(f"{where} links to page '{slug}', which does not exist", cid, [p["id"], slug])

    def coverage(self, chk: _Check) -> None:
        self._need_wiki("wiki_pages", "trajectories", "wiki_page_trajectories")
        pages = self._pages()
        if not pages:
            raise _Skip("no wiki pages (compile-wiki has not run)")
        compiled = {p["conversation_id"] for p in pages}
        reached = {r[0] for r in self.store.execute(
            "SELECT wpt.trajectory_id FROM wiki_page_trajectories wpt JOIN wiki_pages p ON p.id = wpt.page_id "
            "WHERE p.type != 'index'")}
        where, params = self.in_scope()
        for tid, cid in self.store.execute(f"SELECT id, conversation_id FROM trajectories WHERE {where} ORDER BY id", params):
            if cid not in compiled:
                continue
            chk.checked += 1
            if tid not in reached:
                chk.error(f"trajectory {tid} is reachable only from the index page", cid, [tid])

    # -- answers -------------------------------------------------------------------------
    def answers(self, chk: _Check) -> None:
        rows = self.q("SELECT id, conversation_id, payload FROM answers ORDER BY created_at, id")
        convs = {r[0] for r in self.store.execute("SELECT id FROM conversations")}
        refs_by_conv: dict[str, set[str]] = defaultdict(set)
        event_ids = {r[0] for r in self.store.execute("SELECT id FROM events")}
        loaded: set[str] = set()
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
                if c in convs and c not in loaded:
                    loaded.add(c)
                    for mid, ref in self.store.execute("SELECT id, source_ref FROM messages WHERE conversation_id = ?", (c,)):
                        refs_by_conv[c].add(mid)
                        if ref:
                            refs_by_conv[c].add(ref)
            try:
                payload = json.loads(r["payload"])
            except (TypeError, ValueError):
                chk.error(f"answer {aid}: stored payload is not JSON", refs=[aid])
                continue
            refs = list(dict.fromkeys([*payload.get("source_refs", []), *items.get(aid, [])]))
            known = set().union(*(refs_by_conv[c] for c in cids)) if cids else set()
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
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            for eid, ref in self.store.execute(
                f"SELECT en.event_id, COALESCE(m.source_ref, m.id) FROM event_notes en JOIN notes n ON n.id = en.note_id "
                f"JOIN messages m ON m.id = n.message_id WHERE en.event_id IN ({placeholders(chunk)}) ORDER BY m.seq", chunk
            ):
                refs[eid].append(ref)

        def side(ev: dict[str, Any]) -> ReviewSide:
            return ReviewSide(ev["id"], ev["subject"], ev["description"], ev["quote"], ev["time_anchor"],
                              float(ev["validity"]), refs.get(ev["id"], []))

        for kind, e in picked:
            self.review.append(ReviewItem(kind, e["conversation_id"], e["id"], e["label"], float(e["confidence"]),
                                          e["justification"], side(events[e["src"]]), side(events[e["dst"]])))
        self.review.sort(key=lambda r: (r.kind != "contradiction", r.confidence, r.conversation_id, r.edge_id))


def _time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        return parse_iso(value)
    except ValueError:
        return None


def _json_list(text: Any) -> list[str]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    """Is `goal` reachable from `start` along `updates` edges (a chained revision)?"""
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        for nxt in graph.get(node, ()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Every cycle of `updates` edges, once each, by an iterative depth-first search."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    found: dict[frozenset[str], list[str]] = {}
    for root in sorted(graph):
        if root in state:
            continue
        path = [root]
        state[root] = 1
        stack: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph.get(root, []))))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(child) == 1:
                cycle = path[path.index(child):]
                found.setdefault(frozenset(cycle), cycle)
            elif child not in state:
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph.get(child, [])))))
    return list(found.values())


def run_audit(store: Store, conversation_id: str | None = None, settings: AuditSettings | None = None,
              namespace: str | None = None) -> AuditReport:
    """Run every check over the file (or one conversation) and gather the review queue.

    With `namespace` (the CLI always gives one), findings are limited to that
    namespace's conversations; file-level checks (integrity, schema) still run.
    """
    settings = settings or AuditSettings()
    every = [r[0] for r in store.execute("SELECT id FROM conversations ORDER BY id")]
    if conversation_id or (namespace is not None and every):
        cids = list(resolve_scope(store, namespace, conversation_id).conversation_ids)
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
        db=str(store.path),
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
