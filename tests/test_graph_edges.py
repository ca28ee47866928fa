"""Each edge type from small native conversations: ingest (real MiniLM) → build-graph (rules).

One conversation per edge family, written inline with several phrasings, is
ingested and built once per module; each test then looks at the events and
edges of the message it is about.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_graph_helpers import build_conversations, by_value, conversation, edge_between, edges, events, faceted

from tracecli.graph.link import LinkSettings, jaccard
from tracecli.store.db import Store
from tracecli.timeutil import parse_iso


def _module_store(tmp_path_factory: pytest.TempPathFactory, embedder: Any, *convs: dict[str, Any]) -> Iterator[Store]:
    store, _ = build_conversations(tmp_path_factory.mktemp("edges"), embedder, *convs)
    try:
        yield store
    finally:
        store.close()


def message_events(store: Store, text: str) -> list[dict[str, Any]]:
    """Events distilled from the message whose text is `text`."""
    rows = store.query(
        "SELECT e.* FROM events e JOIN event_notes en ON en.event_id = e.id JOIN notes n ON n.id = en.note_id "
        "JOIN messages m ON m.id = n.message_id WHERE m.text = ? ORDER BY e.seq, e.sentence_idx, e.id",
        (text,),
    )
    assert rows, f"no events from {text!r}"
    return rows


# -- before -----------------------------------------------------------------------------------

SAME_TIME = "2024-03-02T10:00:00Z"
BEFORE_CONV = conversation(
    "before",
    [
        # two sessions that carry the same timestamp on every message (as LoCoMo sessions do)
        (SAME_TIME, [("Ana", "I repotted all the tomato seedlings this morning."),
                     ("Ana", "Then I planted the basil in the greenhouse."),
                     ("Ben", "I watered the vegetable garden after lunch.")]),
        (SAME_TIME, [("Ana", "I pruned the apple trees in the back garden."),
                     ("Ana", "Then I weeded the strawberry beds for an hour.")]),
        ("2024-03-09T10:00:00Z", [("Ana", "I harvested the first radishes from the garden today."),
                                  ("Ana", "I also sowed carrots in the raised beds.")]),
    ],
    step_minutes=0,
)


@pytest.fixture(scope="module")
def before_graph(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Store]:
    yield from _module_store(tmp_path_factory, embedder, BEFORE_CONV)


def test_before_never_joins_equal_timestamps_of_different_sessions(before_graph: Store) -> None:
    evs = {e["id"]: e for e in events(before_graph, "before")}
    assert len({e["session_id"] for e in evs.values()}) == 3
    rows = edges(before_graph, "before", ["before"])
    assert rows
    for r in rows:
        a, b = evs[r["src"]], evs[r["dst"]]
        if a["session_id"] != b["session_id"]:
            assert parse_iso(a["time_anchor"]) < parse_iso(b["time_anchor"]), (a["quote"], b["quote"])
            assert a["time_anchor"] != SAME_TIME or b["time_anchor"] != SAME_TIME


def test_before_inside_a_session_follows_turn_order(before_graph: Store) -> None:
    evs = {e["id"]: e for e in events(before_graph, "before")}
    same = [r for r in edges(before_graph, "before", ["before"]) if evs[r["src"]]["session_id"] == evs[r["dst"]]["session_id"]]
    assert same
    for r in same:
        a, b = evs[r["src"]], evs[r["dst"]]
        assert a["time_anchor"] == b["time_anchor"]  # every message of a session shares one timestamp here
        assert (a["seq"], a["sentence_idx"]) < (b["seq"], b["sentence_idx"])
        assert r["justification"] == "same session, earlier turn"
    first = message_events(before_graph, "I repotted all the tomato seedlings this morning.")[0]
    second = message_events(before_graph, "Then I planted the basil in the greenhouse.")[0]
    assert edge_between(before_graph, first["id"], second["id"], "before") is not None
    assert edge_between(before_graph, second["id"], first["id"], "before") is None


def test_before_links_across_sessions_through_the_gate(before_graph: Store) -> None:
    evs = {e["id"]: e for e in events(before_graph, "before")}
    later = message_events(before_graph, "I harvested the first radishes from the garden today.")[0]
    incoming = [r for r in edges(before_graph, "before", ["before"]) if r["dst"] == later["id"]]
    assert len(incoming) == 1
    src = evs[incoming[0]["src"]]
    assert src["session_id"] != later["session_id"]
    assert src["topic_id"] == later["topic_id"]
    assert jaccard(json.loads(src["participants"]), json.loads(later["participants"])) >= LinkSettings().theta_p
    assert incoming[0]["justification"] == f"{src['time_anchor']} < {later['time_anchor']}"


# -- causes / enables / prevents ---------------------------------------------------------------

CAUSAL_CASES = [
    # (message, label, cue in the justification, a fragment of the cause event)
    ("I got a promotion, so I bought a new bike.", "causes", "so", "I got a promotion"),
    ("We finally got the mortgage approved, so we bought the house in Clifton.", "causes", "so", "mortgage approved"),
    ("I started cycling to work because the buses were always late.", "causes", "because", "buses were always late"),
    ("I sold my old car because the repairs were costing a fortune.", "causes", "because", "repairs were costing"),
    ("My back was killing me, which is why I joined a yoga studio.", "causes", "which is why", "My back was killing me"),
    ("The studio closed down, which is why I started painting at home.", "causes", "which is why", "The studio closed down"),
    ("After the layoffs at Acme, I decided to retrain as a nurse.", "causes", "after ... decided", "the layoffs at Acme"),
    ("After the breakup, we decided to sell the flat.", "causes", "after ... decided", "the breakup"),
    ("Thanks to the bonus, we booked a trip to Lisbon.", "enables", "thanks to", "the bonus"),
    ("I signed up for pottery classes thanks to my neighbour's recommendation.", "enables", "thanks to", "neighbour's recommendation"),
    ("I wanted to enter the race but the flu stopped me from training properly.", "prevents", "stopped ... from", "the flu"),
    ("I was saving up for a trip, but the car repair stopped me from booking the flights.", "prevents", "stopped ... from", "the car repair"),
]
CROSS_CAUSE = ("I lost my job at the bakery last week.", "So I'm moving back in with my parents in June.")
NO_CUE = "I bought a new kettle and I love it."
CAUSAL_CONV = conversation(
    "causal",
    [
        ("2024-04-06T09:00:00Z", [("Ana", text) for text, *_ in CAUSAL_CASES[:6]] + [("Ben", "Wow, busy month!")]),
        ("2024-04-20T09:00:00Z", [("Ana", text) for text, *_ in CAUSAL_CASES[6:]]
         + [("Ana", CROSS_CAUSE[0]), ("Ana", CROSS_CAUSE[1]), ("Ana", NO_CUE), ("Ben", "Good for you.")]),
    ],
    participants=["Ana", "Ben"],
)


@pytest.fixture(scope="module")
def causal_graph(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Store]:
    yield from _module_store(tmp_path_factory, embedder, CAUSAL_CONV)


@pytest.mark.parametrize(("text", "label", "cue", "cause"), CAUSAL_CASES, ids=[c[0][:40] for c in CAUSAL_CASES])
def test_causal_edge_from_an_explicit_cue(causal_graph: Store, text: str, label: str, cue: str, cause: str) -> None:
    mine = {e["id"]: e for e in message_events(causal_graph, text)}
    rows = [r for r in edges(causal_graph, "causal", ["causes", "enables", "prevents"]) if r["dst"] in mine]
    assert len(rows) == 1, rows
    edge = rows[0]
    assert edge["label"] == label
    assert edge["family"] == "support"
    assert edge["justification"] == f"explicit cue '{cue}'"
    src, dst = mine[edge["src"]], mine[edge["dst"]]
    assert cause.lower() in src["quote"].lower()
    assert src["quote"] != dst["quote"]  # the cause became its own event
    assert src["subject"] == dst["subject"] == "Ana"
    assert 0 < edge["confidence"] <= 1


def test_so_at_the_start_of_a_message_links_to_the_previous_message(causal_graph: Store) -> None:
    cause = message_events(causal_graph, CROSS_CAUSE[0])
    effect = message_events(causal_graph, CROSS_CAUSE[1])
    links = [edge_between(causal_graph, c["id"], e["id"], "causes") for c in cause for e in effect]
    found = [x for x in links if x is not None]
    assert len(found) == 1 and found[0]["justification"] == "explicit cue 'so'"


def test_no_cue_no_causal_edge(causal_graph: Store) -> None:
    ids = {e["id"] for e in message_events(causal_graph, NO_CUE)}
    assert not [r for r in edges(causal_graph, "causal", ["causes", "enables", "prevents"]) if r["src"] in ids or r["dst"] in ids]


def test_prevents_when_the_cause_is_the_grammatical_subject(tmp_path: Any, embedder: Any) -> None:
    conv = conversation("prev", [("2024-04-06T09:00:00Z", [
        ("Ana", "My sprained ankle stopped me from running the Bristol half marathon."),
        ("Ben", "Oh no, that is so annoying."),
    ])])
    store, _ = build_conversations(tmp_path, embedder, conv)
    try:
        assert edges(store, "prev", ["prevents"])
    finally:
        store.close()


# -- updates ----------------------------------------------------------------------------------

UPDATES_CONV = conversation(
    "updates",
    [
        ("2024-03-01T10:00:00Z", [
            ("Ana", "I live in Leeds with my flatmate Jo."),
            ("Ben", "I work at Acme Bank these days."),
            ("Ana", "We're moving to Oslo in the summer."),
            ("Ana", "I'm vegetarian these days."),
            ("Ben", "My dog is called Rex."),
            ("Ana", "My usual is a flat white."),
        ]),
        ("2024-04-02T18:00:00Z", [
            ("Ana", "Forget Oslo, it's Porto now."),
            ("Ben", "I switched from Acme Bank to Greenleaf Energy."),
            ("Ana", "I'm vegan now."),
            ("Ana", "I'm not drinking flat whites anymore, it's a cortado every morning."),
        ]),
        ("2024-05-10T09:00:00Z", [
            ("Ana", "We finally moved into our new flat in Porto."),
            ("Ben", "We renamed the dog Buster."),
        ]),
        ("2024-06-10T09:00:00Z", [
            ("Ben", "I now work at Helix Robotics."),
            ("Ana", "Actually, I live in Braga now."),
        ]),
    ],
    participants=["Ana", "Ben"],
)


@pytest.fixture(scope="module")
def updates_graph(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Store]:
    yield from _module_store(tmp_path_factory, embedder, UPDATES_CONV)


def assert_updates(store: Store, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    edge = edge_between(store, new["id"], old["id"], "updates")
    assert edge is not None, (new["quote"], old["quote"])
    assert edge["family"] == "evolution"
    fresh = {e["id"]: e for e in events(store)}
    assert fresh[old["id"]]["validity"] == 0.0
    assert fresh[old["id"]]["valid_until"] == new["time_anchor"]
    return edge


@pytest.mark.parametrize(
    ("subject", "facet", "old", "new", "cue"),
    [
        ("Ana", "moving_to", "oslo", "porto", "forget"),                     # "Forget Oslo, it's Porto now."
        ("Ana", "coffee", "flat white", "cortado", "anymore"),               # "not … anymore, it's a cortado"
        ("Ben", "employer", "acme bank", "greenleaf energy", "switched"),    # "switched from X to Y"
        ("Ben", "pet_name:dog", "rex", "buster", "renamed"),                 # a multi-valued facet needs the cue
    ],
)
def test_updates_with_an_explicit_cue(updates_graph: Store, subject: str, facet: str, old: str, new: str, cue: str) -> None:
    o, n = by_value(updates_graph, subject, facet, old), by_value(updates_graph, subject, facet, new)
    edge = assert_updates(updates_graph, n, o)
    assert f"(cue: {cue})" in edge["justification"]
    assert edge["confidence"] >= 0.85


@pytest.mark.parametrize(
    ("subject", "facet", "old", "new"),
    [
        ("Ana", "diet", "vegetarian", "vegan"),      # "I'm vegan now."
        ("Ana", "residence", "leeds", "porto"),      # "We finally moved into our new flat in Porto."
    ],
)
def test_updates_without_a_cue(updates_graph: Store, subject: str, facet: str, old: str, new: str) -> None:
    o, n = by_value(updates_graph, subject, facet, old), by_value(updates_graph, subject, facet, new)
    assert not n["cue"]
    edge = assert_updates(updates_graph, n, o)
    assert "(later statement, same facet)" in edge["justification"]
    assert edge["confidence"] <= LinkSettings().implicit_update_confidence


@pytest.mark.parametrize(
    ("subject", "facet", "chain"),
    [
        ("Ana", "residence", ["leeds", "porto", "braga"]),
        ("Ben", "employer", ["acme bank", "greenleaf energy", "helix robotics"]),
    ],
)
def test_chained_updates_leave_only_the_newest_valid(updates_graph: Store, subject: str, facet: str, chain: list[str]) -> None:
    a, b, c = (by_value(updates_graph, subject, facet, v) for v in chain)
    assert_updates(updates_graph, b, a)
    assert_updates(updates_graph, c, b)
    assert edge_between(updates_graph, c["id"], a["id"], "updates") is None  # one step at a time
    rows = faceted(updates_graph, subject, facet)
    assert [r["validity"] for r in rows] == [0.0, 0.0, 1.0]
    assert rows[-1]["valid_until"] is None
    # valid_until walks forward: A until B, B until C
    assert rows[0]["valid_until"] == b["time_anchor"] < rows[1]["valid_until"] == c["time_anchor"]


def test_unrevised_facts_stay_valid(updates_graph: Store) -> None:
    jo = by_value(updates_graph, "Ana", "family:flatmate", "jo")
    assert jo["validity"] == 1.0 and jo["valid_until"] is None


def test_substitution_value_stops_before_a_date(tmp_path: Any, embedder: Any) -> None:
    conv = conversation("sub", [
        ("2024-03-01T10:00:00Z", [("Ben", "I work at Acme Bank these days."), ("Ana", "Nice.")]),
        ("2024-04-02T10:00:00Z", [("Ben", "I switched from Acme Bank to Greenleaf Energy last month."), ("Ana", "Oh!")]),
    ])
    store, _ = build_conversations(tmp_path, embedder, conv)
    try:
        assert [e["value"] for e in faceted(store, "Ben", "employer")] == ["Acme Bank", "Greenleaf Energy"]
    finally:
        store.close()


# -- contradicts ------------------------------------------------------------------------------

CONTRA_CONV = conversation(
    "contra",
    [
        ("2024-03-01T10:00:00Z", [
            ("Ana", "I live in Leeds."),
            ("Ana", "I work at Acme Bank."),
            ("Ana", "I'm vegetarian."),
            ("Ben", "Cool."),
        ]),
        ("2024-03-09T10:00:00Z", [
            ("Ben", "You live in York, I thought."),
            ("Ben", "Cara said Ana works at Helix Robotics."),
            ("Ben", "You're vegan, obviously."),
            ("Ana", "Ha, no."),
        ]),
    ],
    participants=["Ana", "Ben"],
)


@pytest.fixture(scope="module")
def contra_graph(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Store]:
    yield from _module_store(tmp_path_factory, embedder, CONTRA_CONV)


@pytest.mark.parametrize(
    ("facet", "own", "reported"),
    [("residence", "leeds", "york"), ("employer", "acme bank", "helix robotics"), ("diet", "vegetarian", "vegan")],
)
def test_another_speakers_report_contradicts_and_changes_no_validity(contra_graph: Store, facet: str, own: str, reported: str) -> None:
    o, r = by_value(contra_graph, "Ana", facet, own), by_value(contra_graph, "Ana", facet, reported)
    assert o["speaker"] == "Ana" and r["speaker"] == "Ben"
    edge = edge_between(contra_graph, r["id"], o["id"], "contradicts")
    assert edge is not None and edge["family"] == "evolution"
    assert "Ben says" in edge["justification"]
    assert edge_between(contra_graph, r["id"], o["id"], "updates") is None
    for e in (o, r):
        assert e["validity"] == 1.0 and e["valid_until"] is None


def test_contradicts_is_the_only_evolution_in_that_conversation(contra_graph: Store) -> None:
    assert {r["label"] for r in edges(contra_graph, "contra", ["updates", "contradicts"])} == {"contradicts"}
    assert all(e["validity"] == 1.0 for e in events(contra_graph, "contra"))


# -- different people --------------------------------------------------------------------------

PEOPLE_CONV = conversation(
    "people",
    [
        ("2024-03-01T10:00:00Z", [
            ("Ana", "I live in Leeds."),
            ("Ben", "I live in Sheffield."),
            ("Ana", "My cat is called Biscuit."),
            ("Ben", "My cat is called Mochi."),
            ("Ana", "I work at Acme Bank."),
            ("Ben", "I work at Helix Robotics."),
        ]),
        ("2024-04-01T10:00:00Z", [
            ("Ben", "We moved to Edinburgh last week."),
            ("Ben", "We renamed the cat Pixel."),
            ("Ben", "I joined Greenleaf Energy."),
            ("Ana", "Nice!"),
        ]),
        ("2024-05-01T10:00:00Z", [
            ("Ana", "I live in York now."),
            ("Ana", "I work at Northwind Bank now."),
            ("Ben", "Congrats!"),
        ]),
    ],
    participants=["Ana", "Ben"],
)


@pytest.fixture(scope="module")
def people_graph(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Store]:
    yield from _module_store(tmp_path_factory, embedder, PEOPLE_CONV)


def test_evolution_edges_never_cross_people(people_graph: Store) -> None:
    evs = {e["id"]: e for e in events(people_graph, "people")}
    rows = edges(people_graph, "people", ["updates", "contradicts"])
    assert rows
    for r in rows:
        assert evs[r["src"]]["subject"] == evs[r["dst"]]["subject"], r


@pytest.mark.parametrize(
    ("facet", "ana", "ben_old", "ben_new", "ana_new"),
    [
        ("residence", "leeds", "sheffield", "edinburgh", "york"),          # both moving
        ("employer", "acme bank", "helix robotics", "greenleaf energy", "northwind bank"),  # both changing jobs
        ("pet_name:cat", "biscuit", "mochi", "pixel", None),               # both with pets
    ],
)
def test_someone_elses_similar_fact_never_updates_yours(people_graph: Store, facet: str, ana: str, ben_old: str,
                                                         ben_new: str, ana_new: str | None) -> None:
    a = by_value(people_graph, "Ana", facet, ana)
    b_old, b_new = by_value(people_graph, "Ben", facet, ben_old), by_value(people_graph, "Ben", facet, ben_new)
    assert_updates(people_graph, b_new, b_old)
    assert edge_between(people_graph, b_new["id"], a["id"], "updates") is None
    assert edge_between(people_graph, b_old["id"], a["id"], "updates") is None
    if ana_new is None:
        assert a["validity"] == 1.0 and a["valid_until"] is None  # Ben's new cat does not rename Ana's
    else:
        a_new = by_value(people_graph, "Ana", facet, ana_new)
        assert_updates(people_graph, a_new, a)  # outdated by her own news, as of her own date
        assert a["valid_until"] == a_new["time_anchor"] != b_new["time_anchor"]


# -- extraction gaps: a quit job, a move named by an ORG-tagged city ---------------------------

GAPS_CONV = conversation(
    "gaps",
    [
        ("2024-03-01T10:00:00Z", [("Ana", "I work at Acme Bank."), ("Ana", "I live in Leeds."), ("Ben", "Right.")]),
        ("2024-04-01T10:00:00Z", [
            ("Ana", "I quit my job at Acme Bank."),
            ("Ana", "My landlord doubled the rent, so I moved to Bristol."),
            ("Ben", "Big month!"),
        ]),
    ],
    participants=["Ana", "Ben"],
)


@pytest.fixture(scope="module")
def gaps_graph(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Store]:
    yield from _module_store(tmp_path_factory, embedder, GAPS_CONV)


def test_quitting_a_job_is_a_retraction(gaps_graph: Store) -> None:
    quit_ = [e for e in message_events(gaps_graph, "I quit my job at Acme Bank.") if e["facet"] == "employer"]
    assert quit_ and all(e["negated"] for e in quit_)


def test_moving_to_a_city_is_not_an_employer(gaps_graph: Store) -> None:
    """spaCy tags 'Bristol' ORG here; a move still names a place, never an employer."""
    facets = {e["facet"] for e in message_events(gaps_graph, "My landlord doubled the rent, so I moved to Bristol.")}
    assert "employer" not in facets and "residence" in facets
