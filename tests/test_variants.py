"""Variants: the same thing of a participant said again with another number or colour is a revision ("the 5am
shift" … "the 9am shift"), read from the parse; a measure, a rank, someone else's thing, a possibility or a
negated clause is none.

Every sentence here was written for these tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ask_fixtures import module_store

from tracecli.graph.link import EventRec
from tracecli.graph.nlp import get_nlp
from tracecli.graph.revise import FrameRec, implicit_edges
from tracecli.graph.variants import read_variants


def _variants(text: str) -> list[tuple[str, str, str, str]]:
    doc = get_nlp()(text)
    return [(v.subject, v.head, v.kind, v.text) for s in doc.sents for v in read_variants(s, "Odile", "Bram",
                                                                                          ["Odile", "Bram"])]


@pytest.mark.parametrize(("text", "want"), [
    ("the 7pm class is a killer", ("Odile", "class", "number", "7pm class")),
    ("I'm a purple belt now", ("Odile", "belt", "colour", "purple belt")),
    ("we've still got three goats", ("Odile", "goat", "number", "three goats")),
    ("I'm on Grade 5 now", ("Odile", "grade", "label", "Grade 5")),
    ("how's your green kayak holding up. mine's fine. your green kayak is ace", ("Bram", "kayak", "colour", "green kayak")),
])
def test_a_number_or_a_colour_marks_a_participants_thing(text: str, want: tuple[str, str, str, str]) -> None:
    assert want in _variants(text)


@pytest.mark.parametrize("text", [
    "I ran 8 miles this morning",  # a measure
    "I'm out in 10 mins",  # a time
    "flat white number three of the day",  # "number N" names nothing by itself
    "my sister has two kids",  # another person's
    "I might get three goats",  # a possibility
    "I don't have two cars",  # negated
    "it was the first time I went",  # a rank, not a value
    "the big kitchen is lovely",  # a size is no mark
    "I bought a wine glass",  # a colour word that names a kind here
])
def test_no_variant(text: str) -> None:
    assert _variants(text) == []


def _frame(eid: str, seq: int, value: str, variant: tuple[str, str, str, bool], subject: str = "Odile") -> FrameRec:
    ev = EventRec(id=eid, session_id="s", seq=seq, sentence_idx=0, time_anchor=f"2024-01-{seq:02d}", subject=subject,
                  speaker=subject, participants=[subject], topic_id=None, value=value, negated=False, quote=value)
    return FrameRec(ev=ev, key=variant[0], vtype="thing", head=variant[0], copular=True, variant=variant)


def test_two_marks_of_the_same_head_and_kind_revise_the_latest() -> None:
    a = _frame("a", 1, "two hives", ("hive", "number", "two", False))
    b = _frame("b", 4, "four hives", ("hive", "number", "four", True))
    c = _frame("c", 9, "three hives", ("hive", "number", "three", True))
    edges = implicit_edges([a, b, c], None)
    assert sorted((e.src, e.dst) for e in edges) == [("b", "a"), ("c", "b")]
    assert all("the same hive, another number" in e.justification for e in edges)


def test_the_same_mark_another_kind_or_another_person_is_no_revision() -> None:
    a = _frame("a", 1, "two hives", ("hive", "number", "two", False))
    again = _frame("b", 4, "two hives", ("hive", "number", "two", False))
    colour = _frame("c", 5, "white hives", ("hive", "colour", "white", True))
    other = _frame("d", 6, "five hives", ("hive", "number", "five", True), subject="Bram")
    assert implicit_edges([a, again, colour, other], None) == []


def test_a_count_said_in_passing_revises_nothing() -> None:
    # "episode 7 is up" … "episode 12 is up": one of a series, said without "the", "my" or "now"
    a = _frame("a", 1, "episode 7", ("episode", "label", "7", False))
    b = _frame("b", 4, "episode 12", ("episode", "label", "12", False))
    assert implicit_edges([a, b], None) == []


CHAT = Path(__file__).parent / "fixtures" / "variants.json"


store = module_store(CHAT, "variants")


def _updates(store: Any) -> set[tuple[str, str]]:
    rows = store.conn.execute(
        "SELECT a.quote, b.quote FROM edges e JOIN events a ON a.id = e.src JOIN events b ON b.id = e.dst "
        "WHERE e.label = 'updates'").fetchall()
    return {(r[0], r[1]) for r in rows}


def test_a_later_shift_and_belt_revise_the_earlier_ones_and_nothing_else(store: Any) -> None:
    edges = _updates(store)
    assert any("9am shift" in new and "5am shift" in old for new, old in edges)
    assert any("orange belt" in new and "yellow belt" in old for new, old in edges)
    # the brother's ferrets are his; "might get two more" is a possibility: neither revises Odile's one ferret
    assert not any("ferret" in new or "ferret" in old for new, old in edges)
    assert len(edges) == 2


def test_the_current_value_answers_and_the_old_one_answers_as_of_its_date(store: Any, embedder: Any) -> None:
    from tracecli.query.ask import Asker

    asker = Asker(store, embedder=embedder)
    now = asker.ask("Which shift is Odile working now?", store_answer=False)
    assert "9am" in now.answer and now.source_refs[0].endswith("s2-m1")
    then = asker.ask("What belt did Odile have in February 2024?", store_answer=False)
    assert "yellow belt" in then.answer and then.source_refs[0].endswith("s1-m3")


@pytest.mark.parametrize(("text", "marked"), [
    ("the 6am shift is much nicer", True),  # the one held
    ("tying my brown belt", True),
    ("so I'm down to three hives", True),  # a change to a value
    ("four hives now", True),  # said as new
    ("episode 12 is up", False),  # one of a series, in passing
    ("200 pages into it", False),
])
def test_a_variant_is_said_as_the_one_held_or_in_passing(text: str, marked: bool) -> None:
    doc = get_nlp()(text)
    [v] = [v for s in doc.sents for v in read_variants(s, "Odile", "Bram", ["Odile", "Bram"])]
    assert v.marked is marked


def test_a_variant_answers_only_a_question_that_asks_for_its_thing(store: Any, embedder: Any) -> None:
    from tracecli.query.ask import Asker

    asker = Asker(store, embedder=embedder)
    assert asker.ask("Which shift is Odile on these days?", store_answer=False).answer == "9am shift"
    # "shift" names what a pattern is of: the question asks for the pattern, which no variant states
    assert asker.ask("What shift pattern does Odile work?", store_answer=False).answer not in ("9am shift", "5am shift")
