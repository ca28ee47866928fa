"""`tracecli doctor`: check the LLM endpoint, the embedder, SQLite + sqlite-vec and the database file.

Registered on the main app with `register(app)`. This module does not use
postponed annotations: Typer reads the `Annotated` option aliases of
`tracecli.commands.common` from the signature.
"""

from typing import Any

import typer

from tracecli import render
from tracecli.commands.common import DEFAULT_DB, DbOpt, JsonOpt, guarded

COMMAND_NAME = "doctor"


def render_report(report: Any) -> None:
    """One row per check on stderr: status and what was found (never a key)."""
    llm, emb, sq, db = report.llm, report.embedder, report.sqlite, report.database

    def status(check: Any) -> str:
        return "ok" if check.ok else "FAILED"

    if llm.configured:
        latency = f", {llm.latency_ms:.0f} ms" if llm.latency_ms is not None else ""
        llm_detail = f"{llm.provider}: {llm.model} at {llm.url} (key {'set' if llm.api_key_set else 'not set'}){latency}"
    else:
        llm_detail = "not configured (offline mode; set TRACECLI_LLM_URL and TRACECLI_LLM_MODEL to use one)"
    emb_detail = f"{emb.name}: {emb.id or '?'} ({emb.dimension or '?'}-d{', loaded' if emb.loaded else ''})"
    rows = [
        ["llm", status(llm), llm.error or llm_detail],
        ["embedder", status(emb), emb.error or emb_detail],
        ["sqlite", status(sq), sq.error or f"SQLite {sq.sqlite_version}, sqlite-vec {sq.vec_version}"],
    ]
    if db is not None:
        if db.error:
            db_detail = db.error
        elif not db.exists:
            db_detail = f"{db.path}: not created yet"
        else:
            pending = f", {len(db.pending_migrations)} migration(s) pending" if db.pending_migrations else ""
            model = f", vectors of {db.embedding_model} ({db.embedding_dim}-d)" if db.embedding_model else ""
            db_detail = f"{db.path}: schema v{db.schema_version} of {db.latest_schema_version}{pending}{model}"
        rows.append(["database", status(db), db_detail])
    render.show(render.table("tracecli doctor", ["check", "status", "details"], rows))


def is_registered(app: typer.Typer) -> bool:
    """True when `app` already has a `doctor` command."""
    return any(info.name == COMMAND_NAME for info in app.registered_commands)


def register(app: typer.Typer) -> None:
    """Add `tracecli doctor` to `app` (a no-op if it is already there)."""
    if is_registered(app):
        return
    def doctor_cmd(db: DbOpt = DEFAULT_DB, as_json: JsonOpt = False) -> None:
        """Check that the configured LLM endpoint, embedder, SQLite + sqlite-vec and database work.

        Sends one tiny request to the LLM endpoint when one is configured (no
        retries, short timeout), reads the database read-only and never creates
        it, and does not load the embedding model. Exit 0 when every check
        passes, 1 when one fails. The API key is never printed.
        """
        from tracecli.errors import CheckFailed
        from tracecli.providers.doctor import run_doctor
        from tracecli.providers.llm import LLMSettings

        report = run_doctor(db, LLMSettings.from_env(), None)
        if as_json:
            render.emit_json(report.to_dict())
        else:
            render_report(report)
        if not report.ok:
            raise CheckFailed("; ".join(report.problems()))

    app.command(COMMAND_NAME)(guarded(doctor_cmd))


__all__ = ["COMMAND_NAME", "is_registered", "register", "render_report"]
