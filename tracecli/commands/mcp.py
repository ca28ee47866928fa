"""`tracecli mcp`: serve the memory to agents over the Model Context Protocol.

Thin: parse options, hand them to `tracecli.mcp_server.serve`. The SDK is
imported only when the command runs, so `tracecli --help` stays light.
"""

from __future__ import annotations

from typing import Annotated

import typer

from tracecli.commands.common import DEFAULT_DB, DEFAULT_NAMESPACE, DbOpt, guarded


def mcp_cmd(
    http: Annotated[str | None, typer.Option("--http", metavar="HOST:PORT",
                                             help="Serve streamable HTTP at http://HOST:PORT/mcp (e.g. 127.0.0.1:8765) "
                                                  "instead of stdio. There is no authentication: bind to 127.0.0.1.")] = None,
    namespace: Annotated[str, typer.Option(
        "--namespace", envvar="TRACECLI_NAMESPACE", show_default=True,
        help="The namespace tools use when a call names none (env TRACECLI_NAMESPACE).")] = DEFAULT_NAMESPACE,
    lock_namespace: Annotated[bool, typer.Option(
        "--lock-namespace", help="Refuse every call and resource of another namespace than --namespace.")] = False,
    db: DbOpt = DEFAULT_DB,
) -> None:
    """Serve the memory over the Model Context Protocol (stdio; streamable HTTP with --http).

    Tools: remember, ask, trace, forget, wiki_page, claims_history, stats; each
    returns the JSON of the matching command's --json. Resources: the wiki
    pages, wiki://NAMESPACE/SLUG. The database is created if missing. The
    client configuration (mcpServers): README, "Agents and programs".
    """
    from tracecli.mcp_server import serve

    serve(db, namespace=namespace, lock_namespace=lock_namespace, http=http)


def register(app: typer.Typer) -> None:
    """Add `mcp` to the main app."""
    app.command("mcp")(guarded(mcp_cmd))


__all__ = ["register"]
