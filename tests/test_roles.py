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
    res = asker.ask(question, store_answer=False)
    assert res.answer == role and any(r.endswith(ref) for r in res.source_refs)
    assert "plumber" not in res.answer  # Tariq's cousin's job


def test_a_number_said_in_passing_is_answerable(asker: Asker):
    # the locker sentence holds no verb frame of the usual kinds; it is still a statement the answer step reads
    res = asker.ask("What is Ines's locker number at the station?", store_answer=False)
    assert "31" in res.answer
