"""Claims: exchanges, grounding, third-person rewriting, list splitting, templates, LLM validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_wiki_common import build_sample_db

from tracecli.store import open_store
from tracecli.wiki.claims import (
    ClaimDraft,
    EventRow,
    MessageRow,
    clean_value,
    facet_text,
    grounded,
    hedged,
    readable,
    rewrite_sentence,
    split_exchanges,
    split_items,
)
from tracecli.wiki.llm_claims import check_llm_claims


def _msg(i: int, speaker: str, text: str = "hello there") -> MessageRow:
    return MessageRow(f"m_{i}", "s_1", i, i, speaker, text, "2024-01-01T00:00:00Z", f"r{i}")


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    return build_sample_db(tmp_path_factory, embedder)


# -- exchanges ------------------------------------------------------------------------------


def test_exchanges_pair_a_run_with_its_reply() -> None:
    msgs = [_msg(0, "A"), _msg(1, "A"), _msg(2, "B"), _msg(3, "A"), _msg(4, "B"), _msg(5, "B"), _msg(6, "A")]
    ex = split_exchanges(msgs)
    assert [[m.seq for m in e] for e in ex] == [[0, 1, 2], [3, 4, 5], [6]]


@given(st.lists(st.sampled_from("ABC"), min_size=1, max_size=40), st.integers(min_value=1, max_value=8))
def test_exchanges_partition_the_session_in_order(speakers: list[str], cap: int) -> None:
    msgs = [_msg(i, s) for i, s in enumerate(speakers)]
    ex = split_exchanges(msgs, cap)
    assert [m for e in ex for m in e] == msgs
    assert all(1 <= len(e) <= cap for e in ex)


# -- text -----------------------------------------------------------------------------------


def test_readable_polishes_rewrites() -> None:
    assert readable("so Bob'll set a reminder 😄") == "Bob will set a reminder."
    assert readable("Alice and co.'ve finally got some sun lol") == "Alice and co. have finally got some sun."
    assert readable("Japan got pushed again 😭 Brightwave asked") == "Japan got pushed again. Brightwave asked."
    assert readable("   ") == ""


def test_facet_templates_are_third_person_sentences() -> None:
    assert facet_text("Alice", "moving_to", "Porto", False) == "Alice is moving to Porto."
    assert facet_text("Alice", "sport", "squash", True) == "Alice no longer plays squash."
    assert facet_text("Bob", "pet_name:dog", "Pepper", False) == "Bob has a dog named Pepper."
    assert facet_text("Alice", "study", "data science certificate", False) == "Alice is taking a data science certificate."
    assert facet_text("Alice", "date:trip", "18 October 2024", False) == "Alice's trip is set for 18 October 2024."


def test_unclean_facet_values_fall_back_to_the_sentence() -> None:
    assert clean_value("my home country") is None
    assert clean_value("the self-acceptance and love theme") is None
    assert clean_value("pottery class yesterday") == "pottery class"
    assert split_items("pottery, hiking and painting") == ["pottery", "hiking", "painting"]


def test_hedges_need_confirmation() -> None:
    assert hedged("We'll probably settle in Oslo if the transfer goes through.")
    assert hedged("We'll move if the transfer goes through.")
    assert not hedged("Brightwave asked if I could start on 29 April.")
    assert not hedged("We got the keys to our new place in Porto on Thursday!")


def test_list_sentence_becomes_one_claim_per_item() -> None:
    from tracecli.graph.nlp import get_nlp

    doc = get_nlp()("I love pottery, hiking and painting")
    out = rewrite_sentence(doc[:], "Alice", "Bob")
    assert [t for t, _ in out] == ["Alice loves pottery.", "Alice loves hiking.", "Alice loves painting."]
    doc = get_nlp()("We explored nature, roasted marshmallows around the campfire and even went on a hike.")
    texts = [t for t, _ in rewrite_sentence(doc[:], "Melanie", "Caroline")]
    assert len(texts) == 3 and all(t.startswith("Melanie and co.") for t in texts)
    doc = get_nlp()("I've been looking at rents and crying a little")
    assert len(rewrite_sentence(doc[:], "Alice", "Bob")) == 1


# -- grounding ------------------------------------------------------------------------------


@given(st.text(min_size=0, max_size=80), st.text(min_size=0, max_size=20))
def test_grounded_means_verbatim_in_a_cited_message(text: str, quote: str) -> None:
    msg = _msg(1, "A", text)
    d = ClaimDraft(key="k", text="A says something.", subject="A", source_message_ids=[msg.id], supporting_quote=quote)
    assert grounded(d, {msg.id: msg}) == (len(quote.strip()) >= 2 and quote in text)
    d.source_message_ids = ["m_unknown"]
    assert not grounded(d, {msg.id: msg})


def test_every_sample_claim_has_its_source_quote(sample_db: Path) -> None:
    """Property over the sample conversations: each claim's quote occurs verbatim in one of its source messages."""
    store = open_store(sample_db, create=False)
    try:
        claims = store.query("SELECT id, source_message_ids, supporting_quote, text FROM claims")
        texts = dict(store.execute("SELECT id, text FROM messages").fetchall())
    finally:
        store.close()
    assert len(claims) > 100

    @settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.sampled_from(claims))
    def check(claim: dict[str, Any]) -> None:
        sources = json.loads(claim["source_message_ids"])
        assert sources and claim["supporting_quote"].strip()
        assert any(claim["supporting_quote"] in texts[m] for m in sources), claim

    check()
    for claim in claims:  # and exhaustively, the set is small
        assert any(claim["supporting_quote"] in texts[m] for m in json.loads(claim["source_message_ids"])), claim
        assert claim["text"].endswith(".") and (claim["text"][0].isupper() or claim["text"][0].isdigit())  # a sentence


def test_sample_claims_are_third_person(sample_db: Path) -> None:
    store = open_store(sample_db, create=False)
    try:
        texts = [r[0] for r in store.execute("SELECT text FROM claims")]
    finally:
        store.close()
    first_person = [t for t in texts if any(w in (" I ", " my ", " me ") for w in [f" {t} ".replace(".", " ")])]
    assert not first_person


def test_hobby_list_in_sample_is_split(sample_db: Path) -> None:
    store = open_store(sample_db, create=False)
    try:
        rows = store.query(
            "SELECT text, item, family FROM claims WHERE conversation_id = 'alice-bob-plans' AND facet = 'hobbies' ORDER BY idx"
        )
    finally:
        store.close()
    assert [r["text"] for r in rows[:3]] == ["Alice enjoys pottery.", "Alice enjoys hiking.", "Alice enjoys painting."]
    assert {r["family"] for r in rows} == {"hobbies"}


# -- LLM claims are validated like offline ones ----------------------------------------------


def test_llm_claims_are_checked_against_the_source() -> None:
    ex = [_msg(1, "Alice", "I adopted a kitten called Miso last week!"), _msg(2, "Bob", "No way, photos please")]
    events = {1: [EventRow("ev_1", 1, 0, "Alice", "Alice", "action", None, None, None, False,
                            "I adopted a kitten called Miso last week!", "Alice adopted a kitten", "rules")]}
    reply = {"claims": [
        {"text": "Alice adopted a kitten called Miso.", "subject": "Alice", "source": "M1",
         "supporting_quote": "adopted a kitten called Miso", "status": "active"},
        {"text": "Alice owns a dog.", "subject": "Alice", "source": "M1", "supporting_quote": "I have a dog", "status": "active"},
        {"text": "Bob wants photos.", "subject": "Bob", "source": "M9", "supporting_quote": "photos please", "status": "active"},
    ]}
    drafts, dropped = check_llm_claims(reply, ex, events, ["Alice", "Bob"])
    assert [d.text for d in drafts] == ["Alice adopted a kitten called Miso."]
    assert drafts[0].event_id == "ev_1" and drafts[0].origin == "llm"
    assert dropped == 2
