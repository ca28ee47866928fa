"""The claim lifecycle: REVISE from the graph's updates, DEPRECATE on retraction, an append-only op log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as sqlite3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_wiki_common import build_sample_db, copy_db

from tracecli.errors import NoAnswer, NotFound
from tracecli.graph import facets as F
from tracecli.graph.link import EventRec, LinkSettings, evolution_edges
from tracecli.store import Store, open_store
from tracecli.wiki import claim_history, compile_wiki, replay
from tracecli.wiki.claims import ClaimDraft, EventRow, facet_text
from tracecli.wiki.lifecycle import Lifecycle

CID = "alice-bob-plans"


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    return build_sample_db(tmp_path_factory, embedder)


@pytest.fixture
def store(sample_db: Path) -> Any:
    s = open_store(sample_db, create=False)
    yield s
    s.close()


def _claims(store: Store, like: str) -> list[dict[str, Any]]:
    return store.query("SELECT * FROM claims WHERE conversation_id = ? AND text LIKE ? ORDER BY idx", (CID, like))


# -- the sample conversations ------------------------------------------------------------------


def test_trajectory_of_event_is_each_events_newest_claim(store: Store) -> None:
    life = Lifecycle(store, CID)
    view = life.trajectory_of_event()
    want = {}
    for event_id, claim_ids in life.by_event.items():
        newest = max((life.claims[c] for c in claim_ids), key=lambda r: r.idx)
        if newest.trajectory_id:
            want[event_id] = newest.trajectory_id
    assert want and dict(view) == want and len(view) == len(want)
    assert view.get("ev_not_there") is None and "ev_not_there" not in view


def test_oslo_to_porto_is_a_revise_not_a_second_active_claim(store: Store) -> None:
    oslo = _claims(store, "Alice is moving to Oslo%")
    porto = _claims(store, "Alice is moving to Porto%")
    assert len(oslo) == 1 and len(porto) == 1
    assert oslo[0]["status"] == "deprecated" and oslo[0]["successor_id"] == porto[0]["id"]
    assert porto[0]["status"] == "active" and porto[0]["predecessor_id"] == oslo[0]["id"]
    ops = store.query("SELECT op, claim_id, target_id FROM claim_ops WHERE claim_id = ? OR target_id = ?",
                      (porto[0]["id"], porto[0]["id"]))
    assert ops == [{"op": "REVISE", "claim_id": porto[0]["id"], "target_id": oslo[0]["id"]}]
    current = store.query("SELECT text FROM claims WHERE conversation_id = ? AND fact_key = 'Alice|moving_to' "
                          "AND status != 'deprecated'", (CID,))
    assert current == [{"text": "Alice is moving to Porto."}]


def test_every_update_edge_between_claimed_events_is_a_revise(store: Store) -> None:
    """Each `updates` edge leaves no current claim on the superseded event, unless the new event restates it."""
    edges = store.query("SELECT src, dst FROM edges WHERE conversation_id = ? AND label = 'updates'", (CID,))
    assert len(edges) >= 10
    for e in edges:
        stale = store.query(
            "SELECT text FROM claims c WHERE event_id = ? AND status != 'deprecated' AND NOT EXISTS ("
            "SELECT 1 FROM snapshot_claims sc WHERE sc.claim_id = c.id AND sc.role = 'reaffirmed' AND sc.event_id = ?)",
            (e["dst"], e["src"]))
        assert not stale, (e, stale)
    kept = store.query("SELECT c.text FROM snapshot_claims sc JOIN claims c ON c.id = sc.claim_id "
                       "WHERE sc.role = 'reaffirmed' AND c.conversation_id = ? AND c.facet = 'hobbies'", (CID,))
    assert kept == [{"text": "Alice enjoys pottery."}]  # pottery survives the new hobby list
    n_revise = store.execute("SELECT COUNT(*) FROM claim_ops WHERE conversation_id = ? AND op = 'REVISE'", (CID,)).fetchone()[0]
    assert n_revise >= 12


def test_retraction_deprecates_without_successor(store: Store) -> None:
    squash = _claims(store, "Alice plays squash%")
    assert len(squash) == 1 and squash[0]["status"] == "deprecated" and squash[0]["successor_id"] is None
    op = store.query("SELECT * FROM claim_ops WHERE op = 'DEPRECATE' AND claim_id = ?", (squash[0]["id"],))
    assert len(op) == 1 and "no longer play squash" in op[0]["quote"]
    assert _claims(store, "Alice plays padel%")[0]["status"] == "active"


def test_revised_predecessors_are_deprecated_and_linked(store: Store) -> None:
    for r in store.query("SELECT * FROM claim_ops WHERE op = 'REVISE'"):
        old = store.query("SELECT * FROM claims WHERE id = ?", (r["target_id"],))[0]
        new = store.query("SELECT * FROM claims WHERE id = ?", (r["claim_id"],))[0]
        assert old["status"] == "deprecated" and old["successor_id"] == new["id"]
        assert new["predecessor_id"] == old["id"]


def test_status_and_successor_follow_the_op_log(store: Store) -> None:
    for cid in [r[0] for r in store.execute("SELECT id FROM conversations")]:
        derived = replay(store, cid)
        table = {r[0]: (r[1], r[2]) for r in store.execute(
            "SELECT id, status, successor_id FROM claims WHERE conversation_id = ?", (cid,))}
        assert derived == table


def test_op_log_and_claims_refuse_edits(sample_db: Path, tmp_path: Path) -> None:
    s = open_store(copy_db(sample_db, tmp_path), create=False)
    try:
        op = s.execute("SELECT id FROM claim_ops LIMIT 1").fetchone()[0]
        claim = s.execute("SELECT id FROM claims LIMIT 1").fetchone()[0]
        for sql, params in (
            ("UPDATE claim_ops SET reason = 'x' WHERE id = ?", (op,)),
            ("DELETE FROM claim_ops WHERE id = ?", (op,)),
            ("DELETE FROM claims WHERE id = ?", (claim,)),
            ("UPDATE claims SET text = 'rewritten' WHERE id = ?", (claim,)),
            ("UPDATE claims SET supporting_quote = 'x' WHERE id = ?", (claim,)),
        ):
            with pytest.raises(sqlite3.IntegrityError):
                s.execute(sql, params)
    finally:
        s.close()


def test_op_log_only_grows(sample_db: Path, tmp_path: Path, embedder: Any) -> None:
    s = open_store(copy_db(sample_db, tmp_path), create=False)
    try:
        before = s.query("SELECT id, n, op, claim_id, target_id, status FROM claim_ops ORDER BY conversation_id, n")
        again = compile_wiki(s, embedder=embedder)
        assert all(r.ops_new == {} and r.claims_new == 0 and r.pages_written == 0 for r in again)
        after = s.query("SELECT id, n, op, claim_id, target_id, status FROM claim_ops ORDER BY conversation_id, n")
        assert after[: len(before)] == before
    finally:
        s.close()


def test_claim_history_lists_the_chain_in_order(store: Store) -> None:
    chains = claim_history(store, "moving to Porto", CID)
    chain = next(c for c in chains if c.fact == "Alice|moving_to")
    assert [s.op for s in chain.steps] == ["ADD", "REVISE"]
    assert [s.text for s in chain.steps] == ["Alice is moving to Oslo.", "Alice is moving to Porto."]
    assert chain.steps[0].date and chain.steps[0].date < chain.steps[1].date
    assert "Forget Oslo" in chain.steps[1].quote and chain.current == ["Alice is moving to Porto."]
    by_id = claim_history(store, chain.steps[0].claim_id)
    assert [s.claim_id for s in by_id[0].steps] == [s.claim_id for s in chain.steps]
    sport = next(c for c in claim_history(store, "squash", CID) if c.fact == "Alice|sport")
    assert [s.op for s in sport.steps] == ["ADD", "DEPRECATE", "ADD"]
    with pytest.raises(NotFound):
        claim_history(store, "cl_ffffffffff")
    with pytest.raises(NoAnswer):
        claim_history(store, "zebra crossing")


# -- invariants on random fact streams (Hypothesis) ------------------------------------------


def _blank(tmp_path: Path) -> Store:
    s = open_store(tmp_path / "life.db")
    s.execute("INSERT INTO conversations(id, participants, created_at) VALUES ('c', '[\"A\", \"B\"]', 'x')")
    s.execute("INSERT INTO sessions(id, conversation_id, idx, source_id) VALUES ('s', 'c', 0, 's')")
    return s


STEP = st.tuples(st.sampled_from(["residence", "diet"]), st.sampled_from(["Leeds", "Porto", "Oslo"]), st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(STEP, min_size=1, max_size=14))
def test_lifecycle_mirrors_graph_validity(tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, bool]]) -> None:
    """Graph-superseded claims are never current, a single-valued fact has one current value, the last word stands."""
    store = _blank(tmp_path_factory.mktemp("life"))
    try:
        recs = [EventRec(f"ev{i}", "s", i, 0, None, "A", "A", ["A"], None, facet=f, value=v,
                         value_norm=("not:" if neg else "") + F.normalise_value(v), negated=neg, confidence=0.8)
                for i, (f, v, neg) in enumerate(steps)]
        edges: dict[str, list[tuple[str, str]]] = {}
        for e in evolution_edges(recs, LinkSettings()):
            edges.setdefault(e.src, []).append((e.dst, e.label))
        superseded = {dst for out in edges.values() for dst, label in out if label == "updates"}
        life = Lifecycle(store, "c")
        seen_ops = 0
        for i, (facet, value, neg) in enumerate(steps):
            sid = f"sn{i}"
            store.execute("INSERT INTO snapshots(id, conversation_id, session_id, idx, message_ids, first_seq, last_seq, "
                          "text, created_at) VALUES (?, 'c', 's', ?, '[]', ?, ?, '', 'x')", (sid, i, i, i))
            ev = EventRow(f"ev{i}", i, 0, "A", "A", "state_change", facet, value, recs[i].value_norm, neg, "q", "d", "rules")
            d = ClaimDraft(key=f"ev|ev{i}|0", text=facet_text("A", facet, value, neg), subject="A",
                           source_message_ids=[f"m{i}"], supporting_quote="q", event_id=f"ev{i}", facet=facet,
                           item=value, negated=neg)
            life.apply(sid, None, [d], [ev], edges, {})
            n = store.execute("SELECT COUNT(*) FROM claim_ops").fetchone()[0]
            assert n >= seen_ops
            seen_ops = n
        table = {r[0]: (r[1], r[2]) for r in store.execute("SELECT id, status, successor_id FROM claims")}
        assert replay(store, "c") == table
        # which events each claim stands for: the one that created it and those that restated it
        stands_for: dict[str, list[int]] = {}
        for r in store.execute("SELECT id, event_id FROM claims"):
            stands_for.setdefault(r[0], []).append(int(r[1][2:]))
        for r in store.execute("SELECT claim_id, event_id FROM snapshot_claims WHERE role = 'reaffirmed'"):
            stands_for[r[0]].append(int(r[1][2:]))
        for claim, evs in stands_for.items():
            if f"ev{max(evs)}" in superseded:
                assert table[claim][0] == "deprecated", (steps, claim, evs)
        last_facet, last_value, last_neg = steps[-1]
        if not last_neg:
            text = facet_text("A", last_facet, last_value, False)
            assert store.execute("SELECT COUNT(*) FROM claims WHERE text = ? AND status = 'active'", (text,)).fetchone()[0] == 1
        for facet in ("residence", "diet"):
            positive = store.execute("SELECT COUNT(*) FROM claims WHERE facet = ? AND status != 'deprecated' "
                                     "AND text NOT LIKE '%no longer%'", (facet,)).fetchone()[0]
            assert positive <= 1
    finally:
        store.close()


def test_a_confirmed_hedge_is_revised_to_active(tmp_path: Path) -> None:
    store = _blank(tmp_path)
    try:
        life = Lifecycle(store, "c")
        for i, status in enumerate(["needs-confirmation", "active"]):
            store.execute("INSERT INTO snapshots(id, conversation_id, session_id, idx, message_ids, first_seq, last_seq, "
                          "text, created_at) VALUES (?, 'c', 's', ?, '[]', ?, ?, '', 'x')", (f"sn{i}", i, i, i))
            d = ClaimDraft(key=f"k{i}", text="A is moving to Porto.", subject="A", source_message_ids=[f"m{i}"],
                           supporting_quote="q", status=status)
            life.apply(f"sn{i}", None, [d], [], {}, {})
        rows = store.query("SELECT status, successor_id FROM claims ORDER BY idx")
        assert [r["status"] for r in rows] == ["deprecated", "active"]
        assert [r[0] for r in store.execute("SELECT op FROM claim_ops ORDER BY n")] == ["ADD", "REVISE"]
    finally:
        store.close()


def test_contradiction_marks_both_sides(tmp_path: Path) -> None:
    store = _blank(tmp_path)
    try:
        life = Lifecycle(store, "c")
        evs = [EventRow("e0", 0, 0, "A", "A", "state_change", "residence", "Leeds", "leeds", False, "q", "d", "rules"),
               EventRow("e1", 1, 0, "A", "B", "state_change", "residence", "York", "york", False, "q", "d", "rules")]
        edges = {"e1": [("e0", "contradicts")]}
        for i, ev in enumerate(evs):
            store.execute("INSERT INTO snapshots(id, conversation_id, session_id, idx, message_ids, first_seq, last_seq, "
                          "text, created_at) VALUES (?, 'c', 's', ?, '[]', ?, ?, '', 'x')", (f"sn{i}", i, i, i))
            d = ClaimDraft(key=f"k{i}", text=facet_text("A", "residence", ev.value or "", False), subject="A",
                           source_message_ids=[f"m{i}"], supporting_quote="q", event_id=ev.id, facet="residence")
            life.apply(f"sn{i}", None, [d], [ev], edges, {})
        rows = store.query("SELECT text, status FROM claims WHERE status != 'deprecated' ORDER BY text")
        assert rows == [{"text": "A lives in Leeds.", "status": "contradictory"},
                        {"text": "A lives in York.", "status": "contradictory"}]
        assert replay(store, "c") == {r[0]: (r[1], r[2]) for r in store.execute("SELECT id, status, successor_id FROM claims")}
        assert json.loads(store.query("SELECT source_message_ids FROM claim_ops WHERE n = 0")[0]["source_message_ids"]) == ["m0"]
    finally:
        store.close()
