"""tracecli.graph.extract: how an event's description reads (issue 16, item 11).

Descriptions drop the interjections a chat line opens with, spell out the clitics left after a pronoun
is replaced by a name ("I'll" → "Alice will"), and a sentence about the person spoken to is that person's
event, not the speaker's.
"""

from __future__ import annotations

import pytest

from tracecli.graph.extract import MessageIn, RuleExtractor, third_person_text


@pytest.mark.parametrize(("text", "speaker", "other", "want"), [
    ("Ok I need to sleep, 8am call tomorrow.", "Alice", "Bob", "Alice needs to sleep, 8am call tomorrow."),
    ("Haha, I know.", "Omar", "Lena", "Omar knows."),
    ("Oh and we've set a wedding date!", "Alice", "Bob", "Alice and co. have set a wedding date!"),
    ("I'll make you something vegan and you can pretend to like it", "Alice", "Bob",
     "Alice will make Bob something vegan and Bob can pretend to like it"),
    ("You'll need a new suit", "Alice", "Bob", "Bob will need a new suit"),
    ("And they're honouring the leave I'd booked", "Alice", "Bob", "And they're honouring the leave Alice had booked"),
    ("I'd like a coffee", "Alice", "Bob", "Alice would like a coffee"),
    ("So we're probably moving up there in the autumn.", "Bob", "Alice",
     "So Bob and co. are probably moving up there in the autumn."),
    ("I'm a creature of habit", "Bob", "Alice", "Bob is a creature of habit"),
    ("I've got squash tonight", "Alice", "Bob", "Alice has got squash tonight"),
    ("Wow you're fast", "Bob", "Alice", "Alice is fast"),
])
def test_descriptions_read_as_sentences(text: str, speaker: str, other: str, want: str) -> None:
    assert third_person_text(text, speaker, other) == want


def test_a_line_that_is_only_an_interjection_is_kept() -> None:
    assert third_person_text("Haha!", "Bob", "Alice") == "Haha!"


def _events(lines: list[tuple[str, str]]) -> list:
    messages = [MessageIn(f"m{i}", f"n{i}", "s1", i, speaker, text, f"2024-05-01T08:{i:02d}:00Z")
                for i, (speaker, text) in enumerate(lines)]
    return RuleExtractor(["Alice", "Bob"]).extract_session(messages)


def test_a_question_left_unsplit_does_not_hand_the_statement_after_it_to_the_listener() -> None:
    # chat drops the capital after "?", so the parser reads the question and the statement as one sentence
    events = _events([("Bob", "could you feed the cat friday? the Vauxhall Corsa is in for its service")])
    car = next(e for e in events if e.facet == "car")
    assert (car.subject, car.value) == ("Bob", "Vauxhall Corsa")


def test_you_outside_the_main_clause_does_not_make_the_sentence_the_listeners() -> None:
    # "you" inside a team name, the main clause about the team: the speaker's own facts
    events = _events([("Bob", "five-a-side update, Kick It Like You Mean It is sitting 2nd in the work league")])
    assert events and {e.subject for e in events if e.facet} == {"Bob"}


def test_a_sentence_about_the_listener_is_the_listeners_event() -> None:
    events = _events([("Alice", "We might move to Porto next year."),
                      ("Bob", "Funny you should mention moving."),
                      ("Alice", "I'll make you something vegan and you can pretend to like it")])
    funny = next(e for e in events if "mention moving" in e.description)
    assert funny.subject == "Alice", "Bob said it, but it is about Alice"
    vegan = next(e for e in events if "vegan" in e.description)
    assert vegan.subject == "Alice" and "'ll" not in vegan.description
    for e in events:
        assert not e.description.lower().startswith(("ok ", "oh ", "haha")), e.description


def test_a_name_is_read_without_the_clitic_after_it() -> None:
    # "Meera's" is "Meera has": the partner is Meera
    events = _events([("Bob", "my wife Meera's taken up sea swimming, she goes every morning")])
    partner = next(e for e in events if e.facet == "partner")
    assert (partner.subject, partner.value) == ("Bob", "Meera")
