"""What every command module shares: option shapes, the error guard (no imports of tracecli.cli, so no cycles)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from tracecli import render
from tracecli.errors import TraceError

F = TypeVar("F", bound=Callable[..., Any])


def _sqlite_error() -> type[Exception]:
    """pysqlite3's base error class (imported when an error is being handled, not at start-up)."""
    import pysqlite3.dbapi2 as sqlite3

    return sqlite3.Error

DbOpt = Annotated[
    Path,
    typer.Option("--db", envvar="TRACECLI_DB", help="The database file (env TRACECLI_DB).", show_default=True),
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
