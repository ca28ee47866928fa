"""`tracecli eval updates`: does the answer give the current value, or leak a superseded one?

Three inputs, one scoring:

* LoCoMo format whose QA items add `outdated_answer` (text or list) and/or a
  `superseded` list, and optionally `as_of` (e.g. benchmarks/data/updates_locomo.json).
* TRACE's stress format: items with `current_valid_answer` / `outdated_answer`
  and the LoCoMo sample they come from (`sample_id`, or an index in
  `sample_idx` / `sample_index` / `sample`); the conversations come from
  `conversations` (a LoCoMo file). Items may also sit inside LoCoMo samples.
* tracecli's own gold: native conversations (a file or a directory) plus a
  questions JSON (a file, or a directory of `*.questions.json`) with
  `question`, `kind` (current | as_of | stable | …), `answer`, `superseded`,
  `as_of`, and optionally `conversation_id`; questions without one belong to
  the conversation file with the same stem.

Per item: `valid` = the answer contains the current value; `leakage` = it
contains a superseded value without the current one; `net` = valid − leakage.
With a judge (--judge, or the stress format whenever an LLM is configured)
an LLM decides CURRENT / OUTDATED / WRONG instead of string containment.
Items are grouped by `kind`, `revision`, `category`, `type` and `difficulty`
where present. The flat baseline answers with the top-1 note of dense
retrieval — the stale-fact failure the graph exists to fix.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracecli.errors import BadInput
from tracecli.evaluate import metrics
from tracecli.evaluate.baselines import embed_questions, flat_search
from tracecli.evaluate.judge import STAGE as JUDGE_STAGE, judge_states
from tracecli.evaluate.pipeline import (
    ablation_name,
    ablation_runs,
    ask_all,
    check_run_args,
    DEFAULT_BUDGET, ProgressFn, cost_report, ledger_mark, prepare, run_settings,
)
from tracecli.evaluate.results import EvalReport, ItemResult, aggregate
from tracecli.ingest.formats import load_document, parse_file, read_text
from tracecli.ingest.model import ParsedConversation
from tracecli.query.settings import check_ablations
from tracecli.store.db import Store
from tracecli.timeutil import iso, parse_user_date

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel

METRICS = ["valid", "leakage", "net"]
GROUP_FIELDS = ("kind", "revision", "category", "type", "difficulty")
KIND_ORDER = ["current", "as_of", "stable"]
BASELINE = "dense_top1"


@dataclass
class StateQA:
    """One question about a fact that may have changed."""

    id: str
    conversation_id: str
    question: str
    current: str
    superseded: list[str]
    as_of: str | None = None
    groups: dict[str, str] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)


@dataclass
class UpdatesInput:
    """Conversations to build and questions to ask, with the format they came in."""

    source_format: str  # locomo | stress | native
    parsed: list[tuple[Path, list[ParsedConversation]]]
    questions: list[StateQA]


# -- loading --------------------------------------------------------------------------------


def _texts(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [metrics.answer_text(v) for v in value if metrics.answer_text(v).strip()]
    text = metrics.answer_text(value)
    return [text] if text.strip() else []


def _load_json(path: Path) -> Any:
    data, _ = load_document(path, read_text(path))
    return data


def _state_qa(raw: Any, qid: str, cid: str, where: str) -> StateQA:
    if not isinstance(raw, dict) or not isinstance(raw.get("question"), str) or not raw["question"].strip():
        raise BadInput(f"{where} has no 'question' text")
    current_raw = raw.get("current_valid_answer", raw.get("answer"))
    current = metrics.answer_text(current_raw).strip()
    if not current:
        raise BadInput(f"{where} has no 'answer' (or 'current_valid_answer')")
    superseded = list(dict.fromkeys(_texts(raw.get("superseded")) + _texts(raw.get("outdated_answer"))))
    as_of = raw.get("as_of")
    if as_of is not None and not isinstance(as_of, str):
        raise BadInput(f"{where} 'as_of' must be a date text")
    groups = {f: str(raw[f]) for f in GROUP_FIELDS if raw.get(f) not in (None, "")}
    if "category" in groups and groups["category"].isdigit():
        groups["category"] = metrics.LOCOMO_CATEGORIES.get(int(groups["category"]), groups["category"])
    if "kind" not in groups:
        groups["kind"] = "as_of" if as_of else ("current" if superseded else "stable")
    evidence = metrics.parse_dia_ids(raw.get("evidence")) or [str(e) for e in raw.get("evidence") or [] if e]
    return StateQA(qid, cid, raw["question"].strip(), current, superseded, as_of or None,
                   groups, evidence)


def _is_locomo(data: Any) -> bool:
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(isinstance(s, dict) and isinstance(s.get("conversation"), dict) for s in items)


def _is_stress(data: Any) -> bool:
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(isinstance(s, dict) and "current_valid_answer" in s for s in items)


def load_locomo_updates(path: Path) -> UpdatesInput:
    """A LoCoMo file whose QA items carry outdated answers."""
    data = _load_json(path)
    convs = parse_file(path, "locomo")
    samples = data if isinstance(data, list) else [data]
    questions = []
    for n, (sample, conv) in enumerate(zip(samples, convs)):
        for i, raw in enumerate(sample.get("qa") or []):
            if isinstance(raw, dict) and raw.get("category") == 5 and "answer" not in raw:
                continue  # adversarial items have no current value
            qid = f"{conv.conversation_id}#{raw.get('id', i) if isinstance(raw, dict) else i}"
            questions.append(_state_qa(raw, qid, conv.conversation_id,
                                       f"{path.name}: [{n}].qa[{i}]"))
    return UpdatesInput("locomo", [(path, convs)], questions)


def load_stress(path: Path, conversations: Path | None) -> UpdatesInput:
    """TRACE's stress items, with their conversations from a LoCoMo file."""
    if conversations is None:
        raise BadInput(f"{path.name}: stress-test items need their LoCoMo conversations; pass --conversations LOCOMO_FILE")
    data = _load_json(path)
    items = data if isinstance(data, list) else [data]
    convs = parse_file(conversations, "locomo")
    ids = [c.conversation_id for c in convs]
    questions = []
    for i, raw in enumerate(items):
        where = f"{path.name}: [{i}]"
        if not isinstance(raw, dict):
            raise BadInput(f"{where} is not an object")
        sid = raw.get("sample_id")
        if sid is None:
            idx = next((raw[k] for k in ("sample_idx", "sample_index", "sample") if isinstance(raw.get(k), int)), None)
            if idx is None or not 0 <= idx < len(ids):
                raise BadInput(f"{where} names no sample of {conversations.name} (give 'sample_id' or 'sample_idx')")
            sid = ids[idx]
        if str(sid) not in ids:
            raise BadInput(f"{where}: {conversations.name} has no sample '{sid}'")
        qid = f"{sid}#{raw.get('id', i)}"
        questions.append(_state_qa(raw, qid, str(sid), where))
    used = {q.conversation_id for q in questions}
    return UpdatesInput("stress", [(conversations, [c for c in convs if c.conversation_id in used])], questions)


def _question_files(questions: Path) -> list[Path]:
    if questions.is_dir():
        files = sorted(questions.glob("*.questions.json"))
        if not files:
            raise BadInput(f"{questions}: holds no *.questions.json files")
        return files
    if not questions.exists():
        raise BadInput(f"{questions}: no such questions file")
    return [questions]


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".questions.json", ".json", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def load_native_gold(source: Path, questions: Path) -> UpdatesInput:
    """Native conversations (file or directory) and tracecli's gold questions."""
    if source.is_dir():
        files = sorted(p for p in source.iterdir() if p.is_file() and p.suffix.lower() in (".json", ".jsonl"))
        if not files:
            raise BadInput(f"{source}: holds no .json or .jsonl conversation files")
    elif source.exists():
        files = [source]
    else:
        raise BadInput(f"{source}: no such file or directory")
    parsed = [(p, parse_file(p)) for p in files]
    by_id = {c.conversation_id: (p, c) for p, convs in parsed for c in convs}
    by_stem: dict[str, list[str]] = {}
    for p, convs in parsed:
        by_stem.setdefault(_stem(p), []).extend(c.conversation_id for c in convs)
    out: list[StateQA] = []
    for qfile in _question_files(questions):
        data = _load_json(qfile)
        items = data.get("questions") if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise BadInput(f"{qfile.name}: expected a list of questions")
        stem_convs = by_stem.get(_stem(qfile), [])
        for i, raw in enumerate(items):
            where = f"{qfile.name}: [{i}]"
            cid = raw.get("conversation_id") if isinstance(raw, dict) else None
            if cid is None:
                if len(stem_convs) != 1:
                    raise BadInput(f"{where} has no 'conversation_id' and no single conversation file "
                                   f"'{_stem(qfile)}.json' in {source} to take it from")
                cid = stem_convs[0]
            if str(cid) not in by_id:
                raise BadInput(f"{where}: no conversation '{cid}' in {source}")
            out.append(_state_qa(raw, f"{_stem(qfile)}#{raw.get('id', i) if isinstance(raw, dict) else i}", str(cid), where))
    if not out:
        raise BadInput(f"{questions}: holds no questions")
    used = {q.conversation_id for q in out}
    keep = [(p, [c for c in convs if c.conversation_id in used]) for p, convs in parsed]
    return UpdatesInput("native", [(p, convs) for p, convs in keep if convs], out)


def load_updates(path: str | Path, *, questions: str | Path | None = None,
                 conversations: str | Path | None = None) -> UpdatesInput:
    """Read any of the three update-eval inputs (see the module docstring)."""
    path = Path(path)
    if questions is not None:
        return load_native_gold(path, Path(questions))
    if path.is_dir():
        raise BadInput(f"{path}: a directory of conversations needs --questions FILE_OR_DIR")
    if not path.exists():
        raise BadInput(f"{path}: no such file")
    data = _load_json(path)
    if _is_locomo(data):
        return load_locomo_updates(path)
    if _is_stress(data):
        return load_stress(path, Path(conversations) if conversations else None)
    raise BadInput(f"{path.name}: neither LoCoMo samples with outdated answers nor stress-test items "
                   "(current_valid_answer / outdated_answer); for native conversations pass --questions")


# -- running --------------------------------------------------------------------------------


def run_updates(
    store: Store,
    path: str | Path,
    *,
    questions: str | Path | None = None,
    conversations: str | Path | None = None,
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
    """Build the conversations into `store`, ask every question, score valid / leakage / net."""
    check_run_args(budget, limit)
    ablations = check_ablations(ablate)
    if baselines and "graph" not in ablations:
        ablations.append("graph")  # the fair baseline: tracecli's reader over flat evidence (see evaluate.baselines)
    data = load_updates(path, questions=questions, conversations=conversations)
    qs = data.questions[:limit] if limit else data.questions
    used = {q.conversation_id for q in qs}
    parsed = [(p, [c for c in convs if c.conversation_id in used]) for p, convs in data.parsed]
    parsed = [(p, convs) for p, convs in parsed if convs]
    use_judge = judge or (data.source_format == "stress" and judge_model is not None
                          and getattr(judge_model, "is_available", False))

    mark = ledger_mark(store)
    build = prepare(store, parsed, embedder=embedder, llm=llm, progress=progress)

    def make_item(q: Any, asked: Any, cut: Any) -> tuple[ItemResult, dict[str, float | None]]:
        item = ItemResult(id=q.id, conversation_id=q.conversation_id, question=q.question, gold=q.current,
                          groups=dict(q.groups), evidence=q.evidence, as_of=q.as_of, answer_id=asked.answer_id,
                          latency_ms=round(asked.latency_ms, 2), error=asked.error)
        return item, _state_scores(asked.answer, q)

    run = ask_all(store, qs, embedder=embedder, llm=llm, budget=budget, progress=progress,
                  ask_args=lambda q: (q.question, q.conversation_id, q.as_of), make_item=make_item)
    items, latencies, words, ask_seconds = run.items, run.latencies, run.words, run.seconds

    systems = ["tracecli"]
    extra_times: dict[str, float] = {}
    if ablations:
        extra_times["ablations"] = ablation_runs(store, qs, items, ablations, embedder=embedder, llm=llm, budget=budget,
                                                 ask_args=lambda q: (q.question, q.conversation_id, q.as_of), score=lambda q, asked, cut: _state_scores(asked.answer, q))
        systems.extend(ablation_name(p) for p in ablations)
    if baselines:
        systems.append(BASELINE)
        t = time.perf_counter()
        vecs = embed_questions(embedder, [q.question for q in qs])
        for q, vec, item in zip(qs, vecs, items):
            flat = flat_search(store, "dense", q.question, vec, [q.conversation_id], k=5, as_of=iso(parse_user_date(q.as_of)) if q.as_of else None)
            item.answers[BASELINE] = flat.top1
            item.cited[BASELINE] = list(flat.items[0][1]) if flat.items else []
            item.scores[BASELINE] = _state_scores(flat.top1, q)
        extra_times["baselines"] = time.perf_counter() - t

    notes: list[str] = []
    judge_id = None
    if use_judge:
        from tracecli.scope import scope_of

        t = time.perf_counter()
        for system in systems:
            run = judge_states(judge_model, [(q.question, q.current, q.superseded, it.answers[system])
                                             for q, it in zip(qs, items)], scope=scope_of(store, build.conversation_ids))
            judge_id = run.model
            if run.error:
                notes.append(f"judge ({system}): {run.error}; containment scores kept")
                continue
            for it, v in zip(items, run.verdicts):
                if v.score is not None and v.leak is not None:
                    it.scores[system] = {"valid": v.score, "leakage": v.leak, "net": round(v.score - v.leak, 4)}
            if run.unusable:
                notes.append(f"judge ({system}): {run.unusable} of {run.calls} verdicts unusable; those items keep containment scores")
        extra_times[JUDGE_STAGE] = time.perf_counter() - t
    if not build.wiki:
        notes.append("compile-wiki skipped" + (f": {build.wiki_error}" if build.wiki_error else " (wiki stage not available)"))
    errors = [it for it in items if it.error]
    if errors:
        notes.append(f"{len(errors)} question(s) were refused by ask (e.g. {errors[0].id}: {errors[0].error})")

    fields = [f for f in GROUP_FIELDS if any(f in it.groups for it in items)]
    summary = aggregate(items, systems, METRICS, fields, order={"kind": KIND_ORDER})
    settings = run_settings(
        benchmark="updates", file=str(path), budget=budget, embedder=embedder, llm=llm,
        judge_model=judge_id if use_judge else None, db=db_label, baselines=baselines,
        extra={"ablations": ablations, "format": data.source_format, "questions": str(questions) if questions else None,
               "conversations": str(conversations) if conversations else None, "limit": limit,
               "scoring": "judge (3 passes)" if use_judge else "containment", "baseline": "flat dense top-1 note" if baselines else None},
    )
    cost = cost_report(build, store, mark, latencies, words, ask_seconds, extra_times)
    return EvalReport("updates", settings, METRICS, systems, summary, cost, notes, items)


def _state_scores(answer: str, q: StateQA) -> dict[str, float | None]:
    s = metrics.score_state_answer(answer, q.current, q.superseded)
    valid, leak = float(s.valid), float(s.leaked)
    return {"valid": valid, "leakage": leak, "net": valid - leak}



__all__ = ["BASELINE", "METRICS", "StateQA", "UpdatesInput", "load_updates", "run_updates"]
