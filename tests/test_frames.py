"""Open statement frames and revision constructions read from spaCy's parse (no facet list involved)."""

from __future__ import annotations

import pytest

from tracecli.graph.constructions import find_constructions
from tracecli.graph.frames import read_frames


@pytest.fixture(scope="module")
def nlp():
    from tracecli.graph.nlp import get_nlp

    return get_nlp()


def frames(nlp, text: str, speaker: str = "Wren"):
    return read_frames(nlp(text)[:], speaker, "Jonas", ["Wren", "Jonas"])


def cons(nlp, text: str):
    doc = nlp(text)
    return [(c.name, doc[c.old].text if c.old is not None else None, doc[c.new].text if c.new is not None else None)
            for c in find_constructions(doc[:])]


def test_a_plainly_stated_odd_fact_is_a_frame(nlp) -> None:
    [f] = frames(nlp, "My locker code at the gym is Quixotic-7731")
    assert (f.subject, f.value, f.vtype, f.copular) == ("Wren", "Quixotic-7731", "code", True)
    assert "locker code" in f.key


def test_pronouns_resolve_to_participants_and_third_parties_state_nothing(nlp) -> None:
    [f] = frames(nlp, "I'm starting as a paramedic.", speaker="Jonas")
    assert (f.subject, f.key, f.value) == ("Jonas", "start as", "paramedic")
    [g] = frames(nlp, "You live in Leeds.")
    assert g.subject == "Jonas" and g.key == "live in"
    assert frames(nlp, "My sister moved to Leeds") == []  # the sister's fact, not Wren's


def test_questions_and_possibilities_are_not_statements(nlp) -> None:
    assert frames(nlp, "Do you still live in Leeds?") == []
    [f] = [f for f in frames(nlp, "I might move to Lisbon next year") if f.value == "Lisbon"]
    assert f.hedged


def test_novelty_and_negation(nlp) -> None:
    [f] = frames(nlp, "Pip is my new dog.")
    assert (f.key, f.value, f.novelty) == ("dog", "Pip", True)
    [g] = [g for g in frames(nlp, "I don't drink coffee") if g.value == "coffee"]
    assert g.negated


@pytest.mark.parametrize("text, expected", [
    ("I quit Barclays and joined Monzo last week.", ("retract", "Barclays", None)),
    ("so I had to quit the marathon", ("retract", "marathon", None)),
    ("Sadly Rex died in February.", ("ended", "Rex", None)),
    ("Japan's off, every penny goes to the deposit now", ("ended", "Japan", None)),
    ("Forget Oslo, it's Porto now.", ("dismiss", "Oslo", None)),
    ("I switched from the 7:40 train to cycling.", ("from_to", "train", "cycling")),
    ("I drink tea instead of coffee now", ("instead_of", "coffee", "tea")),
    ("I replaced my old Fiat with a Tesla.", ("exchange", "Fiat", "Tesla")),
    ("finally ditched Three for giffgaff.", ("retract", "Three", "giffgaff")),
    ("The wedding was cancelled.", ("retract", "wedding", None)),
    ("I moved out of the flat on Elm Street", ("retract", "flat", None)),
])
def test_constructions(nlp, text: str, expected: tuple) -> None:
    assert expected in cons(nlp, text)


@pytest.mark.parametrize("text", ["I gave her a book", "I sold my bike for £200 to a neighbour"])
def test_no_substitution_where_there_is_none(nlp, text: str) -> None:
    assert all(new is None for _, _, new in cons(nlp, text))


@pytest.mark.parametrize("text, value, foreign", [
    ("Lisbon, ugh.", "Lisbon", False),  # no verb above the value: must terminate and keep it
    ("I moved to Lisbon", "Lisbon", False),
    ("my sister just moved to Lisbon btw.", "Lisbon", True),
    ("Clifton rent went stupid", "Clifton", True),
    ("if I ever moved abroad again it would be Lisbon", "Lisbon", True),
])
def test_facet_values_in_someone_elses_clause(nlp, text: str, value: str, foreign: bool) -> None:
    from tracecli.graph.frames import foreign_clause

    assert foreign_clause(nlp(text)[:], value, "Wren", "Jonas", ["Wren", "Jonas"]) is foreign


def test_dropped_subject_and_particles_read_as_prepositions(nlp) -> None:
    got = {(f.key, f.value) for f in frames(nlp, "sold the PS4 and got a Steam Deck.")}
    assert ("get", "Steam Deck") in got and all(f.subject == "Wren" for f in frames(nlp, "got a one-bed in Digbeth"))
    assert ("move out of", "Moseley flatshare") in {(f.key, f.value) for f in frames(nlp, "big news, I've moved out of the Moseley flatshare!")}
    assert frames(nlp, "Forget Oslo") == []  # an imperative states nothing


def test_naming_and_definite_codes(nlp) -> None:
    assert [(f.key, f.value) for f in frames(nlp, "the octopus I'm studying is called Brenda")] == [("octopus", "Brenda")]
    assert [(f.key, f.value) for f in frames(nlp, "the door code is 7391")] == [("door code", "7391")]
    assert frames(nlp, "I'll keep saving lol") == []  # a chat interjection is no value


def test_a_person_placed_by_a_preposition_is_a_frame(nlp) -> None:
    [f] = frames(nlp, "I'm on the night team now.")
    assert (f.subject, f.key, f.value, f.copular) == ("Wren", "be on", "night team", True)
    [g] = frames(nlp, "We're in Dundee these days.")
    assert (g.key, g.value, g.vtype) == ("be in", "Dundee", "place")
    # an attribute that reads as nothing ("lots") does not hide the placement beside it
    [h] = frames(nlp, "I'm on the claims desk for now, lots of phone calls.")
    assert (h.key, h.value) == ("be on", "claims desk")


def test_a_bare_noun_after_be_is_a_state_not_a_value(nlp) -> None:
    assert frames(nlp, "I'm in trouble with it") == []
    assert frames(nlp, "I was at work for ages") == []
