"""`tracecli forget KIND TARGET...`: delete messages and everything derived from them, with a receipt.

Thin: parse options, open the store, call `Memory.forget_receipt` (`tracecli.forget.forget`), render.
"""

from __future__ import annotations

from typing import Annotated

import typer

from tracecli import render
from tracecli.commands.common import DEFAULT_DB, DEFAULT_NAMESPACE, DbOpt, JsonOpt, NamespaceOpt, guarded, memory

KindArg = Annotated[str, typer.Argument(help="What to forget: message | session | conversation | speaker | namespace.", show_default=False)]
TargetsArg = Annotated[
    list[str],
    typer.Argument(help="Message ids or refs (s2-m12, or CONV:s2-m12), session ids, conversation ids, speaker names or namespaces.",
                   show_default=False),
]


def forget_cmd(
    kind: KindArg,
    targets: TargetsArg,
    conversation: Annotated[str | None, typer.Option("--conversation", help="Look the target up in this conversation only.")] = None,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be deleted and regenerated; change nothing.")] = False,
    vacuum: Annotated[bool, typer.Option("--vacuum/--no-vacuum", help="Rewrite the file afterwards so the deleted bytes leave it (slow on very large files).")] = True,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Forget messages and everything derived from them, and print a deletion receipt.

    Notes, vectors and full-text rows go; events resting only on forgotten
    messages go with their edges; `updates` edges and validity are recomputed,
    so when a newer value is forgotten the older fact is current again; the
    wiki of the conversation is compiled again without the forgotten text;
    stored answers and LLM cache entries that carried it are dropped. The file
    is then VACUUMed. Targets are looked up in one namespace (--namespace,
    else TRACECLI_NAMESPACE, else `default`); `forget namespace NAME` takes
    the namespace itself as the target. Examples:

      tracecli forget message s3-m4 --conversation alice-bob-plans --dry-run

      tracecli forget speaker Bob --conversation alice-bob-plans

      tracecli forget namespace alice
    """
    with memory(db, namespace) as mem:
        receipt = mem.forget_receipt(kind, targets, conversation=conversation, dry_run=dry_run, vacuum=vacuum)
    if as_json:
        render.emit_json(receipt)
    else:
        render.forget_receipt(receipt)
    render.warnings(receipt.warnings)


def register(app: typer.Typer) -> None:
    """Add `forget` to the main app."""
    app.command("forget")(guarded(forget_cmd))


__all__ = ["register"]
