"""Reading the answer's value again from its sentence (`tracecli.query.span`): widened to its noun phrase, replaced
by the sentence when it cannot answer what is asked, a bare retraction given as the sentence that made it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import pytest

from tracecli.query.answer import Answer, answer_offline
from tracecli.query.paths import EventNode, Graph
from tracecli.query.settings import AskSettings
from tracecli.query.shape import shape_of
from tracecli.query.span import cannot_answer, settle, widened

OFF = AskSettings(span_widen=False, span_doubt=False, span_retraction=False, span_manner=False)


def _ev(eid: str, quote: str, value: str | None, *, negated: bool = False, frame: dict | None = None,
        facet: str | None = None) -> EventNode:
    return EventNode(
        id=eid, conversation_id="c", session_id="s", type="state_change", subject="Ravi", description=quote,
        quote=quote, time_anchor="2024-03-01T10:00:00Z", event_time=None, event_time_granularity=None,
        seq=1, sentence_idx=0, facet=facet, value=value, negated=negated, confidence=0.8, validity=1.0,
        valid_until=None, topic_id=None, frame=frame, source_refs=["m1"],
    )


def _graph(*events: EventNode) -> Graph:
    return Graph({e.id: e for e in events}, defaultdict(list), defaultdict(list), {}, {})


@pytest.mark.parametrize(("sentence", "value", "whole"), [
    ("these days I drive a little Honda Jazz to the depot", "Jazz", "little Honda Jazz"),  # a name cut short
    ("my weekly order is a large mushroom pizza", "pizza", "large mushroom pizza"),  # a modified noun
    ("I moved to Lisbon in May", "Lisbon", "Lisbon"),  # nothing narrows it: as it was
    ("my weekly order is a large mushroom pizza", "risotto", "risotto"),  # not in the sentence: as it was
    # a part of a name the entity reader found whole
    ("the first plumber fell through, so we booked Barlow & Sons for March", "Sons", "Barlow & Sons"),
    ("finally moved everything from Barclays to Monzo", "Monzo", "Monzo"),  # not across a preposition
    ("we renamed her Mochi, Biscuit just never stuck", "Mochi", "Mochi"),  # nor a comma
])
def test_a_value_is_widened_to_the_noun_phrase_it_is_cut_from(sentence, value, whole):
    assert widened(sentence, value) == whole


def test_a_modifier_climbs_to_the_noun_it_modifies():
    assert widened("oat cortado from the kiosk, every single morning", "oat") == "oat cortado"


def test_the_asked_noun_described_is_not_the_answer():
    shape = shape_of("Which font does Ravi swear by?", ["Ravi"], None)
    sentence = "Garamond for everything, it's the only font I use"
    assert cannot_answer(sentence, "only font", "font", shape, None)
    assert not cannot_answer(sentence, "Garamond", "font", shape, None)
    # the asked noun with a noun narrowing it down is a kind of it, and answers
    band = shape_of("Which band does Ravi sing with?", ["Ravi"], None)
    assert not cannot_answer("jazz band practice tonight and I am nervous", "jazz band", "band", band, None)


def test_a_value_that_is_no_thing_is_not_the_answer_unless_a_manner_or_colour_is_asked():
    band = shape_of("Which band does Ravi sing with?", ["Ravi"], None)
    assert cannot_answer("jazz band practice tonight and I am nervous", "nervous", "band", band, None)
    how = shape_of("How does Ravi feel about the gig?", ["Ravi"], None)
    assert not cannot_answer("jazz band practice tonight and I am nervous", "nervous", None, how, None)
    colour = shape_of("What colour is Ravi's bike?", ["Ravi"], None)
    assert not cannot_answer("painted the bike bright orange", "orange", "colour", colour, ("COLOR",))


def test_settle_gives_the_sentence_for_a_value_that_cannot_answer():
    ev = _ev("e", "Garamond for everything, it's the only font I use", "only font")
    question = "Which font does Ravi swear by?"
    shape = shape_of(question, ["Ravi"], None)
    ans = Answer(text="only font", abstained=False, event_ids=["e"], source_refs=["m1"], method="frame", support="frame")
    assert settle(replace(ans), _graph(ev), shape, question, AskSettings(), None, "font").text == ev.quote
    assert settle(replace(ans), _graph(ev), shape, question, OFF, None, "font").text == "only font"


def test_a_retraction_with_nothing_in_its_place_is_answered_by_its_sentence():
    ev = _ev("r", "the dentist moved me from Tuesdays to Fridays", "Tuesdays", negated=True)
    question = "Which day is Ravi's dentist appointment?"
    shape = shape_of(question, ["Ravi"], None)
    ans = Answer(text="Ravi no longer: Tuesdays", abstained=False, event_ids=["r"], source_refs=["m1"],
                 method="frame", support="chain")
    assert settle(replace(ans), _graph(ev), shape, question, AskSettings(), None, "day").text == ev.quote
    assert settle(replace(ans), _graph(ev), shape, question, OFF, None, "day").text == "Ravi no longer: Tuesdays"


def test_a_value_with_its_conflicts_is_left_as_it_is():
    ev = _ev("e", "I drive a little Honda Jazz", "Jazz")
    question = "What car does Ravi drive?"
    text = "Jazz (conflicting: Polo per m9)"
    ans = Answer(text=text, abstained=False, event_ids=["e"], source_refs=["m1"], method="facet", support="frame")
    assert settle(ans, _graph(ev), shape_of(question, ["Ravi"], None), question, AskSettings(), None, "car").text == text


def test_the_answer_step_reads_a_facet_value_in_full():
    # through answer_offline: the facet event's value was cut short at build time
    ev = _ev("e", "these days I drive a little Honda Jazz to the depot", "Jazz", facet="car")
    question = "What car does Ravi drive these days?"
    shape = shape_of(question, ["Ravi"], None)
    on = answer_offline(_graph(ev), shape, [(ev, 0.8)], {"e": 0.8}, 0.9, None, AskSettings(), question)
    off = answer_offline(_graph(ev), shape, [(ev, 0.8)], {"e": 0.8}, 0.9, None, OFF, question)
    assert (on.text, off.text) == ("little Honda Jazz", "Jazz")


def test_a_manner_is_answered_by_the_clause_an_amount_by_the_value():
    ev = _ev("e", "got myself an e-bike, twenty minutes door to door", "door")
    how = "How does Ravi get to the office now?"
    ans = Answer(text="door", abstained=False, event_ids=["e"], source_refs=["m1"], method="frame", support="frame")
    shape = shape_of(how, ["Ravi"], None)
    assert settle(replace(ans), _graph(ev), shape, how, AskSettings(), None, None).text == ev.quote
    assert settle(replace(ans), _graph(ev), shape, how, OFF, None, None).text == "door"
    paid = _ev("p", "the e-bike was £900 in the sale", "£900")
    much = "How much did Ravi pay for the e-bike?"
    amount = Answer(text="£900", abstained=False, event_ids=["p"], source_refs=["m1"], method="frame", support="frame")
    assert settle(amount, _graph(paid), shape_of(much, ["Ravi"], None), much, AskSettings(), None, None).text == "£900"
