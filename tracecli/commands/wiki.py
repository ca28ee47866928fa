"""`tracecli compile-wiki`, `tracecli wiki list|show|export` and `tracecli claims history`.

Thin: parse options, open the store, call one function of `tracecli.wiki`,
render. `register(app)` adds the commands to the main Typer app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tracecli import render

from tracecli.commands.common import (
    DEFAULT_DB,
    DEFAULT_NAMESPACE,
    DbOpt,
    JsonOpt,
    NamespaceOpt,
    for_stage,
    memory,
    progress,
    reading_memory,
)
from tracecli.commands.common import guarded as _guarded

ConvOpt = Annotated[str | None, typer.Option("--conversation", help="Only this conversation (default: all of the namespace).")]


# -- compile-wiki ------------------------------------------------------------------------------


def compile_wiki_cmd(
    conversation: ConvOpt = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not reuse cached LLM replies.")] = False,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Compile the Memory Wiki: grounded claims, their ADD/REVISE/DEPRECATE log, trajectories and pages.

    Needs build-graph first. Incremental: only sessions not compiled yet are
    read, and only pages whose claims changed are rewritten. With an LLM
    endpoint configured, claims, trajectory decisions and pages are
    model-written and validated, else deterministic.
    """
    with memory(db, namespace, use_llm_cache=not no_cache) as mem, progress(not as_json) as update:
        results = mem.compile_wiki(conversation=conversation, progress=for_stage(update, "compile-wiki: sessions"))
    if as_json:
        render.emit_json({"conversations": results})
        return
    compile_table(results)


def compile_table(results: list[Any]) -> None:
    """compile-wiki's results as a table on stderr, and which conversations wait for build-graph."""
    rows = [
        [r.conversation_id, r.mode, f"{r.sessions_compiled}/{r.sessions_total}", f"{r.snapshots_new} / {r.snapshots_total}",
         f"{r.claims_new} / {r.claims_total}", ", ".join(f"{k} {v}" for k, v in r.claims_by_status.items()),
         ", ".join(f"{k} {v}" for k, v in r.ops_new.items()) or "—", r.ungrounded_dropped,
         f"{r.trajectories_new} / {r.trajectories_total}",
         ", ".join(f"{k} {v}" for k, v in r.pages_by_type.items()), f"{r.pages_written} / {r.pages_unchanged}",
         r.index_only_trajectories, f"{r.elapsed_s:.1f}s"]
        for r in results
    ]
    render.show(render.table("compile-wiki", [
        "conversation", "mode", "sessions", "snapshots new/total", "claims new/total", "claims by status", "new ops",
        "ungrounded dropped", "trajectories new/total", "pages", "pages written/unchanged", "index-only", "time"], rows))
    waiting = [r for r in results if r.sessions_awaiting_graph]
    for r in waiting:
        render.show(render.plain(f"note: {r.conversation_id}: {r.sessions_awaiting_graph} session(s) wait for "
                                 "`tracecli build-graph`"))


# -- wiki list / show / export --------------------------------------------------------------------

wiki_app = typer.Typer(
    help="Inspect the Memory Wiki: list pages, show one in the terminal, export them as markdown files.",
    no_args_is_help=True,
)


def _page_json(p: Any, markdown: bool = False) -> dict[str, Any]:
    out = {
        "id": p.id, "conversation_id": p.conversation_id, "slug": p.slug, "type": p.type, "title": p.title,
        "trajectories": p.trajectories, "links": p.links, "rescue": p.rescue, "origin": p.origin,
        "updated_at": p.updated_at,
    }
    if markdown:
        out["markdown"] = p.markdown
    return out


@wiki_app.command("list")
@_guarded
def wiki_list_cmd(
    conversation: ConvOpt = None,
    page_type: Annotated[str | None, typer.Option("--type", help="Only pages of this type: index|entity|inventory|topic.")] = None,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """List wiki pages: slug, type, title and how many trajectories each links."""
    with reading_memory(db, namespace) as mem:
        pages = mem.pages(conversation=conversation, page_type=page_type)
    if as_json:
        render.emit_json({"pages": [_page_json(p) for p in pages]})
        return
    render.show(render.table("wiki pages", ["conversation", "slug", "type", "title", "trajectories", "origin"], [
        [p.conversation_id, p.slug, p.type + (" (rescue)" if p.rescue else ""), p.title, len(p.trajectories), p.origin]
        for p in pages
    ]))


@wiki_app.command("show")
@_guarded
def wiki_show_cmd(
    slug: Annotated[str, typer.Argument(help="The page's slug (see `tracecli wiki list`) or id.", show_default=False)],
    conversation: ConvOpt = None,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Show one page as rendered markdown, with its claim and source-message citations."""
    from rich.console import Console
    from rich.markdown import Markdown

    with reading_memory(db, namespace) as mem:
        page = mem.page(slug, conversation=conversation)
    if as_json:
        render.emit_json(_page_json(page, markdown=True))
        return
    # The page is the output the user asked for: stdout, so it pipes into a pager or a file. Markdown is not
    # Rich markup; its control characters are removed like everywhere user text is shown (--json keeps them).
    Console(highlight=False).print(Markdown(render.strip_controls(page.markdown)))


@wiki_app.command("export")
@_guarded
def wiki_export_cmd(
    directory: Annotated[Path, typer.Argument(help="Where to write DIR/<conversation>/<slug>.md.", show_default=False)],
    conversation: ConvOpt = None,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Export the wiki as an Obsidian vault: a note per page and per claim, with YAML front matter and [[links]]."""
    with reading_memory(db, namespace) as mem:
        written = mem.export_wiki(directory, conversation=conversation)
    if as_json:
        render.emit_json({"directory": str(directory), "files": [
            {"conversation_id": c, "kind": "claim" if s.startswith("claims/") else "page", "slug": s, "path": str(p)}
            for c, s, p in written]})
        return
    per: dict[str, list[tuple[str, Path]]] = {}
    for c, name, path in written:
        per.setdefault(c, []).append((name, path))
    render.show(render.table(f"exported to {directory}", ["conversation", "pages", "claims", "folder"], [
        [c, sum(not n.startswith("claims/") for n, _ in files), sum(n.startswith("claims/") for n, _ in files),
         str(files[0][1].parent)] for c, files in per.items()]))


# -- claims history --------------------------------------------------------------------------------

claims_app = typer.Typer(help="Inspect claims: the ADD → REVISE → DEPRECATE history of a fact.", no_args_is_help=True)


@claims_app.command("history")
@_guarded
def claims_history_cmd(
    query: Annotated[str, typer.Argument(help="A claim id (or id prefix, cl_…) or words the claims contain.", show_default=False)],
    conversation: ConvOpt = None,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Show the history of the facts matching QUERY: every op in order, with dates and source quotes."""
    with reading_memory(db, namespace) as mem:
        chains = mem.claim_chains(query, conversation=conversation)
    if as_json:
        render.emit_json({"chains": chains})
        return
    for ch in chains:
        rows = [[s.n, s.op, (s.date or "")[:10], s.claim_id, s.text,
                 s.status if s.op_status == s.status else f"{s.status} (was {s.op_status})", s.quote, ", ".join(s.source_refs)]
                for s in ch.steps]
        title = f"{ch.conversation_id} · {ch.fact} · now: {'; '.join(ch.current) or 'nothing current'}"
        render.show(render.table(title, ["#", "op", "date", "claim", "text", "status", "quote", "source"], rows))


def register(app: typer.Typer) -> None:
    """Add compile-wiki and the `wiki` and `claims` groups to the main app."""
    app.command("compile-wiki")(_guarded(compile_wiki_cmd))
    app.add_typer(wiki_app, name="wiki")
    app.add_typer(claims_app, name="claims")
