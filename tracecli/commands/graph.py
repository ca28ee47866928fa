"""`tracecli graph show` and `tracecli graph export`: look at the evidence graph.

Registered on the main app with `register(app)`, which adds a `graph` sub-app.
Like `commands/doctor.py`, this module does not use postponed annotations:
Typer reads the `Annotated` option aliases of `tracecli.commands.common`.
"""

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from tracecli import render
from tracecli.commands.common import DEFAULT_DB, DEFAULT_NAMESPACE, DbOpt, JsonOpt, NamespaceOpt, guarded

GROUP_NAME = "graph"
_MARK_STYLE = {"valid": "green", "partial": "yellow", "outdated": "red"}


def _mark(marker: Optional[str]) -> Any:
    from tracecli import render

    return render.plain(marker or "", _MARK_STYLE.get(marker or "", ""))


def render_event_detail(detail: Any) -> None:
    """The event, its edges and its source messages as tables on stderr."""
    from tracecli import render
    from tracecli.graph.dates import format_date

    ev = detail.event
    when = ""
    if ev.event_time:
        import datetime as dt

        try:
            when = format_date(dt.date.fromisoformat(ev.event_time[:10]), ev.event_time_granularity or "day")
        except ValueError:
            when = ev.event_time
    fact = ""
    if ev.facet:
        fact = f"{ev.facet} = {'not ' if ev.negated else ''}{ev.value}"
    rows = [
        ["type", ev.type],
        ["subject", ev.subject + (f" (said by {ev.speaker})" if ev.speaker and ev.speaker != ev.subject else "")],
        ["fact", fact],
        ["time anchor", ev.time_anchor or ""],
        ["event time", f"{when} ({ev.event_time})" if when else ""],
        ["validity", f"{ev.validity_marker} (v={ev.validity:g})"],
        ["valid until", ev.valid_until or ""],
        ["confidence", f"{ev.confidence:.2f}"],
        ["provenance", ev.provenance + (f", cue '{ev.cue}'" if ev.cue else "")],
        ["session / topic", f"{ev.session_id} / {ev.topic_id or '—'}"],
        ["description", ev.description],
    ]
    render.show(render.table(f"event {ev.id}", ["field", "value"], rows))
    edge_rows = []
    for e in [*detail.edges_out, *detail.edges_in]:
        arrow = f"—{e.label}→ {e.other_id}" if e.direction == "out" else f"←{e.label}— {e.other_id}"
        other = e.other_description if e.other_kind == "event" else f"({e.other_kind}) {e.other_description}"
        edge_rows.append([
            arrow, e.family, f"{e.confidence:.2f}", e.invalidated_at or "", e.other_validity_marker or "",
            other, e.justification,
        ])
    if edge_rows:
        table = render.table("edges (out, then in)", ["edge", "family", "conf.", "invalidated at", "other end", "other event", "justification"], [])
        for row in edge_rows:
            table.add_row(*[render.plain(v) for v in row[:4]], _mark(row[4] or None), render.plain(row[5]),
                          render.plain(row[6]))
        render.show(table)
    else:
        render.show("[dim]no edges[/]")
    if detail.messages:
        render.show(render.table(
            "source messages", ["ref", "speaker", "date", "text"],
            [[m.source_ref or m.id, m.speaker, (m.timestamp or "")[:10], m.text] for m in detail.messages],
        ))


def is_registered(app: typer.Typer) -> bool:
    """True when `app` already has a `graph` group."""
    return any(
        (info.name or (info.typer_instance.info.name if info.typer_instance else None)) == GROUP_NAME
        for info in app.registered_groups
    )


def register(app: typer.Typer) -> None:
    """Add `tracecli graph show|export` to `app` (a no-op if it is already there)."""
    if is_registered(app):
        return
    group = typer.Typer(
        name=GROUP_NAME,
        help="Look at the evidence graph: one event with its edges and sources, or export the whole graph.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        pretty_exceptions_show_locals=False,
        add_completion=False,
    )

    def show_cmd(
        event_id: Annotated[str, typer.Argument(help="The event id (ev_…), e.g. from `tracecli trace` or `graph export`.", show_default=False)],
        namespace: NamespaceOpt = DEFAULT_NAMESPACE,
        db: DbOpt = DEFAULT_DB,
        as_json: JsonOpt = False,
    ) -> None:
        """Show one event: its fields, validity, edges in and out, and the messages it came from.

        Each edge shows its relation label, confidence, justification and
        invalidation time, and the validity marker (valid / partial / outdated)
        of the event at the other end. Exit 2 for an unknown event id or one of
        another namespace.
        """
        from tracecli.graph.inspect import event_detail
        from tracecli.store import read_store

        with read_store(db) as store:
            detail = event_detail(store, event_id, namespace=namespace)
        if as_json:
            render.emit_json(detail)
        else:
            render_event_detail(detail)

    def export_cmd(
        fmt: Annotated[Optional[str], typer.Option("--format", help="json (default) | graphml (networkx, Gephi, yEd) | dot (Graphviz)", show_default=False)] = None,
        conversation: Annotated[Optional[str], typer.Option("--conversation", help="Only this conversation (default: every built one of the namespace).")] = None,
        out: Annotated[Optional[Path], typer.Option("--out", help="Write to this file instead of stdout.", dir_okay=False)] = None,
        namespace: NamespaceOpt = DEFAULT_NAMESPACE,
        db: DbOpt = DEFAULT_DB,
        as_json: JsonOpt = False,
    ) -> None:
        """Export the evidence graph: event, session and topic vertices and every edge.

        Edges carry their label, family (support / evolution / structural),
        confidence, justification and invalidation time; events carry their
        validity marker. JSON is {"nodes": [...], "edges": [...]}. Prints to
        stdout unless --out is given; with --json the graph goes to stdout as
        JSON, or with --out a JSON summary of what was written.
        """
        from tracecli.errors import BadInput
        from tracecli.graph.inspect import EXPORT_FORMATS, export_graph, serialise
        from tracecli.store import read_store

        chosen = (fmt or "json").lower().strip()
        if chosen not in EXPORT_FORMATS:
            raise BadInput(f"unknown export format '{chosen}'; choose one of {', '.join(EXPORT_FORMATS)}")
        if as_json and out is None and chosen != "json":
            raise BadInput(f"--json prints the graph as JSON on stdout; drop --format {chosen} or give --out FILE")
        with read_store(db) as store:
            export = export_graph(store, conversation, namespace=namespace)
        text = serialise(export, chosen)
        if out is None:
            render.emit_text(text)
            return
        from tracecli.files import write_out

        write_out(out, text)
        if as_json:
            render.emit_json({"out": str(out), "format": chosen, "vertices": len(export.nodes), "edges": len(export.edges)})
        else:
            render.show(render.plain(f"wrote {len(export.nodes)} vertices and {len(export.edges)} edges to {out} ({chosen})", "dim"))

    group.command("show")(guarded(show_cmd))
    group.command("export")(guarded(export_cmd))
    app.add_typer(group, name=GROUP_NAME)


__all__ = ["GROUP_NAME", "is_registered", "register", "render_event_detail"]
