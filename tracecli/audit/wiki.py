"""audit's claims and wiki checks: quotes, deprecations, the op log, claims vs graph, citations, coverage."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from tracecli.audit.report import (
    _Check,
    Disagreement,
    _json_list,
    _reaches,
    _short,
    _Skip,
)
from tracecli.store.db import execute_in


class WikiChecks:
    """The claims/wiki group of `_Auditor` (a mixin: it uses the auditor's store, scope and caches)."""

    # -- claims --------------------------------------------------------------------------
    def _need_wiki(self, *tables: str) -> None:
        missing = [t for t in tables if not self.store.has_table(t)]
        if missing:
            raise _Skip(f"no {', '.join(missing)} table (compile-wiki has not created it)")

    def _claims(self) -> dict[str, dict[str, Any]]:
        return self.scoped_rows(
            "claims", "SELECT id, conversation_id, idx, snapshot_id, event_id, text, status, source_message_ids, "
            "supporting_quote, predecessor_id, successor_id FROM claims WHERE {where} ORDER BY conversation_id, idx",
            by_id=True)

    def _ops(self) -> list[dict[str, Any]]:
        return self.scoped_rows(
            "ops", "SELECT id, conversation_id, n, op, claim_id, target_id, status, event_id, reason, created_at "
            "FROM claim_ops WHERE {where} ORDER BY conversation_id, n")

    def claim_quotes(self, chk: _Check) -> None:
        self._need_wiki("claims")
        claims = self._claims()
        ids = sorted({m for c in claims.values() for m in _json_list(c["source_message_ids"])})
        texts = dict(execute_in(self.store, "SELECT id, text FROM messages WHERE id IN ({marks})", ids))
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
        triggers = self.store.trigger_names()
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
        msg_ids = {r[0] for r in execute_in(self.store, "SELECT id FROM messages WHERE id IN ({marks})", cited_msgs)}
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
