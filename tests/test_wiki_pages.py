"""Memory Wiki pages: types, inventory, size cap, coverage audit, citations, hashing, export, routing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_wiki_common import build_sample_db, copy_db

from tracecli.errors import NotFound
from tracecli.store import Store, open_store
from tracecli.wiki import active_claims_for_pages, export_pages, get_page, list_pages, route_pages
from tracecli.wiki.pages import PageSettings, check_llm_page, shard, slugify

CID = "alice-bob-plans"


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    return build_sample_db(tmp_path_factory, embedder)


@pytest.fixture
def store(sample_db: Path) -> Any:
    s = open_store(sample_db, create=False)
    yield s
    s.close()


def test_page_types_and_one_entity_page_per_person(store: Store) -> None:
    for cid, people in (("alice-bob-plans", ["Alice", "Bob"]), ("lena-omar-flat", ["Lena", "Omar"])):
        pages = list_pages(store, cid)
        types = {p.type for p in pages}
        assert {"index", "entity", "inventory", "topic"} <= types
        assert sum(p.type == "index" for p in pages) == 1
        mains = [p for p in pages if p.type == "entity" and p.slug in {slugify(x) for x in people}]
        assert sorted(p.title for p in mains) == people


def test_list_facts_become_inventory_pages(store: Store) -> None:
    page = get_page(store, "alices-hobbies", CID)
    assert page.type == "inventory"
    items = next(line for line in page.markdown.splitlines() if line.startswith("- Alice's hobbies"))
    assert "pottery, bouldering, baking" in items and "earlier: hiking, painting" in items
    for slug in ("alices-pets", "alices-sports", "bobs-places"):
        assert get_page(store, slug, CID).type == "inventory"


def test_no_trajectory_is_reachable_only_from_the_index(store: Store) -> None:
    for cid in [r[0] for r in store.execute("SELECT id FROM conversations")]:
        all_t = {r[0] for r in store.execute("SELECT id FROM trajectories WHERE conversation_id = ?", (cid,))}
        reached = {r[0] for r in store.execute(
            "SELECT wpt.trajectory_id FROM wiki_page_trajectories wpt JOIN wiki_pages p ON p.id = wpt.page_id "
            "WHERE p.conversation_id = ? AND p.type != 'index'", (cid,))}
        index = {r[0] for r in store.execute(
            "SELECT wpt.trajectory_id FROM wiki_page_trajectories wpt JOIN wiki_pages p ON p.id = wpt.page_id "
            "WHERE p.conversation_id = ? AND p.type = 'index'", (cid,))}
        assert all_t and reached == all_t and index == all_t


def test_non_index_pages_respect_the_size_cap(store: Store) -> None:
    sizes = [len(p.trajectories) for p in list_pages(store) if p.type != "index"]
    assert sizes and max(sizes) <= PageSettings().max_size and min(sizes) >= 1


def test_pages_have_the_sections_and_cite_claims_and_messages(store: Store) -> None:
    for p in list_pages(store, CID):
        md = p.markdown
        for heading in ("## Overview", "## Key facts", "## Items / counts", "## Linked trajectories", "## Conflicts / uncertainty"):
            assert heading in md, (p.slug, heading)
        if p.type == "index":
            continue
        facts = md.split("## Key facts", 1)[1].split("## Items / counts", 1)[0]
        bullets = [b for b in facts.splitlines() if b.startswith("- ") and not b.startswith("- …")]
        for b in bullets:
            m = re.search(r"\(claim (cl_[0-9a-f]{10}); source .*?(m_[0-9a-f]{12})", b)
            assert m, b
            claim = store.query("SELECT source_message_ids, status FROM claims WHERE id = ?", (m.group(1),))[0]
            assert m.group(2) in claim["source_message_ids"] and claim["status"] != "deprecated"


def test_entity_pages_hold_only_their_persons_claims(store: Store) -> None:
    pages = list_pages(store, CID, "entity")
    assert pages
    for p in pages:
        person = p.title.split(":")[0]
        body = p.markdown.split("## Key facts", 1)[1]
        ids = re.findall(r"\(claim (cl_[0-9a-f]{10});", body.split("\n## ", 1)[0])
        assert ids, p.slug
        subjects = {store.execute("SELECT subject FROM claims WHERE id = ?", (i,)).fetchone()[0] for i in ids}
        assert subjects == {person}, (p.slug, subjects)
        items = body.split("## Items / counts", 1)[1].split("\n## ", 1)[0]
        assert all(line.startswith((f"- {person}'s ", "- Claims:")) for line in items.strip().splitlines()), items


def test_revisions_show_under_conflicts(store: Store) -> None:
    md = get_page(store, "alice", CID).markdown
    conflicts = md.split("## Conflicts / uncertainty", 1)[1]
    assert "~~Alice is moving to Oslo.~~ → Alice is moving to Porto." in conflicts
    facts = md.split("## Key facts", 1)[1].split("##", 1)[0]
    assert "Alice is moving to Oslo." not in facts


def test_recompile_rewrites_nothing(sample_db: Path, tmp_path: Path, embedder: Any) -> None:
    from tracecli.wiki import compile_wiki

    s = open_store(copy_db(sample_db, tmp_path), create=False)
    try:
        before = s.query("SELECT slug, content_hash, markdown, updated_at FROM wiki_pages ORDER BY conversation_id, slug")
        res = compile_wiki(s, embedder=embedder)
        assert all(r.pages_written == 0 and r.pages_unchanged == r.pages_total for r in res)
        after = s.query("SELECT slug, content_hash, markdown, updated_at FROM wiki_pages ORDER BY conversation_id, slug")
        assert before == after
        n_vec = s.execute("SELECT COUNT(*) FROM wiki_vectors").fetchone()[0]
        n_fts = s.execute("SELECT COUNT(*) FROM wiki_fts").fetchone()[0]
        assert n_vec == n_fts == len(after)
    finally:
        s.close()


def test_export_writes_linked_markdown_files(store: Store, tmp_path: Path) -> None:
    written = export_pages(store, tmp_path / "wiki", CID)
    files = {p for _, name, p in written if not name.startswith("claims/")}
    assert len(files) == len(list_pages(store, CID))
    notes = {p.stem for p in (tmp_path / "wiki" / CID).rglob("*.md")}
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not re.findall(r"\]\(([^)]+\.md)\)", text)  # Obsidian: wiki links, not markdown links
        for target in re.findall(r"\[\[([^\]|]+)", text):
            assert target in notes, (path.name, target)
    assert (tmp_path / "wiki" / CID / "index.md").is_file()
    with pytest.raises(NotFound):
        get_page(store, "no-such-page")


# -- sharding -------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=40), st.integers(min_value=0, max_value=10_000))
def test_shard_partitions_within_the_cap(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = [f"t{i:02d}" for i in range(n)]
    vecs = {t: (v / np.linalg.norm(v)) for t, v in zip(ids, rng.normal(size=(n, 8)))}
    groups = shard(ids, vecs, 4, 6)
    assert sorted(t for g in groups for t in g) == ids
    assert all(1 <= len(g) <= 6 for g in groups)
    assert shard(ids, vecs, 4, 6) == groups  # deterministic


# -- LLM page validation --------------------------------------------------------------------


def test_llm_page_checks() -> None:
    good = ("## Overview\nAlice moved.\n## Key Facts\n- Alice lives in Porto [cl_0123456789]\n## Items/Counts\n- 1 city\n"
            "## Linked Trajectories\n- tr_x\n## Conflicts/Uncertainty\n- Leeds was revised.\n")
    assert check_llm_page(good, {"cl_0123456789"}, True)
    assert check_llm_page(good.replace("## Items/Counts", "## Stuff"), {"cl_0123456789"}, True) is None
    assert check_llm_page(good, {"cl_9999999999"}, True) is None  # cites a claim it was not given
    assert check_llm_page(good.replace("[cl_0123456789]", ""), {"cl_0123456789"}, True) is None
    assert check_llm_page(good.replace("- Alice lives in Porto [cl_0123456789]", "- N/A"), {"cl_0123456789"}, False) is None
    assert check_llm_page("", set(), False) is None


# -- routing --------------------------------------------------------------------------------


def test_route_pages_fuses_dense_and_sparse(store: Store, embedder: Any) -> None:
    q = "Where does Alice live now?"
    ranked = route_pages(store, CID, q, embedder.embed_batch([q])[0], k=8)
    assert ranked and len(ranked) <= 8
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    types = dict(store.execute("SELECT id, type FROM wiki_pages").fetchall())
    assert all(types[pid] != "index" for pid, _ in ranked)
    claims = active_claims_for_pages(store, [pid for pid, _ in ranked])
    texts = [c["text"] for c in claims]
    assert "Alice lives in Porto." in texts and "Alice lives in Leeds." not in texts
    assert all(c["status"] != "deprecated" and c["source_refs"] for c in claims)
    sparse_only = route_pages(store, CID, "padel league", None, k=3)
    assert sparse_only and all(s > 0 for _, s in sparse_only)
    assert route_pages(store, "no-such-conversation", q, None) == []
    assert active_claims_for_pages(store, []) == []


def test_claims_for_refs_gives_history(store: Store) -> None:
    from tracecli.wiki.route import claims_for_refs

    rows = claims_for_refs(store, ["s3-m6"], [CID])
    porto = next(r for r in rows if r["text"] == "Alice is moving to Porto.")
    assert porto["status"] == "active" and porto["history"].startswith("REVISE")
    oslo = claims_for_refs(store, [porto["predecessor_id"] and "s1-m9"], [CID])
    assert any(r["status"] == "deprecated" and "revised" in r["history"] for r in oslo)
    assert claims_for_refs(store, [], [CID]) == [] and claims_for_refs(store, ["nope"], [CID]) == []
