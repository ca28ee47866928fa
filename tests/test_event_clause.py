"""An event clause scopes a question to a time and is not itself the answer: "When Ivo's brother passed his driving
test, which part was Ivo singing?" reads the part as it stood when the message about the test was said, and that
message (which mentions choir too) is where the time comes from, not what is cited (`shape._OPENING_WHEN`,
`Asker._resolve_event_scopes`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ask_fixtures import build_chat_db

from tracecli.query.ask import Asker
from tracecli.query.shape import habitual, shape_of
from tracecli.store import open_store

CHAT = Path(__file__).parent / "fixtures" / "event_clause.json"
CONV = "ivo-noor-choir"
ANCHOR = "s2-m1"  # the brother's driving test (s2-m0, Noor asking about it, states nothing and is no anchor)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    return build_chat_db(tmp_path_factory.mktemp("clause") / "c.db", [CHAT], embedder)


def _ask(db: Path, embedder: Any, question: str, as_of: str | None = None) -> Any:
    with open_store(db) as s:
        return Asker(s, embedder=embedder).ask(question, conversation_id=CONV, as_of=as_of, store_answer=False)


@pytest.mark.parametrize("question", [
    "When Ivo's brother passed his driving test, which part was Ivo singing?",
    "Which part was Ivo singing when his brother passed his driving test?",
    "Around the time Ivo's brother passed his driving test, what part did Ivo sing in the choir?",
])
def test_the_clause_sets_the_time_and_its_message_is_not_the_answer(db: Path, embedder: Any, question: str) -> None:
    res = _ask(db, embedder, question)
    assert res.as_of is not None and res.as_of.startswith("2024-03-14")
    assert "baritone" not in res.answer.lower()
    assert "s1-m2" in res.source_refs and ANCHOR not in res.source_refs  # "I sing tenor in the community choir"


def test_with_a_date_given_the_clause_still_names_no_answer(db: Path, embedder: Any) -> None:
    res = _ask(db, embedder, "When Ivo's brother passed his driving test, which part was Ivo singing?",
               as_of="2024-03-15")
    assert "tenor" in res.answer.lower() and "s1-m2" in res.source_refs and ANCHOR not in res.source_refs


def test_without_a_clause_the_current_part_is_answered(db: Path, embedder: Any) -> None:
    res = _ask(db, embedder, "Which part does Ivo sing in the choir now?")
    assert "baritone" in res.answer.lower()


@pytest.mark.parametrize("question", [
    "Which part does Ivo sing when the choir performs?",
    "When the choir performs, which part does Ivo sing?",
])
def test_a_habitual_clause_scopes_nothing(db: Path, embedder: Any, question: str) -> None:
    # a clause in the simple present tells a habit, not a moment: the part is asked as it stands now
    shape = shape_of(question, ["Ivo", "Noor"], None)
    assert shape.event_clause is None and shape.back_when is None and shape.wants_current
    res = _ask(db, embedder, question)
    assert res.as_of is None and "baritone" in res.answer.lower() and "s3-m1" in res.source_refs


def test_a_past_clause_is_not_habitual() -> None:
    for clause in ("his brother passed his driving test", "the choir was learning the Requiem", "she had moved"):
        assert not habitual(clause)
    for clause in ("his brother drives him to rehearsals", "she is at work", "they visit their gran"):
        assert habitual(clause)


@pytest.mark.parametrize("question", ["Which part does Ivo sing?", "Which part does Ivo sing in the choir?"])
def test_a_sentence_that_also_states_a_revised_fact_gives_way_to_its_newer_version(db: Path, embedder: Any,
                                                                                   question: str) -> None:
    # "I sing tenor in the community choir now, we're learning a Fauré piece" holds three facts; the part was
    # revised ("moved me from tenor to baritone") while the choir and the piece were not: asked the part now, the
    # sentence's still-valid facts must not carry the old part into the answer
    res = _ask(db, embedder, question)
    assert "baritone" in res.answer.lower() and "tenor in the" not in res.answer.lower()
    assert res.source_refs[0] == "s3-m1"
