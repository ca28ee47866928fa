"""The LLM answer: one structured call over the hybrid context and the plan (TrajWiki Eq. 12).

Every cited ref must be in the context; an unusable or unsupported reply falls
back to the offline extractive answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tracecli.query.answer import NOT_ENOUGH, Answer
from tracecli.query.shape import PLAN_TEXT, QueryShape

if TYPE_CHECKING:
    from tracecli.providers.llm import ChatModel

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "abstain": {"type": "boolean"},
        "cited_refs": {"type": "array", "items": {"type": "string"}, "maxItems": 12},
    },
    "required": ["answer", "abstain", "cited_refs"],
    "additionalProperties": False,
}


def build_messages(question: str, shape: QueryShape, context: Sequence[Any]) -> list[dict[str, str]]:
    lines = []
    for i, item in enumerate(context, 1):
        lines.append(f"[{i}] ({item.kind}; refs: {', '.join(item.source_refs)}) {item.text}")
    when = f"Answer for the state as of {shape.as_of:%d %B %Y}." if shape.as_of else "Answer for the current state."
    system = (
        "You answer questions about a long conversation using only the numbered evidence. "
        "Items marked [OUTDATED] were superseded: never give them as the current answer. "
        "Items marked [conflict] disagree: say so instead of choosing silently. "
        "Cite the refs (message ids shown after 'refs:') your answer rests on. "
        "If the evidence does not support an answer, set abstain to true."
    )
    user = f"Plan: {PLAN_TEXT[shape.plan]}\n{when}\n\nEvidence:\n" + "\n".join(lines) + f"\n\nQuestion: {question}\nKeep the answer short."
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def answer_with_llm(llm: ChatModel, question: str, shape: QueryShape, context: Sequence[Any], offline: Answer) -> Answer:
    """Ask the model; keep its answer only if every cited ref is in the context."""
    return llm_answer(llm, question, shape, context, offline)[0]


def llm_answer(llm: ChatModel, question: str, shape: QueryShape, context: Sequence[Any],
               offline: Answer) -> tuple[Answer, str | None]:
    """The model's answer and None, or `offline` and why the model's could not be used.

    A provider failure (the endpoint down after its retries, a refused key) is one of those
    reasons, not an error: the question still has its offline answer.
    """
    from tracecli.errors import ProviderError

    allowed = {r for item in context for r in item.source_refs}
    try:
        result = llm.complete(build_messages(question, shape, context), SCHEMA, stage="ask")
    except ProviderError as exc:
        return offline, str(exc)
    reply = result.value if result.ok else None
    if not isinstance(reply, dict):
        return offline, result.error or "the reply was not usable"
    refs = [r for r in reply.get("cited_refs", []) if isinstance(r, str)]
    if reply.get("abstain"):
        return Answer(text=NOT_ENOUGH, abstained=True, method="llm"), None
    if not refs or any(r not in allowed for r in refs) or not str(reply.get("answer", "")).strip():
        return offline, "the reply cited no message of the context"
    return Answer(text=str(reply["answer"]).strip(), abstained=False, event_ids=offline.event_ids, source_refs=refs,
                  method="llm", support="llm", confidence=offline.confidence), None
