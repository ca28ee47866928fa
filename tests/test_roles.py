"""Roles and occupations: a job said in passing ("firefighter life", "I'm a dental nurse") answers "What is X's
job?" — the role a person holds, typed by WordNet (`tracecli.graph.lexicon`), not the employer or a relative's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ask_fixtures import built_store

from tracecli.graph.frames import read_frames
from tracecli.graph.lexicon import is_occupation, is_role
from tracecli.graph.nlp import get_nlp
from tracecli.query.ask import Asker
from tracecli.query.frame_answer import asks_role

CHAT = Path(__file__).parent / "fixtures" / "roles.json"


def test_role_nouns_are_the_roles_people_hold():
    for word in ("plumber", "cashier", "surgeon", "firefighter", "librarian", "chef", "air traffic controller", "nurse", "electrician"):
        assert is_role(word), word
    # relations and kinds of person are not roles; nor are things
    for word in ("friend", "mother", "colleague", "kid", "woman", "husband", "table", "tuesday"):
        assert not is_role(word), word


def test_occupation_nouns():
    for word in ("job", "profession", "career", "occupation", "trade"):
        assert is_occupation(word), word
    for word in ("table", "holiday", "nurse", "hobby"):
        assert not is_occupation(word), word


def _roles(text: str, speaker: str = "Ines") -> list[tuple[str, str]]:
    sent = next(get_nlp()(text).sents)
    return [(f.subject, f.value) for f in read_frames(sent, speaker, "Tariq", ["Ines", "Tariq"]) if f.key == "be"]


@pytest.mark.parametrize("text, expected", [
    ("night shift again, firefighter life", ("Ines", "firefighter")),
    ("tree surgeon, not gardener, for the tenth time", ("Ines", "tree surgeon")),
    ("I'm a dental nurse so I'm up at 7 anyway", ("Ines", "dental nurse")),
    ("ugh, estate agent life is a treadmill", ("Ines", "estate agent")),  # a role WordNet knows as a compound
    ("estate agent life is a treadmill", ("Ines", "estate agent")),  # … before its "life", the clause's subject
])
def test_a_role_said_in_passing_is_a_frame(text: str, expected: tuple[str, str]):
    assert expected in _roles(text)


@pytest.mark.parametrize("text", [
    "the plumber came round this morning",   # someone else, named with a determiner
    "tree surgeon, not florist, for the tenth time",  # the negated role is not theirs
    "ugh plumber tomorrow at 9",              # an appointment, not a role
    "my cousin is a plumber",                 # a relative's role
])
def test_roles_that_are_not_the_speakers(text: str):
    assert ("Ines", "florist") not in _roles(text) and ("Ines", "plumber") not in _roles(text)


@pytest.mark.parametrize("text, role", [
    ("twelve years as a locksmith and I still get locked out", "locksmith"),   # "as a X" after a verbless phrase
    ("Christmas Eve as a midwife is a special kind of busy", "midwife"),
    ("as your resident electrician I say no to that socket", "electrician"),   # "as your X": the verb reader's
    ("so many forms today. the life of a social worker", "social worker"),
    ("honestly being a carpenter in winter is brutal", "carpenter"),           # a gerund with no subject of its own
    ("as a postman my step count is silly", "postman"),                        # fronted before its clause
    ("As a plumber I can tell you that's bad", "plumber"),
    ("it's literally my job as a dental nurse", "dental nurse"),                 # after the speaker's occupation noun
    ("I'm 41 and a librarian, so yes", "librarian"),                           # joined to a copular complement
    ("I'm a radiographer tariq, I've seen things", "radiographer"),            # the addressee's name is said to them
])
def test_a_role_held_in_a_construction_with_its_article(text: str, role: str):
    assert any(subject == "Ines" and value.endswith(role) and "tariq" not in value for subject, value in _roles_in(text)), \
        _roles_in(text)


def test_a_role_is_read_whole_and_alone():
    assert ("Ines", "night-shift nurse") in _roles_in("ten years as a night-shift nurse and still tired")
    # what follows the role is not part of it
    assert ("Ines", "sound engineer") in _roles_in("dead til summer, being a sound engineer in april is no fun")


@pytest.mark.parametrize("text, word", [
    ("genius. why didn't I think of that", "genius"),                 # a one-word reply judges the other's idea
    ("legend. send me the photos", "legend"),
    ("surgeon!! when did that happen", "surgeon"),
    ("so adult", "adult"),                                            # a degree makes it a quality
    ("DOCTOR TARIQ", "doctor"),                                       # a title before a name
    ("my gran tells everyone I'm a 'lawyer' now", "lawyer"),          # said at a distance, in quotation marks
    ("if I ever moved to Bergen I'd become a fisherman", "fisherman"),  # an unreal condition
    ("I see him as a mentor really", "mentor"),                       # the object's role, not the speaker's
    ("as a nurse, she knows best", "nurse"),                          # a fronted role of someone else's clause
    ("her job as a nurse is hard", "nurse"),
])
def test_words_for_a_person_that_hold_no_role_of_the_speakers(text: str, word: str):
    assert all(word not in value.lower() for subject, value in _roles_in(text) if subject == "Ines"), _roles_in(text)


def _roles_in(text: str) -> list[tuple[str, str]]:
    """The roles every sentence of a message gives (a message's sentences are read one by one, as build-graph does)."""
    doc = get_nlp()(text)
    return [(f.subject, f.value) for f in read_frames(doc[:], "Ines", "Tariq", ["Ines", "Tariq"])
            if (f.key == "be" or f.key.endswith(" as")) and not f.hedged]


def test_a_role_named_by_work_is_a_trade() -> None:
    from tracecli.graph.lexicon import is_trade

    for word in ("midwife", "pharmacy technician", "plumber", "estate agent", "teacher", "architect"):
        assert is_trade(word), word
    for word in ("zombie", "vegetarian", "genius", "mess", "table"):
        assert not is_trade(word), word


def test_which_questions_ask_for_a_role():
    for q in ("What does Ines do for a living?", "What is Ines's profession?", "What is Ines's job?",
              "What does Ines do for work?", "What kind of work does Ines do?"):
        assert asks_role(q), q
    for q in ("What did Ines work on at her job?", "Where does Ines live?", "What is Ines's dog called?"):
        assert not asks_role(q), q


@pytest.fixture(scope="module")
def asker(tmp_path_factory: pytest.TempPathFactory, embedder: Any):
    s = built_store(tmp_path_factory.mktemp("roles") / "roles.db", CHAT, embedder)
    yield Asker(s, embedder=embedder)
    s.close()


@pytest.mark.parametrize("question, role, ref", [
    ("What is Ines's job?", "firefighter", "s1-m1"),
    ("What does Ines do for work?", "firefighter", "s1-m1"),
    ("What does Tariq do for a living?", "dental nurse", "s1-m6"),
])
def test_a_job_question_answers_the_role_not_the_employer(asker: Asker, question: str, role: str, ref: str):
    # later, Tariq's one-word praise ("hero.") and Ines saying Tariq's role back to him ("dental nurse problems")
    # hold no role of their own
    res = asker.ask(question, store_answer=False)
    assert res.answer == role and any(r.endswith(ref) for r in res.source_refs)
    assert "plumber" not in res.answer  # Tariq's cousin's job


def test_a_number_said_in_passing_is_answerable(asker: Asker):
    # the locker sentence holds no verb frame of the usual kinds; it is still a statement the answer step reads
    res = asker.ask("What is Ines's locker number at the station?", store_answer=False)
    assert "31" in res.answer


TRADE_CHAT = Path(__file__).parent / "fixtures" / "trade.json"


def test_a_job_question_prefers_the_role_named_by_work(tmp_path: Path, embedder: Any) -> None:
    # "I'm a zombie" is said as what Hamish is, like a job; "locksmith life", in a line opening with "can't" (a
    # statement, not a question), names the work: WordNet files a locksmith under worker, a zombie under dead person
    store = built_store(tmp_path / "trade.db", TRADE_CHAT, embedder)
    try:
        asker = Asker(store, embedder=embedder)
        res = asker.ask("What does Hamish do for work?", store_answer=False)
        assert res.answer == "locksmith" and res.source_refs[0].endswith("s1-m3")
    finally:
        store.close()


def test_an_adjective_is_a_quality_not_a_role_held() -> None:
    from tracecli.query.frame_answer import holds_role

    assert not holds_role({"key": "be", "type": "state", "head": "brave"})  # "I'll be brave"
    assert holds_role({"key": "be", "type": "thing", "head": "welder"})
