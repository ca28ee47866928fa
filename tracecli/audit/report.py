"""What an audit reports (findings, check results, the review queue) and the helpers every check uses."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracecli.timeutil import parse_iso


GROUPS = ("storage", "graph", "claims", "wiki", "answers")
WIKI_TABLES = ("claims", "claim_ops", "trajectories", "snapshots", "wiki_pages")


@dataclass(frozen=True)
class AuditSettings:
    """Thresholds of the audit."""

    low_confidence: float = 0.8  # `updates` edges below this go to the review queue
    max_findings_per_check: int = 50  # findings listed per check (all are counted)


@dataclass
class Finding:
    """One problem: which check found it, how bad, what to look at."""

    check: str
    severity: str  # error | warning
    message: str
    conversation_id: str | None = None
    refs: list[str] = field(default_factory=list)


@dataclass
class CheckResult:
    """The outcome of one check."""

    name: str
    group: str
    status: str  # ok | warning | error | skipped
    checked: int = 0
    errors: int = 0
    warnings: int = 0
    detail: str = ""


@dataclass
class Disagreement:
    """A place where the claim lifecycle and the evidence graph tell different stories."""

    conversation_id: str
    kind: str  # revise_without_update | update_without_revise
    claim_id: str | None
    other_claim_id: str | None
    event_id: str | None
    other_event_id: str | None
    message: str


@dataclass
class ReviewSide:
    """One end of an edge under review, with its quote."""

    event_id: str
    subject: str
    description: str
    quote: str
    time_anchor: str | None
    validity: float
    source_refs: list[str]


@dataclass
class ReviewItem:
    """An edge a person should confirm: a contradiction or a low-confidence update."""

    kind: str  # contradiction | low_confidence_update
    conversation_id: str
    edge_id: str
    label: str
    confidence: float
    justification: str
    newer: ReviewSide
    older: ReviewSide


@dataclass
class AuditReport:
    """What `tracecli audit --json` prints."""

    db: str
    conversation_ids: list[str]
    schema_version: int
    latest_schema_version: int
    ok: bool
    errors: int
    warnings: int
    checks: list[CheckResult]
    findings: list[Finding]
    disagreements: list[Disagreement]
    review: list[ReviewItem]
    counts: dict[str, int]
    namespace: str | None = None  # the namespace asked for; None: every namespace of the file
    namespaces: list[str] = field(default_factory=list)  # the namespaces of the checked conversations


class _Skip(Exception):
    """Raised inside a check to mark it skipped, with the reason."""


class _Check:
    """Collects one check's findings; counts all, keeps the first `limit`."""

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        self.checked = 0
        self.errors = 0
        self.warnings = 0
        self.findings: list[Finding] = []

    def error(self, message: str, cid: str | None = None, refs: Sequence[str] = ()) -> None:
        self.errors += 1
        self._keep(Finding(self.name, "error", message, cid, list(refs)))

    def warn(self, message: str, cid: str | None = None, refs: Sequence[str] = ()) -> None:
        self.warnings += 1
        self._keep(Finding(self.name, "warning", message, cid, list(refs)))

    def _keep(self, finding: Finding) -> None:
        if len(self.findings) < self.limit:
            self.findings.append(finding)


def _short(text: str | None, n: int = 90) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        return parse_iso(value)
    except ValueError:
        return None


def _json_list(text: Any) -> list[str]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    """Is `goal` reachable from `start` along `updates` edges (a chained revision)?"""
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        for nxt in graph.get(node, ()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return False


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Every cycle of `updates` edges, once each, by an iterative depth-first search."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    found: dict[frozenset[str], list[str]] = {}
    for root in sorted(graph):
        if root in state:
            continue
        path = [root]
        state[root] = 1
        stack: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph.get(root, []))))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(child) == 1:
                cycle = path[path.index(child):]
                found.setdefault(frozenset(cycle), cycle)
            elif child not in state:
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph.get(child, [])))))
    return list(found.values())
