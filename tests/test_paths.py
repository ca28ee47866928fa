"""Evidence paths (TRACE Eq. 15–20) on tiny hand-built graphs: traversal and pruning against a brute-force
reference, scoring against hand-computed values, rendering with validity markers."""

from __future__ import annotations

import dataclasses
import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracecli.query.ask import _path_out, marker, render_path
from tracecli.query.paths import (
    TIME_ORDERED,
    EdgeInfo,
    EventNode,
    Graph,
    Path,
    Step,
    rank_paths,
    score_path,
    traverse,
)
from tracecli.query.settings import RELATION_DISCOUNT, AskSettings

LABELS = ("updates", "causes", "enables", "prevents", "contradicts", "before")
REVERSED = {"updates": "updated by", "causes": "caused by", "enables": "enabled by", "prevents": "prevented by",
            "before": "after", "contradicts": "contradicts"}
GENEROUS = AskSettings(max_depth=3, fan_out=1000, max_paths=1_000_000)


# -- builders -------------------------------------------------------------------------------


def ev(eid: str, anchor: str | None = None, *, validity: float = 1.0, valid_until: str | None = None,
       facet: str | None = None, value: str | None = None, subject: str = "Alice", description: str | None = None) -> EventNode:
    return EventNode(
        id=eid, conversation_id="c", session_id="s", type="state_change", subject=subject,
        description=description or f"event {eid}", quote=f"quote {eid}", time_anchor=anchor, event_time=None,
        event_time_granularity=None, seq=0, sentence_idx=0, facet=facet, value=value, negated=False,
        confidence=0.9, validity=validity, valid_until=valid_until, topic_id=None, source_refs=[f"m-{eid}"],
    )


def edge(src: str, dst: str, label: str, confidence: float = 1.0, invalidated_at: str | None = None) -> EdgeInfo:
    return EdgeInfo(src, dst, label, confidence, invalidated_at, "")


def graph(events: Iterable[EventNode], edges: Iterable[EdgeInfo]) -> Graph:
    out: dict[str, list[EdgeInfo]] = defaultdict(list)
    into: dict[str, list[EdgeInfo]] = defaultdict(list)
    conflicts: set[frozenset[str]] = set()
    for e in edges:
        out[e.src].append(e)
        into[e.dst].append(e)
        if e.label == "contradicts":
            conflicts.add(frozenset((e.src, e.dst)))
    return Graph({e.id: e for e in events}, out, into, {}, {}, conflicts)


# -- the brute-force reference ----------------------------------------------------------------


def _time_ok(g: Graph, e: EdgeInfo) -> bool:
    if e.label not in TIME_ORDERED:
        return True
    a, b = g.events[e.src].time_anchor, g.events[e.dst].time_anchor
    return not a or not b or a <= b


def _rules_ok(g: Graph, edges: Sequence[EdgeInfo], as_of: str | None = None) -> bool:
    """The three pruning rules of §II-E, on a whole edge sequence (rule 1: invalidated by `as_of`, None = now)."""
    if any(e.invalidated_at and (as_of is None or e.invalidated_at <= as_of) for e in edges):
        return False
    if not all(_time_ok(g, e) for e in edges):
        return False
    return not any(a.label == "contradicts" and b.label == "contradicts" for a, b in itertools.pairwise(edges))


def brute_force(g: Graph, seeds: Iterable[str], max_depth: int, as_of: str | None = None) -> set[tuple[str, ...]]:
    """Every simple event sequence from a seed, ≤ max_depth edges, joined (either direction) by edges obeying the rules."""
    hops: dict[str, list[tuple[EdgeInfo, str]]] = defaultdict(list)
    all_edges = [e for es in g.out.values() for e in es]
    for e in all_edges:
        hops[e.src].append((e, e.dst))
        hops[e.dst].append((e, e.src))
    found: set[tuple[str, ...]] = set()

    def walk(nodes: list[str], edges: list[EdgeInfo]) -> None:
        if _rules_ok(g, edges, as_of):
            found.add(tuple(nodes))
        else:
            return
        if len(edges) == max_depth:
            return
        for e, nxt in hops[nodes[-1]]:
            if nxt not in nodes:
                walk([*nodes, nxt], [*edges, e])

    for s in dict.fromkeys(seeds):
        if s in g.events:
            walk([s], [])
    return found


def _reference_score(g: Graph, p: Path, relevance: dict[str, float], as_of: str | None, s: AskSettings) -> tuple[float, dict[str, float]]:
    ids = p.event_ids
    ns = sum(relevance.get(i, 0.0) for i in ids) / len(ids)
    pc = 1.0
    for e in p.edges:
        pc *= e.confidence * RELATION_DISCOUNT.get(e.label, 0.5)
    if any(e.label == "contradicts" for e in p.edges):
        pc *= 0.5
    tc = 1.0 if all(_time_ok(g, e) for e in p.edges) else 0.0

    def v(x: EventNode) -> float:
        if as_of is None:
            return x.validity
        if (x.time_anchor and x.time_anchor > as_of) or (x.valid_until and x.valid_until <= as_of):
            return 0.0
        return 1.0 if x.validity == 0.0 else x.validity

    uv = min(v(g.events[i]) for i in ids)
    return s.alpha * ns + s.beta * pc + s.gamma * tc + s.delta * uv, {"ns": ns, "pc": pc, "tc": tc, "uv": uv}


# -- hypothesis: random small graphs -------------------------------------------------------------

ANCHORS = st.one_of(st.none(), st.sampled_from([f"2024-0{m}-01T00:00:00Z" for m in range(1, 6)]))


@st.composite
def small_graphs(draw: st.DrawFn, parallel: bool = False) -> tuple[Graph, list[str]]:
    n = draw(st.integers(1, 7))
    ids = [f"e{i}" for i in range(n)]
    events = [
        ev(i, draw(ANCHORS), validity=draw(st.sampled_from([0.0, 0.5, 1.0])),
           valid_until=draw(st.one_of(st.none(), st.sampled_from(["2024-02-15T00:00:00Z", "2024-04-15T00:00:00Z"]))))
        for i in ids
    ]
    edges: list[EdgeInfo] = []
    pairs: set[frozenset[str]] = set()
    for _ in range(draw(st.integers(0, 12))):
        a, b = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
        key = frozenset((a, b))
        if not parallel and (a == b or key in pairs):
            continue
        pairs.add(key)
        edges.append(edge(a, b, draw(st.sampled_from(LABELS)), draw(st.sampled_from([0.5, 0.8, 1.0])),
                          draw(st.one_of(st.none(), st.none(), st.just("2024-03-01T00:00:00Z")))))
    seeds = draw(st.lists(st.sampled_from([*ids, "missing"]), min_size=1, max_size=3))
    return graph(events, edges), seeds


def _check_path_shape(g: Graph, p: Path) -> None:
    """Each hop is one of the graph's edges between the two events, and the relation label says which way."""
    assert len(p.edges) == len(p.steps) - 1
    assert len(set(p.event_ids)) == len(p.event_ids), "paths are simple"
    for (a, b), e, step in zip(itertools.pairwise(p.event_ids), p.edges, p.steps):
        assert e in g.out.get(e.src, [])
        if (e.src, e.dst) == (a, b):
            assert step.relation_to_next == e.label
        else:
            assert (e.src, e.dst) == (b, a)
            assert step.relation_to_next == REVERSED[e.label]
    assert p.steps[-1].relation_to_next is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_graphs(), st.integers(0, 3))
def test_traverse_matches_brute_force(case: tuple[Graph, list[str]], depth: int) -> None:
    g, seeds = case
    s = dataclasses.replace(GENEROUS, max_depth=depth)
    paths = traverse(g, seeds, s)
    keys = [tuple(p.event_ids) for p in paths]
    assert len(keys) == len(set(keys)), "no path twice"
    assert set(keys) == brute_force(g, seeds, depth)
    for p in paths:
        _check_path_shape(g, p)
        assert _rules_ok(g, p.edges)


@settings(max_examples=200, deadline=None)
@given(small_graphs(parallel=True), st.integers(1, 3))
def test_traverse_matches_brute_force_with_parallel_edges(case: tuple[Graph, list[str]], depth: int) -> None:
    g, seeds = case
    paths = traverse(g, seeds, dataclasses.replace(GENEROUS, max_depth=depth))
    assert {tuple(p.event_ids) for p in paths} == brute_force(g, seeds, depth)
    walks = [(tuple(p.event_ids), tuple((e.src, e.dst, e.label) for e in p.edges)) for p in paths]
    assert len(walks) == len(set(walks)), "no walk twice"
    for p in paths:
        _check_path_shape(g, p)
        assert _rules_ok(g, p.edges)


@settings(max_examples=200, deadline=None)
@given(small_graphs(), st.one_of(st.none(), st.sampled_from(["2024-01-15T00:00:00Z", "2024-03-01T00:00:00Z", "2024-12-31T00:00:00Z"])),
       st.lists(st.floats(0, 1), min_size=7, max_size=7))
def test_score_path_matches_the_formula(case: tuple[Graph, list[str]], as_of: str | None, rel: list[float]) -> None:
    g, seeds = case
    relevance = {f"e{i}": r for i, r in enumerate(rel)}
    for p in traverse(g, seeds, GENEROUS):
        score_path(g, p, relevance, GENEROUS, as_of)
        want, sig = _reference_score(g, p, relevance, as_of, GENEROUS)
        assert p.score == pytest.approx(want, abs=1e-6)
        assert p.signals == pytest.approx({k: round(v, 4) for k, v in sig.items()}, abs=1e-9)
        assert p.signals["tc"] == 1.0, "traversal already dropped time-inconsistent paths"


# -- hand-built golden cases -------------------------------------------------------------------


@pytest.fixture
def chain() -> Graph:
    """A (Jan, superseded in Feb) ←updates— B (Feb) —causes→ C (Mar, half valid); D contradicts B."""
    return graph(
        [ev("A", "2024-01-01T00:00:00Z", validity=0.0, valid_until="2024-02-01T00:00:00Z"),
         ev("B", "2024-02-01T00:00:00Z"), ev("C", "2024-03-01T00:00:00Z", validity=0.5), ev("D", "2024-02-10T00:00:00Z")],
        [edge("B", "A", "updates", 0.9), edge("B", "C", "causes", 0.8), edge("D", "B", "contradicts", 0.6)],
    )


def _path(g: Graph, ids: list[str]) -> Path:
    return next(p for p in traverse(g, [ids[0]], GENEROUS) if p.event_ids == ids)


def test_golden_score_of_a_three_step_path(chain: Graph) -> None:
    p = _path(chain, ["A", "B", "C"])
    assert [s.relation_to_next for s in p.steps] == ["updated by", "causes", None]
    score_path(chain, p, {"A": 0.2, "B": 0.8, "C": 0.5}, AskSettings(), None)
    # NS = (0.2+0.8+0.5)/3 = 0.5; PC = 0.9·0.95 · 0.8·0.9 = 0.6156; TC = 1; UV = min(0, 1, 0.5) = 0
    assert p.signals == {"ns": 0.5, "pc": 0.6156, "tc": 1.0, "uv": 0.0}
    assert p.score == pytest.approx(0.4 * 0.5 + 0.3 * 0.6156 + 0.15 * 1 + 0.15 * 0)
    assert p.score == pytest.approx(0.53468)


def test_golden_contradiction_halves_confidence(chain: Graph) -> None:
    p = _path(chain, ["B", "D"])
    assert p.steps[0].relation_to_next == "contradicts"
    score_path(chain, p, {"B": 1.0, "D": 0.0}, AskSettings(), None)
    assert p.signals["pc"] == pytest.approx(0.6 * 0.7 * 0.5)
    assert p.score == pytest.approx(0.4 * 0.5 + 0.3 * 0.21 + 0.15 + 0.15 * 1.0)


@pytest.mark.parametrize(
    ("as_of", "uv"),
    [
        (None, 0.0),  # A is superseded now
        ("2024-01-15T00:00:00Z", 1.0),  # in mid January A was the valid version
        ("2024-02-01T00:00:00Z", 0.0),  # superseded at exactly valid_until
        ("2023-12-31T00:00:00Z", 0.0),  # not yet said
    ],
)
def test_uv_is_validity_at_the_question_date(chain: Graph, as_of: str | None, uv: float) -> None:
    p = _path(chain, ["A"])
    score_path(chain, p, {}, AskSettings(), as_of)
    assert p.signals["uv"] == uv


def test_uv_keeps_partial_validity_and_takes_the_minimum(chain: Graph) -> None:
    p = _path(chain, ["B", "C"])
    for as_of in (None, "2024-03-15T00:00:00Z"):
        score_path(chain, p, {}, AskSettings(), as_of)
        assert p.signals["uv"] == 0.5
    score_path(chain, p, {}, AskSettings(), "2024-02-15T00:00:00Z")  # C not said yet
    assert p.signals["uv"] == 0.0


def test_time_inconsistent_path_gets_tc_zero() -> None:
    g = graph([ev("X", "2024-05-01T00:00:00Z"), ev("Y", "2024-01-01T00:00:00Z")], [edge("X", "Y", "before", 1.0)])
    assert traverse(g, ["X"], GENEROUS) == [Path([Step("X")], [])]  # rule 2 rejects the hop
    p = Path([Step("X", "before"), Step("Y")], [g.out["X"][0]])
    score_path(g, p, {"X": 1.0, "Y": 1.0}, AskSettings(), None)
    assert p.signals["tc"] == 0.0
    assert p.score == pytest.approx(0.4 * 1.0 + 0.3 * 0.6 + 0.0 + 0.15 * 1.0)


def test_unknown_and_structural_labels_discount_by_half() -> None:
    g = graph([ev("X"), ev("Y"), ev("Z")], [edge("X", "Y", "member_of", 1.0), edge("Y", "Z", "mystery", 1.0)])
    p = _path(g, ["X", "Y", "Z"])
    score_path(g, p, {}, AskSettings(), None)
    assert p.signals["pc"] == pytest.approx(0.5 * 0.5)
    assert RELATION_DISCOUNT["before"] < RELATION_DISCOUNT["causes"] < RELATION_DISCOUNT["updates"]


def test_weights_come_from_settings(chain: Graph) -> None:
    p = _path(chain, ["A", "B", "C"])
    only_ns = AskSettings(alpha=1.0, beta=0.0, gamma=0.0, delta=0.0)
    score_path(chain, p, {"A": 0.3, "B": 0.3, "C": 0.3}, only_ns, None)
    assert p.score == pytest.approx(0.3)
    assert (AskSettings().alpha, AskSettings().beta, AskSettings().gamma, AskSettings().delta) == (0.4, 0.3, 0.15, 0.15)


def test_rank_paths_orders_by_score_then_length_then_ids(chain: Graph) -> None:
    paths = traverse(chain, ["B"], GENEROUS)
    ranked = rank_paths(chain, paths, {"A": 0.1, "B": 0.9, "C": 0.4, "D": 0.2}, AskSettings(), None)
    keys = [(-p.score, len(p.steps), p.event_ids) for p in ranked]
    assert keys == sorted(keys)
    assert ranked[0].event_ids == ["B"]


# -- pruning rules one by one --------------------------------------------------------------------


def test_rule1_invalidated_edge_is_never_crossed() -> None:
    g = graph([ev("X"), ev("Y"), ev("Z")], [edge("X", "Y", "causes", invalidated_at="2024-01-01T00:00:00Z"), edge("Y", "Z", "causes")])
    assert {tuple(p.event_ids) for p in traverse(g, ["X", "Z"], GENEROUS)} == {("X",), ("Z",), ("Z", "Y")}


def test_rule2_backward_causation_is_rejected_in_both_directions() -> None:
    g = graph([ev("early", "2024-01-01T00:00:00Z"), ev("late", "2024-06-01T00:00:00Z")], [edge("late", "early", "causes")])
    assert {tuple(p.event_ids) for p in traverse(g, ["late", "early"], GENEROUS)} == {("late",), ("early",)}
    # updates/contradicts are not time-ordered: a later event updates an earlier one
    g2 = graph([ev("old", "2024-01-01T00:00:00Z"), ev("new", "2024-06-01T00:00:00Z")], [edge("new", "old", "updates")])
    assert {tuple(p.event_ids) for p in traverse(g2, ["old"], GENEROUS)} == {("old",), ("old", "new")}


def test_rule2_ignores_missing_anchors() -> None:
    g = graph([ev("X", "2024-06-01T00:00:00Z"), ev("Y", None)], [edge("X", "Y", "before")])
    assert ("X", "Y") in {tuple(p.event_ids) for p in traverse(g, ["X"], GENEROUS)}


def test_rule3_no_two_contradicts_in_a_row() -> None:
    g = graph([ev("X"), ev("Y"), ev("Z"), ev("W")],
              [edge("X", "Y", "contradicts"), edge("Y", "Z", "contradicts"), edge("Y", "W", "before"), edge("W", "Z", "contradicts")])
    keys = {tuple(p.event_ids) for p in traverse(g, ["X"], GENEROUS)}
    assert ("X", "Y", "Z") not in keys
    assert ("X", "Y", "W", "Z") in keys  # contradicts, before, contradicts: not consecutive
    assert keys == brute_force(g, ["X"], 3)


def test_rule3_with_parallel_edges_keeps_the_valid_alternative() -> None:
    g = graph([ev("X"), ev("Y"), ev("Z")],
              [edge("X", "Y", "contradicts"), edge("X", "Y", "before"), edge("Y", "Z", "contradicts")])
    paths = traverse(g, ["X"], GENEROUS)
    walked = {tuple(e.label for e in p.edges) for p in paths if p.event_ids == ["X", "Y", "Z"]}
    assert walked == {("before", "contradicts")}  # X—contradicts→Y—contradicts→Z breaks rule 3
    assert {tuple(e.label for e in p.edges) for p in paths if p.event_ids == ["X", "Y"]} == {("contradicts",), ("before",)}


@settings(max_examples=200, deadline=None)
@given(small_graphs(parallel=True), st.integers(1, 3),
       st.sampled_from(["2023-12-01T00:00:00Z", "2024-02-01T00:00:00Z", "2024-06-01T00:00:00Z", "2025-01-01T00:00:00Z"]))
def test_rule1_prunes_only_edges_invalidated_by_the_asked_time(case: tuple[Graph, list[str]], depth: int, as_of: str) -> None:
    g, seeds = case
    paths = traverse(g, seeds, dataclasses.replace(GENEROUS, max_depth=depth), as_of)
    assert {tuple(p.event_ids) for p in paths} == brute_force(g, seeds, depth, as_of)
    for p in paths:
        assert _rules_ok(g, p.edges, as_of)


def test_rule1_crosses_a_causal_edge_still_valid_at_the_asked_date() -> None:
    late = edge("A", "B", "causes", invalidated_at="2024-03-12T00:00:00Z")
    g = graph([ev("A", "2024-01-01T00:00:00Z"), ev("B", "2024-02-01T00:00:00Z")], [late])
    now = {tuple(p.event_ids) for p in traverse(g, ["A"], GENEROUS)}
    before = {tuple(p.event_ids) for p in traverse(g, ["A"], GENEROUS, "2024-03-01T00:00:00Z")}
    after = {tuple(p.event_ids) for p in traverse(g, ["A"], GENEROUS, "2024-04-01T00:00:00Z")}
    assert now == after == {("A",)}
    assert before == {("A",), ("A", "B")}


def test_caps_depth_fan_out_and_max_paths() -> None:
    events = [ev("hub")] + [ev(f"n{i}") for i in range(5)]
    edges = [edge("hub", f"n{i}", "before") for i in range(5)]
    g = graph(events, edges)
    assert [p.event_ids for p in traverse(g, ["hub"], dataclasses.replace(GENEROUS, max_depth=0))] == [["hub"]]
    two = traverse(g, ["hub"], dataclasses.replace(GENEROUS, fan_out=2))
    assert {tuple(p.event_ids) for p in two} == {("hub",), ("hub", "n0"), ("hub", "n1")}
    assert len(traverse(g, ["hub"], dataclasses.replace(GENEROUS, max_paths=3))) == 3
    assert traverse(g, ["nope"], GENEROUS) == []


# -- rendering and markers ----------------------------------------------------------------------


def test_render_path_marks_outdated_and_valid() -> None:
    g = graph(
        [ev("oslo", "2024-01-08T18:17:07Z", validity=0.0, valid_until="2024-03-12T19:47:59Z", facet="moving_to", value="Oslo"),
         ev("porto", "2024-03-12T19:47:59Z", facet="moving_to", value="Porto")],
        [edge("porto", "oslo", "updates", 0.92)],
    )
    p = _path(g, ["oslo", "porto"])
    assert render_path(g, p, None) == (
        "Alice is moving to Oslo (2024-01-08) [OUTDATED until 2024-03-12] —updated by→ Alice is moving to Porto (2024-03-12) [valid]"
    )
    # as of February the Oslo plan was valid and Porto not yet said
    assert render_path(g, p, "2024-02-01T00:00:00Z") == (
        "Alice is moving to Oslo (2024-01-08) [valid] —updated by→ Alice is moving to Porto (2024-03-12) [not yet]"
    )
    out = _path_out(g, p, None)
    assert [s.validity for s in out.steps] == ["outdated", "valid"]
    assert [s.relation_to_next for s in out.steps] == ["updated by", None]


def test_conflict_marker_wins_and_partial_shows() -> None:
    g = graph([ev("X", validity=0.0), ev("Y"), ev("P", validity=0.5)], [edge("X", "Y", "contradicts")])
    assert marker(g, g.events["X"], None) == "conflict"
    assert marker(g, g.events["Y"], None) == "conflict"
    assert marker(g, g.events["P"], None) == "partial"
    assert render_path(g, Path([Step("P")], []), None) == "event P [partial]"
