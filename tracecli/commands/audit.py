"""`tracecli audit`: integrity and grounding checks over the whole file, and a review queue.

Registered on the main app with `register(app)`. This module does not use
postponed annotations: Typer reads the `Annotated` option aliases of
`tracecli.commands.common` from the signature.
"""

from typing import Annotated, Any, Optional

import typer

from tracecli import render
from tracecli.commands.common import DEFAULT_DB, DbOpt, JsonOpt, guarded

COMMAND_NAME = "audit"
_STATUS_STYLE = {"ok": "green", "warning": "yellow", "error": "bold red", "skipped": "dim"}


def render_report(report: Any) -> None:
    """Checks, errors and warnings, disagreements and the review queue as tables on stderr."""
    where = (f"every namespace ({', '.join(report.namespaces) or 'none'})" if report.namespace is None
             else f"namespace {report.namespace}")
    checks = render.table(
        f"tracecli audit · {report.db} · schema v{report.schema_version} of {report.latest_schema_version} · "
        f"{len(report.conversation_ids)} conversation(s) in {where}",
        ["check", "status", "checked", "errors", "warnings", "detail"], [],
    )
    for c in report.checks:
        style = _STATUS_STYLE.get(c.status, "")
        checks.add_row(*[render.plain(v) for v in (c.name, render.plain(c.status, style), c.checked, c.errors,
                                                     c.warnings, c.detail)])
    render.show(checks)
    errors = [f for f in report.findings if f.severity == "error"]
    warnings = [f for f in report.findings if f.severity == "warning"]
    if errors:
        render.show(render.table("errors", ["check", "conversation", "problem"],
                                 [[f.check, f.conversation_id or "", f.message] for f in errors]))
    if warnings:
        render.show(render.table("warnings", ["check", "conversation", "problem"],
                                 [[f.check, f.conversation_id or "", f.message] for f in warnings]))
    if report.review:
        rows = []
        for r in report.review:
            rows.append([
                "contradiction" if r.kind == "contradiction" else "low-confidence update",
                f"{r.edge_id}\n{r.confidence:.2f}",
                f"{r.newer.subject}: \"{r.newer.quote}\" ({', '.join(r.newer.source_refs)}, {(r.newer.time_anchor or '')[:10]})",
                f"{r.older.subject}: \"{r.older.quote}\" ({', '.join(r.older.source_refs)}, {(r.older.time_anchor or '')[:10]})",
                r.justification,
            ])
        render.show(render.table("review queue (confirm or correct these edges)",
                                 ["kind", "edge / conf.", "newer (quote)", "older (quote)", "why"], rows))
    verdict = "[green]no errors[/]" if report.ok else f"[bold red]{report.errors} error(s)[/]"
    render.show(f"{verdict}, {report.warnings} warning(s), {len(report.disagreements)} claim/graph disagreement(s), "
                f"{len(report.review)} item(s) to review")


def is_registered(app: typer.Typer) -> bool:
    """True when `app` already has an `audit` command."""
    return any(info.name == COMMAND_NAME for info in app.registered_commands)


def register(app: typer.Typer) -> None:
    """Add `tracecli audit` to `app` (a no-op if it is already there)."""
    if is_registered(app):
        return
    def audit_cmd(
        conversation: Annotated[Optional[str], typer.Option("--conversation", help="Only this conversation (default: all of the namespace).", show_default=False)] = None,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when any check reports an error (for CI).")] = False,
        namespace: Annotated[Optional[str], typer.Option(
            "--namespace", envvar="TRACECLI_NAMESPACE", show_default=False,
            help="Only this namespace's conversations (env TRACECLI_NAMESPACE; default: every namespace in the file).")] = None,
        db: DbOpt = DEFAULT_DB,
        as_json: JsonOpt = False,
    ) -> None:
        """Check the whole file: storage, graph, claims and wiki, stored answers; list edges to review.

        Storage: integrity and foreign keys, schema version, one vector per note
        of the recorded model, FTS in sync. Graph: source notes exist, time
        anchors parse, no `before` edge against time, validity re-derived from
        the edges equals what is stored, acyclic update chains, invalidated
        causal edges. Claims and wiki: quotes occur verbatim in their sources,
        the op log is append-only and ordered, page citations resolve, no
        trajectory is reachable only from the index. The review queue lists
        unresolved contradictions and low-confidence updates with both quotes.
        Without --namespace every namespace of the file is checked; with it,
        findings cover that namespace's conversations only (file-level checks
        still run). Changes nothing; exit 1 with --strict when there is an error.
        """
        from tracecli.audit import run_audit
        from tracecli.errors import CheckFailed
        from tracecli.store import read_store

        with read_store(db) as store:
            report = run_audit(store, conversation, namespace=namespace)
        if as_json:
            render.emit_json(report)
        else:
            render_report(report)
        if strict and not report.ok:
            first = next((f.message for f in report.findings if f.severity == "error"), "")
            raise CheckFailed(f"audit found {report.errors} error(s)" + (f"; first: {first}" if first else ""))

    app.command(COMMAND_NAME)(guarded(audit_cmd))


__all__ = ["COMMAND_NAME", "is_registered", "register", "render_report"]
