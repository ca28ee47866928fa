"""`tracecli eval locomo|updates|longmemeval`: run a benchmark end to end and print its metrics.

Registered on the main app with `register(app)`, which adds an `eval` sub-app.
Each command builds the benchmark into a temporary database (or `--db`),
prints rich tables on stderr (or only JSON on stdout with `--json`) and can
write a markdown report with the settings that reproduce the run (`--out`).
Like the other command modules, this one does not use postponed annotations:
Typer reads the `Annotated` option aliases of `tracecli.commands.common`.

`--samples` and `--categories` take several values after one flag
(`--categories 1 2 3 4`), comma-separated values, or repeated flags.
"""

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperCommand

from tracecli.commands.common import JsonOpt, guarded, progress

GROUP_NAME = "eval"
_LIST_OPTIONS = {"--samples": "name", "--categories": "int", "--types": "name"}


def join_list_options(args: list[str]) -> list[str]:
    """Fold `--categories 1 2 3` into `--categories 1,2,3` (and `--samples a b` alike) before Click parses.

    After a list option, following words that are not options are taken as its
    values: digits for --categories; for --samples / --types, words that are
    not existing paths (so the FILE argument may still come after them).
    """
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        kind = _LIST_OPTIONS.get(arg)
        if kind is None or i + 1 >= len(args):
            out.append(arg)
            i += 1
            continue
        values = [args[i + 1]]
        i += 2
        while i < len(args) and _is_value(kind, args[i]):
            values.append(args[i])
            i += 1
        out += [arg, ",".join(values)]
    return out


def _is_value(kind: str, word: str) -> bool:
    if word.startswith("-") or word == "":
        return False
    if kind == "int":
        return all(p.strip().isdigit() for p in word.split(",") if p.strip())
    return not Path(word).exists() and not word.lower().endswith((".json", ".jsonl"))


class ListOptionsCommand(TyperCommand):
    """A command whose list options accept several values after one flag."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, join_list_options(list(args)))


def split_values(values: Optional[list[str]]) -> list[str]:
    """Repeated and comma- or space-separated option values, flattened."""
    out: list[str] = []
    for v in values or []:
        out += [p for p in v.replace(",", " ").split() if p]
    return out


def _categories(values: Optional[list[str]]) -> Optional[list[int]]:
    from tracecli.errors import BadInput

    flat = split_values(values)
    if not flat:
        return None
    try:
        return [int(v) for v in flat]
    except ValueError:
        raise BadInput(f"--categories takes numbers 1-5, not {' '.join(flat)}") from None


@contextmanager
def eval_store(db: Optional[Path]) -> Iterator[tuple[Any, str]]:
    """The database to build into: `db` (kept) or a temporary file (removed afterwards)."""
    from tracecli.errors import BadInput
    from tracecli.store import open_store

    tmp: Optional[str] = None
    if db is not None:
        if str(db).startswith(("postgresql:", "postgres:")):
            raise BadInput(f"--db {db}: eval builds into an SQLite file; give a file path, not a PostgreSQL URL")
        if db.is_dir():
            raise BadInput(f"--db {db}: is a directory; give a database file")
        path, label = db, str(db)
    else:
        tmp = tempfile.mkdtemp(prefix="tracecli-eval-")
        path, label = Path(tmp) / "eval.db", "(temporary)"
    with open_store(path) as store:
        yield store, label
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _models(store: Any, judge: bool) -> tuple[Any, Any]:
    """(chat model for the pipeline, judge model or None); --judge without an LLM is a usage error."""
    from tracecli.errors import BadInput
    from tracecli.providers.llm import LLMSettings, get_chat_model

    llm = get_chat_model(LLMSettings.from_env(temperature=0.0), store=store)
    if judge and not llm.is_available:
        raise BadInput("--judge needs an LLM endpoint: set TRACECLI_LLM_URL and TRACECLI_LLM_MODEL")
    return llm, (llm if judge else None)


def _check_file(path: Path, *, allow_dir: bool = False) -> None:
    from tracecli.errors import BadInput

    if not path.exists():
        raise BadInput(f"{path}: no such file")
    if path.is_dir() and not allow_dir:
        raise BadInput(f"{path}: is a directory; give a benchmark file")


def render_report(report: Any) -> None:
    """Score tables, cost and notes on stderr."""
    from tracecli import render
    from tracecli.render import safe as escape
    from tracecli.evaluate.report import cost_line, cost_table, result_tables

    s = report.settings
    render.show(f"[bold]tracecli eval {report.benchmark}[/] · {escape(str(s.get('file')))} · budget "
                f"{s.get('budget_words')} words · embedder {escape(str(s.get('embedder')))} · LLM {escape(str(s.get('llm')))}")
    for spec in result_tables(report):
        render.show(render.table(spec.title, spec.columns, spec.rows))
    spec = cost_table(report)
    render.show(render.table(spec.title, spec.columns, spec.rows))
    render.show(f"[dim]{escape(cost_line(report))}[/]")
    for note in report.notes:
        render.show(f"[yellow]note:[/] {escape(note)}")


def _finish(report: Any, as_json: bool, out: Optional[Path]) -> None:
    from tracecli import render
    from tracecli.evaluate.report import to_markdown
    from tracecli.files import write_out

    if out is not None:
        write_out(out, to_markdown(report))
    if as_json:
        render.emit_json(report)
    else:
        render_report(report)
        if out is not None:
            render.show(render.plain(f"wrote {out}", "dim"))


def is_registered(app: typer.Typer) -> bool:
    """True when `app` already has an `eval` group."""
    return any(
        (info.name or (info.typer_instance.info.name if info.typer_instance else None)) == GROUP_NAME
        for info in app.registered_groups
    )


def register(app: typer.Typer) -> None:
    """Add `tracecli eval locomo|updates|longmemeval` to `app` (a no-op if it is already there)."""
    if is_registered(app):
        return
    group = typer.Typer(
        name=GROUP_NAME,
        help="Run a benchmark end to end (ingest → build-graph → compile-wiki → ask) and print its metrics.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        pretty_exceptions_show_locals=False,
        add_completion=False,
    )
    EvalDbOpt = Annotated[Optional[Path], typer.Option(
        "--db", help="Build into this database file and keep it (default: a temporary file, removed afterwards).",
        dir_okay=False, show_default=False)]
    BudgetOpt = Annotated[int, typer.Option("--budget", help="Context budget in whitespace words, for tracecli and the baselines.")]
    BaselinesOpt = Annotated[bool, typer.Option("--baselines", help="Also run flat retrieval baselines over the same notes.")]
    JudgeOpt = Annotated[bool, typer.Option("--judge", help="Score answers with the configured LLM as a judge (3 passes, temperature 0).")]
    OutOpt = Annotated[Optional[Path], typer.Option("--out", help="Write a markdown report (tables and settings) to this file.", dir_okay=False, show_default=False)]
    LimitOpt = Annotated[Optional[int], typer.Option("--limit", help="At most this many questions (per sample for LoCoMo).", show_default=False)]
    AblateOpt = Annotated[Optional[list[str]], typer.Option(
        "--ablate", metavar="PART", show_default=False,
        help="Also ask every question with PART switched off (wiki, paths, frames, graph or choice; repeatable): one 'w/o PART' "
             "row each. --baselines adds 'w/o graph', tracecli's reader over flat evidence.")]

    def locomo_cmd(
        file: Annotated[Path, typer.Argument(help="A LoCoMo file (list of samples with conversation and qa).", show_default=False)],
        samples: Annotated[Optional[list[str]], typer.Option("--samples", metavar="ID...", help="Only these sample ids, e.g. --samples conv-26 conv-30 (default: all).", show_default=False)] = None,
        categories: Annotated[Optional[list[str]], typer.Option("--categories", metavar="N...", help="QA categories to score, e.g. --categories 1 2 3 4 (default; 5 = adversarial).", show_default=False)] = None,
        budget: BudgetOpt = 300,
        baselines: BaselinesOpt = False,
        judge: JudgeOpt = False,
        as_json: JsonOpt = False,
        out: OutOpt = None,
        db: EvalDbOpt = None,
        limit: LimitOpt = None,
        ablate: AblateOpt = None,
    ) -> None:
        """Evaluate on LoCoMo: evidence recall at a word budget, answer F1 and BLEU-1, optional LLM judge.

        Reports per category (1 multi-hop, 2 temporal, 3 open-domain, 4
        single-hop) and overall: evidence recall of the context cut at
        --budget words, the LoCoMo authors' F1 and BLEU-1, the set-based F1 of
        later memory papers, the judge with --judge, and the cost of each
        stage. --baselines adds flat dense, BM25 and RRF retrieval side by side;
        --ablate adds a row per part switched off (the paper-style ablation table).
        """
        from tracecli.evaluate.locomo import run_locomo
        from tracecli.providers.embeddings import get_embedder

        _check_file(file)
        cats = _categories(categories)
        embedder = get_embedder()
        with eval_store(db) as (store, label):
            llm, judge_model = _models(store, judge)
            with progress(not as_json) as update:
                report = run_locomo(store, file, samples=split_values(samples) or None, categories=cats, budget=budget,
                                    baselines=baselines, judge=judge, limit=limit, embedder=embedder, llm=llm,
                                    judge_model=judge_model, db_label=label, progress=update, ablate=split_values(ablate))
        _finish(report, as_json, out)

    def updates_cmd(
        file: Annotated[Path, typer.Argument(help="LoCoMo file with outdated answers, stress-test items, or native conversations (file or directory) with --questions.", show_default=False)],
        questions: Annotated[Optional[Path], typer.Option("--questions", help="tracecli gold questions: a JSON file, or a directory of *.questions.json.", show_default=False)] = None,
        conversations: Annotated[Optional[Path], typer.Option("--conversations", help="Stress-test items: the LoCoMo file holding their conversations.", show_default=False)] = None,
        budget: BudgetOpt = 300,
        baselines: BaselinesOpt = False,
        judge: JudgeOpt = False,
        as_json: JsonOpt = False,
        out: OutOpt = None,
        db: EvalDbOpt = None,
        limit: LimitOpt = None,
        ablate: AblateOpt = None,
    ) -> None:
        """Evaluate on update-heavy questions: valid accuracy, outdated leakage and strict net.

        valid = the answer holds the current value; leakage = it holds a
        superseded value without the current one; net = valid − leakage.
        Reported per kind (current / as_of / stable), revision type and
        category where present. --baselines adds the top-1 note of flat dense
        retrieval, which serves stale facts as current.
        """
        from tracecli.evaluate.updates import run_updates
        from tracecli.providers.embeddings import get_embedder

        _check_file(file, allow_dir=True)
        embedder = get_embedder()
        with eval_store(db) as (store, label):
            llm, judge_model = _models(store, judge)
            if judge_model is None and llm.is_available:
                judge_model = llm  # the stress format is judged whenever an LLM is configured
            with progress(not as_json) as update:
                report = run_updates(store, file, questions=questions, conversations=conversations, budget=budget,
                                     baselines=baselines, judge=judge, limit=limit, embedder=embedder, llm=llm,
                                     judge_model=judge_model, db_label=label, progress=update, ablate=split_values(ablate))
        _finish(report, as_json, out)

    def longmemeval_cmd(
        file: Annotated[Path, typer.Argument(help="A LongMemEval file (list of items with haystack_sessions).", show_default=False)],
        include_abstention: Annotated[bool, typer.Option("--include-abstention", help="Also score abstention items (question_id ending in _abs).")] = False,
        types: Annotated[Optional[list[str]], typer.Option("--types", metavar="TYPE...", help="Only these question types, e.g. --types knowledge-update temporal-reasoning.", show_default=False)] = None,
        budget: BudgetOpt = 300,
        baselines: BaselinesOpt = False,
        judge: JudgeOpt = False,
        as_json: JsonOpt = False,
        out: OutOpt = None,
        db: EvalDbOpt = None,
        limit: LimitOpt = None,
    ) -> None:
        """Evaluate on LongMemEval: evidence and session recall, answer F1, optional judge, per question type.

        Each item's haystack is its own conversation. Abstention items are
        skipped unless --include-abstention is given.
        """
        from tracecli.evaluate.longmemeval import run_longmemeval
        from tracecli.providers.embeddings import get_embedder

        _check_file(file)
        embedder = get_embedder()
        with eval_store(db) as (store, label):
            llm, judge_model = _models(store, judge)
            with progress(not as_json) as update:
                report = run_longmemeval(store, file, budget=budget, baselines=baselines, judge=judge, limit=limit,
                                         include_abstention=include_abstention, question_types=split_values(types) or None,
                                         embedder=embedder, llm=llm, judge_model=judge_model, db_label=label,
                                         progress=update)
        _finish(report, as_json, out)

    group.command("locomo", cls=ListOptionsCommand)(guarded(locomo_cmd))
    group.command("updates", cls=ListOptionsCommand)(guarded(updates_cmd))
    group.command("longmemeval", cls=ListOptionsCommand)(guarded(longmemeval_cmd))
    app.add_typer(group, name=GROUP_NAME)


__all__ = ["GROUP_NAME", "ListOptionsCommand", "is_registered", "join_list_options", "register", "render_report",
           "split_values"]
