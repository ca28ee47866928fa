"""Reading general English rather than listed words: a value of the asked kind (WordNet's hypernyms), a statement
chat follows with a question in lower case, a rota or regimen one is on, and which questions ask for a job.

Every sentence and word pair here was written for these tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ask_fixtures import built_store

from tracecli.graph.extract import MessageIn, RuleExtractor
from tracecli.graph.frames import read_frames
from tracecli.graph.lexicon import is_kind_of
from tracecli.graph.nlp import get_nlp
from tracecli.query.ask import Asker
from tracecli.query.frame_answer import asks_role
from tracecli.text import question_after_statement


@pytest.mark.parametrize(("value", "noun"), [
    ("oboe", "instrument"), ("kayak", "boat"), ("trout", "fish"), ("walnut", "wood"), ("terrier", "dog"),
    ("hatchback", "car"), ("tangerine", "fruit"), ("sherry", "wine"), ("Lisbon", "city"),
    ("the old oboe", "instrument"),  # a phrase by its head
])
def test_a_value_is_a_kind_of_the_asked_noun(value: str, noun: str) -> None:
    assert is_kind_of(value, noun)


@pytest.mark.parametrize(("value", "noun"), [
    ("oboe", "boat"), ("trout", "instrument"),  # another kind of thing
    ("stone", "thing"), ("corner", "part"),  # a noun near WordNet's root names no kind
    ("gloriously", "instrument"), ("", "boat"), ("kayak", "zzzq"),  # nothing WordNet knows as a noun
])
def test_a_value_of_another_kind_or_a_noun_that_names_no_kind(value: str, noun: str) -> None:
    assert not is_kind_of(value, noun)


@pytest.mark.parametrize(("text", "at"), [
    # chat goes on in lower case: a statement, then a question to the listener
    ("we're planning a trip, thinking Lisbon in May. you in?", len("we're planning a trip, thinking Lisbon in May. ")),
    ("sold the van on Friday, finally!! who wants a lift?", len("sold the van on Friday, finally!! ")),
    # the speaker's news and a short question after its last comma, in one sentence
    ("I'm baking scones for the stall, want a couple?", len("I'm baking scones for the stall, ")),
    ("my sister got a new job, did you hear?", len("my sister got a new job, ")),
    # news told with surprise: the whole line states it
    ("the coach moved me from wing to hooker for the cup game??", len("the coach moved me from wing to hooker for the cup game??")),
])
def test_a_question_after_a_statement_is_found(text: str, at: int) -> None:
    assert question_after_statement(text) == at


@pytest.mark.parametrize("text", [
    "did you sell the van? still on the bus?",  # only questions
    "oh no. you ok?",  # too little before the question to state anything
    "how was it. you ok?",  # the line opens by asking
    "we're planning a trip, thinking Lisbon in May.",  # no question
    "so you moved me to the back row??",  # put to the other person
    "a MARATHON??",  # an echo, too short to state anything
])
def test_a_line_that_only_asks_or_states(text: str) -> None:
    assert question_after_statement(text) is None


def test_a_statement_before_a_lower_case_question_is_read() -> None:
    # the splitter keeps "… in May. you in?" as one line (chat's lower case after a full stop); read as a question,
    # the trip said before it was lost
    messages = [MessageIn("m0", "n0", "s1", 0, "Maren", "my sister and I are planning a trip, thinking Lisbon in May. you in?",
                          "2024-05-01T08:00:00Z"),
                MessageIn("m1", "n1", "s1", 1, "Maren", "we're moving the van to Leeds on friday. are you around then?",
                          "2024-05-01T08:01:00Z")]
    events = RuleExtractor(["Maren", "Kofi"]).extract_session(messages)
    # the event is the statement, quoted and described without the question after it
    trip = next(e for e in events if "Lisbon" in e.quote and e.subject == "Maren")
    assert trip.quote == "my sister and I are planning a trip, thinking Lisbon in May." and "in?" not in trip.description
    assert not any(e.subject == "Kofi" for e in events)  # the question to the listener states nothing of his


def _placed(text: str) -> list[tuple[str, str]]:
    doc = get_nlp()(text)
    return [(f.key, f.value) for s in doc.sents for f in read_frames(s, "Maren", "Kofi", ["Maren", "Kofi"])]


def test_on_a_bare_plural_is_the_rota_one_is_on() -> None:
    assert ("be on", "deliveries") in _placed("I'm on deliveries now, so mornings are free again")


def test_a_verbless_clause_places_the_speaker() -> None:
    # chat drops the "I'm": a sentence that is only a placing preposition and its object
    assert ("be at", "Halden Rovers") in _placed("still at Halden Rovers, nine seasons now. knees are shot")
    assert ("be in", "Harbour choir") in _placed("still in the Harbour choir, since march")
    assert not _placed("at work lol")  # a bare noun: an idiom


@pytest.mark.parametrize("text", ["I'm in bits about it", "I'm at work till six", "we're on holiday next week"])
def test_a_bare_noun_after_another_preposition_is_an_idiom(text: str) -> None:
    assert not [kv for kv in _placed(text) if kv[0] in ("be in", "be at", "be on")]


def test_only_the_asked_noun_makes_a_job_question() -> None:
    # "service" is an occupation noun, but the question asks for an amount
    assert not asks_role("How much does Maren charge to service a boiler?")
    assert not asks_role("How many hours a week does Maren work at the depot?")
    assert asks_role("What kind of work does Maren do?") and asks_role("What line of work is Maren in?")


CHAT = Path(__file__).parent / "fixtures" / "kinds.json"


@pytest.fixture(scope="module")
def asker(tmp_path_factory: pytest.TempPathFactory, embedder: Any):
    s = built_store(tmp_path_factory.mktemp("kinds") / "kinds.db", CHAT, embedder)
    yield Asker(s, embedder=embedder)
    s.close()


def test_a_value_of_the_asked_kind_answers(asker: Asker) -> None:
    # "the oboe" holds no word "instrument", and the tagger reads it as an adjective: WordNet knows it as one
    res = asker.ask("Which instrument does Maren bring to rehearsal?", store_answer=False)
    assert res.answer == "oboe" and res.source_refs[0].endswith("s1-m1")


def test_a_plan_said_before_a_question_is_revised_and_placed(asker: Asker) -> None:
    # the plan was said in a line that ends by asking ("… in May. you in?"); "Lisbon fell through … so it's Seville
    # instead" revises it, and "Which city" asks for a place, which the sentence is reduced to
    now = asker.ask("Which city is Maren going to with her sister?", store_answer=False)
    assert now.answer == "Seville" and any(r.endswith("s2-m1") for r in now.source_refs)
    before = asker.ask("Which city was Maren planning to visit before Seville?", store_answer=False)
    assert before.answer == "Lisbon" and any(r.endswith("s1-m3") for r in before.source_refs)

