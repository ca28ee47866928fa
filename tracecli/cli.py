"""The `tracecli` command: parse options, open the store, call one stage, render.

No SQL, scoring or prompt text lives here. Exit codes: 0 ok, 1 a failed check
or no answer, 2 bad usage or bad input.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from tracecli import render
from tracecli.errors import BadInput

app = typer.Typer(
    help="State-aware memory over long conversations, in one SQLite file.\n\n"
    "Typical run: tracecli ingest chat.json → build-graph → compile-wiki → "
    'ask "where is Alice going now?" → trace ANSWER_ID.',
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)

from tracecli.commands.common import DEFAULT_DB, DEFAULT_NAMESPACE, DbOpt, F, JsonOpt, NamespaceOpt, guarded


def command(*args: Any, **kwargs: Any) -> Callable[[F], F]:
    """`app.command` with error handling."""

    def deco(func: F) -> F:
        app.command(*args, **kwargs)(guarded(func))
        return func

    return deco


def _progress(enabled: bool) -> Any:
    """A rich progress bar on a TTY, nothing on a pipe."""
    if not enabled or not sys.stderr.isatty():
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=render.err, transient=True)


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
    from tracecli.ingest import ingest_parsed, parse_inputs
    from tracecli.ingest.pipeline import check_parsed
    from tracecli.providers.embeddings import get_embedder
    from tracecli.store import open_store

    parsed = parse_inputs(files, fmt, conversation_id=conversation, namespace=namespace, gap_hours=gap_hours)
    store = open_store(db)
    try:
        check_parsed(store, parsed)
    except BaseException:
        store.close()
        raise
    embedder = get_embedder()
    results = []
    bar = _progress(not as_json)
    try:
        if bar:
            bar.start()
        for path, convs in parsed:
            task = bar.add_task(f"embedding {path.name}", total=None) if bar else None

            def progress(done: int, total: int, task: Any = task) -> None:
                if bar and task is not None:
                    bar.update(task, completed=done, total=total)

            results.append(ingest_parsed(store, path, convs, embedder, progress=progress))
    finally:
        if bar:
            bar.stop()
        store.close()
    if as_json:
        render.emit_json({"files": results})
    else:
        render.ingest_results(results)


def _chat_model(store: Any, no_cache: bool = False) -> Any:
    """The configured chat model (or the offline `none` model)."""
    from tracecli.providers.llm import LLMSettings, get_chat_model

    settings = LLMSettings.from_env(use_cache=not no_cache)
    return get_chat_model(settings, store=store)


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
    from tracecli.graph.build import build_graph
    from tracecli.store import open_store

    store = open_store(db, create=False)
    bar = _progress(not as_json)
    try:
        llm = _chat_model(store, no_cache)
        task = bar.add_task("building graph", total=None) if bar else None
        if bar:
            bar.start()

        def progress(done: int, total: int) -> None:
            if bar and task is not None:
                bar.update(task, completed=done, total=total)

        results = build_graph(store, conversation, extractor=extractor, rebuild=rebuild, llm=llm, progress=progress,
                              namespace=namespace)
    finally:
        if bar:
            bar.stop()
        store.close()
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
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Answer a question from the current state (or --as-of a date), citing the messages behind it.

    Superseded facts appear only marked [OUTDATED] and never answer a question
    about now. Only the namespace's conversations are searched (default
    'default'); a --conversation of another namespace is an error. Exit 1 when
    there is not enough evidence to answer.
    """
    from tracecli.query.batch import read_batch
    from tracecli.query.ask import Asker
    from tracecli.store import open_store

    if (question is None) == (batch is None):
        raise BadInput("give a QUESTION or --batch FILE (not both)")
    items = read_batch(batch) if batch is not None else None
    with open_store(db, create=False) as store:
        asker = Asker(store, llm=_chat_model(store))
        if items is not None:
            for item in items:
                res = asker.ask(item.question, conversation_id=item.conversation or conversation,
                                as_of=item.as_of or as_of, budget=budget, namespace=namespace)
                render.emit_json_line(res)
            return
        result = asker.ask(question or "", conversation_id=conversation, as_of=as_of, budget=budget, namespace=namespace)
    if as_json:
        render.emit_json(result)
    else:
        render.ask_result(result)
    if result.abstained:
        raise typer.Exit(1)


@command("trace")
def trace_cmd(
    answer_id: Annotated[str, typer.Argument(help="The answer id that `tracecli ask` printed (ans_…).", show_default=False)],
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    db: DbOpt = DEFAULT_DB,
    as_json: JsonOpt = False,
) -> None:
    """Replay an answer: its evidence paths with relation labels and validity markers, events, claims, messages.

    Only answers asked in the same namespace are found.
    """
    from tracecli.query.trace import trace_answer
    from tracecli.store import open_store

    with open_store(db, create=False) as store:
        result = trace_answer(store, answer_id, namespace=namespace)
    if as_json:
        render.emit_json(result)
    else:
        render.trace_result(result)


@command("stats")
def stats_cmd(db: DbOpt = DEFAULT_DB, as_json: JsonOpt = False) -> None:
    """Counts per table and per conversation, the embedding model, the schema version, LLM cost per stage."""
    from tracecli.stats import collect_stats
    from tracecli.store import open_store

    with open_store(db, create=False) as store:
        st = collect_stats(store)
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
