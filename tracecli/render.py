"""Output: rich tables on stderr (colour only on a TTY), JSON alone on stdout.

Everything here shows text users wrote (messages, speakers, ids, file names). None of it is ever read
as Rich markup, and terminal control characters are removed from it (`plain`, `safe`), so a chat
message cannot restyle, clear or retitle the terminal; the stored text is unchanged. JSON escapes
those characters instead (`tracecli.text.json_text`): the same value, safe on a terminal.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from tracecli.text import json_text, strip_controls

__all__ = ["strip_controls"]  # re-exported for the command modules

#: width of stderr output that goes to a log or a pipe, where there is no terminal to fit: wide enough that
#: tables keep ids, slugs and dates whole (rich's default of 80 columns folded them inside cells)
LOG_WIDTH = 1000

err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else LOG_WIDTH)
# what would break a one-line message in a terminal or a log (user text inside an error can hold any of them)
_LINE_BREAKS = re.compile("[\n\t\u2028\u2029]")


def plain(value: Any, style: str = "") -> Text:
    """User text as a Rich `Text`: shown as written (never markup), without terminal control characters."""
    return value if isinstance(value, Text) else Text(strip_controls("" if value is None else str(value)), style=style)


def safe(value: Any) -> str:
    """User text to put inside a markup string: markup escaped, control characters removed."""
    return escape(strip_controls(str(value)))


def to_jsonable(value: Any) -> Any:
    """Dataclasses, tuples and nested containers → plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: to_jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def emit_json(value: Any) -> None:
    """Print one JSON document on stdout."""
    sys.stdout.write(json_text(to_jsonable(value)) + "\n")
    sys.stdout.flush()


def emit_text(text: str) -> None:
    """Print a document the command produced (an export) on stdout as it is."""
    sys.stdout.write(text)
    sys.stdout.flush()


def emit_json_line(value: Any) -> None:
    """One compact JSON object per line (JSONL), for batch output."""
    sys.stdout.write(json_text(to_jsonable(value), separators=(",", ":")) + "\n")
    sys.stdout.flush()


def _one_line(message: str) -> str:
    """`message` safe to print as one line: secrets redacted, markup escaped, control characters and line breaks gone."""
    from tracecli.redact import redact

    return safe(_LINE_BREAKS.sub(" ", redact(message)))


def error_line(message: str) -> None:
    """One line on stderr for a failure the user can act on (API keys and URL credentials redacted)."""
    err.print(f"[bold red]error:[/] {_one_line(message)}", markup=True, soft_wrap=True)


def warning_line(message: str) -> None:
    """One line on stderr for something the user should know although the command succeeded."""
    err.print(f"[yellow]warning:[/] {_one_line(message)}", markup=True, soft_wrap=True)


def table(title: str, columns: list[str], rows: list[list[Any]]) -> Table:
    """A rich table with the given columns and rows; cells and title are plain text (`plain`), or `Text` as given."""
    t = Table(title=plain(title), title_justify="left")
    for col in columns:
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*[plain(v) for v in row])
    return t


def show(*renderables: Any) -> None:
    """Print rich renderables on stderr."""
    for r in renderables:
        err.print(r)


# -- per-command views -----------------------------------------------------------------


def ingest_results(results: list[Any]) -> None:
    rows = []
    for res in results:
        for c in res.conversations:
            status = "created" if c.created else ("appended" if c.new_messages else "nothing new")
            rows.append([Path(res.file).name, c.conversation_id, c.source_format, c.new_messages, c.skipped_messages, c.new_sessions, status])
    show(table("ingest", ["file", "conversation", "format", "new msgs", "already present", "new sessions", "status"], rows))
    new = sum(c.new_messages for res in results for c in res.conversations)
    present = sum(c.skipped_messages for res in results for c in res.conversations)
    show(f"{new} new message(s) stored; {present} skipped as already present (same conversation, speaker, time and text)")


def stats(s: Any) -> None:
    show(
        table(
            f"{s.db}  (schema v{s.schema_version}, embeddings: {s.embedding_model or 'none yet'})",
            ["table", "rows"],
            [[k, v] for k, v in s.tables.items()],
        )
    )
    if s.conversations:
        cols = ["conversation", "namespace", "sessions", "messages", "first", "last"]
        show(
            table(
                "conversations",
                cols,
                [[c["conversation_id"], c["namespace"], c["sessions"], c["messages"], c["first"], c["last"]] for c in s.conversations],
            )
        )
    if getattr(s, "llm", None):
        show(
            table(
                "LLM calls per stage",
                ["stage", "calls", "tokens in", "tokens out", "cache hits", "fallbacks", "mean ms"],
                [[r["stage"], r["calls"], r["tokens_in"], r["tokens_out"], r["cache_hits"], r["fallbacks"], r["mean_latency_ms"]] for r in s.llm],
            )
        )


def build_results(results: list[Any]) -> None:
    rows, contents = [], []
    for r in results:
        rows.append([
            r.conversation_id, f"{r.sessions_processed}/{r.sessions_total}", f"+{r.events_new} ({r.events_total})",
            r.updates, r.contradicts, f"{r.outdated_events}/{r.partial_events}",
            f"{r.pairs_considered:,}/{r.pairs_possible:,}", f"{r.elapsed_s:.1f}s",
        ])
        contents.append([
            r.conversation_id, r.extractor, ", ".join(f"{k} {v}" for k, v in r.events_by_type.items()),
            ", ".join(f"{k} {v}" for k, v in r.edges_by_label.items() if k not in ("member_of", "next")),
            r.topics, f"{r.llm_calls} ({r.llm_cache_hits} cached)",
        ])
    show(table("build-graph", ["conversation", "sessions built", "events", "updates", "contradicts",
                               "outdated/partial", "pairs considered/possible", "time"], rows))
    show(table("graph contents", ["conversation", "extractor", "events by type", "edges by label", "topics",
                                  "LLM calls"], contents))


_MARK_STYLE = {"valid": "green", "partial": "yellow", "outdated": "red", "conflict": "magenta", "not yet": "dim"}


def _steps_text(steps: list[Any]) -> Text:
    out = Text()
    for st in steps:
        d = st if isinstance(st, dict) else to_jsonable(st)
        mark = d["validity"] if "validity" in d else "valid"
        out.append(strip_controls(d["description"]))
        label = "OUTDATED" if mark == "outdated" else mark
        until = f" until {d['valid_until'][:10]}" if mark == "outdated" and d.get("valid_until") else ""
        out.append(f" [{label}{until}]", style=_MARK_STYLE.get(mark, ""))
        if d.get("relation_to_next"):
            out.append(strip_controls(f" —{d['relation_to_next']}→ "), style="cyan")
    return out


def paths_table(title: str, paths: list[Any], score_key: str = "score", limit: int | None = None) -> Table:
    """The `limit` best paths by the score the table prints, best first (ties keep their order), numbered by
    rank; the path the answer was read from is always shown, marked, wherever its score puts it."""
    rows = [p if isinstance(p, dict) else to_jsonable(p) for p in paths]
    ranked = sorted(enumerate(rows, 1), key=lambda nd: -nd[1][score_key])
    shown = [(rank, d) for rank, (_, d) in enumerate(ranked, 1) if limit is None or rank <= limit or d.get("answer")]
    t = Table(title=plain(title), title_justify="left")
    t.add_column("#", justify="right")
    t.add_column("score", justify="right")
    t.add_column("path (relation labels, validity markers)", overflow="fold")
    for rank, d in shown:
        text = _steps_text(d["steps"])
        if d.get("answer"):
            text = Text.assemble(("answer: ", "bold"), text)
        t.add_row(str(rank), f"{d[score_key]:.3f}", text)
    return t


def stdout_text(text: str) -> None:
    """A line of user text on stdout, without control characters (`--json` carries the stored text)."""
    sys.stdout.write(strip_controls(text) + "\n")
    sys.stdout.flush()


def warnings(items: list[str]) -> None:
    """Each warning as one line on stderr."""
    for w in items:
        warning_line(w)


def ask_result(r: Any) -> None:
    """The short answer on stdout; its top paths and sources on stderr."""
    stdout_text(r.answer)
    when = f"as of {r.as_of[:10]}" if r.as_of else "current state"
    show(plain(f"{r.answer_id} · plan: {r.plan} · {when} · sources: {', '.join(r.source_refs) or '—'}", "dim"))
    if r.paths:
        show(paths_table("evidence paths", r.paths, limit=5))
    show(plain(f"tracecli trace {r.answer_id}  shows the full evidence", "dim"))
    warnings(r.warnings)


def trace_result(r: Any, show_all: bool = False) -> None:
    """The answer, its paths, events and claims; the messages it cites (context-only ones with `show_all`)."""
    when = f"as of {r.as_of[:10]}" if r.as_of else "current state"
    show(f"[bold]Q:[/] {safe(r.question)}\n[bold]A:[/] {safe(r.answer)}   "
         f"[dim]({safe(r.plan)}, {when}{', abstained' if r.abstained else ''})[/]")
    if r.paths:
        show(paths_table("paths, re-ranked by the answer (§II-G)", r.paths, score_key="trace_score", limit=8))
    if getattr(r, "candidates", None):
        show(table("candidates: what each evidence source proposed (the winner answers)",
                   ["", "source", "score", "status", "event", "sentence", "why"],
                   [["✓" if c.get("won") else "", c.get("source"), f"{c.get('score', 0):.3f}", c.get("status"),
                     c.get("event_id"), c.get("text"), c.get("why", "")] for c in r.candidates]))
    if r.events:
        show(table("events", ["event", "validity", "valid until", "time", "description"],
                   [[e["id"], e.get("validity_marker", "missing"), (e.get("valid_until") or "")[:10],
                     (e.get("time_anchor") or "")[:10], e.get("description", "")] for e in r.events]))
    if r.claims:
        show(table("claims", ["claim", "status", "text", "history"],
                   [[c.get("id"), c.get("status"), c.get("text"), c.get("history", "")] for c in r.claims]))
    evidence = [m for m in r.messages if m.get("evidence")]
    context_only = [m for m in r.messages if not m.get("evidence")]
    if evidence or not r.abstained:
        show(_messages_table("evidence: the messages the answer cites", evidence))
    if context_only and show_all:
        show(_messages_table("context only: retrieved alongside, not cited", context_only))
    elif context_only:
        show(f"[dim]{len(context_only)} context-only message(s) not shown; tracecli trace {r.answer_id} --all lists them[/]")


def _messages_table(title: str, messages: list[dict[str, Any]]) -> Table:
    return table(title, ["ref", "speaker", "date", "text"],
                 [[m.get("ref") or m.get("source_ref") or m.get("id"), m.get("speaker", ""), (m.get("timestamp") or "")[:10],
                   m.get("text", "(forgotten or missing)")] for m in messages])


def forget_receipt(r: Any) -> None:
    """The deletion receipt: what went, per table, and what was compiled again."""
    head = "forget (dry run: nothing was changed)" if r.dry_run else f"forget receipt {r.id}"
    ids = ", ".join(r.message_ids[:8]) + (f" … (+{len(r.message_ids) - 8})" if len(r.message_ids) > 8 else "")
    facts = [
        ["target", f"{r.kind} {', '.join(r.targets)}"],
        ["messages", f"{len(r.message_ids)}: {ids}"],
        ["conversations touched", ", ".join(r.conversation_ids)],
        ["conversations removed", ", ".join(r.conversations_removed) or "none"],
        ["sessions removed", len(r.sessions_removed)],
        ["wiki compiled again" if not r.dry_run else "wiki to compile again", ", ".join(r.wiki_recompiled) or "none"],
        ["storage rewritten", "yes" if r.vacuumed else "no"],
        *([["storage", r.storage]] if r.storage else []),
        ["at", f"{r.created_at} ({r.elapsed_s:.2f}s)"],
    ]
    rows = [[c.table, c.removed, c.added or ""] for c in r.counts if c.removed or c.added]
    show(table(head, ["", ""], facts), table("rows per table", ["table", "removed", "re-derived"], rows))


def transfer_counts(title: str, tables: list[Any]) -> None:
    """Rows per table that an export wrote or an import inserted."""
    show(table(title, ["table", "rows"], [[t.table, t.rows] for t in tables]))
