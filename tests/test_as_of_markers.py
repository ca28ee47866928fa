"""As of a date, what was said after it is `not yet` known, never `[OUTDATED]` (issue 11, item 6)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from ask_fixtures import built_store

from tracecli.query.ask import Asker
from tracecli.query.paths import EventNode

CHAT = Path(__file__).resolve().parent.parent / "sample_conversations" / "update_heavy.json"
AS_OF = "2024-02-15T00:00:00Z"


def _ev(anchor: str, validity: float = 1.0, valid_until: str | None = None) -> EventNode:
    return EventNode(id="e", conversation_id="c", session_id="s", type="plan", subject="A", description="d", quote="q",
                     time_anchor=anchor, event_time=None, event_time_granularity=None, seq=0, sentence_idx=0, facet=None,
                     value=None, negated=False, confidence=0.9, validity=validity, valid_until=valid_until, topic_id=None)


def test_marker_tells_not_yet_from_superseded() -> None:
    assert _ev("2024-07-01T00:00:00Z").marker(AS_OF) == "not yet"
    assert _ev("2024-01-01T00:00:00Z", 0.0, "2024-02-01T00:00:00Z").marker(AS_OF) == "outdated"
    assert _ev("2024-01-01T00:00:00Z", 0.0, "2024-03-01T00:00:00Z").marker(AS_OF) == "valid"
    assert _ev("2024-07-01T00:00:00Z").marker(None) == "valid"


@pytest.fixture(scope="module")
def asker(tmp_path_factory: pytest.TempPathFactory, embedder: Any):
    s = built_store(tmp_path_factory.mktemp("asof") / "a.db", CHAT, embedder)
    yield Asker(s, embedder=embedder)
    s.close()


@pytest.mark.parametrize("question", ["When is the wedding?", "Where is Alice moving?"])
def test_as_of_never_marks_a_later_statement_outdated(asker: Asker, question: str) -> None:
    res = asker.ask(question, as_of=AS_OF, store_answer=False)
    later_steps = [st for p in res.paths for st in p.steps if st.time and st.time > AS_OF]
    assert all(st.validity == "not yet" for st in later_steps)
    for item in res.context:
        dates = re.findall(r"\((\d{4}-\d{2}-\d{2})\) \[OUTDATED", item.text) + re.findall(
            r"^\[OUTDATED\] \[(\d{4}-\d{2}-\d{2})\]", item.text)
        assert all(d <= AS_OF[:10] for d in dates), item.text
    # and the later statements really are in view: the check above is not vacuous
    later = [st for p in res.paths for st in p.steps if st.time and st.time > AS_OF]
    notes_later = [i for i in res.context if i.text.startswith("[NOT YET]")]
    assert later or notes_later
