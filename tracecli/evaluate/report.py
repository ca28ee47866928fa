"""Eval reports as tables: the same `TableSpec`s feed the terminal (rich) and `--out report.md` (markdown).

With several systems (tracecli and three flat baselines) there is one table
per metric — rows are groups, columns are systems side by side plus the ratio
of tracecli to the best baseline. With one or two systems there is one table
per grouping field, every metric of every system a column.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracecli.evaluate.pipeline import ablation_name, is_ablation
from tracecli.evaluate.results import OVERALL, EvalReport, GroupRow

METRIC_LABELS: dict[str, str] = {
    "evidence_recall": "evidence recall",
    "session_recall": "session recall",
    "locomo_f1": "F1 (LoCoMo authors: stemmed tokens)",
    "set_f1": "F1 (set-based, memory papers)",
    "bleu1": "BLEU-1 (method-1 smoothing)",
    "judge": "LLM judge (CORRECT rate, 3 passes)",
    "context_words": "context words / question",
    "valid": "valid accuracy",
    "leakage": "outdated leakage",
    "net": "strict net (valid − leakage)",
}
SHORT_LABELS: dict[str, str] = {
    "evidence_recall": "recall", "session_recall": "sess. recall", "locomo_f1": "F1", "set_f1": "set F1",
    "bleu1": "BLEU-1", "judge": "judge", "context_words": "words", "valid": "valid", "leakage": "leak", "net": "net",
}
SYSTEM_LABELS: dict[str, str] = {
    "tracecli": "tracecli",
    "dense": "flat dense",
    "bm25": "flat BM25",
    "rrf": "flat RRF",
    "dense_top1": "flat dense top-1",
}
FIELD_LABELS: dict[str, str] = {
    "category": "LoCoMo category", "kind": "question kind", "revision": "revision type",
    "question_type": "question type", "type": "update type", "difficulty": "difficulty", "all": "all",
}
NO_RATIO = {"context_words", "leakage"}


@dataclass
class TableSpec:
    """A titled table of text cells."""

    title: str
    columns: list[str]
    rows: list[list[str]]


def fmt(value: float | None, metric: str = "") -> str:
    """Three decimals, words with one; '—' for no value."""
    if value is None:
        return "—"
    if metric == "context_words":
        return f"{value:.1f}"
    return f"{value:.3f}"


def _groups(report: EvalReport) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for r in report.summary:
        seen.setdefault((r.field, r.group), None)
    return list(seen)


def _n(report: EvalReport, field: str, group: str) -> int:
    return max((r.n for r in report.summary if r.field == field and r.group == group), default=0)


def _label(field: str, group: str) -> str:
    return "overall" if group == OVERALL else group


def _value(report: EvalReport, field: str, group: str, system: str, metric: str) -> float | None:
    row: GroupRow | None = report.row(field, group, system)
    return row.metrics.get(metric) if row else None


def _present(report: EvalReport, metric: str) -> bool:
    return any(r.metrics.get(metric) is not None for r in report.summary)


def result_tables(report: EvalReport) -> list[TableSpec]:
    """The score tables of a report."""
    metrics = [m for m in report.metrics if _present(report, m)]
    groups = _groups(report)
    systems = report.systems
    tables: list[TableSpec] = []
    if len(systems) > 2:
        # flat systems: the raw baselines and tracecli's reader over flat evidence, not the other ablation rows
        baselines = [s for s in systems if s != "tracecli" and (s == ablation_name("graph") or not is_ablation(s))]
        for m in metrics:
            cols = ["group", "n"] + [SYSTEM_LABELS.get(s, s) for s in systems]
            ratio = m not in NO_RATIO and "tracecli" in systems
            if ratio:
                cols.append("tracecli ÷ best flat")
            rows = []
            for field, group in groups:
                vals = [_value(report, field, group, s, m) for s in systems]
                row = [_label(field, group), str(_n(report, field, group))] + [fmt(v, m) for v in vals]
                if ratio:
                    ours = _value(report, field, group, "tracecli", m)
                    flat = [v for v in (_value(report, field, group, s, m) for s in baselines) if v is not None]
                    best = max(flat) if flat else None
                    row.append(f"{ours / best:.2f}×" if ours is not None and best else "—")
                rows.append(row)
            tables.append(TableSpec(f"{METRIC_LABELS.get(m, m)} — by {_field_title(groups)}", cols, rows))
        return tables
    fields = list(dict.fromkeys(f for f, _ in groups if f != "all"))
    many = len(systems) > 1
    for field in fields or ["all"]:
        cols = [FIELD_LABELS.get(field, field)] + (["system"] if many else []) + ["n"]
        cols += [SHORT_LABELS.get(m, m) for m in metrics]
        rows = []
        for f, group in groups:
            if f not in (field, "all"):
                continue
            for i, s in enumerate(systems):
                row = [_label(f, group) if i == 0 else ""] + ([SYSTEM_LABELS.get(s, s)] if many else [])
                r = report.row(f, group, s)
                row.append(str(r.n if r else 0))
                row += [fmt(_value(report, f, group, s, m), m) for m in metrics]
                rows.append(row)
        tables.append(TableSpec(f"{report.benchmark}: by {FIELD_LABELS.get(field, field)}", cols, rows))
    return tables


def _field_title(groups: Sequence[tuple[str, str]]) -> str:
    fields = [f for f in dict.fromkeys(f for f, _ in groups) if f != "all"]
    return ", ".join(FIELD_LABELS.get(f, f) for f in fields) or "all"


def cost_table(report: EvalReport) -> TableSpec:
    """Wall time, LLM calls and tokens per stage."""
    rows = [[s.stage, f"{s.seconds:.1f}", str(s.llm_calls), str(s.tokens_in), str(s.tokens_out), str(s.cache_hits)]
            for s in report.cost.stages]
    c = report.cost
    rows.append(["total", f"{sum(s.seconds for s in c.stages):.1f}", str(c.llm_calls_total), str(c.tokens_in_total),
                 str(c.tokens_out_total), str(sum(s.cache_hits for s in c.stages))])
    return TableSpec("cost per stage", ["stage", "seconds", "LLM calls", "tokens in", "tokens out", "cache hits"], rows)


def cost_line(report: EvalReport) -> str:
    """Ask latency and context size in one line."""
    c = report.cost
    med = f"{c.ask_latency_ms_median:.0f} ms" if c.ask_latency_ms_median is not None else "—"
    p95 = f"{c.ask_latency_ms_p95:.0f} ms" if c.ask_latency_ms_p95 is not None else "—"
    words = f"{c.context_words_mean:.1f}" if c.context_words_mean is not None else "—"
    return f"{c.questions} questions · ask latency median {med}, p95 {p95} · context words per question {words}"


def settings_rows(report: EvalReport) -> list[list[str]]:
    """(setting, value) rows, AskSettings flattened."""
    rows = []
    for key, value in report.settings.items():
        if key == "ask_settings" and isinstance(value, dict):
            for k, v in value.items():
                rows.append([f"ask.{k}", v if isinstance(v, str) else json.dumps(v, sort_keys=True)])
            continue
        rows.append([key, "—" if value is None else (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))])
    return rows


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(spec: TableSpec) -> str:
    """A GitHub-flavoured markdown table."""
    lines = [f"### {spec.title}", "", "| " + " | ".join(_md_cell(c) for c in spec.columns) + " |",
             "| " + " | ".join("---" for _ in spec.columns) + " |"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in spec.rows]
    return "\n".join(lines)


def to_markdown(report: EvalReport) -> str:
    """The whole report: scores, cost, notes and the settings that reproduce it."""
    parts = [f"# tracecli eval {report.benchmark}", ""]
    parts.append(f"File `{report.settings.get('file')}` · budget {report.settings.get('budget_words')} words · "
                 f"systems: {', '.join(SYSTEM_LABELS.get(s, s) for s in report.systems)}.")
    parts.append("")
    parts.append("## Scores")
    parts.append("")
    for spec in result_tables(report):
        parts += [md_table(spec), ""]
    parts += ["## Cost", "", md_table(cost_table(report)), "", cost_line(report) + ".", ""]
    if report.notes:
        parts += ["## Notes", ""] + [f"- {n}" for n in report.notes] + [""]
    parts += ["## Metrics", ""]
    parts += [f"- **{METRIC_LABELS.get(m, m)}** (`{m}`)" for m in report.metrics]
    parts.append("")
    if "evidence_recall" in report.metrics:
        parts += ["Evidence recall: context items are taken in rank order while their whitespace words fit the "
                  "budget; an item citing more than 3 messages counts for none of them. Flat baselines answer "
                  "with their top-1 note; the judge scores tracecli's answers only.", ""]
    if "valid" in report.metrics:
        parts += ["valid: the answer holds the current value; leakage: it holds a superseded value without the "
                  "current one; net = valid − leakage. The flat baseline answers with the top-1 note of dense "
                  "retrieval.", ""]
    parts += ["## Settings", "", md_table(TableSpec("settings", ["setting", "value"], settings_rows(report))), ""]
    return "\n".join(parts)


__all__ = ["METRIC_LABELS", "SYSTEM_LABELS", "TableSpec", "cost_line", "cost_table", "fmt", "md_table",
           "result_tables", "settings_rows", "to_markdown"]
