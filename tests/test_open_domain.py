"""Issue 10: revisions of any fact, each example from the issue in a conversation written for this test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ask_fixtures import module_store

from tracecli.query.ask import Asker

CHAT = Path(__file__).parent / "fixtures" / "open_domain.json"


store = module_store(CHAT, "od")


@pytest.fixture(scope="module")
def asker(store, embedder: Any) -> Asker:
    return Asker(store, embedder=embedder)


def ask(asker: Asker, question: str) -> Any:
    return asker.ask(question, store_answer=False)


def validity(store, quote_part: str, value: str) -> list[float]:
    return [r[0] for r in store.execute("SELECT validity FROM events WHERE quote LIKE ? AND value LIKE ?",
                                        (f"%{quote_part}%", f"%{value}%"))]


def test_quit_x_and_joined_y(asker: Asker) -> None:
    res = ask(asker, "Where does Wren work now?")
    assert res.answer == "Monzo" and "s2-m1" in res.source_refs


def test_sold_the_house_and_renting_now(asker: Asker) -> None:
    res = ask(asker, "Where does Wren live?")
    assert res.answer == "Bath" and res.support == "chain"
    assert ask(asker, "Where did Wren live before Bath?").answer == "Didsbury"


def test_a_pet_that_died_is_no_longer_the_pet(store, asker: Asker) -> None:
    assert validity(store, "Rex is my dog", "Rex") == [0.0]
    assert "Rex" not in ask(asker, "What is Wren's dog called?").answer


def test_quit_the_hospital_starting_as_a_paramedic(asker: Asker) -> None:
    res = ask(asker, "What does Jonas do for work now?")
    assert res.answer == "paramedic"
    assert ask(asker, "What did Jonas do before he became a paramedic?").answer == "nurse"


def test_quitting_the_marathon_ends_its_date_too(store) -> None:
    assert validity(store, "signed up for the Berlin marathon", "September") == [0.0]


def test_a_sentence_initial_common_noun_is_no_employer(store) -> None:
    assert not store.execute("SELECT 1 FROM events WHERE facet = 'employer' AND value = 'Work'").fetchall()


def test_a_car_make_inside_a_place_name_is_no_car(store, asker: Asker) -> None:
    assert not store.execute("SELECT 1 FROM events WHERE facet = 'car'").fetchall()
    res = ask(asker, "What car does Wren drive?")
    assert res.abstained and res.support == "none" and res.confidence == 0.0


def test_a_plainly_stated_odd_fact_is_answerable(asker: Asker) -> None:
    res = ask(asker, "What is Wren's gym locker code?")
    assert res.answer == "Quixotic-7731" and res.source_refs == ["s1-m6"]
    assert res.support in ("frame", "chain") and res.confidence > 0.5


def test_as_of_answers_the_value_then(asker: Asker) -> None:
    res = asker.ask("Where did Wren work?", as_of="2024-02-15", store_answer=False)
    assert res.answer == "Barclays"


def test_edges_say_which_layer_found_them(store) -> None:
    why = [r[0] for r in store.execute("SELECT justification FROM edges WHERE label = 'updates'")]
    assert any("found by construction" in w for w in why)
    assert all("found by" in w for w in why)
