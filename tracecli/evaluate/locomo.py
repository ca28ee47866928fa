"""`tracecli eval locomo`: LoCoMo end to end, with evidence recall, answer F1 / BLEU-1, a judge and flat baselines.

For every selected sample: ingest → build-graph → compile-wiki (when the wiki
stage is importable) → ask each QA item through one `Asker`. Per item:

* evidence recall at the budget — the ranked context items are taken in order
  while their whitespace words fit the budget; the share of the item's gold
  `evidence` dia_ids (parsed with a pattern: "D8:6; D9:17" holds two, "D"
  none) cited by the taken items. Items citing more than 3 messages count for
  none of them.
* `locomo_f1` / `bleu1` — the authors' normalisation and stemming (see
  `metrics`); `set_f1` — the set-based F1 of later memory papers.
* `judge` — the mean of 3 CORRECT/WRONG passes (only with --judge and an LLM).
* `context_words` — words of context the budget admitted.

With baselines, the same questions go through flat dense / BM25 / RRF note
retrieval over the same notes, cut at the same budget; a baseline's answer is
its top-1 note. Category 5 (adversarial) has no gold answer: there F1 and
BLEU-1 are 1 when the system declines, else 0.
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
    ablation_name,
    ablation_runs,
    ask_all,
    check_run_args,
    DEFAULT_BUDGET, ProgressFn, cost_report, ledger_mark, prepare, run_settings,
)
from tracecli.evaluate.results import EvalReport, ItemResult, aggregate
from tracecli.ingest.formats import load_document, parse_file, read_text
from tracecli.query.settings import check_ablations
from tracecli.store.db import Store

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel

DEFAULT_CATEGORIES = (1, 2, 3, 4)
METRICS = ["evidence_recall", "locomo_f1", "set_f1", "bleu1", "judge", "context_words"]


@dataclass
class LocomoQA:
    """One LoCoMo QA item."""

    id: str
    sample_id: str
    index: int
    question: str
    answer: str
    category: int
    evidence: list[str]


def category_name(category: int) -> str:
    """'multi-hop' for 1, … (the number itself when unknown)."""
    return metrics.LOCOMO_CATEGORIES.get(category, str(category))


def load_qa(path: Path) -> dict[str, list[LocomoQA]]:
    """sample_id → its QA items, validated."""
    data, _ = load_document(path, read_text(path))
    samples = data if isinstance(data, list) else [data]
    out: dict[str, list[LocomoQA]] = {}
    for n, sample in enumerate(samples):
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise BadInput(f"{path.name}: [{n}] is not a LoCoMo sample (no 'conversation' object)")
        sid = str(sample.get("sample_id") or f"{path.stem}-{n}")
        qa = sample.get("qa") or []
        if not isinstance(qa, list):
            raise BadInput(f"{path.name}: [{n}].qa is not a list")
        items = []
        for i, raw in enumerate(qa):
            if not isinstance(raw, dict) or not isinstance(raw.get("question"), str):
                raise BadInput(f"{path.name}: [{n}].qa[{i}] has no 'question' text")
            try:
                cat = int(raw.get("category", 0))
            except (TypeError, ValueError):
                raise BadInput(f"{path.name}: [{n}].qa[{i}] has a category that is not a number") from None
            items.append(LocomoQA(
                id=f"{sid}#{i}", sample_id=sid, index=i, question=raw["question"],
                answer=metrics.answer_text(raw.get("answer", raw.get("adversarial_answer", ""))),
                category=cat, evidence=metrics.parse_dia_ids(raw.get("evidence")),
            ))
        out[sid] = items
    return out


def parse_categories(values: Sequence[int] | None) -> tuple[int, ...]:
    """Validated categories (1–5), default 1–4."""
    cats = tuple(dict.fromkeys(values)) if values else DEFAULT_CATEGORIES
    bad = [c for c in cats if c not in metrics.LOCOMO_CATEGORIES]
    if bad:
        raise BadInput(f"--categories: {bad[0]} is not a LoCoMo category; choose from 1 2 3 4 5")
    return cats


def run_locomo(
    store: Store,
    path: str | Path,
    *,
    samples: Sequence[str] | None = None,
    categories: Sequence[int] | None = None,
    budget: int = DEFAULT_BUDGET,
    baselines: bool = False,
    judge: bool = False,
    limit: int | None = None,
    embedder: Embedder,
    llm: ChatModel | None = None,
    judge_model: ChatModel | None = None,
    db_label: str | None = None,
    progress: ProgressFn | None = None,
    ablate: Sequence[str] | None = None,
) -> EvalReport:
    """Run LoCoMo into `store` and score it; `limit` caps the questions per sample."""
    path = Path(path)
    check_run_args(budget, limit)
    ablations = check_ablations(ablate)
    if baselines and "graph" not in ablations:
        ablations.append("graph")  # the fair baseline: tracecli's reader over flat evidence (see evaluate.baselines)
    cats = parse_categories(categories)
    convs = parse_file(path, "locomo")
    qa = load_qa(path)
    known = [c.conversation_id for c in convs]
    chosen = list(dict.fromkeys(samples)) if samples else known
    missing = [s for s in chosen if s not in known]
    if missing:
        raise BadInput(f"{path.name}: no sample '{missing[0]}'; it holds {', '.join(known)}")
    convs = [c for c in convs if c.conversation_id in chosen]
    questions: list[LocomoQA] = []
    for sid in chosen:
        picked = [q for q in qa.get(sid, []) if q.category in cats]
        questions.extend(picked[:limit] if limit else picked)
    if not questions:
        raise BadInput(f"{path.name}: no questions in categories {' '.join(map(str, cats))} of the chosen samples")

    mark = ledger_mark(store)
    build = prepare(store, [(path, convs)], embedder=embedder, llm=llm, progress=progress)

    def make_item(q: LocomoQA, asked: Any, cut: Any) -> tuple[ItemResult, dict[str, float | None]]:
        item = ItemResult(
            id=q.id, conversation_id=q.sample_id, question=q.question, gold=q.answer,
            groups={"category": category_name(q.category)}, evidence=q.evidence, answer_id=asked.answer_id,
            latency_ms=round(asked.latency_ms, 2), error=asked.error,
        )
        return item, _scores(q, asked.answer, asked.abstained, cut)

    run = ask_all(store, questions, embedder=embedder, llm=llm, budget=budget, progress=progress,
                  ask_args=lambda q: (q.question, q.sample_id, None), make_item=make_item)
    items, latencies, words, ask_seconds = run.items, run.latencies, run.words, run.seconds

    extra_times: dict[str, float] = {}
    systems = ["tracecli"]
    if ablations:
        extra_times["ablations"] = ablation_runs(store, questions, items, ablations, embedder=embedder, llm=llm, budget=budget,
                                                 ask_args=lambda q: (q.question, q.sample_id, None), score=lambda q, asked, cut: _scores(q, asked.answer, asked.abstained, cut))
        systems.extend(ablation_name(p) for p in ablations)
    if baselines:
        t = time.perf_counter()
        vecs = embed_questions(embedder, [q.question for q in questions])
        for name in BASELINES:
            systems.append(name)
            for n, (q, vec, item) in enumerate(zip(questions, vecs, items), 1):
                flat = flat_search(store, name, q.question, vec, [q.sample_id], k=depth_for(budget))
                cut = metrics.cut_at_budget(flat.items, budget)
                item.answers[name] = flat.top1
                item.cited[name] = list(cut.cited)
                item.scores[name] = _scores(q, flat.top1, False, cut)
                item.scores[name]["judge"] = None
        extra_times["baselines"] = time.perf_counter() - t

    judge_note = None
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
            judge_note = f"judge: {run.error}"
        elif run.unusable:
            judge_note = f"judge: {run.unusable} of {run.calls} verdicts were unusable and left out"

    summary = aggregate(items, systems, METRICS, ["category"],
                        order={"category": [category_name(c) for c in sorted(metrics.LOCOMO_CATEGORIES)]})
    notes = _notes(build, items, judge_note)
    settings = run_settings(
        benchmark="locomo", file=str(path), budget=budget, embedder=embedder, llm=llm,
        judge_model=judge_id if judge else None, db=db_label, baselines=baselines,
        extra={"ablations": ablations, "samples": chosen, "categories": list(cats), "limit_per_sample": limit, "judge_runs": 3 if judge else None},
    )
    cost = cost_report(build, store, mark, latencies, words, ask_seconds, extra_times)
    return EvalReport("locomo", settings, METRICS, systems, summary, cost, notes, items)


def _scores(q: LocomoQA, answer: str, abstained: bool, cut: metrics.BudgetCut) -> dict[str, float | None]:
    if q.category == 5:
        correct = metrics.adversarial_correct(answer, abstained)
        f1 = set_f1 = bleu = correct
    else:
        f1 = metrics.locomo_f1(answer, q.answer, q.category)
        set_f1 = metrics.set_f1(answer, metrics.locomo_gold(q.answer, q.category))
        bleu = metrics.bleu1(answer, q.answer, q.category)
    return {
        "evidence_recall": metrics.evidence_recall(cut.cited, q.evidence),
        "locomo_f1": round(f1, 4),
        "set_f1": round(set_f1, 4),
        "bleu1": round(bleu, 4),
        "judge": None,
        "context_words": float(cut.words),
    }


def _notes(build: Any, items: Sequence[ItemResult], judge_note: str | None) -> list[str]:
    notes = []
    if not build.wiki:
        notes.append("compile-wiki skipped" + (f": {build.wiki_error}" if build.wiki_error else " (wiki stage not available)"))
    errors = [it for it in items if it.error]
    if errors:
        notes.append(f"{len(errors)} question(s) were refused by ask and score 0 (e.g. {errors[0].id}: {errors[0].error})")
    no_gold = sum(1 for it in items if not it.evidence)
    if no_gold:
        notes.append(f"{no_gold} question(s) have no usable gold evidence and are left out of evidence recall")
    if judge_note:
        notes.append(judge_note)
    return notes



__all__ = ["DEFAULT_CATEGORIES", "LocomoQA", "METRICS", "category_name", "load_qa", "parse_categories", "run_locomo"]
