"""The LLM answer of `ask` (one structured call over the context): kept only when every cited ref is in the context."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

pytest.register_assert_rewrite("ask_fixtures")

from ask_fixtures import ALICE, jsonable  # noqa: E402

from tracecli.providers.llm import LLMResult  # noqa: E402
from tracecli.query.answer import NOT_ENOUGH, Answer  # noqa: E402
from tracecli.query.ask import Asker, ContextItem  # noqa: E402
from tracecli.query.llm_answer import SCHEMA, answer_with_llm, build_messages  # noqa: E402
from tracecli.query.shape import PLAN_TEXT, shape_of  # noqa: E402
from tracecli.query.trace import trace_answer  # noqa: E402

pytest_plugins = ["ask_fixtures"]


class ScriptedModel:
    """A chat model that plays one scripted reply and records what it was sent."""

    id = "scripted"

    def __init__(self, value: Any, ok: bool = True) -> None:
        self.value, self.ok = value, ok
        self.calls: list[tuple[Sequence[dict[str, str]], Any, str]] = []

    @property
    def is_available(self) -> bool:
        return True

    def complete(self, messages: Sequence[dict[str, str]], schema: Any = None, *, stage: str = "misc") -> LLMResult:
        self.calls.append((messages, schema, stage))
        return LLMResult(ok=self.ok, value=self.value if self.ok else None, model=self.id, stage=stage)


CONTEXT = [
    ContextItem("path", "Alice is moving to Oslo (2024-01-08) [OUTDATED until 2024-03-12] —updated by→ Alice is moving to Porto (2024-03-12) [valid]",
                ["s1-m9", "s3-m6"], 1.0),
    ContextItem("note", "[2024-03-12] Alice: Forget Oslo, it's Porto now.", ["s3-m6"], 0.03),
]
OFFLINE = Answer(text="Porto", abstained=False, event_ids=["ev_x"], source_refs=["s3-m6"], method="facet")
SHAPE = shape_of("Where is Alice moving?", ["Alice"], None)


@pytest.mark.parametrize(
    ("reply", "ok", "answer", "refs", "abstained"),
    [
        ({"answer": "Porto (it was Oslo before)", "abstain": False, "cited_refs": ["s3-m6", "s1-m9"]}, True,
         "Porto (it was Oslo before)", ["s3-m6", "s1-m9"], False),
        ({"answer": "Lisbon", "abstain": False, "cited_refs": ["s9-m99"]}, True, "Porto", ["s3-m6"], False),  # ref not in context
        ({"answer": "Porto", "abstain": False, "cited_refs": []}, True, "Porto", ["s3-m6"], False),  # no citation
        ({"answer": "   ", "abstain": False, "cited_refs": ["s3-m6"]}, True, "Porto", ["s3-m6"], False),  # empty answer
        ({"answer": "", "abstain": True, "cited_refs": []}, True, NOT_ENOUGH, [], True),
        (None, False, "Porto", ["s3-m6"], False),  # failed call (malformed JSON, 500, timeout): offline answer
    ],
)
def test_reply_is_kept_only_when_grounded(reply: Any, ok: bool, answer: str, refs: list[str], abstained: bool) -> None:
    model = ScriptedModel(reply, ok)
    got = answer_with_llm(model, "Where is Alice moving?", SHAPE, CONTEXT, OFFLINE)
    assert (got.text, got.source_refs, got.abstained) == (answer, refs, abstained)
    assert len(model.calls) == 1
    _, schema, stage = model.calls[0]
    assert schema == SCHEMA and stage == "ask"


def test_prompt_carries_plan_date_markers_and_refs() -> None:
    import datetime as dt

    shape = shape_of("Where was Alice moving as of 2 Feb 2024?", ["Alice"], None)
    system, user = build_messages("Where was Alice moving as of 2 Feb 2024?", shape, CONTEXT)
    assert system["role"] == "system" and user["role"] == "user"
    assert "[OUTDATED]" in system["content"] and "[conflict]" in system["content"]
    assert PLAN_TEXT["temporal"] in user["content"]
    assert f"as of {dt.date(2024, 2, 2):%d %B %Y}" in user["content"]
    assert "[1] (path; refs: s1-m9, s3-m6) Alice is moving to Oslo" in user["content"]
    assert "[2] (note; refs: s3-m6)" in user["content"]
    assert user["content"].rstrip().endswith("Keep the answer short.")
    _, current = build_messages("Where is Alice moving?", SHAPE, CONTEXT)
    assert "Answer for the current state." in current["content"]


def test_asker_uses_the_model_and_trace_replays_it(ask_store: Any, embedder: Any) -> None:
    model = ScriptedModel({"answer": "Porto, Portugal", "abstain": False, "cited_refs": ["s3-m6"]})
    res = Asker(ask_store, embedder=embedder, llm=model).ask("Where is Alice moving?", conversation_id=ALICE)
    assert res.answer == "Porto, Portugal" and res.source_refs == ["s3-m6"]
    messages, _, _ = model.calls[0]
    assert "Where is Alice moving?" in messages[1]["content"]
    tr = trace_answer(ask_store, res.answer_id)
    assert tr.answer == "Porto, Portugal" and jsonable(tr.context) == jsonable(res.context)
