"""LLM judges for `tracecli eval`, through `tracecli.providers.llm` (cached, ledgered, validated).

* `judge_answers` — a binary CORRECT / WRONG verdict per answer in the style of
  the Mem0 LoCoMo protocol: generous about wording, strict about the fact;
  temperature 0, JSON output, `runs` independent passes averaged.
* `judge_states` — for update-heavy sets: is the answer the CURRENT value, an
  OUTDATED (superseded) one, or WRONG; `runs` passes averaged into valid and
  leakage rates.

Each pass names its number in the prompt, so the reply cache keeps passes
apart while a re-run of the same eval pays nothing. When the endpoint fails,
the judge reports the error and the eval goes on without judge scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.errors import ProviderError
from tracecli.providers.llm import ChatModel, LLMRequest
from tracecli.scope import Scope, llm_scope

STAGE = "eval-judge"
DEFAULT_RUNS = 3

JUDGE_SCHEMA: dict[str, Any] = {
    "title": "answer_verdict",
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "maxLength": 600},
        "label": {"type": "string", "enum": ["CORRECT", "WRONG"]},
    },
    "required": ["reasoning", "label"],
    "additionalProperties": False,
}

STATE_SCHEMA: dict[str, Any] = {
    "title": "state_verdict",
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "maxLength": 600},
        "label": {"type": "string", "enum": ["CURRENT", "OUTDATED", "WRONG"]},
    },
    "required": ["reasoning", "label"],
    "additionalProperties": False,
}

_JUDGE_SYSTEM = """\
You grade the answers of a long-term conversational memory system.
You get a question, the gold answer and the system's answer. Label the system's
answer CORRECT when it states the same fact as the gold answer: wording, length,
extra harmless detail and format do not matter (\"7 May 2023\" and \"May 7th\"
are the same date; a relative date is fine when it points at the gold date).
Label it WRONG when it names a different thing, person, place, time or number,
misses the point of the gold answer, or says it does not know.
Reply with a JSON object: {"reasoning": one short sentence, "label": "CORRECT" or "WRONG"}."""

_STATE_SYSTEM = """\
You grade answers about facts that changed during a conversation.
You get a question, the value that is valid now, the value(s) that were valid
earlier but have been superseded, and the system's answer.
Label CURRENT when the answer gives the valid value (other wording is fine);
OUTDATED when it gives a superseded value as the answer instead of the valid one;
WRONG otherwise (another value, or no answer).
Reply with a JSON object: {"reasoning": one short sentence, "label": "CURRENT", "OUTDATED" or "WRONG"}."""


@dataclass
class Verdicts:
    """Averaged verdicts for one answer; `score` is None when no pass produced a usable verdict."""

    labels: list[str] = field(default_factory=list)
    score: float | None = None
    leak: float | None = None  # state judge only: share of OUTDATED verdicts


@dataclass
class JudgeRun:
    """What a judge produced for a list of answers."""

    model: str
    runs: int
    verdicts: list[Verdicts]
    calls: int = 0
    unusable: int = 0
    error: str | None = None


def judge_messages(question: str, gold: str, answer: str, run: int, runs: int) -> list[dict[str, str]]:
    """The prompt of one grading pass."""
    user = (f"Question: {question}\nGold answer: {gold}\nSystem answer: {answer or '(no answer)'}\n\n"
            f"Grading pass {run} of {runs}.")
    return [{"role": "system", "content": _JUDGE_SYSTEM}, {"role": "user", "content": user}]


def state_messages(question: str, current: str, outdated: Sequence[str], answer: str, run: int,
                   runs: int) -> list[dict[str, str]]:
    """The prompt of one pass of the state judge."""
    old = "; ".join(outdated) if outdated else "(none)"
    user = (f"Question: {question}\nValid now: {current}\nSuperseded earlier: {old}\n"
            f"System answer: {answer or '(no answer)'}\n\nGrading pass {run} of {runs}.")
    return [{"role": "system", "content": _STATE_SYSTEM}, {"role": "user", "content": user}]


def _run(model: ChatModel | None, prompts: list[list[list[dict[str, str]]]], schema: dict[str, Any], runs: int,
         scope: Scope | None = None) -> JudgeRun:
    """Send every pass of every item (cached under `scope`: the answers come from its conversations); average labels."""
    out = JudgeRun(model=getattr(model, "id", "?"), runs=runs, verdicts=[Verdicts() for _ in prompts])
    if model is None or not getattr(model, "is_available", False):
        out.error = "no LLM configured: set TRACECLI_LLM_URL and TRACECLI_LLM_MODEL to use --judge"
        return out
    requests = [LLMRequest(msgs, schema, STAGE) for item in prompts for msgs in item]
    try:
        with llm_scope(model, scope):
            results = model.complete_many(requests, stage=STAGE)
    except ProviderError as exc:
        out.error = str(exc)
        return out
    out.calls = len(results)
    pos = 0
    for i, item in enumerate(prompts):
        for _ in item:
            res = results[pos] if pos < len(results) else None
            pos += 1
            label = res.value.get("label") if res is not None and res.ok and isinstance(res.value, dict) else None
            if label is None:
                out.unusable += 1
                continue
            out.verdicts[i].labels.append(str(label))
    return out


def judge_answers(model: ChatModel | None, items: Sequence[tuple[str, str, str]], runs: int = DEFAULT_RUNS,
                  scope: Scope | None = None) -> JudgeRun:
    """CORRECT/WRONG for each (question, gold, answer), `runs` passes averaged (1.0 = always CORRECT)."""
    prompts = [[judge_messages(q, g, a, r, runs) for r in range(1, runs + 1)] for q, g, a in items]
    out = _run(model, prompts, JUDGE_SCHEMA, runs, scope)
    for v in out.verdicts:
        if v.labels:
            v.score = sum(1.0 for lab in v.labels if lab == "CORRECT") / len(v.labels)
    return out


def judge_states(model: ChatModel | None, items: Sequence[tuple[str, str, Sequence[str], str]], runs: int = DEFAULT_RUNS,
                 scope: Scope | None = None) -> JudgeRun:
    """CURRENT/OUTDATED/WRONG for each (question, current, superseded, answer); score = valid rate, leak = outdated rate."""
    prompts = [[state_messages(q, c, o, a, r, runs) for r in range(1, runs + 1)] for q, c, o, a in items]
    out = _run(model, prompts, STATE_SCHEMA, runs, scope)
    for v in out.verdicts:
        if v.labels:
            v.score = sum(1.0 for lab in v.labels if lab == "CURRENT") / len(v.labels)
            v.leak = sum(1.0 for lab in v.labels if lab == "OUTDATED") / len(v.labels)
    return out


__all__ = ["DEFAULT_RUNS", "JUDGE_SCHEMA", "JudgeRun", "STAGE", "STATE_SCHEMA", "Verdicts", "judge_answers",
           "judge_messages", "judge_states", "state_messages"]
