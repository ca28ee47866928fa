"""The `tracecli` command: parse options, open the store, call one stage, render.

No SQL, scoring or prompt text lives here. Exit codes: 0 ok, 1 a failed check
or no answer, 2 bad usage or bad input.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tracecli import __version__, render
from tracecli.commands.common import (
    DEFAULT_DB,
    DEFAULT_NAMESPACE,
    DbOpt,
    F,
    JsonOpt,
    NamespaceOpt,
    TraceGroup,
    for_stage,
    guarded,
    memory,
    progress,
    reading_memory,
)
from tracecli.commands.wiki import compile_table
from tracecli.errors import BadInput

if TYPE_CHECKING:
    from tracecli.api import Memory

app = typer.Typer(
    cls=TraceGroup,
    help="State-aware memory over long conversations, in one SQLite file.\n\n"
    "Typical run: tracecli update chat.json (ingest → build-graph → compile-wiki) → "
    'ask "where is Alice going now?" → trace ANSWER_ID.',
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"tracecli {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main_options(
    version: Annotated[bool, typer.Option("--version", callback=_show_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    pass


def command(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    """`app.command` with error handling."""

    def deco(func: F) -> F:
        app.command(*args, **kwargs)(guarded(func))
        return func

    return deco


@command("ingest")
def ingest_cmd(
    files: Annotated[list[Path], typer.Argument(help="Input files (native JSON, LoCoMo, LongMemEval, ChatGPT export, JSONL).", show_default=False)],
    fmt: Annotated[str, typer.Option("--format", help="auto|native|locomo|longmemeval|chatgpt|jsonl")] = "auto",
    conversation: Annotated[str | None, typer.Option("--conversation", help="Conversation id to store under (one file only).")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", envvar="TRACECLI_NAMESPACE", help="Namespace (user/agent) to store the conversations in; overrides the file's 'namespace' field (default: that field, else 'default'; env TRACECLI_NAMESPACE).")] = None,
    gap_hours: Annotated[float, typer.Option("--gap-hours", help="Flat message lists: start a new session after this many hours of silence.")] = 4.0,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Load chat files into the database: messages, notes, embeddings, full-text index.

    Re-ingesting the same file adds nothing; a file with new messages of a known
    conversation appends only those. Every file is validated before anything is
    written, and each file is written in one transaction.
    """
    from tracecli.ingest import parse_inputs
    from tracecli.ingest.pipeline import check_parsed

    parsed = parse_inputs(files, fmt, conversation_id=conversation, namespace=namespace, gap_hours=gap_hours)
    check_parsed(None, parsed)  # clashes between the files refused before the database is opened (or made)
    with memory(db, namespace, create=True) as mem, progress(not as_json) as update:
        results = mem.ingest_parsed(parsed, progress=lambda path: for_stage(update, f"ingest {path.name}: embedding"))
    if as_json:
        render.emit_json({"files": results})
    else:
        render.ingest_results(results)


@command("update")
def update_cmd(
    files: Annotated[list[Path] | None, typer.Argument(help="Chat files to ingest first (any format `ingest` reads); none: only build and compile what is new.", show_default=False)] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto|native|locomo|longmemeval|chatgpt|jsonl")] = "auto",
    conversation: Annotated[str | None, typer.Option("--conversation", help="Conversation id to store one file under; only this conversation is built and compiled.")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", envvar="TRACECLI_NAMESPACE", help="Namespace to store the files in and to update (default: the files' own, else 'default'; env TRACECLI_NAMESPACE).")] = None,
    gap_hours: Annotated[float, typer.Option("--gap-hours", help="Flat message lists: start a new session after this many hours of silence.")] = 4.0,
    extractor: Annotated[str, typer.Option("--extractor", help="auto (LLM when configured, else rules) | rules | llm")] = "auto",
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not reuse cached LLM replies.")] = False,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Ingest FILEs (if any), then build the graph and compile the wiki for everything new, in one process.

    The same as `ingest`, `build-graph` and `compile-wiki` in turn, but the models
    load once and there is one progress display (stderr). The namespaces updated
    are those the files were stored in (no files: --namespace, else 'default').
    --json prints one receipt: {"ingest": {"files": [...]}, "build_graph": [...],
    "compile_wiki": [...], "seconds": {...}}.
    """
    from tracecli.ingest import parse_inputs
    from tracecli.ingest.pipeline import check_parsed

    parsed = parse_inputs(files or [], fmt, conversation_id=conversation, namespace=namespace, gap_hours=gap_hours)
    check_parsed(None, parsed)  # clashes between the files refused before the database is opened (or made)
    with memory(db, namespace, create=bool(parsed), use_llm_cache=not no_cache) as mem, \
            progress(not as_json) as update:
        done = mem.run_update(parsed, conversation=conversation, extractor=extractor, progress=update)
    if as_json:
        render.emit_json(done.as_json())
        return
    if parsed:
        render.ingest_results(done.ingest)
    render.build_results(done.build_graph)
    compile_table(done.compile_wiki)
    render.show(render.plain("update: " + ", ".join(f"{k.replace('_', '-')} {v:.1f}s" for k, v in done.seconds.items())))


@command("build-graph")
def build_graph_cmd(
    conversation: Annotated[str | None, typer.Option("--conversation", help="Only this conversation (default: all of the namespace).")] = None,
    extractor: Annotated[str, typer.Option("--extractor", help="auto (LLM when configured, else rules) | rules | llm")] = "auto",
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Drop this conversation's graph and build it again.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not reuse cached LLM replies.")] = False,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Build TRACE's temporal evidence graph: events, typed edges, topics, validity.

    Incremental: only sessions not yet in the graph are processed, and they link
    into the existing graph. Superseded events get validity 0 and a valid_until.
    """
    with memory(db, namespace, use_llm_cache=not no_cache) as mem, progress(not as_json) as update:
        results = mem.build_graph(conversation=conversation, extractor=extractor, rebuild=rebuild,
                                  progress=for_stage(update, "build-graph: sessions"))
    if as_json:
        render.emit_json({"conversations": results})
    else:
        render.build_results(results)


@command("ask")
def ask_cmd(
    question: Annotated[str | None, typer.Argument(help="The question, e.g. \"Where is Alice moving?\"", show_default=False)] = None,
    conversation: Annotated[str | None, typer.Option("--conversation", help="Ask about this conversation (default: all of the namespace).")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="Answer from the state valid at this date (e.g. 2024-03-01).")] = None,
    budget: Annotated[int | None, typer.Option("--budget", help="Context budget in tokens (whitespace words).")] = None,
    batch: Annotated[Path | None, typer.Option("--batch", help="JSONL file: one {question, conversation?, as_of?} per line; prints one answer per line.")] = None,
    bring_up_to_date: Annotated[bool, typer.Option("--update", help="First build the graph and compile the wiki for messages they have not seen (as `tracecli update`).")] = False,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
    ablate: Annotated[list[str] | None, typer.Option(
        "--ablate", metavar="PART", show_default=False,
        help="Switch a part off to see what it adds: wiki (claims in the context), paths (graph paths in the "
             "context), frames (the frame answer step), graph (no edges, revisions or wiki: the same reader over "
             "flat evidence), choice (the learned choice of the answer's sentence: the rule step's own answers). "
             "Repeatable.")] = None,
) -> None:
    """Answer a question from the current state (or --as-of a date), citing the messages behind it.

    Superseded facts appear only marked [OUTDATED] and never answer a question
    about now. Only the namespace's conversations are searched (default
    'default'); a --conversation of another namespace is an error. Exit 1 when
    there is not enough evidence to answer. When some messages are not in the
    graph or wiki yet, one warning line says so (--update takes them in first).
    """
    from tracecli.query.batch import read_batch
    from tracecli.query.settings import AskSettings, check_ablations

    if (question is None) == (batch is None):
        raise BadInput("give a QUESTION or --batch FILE (not both)")
    items = read_batch(batch) if batch is not None else None
    # ask reads (it never creates or upgrades a file); storing its answer is a record, not its purpose
    settings = AskSettings(ablate=frozenset(check_ablations(ablate)))
    with memory(db, namespace, upgrade=bring_up_to_date, ask_settings=settings) as mem:
        if bring_up_to_date:
            with progress(not as_json and items is None) as update:
                mem.run_update(conversation=conversation, progress=update)
        if items is not None:
            for item in items:
                res = mem.answer(item.question, conversation=item.conversation or conversation,
                                 as_of=item.as_of or as_of, budget=budget)
                render.emit_json_line(res)
                render.warnings(res.warnings)
            _warn_pending(mem, conversation)
            return
        result = mem.answer(question or "", conversation=conversation, as_of=as_of, budget=budget)
        _warn_pending(mem, conversation)
    if as_json:
        render.emit_json(result)
    else:
        render.ask_result(result)
    if as_json:
        render.warnings(result.warnings)
    if result.abstained:
        raise typer.Exit(1)


def _warn_pending(mem: Memory, conversation: str | None) -> None:
    """One stderr line when the graph or the wiki has not seen some of the messages asked about."""
    waiting = mem.pending(conversation=conversation)
    if waiting.any:
        render.warning_line(waiting.warning())


@command("trace")
def trace_cmd(
    answer_id: Annotated[str, typer.Argument(help="The answer id that `tracecli ask` printed (ans_…).", show_default=False)],
    show_all: Annotated[bool, typer.Option("--all", help="Also list the context-only messages (retrieved, not cited).")] = False,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Replay an answer: its evidence paths with relation labels and validity markers, events, claims, messages.

    The messages the answer cites come first, as its evidence; messages the
    context only showed alongside them are counted, and listed with --all
    (--json lists every message with "evidence": true or false). Only answers
    asked in the same namespace are found.
    """
    with reading_memory(db, namespace) as mem:
        result = mem.trace_result(answer_id)
    if as_json:
        render.emit_json(result)
    else:
        render.trace_result(result, show_all=show_all)


@command("stats")
def stats_cmd(db: DbOpt = DEFAULT_DB, as_json: JsonOpt = False) -> None:
    """Counts per table and per conversation, the embedding model, the schema version, LLM cost per stage."""
    with reading_memory(db) as mem:
        st = mem.file_stats()
    if as_json:
        render.emit_json(st)
    else:
        render.stats(st)


def _register_command_groups() -> None:
    """Command groups that live in tracecli/commands/ (each adds its commands to `app`)."""
    from tracecli.commands import audit, doctor, forget, graph, transfer, wiki
    from tracecli.commands import eval as eval_cmd
    from tracecli.commands import mcp

    wiki.register(app)
    doctor.register(app)
    graph.register(app)
    audit.register(app)
    eval_cmd.register(app)
    forget.register(app)
    transfer.register(app)
    mcp.register(app)


_register_command_groups()


def main() -> None:
    """Console-script entry point."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    app()


if __name__ == "__main__":
    main()
