"""The shape every `tracecli eval` report shares: per-question items, grouped summary rows, cost, settings.

`--json` prints an `EvalReport` as is:

    {"benchmark": "locomo", "settings": {...}, "metrics": ["evidence_recall", ...],
     "systems": ["tracecli", "dense", ...], "summary": [{"field", "group", "system", "n", "metrics": {...}}],
     "cost": {...}, "notes": [...], "items": [{"id", "conversation_id", "question", "gold", "groups",
     "answers", "scores", "evidence", "cited", "as_of", "answer_id", "latency_ms", "error"}]}

`summary` holds one row per (field, group, system): `field` is what the
items are grouped by ("category", "kind", "revision", "question_type"), or
"all" with group "overall".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.evaluate import metrics
from tracecli.evaluate.pipeline import CostReport

OVERALL = "overall"


@dataclass
class ItemResult:
    """One question: gold, each system's answer and scores, the evidence each cited within the budget."""

    id: str
    conversation_id: str
    question: str
    gold: str
    groups: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    cited: dict[str, list[str]] = field(default_factory=dict)
    as_of: str | None = None
    answer_id: str | None = None
    latency_ms: float | None = None
    error: str | None = None


@dataclass
class GroupRow:
    """Mean of each metric over the items of one group, for one system."""

    field: str
    group: str
    system: str
    n: int
    metrics: dict[str, float | None]


@dataclass
class EvalReport:
    """What `tracecli eval ...` returns (see the module docstring for the JSON shape)."""

    benchmark: str
    settings: dict[str, Any]
    metrics: list[str]
    systems: list[str]
    summary: list[GroupRow]
    cost: CostReport
    notes: list[str] = field(default_factory=list)
    items: list[ItemResult] = field(default_factory=list)

    def row(self, field_name: str, group: str, system: str) -> GroupRow | None:
        """The summary row of one (field, group, system), if any."""
        for r in self.summary:
            if r.field == field_name and r.group == group and r.system == system:
                return r
        return None


def aggregate(items: Sequence[ItemResult], systems: Sequence[str], metric_names: Sequence[str],
              fields: Sequence[str], order: dict[str, Sequence[str]] | None = None) -> list[GroupRow]:
    """Rows per field value and system, then the overall rows; groups in `order` first, the rest sorted."""
    rows: list[GroupRow] = []

    def add(field_name: str, group: str, members: Sequence[ItemResult]) -> None:
        for system in systems:
            scored = [it for it in members if system in it.scores]
            vals = {
                m: _round(metrics.mean(it.scores[system].get(m) for it in scored)) for m in metric_names
            }
            rows.append(GroupRow(field_name, group, system, len(scored), vals))

    for f in fields:
        groups: dict[str, list[ItemResult]] = {}
        for it in items:
            g = it.groups.get(f)
            if g is not None:
                groups.setdefault(g, []).append(it)
        if not groups:
            continue
        preferred = [g for g in (order or {}).get(f, []) if g in groups]
        for g in preferred + sorted(g for g in groups if g not in preferred):
            add(f, g, groups[g])
    add("all", OVERALL, list(items))
    return rows


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


__all__ = ["EvalReport", "GroupRow", "ItemResult", "OVERALL", "aggregate"]
