"""The Memory Wiki (TrajWiki Eq. 6–8, App. A.4): plan pages, render markdown, embed, index.

Pages are re-planned from the whole trajectory store after every compile:

* one `index` page linking every trajectory (a directory, never the only way in);
* `entity` pages, one per person: their profile trajectories (those holding
  their changeable facts); a person with more than `max_size` such
  trajectories gets entity-facet pages ("Alice: home, work") as well;
* `inventory` pages for list-like or countable facts of a person (hobbies,
  pets, instruments, places, books, …) with at least `inventory_min_items`
  distinct items;
* `topic` pages seeded by keywords shared by several trajectories, dropped
  when `topic_redundancy` of their trajectories already have an entity or
  inventory page;
* a coverage audit adds rescue (topic) pages so that no trajectory is
  reachable only from the index (Eq. 8).

Every non-index page links at most `max_size` trajectories: bigger seeds are
split into shards of about `target_size` by the trajectories' centroid
embeddings (deterministic farthest-point seeding, capacity-bounded
assignment). Each page is rendered deterministically (overview, key facts,
items/counts, linked trajectories, conflicts/uncertainty; every key fact
cites its claim and source messages); its hash decides whether it is
rewritten, re-embedded into `wiki_vectors` and re-indexed in `wiki_fts`.
With an LLM, changed pages are written by the model and validated, falling
back to the deterministic page.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tracecli.store.db import Store, dumps, utc_now
from tracecli.text import STOPWORDS, short_hash
from tracecli.wiki.claims import facet_group
from tracecli.wiki.markdown import Rendered, conflict_lines, cite, render_page
from tracecli.wiki.trajectories import GENERIC

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel

RENDER_VERSION = "1"
PAGE_TYPES = ("index", "entity", "topic", "inventory")


@dataclass(frozen=True)
class PageSettings:
    """Page planning knobs (App. A.4, A.7)."""

    target_size: int = 4  # trajectories per shard when a seed is split
    max_size: int = 6  # at most this many trajectories on a non-index page
    topic_redundancy: float = 0.8  # drop a topic seed when this share is covered by entity/inventory pages
    topic_keywords: int = 5  # salient keywords per trajectory for topic seeding
    inventory_min_items: int = 2  # distinct items before a list becomes an inventory page
    max_key_facts: int = 40  # key facts listed per page (the rest stay in the linked trajectories)


@dataclass
class PagesResult:
    """What page compilation did."""

    total: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    rescue: int = 0
    index_only: int = 0
    llm_pages: int = 0
    llm_fallbacks: int = 0


def ensure_wiki_vectors(store: Store, dim: int) -> None:
    """Create the `wiki_vectors` table (like `note_vectors`) for `dim`-d page embeddings."""
    store.ensure_vector_table("wiki_vectors", dim)


def index_page(store: Store, rowid: int, cid: str, title: str, routing_text: str, keywords: Sequence[str],
               vector: Sequence[float]) -> None:
    """Write a page's `wiki_fts` row and `wiki_vectors` embedding (the page row itself must exist)."""
    store.execute("INSERT INTO wiki_fts(rowid, title, body, keywords, conversation_id) VALUES (?,?,?,?,?)",
                  (rowid, title, routing_text, " ".join(keywords), cid))
    store.execute("INSERT INTO wiki_vectors(rowid, conversation_id, embedding) VALUES (?,?,?)",
                  (rowid, cid, store.vector_value(vector)))


def slugify(text: str) -> str:
    """A lower-case, hyphenated, file-name-safe slug."""
    s = re.sub(r"[’']s\b", "s", text.lower())
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    return s[:60].strip("-") or "page"


# -- loading ------------------------------------------------------------------------------


@dataclass
class Traj:
    """A trajectory as page planning sees it."""

    id: str
    idx: int
    n_snapshots: int
    first_at: str | None
    last_at: str | None
    keywords: Counter[str]
    centroid: np.ndarray
    terms: set[str] = field(default_factory=set)


@dataclass
class Claim:
    """A claim as page rendering sees it."""

    id: str
    idx: int
    trajectory_id: str | None
    subject: str
    facet: str | None
    item: str | None
    family: str | None
    text: str
    status: str
    source_message_ids: list[str]
    supporting_quote: str
    successor_id: str | None
    predecessor_id: str | None = None
    framed: bool = False  # its event has a statement frame: a value stated about a participant

    @property
    def current(self) -> bool:
        return self.status != "deprecated"

    @property
    def fact(self) -> bool:
        """A fact a profile lists (a facet, an inventory item or a framed statement), not chat about the day."""
        return bool(self.facet or self.family or self.framed)


@dataclass
class State:
    """Everything page planning and rendering read, loaded once."""

    conversation_id: str
    participants: list[str]
    trajs: list[Traj]
    claims: list[Claim]
    messages: dict[str, tuple[str | None, str | None]]  # id → (source_ref, timestamp)
    retired_by: dict[str, dict[str, Any]]  # claim id → the op that deprecated it

    def claims_of(self, tids: Sequence[str]) -> list[Claim]:
        s = set(tids)
        return [c for c in self.claims if c.trajectory_id in s]



def _framed(frame: str | None) -> bool:
    """Was the claim's event read as a frame that states a value (not an anaphoric 'it' or a bare retraction)?"""
    key = json.loads(frame).get("key", "") if frame else ""
    return key not in ("", "it", "retract")


def load_state(store: Store, cid: str) -> State:
    """Trajectories, claims, message anchors and retirement ops of a conversation."""
    participants = json.loads(store.execute("SELECT participants FROM conversations WHERE id = ?", (cid,)).fetchone()[0])
    trajs = []
    for r in store.query(
        "SELECT id, idx, n_snapshots, first_at, last_at, keywords, sum_vector, terms FROM trajectories "
        "WHERE conversation_id = ? ORDER BY idx", (cid,)
    ):
        v = np.frombuffer(r["sum_vector"], dtype=np.float32).astype(np.float64)
        n = float(np.linalg.norm(v)) or 1.0
        trajs.append(Traj(r["id"], r["idx"], r["n_snapshots"], r["first_at"], r["last_at"],
                          Counter(json.loads(r["keywords"])), v / n, set(json.loads(r["terms"]))))
    claims = [
        Claim(r["id"], r["idx"], r["trajectory_id"], r["subject"], r["facet"], r["item"], r["family"], r["text"],
              r["status"], json.loads(r["source_message_ids"]), r["supporting_quote"], r["successor_id"],
              r["predecessor_id"], _framed(r["frame"]))
        for r in store.query(
            "SELECT c.id, c.idx, c.trajectory_id, c.subject, c.facet, c.item, c.family, c.text, c.status, "
            "c.source_message_ids, c.supporting_quote, c.successor_id, c.predecessor_id, "
            "e.frame AS frame "
            "FROM claims c LEFT JOIN events e ON e.id = c.event_id WHERE c.conversation_id = ? ORDER BY c.idx", (cid,)
        )
    ]
    messages = {r[0]: (r[1], r[2]) for r in store.execute(
        "SELECT id, source_ref, timestamp FROM messages WHERE conversation_id = ?", (cid,))}
    retired: dict[str, dict[str, Any]] = {}
    for o in store.query(
        "SELECT op, claim_id, target_id, quote, source_message_ids, reason FROM claim_ops "
        "WHERE conversation_id = ? AND op IN ('REVISE', 'DEPRECATE') ORDER BY n", (cid,)
    ):
        target = o["target_id"] if o["op"] == "REVISE" else o["claim_id"]
        retired[target] = o
    return State(cid, participants, trajs, claims, messages, retired)


# -- planning ------------------------------------------------------------------------------


@dataclass
class PagePlan:
    """One page to write: Eq. 6's (type, title, linked trajectories) plus routing metadata."""

    slug: str
    type: str
    title: str
    trajectories: list[str]
    subject: str | None = None
    family: str | None = None
    facet_groups: list[str] = field(default_factory=list)
    keyword: str | None = None
    rescue: bool = False
    links: list[str] = field(default_factory=list)


def shard(tids: Sequence[str], vectors: Mapping[str, np.ndarray], target: int, cap: int) -> list[list[str]]:
    """Split trajectories into groups of about `target` (never above `cap`) by embedding similarity."""
    tids = list(tids)
    if len(tids) <= cap:
        return [tids]
    k = max(2, math.ceil(len(tids) / target), math.ceil(len(tids) / cap))
    cap = min(cap, max(target, math.ceil(len(tids) / k)))  # balanced shards: 7 → 4 + 3, not 6 + 1
    mat = np.stack([vectors[t] for t in tids])
    sims = mat @ mat.T
    seeds = [0]
    while len(seeds) < k:
        closest = sims[:, seeds].max(axis=1)
        closest[seeds] = np.inf
        seeds.append(int(np.argmin(closest)))  # farthest point; ties → earliest trajectory
    groups: dict[int, list[int]] = {s: [s] for s in seeds}
    rest = [i for i in range(len(tids)) if i not in groups]
    order = sorted(rest, key=lambda i: (-float(sims[i, seeds].max()), i))
    for i in order:
        prefs = sorted(seeds, key=lambda s: (-float(sims[i, s]), s))
        dest = next((s for s in prefs if len(groups[s]) < cap), prefs[0])
        groups[dest].append(i)
    out = [sorted(g) for g in groups.values()]
    out.sort(key=lambda g: g[0])
    return [[tids[i] for i in g] for g in out]


def _salient(t: Traj, names: set[str], n: int, df: Mapping[str, int], total: int) -> list[str]:
    """A trajectory's most telling words: tf·idf over trajectories, proper names and items first."""
    scored = []
    for w, c in t.keywords.items():
        if (w in GENERIC or w in WEAK or w in STOPWORDS or len(w) < 4 or w.isdigit() or w.endswith("ly")
                or (w.endswith("s") and (w[:-1] in STOPWORDS or w[:-1] in WEAK)) or any(w == x or w.startswith(x) for x in names)):
            continue
        idf = math.log((1 + total) / (1 + df.get(w, 0))) + 1.0
        scored.append((c * idf * (2.0 if w in t.terms else 1.0), w))
    return [w for _, w in sorted(scored, key=lambda sw: (-sw[0], sw[1]))[:n]]


WEAK = frozenset(
    """already ask asked best body changed cool fine maybe mean means hard start started still thanks trying
    whole wish word work worked working yeah glad funny properly basically actually literally honestly though
    least much most next last first second another every since ever keep kept went going come came take took
    look looking looks find found give gave help helps helped hope hoped hoping show shows getting doing done
    nothing someone anyone everyone people person place places stuff bunch couple sounds sound idea ideas
    agree agrees along check checked care cares cared offer offered share sharing celebrate celebrated definitely
    heres theres lifes thats whats lets wanna gonna tell telling talk talking thing try tried believe believes
    means meant seems seemed sure totally absolutely super special awesome incredible amazing wonderful lovely
    beautiful fantastic excited exciting happy proud grateful thankful appreciate appreciates appreciated
    inspiring inspired support supportive feel feels felt makes made making shared showed seeing seen""".split()
)


def plan_pages(state: State, s: PageSettings) -> list[PagePlan]:
    """The page set of App. A.4: index, entity (+ entity-facet), inventory, topic, rescue."""
    order = {t.id: t.idx for t in state.trajs}
    vectors = {t.id: t.centroid for t in state.trajs}
    by_idx = lambda ids: sorted(set(ids), key=lambda t: order[t])  # noqa: E731
    plans: list[PagePlan] = [PagePlan("index", "index", f"Index: {state.conversation_id}", [t.id for t in state.trajs])]
    filed = [c for c in state.claims if c.trajectory_id]
    subjects = Counter(c.subject for c in filed if c.current)
    people = list(state.participants) + sorted(p for p, n in subjects.items() if p and p not in state.participants
                                               and n >= 3 and re.fullmatch(r"[A-Z][\w'’\-]+", p))
    entity_cover: set[str] = set()
    # entity pages
    for person in people:
        mine = [c for c in filed if c.subject == person]
        if not mine:
            continue
        profile = by_idx(c.trajectory_id for c in mine if c.facet)
        weight: Counter[str] = Counter()
        for c in mine:
            weight[c.trajectory_id] += (3 if c.facet else 1) * (2 if c.current else 1)  # type: ignore[index]
        ranked = sorted(weight, key=lambda t: (-weight[t], order[t]))
        main_slug = slugify(person)
        if 0 < len(profile) <= s.max_size:
            main = profile
        else:
            main = by_idx((sorted(profile, key=lambda t: (-weight[t], order[t])) or ranked)[: s.target_size])
        plans.append(PagePlan(main_slug, "entity", person, main, subject=person))
        entity_cover.update(main)
        if len(profile) > s.max_size:
            group_of: dict[str, str] = {}
            for t in profile:
                groups = Counter(facet_group(c.facet) for c in mine if c.trajectory_id == t and c.facet)
                group_of[t] = sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
            names = list(dict.fromkeys(group_of[t] for t in profile))
            bucket: list[str] = []
            labels: list[str] = []

            def flush() -> None:
                if bucket:
                    plans.extend(_sharded(f"{person}: {', '.join(labels)}", "entity", list(bucket), vectors, s,
                                          subject=person, facet_groups=list(labels)))
                    entity_cover.update(bucket)
                    bucket.clear()
                    labels.clear()

            for name in names:
                members = [t for t in profile if group_of[t] == name]
                if bucket and len(bucket) + len(members) > s.max_size:
                    flush()
                bucket.extend(members)
                labels.append(name)
                if len(bucket) >= s.target_size:
                    flush()
            flush()
    # inventory pages
    inv: dict[tuple[str, str], list[Claim]] = {}
    for c in filed:
        if c.family:
            inv.setdefault((c.subject, c.family), []).append(c)
    inventory_cover: set[str] = set()
    for (person, family), cs in sorted(inv.items(), key=lambda kv: (min(c.idx for c in kv[1]), kv[0])):
        items = {(c.item or c.text).lower() for c in cs}
        if len(items) < s.inventory_min_items:
            continue
        tids = by_idx(c.trajectory_id for c in cs)
        plans.extend(_sharded(f"{person}'s {family}", "inventory", tids, vectors, s, subject=person, family=family))
        inventory_cover.update(tids)
    # topic pages from keywords shared by several trajectories
    names = {p.lower() for p in people}
    df = Counter(w for t in state.trajs for w in t.keywords)
    tops = {t.id: _salient(t, names, s.topic_keywords, df, len(state.trajs)) for t in state.trajs}
    assigned: set[str] = set()
    covered = entity_cover | inventory_cover
    while True:
        counts = Counter(w for t in state.trajs if t.id not in assigned for w in tops[t.id])
        best = sorted(((n, w) for w, n in counts.items() if n >= 2), key=lambda nw: (-nw[0], nw[1]))
        if not best:
            break
        word = best[0][1]
        members = [t.id for t in state.trajs if t.id not in assigned and word in tops[t.id]]
        assigned.update(members)
        if sum(1 for t in members if t in covered) >= s.topic_redundancy * len(members):
            continue
        second = Counter(w for t in members for w in tops[t] if w != word)
        extra = [w for w, n in sorted(second.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2][:1]
        title = "Topic: " + ", ".join([word, *extra])
        plans.extend(_sharded(title, "topic", members, vectors, s, keyword=word))
    # coverage audit (Eq. 8): rescue pages for trajectories only the index reaches
    reached = {t for p in plans if p.type != "index" for t in p.trajectories}
    orphans = [t.id for t in state.trajs if t.id not in reached]
    if orphans:
        for group in shard(orphans, vectors, s.target_size, s.max_size):
            kw: Counter[str] = Counter()
            for t in group:
                for rank, w in enumerate(tops[t]):
                    kw[w] += len(tops[t]) - rank  # a trajectory's most telling word counts most
            words = [w for w, _ in sorted(kw.items(), key=lambda kv: (-kv[1], kv[0]))[:2]] or ["misc"]
            plans.append(PagePlan(slugify("more " + " ".join(words)), "topic", "More: " + ", ".join(words), group,
                                  rescue=True))
    _unique_slugs(plans)
    _link(plans, state)
    return plans


def _sharded(title: str, ptype: str, tids: list[str], vectors: Mapping[str, np.ndarray], s: PageSettings,
             **kw: Any) -> list[PagePlan]:
    groups = shard(tids, vectors, s.target_size, s.max_size)
    out = []
    for n, g in enumerate(groups, 1):
        t = title if n == 1 else f"{title} ({n})"
        out.append(PagePlan(slugify(t), ptype, t, g, **kw))
    return out


def _unique_slugs(plans: list[PagePlan]) -> None:
    seen: Counter[str] = Counter()
    for p in plans:
        seen[p.slug] += 1
        if seen[p.slug] > 1:
            p.slug = f"{p.slug}-{seen[p.slug]}"


def _link(plans: list[PagePlan], state: State) -> None:
    main = {p.subject: p.slug for p in plans if p.type == "entity" and not p.facet_groups}
    subjects_of = {}
    for p in plans:
        subjects_of[p.slug] = {c.subject for c in state.claims_of(p.trajectories) if c.current and c.subject}
    for p in plans:
        if p.type == "index":
            p.links = [q.slug for q in plans if q.type != "index"]
        elif p.type == "entity" and not p.facet_groups:
            p.links = [q.slug for q in plans if q.subject == p.subject and q.slug != p.slug and q.type != "index"]
        elif p.subject and p.subject in main:
            p.links = [main[p.subject]]
        else:
            p.links = [main[x] for x in sorted(subjects_of[p.slug]) if x in main]
        p.links = [x for x in dict.fromkeys(p.links) if x != p.slug] + (["index"] if p.type != "index" else [])


# -- LLM pages -------------------------------------------------------------------------------

_SECTIONS = ("overview", "keyfacts", "itemscounts", "linkedtrajectories", "conflictsuncertainty")
_PLACEHOLDER = re.compile(r"^\s*[-*]?\s*(?:not provided|unknown|n/?a|none(?: provided)?|no specific key facts|no explicit items)\.?\s*$", re.I)
_PAGE_SYSTEM = """\
You write one page of a wiki that summarises a long conversation. Use only the claims given.
Write markdown with exactly these second-level headings, in this order:
## Overview, ## Key Facts, ## Items/Counts, ## Linked Trajectories, ## Conflicts/Uncertainty.
Key Facts is a bullet list; each bullet states one fact and cites the claim id(s) it rests on in
square brackets, e.g. [cl_0123456789]. Keep names, items, places, dates and counts exactly as
written; list items one by one instead of summarising them. Mention revised, retracted,
unconfirmed or disputed claims under Conflicts/Uncertainty, without resolving them.
Never write placeholders such as "N/A" or "None provided"; leave a section short instead."""


def _sections(md: str) -> dict[str, str]:
    out: dict[str, str] = {}
    parts = re.split(r"(?m)^##\s+(.+?)\s*$", md)
    for name, body in zip(parts[1::2], parts[2::2]):
        out[re.sub(r"[^a-z]", "", name.lower())] = body.strip()
    return out


def check_llm_page(text: str, claim_ids: set[str], needs_citation: bool) -> str | None:
    """The page body if the reply is usable (all sections, known citations, no placeholder-only sections)."""
    if not text or not text.strip():
        return None
    text = re.sub(r"^```(?:markdown|md)?\s*|\s*```\s*$", "", text.strip())
    secs = _sections(text)
    if any(s not in secs for s in _SECTIONS):
        return None
    cited = set(re.findall(r"\bcl_[0-9a-f]{10}\b", text))
    if cited - claim_ids or (needs_citation and not cited):
        return None
    for name in ("overview", "keyfacts"):
        body = secs[name]
        if not body or all(_PLACEHOLDER.match(line) for line in body.splitlines() if line.strip()):
            return None
    return text


def llm_page(llm: ChatModel, p: PagePlan, state: State, det: Rendered) -> str | None:
    """The model's version of a page, validated and with deterministic citations and trajectory list, or None."""
    claims = state.claims_of(p.trajectories)
    by_id = {c.id: c for c in claims}
    lines = [f"Page: {p.title} (type {p.type})", "Claims (id, status, text):"]
    lines += [f"{c.id} [{c.status}] {c.text}" for c in claims[:120]]
    lines.append("Revision history:")
    lines += [ln for ln in conflict_lines(state, claims) if not ln.startswith("- No ")]
    lines.append("Linked trajectories: " + ", ".join(p.trajectories))
    result = llm.complete(
        [{"role": "system", "content": _PAGE_SYSTEM}, {"role": "user", "content": "\n".join(lines)}],
        None, stage="compile-wiki",
    )
    if not result.ok:
        return None
    body = check_llm_page(result.text, set(by_id), any(c.current for c in claims))
    if body is None:
        return None
    body = re.sub(r"(?m)^#\s+.*\n?", "", body)
    det_traj = _sections(det.markdown).get("linkedtrajectories", "")
    body = re.sub(r"(?ms)(^##\s+Linked Trajector[^\n]*\n).*?(?=^##\s|\Z)", lambda m: m.group(1) + "\n" + det_traj + "\n\n", body)

    def with_source(m: re.Match[str]) -> str:
        c = by_id.get(m.group(0))
        return m.group(0) if c is None else cite(state, c)[1:-1].replace("claim ", "", 1)

    body = re.sub(r"\bcl_[0-9a-f]{10}\b", with_source, body)
    return f"# {p.title}\n\n_{p.type} page · written by {getattr(llm, 'id', 'an LLM')}, checked against its claims_\n\n" + body.strip() + "\n"


# -- compile -----------------------------------------------------------------------------------


def drop_page(store: Store, rowid: int, page_id: str) -> None:
    """Delete one page with its trajectory links, full-text row and vector."""
    store.execute("DELETE FROM wiki_page_trajectories WHERE page_id = ?", (page_id,))
    store.execute("DELETE FROM wiki_pages WHERE rowid = ?", (rowid,))
    store.execute("DELETE FROM wiki_fts WHERE rowid = ?", (rowid,))
    store.execute("DELETE FROM wiki_vectors WHERE rowid = ?", (rowid,))


def compile_pages(store: Store, cid: str, embedder: Embedder, llm: ChatModel | None, s: PageSettings) -> PagesResult:
    """Re-plan the conversation's pages; rewrite, re-embed and re-index only the changed ones."""
    state = load_state(store, cid)
    plans = plan_pages(state, s)
    res = PagesResult(total=len(plans), by_type=dict(sorted(Counter(p.type for p in plans).items())),
                      rescue=sum(1 for p in plans if p.rescue))
    reached = {t for p in plans if p.type != "index" for t in p.trajectories}
    res.index_only = sum(1 for t in state.trajs if t.id not in reached)
    existing = {r[0]: (r[1], r[2], r[3]) for r in store.execute(
        "SELECT slug, rowid, id, content_hash FROM wiki_pages WHERE conversation_id = ?", (cid,))}
    ensure_wiki_vectors(store, int(embedder.dimension))
    todo: list[tuple[PagePlan, Rendered, str]] = []
    for p in plans:
        r = render_page(p, state, plans, s)
        h = hashlib.sha256(dumps([RENDER_VERSION, p.type, p.title, p.trajectories, p.links, p.rescue, r.markdown]).encode()).hexdigest()
        if p.slug in existing and existing[p.slug][2] == h:
            res.unchanged += 1
            continue
        todo.append((p, r, h))
    vectors: Any = embedder.embed_batch([r.routing_text for _, r, _ in todo]) if todo else []
    now = utc_now()
    for (p, r, h), vec in zip(todo, vectors):
        markdown, origin = r.markdown, "rules"
        if llm is not None and p.type != "index":
            written = llm_page(llm, p, state, r)
            if written is not None:
                markdown, origin = written, "llm"
                res.llm_pages += 1
            else:
                res.llm_fallbacks += 1
        pid = "wp_" + short_hash(cid, p.slug)
        if p.slug in existing:
            rowid = existing[p.slug][0]
            store.execute(
                "UPDATE wiki_pages SET type = ?, title = ?, markdown = ?, routing_text = ?, keywords = ?, entities = ?, "
                "items = ?, links = ?, rescue = ?, origin = ?, content_hash = ?, updated_at = ? WHERE rowid = ?",
                (p.type, p.title, markdown, r.routing_text, dumps(r.keywords), dumps(r.entities), dumps(r.items),
                 dumps(p.links), int(p.rescue), origin, h, now, rowid),
            )
            store.execute("DELETE FROM wiki_page_trajectories WHERE page_id = ?", (pid,))
            store.execute("DELETE FROM wiki_fts WHERE rowid = ?", (rowid,))
            store.execute("DELETE FROM wiki_vectors WHERE rowid = ?", (rowid,))
        else:
            cur = store.execute(
                "INSERT INTO wiki_pages(id, conversation_id, slug, type, title, markdown, routing_text, keywords, entities, "
                "items, links, rescue, origin, content_hash, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                "RETURNING rowid",
                (pid, cid, p.slug, p.type, p.title, markdown, r.routing_text, dumps(r.keywords), dumps(r.entities),
                 dumps(r.items), dumps(p.links), int(p.rescue), origin, h, now, now),
            )
            rowid = cur.fetchone()[0]
        store.conn.executemany("INSERT INTO wiki_page_trajectories(page_id, trajectory_id) VALUES (?,?)",
                               [(pid, t) for t in p.trajectories])
        index_page(store, rowid, cid, p.title, r.routing_text, r.keywords + r.items, vec)
        res.written += 1
    keep = {p.slug for p in plans}
    for slug, (rowid, pid, _) in existing.items():
        if slug in keep:
            continue
        drop_page(store, rowid, pid)
        res.removed += 1
    return res
