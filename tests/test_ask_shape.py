"""Query shape (TRACE §II-F): the answer plan, the asked-for type, and time scopes read from the question."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

pytest.register_assert_rewrite("ask_fixtures")

from ask_fixtures import ALICE  # noqa: E402

from tracecli.query.shape import PLAN_TEXT, PLANS, detect_plan, detect_wh, shape_of, time_scope  # noqa: E402

pytest_plugins = ["ask_fixtures"]

UTC = dt.timezone.utc
NOW = dt.datetime(2024, 11, 23, 16, 7, 22, tzinfo=UTC)  # the last message of alice-bob-plans
NAMES = ["Alice", "Bob", "Tom", "Priya", "Maya"]


def eod(y: int, m: int, d: int) -> dt.datetime:
    return dt.datetime(y, m, d, 23, 59, 59, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "plan"),
    [
        ("When did Alice fly to Japan?", "temporal"),
        ("How long has Alice lived in Porto?", "temporal"),
        ("What is Alice's favourite band?", "preference"),
        ("What coffee does Alice usually order?", "preference"),
        ("Does Bob prefer tea?", "preference"),
        ("Why did Maya miss the half marathon?", "multi-hop"),
        ("What led Fernleaf to pivot?", "multi-hop"),
        ("What car did Omar end up buying?", "multi-hop"),
        ("What is Bob's dog called?", "factual"),
        ("Where does Alice live now?", "factual"),
        ("Who is Alice's sister?", "factual"),
    ],
)
def test_plan_from_the_words(question: str, plan: str) -> None:
    assert detect_plan(question) == plan
    assert shape_of(question, NAMES, NOW).plan == plan


def test_every_plan_has_its_instruction() -> None:
    assert set(PLANS) == set(PLAN_TEXT) == {"temporal", "preference", "multi-hop", "factual"}
    assert "timestamp" in PLAN_TEXT["temporal"] and "latest" in PLAN_TEXT["preference"]
    assert "chain" in PLAN_TEXT["multi-hop"] and "directly" in PLAN_TEXT["factual"]


def test_a_time_scope_makes_a_factual_question_temporal() -> None:
    s = shape_of("Where did Alice live as of 2 Feb 2024?", NAMES, NOW)
    assert s.plan == "temporal" and s.as_of == eod(2024, 2, 2)
    s = shape_of("Where did Alice live?", NAMES, NOW, as_of=eod(2024, 2, 2))
    assert s.plan == "temporal" and s.as_of_source == "option"


@pytest.mark.parametrize(
    ("question", "wh"),
    [
        ("Where does Alice live?", "where"),
        ("When is the wedding?", "when"),
        ("Whose cat is Mochi?", "who"),
        ("Which company does Bob work for?", "which"),
        ("What is the cat called?", "what"),
        ("Why did she quit?", "why"),
        ("How did Maya meet Jonas?", "how"),
        ("Is Alice vegan?", "yesno"),
    ],
)
def test_answer_type(question: str, wh: str) -> None:
    assert detect_wh(question) == wh


def test_back_when_does_not_make_a_when_question() -> None:
    assert detect_wh("What was Alice's cat called back when she lived in Leeds?") == "what"
    assert detect_wh("Who was Alice dating back when she lived in Leeds?") == "who"


def test_people_are_found() -> None:
    s = shape_of("Where did Bob and Priya go on holiday?", NAMES, NOW)
    assert sorted(s.people) == ["Bob", "Priya"]
    assert shape_of("What is Alice’s cat called?", NAMES, NOW).people == ["Alice"]
    assert shape_of("What is the weather like?", NAMES, NOW).people == []


@pytest.mark.parametrize(
    ("question", "unknown"),
    [
        ("Where is Zelda going now?", ["Zelda"]),
        ("Zelda, where is she now?", ["Zelda"]),  # a name that opens the question still counts
        ("Where is Alice going now?", []),
        ("What did Alice do at Christmas in March 2024?", []),  # holidays and months are times, not names
        ("Did Alice's sister O'Neil meet Anne-Marie's dog?", ["O'Neil", "Anne-Marie"]),
        ("What did I tell Bob about the UK?", []),
    ],
)
def test_unknown_names_are_read(question: str, unknown: list[str]) -> None:
    assert shape_of(question, NAMES, NOW).unknown == unknown


def test_a_question_about_someone_never_mentioned_is_not_answered_with_someone_else(asker: Any) -> None:
    res = asker.ask("Where is Zelda moving to now?", conversation_id=ALICE, store_answer=False)
    assert res.abstained and res.answer == "not enough evidence" and res.source_refs == []
    assert asker._unmentioned(shape_of("Where is Zelda moving to now?", NAMES, NOW), [ALICE]) == ["Zelda"]
    # the same question about the person the chat is about is answered
    assert not asker.ask("Where is Alice moving to now?", conversation_id=ALICE, store_answer=False).abstained
    # a name the chat mentions only in passing is no reason to abstain
    said = asker.store.execute("SELECT text FROM messages WHERE conversation_id = ? AND text LIKE '%Lisbon%' LIMIT 1",
                               (ALICE,)).fetchone()
    assert said is not None
    assert asker._unmentioned(shape_of("Where is Lisbon?", NAMES, NOW), [ALICE]) == []


@pytest.mark.parametrize(
    ("question", "as_of", "phrase"),
    [
        ("Where did Alice live as of 2 Feb 2024?", eod(2024, 2, 2), "as of 2 Feb 2024"),
        ("Where did Alice live as of 2 February 2024?", eod(2024, 2, 2), "as of 2 February 2024"),
        ("What diet did Alice follow as of 2024-03-01?", eod(2024, 3, 1), "as of 2024-03-01"),
        ("Where did Alice live in March 2024?", eod(2024, 3, 31), "in March 2024"),
        ("What was Alice's cat called in early March 2024?", eod(2024, 3, 10), "in early March 2024"),
        ("Where was Alice living in mid June 2024?", eod(2024, 6, 20), "in mid June 2024"),
        ("Where was Alice living in late June 2024?", eod(2024, 6, 30), "in late June 2024"),
        ("As of May 2023, when was Fernleaf planning to launch?", eod(2023, 5, 31), "As of May 2023"),
        ("What did Alice do in 2023?", eod(2023, 12, 31), "in 2023"),
        ("On 5 May 2024 what was the cat called?", eod(2024, 5, 5), "On 5 May 2024"),
        ("Where was Alice in March?", eod(2024, 3, 31), "in March"),
        ("Where was Alice in August?", eod(2024, 8, 31), "in August"),
    ],
)
def test_time_scope_in_the_question(question: str, as_of: dt.datetime, phrase: str) -> None:
    s = shape_of(question, NAMES, NOW)
    assert (s.as_of, s.as_of_source, s.scope_phrase) == (as_of, "question", phrase)
    assert not s.wants_current
    assert time_scope(question, NOW) == (as_of, phrase)


@pytest.mark.parametrize(
    ("question", "as_of"),
    [
        ("What was Alice's cat called in early March?", eod(2024, 3, 10)),
        ("Where was Alice in December?", eod(2023, 12, 31)),
    ],
)
def test_month_without_year_is_never_after_now(question: str, as_of: dt.datetime) -> None:
    assert time_scope(question, NOW)[0] == as_of


def test_option_wins_over_the_question() -> None:
    s = shape_of("Where did Alice live in March 2024?", NAMES, NOW, as_of=eod(2024, 9, 1))
    assert s.as_of == eod(2024, 9, 1) and s.as_of_source == "option" and s.scope_phrase is None


@pytest.mark.parametrize("question", ["Where does Alice live now?", "What is Alice's cat called?", "What sport does Maya do?"])
def test_no_scope_means_current(question: str) -> None:
    s = shape_of(question, NAMES, NOW)
    assert s.as_of is None and s.wants_current and s.before_event_verb is None and s.back_when is None


def test_event_scopes_are_read_but_resolved_later() -> None:
    s = shape_of("Where did Alice live before she moved?", NAMES, NOW)
    assert (s.before_event_verb, s.as_of, s.wants_current) == ("moved", None, False)
    s = shape_of("What was the cat called back when Alice rebooked the Japan flight for 3 May?", NAMES, NOW)
    assert s.back_when == "Alice rebooked the Japan flight for 3 May" and s.as_of is None and not s.wants_current


# -- event scopes resolved against the graph (Asker) --------------------------------------------------


@pytest.mark.parametrize(
    ("question", "as_of", "answer"),
    [
        # s3-m12 (2024-03-12T19:56:05Z): "... I rebooked the flight for 3 May"; the cat was renamed Mochi on 2024-04-20
        ("What was the cat called back when Alice rebooked the Japan flight for 3 May?", "2024-03-12T19:56:05Z", "Biscuit"),
        # s7-m3 (2024-08-11T11:23:03Z): "We got the keys to our new place in Porto"; Lumen Health came on 2024-09-14
        ("Which company did Alice work for back when she got the keys to the new place in Porto?", "2024-08-11T11:23:03Z", "Brightwave"),
        # the same clauses opening the question
        ("When Alice rebooked the Japan flight for 3 May, what was the cat called?", "2024-03-12T19:56:05Z", "Biscuit"),
        ("Back when she got the keys to the new place in Porto, which company did Alice work for?", "2024-08-11T11:23:03Z", "Brightwave"),
    ],
)
def test_back_when_takes_the_time_of_the_matching_message(asker: Any, question: str, as_of: str, answer: str) -> None:
    res = asker.ask(question, conversation_id=ALICE)
    assert res.as_of == as_of and res.answer == answer
    assert res.plan == "temporal"


def test_before_she_moved_answers_the_old_home(asker: Any) -> None:
    res = asker.ask("Where did Alice live before she moved?", conversation_id=ALICE)
    assert res.answer == "Leeds" and res.as_of is not None


def test_before_she_moved_uses_the_move(asker: Any) -> None:
    res = asker.ask("Where did Alice live before she moved?", conversation_id=ALICE)
    assert res.as_of is not None and "2024-03-12" < res.as_of < "2024-08-11T11:23:03Z"


def test_scope_in_the_question_reaches_the_answer(asker: Any) -> None:
    res = asker.ask("What was Alice's cat called in early March 2024?", conversation_id=ALICE)
    assert (res.answer, res.as_of) == ("Biscuit", "2024-03-10T23:59:59Z")
    res = asker.ask("What was Alice's cat called as of 2 Mar 2024?", conversation_id=ALICE)
    assert (res.answer, res.as_of) == ("Biscuit", "2024-03-02T23:59:59Z")
    res = asker.ask("What was Alice's cat called as of 2 Feb 2024?", conversation_id=ALICE)  # before she got the kitten
    assert res.abstained and res.as_of == "2024-02-02T23:59:59Z"
    res = asker.ask("What is Alice's cat called?", conversation_id=ALICE)
    assert (res.answer, res.as_of) == ("Mochi", None)
