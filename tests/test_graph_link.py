"""tracecli.graph.link on hand-built EventRec lists: the candidate gate (Eq. 10), `before`, evolution edges.

`before_edges` is checked against a brute-force reference that reads the
documented rule literally: each new event links from its nearest earlier
event of the same topic, among the last `4 × window` of that topic, whose
participant Jaccard is ≥ θp and that is strictly earlier (turn order inside a
session, time anchors across sessions).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracecli.graph.link import (
    EdgeRec,
    EventRec,
    GateStats,
    LinkSettings,
    before_edges,
    evolution_edges,
    jaccard,
)

# -- jaccard -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (["Ana"], ["Ana"], 1.0),
        (["Ana", "Ben"], ["Ben", "Ana"], 1.0),
        (["Ana"], ["Ben"], 0.0),
        (["Ana"], ["Ana", "Ben"], 0.5),
        (["Ana", "Ben"], ["Ben", "Cy"], 1 / 3),
        (["Ana", "Ana"], ["Ana"], 1.0),  # sets, not multisets
        ([], [], 1.0),
        ([], ["Ana"], 0.0),
    ],
)
def test_jaccard(a: list[str], b: list[str], expected: float) -> None:
    assert jaccard(a, b) == pytest.approx(expected)
    assert jaccard(b, a) == pytest.approx(expected)


# -- helpers --------------------------------------------------------------------------------


def ev(eid: str, seq: int, session: str, anchor: str | None, participants: Sequence[str] = ("Ana",),
       topic: str | None = "t1", sentence_idx: int = 0, **kw: object) -> EventRec:
    subject = kw.pop("subject", participants[0] if participants else "Ana")
    return EventRec(id=eid, session_id=session, seq=seq, sentence_idx=sentence_idx, time_anchor=anchor,
                    subject=str(subject), speaker=str(kw.pop("speaker", subject)), participants=list(participants),
                    topic_id=topic, **kw)  # type: ignore[arg-type]


def pairs(edges: Sequence[EdgeRec]) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in edges}


def reference_before(events: Sequence[EventRec], new_ids: set[str], s: LinkSettings) -> set[tuple[str, str]]:
    """Brute force: the nearest gated, strictly earlier event of the same topic, within the look-back."""
    ordered = sorted(events, key=lambda e: (e.seq, e.sentence_idx))
    out = set()
    for i, e in enumerate(ordered):
        if e.id not in new_ids:
            continue
        same_topic = [p for p in ordered[:i] if p.topic_id == e.topic_id][-4 * s.window:]
        for p in reversed(same_topic):
            if jaccard(p.participants, e.participants) < s.theta_p:
                continue
            if p.session_id == e.session_id:
                earlier = (p.seq, p.sentence_idx) < (e.seq, e.sentence_idx)
            else:
                earlier = bool(p.time_anchor and e.time_anchor and p.time_anchor < e.time_anchor)
            if earlier:
                out.add((p.id, e.id))
                break
    return out


# -- before ---------------------------------------------------------------------------------


def test_same_session_orders_by_turn_even_with_equal_timestamps() -> None:
    t = "2024-03-01T10:00:00Z"
    events = [ev("a", 0, "s1", t), ev("b", 1, "s1", t), ev("c", 2, "s1", t)]
    edges = before_edges(events, {"a", "b", "c"}, LinkSettings(), GateStats())
    assert pairs(edges) == {("a", "b"), ("b", "c")}
    assert all(e.label == "before" and e.confidence == 1.0 for e in edges)
    assert all("earlier turn" in e.justification for e in edges)


def test_two_facts_of_one_sentence_are_not_ordered() -> None:
    t = "2024-03-01T10:00:00Z"
    events = [ev("a", 0, "s1", t, sentence_idx=1), ev("b", 0, "s1", t, sentence_idx=1)]
    assert before_edges(events, {"a", "b"}, LinkSettings(), GateStats()) == []


def test_never_between_equal_timestamps_of_different_sessions() -> None:
    t = "2023-05-08T13:56:00Z"  # LoCoMo: every message of a session carries the session time
    events = [ev("a", 0, "s1", t), ev("b", 1, "s1", t), ev("c", 2, "s2", t), ev("d", 3, "s2", t)]
    edges = before_edges(events, {"a", "b", "c", "d"}, LinkSettings(), GateStats())
    assert pairs(edges) == {("a", "b"), ("c", "d")}


def test_cross_session_link_follows_time_anchors() -> None:
    events = [
        ev("a", 0, "s1", "2024-03-01T10:00:00Z"),
        ev("b", 1, "s2", "2024-03-08T10:00:00Z"),
        # a session ingested later but dated earlier: no `before` from b (later) to c (earlier)
        ev("c", 2, "s3", "2024-03-05T10:00:00Z"),
    ]
    edges = before_edges(events, {"a", "b", "c"}, LinkSettings(), GateStats())
    assert pairs(edges) == {("a", "b"), ("a", "c")}
    assert all(e.justification == f"{x.time_anchor} < {y.time_anchor}"
               for e in edges for x in events for y in events if (x.id, y.id) == (e.src, e.dst))


def test_missing_anchor_gives_no_cross_session_order() -> None:
    events = [ev("a", 0, "s1", None), ev("b", 1, "s2", "2024-03-08T10:00:00Z"), ev("c", 2, "s3", None)]
    assert before_edges(events, {"a", "b", "c"}, LinkSettings(), GateStats()) == []


def test_gate_respects_theta_p() -> None:
    t1, t2 = "2024-03-01T10:00:00Z", "2024-03-08T10:00:00Z"
    events = [
        ev("ana", 0, "s1", t1, ["Ana"]),
        ev("ana_ben", 1, "s2", t2, ["Ana", "Ben"]),  # J({Ana}, {Ana, Ben}) = 0.5
    ]
    assert pairs(before_edges(events, {"ana_ben"}, LinkSettings(theta_p=0.5), GateStats())) == {("ana", "ana_ben")}
    assert before_edges(events, {"ana_ben"}, LinkSettings(theta_p=0.51), GateStats()) == []
    # disjoint participants never pass a positive threshold
    other = [ev("ben", 0, "s1", t1, ["Ben"]), ev("cy", 1, "s2", t2, ["Cy"])]
    assert before_edges(other, {"cy"}, LinkSettings(theta_p=0.01), GateStats()) == []
    assert pairs(before_edges(other, {"cy"}, LinkSettings(theta_p=0.0), GateStats())) == {("ben", "cy")}


def test_gate_skips_failing_predecessors_and_links_the_nearest_passing_one() -> None:
    t1, t2, t3 = "2024-03-01T10:00:00Z", "2024-03-02T10:00:00Z", "2024-03-09T10:00:00Z"
    events = [ev("ana1", 0, "s1", t1, ["Ana"]), ev("ben", 1, "s2", t2, ["Ben"]), ev("ana2", 2, "s3", t3, ["Ana"])]
    stats = GateStats()
    assert pairs(before_edges(events, {"ana2"}, LinkSettings(), stats)) == {("ana1", "ana2")}
    assert stats.pairs_considered == 2 and stats.pairs_possible == 2


def test_gate_respects_topics() -> None:
    t1, t2 = "2024-03-01T10:00:00Z", "2024-03-08T10:00:00Z"
    events = [ev("a", 0, "s1", t1, topic="work"), ev("b", 1, "s2", t2, topic="pets")]
    stats = GateStats()
    assert before_edges(events, {"a", "b"}, LinkSettings(), stats) == []
    assert stats.pairs_considered == 0
    assert stats.pairs_possible == 1


def test_only_new_events_get_incoming_edges_and_count_as_work() -> None:
    days = [f"2024-03-{d:02d}T10:00:00Z" for d in range(1, 8)]
    events = [ev(f"e{i}", i, f"s{i}", days[i]) for i in range(7)]
    stats = GateStats()
    edges = before_edges(events, {"e5", "e6"}, LinkSettings(), stats)
    assert pairs(edges) == {("e4", "e5"), ("e5", "e6")}
    assert stats.pairs_possible == 5 + 6
    assert stats.pairs_considered == 2  # the nearest predecessor passes at once


def test_look_back_is_bounded_so_work_grows_linearly() -> None:
    """Pairs considered < pairs possible on a long multi-session conversation, and O(n · window)."""
    s = LinkSettings(window=2)
    n = 300
    events = []
    for i in range(n):
        # every event mentions one of three people; only Ana's events link to Ana's
        who = ["Ana", "Ben", "Cy"][i % 3]
        events.append(ev(f"e{i:03d}", i, f"s{i // 10}", f"2024-01-{1 + i // 10:02d}T10:{i % 10:02d}:00Z", [who]))
    stats = GateStats()
    edges = before_edges(events, {e.id for e in events}, s, stats)
    assert stats.pairs_possible == n * (n - 1) // 2
    assert stats.pairs_considered <= n * 4 * s.window
    assert stats.pairs_considered < stats.pairs_possible / 10
    assert pairs(edges) == reference_before(events, {e.id for e in events}, s)
    by_id = {e.id: e for e in events}
    assert all(by_id[x.src].participants == by_id[x.dst].participants for x in edges)


_names = st.sampled_from(["Ana", "Ben", "Cy"])


@st.composite
def event_lists(draw: st.DrawFn) -> tuple[list[EventRec], set[str], LinkSettings]:
    n = draw(st.integers(min_value=0, max_value=25))
    events = []
    seq = 0
    for i in range(n):
        seq += draw(st.integers(min_value=0, max_value=1)) if i else 0
        session = f"s{draw(st.integers(min_value=0, max_value=4))}"
        day = draw(st.one_of(st.none(), st.integers(min_value=1, max_value=5)))
        anchor = None if day is None else f"2024-03-{day:02d}T10:00:00Z"
        parts = sorted(draw(st.sets(_names, min_size=1, max_size=3)))
        topic = draw(st.sampled_from(["t1", "t2", None]))
        events.append(ev(f"e{i:02d}", seq, session, anchor, parts, topic=topic,
                         sentence_idx=draw(st.integers(min_value=0, max_value=2))))
    ids = [e.id for e in events]
    new = set(draw(st.lists(st.sampled_from(ids), unique=True))) if ids else set()
    s = LinkSettings(theta_p=draw(st.sampled_from([0.0, 0.34, 0.5, 1.0])), window=draw(st.integers(1, 3)))
    return events, new, s


@settings(max_examples=120, deadline=None)
@given(event_lists())
def test_before_edges_match_brute_force(case: tuple[list[EventRec], set[str], LinkSettings]) -> None:
    events, new, s = case
    stats = GateStats()
    edges = before_edges(events, new, s, stats)
    assert pairs(edges) == reference_before(events, new, s)
    by_id = {e.id: e for e in events}
    for edge in edges:
        a, b = by_id[edge.src], by_id[edge.dst]
        assert b.id in new
        assert a.topic_id == b.topic_id
        assert jaccard(a.participants, b.participants) >= s.theta_p
        if a.session_id != b.session_id:
            assert a.time_anchor and b.time_anchor and a.time_anchor < b.time_anchor
        else:
            assert (a.seq, a.sentence_idx) < (b.seq, b.sentence_idx)
    assert len({e.dst for e in edges}) == len(edges)  # at most one incoming `before` per new event
    assert stats.pairs_considered <= stats.pairs_possible


# -- evolution edges ------------------------------------------------------------------------


def fact(eid: str, seq: int, subject: str, facet: str, value: str, *, speaker: str | None = None,
         negated: bool = False, cue: str | None = None, confidence: float = 0.8) -> EventRec:
    norm = value.lower()
    return ev(eid, seq, f"s{seq}", f"2024-03-{seq + 1:02d}T10:00:00Z", [subject], subject=subject,
              speaker=speaker or subject, facet=facet, value=value, value_norm=f"not:{norm}" if negated else norm,
              negated=negated, cue=cue, confidence=confidence)


def labelled(edges: Sequence[EdgeRec]) -> set[tuple[str, str, str]]:
    return {(e.src, e.dst, e.label) for e in edges}


def test_a_later_different_value_updates_the_previous_one() -> None:
    events = [fact("a", 0, "Ana", "residence", "Leeds"), fact("b", 1, "Ana", "residence", "Porto"),
              fact("c", 2, "Ana", "residence", "Braga", cue="instead")]
    edges = evolution_edges(events, LinkSettings())
    assert labelled(edges) == {("b", "a", "updates"), ("c", "b", "updates")}
    conf = {(e.src, e.dst): e.confidence for e in edges}
    assert conf[("c", "b")] > conf[("b", "a")]  # a revision cue is stronger evidence
    assert all(e.family == "evolution" for e in edges)


def test_repeating_the_same_value_is_not_an_update() -> None:
    events = [fact("a", 0, "Ana", "diet", "vegan"), fact("b", 1, "Ana", "diet", "vegan")]
    assert evolution_edges(events, LinkSettings()) == []


def test_someone_elses_fact_never_updates_yours() -> None:
    events = [fact("a", 0, "Ana", "residence", "Leeds"), fact("b", 1, "Ben", "residence", "Sheffield"),
              fact("c", 2, "Ben", "residence", "Edinburgh", cue="instead"), fact("d", 3, "Ana", "residence", "York")]
    assert labelled(evolution_edges(events, LinkSettings())) == {("c", "b", "updates"), ("d", "a", "updates")}


def test_a_report_by_someone_else_contradicts_instead_of_updating() -> None:
    events = [fact("own", 0, "Ana", "employer", "Acme"), fact("rep", 1, "Ana", "employer", "Helix", speaker="Ben")]
    (edge,) = evolution_edges(events, LinkSettings())
    assert (edge.src, edge.dst, edge.label) == ("rep", "own", "contradicts")
    assert "Ben says" in edge.justification


def test_multi_valued_facets_update_only_on_a_cue() -> None:
    events = [fact("a", 0, "Ana", "pet_name:cat", "Biscuit"), fact("b", 1, "Ana", "pet_name:cat", "Mochi")]
    assert evolution_edges(events, LinkSettings()) == []
    renamed = [events[0], fact("b", 1, "Ana", "pet_name:cat", "Mochi", cue="renamed")]
    assert labelled(evolution_edges(renamed, LinkSettings())) == {("b", "a", "updates")}


def test_a_retraction_revises_the_value_it_names() -> None:
    events = [fact("a", 0, "Ana", "sport", "squash"), fact("b", 1, "Ana", "sport", "tennis"),
              fact("c", 2, "Ana", "sport", "squash", negated=True, cue="no longer")]
    assert ("c", "a", "updates") in labelled(evolution_edges(events, LinkSettings()))
