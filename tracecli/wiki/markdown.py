"""Page text (TrajWiki App. A.4): the deterministic markdown of a planned wiki page.

Entity pages hold their person's claims only (see `page_claims`), each key fact with
its claim id, source message and supporting quote as a block quote; a History
section lists how each changed fact moved, value by value, with dates and
quotes; Items / counts, Linked trajectories and Conflicts / uncertainty follow.
`pages` plans the pages and calls `render_page`; `obsidian` turns the stored
markdown into an Obsidian vault.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracecli.text import content_words
from tracecli.wiki.claims import fact_label, facet_group
from tracecli.wiki.trajectories import GENERIC

if TYPE_CHECKING:
    from tracecli.wiki.pages import Claim, PagePlan, PageSettings, State, Traj


def _date(ts: str | None) -> str:
    return (ts or "")[:10]


def cite(state: State, c: Claim) -> str:
    """'(claim cl_…; source D1:3 · m_…, 2023-05-08)' for a key fact."""
    srcs = []
    for mid in c.source_message_ids:
        ref, ts = state.messages.get(mid, (None, None))
        srcs.append(f"{ref} · {mid}, {_date(ts)}" if ref else f"{mid}, {_date(ts)}")
    return f"(claim {c.id}; source {'; '.join(srcs)})"


def _focus(p: PagePlan, c: Claim) -> bool:
    if p.type == "inventory":
        return c.subject == p.subject and c.family == p.family
    if p.type == "entity":
        if c.subject != p.subject:
            return False
        return not p.facet_groups or (c.facet is not None and facet_group(c.facet) in p.facet_groups)
    if p.keyword:
        return p.keyword in content_words(c.text)
    return True


def page_claims(p: PagePlan, state: State) -> list[Claim]:
    """The claims a page is about (any status), in claim order.

    An entity page holds its person's claims only — the subject comes from the statement's frame, so what
    Alice says about Bob's job is on Bob's page, not on hers: the main page every fact about the person
    (faceted, an inventory item or a framed statement, wherever it was filed) plus their retired claims in
    its trajectories, an entity-facet page the person's facts of its groups. An inventory page holds its list; a topic page all claims of its trajectories.
    """
    if p.type == "entity" and not p.facet_groups:
        linked = set(p.trajectories)
        return [c for c in state.claims if c.subject == p.subject and c.trajectory_id
                and (c.fact or (c.trajectory_id in linked and not c.current))]
    claims = state.claims_of(p.trajectories)
    return [c for c in claims if _focus(p, c)] if p.type in ("entity", "inventory") else claims


_MARK = {"needs-confirmation": " _(unconfirmed)_", "contradictory": " _(disputed)_", "active": ""}


@dataclass
class Rendered:
    """A page's deterministic markdown and routing data."""

    markdown: str
    routing_text: str
    keywords: list[str]
    entities: list[str]
    items: list[str]


def _quote_line(c: Claim, indent: str = "  ") -> str:
    """The claim's supporting quote as a block quote under its bullet."""
    return f"{indent}> {' '.join(c.supporting_quote.split())}"


def render_page(p: PagePlan, state: State, plans: Sequence[PagePlan], s: PageSettings) -> Rendered:
    """Deterministic markdown: overview, key facts (each with its quote), items, history, trajectories, conflicts."""
    if p.type == "index":
        return _render_index(p, state, plans)
    titles = {q.slug: q.title for q in plans}
    claims = page_claims(p, state)
    current = [c for c in claims if c.current]
    rank = (lambda c: 0 if c.facet else 1 if c.fact else 2) if p.type == "entity" else (lambda c: 0)  # noqa: E731
    facts = sorted(current, key=lambda c: (rank(c), c.idx))[: s.max_key_facts]
    trajs = [t for t in state.trajs if t.id in set(p.trajectories)]
    dates = sorted(d for c in claims for m in c.source_message_ids if (d := _date(state.messages.get(m, (None, None))[1])))
    noun = "facts" if p.type == "entity" else "claims"
    lines = [f"# {p.title}", "", f"_{p.type} page · {len(trajs)} linked trajectories · {len(current)} current {noun}_", ""]
    lines += ["## Overview", ""]
    retired = [c for c in claims if not c.current]
    who = p.subject or ", ".join(sorted({c.subject for c in current if c.subject})) or "the speakers"
    span = f" from {dates[0]} to {dates[-1]}" if dates else ""
    if p.type == "inventory":
        now_items = _items(c for c in current if _focus(p, c))
        lines.append(f"{p.subject}'s {p.family}: {len(now_items)} current item{'s' if len(now_items) != 1 else ''}"
                     f"{' (' + ', '.join(now_items) + ')' if now_items else ''}, recorded{span}.")
    elif p.type == "entity":
        scope = f" about {', '.join(p.facet_groups)}" if p.facet_groups else ""
        lines.append(f"What the conversation says about {p.subject}{scope}: {len(current)} current facts, "
                     f"stated{span}.")
    else:
        lines.append(f"Claims by {who}{' on ' + p.keyword if p.keyword else ''}: {len(current)} current claims across "
                     f"{len(trajs)} trajectories{span}.")
    if retired:
        lines.append(f"{len(retired)} earlier claim{'s were' if len(retired) != 1 else ' was'} revised or retracted "
                     "(see History and Conflicts / uncertainty).")
    if p.links:
        lines += ["", "See also: " + ", ".join(f"[{titles.get(x, x)}]({x}.md)" for x in p.links)]
    lines += ["", "## Key facts", ""]
    for c in facts:
        lines += [f"- {c.text}{_MARK.get(c.status, '')} {cite(state, c)}", _quote_line(c)]
    if not facts:
        lines.append("- (no current claims)")
    if len(current) > len(facts):
        lines.append(f"- … {len(current) - len(facts)} more current claims in the linked trajectories.")
    lines += ["", "## Items / counts", ""]
    lines += _items_section(p, claims)
    history = history_lines(state, claims)
    if history:
        lines += ["", "## History", ""] + history
    lines += ["", "## Linked trajectories", ""]
    lines += _trajectory_lines(trajs, claims if p.type == "entity" else state.claims_of(p.trajectories))
    lines += ["", "## Conflicts / uncertainty", ""]
    lines += conflict_lines(state, claims)
    md = "\n".join(lines).rstrip() + "\n"
    focus = [c for c in facts if _focus(p, c)] + [c for c in facts if not _focus(p, c)]
    kw = Counter(w for t in trajs for w in t.keywords.elements())
    keywords = [w for w, _ in sorted(kw.items(), key=lambda kv: (-kv[1], kv[0])) if w not in GENERIC][:20]
    items = _items(c for c in claims if c.family)
    routing = f"{p.title}. " + " ".join(c.text for c in focus) + (" Items: " + ", ".join(items) + "." if items else "")
    return Rendered(md, routing, keywords, sorted({c.subject for c in current if c.subject}), items)


def _items(claims: Any) -> list[str]:
    """Distinct items in claim order; an item whose words another item holds is that item ("dog" in "dog Biscuit")."""
    out: dict[str, str] = {}
    for c in claims:
        if c.item:
            out.setdefault(c.item.lower(), c.item)
    words = {k: set(re.findall(r"\w+", k)) for k in out}
    return [v for k, v in out.items() if not any(o != k and words[k] and words[k] < words[o] for o in out)]


def _items_section(p: PagePlan, claims: Sequence[Claim]) -> list[str]:
    lines = []
    fams: dict[tuple[str, str], list[Claim]] = {}
    for c in claims:
        if c.family and c.item:
            fams.setdefault((c.subject, c.family), []).append(c)
    keys = sorted(fams, key=lambda k: (0 if (k[0], k[1]) == (p.subject, p.family) else 1, k))
    for subject, family in keys:
        cs = fams[(subject, family)]
        now = _items(c for c in cs if c.current)
        before = [i for i in _items(c for c in cs if not c.current) if i.lower() not in {x.lower() for x in now}]
        line = f"- {subject}'s {family} ({len(now)} current): {', '.join(now) or '—'}"
        if before:
            line += f"; earlier: {', '.join(before)}"
        ids = ", ".join(c.id for c in cs if c.current)
        lines.append(line + (f" (claims {ids})" if ids else ""))
    statuses = Counter(c.status for c in claims)
    lines.append("- Claims: " + ", ".join(f"{k} {statuses[k]}" for k in ("active", "needs-confirmation", "contradictory",
                                                                         "deprecated") if statuses[k]) if claims else "- Claims: 0")
    return lines


def _step(state: State, c: Claim, when_id: str | None = None, note: str = "") -> list[str]:
    mid = when_id or (c.source_message_ids[0] if c.source_message_ids else "")
    ref, ts = state.messages.get(mid, (None, None))
    return [f"  - {_date(ts) or 'undated'} · {c.text}{note} — {ref or mid}", _quote_line(c, "    ")]


def history_lines(state: State, claims: Sequence[Claim], max_chains: int = 15, max_steps: int = 6) -> list[str]:
    """How the page's facts changed: one bullet per changed fact, its values in order with dates and quotes.

    A single-valued fact (home, work, …) is one thread whatever retired its values; a list item or a free
    statement follows its chain of revisions. Only threads with a change are shown.
    """
    from tracecli.graph.link import MULTI_VALUED_PREFIXES

    by_id = {c.id: c for c in state.claims}
    threads: dict[str, list[Claim]] = {}
    for c in claims:
        if c.facet and not c.facet.startswith(MULTI_VALUED_PREFIXES) and c.facet != "hobbies":
            key = f"{c.subject}|{c.facet}"
        else:
            root, hops = c, 0
            while root.predecessor_id in by_id and hops < 50:
                root, hops = by_id[root.predecessor_id], hops + 1  # type: ignore[index]
            key = root.id
        threads.setdefault(key, []).append(c)
    out: list[str] = []
    changed = [cs for cs in threads.values() if any(not c.current for c in cs)]
    for cs in sorted(changed, key=lambda cs: min(c.idx for c in cs))[:max_chains]:
        cs = sorted(cs, key=lambda c: c.idx)
        first = cs[0]
        label = fact_label(first.facet) if first.facet else "statement"
        out.append(f"- **{first.subject or 'unattributed'} · {label}**")
        for c in cs[-max_steps:]:
            out += _step(state, c, note=" _(current)_" if c.current else "")
        last = cs[-1]
        op = state.retired_by.get(last.id)
        if not last.current and op is not None and op["op"] == "DEPRECATE":
            mids = json.loads(op["source_message_ids"])
            ref, ts = state.messages.get(mids[0], (None, None)) if mids else (None, None)
            out += [f"  - {_date(ts) or 'undated'} · no longer holds — {ref or (mids[0] if mids else '')}",
                    f"    > {' '.join(str(op['quote']).split())}"]
    return out


def _trajectory_lines(trajs: Sequence[Traj], claims: Sequence[Claim]) -> list[str]:
    out = []
    for t in trajs:
        own = [c for c in claims if c.trajectory_id == t.id and c.current][:2]
        summary = " ".join(c.text for c in own)
        span = f"{_date(t.first_at)} → {_date(t.last_at)}" if t.first_at else ""
        out.append(f"- `{t.id}` · {t.n_snapshots} snapshot{'s' if t.n_snapshots != 1 else ''} · {span}"
                   + (f" — {summary}" if summary else ""))
    return out


def conflict_lines(state: State, claims: Sequence[Claim]) -> list[str]:
    by_id = {c.id: c for c in state.claims}
    out = []
    for c in claims:
        if c.current:
            continue
        op = state.retired_by.get(c.id)
        if op is None:
            continue
        when = _date(next((state.messages[m][1] for m in json.loads(op["source_message_ids"]) if m in state.messages), None))
        if op["op"] == "REVISE" and c.successor_id in by_id:
            new = by_id[c.successor_id]
            verb = "Marked disputed" if new.status == "contradictory" and new.text == c.text else "Revised"
            out.append(f"- {verb}{' ' + when if when else ''}: ~~{c.text}~~ → {new.text} (claims {c.id} → {new.id})")
        else:
            out.append(f"- Retracted{' ' + when if when else ''}: ~~{c.text}~~ (claim {c.id}; evidence: \"{op['quote']}\")")
    for c in claims:
        if c.status == "needs-confirmation":
            out.append(f"- Unconfirmed: {c.text} (claim {c.id}; \"{c.supporting_quote}\")")
        elif c.status == "contradictory":
            out.append(f"- Disputed: {c.text} (claim {c.id}; \"{c.supporting_quote}\")")
    return out or ["- No revisions, retractions or open questions in these trajectories."]


def _render_index(p: PagePlan, state: State, plans: Sequence[PagePlan]) -> Rendered:
    statuses = Counter(c.status for c in state.claims)
    revised = sum(1 for o in state.retired_by.values() if o["op"] == "REVISE")
    retracted = sum(1 for o in state.retired_by.values() if o["op"] == "DEPRECATE")
    others = [q for q in plans if q.type != "index"]
    lines = [f"# {p.title}", "", f"_index page · {len(state.trajs)} trajectories · {len(others)} pages_", "",
             "## Overview", "",
             f"The Memory Wiki of conversation {state.conversation_id} ({', '.join(state.participants)}): "
             f"{len(others)} pages over {len(state.trajs)} trajectories and {len(state.claims)} claims "
             f"({revised} revised, {retracted} retracted).", "", "## Key facts", ""]
    groups = (("Entities", lambda q: q.type == "entity"), ("Inventories", lambda q: q.type == "inventory"),
              ("Topics", lambda q: q.type == "topic" and not q.rescue), ("More", lambda q: q.rescue))
    for name, pred in groups:
        members = [q for q in others if pred(q)]
        if members:
            lines += [f"### {name}", ""]
            lines += [f"- [{q.title}]({q.slug}.md) — {len(q.trajectories)} trajectories" for q in members]
            lines.append("")
    lines += ["## Items / counts", ""]
    lines += [f"- Claims {k}: {statuses[k]}" for k in ("active", "needs-confirmation", "contradictory", "deprecated")]
    lines += [f"- Pages {t}: {sum(1 for q in others if q.type == t)}" for t in ("entity", "inventory", "topic")]
    lines += ["", "## Linked trajectories", ""]
    pages_of: dict[str, list[PagePlan]] = {}
    for q in others:
        for t in q.trajectories:
            pages_of.setdefault(t, []).append(q)
    for t in state.trajs:
        links = ", ".join(f"[{q.title}]({q.slug}.md)" for q in pages_of.get(t.id, []))
        lines.append(f"- `{t.id}` · {t.n_snapshots} snapshots — {links}")
    lines += ["", "## Conflicts / uncertainty", ""]
    with_conflicts = [q for q in others if any(not c.current or c.status != "active" for c in state.claims_of(q.trajectories))]
    if with_conflicts:
        lines.append(f"- {revised} revisions, {retracted} retractions, {statuses['needs-confirmation']} unconfirmed and "
                     f"{statuses['contradictory']} disputed claims; see: "
                     + ", ".join(f"[{q.title}]({q.slug}.md)" for q in with_conflicts[:30]))
    else:
        lines.append("- No revisions, retractions or open questions.")
    md = "\n".join(lines).rstrip() + "\n"
    routing = p.title + ". " + " ".join(q.title + "." for q in others)
    return Rendered(md, routing, [], list(state.participants), [])
