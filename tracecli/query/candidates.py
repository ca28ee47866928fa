"""Candidate answers and the choice between them: the evidence chooses the answer.

Each source of an offline answer proposes candidates:

* `chain` — the typed fact chain followed to the value valid at the asked time, and `frame` — an open statement
  frame (both from `answer_offline`, which reads a value of the asked kind);
* `claim` — the Memory Wiki's claims that hold at the asked time (TrajWiki's lifecycle: a deprecated claim never
  proposes), reached by routing the question to pages;
* `path` — the end-points of the best TRACE paths;
* `sentence` — the best re-ranked sentences.

All are scored on one scale: the path score S of the evidence a candidate rests on (TRACE Eq. 16: relevance,
confidence, temporal consistency, update validity) averaged with how well its own sentence matches the question
(the re-rank score), plus a prior for how precisely its source reads a value (`PRIORS`). A candidate whose event
is superseded at the asked time is kept in the list, marked `outdated`, and never wins. A typed `chain` / `frame`
answer carries the largest prior, so the scoring decides among the sentence-level candidates, where a current
claim or a strong path end-point can beat the sentence that merely resembles the question most — when
`AskSettings.choose_by_evidence` is on. It is off by default: measured on the five dev sets it did not add correct
answers (193 → 192 valid, 57 → 60 stale), so the answer step's own pick answers and the scores are shown beside it.
`trace` shows every candidate, its score, and why the winner won.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tracecli.query.paths import EventNode, Graph, Path, Step, score_path
from tracecli.query.settings import AskSettings

#: how precisely each source reads a value (added to the shared score)
PRIORS = {"chain": 2.0, "frame": 1.5, "claim": 0.1, "path": 0.0, "sentence": 0.05}
#: candidates listed per question (the winner always among them)
MAX_CANDIDATES = 8


@dataclass
class Candidate:
    """One proposed answer and why it did or did not win (stored with the answer; `trace` shows it)."""

    source: str  # chain | frame | claim | path | sentence
    event_id: str
    text: str  # the sentence (or value) it would answer with
    score: float
    status: str  # valid | outdated | not yet
    won: bool = False
    why: str = ""


def evidence_score(graph: Graph, ev: EventNode, relevance: Mapping[str, float], settings: AskSettings,
                   as_of: str | None) -> float:
    """S of the one-step path at `ev` (Eq. 16)."""
    path = Path([Step(ev.id)], [])
    score_path(graph, path, relevance, settings, as_of)
    return path.score


def _status(ev: EventNode, as_of: str | None) -> str:
    if as_of is not None and ev.said_after(as_of):
        return "not yet"
    return "valid" if ev.validity_at(as_of) > 0 else "outdated"


def gather(graph: Graph, answer_source: str, answer_event: str | None, ranked: Sequence[tuple[EventNode, float]],
           paths: Sequence[Path], claim_events: Sequence[str], relevance: Mapping[str, float],
           settings: AskSettings, as_of: str | None, match: Callable[[Sequence[EventNode]], Sequence[float]]) -> list[Candidate]:
    """The candidates of one question, best first; `answer_source` / `answer_event` is the answer step's own pick.
    `match` scores events' own sentences against the question on the re-rank's scale (the same for every source)."""
    proposals: list[tuple[str, str]] = []
    if answer_event is not None:
        proposals.append((answer_source, answer_event))
    proposals += [("claim", eid) for eid in claim_events[:3]]
    proposals += [("path", p.event_ids[-1]) for p in paths[:3] if p.event_ids]
    proposals += [("sentence", ev.id) for ev, _ in ranked[:3]]
    seen: set[str] = set()
    picked: list[tuple[str, EventNode]] = []
    for source, eid in proposals:
        ev = graph.events.get(eid)
        if ev is not None and eid not in seen:
            seen.add(eid)
            picked.append((source, ev))
    fits = match([ev for _, ev in picked]) if picked else []
    out: list[Candidate] = []
    for (source, ev), fit in zip(picked, fits):
        s = evidence_score(graph, ev, relevance, settings, as_of)
        score = 0.5 * s + 0.5 * float(fit) + PRIORS.get(source, 0.0)
        out.append(Candidate(source, ev.id, ev.quote, round(score, 4), _status(ev, as_of)))
    out.sort(key=lambda c: (c.status != "valid", -c.score, c.event_id))
    kept = out[:MAX_CANDIDATES]
    own = next((c for c in out[MAX_CANDIDATES:] if c.event_id == answer_event), None)
    return kept[:-1] + [own] if own is not None else kept  # the answer step's own pick is always listed


def best_valid(candidates: Sequence[Candidate]) -> Candidate | None:
    """The best-scored candidate that holds at the asked time (candidates come best first)."""
    return next((c for c in candidates if c.status == "valid"), None)


def mark_winner(candidates: Sequence[Candidate], winner: Candidate, note: str = "") -> None:
    """Tick the candidate that answers and say why each candidate won or lost."""
    best = best_valid(candidates)
    for c in candidates:
        c.won = c is winner
        if c is winner:
            runner = next((o for o in candidates if o is not c and o.status == "valid"), None)
            c.why = note or (f"highest score ({c.score:.3f}" + (f" vs {runner.score:.3f} for the {runner.source} candidate)"
                                                                if runner else ")"))
        elif c.status == "outdated":
            c.why = "superseded at the asked time"
        elif c.status == "not yet":
            c.why = "said after the as-of date"
        elif best is c:
            c.why = f"highest score, but the {winner.source} answer stands"
        else:
            c.why = f"lower score than the {best.source if best else winner.source} candidate"
