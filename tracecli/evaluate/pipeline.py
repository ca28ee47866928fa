"""The run every benchmark shares: ingest → build-graph → compile-wiki → ask, timed and costed.

A benchmark module parses its file into conversations and questions, then
calls `prepare` (which writes the conversations into the store and builds
them) and `ask_one` per question. One embedder serves every stage; the chat
model (offline `none` unless configured) is the one the build and the answers
use. Costs come from the `llm_ledger` rows this run added.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracecli.errors import BadInput, TraceError
from tracecli.evaluate import metrics
from tracecli.ingest.model import ParsedConversation
from tracecli.store.db import Store

if TYPE_CHECKING:
    from tracecli.providers.embeddings import Embedder
    from tracecli.providers.llm import ChatModel

ProgressFn = Callable[[str, int, int], None]
DEFAULT_BUDGET = 300


@dataclass
class StageCost:
    """Wall time and LLM use of one stage of this run."""

    stage: str
    seconds: float
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cache_hits: int = 0


@dataclass
class CostReport:
    """What the run cost: per stage, per question."""

    stages: list[StageCost] = field(default_factory=list)
    questions: int = 0
    ask_latency_ms_median: float | None = None
    ask_latency_ms_p95: float | None = None
    context_words_mean: float | None = None
    llm_calls_total: int = 0
    tokens_in_total: int = 0
    tokens_out_total: int = 0


@dataclass
class BuildRun:
    """What `prepare` did."""

    conversation_ids: list[str]
    stage_seconds: dict[str, float]
    wiki: bool
    wiki_error: str | None = None


@dataclass
class Asked:
    """One question through `Asker.ask`: its answer, ranked context and latency."""

    answer: str
    abstained: bool
    answer_id: str | None
    context: list[tuple[str, list[str]]]
    latency_ms: float
    error: str | None = None


def check_run_args(budget: int, limit: int | None) -> None:
    """The checks every benchmark runner makes on its shared options."""
    if budget < 20:
        raise BadInput(f"--budget {budget} is too small; give at least 20 words")
    if limit is not None and limit < 1:
        raise BadInput("--limit must be 1 or more")


def ledger_mark(store: Store) -> int:
    """The highest `llm_ledger` id now (rows after it belong to this run)."""
    if not store.has_table("llm_ledger"):
        return 0
    return int(store.execute("SELECT COALESCE(MAX(id), 0) FROM llm_ledger").fetchone()[0])


def ledger_since(store: Store, mark: int) -> dict[str, StageCost]:
    """LLM calls, tokens and cache hits per ledger stage since `mark`."""
    if not store.has_table("llm_ledger"):
        return {}
    out = {}
    for stage, calls, t_in, t_out, hits in store.execute(
        "SELECT stage, COUNT(*), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0), "
        "COALESCE(SUM(cache_hit), 0) FROM llm_ledger WHERE id > ? GROUP BY stage ORDER BY stage",
        (mark,),
    ):
        out[stage] = StageCost(stage, 0.0, int(calls), int(t_in), int(t_out), int(hits))
    return out


def wiki_available() -> bool:
    """True when the compile-wiki stage can be imported."""
    try:
        from tracecli.wiki.compile import compile_wiki  # noqa: F401
    except ImportError:
        return False
    return True


def prepare(
    store: Store,
    parsed: Sequence[tuple[Path, list[ParsedConversation]]],
    *,
    embedder: Embedder,
    llm: ChatModel | None = None,
    progress: ProgressFn | None = None,
) -> BuildRun:
    """Ingest the parsed conversations, build their graphs and (when available) compile their wikis."""
    from tracecli.graph.build import build_graph
    from tracecli.ingest.pipeline import check_parsed, ingest_parsed

    ids = list(dict.fromkeys(c.conversation_id for _, convs in parsed for c in convs))
    if not ids:
        raise BadInput("nothing to evaluate: no conversations were selected")
    seconds: dict[str, float] = {}
    check_parsed(store, parsed)
    t = time.perf_counter()
    for n, (path, convs) in enumerate(parsed, 1):
        ingest_parsed(store, path, convs, embedder)
        if progress:
            progress("ingest", n, len(parsed))
    seconds["ingest"] = time.perf_counter() - t
    t = time.perf_counter()
    for n, cid in enumerate(ids, 1):
        build_graph(store, cid, llm=llm)
        if progress:
            progress("build-graph", n, len(ids))
    seconds["build-graph"] = time.perf_counter() - t
    wiki = wiki_available()
    wiki_error = None
    if wiki:
        from tracecli.wiki.compile import compile_wiki

        t = time.perf_counter()
        try:
            for n, cid in enumerate(ids, 1):
                compile_wiki(store, cid, llm=llm, embedder=embedder)
                if progress:
                    progress("compile-wiki", n, len(ids))
        except TraceError as exc:
            # The wiki is an extra layer for `ask`; an eval still runs without it.
            wiki, wiki_error = False, str(exc)
        seconds["compile-wiki"] = time.perf_counter() - t
    return BuildRun(ids, seconds, wiki, wiki_error)


def ask_one(asker: Any, question: str, conversation_id: str | None, *, as_of: str | None = None,
            budget: int = DEFAULT_BUDGET) -> Asked:
    """Ask through `Asker` (stored, so `trace` and `audit` see it); a refused question becomes an error row."""
    t = time.perf_counter()
    try:
        res = asker.ask(question, conversation_id=conversation_id, as_of=as_of, budget=max(budget, 20))
    except TraceError as exc:
        return Asked("", True, None, [], (time.perf_counter() - t) * 1000.0, error=str(exc))
    latency = (time.perf_counter() - t) * 1000.0
    context = [(item.text, list(item.source_refs)) for item in res.context]
    return Asked(res.answer, bool(res.abstained), res.answer_id, context, latency)


@dataclass
class AskRun:
    """What asking every question of a benchmark produced."""

    items: list[Any]
    latencies: list[float]
    words: list[float]
    seconds: float


def ask_all(store: Store, questions: Sequence[Any], *, embedder: Embedder, llm: ChatModel | None, budget: int,
            progress: ProgressFn | None, ask_args: Callable[[Any], tuple[str, str | None, str | None]],
            make_item: Callable[[Any, Asked, Any], tuple[Any, dict[str, float | None]]]) -> AskRun:
    """Ask every question through one `Asker`; `make_item` turns (question, answer, cut context) into (row, scores)."""
    from tracecli.query.ask import Asker

    asker = Asker(store, embedder=embedder, llm=llm)
    run = AskRun([], [], [], 0.0)
    t_ask = time.perf_counter()
    for n, q in enumerate(questions, 1):
        text, conversation_id, as_of = ask_args(q)
        asked = ask_one(asker, text, conversation_id, as_of=as_of, budget=budget)
        cut = metrics.cut_at_budget(asked.context, budget)
        item, scores = make_item(q, asked, cut)
        item.answers["tracecli"] = asked.answer
        item.cited["tracecli"] = list(cut.cited)
        item.scores["tracecli"] = scores
        run.items.append(item)
        run.latencies.append(asked.latency_ms)
        run.words.append(float(cut.words))
        if progress:
            progress("ask", n, len(questions))
    run.seconds = time.perf_counter() - t_ask
    return run


def ablation_runs(store: Store, questions: Sequence[Any], items: Sequence[Any], ablations: Sequence[str], *,
                  embedder: Embedder, llm: ChatModel | None, budget: int,
                  ask_args: Callable[[Any], tuple[str, str | None, str | None]],
                  score: Callable[[Any, Asked, Any], dict[str, float | None]]) -> float:
    """Ask every question again with one part switched off per run (`AskSettings.ablate`); each run becomes a
    system 'w/o <part>' of the same items, so the paper-style ablation table prints beside the full system.
    Returns the seconds spent."""
    from tracecli.query.ask import Asker
    from tracecli.query.settings import AskSettings

    t = time.perf_counter()
    for part in ablations:
        asker = Asker(store, embedder=embedder, llm=llm, settings=AskSettings(ablate=frozenset({part})))
        name = ablation_name(part)
        for q, item in zip(questions, items):
            text, conversation_id, as_of = ask_args(q)
            asked = ask_one(asker, text, conversation_id, as_of=as_of, budget=budget)
            cut = metrics.cut_at_budget(asked.context, budget)
            item.answers[name] = asked.answer
            item.cited[name] = list(cut.cited)
            item.scores[name] = score(q, asked, cut)
    return time.perf_counter() - t


def ablation_name(part: str) -> str:
    """The system name of an ablation run in the report tables ('w/o wiki')."""
    return f"{ABLATION_PREFIX}{part}"


def is_ablation(system: str) -> bool:
    return system.startswith(ABLATION_PREFIX)


ABLATION_PREFIX = "w/o "


def cost_report(build: BuildRun, store: Store, mark: int, latencies: Sequence[float],
                context_words: Sequence[float], ask_seconds: float, extra: dict[str, float] | None = None) -> CostReport:
    """Stage times plus the ledger rows since `mark`, ask latency percentiles and context size."""
    ledger = ledger_since(store, mark)
    times = dict(build.stage_seconds)
    times["ask"] = ask_seconds
    for k, v in (extra or {}).items():
        times[k] = v
    stages = []
    for name, secs in times.items():
        led = ledger.pop(name, None)  # timing names are the ledger's stage names
        stages.append(StageCost(name, round(secs, 3), *(
            (led.llm_calls, led.tokens_in, led.tokens_out, led.cache_hits) if led else (0, 0, 0, 0))))
    for name, led in ledger.items():  # stages that only the ledger knows (e.g. the judge)
        stages.append(StageCost(name, 0.0, led.llm_calls, led.tokens_in, led.tokens_out, led.cache_hits))
    med = metrics.median(list(latencies))
    p95 = metrics.percentile(list(latencies), 95.0)
    words = metrics.mean(context_words)
    return CostReport(
        stages=stages,
        questions=len(latencies),
        ask_latency_ms_median=round(med, 2) if med is not None else None,
        ask_latency_ms_p95=round(p95, 2) if p95 is not None else None,
        context_words_mean=round(words, 2) if words is not None else None,
        llm_calls_total=sum(s.llm_calls for s in stages),
        tokens_in_total=sum(s.tokens_in for s in stages),
        tokens_out_total=sum(s.tokens_out for s in stages),
    )


def git_commit(cwd: Path | None = None) -> str | None:
    """`git rev-parse HEAD` of the tracecli checkout, or None when it is not a git checkout."""
    where = cwd or Path(__file__).resolve().parent.parent.parent
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    out = proc.stdout.strip()
    return out if proc.returncode == 0 and out else None


def run_settings(*, benchmark: str, file: str, budget: int, embedder: Embedder, llm: ChatModel | None, judge_model: str | None,
                 db: str | None, baselines: bool, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything needed to reproduce a run: models, budget, AskSettings weights, git commit."""
    import dataclasses

    import tracecli
    from tracecli.query.settings import AskSettings

    settings: dict[str, Any] = {
        "benchmark": benchmark,
        "file": file,
        "budget_words": budget,
        "embedder": f"{getattr(embedder, 'id', '?')} ({getattr(embedder, 'dimension', '?')}-d)",
        "llm": getattr(llm, "id", "none") if llm is not None and getattr(llm, "is_available", False) else "none (offline)",
        "judge": judge_model,
        "baselines": baselines,
        "db": db or "(temporary)",
        "wiki_stage": wiki_available(),
        # what ask ran with: the defaults, with the context budget this run passed to every question
        "ask_settings": {**dataclasses.asdict(AskSettings()), "budget": budget, "ablate": []},
        "tracecli_version": getattr(tracecli, "__version__", None),
        "git_commit": git_commit(),
    }
    if extra:
        settings.update(extra)
    return settings


__all__ = [
    "AskRun", "Asked", "BuildRun", "ablation_name", "ablation_runs", "ask_all", "is_ablation", "CostReport", "DEFAULT_BUDGET", "ProgressFn", "StageCost", "ask_one", "cost_report",
    "git_commit", "ledger_mark", "ledger_since", "prepare", "run_settings", "wiki_available",
]
