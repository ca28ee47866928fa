"""Output: rich tables on stderr (colour only on a TTY), JSON alone on stdout."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

err = Console(stderr=True, highlight=False)


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
    sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, sort_keys=False) + "\n")
    sys.stdout.flush()


def error_line(message: str) -> None:
    """One line on stderr for a failure the user can act on."""
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)


def table(title: str, columns: list[str], rows: list[list[Any]]) -> Table:
    """A rich table with the given columns and rows."""
    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*["" if v is None else str(v) for v in row])
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
    show(table("ingest", ["file", "conversation", "format", "new msgs", "already had", "new sessions", "status"], rows))


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
    rows = []
    for r in results:
        rows.append([
            r.conversation_id, r.extractor, f"{r.sessions_processed}/{r.sessions_total}",
            f"{r.events_new} (+) / {r.events_total}",
            ", ".join(f"{k} {v}" for k, v in r.events_by_type.items()),
            ", ".join(f"{k} {v}" for k, v in r.edges_by_label.items() if k not in ("member_of", "next")),
            r.updates, r.contradicts, f"{r.outdated_events} / {r.partial_events}",
            f"{r.pairs_considered:,} / {r.pairs_possible:,}", r.topics, f"{r.llm_calls} ({r.llm_cache_hits} cached)",
            f"{r.elapsed_s:.1f}s",
        ])
    show(table("build-graph", ["conversation", "extractor", "sessions built", "events new/total", "events by type",
                               "edges by label", "updates", "contradicts", "outdated / partial", "pairs considered / possible",
                               "topics", "LLM calls", "time"], rows))
