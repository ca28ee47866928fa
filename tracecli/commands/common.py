"""What every command module shares: option shapes, the error guard, the chat model, progress.

The dependency is one-way: `tracecli.cli` and every module of `tracecli.commands` import this module,
and this module imports neither of them.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from typer import _click
from typer.core import TyperGroup
from typer.exceptions import Abort

from tracecli import render
from tracecli.errors import TraceError

if TYPE_CHECKING:
    from tracecli.api import Memory
    from tracecli.providers.llm import ChatModel
    from tracecli.store.db import Store

F = TypeVar("F", bound=Callable[..., Any])


def _sqlite_error() -> type[Exception]:
    """pysqlite3's base error class (imported when an error is being handled, not at start-up)."""
    import pysqlite3.dbapi2 as sqlite3

    return sqlite3.Error

def parse_db(value: str | Path) -> Path:
    """`--db`: a `postgresql://` URL (kept whole, its password never shown) or an SQLite file path."""
    text = str(value)
    if text.startswith(("postgresql://", "postgres://")):
        from tracecli.store.pg import PgUrl

        return PgUrl(text)  # type: ignore[return-value]
    return Path(value)


# annotated `str` so typer leaves parse_db's value alone (a Path annotation would turn a URL into a path)
DbOpt = Annotated[
    str,
    typer.Option("--db", envvar="TRACECLI_DB", parser=parse_db, metavar="<path|url>", show_default=True,
                 help="The database: an SQLite file, or a postgresql:// URL (env TRACECLI_DB)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only JSON on stdout (stable keys).")]
DEFAULT_DB = Path("tracecli.db")
# Kept in step with tracecli.scope (not imported here, so `--help` stays light).
DEFAULT_NAMESPACE = "default"
NamespaceOpt = Annotated[
    str,
    typer.Option(
        "--namespace", envvar="TRACECLI_NAMESPACE", show_default=True,
        help="Work in this namespace (user or agent) only; nothing of another namespace is read (env TRACECLI_NAMESPACE).",
    ),
]

#: progress of one stage: (stage, done, total)
StageProgress = Callable[[str, int, int], None]
#: seconds between two progress lines of one stage when stderr is not a terminal
LOG_INTERVAL_S = 5.0


def guarded(func: F) -> F:
    """Turn library errors into one line on stderr and the right exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TraceError as exc:
            render.error_line(str(exc))
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            render.error_line("interrupted; nothing from the unfinished step was written")
            raise typer.Exit(130) from None
        except UnicodeEncodeError:
            # a lone surrogate: what bytes that are not UTF-8 in a command line become; SQLite cannot take it
            render.error_line("an argument holds text that is not valid Unicode (bytes that are not UTF-8); "
                              "write it in UTF-8")
            raise typer.Exit(2) from None
        except (UnicodeDecodeError, _sqlite_error()) as exc:
            # the database failed under a query (another command holding the lock past the busy
            # timeout, a damaged page): one line naming the file, like every other error
            from tracecli.store.db import store_failure

            failure = store_failure(exc, kwargs.get("db") or "the database")
            render.error_line(str(failure))
            raise typer.Exit(failure.exit_code) from None

    return wrapper  # type: ignore[return-value]


class _PipeClosed(Exception):
    """The reader of stdout went away (`tracecli --help | head -1`)."""


class TraceGroup(TyperGroup):
    """The top-level command group: every usage error is one line on stderr with exit 2, and a reader that
    closes stdout early ends the command quietly with exit 0 (scripts under `set -o pipefail` keep going)."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _pipe_closed():  # `--help` prints while the context is made
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _pipe_closed():
            return super().invoke(ctx)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        try:  # named `tracecli` however it was started (`python -m tracecli.cli`, a test runner)
            rv = super().main(args=args, prog_name="tracecli", complete_var=complete_var,
                              standalone_mode=False, windows_expand_args=windows_expand_args, **extra)
            code = rv if isinstance(rv, int) else 0
        except _click.exceptions.NoArgsIsHelpError:
            code = 2  # the help was printed when the error was made
        except _click.exceptions.ClickException as exc:
            render.error_line(usage_line(exc))
            code = 2
        except Abort:
            render.error_line("aborted")
            code = 1
        except _PipeClosed:
            _silence_stdout()
            code = 0
        if standalone_mode:
            sys.exit(code)
        return code


@contextmanager
def _pipe_closed() -> Iterator[None]:
    """Turn a write to a closed stdout into `_PipeClosed` (rich reports one as SystemExit(1), click as EPIPE)."""
    try:
        yield
    except BrokenPipeError as exc:
        raise _PipeClosed from exc
    except SystemExit as exc:
        if isinstance(exc.__context__, BrokenPipeError):
            raise _PipeClosed from exc
        raise


def usage_line(exc: Any) -> str:
    """Click's usage error (a usage block, a hint and a boxed message) as one line."""
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return message
    return f"{ctx.command_path}: {message} (see '{ctx.command_path} --help')"


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor (tests' runners)
        pass


def chat_model(store: Store, no_cache: bool = False) -> ChatModel:
    """The configured chat model (or the offline `none` model)."""
    from tracecli.providers.llm import LLMSettings, get_chat_model

    settings = LLMSettings.from_env(use_cache=not no_cache)
    return get_chat_model(settings, store=store)


@contextmanager
def memory(db: Path, namespace: str | None = DEFAULT_NAMESPACE, *, create: bool = False, upgrade: bool = True,
           **options: Any) -> Iterator[Memory]:
    """The `tracecli.Memory` a writing command works through, over the store opened as the command needs it
    (`create` a missing file: ingest; `upgrade=False`: ask, which only records); closed on the way out."""
    from tracecli.api import Memory
    from tracecli.store import open_store

    with open_store(db, create=create, upgrade=upgrade) as store:
        yield Memory(db, namespace, store=store, **options)


@contextmanager
def reading_memory(db: Path, namespace: str = DEFAULT_NAMESPACE) -> Iterator[Memory]:
    """The `tracecli.Memory` a reading command works through: never creates or upgrades, one snapshot throughout."""
    from tracecli.api import Memory
    from tracecli.store import read_store

    with read_store(db) as store:
        yield Memory(db, namespace, store=store)


class LogProgress:
    """Progress for a log or a pipe: one line when a stage starts, every `interval` seconds, and when it ends.

    A stage that starts counting again (the next conversation of a build) is a new round with its own lines.
    """

    def __init__(self, write: Callable[[str], None], interval: float = LOG_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.write, self.interval, self.clock = write, interval, clock
        self.stage: str | None = None
        self.done = self.total = 0
        self.started = self.last = 0.0
        self.finished = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        complete = bool(total) and done >= total
        restart = stage != self.stage or done < self.done or total != self.total
        self.stage, self.done, self.total = stage, done, total
        if restart:
            self.started, self.last, self.finished = now, now, complete
            self.write(f"{stage}: {done}/{total}" + (" done" if complete else ""))
            return
        if self.finished:
            return
        if complete:
            self.finished = True
            self.write(f"{stage}: {done}/{total} done in {now - self.started:.1f}s")
        elif now - self.last >= self.interval:
            self.last = now
            self.write(f"{stage}: {done}/{total} ({now - self.started:.0f}s)")


@contextmanager
def progress(enabled: bool) -> Iterator[StageProgress | None]:
    """Progress of long work on stderr: a rich bar on a terminal, `LogProgress` lines otherwise; None when off."""
    if not enabled:
        yield None
        return
    if not sys.stderr.isatty():
        yield LogProgress(lambda line: render.err.print(line, markup=False, highlight=False, soft_wrap=True))
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=render.err, transient=True)
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(render.safe(stage), total=total)  # a file name may hold markup
        bar.update(tasks[stage], completed=done, total=total)

    bar.start()
    try:
        yield update
    finally:
        bar.stop()


def for_stage(update: StageProgress | None, stage: str) -> Callable[[int, int], None] | None:
    """A (done, total) callback for a library function that reports one stage."""
    if update is None:
        return None
    return lambda done, total: update(stage, done, total)
