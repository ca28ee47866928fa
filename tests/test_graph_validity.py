"""Validity semantics (TRACE Eq. 11-12): Hypothesis properties of `propagate`, and the built samples.

The reference below reads §II-D literally: the target of an `updates` edge
gets v = 0 and valid_until = the updating event's anchor (the earliest, if
several update it); a one-hop dependant through causes/enables of a
superseded event gets v = 0.5; causes/prevents edges out of a superseded
event get invalidated_at; `contradicts` changes nothing.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_graph_helpers import copy_db, graph_snapshot, sample_db

from tracecli.graph.validity import ValidityState, apply_validity, propagate
from tracecli.store.db import open_store
from tracecli.timeutil import parse_iso

Edge = tuple[str, str, str]
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def stamp(minutes: int) -> str:
    return (T0 + dt.timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


@st.composite
def update_graphs(draw: st.DrawFn) -> tuple[dict[str, str], list[list[str]], list[Edge], list[Edge]]:
    """Update chains (oldest first) with distinct anchors, plus random support and contradicts edges."""
    n_chains = draw(st.integers(min_value=1, max_value=4))
    lengths = [draw(st.integers(min_value=1, max_value=5)) for _ in range(n_chains)]
    total = sum(lengths)
    times = draw(st.lists(st.integers(min_value=0, max_value=10_000), min_size=total, max_size=total, unique=True))
    anchors: dict[str, str] = {}
    chains: list[list[str]] = []
    pos = 0
    for c, length in enumerate(lengths):
        mine = sorted(times[pos : pos + length])
        pos += length
        chain = [f"c{c}e{j}" for j in range(length)]
        anchors.update({eid: stamp(t) for eid, t in zip(chain, mine)})
        chains.append(chain)
    ids = sorted(anchors)
    pair = st.tuples(st.sampled_from(ids), st.sampled_from(ids)).filter(lambda p: p[0] != p[1])
    extra = [(a, b, lab) for (a, b), lab in draw(st.lists(
        st.tuples(pair, st.sampled_from(["causes", "enables", "prevents", "before"])), max_size=8))]
    contra = [(a, b, "contradicts") for a, b in draw(st.lists(pair, max_size=4))]
    return anchors, chains, extra, contra


def chain_updates(chains: list[list[str]]) -> list[Edge]:
    return [(chain[j + 1], chain[j], "updates") for chain in chains for j in range(len(chain) - 1)]


def reference(anchors: dict[str, str], edges: list[Edge]) -> ValidityState:
    at: dict[str, str] = {}
    for src, dst, label in edges:
        if label == "updates":
            at[dst] = min(at.get(dst, anchors[src]), anchors[src])
    state = ValidityState(validity={e: 1.0 for e in anchors}, valid_until=dict(at))
    for e in at:
        state.validity[e] = 0.0
    for src, dst, label in edges:
        if src in at and label in ("causes", "enables") and dst not in at:
            state.validity[dst] = 0.5
        if src in at and label in ("causes", "prevents"):
            state.invalidated[(src, dst, label)] = at[src]
    return state


@settings(max_examples=150, deadline=None)
@given(update_graphs())
def test_propagation_matches_the_paper(case: Any) -> None:
    anchors, chains, extra, _ = case
    edges = chain_updates(chains) + extra
    assert propagate(anchors, edges) == reference(anchors, edges)


@settings(max_examples=150, deadline=None)
@given(update_graphs())
def test_only_the_newest_of_each_chain_stays_valid(case: Any) -> None:
    anchors, chains, extra, _ = case
    edges = chain_updates(chains) + extra
    state = propagate(anchors, edges)
    superseded = {old for chain in chains for old in chain[:-1]}
    for chain in chains:
        *older, newest = chain
        for j, old in enumerate(older):
            assert state.validity[old] == 0.0
            assert state.valid_until[old] == anchors[chain[j + 1]]
            assert anchors[old] < state.valid_until[old]
        assert newest not in state.valid_until
        depends_on_superseded = any(s in superseded and d == newest and lab in ("causes", "enables") for s, d, lab in extra)
        assert state.validity[newest] == (0.5 if depends_on_superseded else 1.0)
    # nothing but 1, 0.5 and 0, and only superseded events are 0
    assert set(state.validity.values()) <= {0.0, 0.5, 1.0}
    assert {e for e, v in state.validity.items() if v == 0.0} == superseded
    # partial events are exactly the one-hop causal dependants of superseded ones
    partial = {d for s, d, lab in extra if s in superseded and lab in ("causes", "enables") and d not in superseded}
    assert {e for e, v in state.validity.items() if v == 0.5} == partial
    # causes/prevents out of a superseded event are invalidated; enables and before are not
    expected = {(s, d, lab): state.valid_until[s] for s, d, lab in extra if s in superseded and lab in ("causes", "prevents")}
    assert state.invalidated == expected


@settings(max_examples=100, deadline=None)
@given(update_graphs())
def test_contradicts_changes_nothing(case: Any) -> None:
    anchors, chains, extra, contra = case
    edges = chain_updates(chains) + extra
    assert propagate(anchors, edges + contra) == propagate(anchors, edges)
    # contradicts alone leaves every event valid
    alone = propagate(anchors, contra)
    assert set(alone.validity.values()) <= {1.0} and not alone.valid_until and not alone.invalidated


@settings(max_examples=100, deadline=None)
@given(update_graphs(), st.randoms(use_true_random=False))
def test_propagation_is_idempotent_and_order_free(case: Any, rnd: random.Random) -> None:
    anchors, chains, extra, contra = case
    edges = chain_updates(chains) + extra + contra
    first = propagate(anchors, edges)
    assert propagate(anchors, edges) == first
    shuffled = list(edges)
    rnd.shuffle(shuffled)
    assert propagate(anchors, shuffled) == first
    assert propagate(anchors, iter(edges)) == first  # any iterable, consumed once


def test_an_event_updated_twice_is_outdated_from_the_first_update() -> None:
    anchors = {"old": stamp(0), "mid": stamp(10), "new": stamp(20)}
    state = propagate(anchors, [("new", "old", "updates"), ("mid", "old", "updates")])
    assert state.validity["old"] == 0.0 and state.valid_until["old"] == stamp(10)


def test_edges_to_unknown_events_are_ignored() -> None:
    state = propagate({"a": stamp(0)}, [("ghost", "a", "updates"), ("a", "ghost", "causes")])
    assert state.validity == {"a": 1.0} and not state.valid_until and not state.invalidated


def test_hand_built_example() -> None:
    """Oslo → Porto (updates); the Oslo plan caused a Norwegian course (0.5) and prevented a Lisbon trip."""
    anchors = {"oslo": stamp(0), "course": stamp(5), "lisbon": stamp(6), "porto": stamp(30), "flat": stamp(40)}
    edges = [("porto", "oslo", "updates"), ("oslo", "course", "causes"), ("oslo", "lisbon", "prevents"),
             ("porto", "flat", "enables"), ("flat", "porto", "contradicts")]
    state = propagate(anchors, edges)
    assert state.validity == {"oslo": 0.0, "course": 0.5, "lisbon": 1.0, "porto": 1.0, "flat": 1.0}
    assert state.valid_until == {"oslo": stamp(30)}
    assert state.invalidated == {("oslo", "course", "causes"): stamp(30), ("oslo", "lisbon", "prevents"): stamp(30)}


# -- on the built sample conversations ------------------------------------------------------


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    return sample_db(tmp_path_factory, embedder)


def test_no_edge_points_backwards_in_time(samples: Path) -> None:
    store = open_store(samples, create=False)
    try:
        rows = store.query(
            "SELECT e.label, e.src, e.dst, s.time_anchor AS sa, d.time_anchor AS da, s.seq AS sseq, "
            "s.sentence_idx AS ssi, d.seq AS dseq, d.sentence_idx AS dsi, s.session_id AS ss, d.session_id AS ds "
            "FROM edges e JOIN events s ON s.id = e.src JOIN events d ON d.id = e.dst ORDER BY e.id"
        )
    finally:
        store.close()
    forward = [r for r in rows if r["label"] in ("before", "causes", "enables", "prevents")]
    updates = [r for r in rows if r["label"] == "updates"]
    assert len(forward) > 100 and len(updates) > 10
    for r in forward:
        assert r["sa"] and r["da"], r
        assert parse_iso(r["sa"]) <= parse_iso(r["da"]), r
        if r["label"] == "before" and r["ss"] != r["ds"]:
            assert parse_iso(r["sa"]) < parse_iso(r["da"]), r  # never between equal anchors of two sessions
        if r["label"] == "before" and r["ss"] == r["ds"]:
            assert (r["sseq"], r["ssi"]) < (r["dseq"], r["dsi"]), r
    for r in updates:
        assert (r["sseq"], r["ssi"]) > (r["dseq"], r["dsi"]), r


def test_stored_validity_agrees_with_propagate(samples: Path) -> None:
    store = open_store(samples, create=False)
    try:
        for (cid,) in store.execute("SELECT id FROM conversations ORDER BY id").fetchall():
            anchors = dict(store.execute("SELECT id, COALESCE(time_anchor, '') FROM events WHERE conversation_id = ?", (cid,)).fetchall())
            edges = store.execute(
                "SELECT src, dst, label FROM edges WHERE conversation_id = ? AND family != 'structural'", (cid,)
            ).fetchall()
            state = propagate(anchors, [tuple(e) for e in edges])
            stored = {r[0]: (r[1], r[2]) for r in store.execute(
                "SELECT id, validity, valid_until FROM events WHERE conversation_id = ?", (cid,))}
            assert stored == {e: (state.validity[e], state.valid_until.get(e)) for e in anchors}
            invalid = {(r[0], r[1], r[2]): r[3] for r in store.execute(
                "SELECT src, dst, label, invalidated_at FROM edges WHERE conversation_id = ? AND invalidated_at IS NOT NULL", (cid,))}
            assert invalid == state.invalidated
    finally:
        store.close()


def test_apply_validity_is_idempotent_and_ignores_contradicts(samples: Path, tmp_path: Path) -> None:
    store = open_store(copy_db(samples, tmp_path), create=False)
    try:
        cid = "alice-bob-plans"
        before = graph_snapshot(store, cid)
        apply_validity(store, cid)
        apply_validity(store, cid)
        assert graph_snapshot(store, cid) == before
        # a contradicts edge between a valid and an outdated event changes no validity
        valid = store.execute("SELECT id FROM events WHERE conversation_id = ? AND validity = 1.0 ORDER BY id LIMIT 1", (cid,)).fetchone()[0]
        outdated = store.execute("SELECT id FROM events WHERE conversation_id = ? AND validity = 0.0 ORDER BY id LIMIT 1", (cid,)).fetchone()[0]
        store.execute(
            "INSERT INTO edges(id, conversation_id, src, dst, label, family, confidence, justification, created_at) "
            "VALUES ('ed_test', ?, ?, ?, 'contradicts', 'evolution', 0.6, 'test', '2024-01-01T00:00:00Z')",
            (cid, outdated, valid),
        )
        apply_validity(store, cid)
        evs, eds = graph_snapshot(store, cid)
        assert evs == before[0]
        assert [e for e in eds if e[2] != "contradicts"] == [e for e in before[1] if e[2] != "contradicts"]
    finally:
        store.close()


def test_valid_until_does_not_depend_on_edge_order_when_an_updater_has_no_anchor() -> None:
    anchors: dict[str, str | None] = {"old": stamp(0), "undated": None, "dated": stamp(10)}
    forward = propagate(anchors, [("undated", "old", "updates"), ("dated", "old", "updates")])
    backward = propagate(anchors, [("dated", "old", "updates"), ("undated", "old", "updates")])
    assert backward.valid_until == {"old": stamp(10)}
    assert forward == backward
