"""`tracecli export` and `tracecli import`: move conversations (and their derived layers) between files.

Thin: parse options, open the store, call `tracecli.transfer`, render.
`register(app)` adds the commands to the main Typer app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracecli import render
from tracecli.commands.common import DEFAULT_DB, DbOpt, JsonOpt, guarded
from tracecli.errors import BadInput


def export_cmd(
    fmt: Annotated[str | None, typer.Option("--format", help="json (one document; without --derived also a file `tracecli ingest` reads) | jsonl (one record per line, for `tracecli import`). Default: jsonl when --out ends in .jsonl, else json.", show_default=False)] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", help="Only the conversations of this namespace.")] = None,
    conversation: Annotated[str | None, typer.Option("--conversation", help="Only this conversation.")] = None,
    derived: Annotated[bool, typer.Option("--derived", help="Also export the derived layers: events, edges, topics, claims and their op log, trajectories, snapshots, wiki pages.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write here (default: stdout).", show_default=False)] = None,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Export conversations in the native input format, optionally with every derived layer.

    Prints the export on stdout unless --out is given; with --out and --json,
    a JSON summary of what was written goes to stdout instead. Deterministic:
    the same database gives byte-identical output. Vectors and full-text
    indexes are not exported (`tracecli import` rebuilds them), nor the LLM
    cache, stored answers or the forget log.
    """
    from tracecli.store import read_store
    from tracecli.transfer import export_data

    chosen = fmt or ("jsonl" if out is not None and out.suffix.lower() == ".jsonl" else "json")
    if as_json and out is None and chosen != "json":
        raise BadInput(f"--json prints the export as one JSON document on stdout; drop --format {chosen} or give --out FILE")
    with read_store(db) as store:
        text, result = export_data(store, chosen, namespace=namespace, conversation_id=conversation, derived=derived, out=out)
    if out is None:
        render.emit_text(text)
        return
    if as_json:
        render.emit_json(result)
    else:
        render.transfer_counts(f"exported to {out} ({result.format}, {result.bytes:,} bytes, {result.elapsed_s:.1f}s)", result.tables)


def import_cmd(
    file: Annotated[Path, typer.Argument(help="A file written by `tracecli export` (json or jsonl).", show_default=False)],
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Import a `tracecli export` file: same ids, derived rows verbatim, vectors and indexes rebuilt.

    The file is validated whole before anything is written, and written in one
    transaction. A conversation already in the database is skipped when its
    content is identical and refused (exit 2, nothing written) when it differs.
    """
    from tracecli.providers.embeddings import get_embedder
    from tracecli.store import open_store
    from tracecli.transfer import import_data, read_export

    data = read_export(file)
    with open_store(db) as store:
        result = import_data(store, data, get_embedder())
    if as_json:
        render.emit_json(result)
        return
    render.transfer_counts(f"imported {result.file} ({result.elapsed_s:.1f}s)", result.tables)
    skipped = [c.conversation_id for c in result.conversations if c.status == "unchanged"]
    if skipped:
        render.show(render.plain(f"note: already present and identical, left as they were: {', '.join(skipped)}"))


def register(app: typer.Typer) -> None:
    """Add `export` and `import` to the main app."""
    app.command("export")(guarded(export_cmd))
    app.command("import")(guarded(import_cmd))
