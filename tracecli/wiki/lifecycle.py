"""The claim lifecycle (TrajWiki Eq. 5, App. A.3): an append-only log of ADD / REVISE / DEPRECATE.

* ADD appends a claim with its status (active, needs-confirmation or
  contradictory).
* REVISE appends a claim that supersedes an earlier one: the earlier claim
  becomes `deprecated` and points at its successor.
* DEPRECATE retires a claim on explicit evidence (a retraction) without a
  successor.

Nothing is deleted or rewritten: the database refuses it (triggers in
m005_wiki), and a claim's `status` / `successor_id` move only as ops dictate,
so replaying the log (`replay`) reproduces them.

Which op happens is decided by the evidence graph, not by string matching:
a claim from an event that `updates` an earlier event REVISEs that event's
current claims (one per item for lists; leftovers are DEPRECATEd); a negated
event ("I no longer play squash") DEPRECATEs what it retracts; a
`contradicts` edge marks both sides contradictory (the old claim through a
REVISE into a contradictory copy, as the paper's status operations do). A
claim whose text repeats a current claim is not added again: the snapshot
reaffirms it, and a hedged claim confirmed later is REVISEd to active. With
an LLM, a new free (non-faceted) claim may REVISE one of up to three earlier
claims of the same person that share words with it (a structured judge;
ADD when it fails).
"""

from __future__ import annotations

import json
import os.path
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracecli.errors import BadInput, NoAnswer, NotFound
from tracecli.graph import facets as F
from tracecli.graph.link import MULTI_VALUED_PREFIXES
from tracecli.scope import resolve_scope
from tracecli.store.db import Store, dumps, like_escape, placeholders, utc_now
from tracecli.text import content_words, short_hash, stem
from tracecli.wiki.claims import ClaimDraft, EventRow, MessageRow, fact_label, facet_group, norm_text

if TYPE_CHECKING:
    from tracecli.providers.llm import ChatModel

CURRENT = ("active", "needs-confirmation", "contradictory")


@dataclass
class ClaimRec:
    """What the lifecycle keeps in memory about a stored claim."""

    id: str
    idx: int
    text: str
    status: str
    event_id: str | None
    subject: str
    facet: str | None
    trajectory_id: str | None
    negated: bool = False
    snapshot_id: str = ""
    item: str | None = None

    @property
    def current(self) -> bool:
        return self.status != "deprecated"


@dataclass
class LifecycleCounts:
    """What one compile appended."""

    ops: Counter[str] = field(default_factory=Counter)
    claims_new: int = 0
    reaffirmed: int = 0
    llm_judge_calls: int = 0


class Lifecycle:
    """Applies one snapshot's drafts to a conversation's claims and op log."""

    def __init__(self, store: Store, conversation_id: str, llm: ChatModel | None = None) -> None:
        self.store = store
        self.cid = conversation_id
        self.llm = llm if llm is not None and getattr(llm, "is_available", False) else None
        self.claims: dict[str, ClaimRec] = {}
        self.by_event: dict[str, list[str]] = {}
        self.current_by_text: dict[str, str] = {}
        self.counts = LifecycleCounts()
        for r in store.execute(
            "SELECT id, idx, text, status, event_id, subject, facet, trajectory_id, negated, snapshot_id, item FROM claims "
            "WHERE conversation_id = ? ORDER BY idx",
            (conversation_id,),
        ):
            self._remember(ClaimRec(*r))
        # a claim restated by a later event belongs to that event too (its updates must reach the claim)
        for event_id, claim_id in store.execute(
            "SELECT sc.event_id, sc.claim_id FROM snapshot_claims sc JOIN claims c ON c.id = sc.claim_id "
            "WHERE c.conversation_id = ? AND sc.role = 'reaffirmed' AND sc.event_id != '' "
            "ORDER BY c.idx, sc.snapshot_id",
            (conversation_id,),
        ):
            self.by_event.setdefault(event_id, []).append(claim_id)
        self.next_idx = store.execute(
            "SELECT COALESCE(MAX(idx), -1) + 1 FROM claims WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()[0]
        self.next_n = store.execute(
            "SELECT COALESCE(MAX(n), -1) + 1 FROM claim_ops WHERE conversation_id = ?", (conversation_id,)
        ).fetchone()[0]

    # -- bookkeeping ----------------------------------------------------------------
    def _remember(self, rec: ClaimRec) -> None:
        self.claims[rec.id] = rec
        if rec.event_id:
            self.by_event.setdefault(rec.event_id, []).append(rec.id)
        if rec.current:
            self.current_by_text[norm_text(rec.text)] = rec.id

    def _retire(self, claim_id: str, successor: str | None) -> None:
        rec = self.claims[claim_id]
        rec.status = "deprecated"
        key = norm_text(rec.text)
        if self.current_by_text.get(key) == claim_id:
            del self.current_by_text[key]
        self.store.execute(
            "UPDATE claims SET status = 'deprecated', successor_id = ? WHERE id = ?", (successor, claim_id)
        )

    def trajectory_of_event(self) -> Mapping[str, str]:
        """event id → trajectory of its newest claim (for the matcher's update rule).

        A read-only view that looks an event up when asked: the matcher asks about the few events a
        snapshot's events update, and building the whole map for every snapshot made compiling
        quadratic in the number of claims.
        """
        return _EventTrajectories(self)

    def _insert(self, d: ClaimDraft, claim_id: str, snapshot_id: str, trajectory_id: str | None, status: str,
                predecessor: str | None) -> ClaimRec:
        idx = self.next_idx
        self.next_idx += 1
        self.store.execute(
            "INSERT INTO claims(id, conversation_id, idx, snapshot_id, trajectory_id, event_id, subject, facet, fact_key, "
            "item, family, negated, text, status, source_message_ids, supporting_quote, origin, predecessor_id, "
            "successor_id, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL,?)",
            (claim_id, self.cid, idx, snapshot_id, trajectory_id, d.event_id, d.subject, d.facet, d.fact_key, d.item,
             d.family, int(d.negated), d.text, status, dumps(d.source_message_ids), d.supporting_quote, d.origin,
             predecessor, utc_now()),
        )
        rec = ClaimRec(claim_id, idx, d.text, status, d.event_id, d.subject, d.facet, trajectory_id, d.negated, snapshot_id,
                       d.item)
        self._remember(rec)
        self.counts.claims_new += 1
        return rec

    def _op(self, op: str, claim_id: str, target_id: str | None, status: str, snapshot_id: str,
            event_id: str | None, sources: Sequence[str], quote: str, reason: str) -> None:
        n = self.next_n
        self.next_n += 1
        self.store.execute(
            "INSERT INTO claim_ops(id, conversation_id, n, op, claim_id, target_id, status, snapshot_id, event_id, "
            "source_message_ids, quote, reason, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            ("op_" + short_hash(self.cid, op, claim_id, target_id or ""), self.cid, n, op, claim_id, target_id, status,
             snapshot_id, event_id, dumps(list(sources)), quote, reason, utc_now()),
        )
        self.counts.ops[op] += 1

    def _link(self, snapshot_id: str, claim_id: str, role: str, event_id: str | None = None) -> None:
        self.store.execute(
            "INSERT INTO snapshot_claims(snapshot_id, claim_id, role, event_id) VALUES (?,?,?,?) ON CONFLICT DO NOTHING",
            (snapshot_id, claim_id, role, event_id or ""),
        )

    # -- the ops ------------------------------------------------------------------------
    def add(self, d: ClaimDraft, snapshot_id: str, trajectory_id: str | None, reason: str = "new claim") -> str:
        cid = "cl_" + short_hash(self.cid, snapshot_id, d.key)
        self._insert(d, cid, snapshot_id, trajectory_id, d.status, None)
        self._op("ADD", cid, None, d.status, snapshot_id, d.event_id, d.source_message_ids, d.supporting_quote, reason)
        self._link(snapshot_id, cid, "added")
        return cid

    def revise(self, d: ClaimDraft, target: str, snapshot_id: str, trajectory_id: str | None, reason: str,
               claim_id: str | None = None, status: str | None = None) -> str:
        cid = claim_id or "cl_" + short_hash(self.cid, snapshot_id, d.key)
        st = status or d.status
        self._insert(d, cid, snapshot_id, trajectory_id, st, target)
        self._retire(target, cid)
        self._op("REVISE", cid, target, st, snapshot_id, d.event_id, d.source_message_ids, d.supporting_quote, reason)
        self._link(snapshot_id, cid, "revised")
        self._link(snapshot_id, target, "superseded")
        return cid

    def deprecate(self, target: str, snapshot_id: str, event_id: str | None, sources: Sequence[str], quote: str,
                  reason: str) -> None:
        self._retire(target, None)
        self._op("DEPRECATE", target, None, "deprecated", snapshot_id, event_id, sources, quote, reason)
        self._link(snapshot_id, target, "deprecated")

    # -- one snapshot -----------------------------------------------------------------------
    def apply(
        self,
        snapshot_id: str,
        trajectory_id: str | None,
        drafts: Sequence[ClaimDraft],
        events: Sequence[EventRow],
        edges_by_src: Mapping[str, Sequence[tuple[str, str]]],
        messages: Mapping[str, MessageRow],
    ) -> None:
        """Turn a snapshot's drafts (and its events' graph edges) into ops."""
        by_event: dict[str, list[ClaimDraft]] = {}
        units: list[tuple[tuple[int, int, int], str, EventRow | None, list[ClaimDraft]]] = []
        for d in drafts:
            if d.event_id:
                by_event.setdefault(d.event_id, []).append(d)
        seen_events = set()
        for ev in events:
            seen_events.add(ev.id)
            units.append(((ev.seq, ev.sentence_idx, 0), ev.id, ev, by_event.get(ev.id, [])))
        for d in drafts:
            if not d.event_id or d.event_id not in seen_events:
                units.append((d.order, d.key, None, [d]))
        units.sort(key=lambda u: (u[0], u[1]))
        for _, _, ev, ds in units:
            self._unit(snapshot_id, trajectory_id, ev, ds, edges_by_src, messages)

    def _current_of(self, event_ids: Sequence[str]) -> list[str]:
        out: list[str] = []
        for e in event_ids:
            for c in self.by_event.get(e, []):
                if self.claims[c].current and c not in out:
                    out.append(c)
        return sorted(out, key=lambda c: self.claims[c].idx)

    def _unit(self, snap: str, traj: str | None, ev: EventRow | None, drafts: list[ClaimDraft],
              edges_by_src: Mapping[str, Sequence[tuple[str, str]]], messages: Mapping[str, MessageRow]) -> None:
        edges = list(edges_by_src.get(ev.id, ())) if ev is not None else []
        updated = [dst for dst, label in edges if label == "updates"]
        contradicted = [dst for dst, label in edges if label == "contradicts"]
        old = self._current_of(updated)
        if ev is not None and ev.negated and ev.facet and old:
            quote = drafts[0].supporting_quote if drafts else ev.quote
            sources = drafts[0].source_message_ids if drafts else []
            for c in old:
                self.deprecate(c, snap, ev.id, sources, quote, f"retracted: {_short(ev.quote)}")
            return
        whose = next((d.subject for d in drafts if d.subject), None)
        if whose is not None:  # a statement about one person never supersedes another person's claim
            old = [c for c in old if self.claims[c].subject in (whose, "")]
        fresh: list[ClaimDraft] = []
        handled: set[str] = set()
        for d in drafts:
            if contradicted:
                d.status = "contradictory"
            existing = self.current_by_text.get(norm_text(d.text)) or self._alias_of(d)
            if existing is None:
                fresh.append(d)
                continue
            handled.add(existing)
            rec = self.claims[existing]
            if rec.status == "needs-confirmation" and d.status == "active":
                self.revise(d, existing, snap, traj, "confirmed: the claim is stated again without a hedge")
            else:
                self.counts.reaffirmed += 1
                self._link(snap, existing, "reaffirmed", d.event_id)
                if d.event_id and existing not in self.by_event.get(d.event_id, []):
                    self.by_event.setdefault(d.event_id, []).append(existing)
        old = [c for c in old if c not in handled]
        why = f"updated: {_short(ev.quote)}" if ev is not None else ""
        placed: list[str] = []
        for d in fresh:
            if old:
                placed.append(self.revise(d, old.pop(0), snap, traj, why))
                continue
            target = self._judge(d) if ev is None or not ev.facet else None
            if target is not None:
                placed.append(self.revise(d, target, snap, traj, "revised (LLM judge, validated)"))
            else:
                placed.append(self.add(d, snap, traj, "contradicts an earlier claim" if contradicted else "new claim"))
        for c in old:
            sources = drafts[0].source_message_ids if drafts else []
            quote = drafts[0].supporting_quote if drafts else (ev.quote if ev is not None else "")
            self.deprecate(c, snap, ev.id if ev is not None else None, sources, quote,
                           f"superseded without a counterpart: {_short(ev.quote) if ev is not None else ''}")
        if ev is not None and not contradicted:
            self._one_value(snap, ev, placed, handled, drafts)
        for c in self._current_of(contradicted):
            rec = self.claims[c]
            if rec.status == "contradictory":
                continue
            copy = self._copy_draft(c)
            self.revise(copy, c, snap, rec.trajectory_id, f"contradicted by: {_short(ev.quote) if ev else ''}",
                        claim_id="cl_" + short_hash(self.cid, c, "contradicts", ev.id if ev else ""),
                        status="contradictory")

    def _alias_of(self, d: ClaimDraft) -> str | None:
        """A current claim stating the same value in other words ('Skoda Octavia' / 'the Octavia')."""
        if not d.facet or not d.item or d.negated:
            return None
        for rec in sorted(self.claims.values(), key=lambda r: r.idx):
            if (rec.current and not rec.negated and rec.subject == d.subject and rec.facet == d.facet
                    and same_value(rec.item, d.item)):
                return rec.id
        return None

    def _one_value(self, snap: str, ev: EventRow, placed: Sequence[str], kept: set[str], drafts: Sequence[ClaimDraft]) -> None:
        """A single-valued fact has one current value: retire other positive claims the graph left standing.

        The graph's `updates` edges normally do this already; this catches the
        chains they leave open (a retraction that names an older value, say).
        Claims of the same snapshot are siblings ("the Kia Niro" / "Niro"), not rivals.
        """
        if not ev.facet or ev.negated or ev.facet.startswith(MULTI_VALUED_PREFIXES) or ev.facet == "hobbies":
            return
        subject = next((d.subject for d in drafts if d.facet == ev.facet), ev.subject)  # whose fact, read from the clause
        new = [c for c in (*placed, *kept) if self.claims[c].current and not self.claims[c].negated]
        if not new:
            return
        mine = set(new)
        for rec in sorted(self.claims.values(), key=lambda r: r.idx):
            if (rec.current and not rec.negated and rec.id not in mine and rec.subject == subject
                    and rec.facet == ev.facet and rec.snapshot_id != snap and not same_value(rec.item, ev.value)):
                d = drafts[0]
                self.deprecate(rec.id, snap, ev.id, d.source_message_ids, d.supporting_quote,
                               f"superseded: {subject}'s {ev.facet} is now '{ev.value}'")

    def _copy_draft(self, claim_id: str) -> ClaimDraft:
        r = self.store.query("SELECT * FROM claims WHERE id = ?", (claim_id,))[0]
        return ClaimDraft(
            key=f"copy|{claim_id}", text=r["text"], subject=r["subject"],
            source_message_ids=json.loads(r["source_message_ids"]), supporting_quote=r["supporting_quote"],
            status="contradictory", event_id=r["event_id"], facet=r["facet"], item=r["item"], family=r["family"],
            origin=r["origin"], negated=bool(r["negated"]),
        )

    # -- the LLM judge (free claims only) ----------------------------------------------------
    def _judge(self, d: ClaimDraft) -> str | None:
        if self.llm is None:
            return None
        words = set(content_words(d.text)) - {d.subject.lower()}
        scored = []
        for rec in self.claims.values():
            if not rec.current or rec.facet or rec.subject != d.subject:
                continue
            overlap = len(words & set(content_words(rec.text)))
            if overlap >= 2:
                scored.append((overlap, rec.idx, rec))
        if not scored:
            return None
        scored.sort(key=lambda t: (-t[0], -t[1]))
        cands = [rec for _, _, rec in scored[:3]]
        self.counts.llm_judge_calls += 1
        lines = [f"New claim: {d.text}", "Earlier claims:"] + [f"C{n} {rec.text}" for n, rec in enumerate(cands, 1)]
        result = self.llm.complete(
            [{"role": "system", "content": _JUDGE_SYSTEM}, {"role": "user", "content": "\n".join(lines)}],
            JUDGE_SCHEMA, stage="compile-wiki",
        )
        if not result.ok or not isinstance(result.value, dict):
            return None
        if result.value.get("decision") != "REVISE":
            return None
        m = re.fullmatch(r"\s*C?(\d+)\s*", str(result.value.get("selected_candidate") or ""))
        if not m or not 1 <= int(m.group(1)) <= len(cands):
            return None
        return cands[int(m.group(1)) - 1].id


JUDGE_SCHEMA: dict[str, Any] = {
    "title": "claim_transition",
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["REVISE", "ADD"]},
        "selected_candidate": {"type": ["string", "null"]},
        "rationale": {"type": "string", "maxLength": 400},
    },
    "required": ["decision", "selected_candidate", "rationale"],
    "additionalProperties": False,
}

_JUDGE_SYSTEM = """\
Decide whether a new memory claim replaces one of the earlier claims about the same person.
REVISE (with the candidate's label, e.g. "C2") only when the new claim states a newer value
of the same fact, so the earlier claim is no longer true. Otherwise ADD with
selected_candidate null: extra detail, a related fact, or a repeat are ADD. Reply with JSON only."""


def same_value(a: str | None, b: str | None) -> bool:
    """Two values that state the same thing: equal, or one's words within the other's (as the graph's linker judges)."""
    if not a or not b:
        return False
    wa, wb = set(F.normalise_value(a).split()), set(F.normalise_value(b).split())
    return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)


def _short(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


# -- reading the log ----------------------------------------------------------------------


def replay(store: Store, conversation_id: str) -> dict[str, tuple[str, str | None]]:
    """claim id → (status, successor) as the op log dictates (equals the claims table when it is consistent)."""
    state: dict[str, tuple[str, str | None]] = {}
    for op, claim, target, status in store.execute(
        "SELECT op, claim_id, target_id, status FROM claim_ops WHERE conversation_id = ? ORDER BY n", (conversation_id,)
    ):
        if op == "ADD":
            state[claim] = (status, None)
        elif op == "REVISE":
            state[target] = ("deprecated", claim)
            state[claim] = (status, None)
        elif op == "DEPRECATE":
            state[claim] = ("deprecated", None)
    return state


@dataclass
class HistoryStep:
    """One op of a claim's history, with the evidence behind it."""

    n: int
    op: str
    claim_id: str
    target_id: str | None
    text: str
    status: str  # the claim's status now (a claim revised since then is `deprecated`), as the table shows it
    op_status: str  # the status this op gave the claim when it ran
    current_status: str  # the same as `status` (kept for readers of the older JSON shape)
    date: str | None
    quote: str
    source_refs: list[str]
    message_ids: list[str]
    reason: str


@dataclass
class ClaimChain:
    """The ordered history of one fact (a subject's facet, or a chain of revisions)."""

    conversation_id: str
    fact: str
    current: list[str]
    steps: list[HistoryStep]


_CLAIM_ID = re.compile(r"^cl_[0-9a-f]{3,10}$")


def claim_history(store: Store, query: str, conversation_id: str | None = None, limit: int = 20,
                  namespace: str | None = None) -> list[ClaimChain]:
    """Histories of the claims (of one conversation or a namespace) matching a claim id (or id prefix) or a query's words."""
    q = query.strip()
    if not q:
        raise BadInput("the query is empty; give a claim id (cl_…) or words the claims contain")
    cids = resolve_scope(store, namespace, conversation_id).conversation_ids
    params: list[Any] = list(cids)
    where = f" AND conversation_id IN ({placeholders(cids)})"
    if _CLAIM_ID.match(q):
        rows = store.query(f"SELECT * FROM claims WHERE id LIKE ? ESCAPE '\\'{where} ORDER BY conversation_id, idx",
                           (like_escape(q) + "%", *params))
        if not rows:
            raise NotFound(f"no claim '{q}' in {store.path.name}; run `tracecli compile-wiki` first")
        hits = rows
    else:
        terms = _match_terms(q)
        if not terms:
            raise NoAnswer("the query has no words to look for")
        # a word may be in the claim's text or in its fact's name ("Alice's home" finds "Alice lives in Porto.")
        hits = [r for r in store.query(f"SELECT * FROM claims WHERE 1 = 1{where} ORDER BY conversation_id, idx", params)
                if all(t in _searchable(r) for t in terms)]
        if not hits:
            raise NoAnswer(f"no claim mentions {' '.join(terms)!r}")
    chains: dict[tuple[str, str], set[str]] = {}
    for h in hits:
        key, members = _chain_of(store, h)
        chains.setdefault(key, set()).update(members)
    ranked = sorted(chains.items(), key=lambda kv: (-sum(1 for h in hits if h["id"] in kv[1]), kv[0]))
    return [_render_chain(store, cid, fact, members) for (cid, fact), members in ranked[:limit]]


def _searchable(claim: Mapping[str, Any]) -> str:
    """What a claim is matched against: its text, subject, item and the reader's names of its fact."""
    facet = claim["facet"] or ""
    parts = [claim["text"], claim["subject"] or "", claim["item"] or "", claim["family"] or ""]
    if facet:
        parts += [facet_group(facet), fact_label(facet), facet.replace("_", " ").replace(":", " ")]
    return " ".join(parts).lower()


def _match_terms(query: str) -> list[str]:
    """What each query word must appear as in a claim's text: possessives dropped ("Alice's dog" → alice, dog) and
    each word cut to what it shares with its stem, so inflections match ("dogs" → dog, "moving" → mov)."""
    plain = re.sub(r"(?i)(\w)['’]s\b", r"\1", query)
    found = content_words(plain) or [w.lower() for w in plain.split() if w]
    out = []
    for w in found:
        root = os.path.commonprefix([w, stem(w)])
        out.append(root if len(root) >= 3 else w)
    return list(dict.fromkeys(out))


def _chain_of(store: Store, claim: Mapping[str, Any]) -> tuple[tuple[str, str], set[str]]:
    cid = claim["conversation_id"]
    if claim["fact_key"]:
        ids = {r[0] for r in store.execute("SELECT id FROM claims WHERE conversation_id = ? AND fact_key = ?",
                                           (cid, claim["fact_key"]))}
        return (cid, claim["fact_key"]), ids
    root = claim["id"]
    while True:
        row = store.execute("SELECT predecessor_id FROM claims WHERE id = ?", (root,)).fetchone()
        if not row or not row[0]:
            break
        root = row[0]
    ids = {root}
    frontier = [root]
    while frontier:
        nxt = []
        for c in frontier:
            for (s,) in store.execute("SELECT id FROM claims WHERE predecessor_id = ?", (c,)):
                if s not in ids:
                    ids.add(s)
                    nxt.append(s)
        frontier = nxt
    return (cid, root), ids


def _render_chain(store: Store, cid: str, fact: str, members: set[str]) -> ClaimChain:
    marks = placeholders(members)
    claims = {r["id"]: r for r in store.query(f"SELECT * FROM claims WHERE id IN ({marks})", tuple(members))}
    ops = store.query(
        f"SELECT * FROM claim_ops WHERE conversation_id = ? AND (claim_id IN ({marks}) OR target_id IN ({marks})) "
        "ORDER BY n",
        (cid, *members, *members),
    )
    msg_ids = {m for o in ops for m in json.loads(o["source_message_ids"])}
    msgs = {}
    if msg_ids:
        mm = placeholders(msg_ids)
        msgs = {r[0]: (r[1], r[2]) for r in store.execute(f"SELECT id, timestamp, source_ref FROM messages WHERE id IN ({mm})", tuple(msg_ids))}
    steps = []
    for o in ops:
        claim = claims.get(o["claim_id"])
        if claim is None:
            continue
        mids = json.loads(o["source_message_ids"])
        steps.append(HistoryStep(
            n=o["n"], op=o["op"], claim_id=o["claim_id"], target_id=o["target_id"], text=claim["text"], status=claim["status"],
            op_status=o["status"], current_status=claim["status"], date=next((msgs[m][0] for m in mids if m in msgs), None), quote=o["quote"],
            source_refs=[msgs[m][1] or m for m in mids if m in msgs], message_ids=mids, reason=o["reason"],
        ))
    current = [c["text"] for c in sorted(claims.values(), key=lambda c: c["idx"]) if c["status"] != "deprecated"]
    return ClaimChain(conversation_id=cid, fact=fact, current=current, steps=steps)


class _EventTrajectories(Mapping[str, str]):
    """`Lifecycle.trajectory_of_event()`: event id → trajectory id of the event's newest claim that has one."""

    def __init__(self, life: Lifecycle) -> None:
        self._life = life

    def __getitem__(self, event_id: str) -> str:
        ids = self._life.by_event.get(event_id)
        if ids:
            tid = max((self._life.claims[c] for c in ids), key=lambda r: r.idx).trajectory_id
            if tid:
                return tid
        raise KeyError(event_id)

    def __iter__(self) -> Iterator[str]:
        return (e for e in self._life.by_event if e in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)
