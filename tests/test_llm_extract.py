"""LLM event distillation against the scripted local server: checks, drops, fallback, cache, build."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer, Scripted, invalid_json_reply, json_reply, running_server

from tracecli.graph.build import build_graph
from tracecli.graph.extract import EventOut, MessageIn
from tracecli.graph.llm_extract import (
    SESSION_SCHEMA,
    STAGE,
    distill_session,
    extract_with_llm,
    normalise_facet,
    resolve_time,
    support,
)
from tracecli.ingest import ingest_parsed, parse_file
from tracecli.providers.llm import LLMSettings, NoneChatModel, OpenAIChatModel, ledger_totals
from tracecli.store import Store, open_store
from tracecli.timeutil import parse_iso

SECRET = "sk-test-SECRET-123"
PARTICIPANTS = ["Alice", "Bob"]
MESSAGES = [
    MessageIn("m1", "n1", "s1", 0, "Alice", "I'm moving to Lisbon next month. My sister Clara is coming with me.",
              "2024-03-01T09:00:00Z"),
    MessageIn("m2", "n2", "s1", 1, "Bob", "Lisbon! Will you keep the flat in Berlin?", "2024-03-01T09:01:00Z"),
    MessageIn("m3", "n3", "s1", 2, "Alice", "No, I sold it last week because the rent went up.", "2024-03-01T09:02:00Z"),
]


def ev(key: str, description: str, **kw: Any) -> dict[str, Any]:
    """One event as the model would send it; every schema field present."""
    out: dict[str, Any] = {
        "id": key, "type": "action", "subject": "Alice", "participants": ["Alice"], "description": description,
        "sources": [1], "time": None, "facet": None, "value": None, "negated": False, "revision_cue": None,
        "confidence": 0.8,
    }
    out.update(kw)
    return out


def reply(*events: dict[str, Any], links: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"events": list(events), "links": links or []}


MOVE = ev("e1", "Alice is moving to Lisbon next month.", type="plan", time="next month", facet="moving_to",
          value="lisbon", confidence=0.99)
SISTER = ev("e2", "Alice's sister Clara is coming with her.", type="state_change", participants=["Alice", "Clara"],
            facet="family:sister", value="Clara")
SOLD = ev("e3", "Alice sold the flat in Berlin last week.", sources=[2, 3], time="last week", confidence=0.1)
RENT = ev("e4", "The rent on Alice's flat went up.", sources=[3])
GOOD = reply(MOVE, SISTER, SOLD, RENT, links=[{"cause": "e4", "effect": "e3", "label": "causes", "cue": "because"}])


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    with running_server() as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(tmp_path / "trace.db")
    yield s
    s.close()


def make_model(server: LLMServer, store: Store | None) -> OpenAIChatModel:
    settings = LLMSettings(
        provider="openai", url=server.url, model="test-model", api_key=SECRET, timeout=2.0, max_retries=0
    )
    return OpenAIChatModel(settings, store, sleep=lambda s: None, rng=random.Random(1))


def by_description(events: list[EventOut]) -> dict[str, EventOut]:
    return {e.description: e for e in events}


# -- a good reply ----------------------------------------------------------------------
def test_good_reply_becomes_grounded_events(llm_server: LLMServer, store: Store) -> None:
    llm_server.queue(json_reply(GOOD))
    events = extract_with_llm(make_model(llm_server, store), MESSAGES, PARTICIPANTS, [])
    assert events is not None and len(events) == 4
    got = by_description(events)

    move = got["Alice is moving to Lisbon next month."]
    assert (move.type, move.subject, move.participants) == ("plan", "Alice", ["Alice"])
    assert (move.facet, move.value, move.value_norm) == ("moving_to", "Lisbon", "lisbon")  # spelled as the source
    assert move.source_note_ids == ["n1"] and move.source_message_ids == ["m1"]
    assert move.quote == "I'm moving to Lisbon next month." and (move.seq, move.sentence_idx) == (0, 0)
    assert (move.event_time, move.event_time_granularity) == ("2024-04-01", "month")  # resolved by find_dates
    assert move.time_anchor == "2024-03-01T09:00:00Z" and move.speaker == "Alice"
    assert move.provenance == "llm" and move.confidence == 0.89  # clipped to 0.95, then below 0.9: no revision cue in the source

    sister = got["Alice's sister Clara is coming with her."]
    assert (sister.facet, sister.value, sister.participants) == ("family:sister", "Clara", ["Alice", "Clara"])
    assert sister.quote == "My sister Clara is coming with me." and sister.sentence_idx == 1

    sold = got["Alice sold the flat in Berlin last week."]
    assert sold.source_message_ids == ["m2", "m3"] and sold.source_note_ids == ["n2", "n3"]
    # the quote is the subject's own sentence, not Bob's question
    assert sold.quote == "No, I sold it last week because the rent went up." and sold.speaker == "Alice"
    assert sold.seq == 2 and sold.confidence == 0.3 and sold.facet is None and sold.value is None
    assert sold.event_time_granularity == "week" and sold.event_time is not None
    rent = got["The rent on Alice's flat went up."]
    assert sold.causal == [("causes", rent.id, "because")] and rent.causal == []

    assert len({e.id for e in events}) == 4 and all(e.id.startswith("ev_") for e in events)
    assert [(e.seq, e.sentence_idx) for e in events] == sorted((e.seq, e.sentence_idx) for e in events)

    [req] = llm_server.requests
    assert req.response_format is not None
    assert req.response_format["json_schema"]["name"] == "session_events"
    assert req.response_format["json_schema"]["schema"] == json.loads(json.dumps(SESSION_SCHEMA))
    prompt = req.messages[-1]["content"]
    assert "[3] (2024-03-01T09:02:00Z) Alice: No, I sold it last week" in prompt
    assert "family:<relation>" in prompt and "moving_to" in prompt
    [row] = ledger_totals(store)
    assert (row.stage, row.calls, row.fallbacks) == (STAGE, 1, 0)


def test_same_reply_gives_same_ids(llm_server: LLMServer) -> None:
    llm_server.queue(json_reply(GOOD), json_reply(GOOD))
    model = make_model(llm_server, None)
    first = extract_with_llm(model, MESSAGES, PARTICIPANTS, [])
    second = extract_with_llm(model, MESSAGES, PARTICIPANTS, [])
    assert first is not None and second is not None
    assert [e.id for e in first] == [e.id for e in second]


def test_known_facts_are_in_the_prompt_and_revision_cue_kept(llm_server: LLMServer) -> None:
    history = [
        EventOut(id="ev_old", type="plan", subject="Alice", participants=["Alice"], description="Alice is moving to Lisbon",
                 time_anchor="2024-03-01T09:00:00Z", event_time=None, event_time_granularity=None, seq=0, sentence_idx=0,
                 source_note_ids=[], source_message_ids=[], quote="I'm moving to Lisbon.", facet="moving_to",
                 value="Lisbon", value_norm="lisbon"),
    ]
    msgs = [MessageIn("m9", "n9", "s2", 5, "Alice", "Change of plan: Porto instead of Lisbon.", "2024-04-10T18:30:00Z")]
    llm_server.queue(json_reply(reply(
        ev("a", "Alice is moving to Porto instead of Lisbon.", type="state_change", facet="moving_to", value="Porto",
           revision_cue="instead"),
        ev("b", "Alice now lives in Porto.", facet="residence", value="Porto", revision_cue="switched"),
    )))
    events = extract_with_llm(make_model(llm_server, None), msgs, PARTICIPANTS, history)
    assert events is not None
    got = by_description(events)
    assert got["Alice is moving to Porto instead of Lisbon."].cue == "instead"
    # a cue the message does not contain is not believed; the rules' cue finder on the quote decides
    assert got["Alice now lives in Porto."].cue == "instead"
    prompt = llm_server.requests[0].messages[-1]["content"]
    assert "- Alice | moving_to | Lisbon (as of 2024-03-01)" in prompt


def test_date_and_pet_facets_are_written_like_the_rules(llm_server: LLMServer) -> None:
    msgs = [MessageIn("w1", "wn1", "s3", 7, "Alice",
                      "Our wedding is on 14 September. Our puppy is called Biscuit. The honeymoon is in the autumn.",
                      "2024-03-01T09:00:00Z")]
    llm_server.queue(json_reply(reply(
        ev("w", "Alice's wedding is on 14 September.", type="plan", facet="date:Wedding", value="14 September"),
        ev("p", "Alice's puppy is called Biscuit.", type="state_change", facet="pet_name:puppy", value="biscuit"),
        ev("h", "Alice's honeymoon is in the autumn.", type="plan", facet="date:honeymoon", value="autumn"),
    )))
    events = extract_with_llm(make_model(llm_server, None), msgs, PARTICIPANTS, [])
    assert events is not None
    wedding, pet = events[0], events[1]
    assert (wedding.facet, wedding.value, wedding.value_norm) == ("date:wedding", "14 September 2024", "14 september 2024")
    assert (wedding.event_time, wedding.event_time_granularity) == ("2024-09-14", "day")
    assert (pet.facet, pet.value, pet.value_norm, pet.sentence_idx) == ("pet_name:dog", "Biscuit", "biscuit", 1)
    # "autumn" is in the text but resolves to no date: the event stays, without the facet
    assert (events[2].facet, events[2].value, events[2].quote) == (None, None, "The honeymoon is in the autumn.")


# -- validation drops ------------------------------------------------------------------------
def test_invalid_events_are_dropped_and_counted(llm_server: LLMServer) -> None:
    llm_server.queue(json_reply(reply(
        MOVE,
        ev("x1", "Alice won the lottery and bought a yacht in Monaco."),  # not in the source
        ev("x2", "Alice is moving to Lisbon with Zoe next month.", participants=["Alice", "Zoe"]),  # invented person
        ev("x3", "Alice is moving to Lisbon next month.", facet="residence", value="Madrid"),  # value absent
        ev("x4", "Alice sold the flat.", sources=[9]),  # no such message
        ev("x5", "Alice sold the flat in Berlin.", sources=[1, 2, 3]),  # the whole session
        ev("x6", "Zoe is moving to Lisbon next month.", subject="Zoe", participants=["Zoe"]),  # invented subject
        ev("x7", "Alice is moving to Lisbon soon.", facet="favorite_colour", value="Lisbon"),  # unknown facet: kept, no facet
        ev("x8", "Alice is moving to Lisbon next month.", facet="moving_to", value="Lis"),  # only part of a word
        links=[
            {"cause": "x1", "effect": "e1", "label": "causes", "cue": "because"},  # a dropped event
            {"cause": "x7", "effect": "e1", "label": "enables", "cue": "thanks to"},  # cue not in the text
            {"cause": "x7", "effect": "e1", "label": "causes", "cue": "on"},  # only inside a word ("Lisbon")
        ],
    )))
    result = distill_session(make_model(llm_server, None), MESSAGES, PARTICIPANTS, [])
    assert result.events is not None
    assert [e.description for e in result.events] == ["Alice is moving to Lisbon next month.", "Alice is moving to Lisbon soon."]
    assert result.events[1].facet is None and result.events[1].value is None
    assert result.proposed == 9 and result.dropped_total == 7
    assert dict(result.dropped) == {
        "unsupported_description": 1, "unknown_participant": 1, "value_not_in_source": 2, "source_missing": 1,
        "too_many_sources": 1, "unknown_subject": 1,
    }
    assert (result.links_proposed, result.links_dropped) == (3, 3)
    assert all(e.causal == [] for e in result.events)
    assert not result.fallback


def test_names_first_person_and_bad_source_numbers(llm_server: LLMServer) -> None:
    llm_server.queue(json_reply(reply(
        ev("a", "Alice is moving to Lisbon next month.", subject="alice", participants=["ALICE"]),  # respelled
        ev("b", "I am moving to Lisbon next month."),  # not third person
        ev("c", "Alice is moving to Lisbon next month.", sources=[0]),  # numbers start at 1
        ev("d", "Alice is moving away from the US next month."),  # "US" is not a first-person "us"
    )))
    result = distill_session(make_model(llm_server, None), MESSAGES, PARTICIPANTS, [])
    assert result.events is not None
    event, us = result.events
    assert (event.subject, event.participants) == ("Alice", ["Alice"])
    assert us.description == "Alice is moving away from the US next month."
    assert result.dropped == {"not_third_person": 1, "source_missing": 1}


def test_offline_model_means_rules() -> None:
    assert extract_with_llm(NoneChatModel(), MESSAGES, PARTICIPANTS, []) is None


def test_person_named_in_cited_message_may_be_a_participant(llm_server: LLMServer) -> None:
    llm_server.queue(json_reply(reply(
        ev("c", "Clara is coming to Lisbon with Alice.", subject="Clara", participants=["Clara", "Alice"]),
        ev("d", "Clara is coming with Alice.", subject="Clara", participants=["Clara"], sources=[3]),  # not named there
    )))
    result = distill_session(make_model(llm_server, None), MESSAGES, PARTICIPANTS, [])
    assert result.events is not None and [e.subject for e in result.events] == ["Clara"]
    assert result.dropped == {"unknown_subject": 1}


def test_every_event_invalid_returns_none(llm_server: LLMServer) -> None:
    llm_server.queue(json_reply(reply(ev("x", "Alice adopted three llamas in Peru."))))
    result = distill_session(make_model(llm_server, None), MESSAGES, PARTICIPANTS, [])
    assert result.events is None and result.fallback and result.dropped == {"unsupported_description": 1}


def test_no_events_is_an_answer_not_a_fallback(llm_server: LLMServer) -> None:
    llm_server.queue(json_reply(reply()))
    assert extract_with_llm(make_model(llm_server, None), MESSAGES, PARTICIPANTS, []) == []


def test_empty_session_makes_no_call(llm_server: LLMServer) -> None:
    assert extract_with_llm(make_model(llm_server, None), [], PARTICIPANTS, []) == []
    assert llm_server.requests == []


# -- unusable replies ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(invalid_json_reply, id="malformed-json"),
        pytest.param(lambda: json_reply(reply(ev("e", "Alice is moving.", type="event"))), id="enum"),
        pytest.param(lambda: json_reply({"events": [{"id": "e", "description": "x"}], "links": []}), id="missing-fields"),
        pytest.param(lambda: json_reply(reply(MOVE, ev("e", "Alice", sources=[]))), id="no-sources"),
        pytest.param(lambda: json_reply({"events": []}), id="no-links"),
    ],
)
def test_unusable_reply_falls_back_and_is_counted(llm_server: LLMServer, store: Store, bad: Any) -> None:
    llm_server.queue(bad(), bad())  # the first reply and the one corrective retry
    assert extract_with_llm(make_model(llm_server, store), MESSAGES, PARTICIPANTS, []) is None
    assert len(llm_server.requests) == 2
    [row] = ledger_totals(store)
    assert (row.stage, row.calls, row.fallbacks, row.cache_hits) == (STAGE, 1, 1, 0)
    assert store.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == 0  # a bad reply is never cached


def test_bad_then_corrected_reply_is_used(llm_server: LLMServer) -> None:
    llm_server.queue(invalid_json_reply(), json_reply(reply(MOVE)))
    events = extract_with_llm(make_model(llm_server, None), MESSAGES, PARTICIPANTS, [])
    assert events is not None and [e.value for e in events] == ["Lisbon"]


def test_second_identical_call_hits_the_cache(llm_server: LLMServer, store: Store) -> None:
    llm_server.queue(json_reply(GOOD))
    model = make_model(llm_server, store)
    first = extract_with_llm(model, MESSAGES, PARTICIPANTS, [])
    second = extract_with_llm(model, MESSAGES, PARTICIPANTS, [])
    assert len(llm_server.requests) == 1
    assert first is not None and second is not None and [e.id for e in first] == [e.id for e in second]
    [row] = ledger_totals(store)
    assert (row.calls, row.cache_hits) == (2, 1)


# -- small pure helpers ------------------------------------------------------------------------
def test_normalise_facet() -> None:
    assert normalise_facet("moving_to") == "moving_to"
    assert normalise_facet(" Residence ") == "residence"
    assert normalise_facet("pet_name:puppy") == "pet_name:dog"
    assert normalise_facet("family:mom") == "family:mum"
    assert normalise_facet("date:gig") == "date:concert"
    assert normalise_facet("venue:wedding") == "venue:wedding"
    assert normalise_facet("favourite:book") == "favourite:book"
    assert normalise_facet("favorite_colour") is None
    assert normalise_facet("family:") is None
    assert normalise_facet("job") is None and normalise_facet(None) is None


def test_support_ignores_names_and_inflection() -> None:
    source = "I work at Google and I love running."
    assert support("Alice works at Google and loves running.", source, ["Alice", "Bob"]) == 1.0
    assert support("Alice's job is at Google.", source, ["Alice"]) == 0.5
    assert support("Alice", source, ["Alice"]) == 0.0


def test_resolve_time_is_anchored_to_the_text() -> None:
    base = parse_iso("2024-03-01T09:00:00Z")
    text = "I'm moving to Lisbon next month."
    assert resolve_time("next month", text, base, future=True) == (resolve_time("2024-04-01", text, base, future=True))
    # the model's own arithmetic is replaced by the text's expression when they disagree
    got = resolve_time("2024-07-15", text, base, future=True)
    assert got is not None and got[0].isoformat() == "2024-04-01"
    # a paraphrase falls back to the text's expression; no date in the text → no time
    assert resolve_time("in a month's time", text, base, future=True) == got
    assert resolve_time("2024-07-15", "I love Lisbon.", base, future=False) is None
    assert resolve_time(None, text, base, future=True) is None


# -- end to end: ingest → build-graph with the LLM extractor --------------------------------
CONVERSATION = {
    "conversation_id": "moves",
    "participants": ["Alice", "Bob"],
    "sessions": [
        {"id": "s1", "messages": [
            {"id": "m1", "speaker": "Alice", "text": "I am moving to Lisbon in June. I love the light there.",
             "timestamp": "2024-03-01T09:00:00Z"},
            {"id": "m2", "speaker": "Bob", "text": "Lisbon! Will you keep the flat in Berlin?",
             "timestamp": "2024-03-01T09:01:00Z"},
            {"id": "m3", "speaker": "Alice", "text": "No, I sold it last week because the rent went up.",
             "timestamp": "2024-03-01T09:02:00Z"},
        ]},
        {"id": "s2", "messages": [
            {"id": "m4", "speaker": "Alice", "text": "Change of plan: Porto instead of Lisbon.",
             "timestamp": "2024-04-10T18:30:00Z"},
            {"id": "m5", "speaker": "Bob", "text": "Porto has better wine anyway.", "timestamp": "2024-04-10T18:31:00Z"},
        ]},
    ],
}
S1_REPLY = reply(
    ev("e1", "Alice is moving to Lisbon in June.", type="plan", time="in June", facet="moving_to", value="Lisbon"),
    ev("e2", "Alice loves the light in Lisbon.", type="preference"),
    ev("e3", "Alice sold the flat in Berlin last week.", sources=[2, 3], time="last week"),
    ev("e4", "The rent on Alice's flat went up.", sources=[3]),
    links=[{"cause": "e4", "effect": "e3", "label": "causes", "cue": "because"}],
)
S2_REPLY = reply(
    ev("e1", "Alice is moving to Porto instead of Lisbon.", type="state_change", facet="moving_to", value="Porto",
       revision_cue="instead", confidence=0.9),
    ev("e2", "Bob says Porto has better wine.", subject="Bob", participants=["Bob"], type="preference", sources=[2]),
)


def _responder(session_two: Scripted | None = None) -> Any:
    def respond(body: Any) -> Scripted:
        prompt = "\n".join(str(m.get("content")) for m in body["messages"])
        if "Porto instead of Lisbon" in prompt:
            return session_two or json_reply(S2_REPLY)
        return json_reply(S1_REPLY)

    return respond


def _ingest(path: Path, embedder: Any) -> Store:
    src = path.parent / "moves.json"
    src.write_text(json.dumps(CONVERSATION), encoding="utf-8")
    store = open_store(path)
    ingest_parsed(store, src, parse_file(src), embedder)
    return store


def _updates(store: Store) -> set[tuple[str, str, str, str]]:
    return {
        (r["subject"], r["facet"], r["new_value"], r["old_value"])
        for r in store.query(
            "SELECT n.subject, n.facet, n.value AS new_value, o.value AS old_value FROM edges e "
            "JOIN events n ON n.id = e.src JOIN events o ON o.id = e.dst WHERE e.label = 'updates'"
        )
    }


def test_build_graph_with_llm_extractor(tmp_path: Path, embedder: Any, llm_server: LLMServer) -> None:
    store = _ingest(tmp_path / "llm.db", embedder)
    llm_server.responder = _responder()
    model = make_model(llm_server, store)
    [res] = build_graph(store, extractor="llm", llm=model)
    assert res.extractor == "llm" and res.sessions_processed == 2
    assert (res.llm_calls, res.llm_cache_hits, res.llm_fallbacks) == (2, 0, 0)
    assert res.events_total == 6 and len(llm_server.requests) == 2

    events = {r["description"]: r for r in store.query("SELECT * FROM events")}
    assert {r["provenance"] for r in events.values()} == {"llm"}
    lisbon = events["Alice is moving to Lisbon in June."]
    porto = events["Alice is moving to Porto instead of Lisbon."]
    assert (lisbon["facet"], lisbon["value"], lisbon["event_time"]) == ("moving_to", "Lisbon", "2024-06-01")
    assert porto["cue"] == "instead"
    # validity: the Lisbon plan is superseded as of the Porto message
    assert (lisbon["validity"], lisbon["valid_until"]) == (0.0, porto["time_anchor"])
    assert porto["validity"] == 1.0

    notes = store.query(
        "SELECT e.description, m.source_ref FROM event_notes en JOIN events e ON e.id = en.event_id "
        "JOIN notes n ON n.id = en.note_id JOIN messages m ON m.id = n.message_id ORDER BY m.seq"
    )
    sold_refs = [r["source_ref"] for r in notes if r["description"] == "Alice sold the flat in Berlin last week."]
    assert sold_refs == ["m2", "m3"]

    edges = store.query("SELECT src, dst, label, family FROM edges WHERE family != 'structural'")
    labels = {e["label"] for e in edges}
    assert {"updates", "causes", "before"} <= labels
    [upd] = [e for e in edges if e["label"] == "updates"]
    assert (upd["src"], upd["dst"], upd["family"]) == (porto["id"], lisbon["id"], "evolution")
    [cause] = [e for e in edges if e["label"] == "causes"]
    assert (cause["src"], cause["dst"]) == (
        events["The rent on Alice's flat went up."]["id"], events["Alice sold the flat in Berlin last week."]["id"]
    )
    member = store.execute("SELECT COUNT(*) FROM edges WHERE label = 'member_of'").fetchone()[0]
    assert member == 6 + 2  # every event in its session, every session in a topic

    # the rule extractor on the same conversation yields the same update through the same linking
    (tmp_path / "rules").mkdir()
    rules_store = _ingest(tmp_path / "rules" / "rules.db", embedder)
    build_graph(rules_store, extractor="rules")
    assert _updates(rules_store) == _updates(store) == {("Alice", "moving_to", "Porto", "Lisbon")}
    rules_store.close()

    # an identical rebuild is served from the cache: no new HTTP request, same graph
    before = {r["id"] for r in store.query("SELECT id FROM events")}
    [again] = build_graph(store, extractor="llm", llm=model, rebuild=True)
    assert len(llm_server.requests) == 2
    assert (again.llm_calls, again.llm_cache_hits) == (2, 2)
    assert {r["id"] for r in store.query("SELECT id FROM events")} == before
    store.close()


def test_build_graph_unusable_reply_uses_rules_for_that_session(
    tmp_path: Path, embedder: Any, llm_server: LLMServer
) -> None:
    store = _ingest(tmp_path / "mixed.db", embedder)
    llm_server.responder = _responder(session_two=invalid_json_reply())
    [res] = build_graph(store, extractor="llm", llm=make_model(llm_server, store))
    assert res.llm_fallbacks == 1
    prov = {r["session_id"]: r["provenance"] for r in store.query(
        "SELECT DISTINCT e.session_id, e.provenance FROM events e JOIN sessions s ON s.id = e.session_id")}
    assert sorted(prov.values()) == ["llm", "rules"]
    # the rules' Porto event still updates the LLM's Lisbon event: both carry the same fields
    assert _updates(store) == {("Alice", "moving_to", "Porto", "Lisbon")}
    rows = store.query("SELECT provenance, validity FROM events WHERE facet = 'moving_to' ORDER BY seq")
    assert [(r["provenance"], r["validity"]) for r in rows] == [("llm", 0.0), ("rules", 1.0)]
    store.close()
