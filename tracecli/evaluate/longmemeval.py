"""`tracecli eval longmemeval`: LongMemEval items end to end, reported per question type.

Each item is its own conversation (its haystack sessions, stored under the
question_id). Per item: turn-level evidence recall at the budget (gold = the
haystack turns marked `has_answer`, as `session_id:turn`), session recall
(share of `answer_session_ids` any admitted item cites), the authors' token F1
and the set-based F1 (no BLEU-1: LongMemEval answers are free-form sentences),
and the judge with --judge. Abstention items (question_id ending in `_abs`)
are skipped unless asked for; then they form their own group ("abstention")
and score 1 when the system declines.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracecli.errors import BadInput
from tracecli.evaluate import metrics
from tracecli.evaluate.baselines import BASELINES, depth_for, embed_questions, flat_search
from tracecli.evaluate.judge import STAGE as JUDGE_STAGE, judge_answers
from tracecli.evaluate.pipeline import (
    ask_all,
    check_run_args,
    DEFAULT_BUDGET, ProgressFn, cost_report, ledger_mark, prepare, run_settings,
)
from tracecli.evaluate.results import EvalReport, ItemResult, aggregate
from tracecli.ingest.formats import load_document, parse_file, read_text
from tracecli.store.db import Store

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel

METRICS = ["evidence_recall", "session_recall", "locomo_f1", "set_f1", "judge", "context_words"]
TYPE_ORDER = ["single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
              "knowledge-update", "temporal-reasoning", "abstention"]
ABSTENTION_SUFFIX = "_abs"


@dataclass
class LMEQuestion:
    """One LongMemEval item's question side."""

    id: str
    question_type: str
    question: str
    answer: str
    question_date: str | None
    evidence: list[str]
    answer_sessions: list[str]

    @property
    def abstention(self) -> bool:
        return self.id.endswith(ABSTENTION_SUFFIX)


def load_questions(path: Path) -> list[LMEQuestion]:
    """Every item's question, answer, type and gold evidence, validated."""
    data, _ = load_document(path, read_text(path))
    items = data if isinstance(data, list) else [data]
    out = []
    for n, item in enumerate(items):
        where = f"{path.name}: [{n}]"
        if not isinstance(item, dict) or not isinstance(item.get("question_id"), (str, int)):
            raise BadInput(f"{where} has no 'question_id'")
        if not isinstance(item.get("question"), str) or not item["question"].strip():
            raise BadInput(f"{where} has no 'question' text")
        ids = item.get("haystack_session_ids") or [f"s{i + 1}" for i in range(len(item.get("haystack_sessions") or []))]
        evidence = []
        for sid, turns in zip(ids, item.get("haystack_sessions") or []):
            for j, turn in enumerate(turns if isinstance(turns, list) else []):
                if isinstance(turn, dict) and turn.get("has_answer"):
                    evidence.append(f"{sid}:{j}")
        out.append(LMEQuestion(
            id=str(item["question_id"]), question_type=str(item.get("question_type") or "unknown"),
            question=item["question"].strip(), answer=metrics.answer_text(item.get("answer")),
            question_date=item.get("question_date"), evidence=evidence,
            answer_sessions=[str(s) for s in item.get("answer_session_ids") or []],
        ))
    return out


def _session_of(ref: str) -> str:
    return ref.rsplit(":", 1)[0] if ":" in ref else ref


def run_longmemeval(
    store: Store,
    path: str | Path,
    *,
    budget: int = DEFAULT_BUDGET,
    baselines: bool = False,
    judge: bool = False,
    limit: int | None = None,
    include_abstention: bool = False,
    question_types: Sequence[str] | None = None,
    embedder: Embedder,
    llm: ChatModel | None = None,
    judge_model: ChatModel | None = None,
    db_label: str | None = None,
    progress: ProgressFn | None = None,
) -> EvalReport:
    """Build each selected item's haystack into `store` and score its answer; `limit` caps the items."""
    path = Path(path)
    check_run_args(budget, limit)
    questions = load_questions(path)
    skipped_abs = 0
    if not include_abstention:
        skipped_abs = sum(1 for q in questions if q.abstention)
        questions = [q for q in questions if not q.abstention]
    if question_types:
        wanted = set(question_types)
        questions = [q for q in questions if q.question_type in wanted]
    if limit:
        questions = questions[:limit]
    if not questions:
        raise BadInput(f"{path.name}: no questions left to evaluate")
    wanted_ids = {q.id for q in questions}
    convs = [c for c in parse_file(path, "longmemeval") if c.conversation_id in wanted_ids]

    mark = ledger_mark(store)
    build = prepare(store, [(path, convs)], embedder=embedder, llm=llm, progress=progress)

    def make_item(q: Any, asked: Any, cut: Any) -> tuple[ItemResult, dict[str, float | None]]:
        item = ItemResult(id=q.id, conversation_id=q.id, question=q.question, gold=q.answer,
                          groups={"question_type": "abstention" if q.abstention else q.question_type}, evidence=q.evidence,
                          answer_id=asked.answer_id, latency_ms=round(asked.latency_ms, 2), error=asked.error)
        return item, _scores(q, asked.answer, asked.abstained, cut)

    run = ask_all(store, questions, embedder=embedder, llm=llm, budget=budget, progress=progress,
                  ask_args=lambda q: (q.question, q.id, None), make_item=make_item)
    items, latencies, words, ask_seconds = run.items, run.latencies, run.words, run.seconds

    systems = ["tracecli"]
    extra_times: dict[str, float] = {}
    if baselines:
        t = time.perf_counter()
        vecs = embed_questions(embedder, [q.question for q in questions])
        for name in BASELINES:
            systems.append(name)
            for q, vec, item in zip(questions, vecs, items):
                flat = flat_search(store, name, q.question, vec, [q.id], k=depth_for(budget))
                cut = metrics.cut_at_budget(flat.items, budget)
                item.answers[name] = flat.top1
                item.cited[name] = list(cut.cited)
                item.scores[name] = _scores(q, flat.top1, False, cut)
        extra_times["baselines"] = time.perf_counter() - t

    notes: list[str] = []
    judge_id = None
    if judge:
        t = time.perf_counter()
        from tracecli.scope import scope_of

        run = judge_answers(judge_model, [(q.question, q.answer, it.answers["tracecli"]) for q, it in zip(questions, items)],
                            scope=scope_of(store, build.conversation_ids))
        judge_id = run.model
        for it, v in zip(items, run.verdicts):
            it.scores["tracecli"]["judge"] = v.score
        extra_times[JUDGE_STAGE] = time.perf_counter() - t
        if run.error:
            notes.append(f"judge: {run.error}")
    if skipped_abs:
        notes.append(f"{skipped_abs} abstention item(s) (question_id ending in _abs) skipped; --include-abstention scores them")
    if not build.wiki:
        notes.append("compile-wiki skipped" + (f": {build.wiki_error}" if build.wiki_error else " (wiki stage not available)"))

    summary = aggregate(items, systems, METRICS, ["question_type"], order={"question_type": TYPE_ORDER})
    settings = run_settings(
        benchmark="longmemeval", file=str(path), budget=budget, embedder=embedder, llm=llm,
        judge_model=judge_id if judge else None, db=db_label, baselines=baselines,
        extra={"limit": limit, "include_abstention": include_abstention,
               "question_types": list(question_types) if question_types else None},
    )
    cost = cost_report(build, store, mark, latencies, words, ask_seconds, extra_times)
    return EvalReport("longmemeval", settings, METRICS, systems, summary, cost, notes, items)


def _scores(q: LMEQuestion, answer: str, abstained: bool, cut: metrics.BudgetCut) -> dict[str, float | None]:
    if q.abstention:
        declined = 1.0 if abstained or not answer.strip() else metrics.adversarial_correct(answer)
        f1 = s_f1 = declined
    else:
        f1, s_f1 = metrics.token_f1(answer, q.answer), metrics.set_f1(answer, q.answer)
    sessions = {_session_of(r) for r in cut.cited}
    session_recall = (len(set(q.answer_sessions) & sessions) / len(set(q.answer_sessions))) if q.answer_sessions else None
    return {
        "evidence_recall": metrics.evidence_recall(cut.cited, q.evidence),
        "session_recall": session_recall,
        "locomo_f1": round(f1, 4),
        "set_f1": round(s_f1, 4),
        "judge": None,
        "context_words": float(cut.words),
    }


__all__ = ["ABSTENTION_SUFFIX", "LMEQuestion", "METRICS", "TYPE_ORDER", "load_questions", "run_longmemeval"]
